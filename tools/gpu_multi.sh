#!/usr/bin/env bash
# Runs everything multi-GPU (issue 7, chapter 10) and writes the logs to $OUT (or
# ./gpu-logs). Works on one GPU too: then the two-rank checks skip and say so, and only
# the size-one runs happen. Builds build/gpu (as tools/gpu_check.sh does) if needed.
#   1. the data-parallel tests: hook, buckets, size-one communicator and trainer, and
#      the equality test (2 ranks with batch B against 1 GPU with batch 2B, 1e-5);
#   2. chapter 10 at full size: all-reduce bandwidth, GPT-2 124M tokens/s on 1 and N GPUs;
#   3. train_gpt on all GPUs (--nproc N; on one GPU a group of one) for 100 steps.
#   tools/gpu_multi.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
{ nvidia-smi -L; nvidia-smi topo -m; nvidia-smi nvlink -s -i 0; } > "$out/multi_machine.txt" 2>&1
echo "GPUs visible: $gpus"
if [ ! -f build/gpu/build.ninja ]; then
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/multi_configure.log" 2>&1 ||
    { tail -30 "$out/multi_configure.log"; exit 1; }
fi
cmake -S . -B build/gpu 2>&1 | grep -E "Zero: (NCCL|CUDA)" | tee "$out/multi_nccl.txt"
cmake --build build/gpu -j"$(nproc)" --target autograd_tests data_tests distributed_tests train_tests \
  ch11_gpt ch10_multi_gpu > "$out/multi_build.log" 2>&1 ||
  { grep -E "error|FAILED" "$out/multi_build.log" | head -40; exit 1; }
status=0

echo "== 1. data-parallel tests"
ctest --test-dir build/gpu --output-on-failure \
  -R "LeafGradHook|GradBuckets|UniqueId|Communicator|DataParallel|DistributedTest|Shards" \
  > "$out/multi_ctest.log" 2>&1 || status=1
grep -E "tests passed|Failed|SKIPPED|MultiGpu" "$out/multi_ctest.log" | head -20
# The equality test's own line (its skip reason, or how many records agreed).
build/gpu/tests/train_tests --gtest_filter='*MultiGpu*' > "$out/multi_equality.log" 2>&1 || status=1
grep -E "agree|Skipped|needs|OK|FAILED" "$out/multi_equality.log" | head -5

echo "== 2. chapter 10 (full size)"
if ! (cd build/gpu && chapters/10_multi_gpu/ch10_multi_gpu) > "$out/10_multi_gpu.txt" 2>&1; then
  echo "   FAILED (exit $?)"; status=1
fi
grep -E "^==|MiB|GPU|efficiency|skipped|FAILED" "$out/10_multi_gpu.txt" | tail -20

echo "== 3. train_gpt on $gpus GPU(s), 100 steps"
run=build/gpu/multi_run
rm -rf "$run"
if [ "$gpus" -ge 2 ]; then
  args=(--nproc "$gpus")
else  # a group of one through the same code path (the flags --nproc passes to each rank)
  args=(--device cuda:0 --rank 0 --world 1 --nccl-id-file "$run/nccl_id")
fi
if ! build/gpu/chapters/11_gpt/train_gpt "${args[@]}" --max-steps 100 --eval-every 50 \
     --log-every 25 --samples 1 --out-dir "$run" > "$out/multi_train_gpt.txt" 2>&1; then
  echo "   FAILED (exit $?)"; status=1
fi
grep -E "launched|train:|step|best" "$out/multi_train_gpt.txt" | tail -8
exit $status
