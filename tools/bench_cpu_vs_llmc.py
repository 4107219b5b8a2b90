#!/usr/bin/env python3
"""Zero's CPU training step next to llm.c's train_gpt2.c, on the same shapes and threads.

    python3 tools/bench_cpu_vs_llmc.py [--llmc DIR] [--build build/cpu] [--threads 1,2]
                                       [--models quickstart,small48,char] [--char-batch 4]
                                       [--steps 20] [--warmup 3] [--json]

A training step is forward, backward, and the AdamW update, timed by each program around
the step alone. Three models are compared:

  quickstart  train_gpt's CPU model (chapters/11_gpt/train_gpt.cpp picks
              TrainConfig::SmallCpu in zero/train/config.cpp when there is no GPU):
              4 layers, 4 heads, 64 wide, block 64, batch 16, no dropout, and vocab 193,
              the characters of train_gpt's built-in corpus (chapter 11's README shows
              "vocab 193"). bench_train_step --preset small.
  small48     the quickstart model before the CPU step was made faster, on which the
              project's target was set: 3 layers, 4 heads, 48 wide, block 64, batch 16,
              vocab 119 (the corpus of that time).
  char        TrainConfig::Reference, nanoGPT's shakespeare_char model: 6 layers, 6 heads,
              384 wide, block 256, vocab 65, but with batch --char-batch (default 4, not
              the reference's 64, so that a step takes seconds on a CPU, not a minute).

Both run without dropout, since llm.c has none: the reference model's dropout of 0.2 is
turned off (bench_train_step --dropout 0), so that both sides do the same arithmetic.
Each model runs with every thread count of --threads, set through OMP_NUM_THREADS (both
programs parallelise with OpenMP). The figure is the median of --steps steps after
--warmup untimed ones (the first steps allocate activations, gradients and moments).

Zero runs as tools/bench_train_step (build it with
`cmake --build build/cpu --target bench_train_step`). Its step also clips the global
gradient norm to 1.0, which llm.c's CPU trainer does not do; the clip is one pass over
the gradients, small next to the matrix products.

llm.c runs from a checkout given by --llmc (git clone https://github.com/karpathy/llm.c).
Nothing of it enters this repository: the tool copies train_gpt2.c and llmc/ into a
temporary folder and edits the copy only. train_gpt2.c hard-codes its sizes in main()
(B = 4, T = 64, 41 steps), so the copy gets this run's B, T and step count, and its
validation and sampling are switched off. They are outside the timed region anyway (the
"took X ms" line times dataloader_next_batch, gpt2_forward, gpt2_zero_grad,
gpt2_backward and gpt2_update only), but they would lengthen the run. The copy is built
as llm.c's Makefile builds it, `cc -Ofast -march=native -fopenmp -DOMP` (without
-march=native if the compiler refuses it). The model's shape comes from the checkpoint it
opens, gpt2_124M.bin, so the tool writes one with random weights in llm.c's format
(gpt2_build_from_checkpoint: 256 int32 header with magic 20240326, version 3 = fp32,
maxT, V, L, NH, C, Vp; then the 16 parameter tensors as float32 in the order of
fill_in_parameter_sizes), and token files in llm.c's format (256 int32 header with magic
20240520, version 1, token count; then uint16 tokens) at the paths main() opens. The
padded vocabulary Vp is set to V, so both sides compute the same logits.

Without --llmc, only Zero's column is printed. The ratio is Zero's time over llm.c's
(lower is better); the project's targets are <= 0.7x on the quickstart models
(quickstart and small48), with 1 and 2 threads, and <= 1.0x on the char model. Pause
other CPU work while this runs: the figures are wall-clock times.
"""
import argparse
import array
import json
import os
import pathlib
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The models: bench_train_step's preset, and the shape llm.c is given.
MODELS = {
    "quickstart": dict(preset="small", n_layer=4, n_head=4, n_embd=64, block_size=64, vocab=193,
                       batch=16, target=0.7),
    "small48": dict(preset="small", n_layer=3, n_head=4, n_embd=48, block_size=64, vocab=119,
                    batch=16, target=0.7),
    "char": dict(preset="char", n_layer=6, n_head=6, n_embd=384, block_size=256, vocab=65,
                 batch=4, target=1.0),
}


def fail(message):
    sys.exit(f"error: {message}")


# ---------------------------------------------------------------------------------------
# Zero


def zero_step(build, model, threads, steps, warmup):
    """Zero's median ms/step, from bench_train_step's --json line."""
    exe = pathlib.Path(build) / "tools" / "bench_train_step"
    if not exe.exists():
        fail(f"{exe} not found; build it with `cmake --build {build} --target bench_train_step` "
             f"(or name another build folder with --build)")
    m = MODELS[model]
    cmd = [str(exe), "--device", "cpu", "--preset", m["preset"], "--dropout", "0",
           "--n-layer", str(m["n_layer"]), "--n-head", str(m["n_head"]),
           "--n-embd", str(m["n_embd"]), "--block-size", str(m["block_size"]),
           "--vocab", str(m["vocab"]), "--batch", str(m["batch"]),
           "--steps", str(steps), "--warmup", str(warmup), "--json"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{' '.join(cmd)} failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["ms"]


# ---------------------------------------------------------------------------------------
# llm.c


def edit_main(source, batch, seq_len, total_steps):
    """train_gpt2.c's main() with this run's sizes and without validation and sampling.

    Each edit must match exactly once, so that a changed llm.c fails loudly here instead
    of running with its own sizes."""
    edits = [
        (r"int B = 4;", f"int B = {batch};"),
        (r"int T = 64;", f"int T = {seq_len};"),
        (r"step <= 40;", f"step < {total_steps};"),
        (r"if \(step % 10 == 0\)", "if (0)"),  # the validation loss
        (r"if \(step > 0 && step % 20 == 0\)", "if (0)"),  # the samples
    ]
    for pattern, replacement in edits:
        source, count = re.subn(pattern, replacement, source)
        if count != 1:
            fail(f"train_gpt2.c: expected one '{pattern}' in main(), found {count}; "
                 f"this llm.c differs from the one the tool was written for")
    return source


def write_checkpoint(path, m):
    """Random weights in llm.c's fp32 checkpoint format (gpt2_build_from_checkpoint)."""
    maxT, V, L, NH, C = m["block_size"], m["vocab"], m["n_layer"], m["n_head"], m["n_embd"]
    Vp = V
    header = [0] * 256
    header[:8] = [20240326, 3, maxT, V, L, NH, C, Vp]
    # (size, kind) in the order of fill_in_parameter_sizes; kind picks the initial value.
    tensors = [(Vp * C, "w"), (maxT * C, "w"), (L * C, "one"), (L * C, "zero"),
               (L * 3 * C * C, "w"), (L * 3 * C, "zero"), (L * C * C, "w"), (L * C, "zero"),
               (L * C, "one"), (L * C, "zero"), (L * 4 * C * C, "w"), (L * 4 * C, "zero"),
               (L * C * 4 * C, "w"), (L * C, "zero"), (C, "one"), (C, "zero")]
    # The step's speed does not depend on the values, so the matrices repeat one block of
    # N(0, 0.02) draws instead of drawing millions of numbers in Python.
    rng = random.Random(1337)
    block = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(1 << 16)))
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        for size, kind in tensors:
            if kind == "w":
                whole, rest = divmod(size, len(block))
                for _ in range(whole):
                    block.tofile(f)
                block[:rest].tofile(f)
            else:  # LayerNorm weights are 1, biases 0
                array.array("f", [1.0 if kind == "one" else 0.0] * size).tofile(f)


def write_tokens(path, vocab, count):
    """Random tokens in llm.c's token-file format (dataloader_load_shard_)."""
    rng = random.Random(42)
    header = [0] * 256
    header[:3] = [20240520, 1, count]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        array.array("H", (rng.randrange(vocab) for _ in range(count))).tofile(f)


def copy_llmc(llmc, folder):
    """Copies train_gpt2.c and llmc/ into folder and returns the copy's source text."""
    source = pathlib.Path(llmc) / "train_gpt2.c"
    if not source.is_file():
        fail(f"--llmc {llmc}: no train_gpt2.c there; pass the folder of a checkout of "
             f"https://github.com/karpathy/llm.c")
    if not (pathlib.Path(llmc) / "llmc").is_dir():
        fail(f"--llmc {llmc}: no llmc/ folder of headers next to train_gpt2.c")
    shutil.copytree(pathlib.Path(llmc) / "llmc", folder / "llmc")
    return source.read_text()


def compile_llmc(folder, tag):
    """Builds folder/train_gpt2.c as llm.c's Makefile does; returns the program's path."""
    exe = folder / f"train_gpt2_{tag}"
    base = ["cc", "-Ofast", "-fopenmp", "-DOMP", "-Wno-unused-result", "train_gpt2.c",
            "-lm", "-o", exe.name]
    last = None
    for cmd in (base[:2] + ["-march=native"] + base[2:], base):
        last = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        if last.returncode == 0:
            return exe
    tail = "\n".join((last.stdout + last.stderr).strip().splitlines()[-20:])
    fail(f"building llm.c's train_gpt2.c failed ({' '.join(base)}):\n{tail}")


def llmc_step(source, folder, model, threads, steps, warmup, built):
    """llm.c's median ms/step, from its "step N: train loss L (took X ms)" lines."""
    m = MODELS[model]
    total = warmup + steps
    run_dir = folder / model
    if model not in built:
        run_dir.mkdir()
        (run_dir / "llmc").symlink_to(folder / "llmc")
        source = edit_main(source, m["batch"], m["block_size"], total)
        (run_dir / "train_gpt2.c").write_text(source)
        built[model] = compile_llmc(run_dir, model)
        write_checkpoint(run_dir / "gpt2_124M.bin", m)
        # Enough tokens that no step wraps around the file (the loader needs B*T+1).
        count = (total + 2) * m["batch"] * m["block_size"] + 1
        data = run_dir / "dev" / "data" / "tinyshakespeare"
        write_tokens(data / "tiny_shakespeare_train.bin", m["vocab"], count)
        write_tokens(data / "tiny_shakespeare_val.bin", m["vocab"], m["batch"] * m["block_size"] + 1)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([str(built[model])], cwd=run_dir, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"llm.c's train_gpt2 ({model}) failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    took = [float(x) for x in re.findall(r"^step \d+: train loss \S+ \(took ([0-9.]+) ms\)",
                                        out.stdout, re.M)]
    if len(took) != total:
        fail(f"llm.c's train_gpt2 ({model}) printed {len(took)} step times, expected {total}:\n"
             f"{out.stdout[-2000:]}")
    return statistics.median(took[warmup:])


# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llmc", help="a checkout of karpathy/llm.c (the folder of train_gpt2.c)")
    ap.add_argument("--build", default=str(ROOT / "build" / "cpu"),
                    help="Zero's build folder, holding tools/bench_train_step")
    ap.add_argument("--threads", default="1,2", help="comma-separated OMP_NUM_THREADS values")
    ap.add_argument("--models", default="quickstart,small48,char",
                    help="comma-separated: quickstart, small48, char")
    ap.add_argument("--char-batch", type=int, default=MODELS["char"]["batch"],
                    help="sequences per step for the char model")
    ap.add_argument("--steps", type=int, default=20, help="timed steps (the median is reported)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--json", action="store_true", help="end with one JSON line of the rows")
    args = ap.parse_args()

    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            fail(f"--models: unknown model '{m}' (expected quickstart, small48 or char)")
    threads = [int(t) for t in args.threads.split(",") if t]
    if args.steps < 1 or args.warmup < 1 or args.char_batch < 1 or not threads:
        fail("--steps, --warmup, --char-batch and --threads must be positive")
    MODELS["char"]["batch"] = args.char_batch

    folder = source = None
    if args.llmc:
        folder = pathlib.Path(tempfile.mkdtemp(prefix="zero_llmc_"))
    else:
        print("no --llmc: printing Zero's column only. For llm.c's, get a checkout with\n"
              "  git clone https://github.com/karpathy/llm.c\n"
              "and pass its folder: --llmc llm.c\n", flush=True)

    rows, built = [], {}
    try:  # the temporary folder goes, whatever happens
        if folder:
            source = copy_llmc(args.llmc, folder)
        for model in models:
            m = MODELS[model]
            for t in threads:
                z = zero_step(args.build, model, t, args.steps, args.warmup)
                l = llmc_step(source, folder, model, t, args.steps, args.warmup, built) \
                    if folder else None
                rows.append(dict(model=model, batch=m["batch"], seq_len=m["block_size"],
                                 threads=t, zero_ms=z, llmc_ms=l,
                                 ratio=z / l if l else None, target=m["target"]))
                print(f"  {model} x{t}: Zero {z:.2f} ms" +
                      (f", llm.c {l:.2f} ms" if l else ""), file=sys.stderr, flush=True)
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)

    print(f"{'model':<11} {'B x T':>8} {'threads':>7} {'Zero ms':>9} {'llm.c ms':>9} "
          f"{'Zero/llm.c':>10} {'target':>7} {'met':>4}")
    for r in rows:
        llmc = f"{r['llmc_ms']:9.2f}" if r["llmc_ms"] else f"{'-':>9}"
        ratio = f"{r['ratio']:9.2f}x" if r["ratio"] else f"{'-':>10}"
        met = ("yes" if r["ratio"] <= r["target"] else "no") if r["ratio"] else "-"
        print(f"{r['model']:<11} {str(r['batch']) + ' x ' + str(r['seq_len']):>8} "
              f"{r['threads']:>7} {r['zero_ms']:9.2f} {llmc} {ratio} "
              f"{'<= ' + format(r['target'], '.1f') + 'x':>7} {met:>4}")
    print("(median ms per training step; Zero/llm.c: lower is better)")
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
