#!/usr/bin/env bash
# Builds Zero on a GPU machine and runs the whole test suite, CUDA tests included.
# Writes the logs to $OUT (or ./gpu-logs) so a remote run can bring them back.
#   tools/gpu_check.sh [extra ctest args]
# Needs stb_image_write.h and stb_image.h (Debian's libstb-dev); on a machine that cannot
# install it, set ZERO_STB_INCLUDE_DIR to a folder holding the two headers.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
{ nvidia-smi -L; nvcc --version | tail -1; cmake --version | head -1; } 2>&1 | tee "$out/machine.txt"
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
grep -E "Zero:" "$out/configure.log"
cmake --build build/gpu -j"$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
ctest --test-dir build/gpu -j8 --output-on-failure "$@" > "$out/ctest.log" 2>&1
rc=$?
grep -E "tests passed|Failed|\*\*\*|Label|^(cuda|unit|docs) " "$out/ctest.log" | head -60
exit $rc
