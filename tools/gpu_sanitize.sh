#!/usr/bin/env bash
# Runs Zero's test programs under NVIDIA's compute-sanitizer on a GPU machine, after
# tools/gpu_check.sh has built build/gpu. One log per tool and program under $OUT, and a
# summary line per program: "<tool> <program>: N errors".
#   tools/gpu_sanitize.sh [memcheck|racecheck|synccheck|initcheck ...]   (default: memcheck racecheck)
#
# A few tests make a CUDA call fail on purpose: they ask for more memory than the GPU has, to
# check the out-of-memory message, or they let NCCL probe for transports that this machine
# lacks. compute-sanitizer reports every failed API call, so those tests run in a second pass
# with --report-api-errors no: their memory accesses are still checked, only the failures
# they ask for are not counted. The list is `deliberate` below, one gtest pattern each.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
tools=("$@")
(( ${#tools[@]} > 0 )) || tools=(memcheck racecheck)
build=build/gpu
per_program_seconds=${ZERO_SANITIZE_SECONDS:-480}

readonly deliberate=(
  'TensorContextTest.CudaOutOfMemory*'   # cudaMalloc of more than the GPU holds
  'FreeListTest.OutOfMemory*'            # the allocator exercise's retry after a failed malloc
  'CommunicatorTest.*'                   # NCCL probes network plugins and IB on start-up
  'DataParallelTest.*'                   # likewise, through the communicator
)
deliberate_filter=$(IFS=:; echo "${deliberate[*]}")

programs=()
for p in "$build"/tests/*_tests "$build"/tests/exercises/*/ex*_solutions_tests; do
  [[ -x $p ]] && programs+=("$p")
done
(( ${#programs[@]} > 0 )) || { echo "gpu_sanitize.sh: no test programs in $build; run tools/gpu_check.sh first" >&2; exit 2; }

# One program under one tool; prints "<tool> <name>: N errors" (or why it did not finish).
sanitize_one() {
  local tool=$1 program=$2 name log rc errors
  name=$(basename "$program")
  log="$out/sanitize-$tool-$name.log"
  {
    timeout "$per_program_seconds" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        --print-limit 50 "$program" --gtest_brief=1 --gtest_filter="-$deliberate_filter"
    echo "== exit $?"
    timeout "$per_program_seconds" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        --report-api-errors no --print-limit 50 "$program" --gtest_brief=1 \
        --gtest_filter="$deliberate_filter"
    echo "== exit $?"
  } > "$log" 2>&1
  errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | awk '{s += $3} END {print s + 0}')
  rc=0
  grep -q '^== exit 124' "$log" && rc=124
  grep -Eq '^== exit [1-9]' "$log" && (( rc == 0 )) && rc=1
  case $rc in
    0) echo "$tool $name: $errors errors" ;;
    124) echo "$tool $name: $errors errors, stopped after ${per_program_seconds}s" ;;
    *) echo "$tool $name: $errors errors, a test failed (see $log)" ;;
  esac
}
export -f sanitize_one
export out deliberate_filter per_program_seconds

status=0
for tool in "${tools[@]}"; do
  printf '%s\n' "${programs[@]}" |
    xargs -P "${ZERO_SANITIZE_JOBS:-6}" -I{} bash -c "sanitize_one $tool {}" |
    sort | tee "$out/sanitize-$tool-summary.txt"
  grep -Ev ': 0 errors$' "$out/sanitize-$tool-summary.txt" > /dev/null && status=1
done
exit $status
