#!/usr/bin/env bash
# Runs Zero's fuzz targets (tests/fuzz/): libFuzzer with ASan and UBSan on every file
# reader. See tests/fuzz/README.md for what each target checks and how to replay a finding.
#
#   tools/fuzz.sh                  every target for 25 s (what CI runs)
#   tools/fuzz.sh --long           every target for an hour (or --time SECONDS), N at a time
#   tools/fuzz.sh utf8 safetensors only these targets
#   tools/fuzz.sh --build          first install clang if missing and build the fuzz preset
#   tools/fuzz.sh --seeds          regenerate tests/fuzz/corpus/ with Zero's own writers
#
# Options: --time SECONDS (per target), --jobs N (targets run side by side; default 1),
# --build-dir DIR (default build/fuzz). The committed seeds in tests/fuzz/corpus/<target>/
# are copied into DIR/corpus/<target>/, which grows with what the fuzzer finds and is kept
# between runs, so a long run continues where the last one stopped. A crashing input is
# saved as DIR/findings/<target>/crash-<sha1> (or leak-, timeout-, oom-) and the script
# exits 1 naming it; replay it with `DIR/tests/fuzz/fuzz_<target> FILE`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly all_targets=(safetensors checkpoint vocab_json meta_json token_file utf8)
seconds=25
jobs=1
build=0
seeds=0
build_dir=build/fuzz
targets=()
while (( $# > 0 )); do
  case $1 in
    --long) seconds=3600 ;;
    --time) seconds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --build) build=1 ;;
    --seeds) seeds=1 ;;
    --build-dir) build_dir=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
(( ${#targets[@]} > 0 )) || targets=("${all_targets[@]}")

if (( build )); then
  tools/setup.sh --fuzz
  cmake --workflow --preset fuzz
fi

binary() { echo "$build_dir/tests/fuzz/fuzz_$1"; }
for t in "${targets[@]}"; do
  if [[ ! -x $(binary "$t") ]]; then
    echo "fuzz.sh: $(binary "$t") is missing; build with: tools/fuzz.sh --build" \
         "(or cmake --workflow --preset fuzz)" >&2
    exit 2
  fi
done

if (( seeds )); then
  for t in "${targets[@]}"; do
    rm -rf "tests/fuzz/corpus/$t"
    ZERO_FUZZ_WRITE_SEEDS="tests/fuzz/corpus/$t" "$(binary "$t")"
    echo "tests/fuzz/corpus/$t: $(ls "tests/fuzz/corpus/$t" | wc -l) seeds," \
         "$(du -sk "tests/fuzz/corpus/$t" | cut -f1) KiB"
  done
  exit 0
fi

# Leaks are findings too (libFuzzer checks after each input); a UB report aborts.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# One thread: an input is tiny, and OpenMP threads would only wait on each other (and on
# the other targets of --jobs).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# The loaders write each input to a file; a RAM-backed folder keeps that cheap.
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi

dict_for() {
  case $1 in
    utf8) echo tests/fuzz/utf8.dict ;;
    token_file) ;;
    *) echo tests/fuzz/json.dict ;;
  esac
}

# run_target NAME: fuzzes NAME for $seconds; the log goes to $build_dir/logs/NAME.log.
run_target() {
  local t=$1 corpus="$build_dir/corpus/$1" findings="$build_dir/findings/$1/"
  local log="$build_dir/logs/$1.log" dict
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  dict=$(dict_for "$t")
  local -a args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
                 -print_final_stats=1 -artifact_prefix="$findings")
  [[ -n $dict ]] && args+=(-dict="$dict")
  if "$(binary "$t")" "${args[@]}" "$corpus" >"$log" 2>&1; then
    local runs rate
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    echo "fuzz $t: ok, ${runs:-?} inputs in ${seconds} s (${rate:-?}/s)," \
         "corpus $(ls "$corpus" | wc -l) files"
  else
    echo "fuzz $t: FINDING; last lines of $log:"
    grep -E "ERROR|FINDING|FUZZ_CHECK|SUMMARY|runtime error|Test unit written" "$log" | tail -n 8
    echo "  replay: $(binary "$t") $(ls -t "$findings" | head -n 1 | sed "s|^|$findings|")"
    return 1
  fi
}

failed=0
running=0
for t in "${targets[@]}"; do
  if (( jobs > 1 )); then
    run_target "$t" &
    (( ++running < jobs )) || { wait -n || failed=1; (( running-- )); }
  else
    run_target "$t" || failed=1
  fi
done
while (( running > 0 )); do wait -n || failed=1; (( running-- )); done
if (( failed )); then
  echo "fuzz.sh: findings above; tests/fuzz/README.md says how to replay and report them" >&2
fi
exit $failed
