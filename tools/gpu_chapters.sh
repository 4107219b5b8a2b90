#!/usr/bin/env bash
# Runs every chapter program (full size) and the kernel benchmarks on a GPU machine,
# after tools/gpu_check.sh has built build/gpu. One log per chapter under $OUT.
#   tools/gpu_chapters.sh [chapter-number ...]     e.g. tools/gpu_chapters.sh 01 02
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
status=0
for dir in chapters/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  if [ $# -gt 0 ] && [[ ! " $* " == *" ${name:0:2} "* ]]; then continue; fi
  exe=build/gpu/chapters/$name/ch$name
  [ -x "$exe" ] || continue
  echo "== $name"
  if ! (cd build/gpu && "../../$exe") > "$out/$name.txt" 2>&1; then
    echo "   FAILED (exit $?)"; status=1
  fi
  tail -3 "$out/$name.txt"
done
exit $status
