#!/usr/bin/env bash
# On a GPU machine: builds Zero (Release) and runs the training-step benchmark next to
# PyTorch (tools/bench_train_side_by_side.py), then any extra command given, with logs in
# $OUT (or ./gpu-logs).
#   tools/gpu_bench.sh [bench args...]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
{ nvidia-smi -L; nvcc --version | tail -1; python3 -c "import torch; print('torch', torch.__version__)"; } 2>&1 | tee "$out/machine.txt"
start=$(date +%s)
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build/gpu -j"$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
python3 tools/bench_train_side_by_side.py --build build/gpu "$@" 2>&1 | tee "$out/bench.log"
