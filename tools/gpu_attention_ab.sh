#!/usr/bin/env bash
# On a GPU machine, one call that checks and times attention work: builds this tree,
# runs tools/wgmma_probe (the wgmma operand layouts, on sm_90) and the attention and GPT
# tests, then times this tree against BASE (a tree of main, e.g. a worktree carried in
# .data/) and against itself with the mma.sync kernels (ZERO_ATTENTION_WGMMA=0), with
# tools/bench_ab.py. Logs in $OUT (or ./gpu-logs): at most eight files. With ROUNDS=1 (the
# default) the whole call should take about eight minutes on one H200 with a fresh build
# (an estimate: the script has not run on a GPU yet).
#   [ROUNDS=N] tools/gpu_attention_ab.sh BASE
# Needs stb_image_write.h and stb_image.h (Debian's libstb-dev), which the lent H100 and
# H200 machines lack: there, set ZERO_STB_INCLUDE_DIR to a carried folder holding the two
# headers (an absolute path; both trees' configures read it).
set -uo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: tools/gpu_attention_ab.sh BASE (a tree of Zero to compare with)}
out=${OUT:-gpu-logs}
mkdir -p "$out"
{ nvidia-smi -L; nvcc --version | tail -1; } 2>&1 | tee "$out/machine.txt"
cmake -S . -B build/ab -G Ninja -DCMAKE_BUILD_TYPE=Release -DZERO_BUILD_TESTS=ON \
  > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build/ab -j"$(nproc)" --target wgmma_probe > "$out/build_probe.log" 2>&1 ||
  { grep -E "error|FAILED" "$out/build_probe.log" | head -40; exit 1; }
build/ab/tools/wgmma_probe 2>&1 | tee "$out/probe.log"
python3 tools/bench_ab.py --base "$base" --tests '*ttention*:*GPT*:*Gpt*' --attention bf16,tf32 \
  --steps gpt2:bf16,char:bf16 --rounds "${ROUNDS:-1}" --save "$out/ab_main.json" 2>&1 | tee "$out/ab_main.log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  # A failing test stops bench_ab: do the mma.sync kernels pass the same tests?
  ZERO_ATTENTION_WGMMA=0 build/ab/tests/kernels_tests --gtest_filter='*ttention*' \
    --gtest_brief=1 2>&1 | tail -20 | tee "$out/tests_without_wgmma.log"
  exit "$rc"
fi
python3 tools/bench_ab.py --base . --base-env ZERO_ATTENTION_WGMMA=0 --attention bf16 \
  --steps gpt2:bf16 --rounds "${ROUNDS:-1}" --save "$out/ab_wgmma.json" 2>&1 | tee "$out/ab_wgmma.log"
