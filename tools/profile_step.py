#!/usr/bin/env python3
"""Where one training step's GPU time goes, kernel by kernel, from Nsight Compute.

    python3 tools/profile_step.py --build build/ab --step gpt2:bf16 [--save gpt2.csv]
                                  [--top 25] [--env NAME=VALUE]
    python3 tools/profile_step.py --table gpt2.csv [--compare base.csv]
    python3 tools/profile_step.py --self-test     # the parsing and the tables, without a GPU

Runs `bench_train_step --steps 1 --warmup 1` of the build (preset and dtype as
tools/bench_ab.py takes them: "tf32" is FP32 tensors with MX_FAST_MATMUL=tf32) twice:
once plainly, with ZERO_GEMM_TUNE_LOG=1, to read the GEMM algorithm the first step
chooses for each shape (Note [Choosing a GEMM algorithm] in blas_lt.cu), then under
`ncu --profile-from-start off`, which starts the profiler after the warm-up step, with
those choices handed in (ZERO_GEMM_CHOICES, Note [GEMM choices handed in] in
gemm_tuning.cuh): timed under ncu, which stays attached while it records nothing, the
candidates rank otherwise, and the profile would show GEMMs a plain step never runs. It
keeps the kernels of the profiled step (up to and including its AdamW launches) and
prints each kernel's launches, total and mean microseconds and share of the step,
largest first. --compare puts a second profile (another tree, or the same tree with a
switch in --env) beside it, kernel by kernel.

Why it exists: a step's median says whether a change paid; only the kernels say where
the time went, and the profiler's per-op table (bench_train_step --profile) times ops,
not kernels, with its own events in between. ncu runs each kernel alone with the clocks
left as they are (--clock-control none) and the caches not flushed (--cache-control
none), so a kernel's time is close to its time in the step, though the gaps between
kernels are not counted.
"""
import argparse
import collections
import csv
import io
import os
import pathlib
import re
import subprocess
import sys

STEP_END = "adamw_multi_kernel"  # the optimizer's launches end every step
UNITS = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,
         "ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}  # ncu 2025 writes "ns"


def short_name(name):
    """A kernel's name without namespaces, template arguments or parameters:
    "void zero::ops::(anonymous namespace)::f<float, 4>(const float *)" -> "f". Library
    kernels (cuBLAS's "sm90_xmma_gemm_...") keep their name, cut to 60 characters."""
    depth, out = 0, []
    for ch in name:  # drop everything inside <...> and (...)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()
    last = words[-1] if words else name
    return last.split("::")[-1][:60]


def parse_csv(text):
    """ncu's --csv --page raw output -> [(kernel short name, microseconds)] in launch
    order. The first row names the columns, the second gives their units."""
    lines = [l for l in text.splitlines() if l.startswith('"')]  # not ncu's "==PROF==" lines
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2:
        return []
    header = rows[0]
    name_col, time_col = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
    unit = rows[1][time_col].strip()
    if re.fullmatch(r"[0-9.,]+", unit):  # no units row: --print-units base gives ns
        unit, first = "nsecond", 1
    else:
        first = 2
    if unit not in UNITS:
        sys.exit(f"profile_step: unknown unit '{unit}' for gpu__time_duration.sum")
    return [(short_name(r[name_col]), float(r[time_col].replace(",", "")) * UNITS[unit])
            for r in rows[first:] if len(r) > time_col and r[time_col].strip()]


def last_step(kernels):
    """The kernels of the last whole step: after the second-to-last group of consecutive
    STEP_END launches, up to and including the last group."""
    ends = [i for i, (n, _) in enumerate(kernels) if n == STEP_END]
    if not ends:
        sys.exit(f"profile_step: no {STEP_END} launch: not a training step's profile")
    last = ends[-1]
    group_start = last
    while group_start - 1 in ends:
        group_start -= 1
    before = [i for i in ends if i < group_start]
    return kernels[(before[-1] + 1 if before else 0):last + 1]


def totals(kernels):
    """{name: (launches, microseconds)} summed over the step."""
    t = collections.OrderedDict()
    for name, us in kernels:
        calls, total = t.get(name, (0, 0.0))
        t[name] = (calls + 1, total + us)
    return t


def table(kernels, top):
    t = totals(kernels)
    step = sum(us for _, us in kernels)
    out = [f"{'kernel':60} {'launches':>8} {'total us':>10} {'mean us':>9} {'share':>6}"]
    for name, (calls, us) in sorted(t.items(), key=lambda kv: -kv[1][1])[:top]:
        out.append(f"{name:60} {calls:8d} {us:10.1f} {us / calls:9.2f} {us / step:6.1%}")
    out.append(f"{'step (sum of kernels)':60} {len(kernels):8d} {step:10.1f}")
    return "\n".join(out)


def compare(base, this, top):
    tb, tt = totals(base), totals(this)
    names = sorted(set(tb) | set(tt), key=lambda n: -max(tb.get(n, (0, 0))[1],
                                                         tt.get(n, (0, 0))[1]))
    out = [f"{'kernel':60} {'base us':>10} {'this us':>10} {'this-base':>10}"]
    for n in names[:top]:
        b, t = tb.get(n, (0, 0.0))[1], tt.get(n, (0, 0.0))[1]
        out.append(f"{n:60} {b:10.1f} {t:10.1f} {t - b:+10.1f}")
    b, t = sum(us for _, us in base), sum(us for _, us in this)
    out.append(f"{'step (sum of kernels)':60} {b:10.1f} {t:10.1f} {t - b:+10.1f}")
    return "\n".join(out)


def gemm_choices(log):
    """ZERO_GEMM_TUNE_LOG's "gemm choice <shape> = <index>" lines -> ZERO_GEMM_CHOICES."""
    return ";".join(l.split("gemm choice ", 1)[1].strip() for l in log.splitlines()
                    if l.startswith("gemm choice "))


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"profile_step: {' '.join(cmd)} failed (status {r.returncode}):\n"
                 f"{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


def profile(build, preset, dtype, env_pairs):
    exe = pathlib.Path(build) / "tools" / "bench_train_step"
    if not exe.is_file():
        sys.exit(f"profile_step: no {exe}: build the bench_train_step target first")
    fast, tensors = ("tf32", "fp32") if dtype == "tf32" else ("ieee", dtype)
    env = dict(os.environ, MX_FAST_MATMUL=fast, **dict(e.split("=", 1) for e in env_pairs))
    step = [str(exe), "--preset", preset, "--device", "cuda", "--dtype", tensors,
            "--steps", "1", "--warmup", "1"]
    choices = gemm_choices(run(step, dict(env, ZERO_GEMM_TUNE_LOG="1")).stderr)
    print(f"profile_step: {choices.count(';') + 1 if choices else 0} GEMM choices of a plain "
          "run handed to the profiled one", file=sys.stderr)
    cmd = ["ncu", "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
           "--cache-control", "none", "--profile-from-start", "off", "--metrics",
           "gpu__time_duration.sum"] + step
    return run(cmd, dict(env, ZERO_GEMM_CHOICES=choices)).stdout


def self_test():
    assert short_name("void zero::ops::(anonymous namespace)::f<float, 4>(const float *, "
                      "long)") == "f"
    assert short_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n") == \
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"
    head = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n'
    launches = ["init", "a", "b", STEP_END, STEP_END, "a", "b", "b", STEP_END, STEP_END, "tail"]
    text = "==PROF== Connected\n" + head + "".join(
        f'"{i}","void {n}<int>(int)","{1000 * (i + 1):,}"\n' for i, n in enumerate(launches))
    kernels = parse_csv(text)
    assert kernels[0] == ("init", 1.0) and kernels[10] == ("tail", 11.0), kernels
    assert parse_csv(text.replace('"","","nsecond"\n', "")) == kernels  # no units row
    assert parse_csv(text.replace('"nsecond"', '"ns"')) == kernels  # ncu 2025's unit
    step = last_step(kernels)
    assert [n for n, _ in step] == ["a", "b", "b", STEP_END, STEP_END], step
    assert totals(step)["b"] == (2, 15.0), totals(step)
    t = table(step, 10)
    assert "step (sum of kernels)" in t and " 40.0" in t and t.index("\nb ") < t.index("\na "), t
    c = compare(step, [("a", 1.0), ("c", 2.0)], 10)
    assert "-5.0" in c and "+2.0" in c, c
    log = "gemm 1 0 768 8192 2304 1 68 14 14 14 0: candidate 0 37.2 us\n" \
          "gemm choice 1 0 768 8192 2304 1 68 14 14 14 0 = 3\nstep 1\n" \
          "gemm choice 0 1 64 64 64 0 68 14 0 0 1 = 0\n"
    assert gemm_choices(log) == "1 0 768 8192 2304 1 68 14 14 14 0 = 3;" \
        "0 1 64 64 64 0 68 14 0 0 1 = 0", gemm_choices(log)
    assert gemm_choices("no gemm here\n") == ""
    print("profile_step self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="a build folder holding tools/bench_train_step")
    ap.add_argument("--step", default="gpt2:bf16", help="preset:dtype (fp32, bf16, fp16 or tf32)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the profiled program (repeatable)")
    ap.add_argument("--save", help="write ncu's CSV to this file")
    ap.add_argument("--table", help="read ncu's CSV from this file instead of running ncu")
    ap.add_argument("--compare", help="a second CSV (the base) to print beside the first")
    ap.add_argument("--top", type=int, default=25, help="kernels to print (default 25)")
    ap.add_argument("--self-test", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if any("=" not in e for e in args.env):
        ap.error(f"--env: expected NAME=VALUE, got {args.env}")
    if args.table:
        text = pathlib.Path(args.table).read_text()
    else:
        if not args.build:
            ap.error("--build is required (or --table / --self-test)")
        step = args.step.split(":")
        if len(step) != 2 or step[1] not in ("fp32", "bf16", "fp16", "tf32"):
            ap.error(f"--step: expected preset:dtype such as gpt2:bf16, got '{args.step}'")
        text = profile(args.build, step[0], step[1], args.env)
        if args.save:
            pathlib.Path(args.save).write_text(text)
    this = last_step(parse_csv(text))
    if args.compare:
        print(compare(last_step(parse_csv(pathlib.Path(args.compare).read_text())), this,
                      args.top))
    else:
        print(table(this, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
