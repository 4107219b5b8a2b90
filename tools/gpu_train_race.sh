#!/usr/bin/env bash
# The race of the char model in BF16: Zero's train_gpt, then PyTorch with bf16 autocast
# and torch.compile (tools/torch_train_char.py, the same recipe), train on the same text
# for the same steps, one after the other on this GPU, in one call. Prints steps, wall
# seconds, ms per step and best val loss for both, the wall-time ratio Zero/PyTorch,
# and PASS or FAIL for: Zero's best val loss <= 1.48, and Zero's wall time < PyTorch's.
#   tools/gpu_train_race.sh [data file, default .data/tinyshakespeare/input.txt]
#                           [steps, default 2500] [build dir, default build/gpu]
# (relative paths are taken from the repository root, where the script runs).
# Needs a built train_gpt, PyTorch with CUDA, and the text (tools/fetch_tinyshakespeare.sh).
# Exit status 1 if a run fails or a check fails.
#
# Zero's wall time is its whole process (`date` around it: CUDA start-up, data
# preparation, checkpoints at each evaluation); PyTorch's is its loop from step 0's
# evaluation to the last one (compilation included), the JSON's wall_s. That leans
# against Zero, so a PASS is not an artefact of what is timed. PyTorch's whole
# process (imports, CUDA start-up) is printed too. Zero draws no samples here
# (--samples 0 --sample-every 0), since PyTorch draws none.
#
#   tools/gpu_train_race.sh --table ZERO_LOG ZERO_METRICS ZERO_WALL TORCH_JSON TORCH_PROCESS_WALL
# prints the table alone from saved outputs (how the table is tested without a GPU).
set -uo pipefail

table() {  # zero log, zero metrics.jsonl, zero wall s, torch JSON, torch process wall s
  python3 - "$@" <<'EOF'
import json, re, statistics, sys
log, metrics, zero_wall, torch_json, torch_process = sys.argv[1:6]
recs = [json.loads(l) for l in open(metrics) if l.strip()]
vals = [r["val_loss"] for r in recs if r.get("val_loss") is not None]
# train_gpt's last line before the samples: "best val loss 1.4712 (bf16); checkpoints ..."
m = re.findall(r"best val loss ([0-9.]+|nan|inf)", open(log).read())
best = float(m[-1]) if m else min(vals, default=float("nan"))
# Each record's "ms" is the mean step time since the previous record (train_gpt's
# log_every: 50 steps on a GPU); the last record (after the last step) has ms 0.
ms = [r["ms"] for r in recs if r["step"] >= 10 and r.get("ms", 0) > 0]
zero = dict(steps=max((r["step"] for r in recs), default=0), wall_s=float(zero_wall),
            ms_per_step=statistics.median(ms) if ms else float("nan"), best_val=best,
            final_val=vals[-1] if vals else float("nan"))
lines = [l for l in open(torch_json) if l.strip().startswith("{")]
if not lines:
    sys.exit(f"gpu_train_race.sh: no JSON line in {torch_json}")
torch = json.loads(lines[-1])
num = lambda v: float("nan") if v is None else float(v)
print(f"{'':8} {'steps':>6} {'wall s':>8} {'ms/step':>8} {'best val':>8} {'final val':>9}")
for name, r in (("Zero", zero), ("PyTorch", torch)):
    print(f"{name:8} {r['steps']:6d} {num(r['wall_s']):8.1f} {num(r['ms_per_step']):8.2f}"
          f" {num(r['best_val']):8.4f} {num(r['final_val']):9.4f}")
ratio = zero["wall_s"] / torch["wall_s"] if torch["wall_s"] else float("nan")
print(f"PyTorch's whole process: {float(torch_process):.1f} s "
      f"(compile {torch['compile']}, {torch['dtype']}, {torch['device']})")
print(f"wall-time ratio Zero/PyTorch: {ratio:.3f}")
checks = [("Zero's best val loss <= 1.48", best <= 1.48),
          ("Zero's wall time < PyTorch's", zero["wall_s"] < torch["wall_s"]),
          ("the same number of steps", zero["steps"] == torch["steps"])]
for what, ok in checks:
    print(f"{'PASS' if ok else 'FAIL'}: {what}")
sys.exit(0 if all(ok for _, ok in checks) else 1)
EOF
}

if [ "${1:-}" = --table ]; then
  shift
  [ $# -eq 5 ] || { echo "gpu_train_race.sh --table: expected 5 arguments, got $#"; exit 2; }
  table "$@"
  exit $?
fi

cd "$(dirname "$0")/.."
data=${1:-.data/tinyshakespeare/input.txt}
steps=${2:-2500}
build=${3:-build/gpu}
exe="$build/chapters/11_gpt/train_gpt"
[ -x "$exe" ] || { echo "gpu_train_race.sh: $exe is not built"; exit 1; }
[ -f "$data" ] ||
  { echo "gpu_train_race.sh: no $data (tools/fetch_tinyshakespeare.sh fetches it)"; exit 1; }
[[ "$steps" =~ ^[0-9]+$ ]] ||
  { echo "gpu_train_race.sh: steps must be a whole number, got '$steps'"; exit 1; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { echo "gpu_train_race.sh: needs PyTorch that sees a GPU (python3 -c 'import torch')"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "== Zero: $exe, $steps steps"
start=$(date +%s.%N)
# stdbuf: train_gpt's printf lines reach the pipe as they are printed, not at the end.
stdbuf -oL "$exe" --data "$data" --dtype bf16 --max-steps "$steps" --out-dir "$dir/zero" \
  --samples 0 --sample-every 0 | tee "$dir/zero.log" ||
  { echo "gpu_train_race.sh: train_gpt failed"; exit 1; }
zero_wall=$(awk "BEGIN { print $(date +%s.%N) - $start }")

echo "== PyTorch: tools/torch_train_char.py, $steps steps"
start=$(date +%s.%N)
python3 tools/torch_train_char.py --data "$data" --dtype bf16 --max-steps "$steps" \
  >"$dir/torch.json" ||
  { echo "gpu_train_race.sh: tools/torch_train_char.py failed"; exit 1; }
torch_wall=$(awk "BEGIN { print $(date +%s.%N) - $start }")
cat "$dir/torch.json"

echo
table "$dir/zero.log" "$dir/zero/metrics.jsonl" "$zero_wall" "$dir/torch.json" "$torch_wall"
