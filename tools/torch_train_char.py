#!/usr/bin/env python3
"""Trains train_gpt's character-level GPT in PyTorch, with Zero's recipe, and times it.

    python3 tools/torch_train_char.py --data .data/tinyshakespeare/input.txt [--dtype bf16]
        [--max-steps 2000] [--eval-every 250] [--eval-iters 100] [--no-compile]
        [--device cuda|cpu] [--seed 1337] [--batch-size 64]

The PyTorch side of the wall-time race in tools/gpu_train_race.sh: the same text, the
same tokens, the same model, schedule and optimiser as chapters/11_gpt/train_gpt.cpp's
GPU preset, written the way a PyTorch user writes a training loop for speed (bf16
autocast, fused AdamW, the forward and loss under torch.compile). Only the random
streams differ (Zero draws windows and dropout masks from Philox; this script from
torch's generators), so the two runs' losses agree statistically, not bit for bit.

Progress goes to stderr ("step 250 | val 1.7234 | train 1.7012 | 12.3 s"); the last line
on stdout is one JSON object: steps, wall_s (the loop from step 0's evaluation to the
last one, compilation and evaluations included: a stopwatch, not a profiler),
ms_per_step (median training step after the first 10, each timed up to reading its
loss, as Zero's Trainer::Step does), best_val, final_val, compile, dtype, device.
"""
import argparse
import json
import math
import pathlib
import statistics
import sys
import time

# The reference run, from Zero's sources. zero/train/config.h (TrainConfig, whose
# defaults Reference() keeps) and zero/nn/block.h (GPTConfig): 6 layers, 6 heads, 384
# wide, block 256, dropout 0.2, batch 64, lr 1e-3 -> 1e-4, warmup 100, weight decay 0.1,
# betas 0.9 / 0.99, grad clip 1.0, seed 1337. zero/optim/adamw.h: eps 1e-8.
# chapters/11_gpt/train_gpt.cpp's GPU preset: 2000 steps, eval every 250 on 100 batches.
N_LAYER, N_HEAD, N_EMBD, BLOCK, DROPOUT = 6, 6, 384, 256, 0.2
BATCH, LR, MIN_LR, WARMUP = 64, 1e-3, 1e-4, 100
WEIGHT_DECAY, BETAS, EPS, GRAD_CLIP, SEED = 0.1, (0.9, 0.99), 1e-8, 1.0, 1337
GPU_STEPS, GPU_EVAL_EVERY, GPU_EVAL_ITERS = 2000, 250, 100
VAL_FRACTION = 0.1   # zero/data/token_file.h: prepare_char_dataset's default
VAL_SEED_OFFSET = 1  # zero/train/trainer.cpp: kValSeedOffset


def char_tokens(path):
    """(train ids, val ids, vocabulary size) as train_gpt prepares --data.

    train_gpt.cpp reads the file's bytes (zero/data/token_file.cpp: read_text_file) and
    calls prepare_char_dataset: the vocabulary is the text's distinct code points in
    increasing order (zero/data/char_tokenizer.cpp: CharTokenizer::FromText), and the
    first floor(n * (1 - 0.1)) characters train, the rest validate. Strict UTF-8
    decoding refuses what zero/data/utf8.h refuses (bad bytes, surrogates, overlongs)."""
    try:
        text = pathlib.Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        sys.exit(f"error: --data {path}: {e.strerror}")
    except UnicodeDecodeError as e:
        sys.exit(f"error: --data {path}: not UTF-8 at byte offset {e.start}")
    chars = sorted(set(text))  # Python orders str by code point, as char32_t sorts
    if len(chars) > 65536:     # token_file.h: kMaxTokenFileVocab (uint16 files)
        sys.exit(f"error: --data {path}: {len(chars)} distinct characters, at most 65536")
    index = {c: i for i, c in enumerate(chars)}
    ids = [index[c] for c in text]
    n_train = math.floor(len(ids) * (1.0 - VAL_FRACTION))
    if not 1 <= n_train < len(ids):
        sys.exit(f"error: --data {path}: {len(ids)} characters are too few for both splits")
    return ids[:n_train], ids[n_train:], len(chars)


def lr_at(step, warmup, max_steps, lr_max, lr_min):
    """zero/optim/lr_schedule.cpp: linear warmup to lr_max (step 0 already moves), then
    a cosine down to lr_min at max_steps."""
    if step < warmup:
        return lr_max * (step + 1) / warmup
    if step >= max_steps:
        return lr_min
    ratio = (step - warmup) / (max_steps - warmup)
    return lr_min + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr_max - lr_min)


def zero_init(torch, model):
    """Zero's initialisation (zero/nn/gpt.h, zero/nn/block.cpp, zero/nn/layers.cpp):
    Linear and Embedding weights N(0, 0.02^2), the two c_proj of each block, which write
    into the residual stream, N(0, (0.02 / sqrt(2 n_layer))^2), biases 0, LayerNorm 1 and
    0. PyTorch's own Linear default (Kaiming uniform) would start the race elsewhere."""
    nn = torch.nn
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * N_LAYER) if name.endswith("c_proj") else 0.02
                module.weight.normal_(0.0, std)
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a UTF-8 text file (train_gpt's --data)")
    ap.add_argument("--max-steps", type=int, default=GPU_STEPS)
    ap.add_argument("--eval-every", type=int, default=GPU_EVAL_EVERY, help="0: only at the end")
    ap.add_argument("--eval-iters", type=int, default=GPU_EVAL_ITERS)
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                    help="torch.compile the forward and loss (default: on)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--batch-size", type=int, default=BATCH,
                    help="sequences per step (64 is Zero's; smaller only for a CPU smoke test)")
    args = ap.parse_args()
    if args.max_steps < 0 or args.eval_every < 0 or args.eval_iters < 1 or args.batch_size < 1:
        sys.exit("error: expected --max-steps >= 0, --eval-every >= 0, --eval-iters >= 1 "
                 "and --batch-size >= 1")

    import torch
    import torch.nn.functional as F
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from torch_reference import torch_model  # nanoGPT's shape under Zero's parameter names

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: --device cuda, but this PyTorch sees no GPU (try --device cpu)")
    dev = torch.device(args.device)
    # TF32 off, as Zero's default: in bf16 the GEMMs run in bf16 anyway, and in fp32 the
    # comparison is then IEEE FP32 against IEEE FP32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    train_ids, val_ids, vocab = char_tokens(args.data)
    if len(val_ids) - 1 <= BLOCK:  # zero/data/batch_sampler.cpp needs block < tokens - 1
        sys.exit(f"error: --data {args.data}: its validation split ({len(val_ids)} characters)"
                 f" is shorter than a window of {BLOCK + 1}")
    # The token arrays live on the device, so drawing a batch is an index on the GPU
    # and never waits for a copy (Zero gathers on the host into pinned memory instead).
    train_t = torch.tensor(train_ids, dtype=torch.long, device=dev)
    val_t = torch.tensor(val_ids, dtype=torch.long, device=dev)
    offsets = torch.arange(BLOCK + 1, device=dev)

    def batch(tokens, gen):
        """x, y of B random windows of T + 1 tokens: zero/data/batch_sampler.cpp draws
        window starts uniformly in [0, n - T - 1]; y is x shifted by one."""
        starts = torch.randint(0, len(tokens) - BLOCK, (args.batch_size,), device=dev,
                               generator=gen)
        w = tokens[starts[:, None] + offsets]  # (B, T + 1)
        return w[:, :-1], w[:, 1:]

    torch.manual_seed(args.seed)
    cfg = dict(vocab_size=vocab, block_size=BLOCK, n_layer=N_LAYER, n_head=N_HEAD, n_embd=N_EMBD)
    model = torch_model(torch, cfg, dropout=DROPOUT)
    zero_init(torch, model)
    model.to(dev)  # FP32 master weights in every dtype, as Zero's (nn/module.h)
    # Weight decay on parameters of two or more dimensions only (zero/optim/adamw.h):
    # the Linear matrices and both embedding tables, not biases or LayerNorm.
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": WEIGHT_DECAY},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=LR, betas=BETAS, eps=EPS, fused=args.device == "cuda")

    use_bf16 = args.dtype == "bf16"

    def forward(x, y):
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=use_bf16):
            logits = model(x)  # (B, T, V)
            return F.cross_entropy(logits.view(-1, vocab).float(), y.reshape(-1))

    # Fixed shapes, one process, one run: the compile is paid once for training and once
    # for evaluation (eval mode and no_grad are another graph), inside the timed loop.
    loss_of = torch.compile(forward, dynamic=False) if args.compile else forward

    train_gen = torch.Generator(device=dev)
    train_gen.manual_seed(args.seed)
    val_gen = torch.Generator(device=dev)

    def evaluate():
        """Mean loss of eval_iters validation batches, dropout off. Zero's validation
        sampler restarts at position 0 of its own stream each time (Trainer::Evaluate in
        zero/train/trainer.cpp), so every evaluation sees the same batches: here too."""
        model.eval()
        val_gen.manual_seed(args.seed + VAL_SEED_OFFSET)
        total = 0.0
        with torch.no_grad():
            for _ in range(args.eval_iters):
                total += loss_of(*batch(val_t, val_gen)).item()
        model.train()
        return total / args.eval_iters

    # A run shorter than its warmup just warms up (zero/train/trainer.cpp, Trainer::Step).
    warmup, horizon = min(WARMUP, args.max_steps), max(args.max_steps, 1)

    def train_step(step):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, warmup, horizon, LR, MIN_LR)
        loss = loss_of(*batch(train_t, train_gen))
        loss.backward()
        # Zero also skips the update when the norm is not finite (an FP16 overflow);
        # BF16 does not overflow, so plain clipping is the same run.
        torch.nn.utils.clip_grad_norm_(params, GRAD_CLIP)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()  # the step's one host sync, as Zero's Trainer::Step reads its loss

    model.train()
    step_ms, vals, train_loss = [], [], None
    start = time.perf_counter()
    # Zero's loop (train_gpt.cpp): evaluate before step s when s % eval_every == 0, and
    # after the last step; step 0's evaluation counts for the best.
    for step in range(args.max_steps + 1):
        last = step == args.max_steps
        if (args.eval_every > 0 and step % args.eval_every == 0) or last:
            vals.append(evaluate())
            shown = f" | train {train_loss:.4f}" if train_loss is not None else ""
            print(f"step {step} | val {vals[-1]:.4f}{shown} | {time.perf_counter() - start:.1f} s",
                  file=sys.stderr, flush=True)
        if last:
            break
        t0 = time.perf_counter()
        train_loss = train_step(step)
        step_ms.append((time.perf_counter() - t0) * 1e3)
    wall = time.perf_counter() - start  # evaluate() ended on .item(): the device is done

    timed = step_ms[10:] or step_ms  # the first steps compile and warm the allocator
    print(json.dumps({
        "steps": args.max_steps, "wall_s": round(wall, 3),
        "ms_per_step": round(statistics.median(timed), 3) if timed else None,
        "best_val": round(min(vals), 4), "final_val": round(vals[-1], 4),
        "compile": args.compile, "dtype": args.dtype, "device": args.device,
        "batch_size": args.batch_size, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
