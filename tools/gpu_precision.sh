#!/usr/bin/env bash
# Zero's GPT step in every precision mode against a float64 PyTorch model, next to
# PyTorch FP32 and TF32, on the char model and a GPT-2-shaped one: one table each
# (tools/torch_reference.py --table; the models are in tools/dump_gpt_step.cpp).
#   tools/gpu_precision.sh [build dir, default build/gpu]
# Needs a built dump_gpt_step, PyTorch, numpy and safetensors; a GPU for the CUDA rows.
# Exit status 1 if Zero's default is not within 2x of PyTorch FP32 on either model.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
dump="$build/tools/dump_gpt_step"
[ -x "$dump" ] || { echo "gpu_precision.sh: $dump is not built"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rc=0
for model in char gpt2; do
  files=()
  # The CPU row only for char: the GPT-2 shape's 50304-word head takes minutes there.
  if [ "$model" = char ]; then
    "$dump" --model "$model" --device cpu --out "$dir/$model-cpu.safetensors" || exit 1
    files+=("$dir/$model-cpu.safetensors")
  fi
  for precision in ieee 3xtf32 tf32 fp16; do
    "$dump" --model "$model" --device cuda --precision "$precision" \
      --out "$dir/$model-$precision.safetensors" || exit 1
    files+=("$dir/$model-$precision.safetensors")
  done
  echo "== $model"
  python3 tools/torch_reference.py --table "${files[@]}" || rc=1
  rm -f "$dir"/*.safetensors
done
exit $rc
