#!/usr/bin/env python3
"""Zero's GPT training step next to PyTorch (eager and torch.compile) on the same GPU, in one call.

    python3 tools/bench_train_side_by_side.py [--build build/default] [--steps 20] [--profile]
                                              [--rows char fp32,gpt2 bf16,...] [--no-compile]

A step is forward, backward, global-norm clip 1.0 and AdamW, for:

  char   6 layers, 6 heads, 384 wide, vocab 65, B 64, T 256, dropout 0.2 (nanoGPT shakespeare_char)
  gpt2   GPT-2 124M: 12 layers, 12 heads, 768 wide, vocab 50304, B 8, T 1024, no dropout

each in FP32 (TF32 off on both sides: Zero's default, cuBLAS SGEMM and attention on FP32
FMAs), with TF32 Tensor Cores (Zero: MX_FAST_MATMUL=tf32; PyTorch: allow_tf32) and in
BF16 (Zero: --dtype bf16, FP32 master weights; PyTorch: bf16 autocast). The "3xtf32"
rows, which have no target, show Zero with MX_FAST_MATMUL=3xtf32 (large GEMMs and the
attention as three TF32 products; Note [FP32 GEMMs on TF32 Tensor Cores]) against
PyTorch FP32. Zero runs as tools/bench_train_step, whose steps after the first replay one
CUDA graph of the step (TrainConfig::cuda_graph; torch.compile's default mode, used here
as nanoGPT uses it, makes none). PyTorch runs here, with the model of
tools/torch_reference.py (nanoGPT's architecture), F.cross_entropy on the full logits,
clip_grad_norm_ and AdamW(fused=True), as nanoGPT's train.py does, once eager and, for
the TF32 and BF16 rows, once more under torch.compile (the whole step's model forward
and loss compiled; what a PyTorch user runs for speed). Each row's ratio is against
the PyTorch it is targeted at: eager for FP32 (its arithmetic is the same), compiled for
TF32 and BF16. Both time each step on the host up to reading the loss (so the GPU has
finished it), after --warmup steps, and report the median of --steps. PyTorch's medians
move from process to process far more than Zero's (GPT-2 compiled in BF16: 19.2 to 27.9
ms on one H200, docs/speed_notes.md), so each PyTorch measurement runs --torch-runs times,
each in a fresh process, and its fastest run is the one compared: the ratios are against
PyTorch at its best. Peak memory is the
allocator's peak of live bytes during the timed steps (torch.cuda.max_memory_allocated;
Zero's CachingPool).

The floor column is the step's model FLOPs (6N + 12LCT per token, nanoGPT's count) at
the GEMM rate this card reaches in this run (an 8192^3 torch.matmul in the row's
arithmetic: FP32, TF32 or BF16): no implementation that does the model's arithmetic at
that rate can be faster. MFU is Zero's model FLOPs per second over that rate. The "Zero
floor" column is the same FLOPs at the rate of the GEMMs Zero runs: TF32's rate over
three for 3xtf32.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

PRESETS = {
    "char": dict(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384, batch=64, dropout=0.2),
    "gpt2": dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768, batch=8, dropout=0.0),
}
# (work, preset, Zero's MX_FAST_MATMUL, dtype, PyTorch TF32, the PyTorch compared with,
#  time target, memory target). The char model's memory target holds for every row.
ROWS = [
    ("char fp32", "char", "ieee", "fp32", False, "eager", 0.95, 0.80),
    ("gpt2 fp32", "gpt2", "ieee", "fp32", False, "eager", 1.00, None),
    ("char tf32", "char", "tf32", "fp32", True, "compiled", 0.70, 0.80),
    ("gpt2 tf32", "gpt2", "tf32", "fp32", True, "compiled", 0.70, None),
    ("char bf16", "char", "ieee", "bf16", False, "compiled", 0.65, 0.80),
    ("gpt2 bf16", "gpt2", "ieee", "bf16", False, "compiled", 0.80, 0.80),
    ("char 3xtf32", "char", "3xtf32", "fp32", False, "eager", None, None),
    ("gpt2 3xtf32", "gpt2", "3xtf32", "fp32", False, "eager", None, None),
]


def zero_step(build, preset, fast, steps, warmup, profile, dtype="fp32", env=None):
    exe = pathlib.Path(build) / "tools" / "bench_train_step"
    cmd = [str(exe), "--preset", preset, "--steps", str(steps), "--warmup", str(warmup), "--json",
           "--device", "cuda", "--dtype", dtype]
    if profile:
        cmd += ["--profile", "3"]
    env = dict(os.environ if env is None else env, MX_FAST_MATMUL=fast)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stdout}{out.stderr}")
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1])


def torch_step(preset, tf32, steps, warmup, dtype="fp32", compiled=False):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from torch_reference import torch_model

    p = PRESETS[preset]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(1337)
    cfg = {k: p[k] for k in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")}
    model = torch_model(torch, cfg, dropout=p["dropout"]).cuda().train()
    decay = [q for q in model.parameters() if q.dim() >= 2]
    other = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99), fused=True)
    b, t, v = p["batch"], p["block_size"], p["vocab_size"]
    data = torch.randint(0, v, (64, b, t + 1), device="cuda")

    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16")

    def forward(x, y):
        with autocast:
            logits = model(x)
            return F.cross_entropy(logits.view(-1, v).float(), y.reshape(-1))

    # Shapes fixed, as in a training run: each row runs in its own process (`isolated`),
    # so this is its only compile.
    loss_of = torch.compile(forward, dynamic=False) if compiled else forward

    def step(i):
        batch = data[i % len(data)]
        x, y = batch[:, :-1], batch[:, 1:]
        loss = loss_of(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(steps):
        start = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - start) * 1e3)
    peak = torch.cuda.max_memory_allocated()
    del model, opt, data
    torch.cuda.empty_cache()
    return {"ms": statistics.median(times), "tokens_per_s": b * t / statistics.median(times) * 1e3,
            "peak_bytes": peak}


def gemm_tflops(kind):
    """TFLOP/s of an 8192^3 torch.matmul in `kind`: "fp32", "tf32" or "bf16"."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    n = 8192
    dtype = torch.bfloat16 if kind == "bf16" else torch.float32
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        start.record()
        a @ b
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    torch.backends.cuda.matmul.allow_tf32 = False
    return 2 * n ** 3 / statistics.median(times) / 1e9


def gpu_state():
    """The GPU's SM clock, power draw and temperature now, from nvidia-smi (empty when it is
    missing): printed before each measurement, since a hot or power-capped H200 clocks down,
    and a row measured after a long one can be slower for that reason alone."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                              "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return f" [GPU: {out.stdout.strip()}]" if out.returncode == 0 else ""


def isolated(job, **kwargs):
    """torch_step(**kwargs) or gemm_tflops(**kwargs) run in a fresh Python process, as
    Zero's rows run in their own: each PyTorch measurement starts with a new CUDA context,
    caching allocator and torch.compile state. In one process the PyTorch bf16 rows came
    out up to 1.5x slower than alone (GPT-2 compiled 28.8 against 19.3 ms on the H200)."""
    cmd = [sys.executable, __file__, "--job", json.dumps({"job": job, "kwargs": kwargs})]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: the PyTorch {job} {kwargs} failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def best_of(runs, job, **kwargs):
    """`runs` isolated runs of torch_step(**kwargs): the fastest, with every run's median
    ms (in the order run) under "runs"."""
    results = [isolated(job, **kwargs) for _ in range(runs)]
    best = min(results, key=lambda r: r["ms"])
    return dict(best, runs=[r["ms"] for r in results])


def runs_note(r):
    """" (runs 19.31, 27.88)" for a measurement of several runs, else ""."""
    if len(r.get("runs", [])) < 2:
        return ""
    return " (runs " + ", ".join(f"{ms:.2f}" for ms in r["runs"]) + ")"


def nan_if_none(x, f=lambda v: v):
    return float("nan") if x is None else f(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build/default")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rows", default=",".join(r[0] for r in ROWS),
                    help="comma-separated subset of: " + ", ".join(r[0] for r in ROWS))
    ap.add_argument("--profile", action="store_true", help="print Zero's per-op breakdown of each row")
    ap.add_argument("--torch-runs", type=int, default=2,
                    help="fresh-process runs of each PyTorch measurement; the fastest counts")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip torch.compile (its rows' ratios then print nan)")
    ap.add_argument("--job", help=argparse.SUPPRESS)  # one isolated PyTorch measurement
    args = ap.parse_args()
    if args.torch_runs < 1:
        ap.error(f"--torch-runs: expected at least 1, got {args.torch_runs}")
    if args.job:
        spec = json.loads(args.job)
        run = {"torch_step": torch_step, "gemm_tflops": gemm_tflops}[spec["job"]]
        print(json.dumps(run(**spec["kwargs"])))
        return 0
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    if not have_torch:
        print("note: no PyTorch with CUDA here; printing Zero's figures alone")

    wanted = set(args.rows.split(","))
    results = []
    for work, preset, fast, dtype, tf32, versus, target, mem_target in ROWS:
        if work not in wanted:
            continue
        z, log = zero_step(args.build, preset, fast, args.steps, args.warmup, args.profile, dtype)
        print(f"--- {work}{gpu_state()}\n{log}", flush=True)
        common = dict(preset=preset, tf32=tf32, steps=args.steps, warmup=args.warmup, dtype=dtype)
        eager = best_of(args.torch_runs, "torch_step", **common) if have_torch else None
        if eager:
            print(f"PyTorch eager {work}: median {eager['ms']:.2f} ms/step{runs_note(eager)}, "
                  f"peak {eager['peak_bytes'] / 2**30:.2f} GiB{gpu_state()}", flush=True)
        compiled = None
        if have_torch and versus == "compiled" and not args.no_compile:
            start = time.perf_counter()
            compiled = best_of(args.torch_runs, "torch_step", **common, compiled=True)
            print(f"PyTorch compiled {work}: median {compiled['ms']:.2f} ms/step"
                  f"{runs_note(compiled)}, "
                  f"peak {compiled['peak_bytes'] / 2**30:.2f} GiB "
                  f"({time.perf_counter() - start:.0f} s for {args.torch_runs} run(s), compilation "
                  f"included){gpu_state()}",
                  flush=True)
        results.append((work, fast, dtype, tf32, versus, target, mem_target, z, eager, compiled))

    kinds = ("fp32", "tf32", "bf16")
    rate = {k: isolated("gemm_tflops", kind=k) for k in kinds} if have_torch else {}
    print()
    if rate:
        print(f"GEMM rate measured in this run (8192^3): FP32 {rate['fp32']:.1f} TFLOP/s, "
              f"TF32 {rate['tf32']:.1f} TFLOP/s, BF16 {rate['bf16']:.1f} TFLOP/s")
    head = (f"{'work':11} {'Zero ms':>8} {'eager ms':>8} {'compiled':>8} {'floor ms':>8}"
            f" {'Zero floor':>10} {'MFU':>5} {'ratio':>6} {'vs':>8} {'target':>6}"
            f" {'Zero tok/s':>10} {'Zero GiB':>8} {'Torch GiB':>9} {'mem ratio':>9}"
            f" {'target':>6} {'mallocs':>7}")
    print(head)
    ok = True
    for work, fast, dtype, tf32, versus, target, mem_target, z, eager, compiled in results:
        kind = "bf16" if dtype == "bf16" else "tf32" if tf32 else "fp32"
        floor = z["flops"] / (rate[kind] * 1e9) if rate else float("nan")
        zero_rate = None
        if rate:
            zero_rate = rate["bf16"] if dtype == "bf16" else {
                "3xtf32": rate["tf32"] / 3, "tf32": rate["tf32"], "ieee": rate["fp32"]}[fast]
        zero_floor = z["flops"] / (zero_rate * 1e9) if zero_rate else float("nan")
        mfu = z["flops"] / (z["ms"] * 1e-3) / (rate[kind] * 1e12) if rate else float("nan")
        ref = compiled if versus == "compiled" else eager
        ratio = z["ms"] / ref["ms"] if ref else float("nan")
        mem = z["peak_bytes"] / ref["peak_bytes"] if ref else float("nan")
        if target is not None:
            ok &= ratio <= target and (mem_target is None or mem <= mem_target)
        print(f"{work:11} {z['ms']:8.2f} {nan_if_none(eager, lambda t: t['ms']):8.2f}"
              f" {nan_if_none(compiled, lambda t: t['ms']):8.2f} {floor:8.2f}"
              f" {zero_floor:10.2f} {mfu:5.2f} {ratio:6.2f} {versus:>8}"
              f" {'<=' + format(target, '.2f') if target else '-':>6} {z['tokens_per_s']:10.0f}"
              f" {z['peak_bytes'] / 2**30:8.2f}"
              f" {nan_if_none(ref, lambda t: t['peak_bytes'] / 2**30):9.2f} {mem:9.2f}"
              f" {'<=' + format(mem_target, '.2f') if mem_target else '-':>6} {z['mallocs']:7d}")
    if have_torch:
        print("all targets met" if ok else "some targets not met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
