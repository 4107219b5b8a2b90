#!/usr/bin/env bash
# Runs Zero's test programs under NVIDIA's compute-sanitizer on a GPU machine, after
# tools/gpu_check.sh has built build/gpu. One log per tool, program and shard under $OUT,
# and a summary line per program: "<tool> <program>: N errors".
#   tools/gpu_sanitize.sh [memcheck|racecheck|synccheck|initcheck ...]   (default: memcheck racecheck)
#
# Environment: ZERO_BUILD_DIR (default build/gpu), ZERO_SANITIZE_ONLY="autograd_tests ..."
# (only these programs), ZERO_SANITIZE_SHARDS (shards per program, default by size),
# ZERO_SANITIZE_SECONDS (limit per shard, default 480), ZERO_SANITIZE_JOBS (shards side by
# side, default 8). On one H200 the whole run took about 3.5 min for memcheck and 4 for racecheck.
#
# A few tests make a CUDA call fail on purpose: they ask for more memory than the GPU has, to
# check the out-of-memory message, or they start NCCL, which on start-up asks about kernels
# built for other GPU generations and gets "no kernel image" back. compute-sanitizer reports every failed API call, so those tests run in a second pass
# with --report-api-errors no: their memory accesses are still checked, only the failures
# they ask for are not counted. The list is `deliberate` below, one gtest pattern each.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
tools=("$@")
(( ${#tools[@]} > 0 )) || tools=(memcheck racecheck)
build=${ZERO_BUILD_DIR:-build/gpu}
per_program_seconds=${ZERO_SANITIZE_SECONDS:-480}

readonly deliberate=(
  'TensorContextTest.CudaOutOfMemory*'   # cudaMalloc of more than the GPU holds
  'FreeListTest.OutOfMemory*'            # the allocator exercise's retry after a failed malloc
  '*Communicator*'                       # NCCL start-up asks cudaFuncGetAttributes about
  '*DataParallel*'                       #   kernels of other GPU generations (error 209);
  '*Distributed*'                        #   every test that creates a communicator does
)
deliberate_filter=$(IFS=:; echo "${deliberate[*]}")

# Two tests check that a 20,000- and a 100,000-op chain does not overflow the host stack in
# backward. Their CUDA variants launch one tiny kernel per op, which under the sanitizer takes
# longer than the time allowed; the kernels are the ones every other test checks, so these
# two run only outside the sanitizer.
readonly unsanitized=(
  'Devices/EngineTest.DeepChainDoesNotOverflowTheStack/Cuda'
  'Devices/EngineTest.DeepGraphDroppedWithoutBackwardDoesNotOverflowTheStack/Cuda'
)
unsanitized_filter=$(IFS=:; echo "${unsanitized[*]}")

programs=()
for p in "$build"/tests/*_tests "$build"/tests/exercises/*/ex*_solutions_tests; do
  [[ -x $p ]] || continue
  [[ -z ${ZERO_SANITIZE_ONLY:-} || " $ZERO_SANITIZE_ONLY " == *" $(basename "$p") "* ]] && programs+=("$p")
done
(( ${#programs[@]} > 0 )) || { echo "gpu_sanitize.sh: no test programs in $build; run tools/gpu_check.sh first" >&2; exit 2; }

# The sanitizer slows kernel launches a hundredfold, so the larger programs run as several
# gtest shards side by side (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX).
shards_for() {
  [[ -n ${ZERO_SANITIZE_SHARDS:-} ]] && { echo "$ZERO_SANITIZE_SHARDS"; return; }
  case $(basename "$1") in
    autograd_tests|kernels_tests) echo 12 ;;
    nn_tests|train_tests) echo 6 ;;
    *) echo 2 ;;
  esac
}

# One shard of one program under one tool, both passes; its log ends in "== exit N" lines.
sanitize_shard() {
  local tool=$1 program=$2 shard=$3 shards=$4 log pass filter
  log="$out/sanitize-$tool-$(basename "$program")-$shard.log"
  : > "$log"
  for pass in main deliberate; do
    local -a extra=()
    if [[ $pass == main ]]; then filter="-$deliberate_filter:$unsanitized_filter"; else
      filter="$deliberate_filter-$unsanitized_filter"; extra=(--report-api-errors no)
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard "$program" --gtest_list_tests \
          --gtest_filter="$filter" | grep -q '^  ' || continue
    fi
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard timeout "$per_program_seconds" \
        compute-sanitizer --tool "$tool" --error-exitcode 99 "${extra[@]}" --print-limit 50 \
        "$program" --gtest_brief=1 --gtest_filter="$filter" >> "$log" 2>&1
    echo "== exit $?" >> "$log"
  done
}

# "<tool> <program>: N errors", from the program's shard logs. A shard that made no CUDA
# call at all (its tests are CPU-only) ends with the sanitizer's "terminated before first
# instrumented API call" and exit 255: nothing to check, not a failure.
summarize() {
  local tool=$1 name=$2 errors rc=0 f code
  local -a logs=("$out/sanitize-$tool-$name"-*.log)
  errors=$(cat "${logs[@]}" | grep -Eo 'ERROR SUMMARY: [0-9]+' | awk '{s += $3} END {print s + 0}')
  for f in "${logs[@]}"; do
    for code in $(sed -n 's/^== exit //p' "$f"); do
      if (( code == 124 )); then rc=124
      elif (( code == 255 )) && grep -q 'terminated before first instrumented API call' "$f"; then :
      elif (( code != 0 && rc == 0 )); then rc=1
      fi
    done
  done
  case $rc in
    0) echo "$tool $name: $errors errors" ;;
    124) echo "$tool $name: $errors errors, a shard stopped after ${per_program_seconds}s" ;;
    *) echo "$tool $name: $errors errors, a test failed (see $out/sanitize-$tool-$name-*.log)" ;;
  esac
}
export -f sanitize_shard
export out deliberate_filter unsanitized_filter per_program_seconds

status=0
for tool in "${tools[@]}"; do
  for p in "${programs[@]}"; do
    n=$(shards_for "$p")
    for (( i = 0; i < n; ++i )); do echo "$p $i $n"; done
  done | xargs -P "${ZERO_SANITIZE_JOBS:-8}" -L1 bash -c 'sanitize_shard '"$tool"' "$@"' _
  for p in "${programs[@]}"; do summarize "$tool" "$(basename "$p")"; done |
    tee "$out/sanitize-$tool-summary.txt"
  grep -Ev ': 0 errors$' "$out/sanitize-$tool-summary.txt" > /dev/null && status=1
done
exit $status
