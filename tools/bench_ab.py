#!/usr/bin/env python3
"""Two trees of Zero timed side by side on one GPU: a change against the tree before it.

    git worktree add .data/base HEAD~1        # the tree to compare with, in an ignored folder
    python3 tools/bench_ab.py --base .data/base [--tests '*ttention*'] [--attention bf16,tf32]
                              [--steps gpt2:bf16,char:tf32] [--rounds 2] [--save ab.json]
    python3 tools/bench_ab.py --base . --base-env NAME=VALUE
                                               # one tree: base runs its programs with NAME set
    python3 tools/bench_ab.py --base . --cmake OPTION=ON --base-cmake OPTION=OFF
                                               # one tree built twice, a CMake option each way
    python3 tools/bench_ab.py --table ab.json  # the table again, from saved figures
    python3 tools/bench_ab.py --self-test      # the parsing and the table, without a GPU

Builds the benchmark programs of both trees (Release, in build/ab of each, or build/ab-base
for the base when one tree is built two ways; the base without its tests; --cmake and
--base-cmake add -D definitions to each), runs the tests that match --tests in this tree
first (a change that fails them is not worth timing), then times the fused attention
(tools/bench_attention: forward and backward, each shape of each --attention mode) and
whole training steps (tools/bench_train_step, each preset:dtype of --steps) of the two
trees in turn, base first, --rounds times, so that a drift of the GPU's clocks falls on
both. Prints each figure's median over the rounds for both trees and this / base: below
1 is faster.

Why it exists: a kernel change is worth keeping only if it is faster on the card, and the
card's speed moves from call to call and machine to machine by more than many changes
gain; only figures taken in one call, alternating, compare (docs/speed_notes.md keeps
each change's prediction and result).
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_train_side_by_side import zero_step  # noqa: E402  (bench_train_step, its JSON)

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST_PROGRAMS = ("kernels_tests", "autograd_tests", "nn_tests")


def parse_attention(text):
    """bench_attention's lines "shape mode fwd_ms fwd_tflops bwd_ms bwd_tflops" (the shape
    may hold a space, "char p=0") as {"attention <mode> <shape> forward|backward ms": ms}."""
    figures = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+(?: p=\S+)?)\s+(ieee|3xtf32|tf32|bf16|f16)\s+([0-9.]+)\s+[0-9.]+"
                     r"\s+([0-9.]+)\s+[0-9.]+\s*$", line)
        if m:
            shape, mode, fwd, bwd = m.groups()
            figures[f"attention {mode} {shape} forward ms"] = float(fwd)
            figures[f"attention {mode} {shape} backward ms"] = float(bwd)
    return figures


def step_figures(result, preset, dtype):
    """bench_train_step's JSON figures (zero_step's first result) as ms a step and peak GiB."""
    return {f"step {preset} {dtype} ms": result["ms"],
            f"step {preset} {dtype} peak GiB": result["peak_bytes"] / 2**30}


def table(rounds):
    """rounds: {"base": [figures, ...], "this": [figures, ...]} -> the printed table."""
    if not rounds["base"] or not rounds["this"]:  # a run cut short before both trees ran
        return "no round has figures of both trees"
    names = [n for n in rounds["base"][0] if all(n in r for r in rounds["base"] + rounds["this"])]
    width = max([len(n) for n in names] + [6])
    out = [f"{'figure':{width}} {'base':>9} {'this':>9} {'this/base':>9}"]
    for n in names:
        b = statistics.median(r[n] for r in rounds["base"])
        t = statistics.median(r[n] for r in rounds["this"])
        out.append(f"{n:{width}} {b:9.3f} {t:9.3f} {t / b if b else float('nan'):9.3f}")
    out.append(f"medians of {len(rounds['this'])} rounds, the two trees in turn, base first")
    return "\n".join(out)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"bench_ab: {' '.join(map(str, cmd))} failed (status {r.returncode}):\n"
                 f"{r.stdout[-4000:]}{r.stderr[-4000:]}")
    return r.stdout


def build(tree, targets, tests, defines=(), folder="ab"):
    build_dir = tree / "build" / folder
    run(["cmake", "-S", tree, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         f"-DZERO_BUILD_TESTS={'ON' if tests else 'OFF'}", *(f"-D{d}" for d in defines)])
    run(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2), "--target", *targets])
    return build_dir


def self_test():
    att = """shape      mode   forward ms TF/s backward ms TF/s
char       bf16      0.050     128.9    0.210      76.7
char p=0   bf16      0.044     146.4    0.180      89.5
gpt2       bf16      0.099     130.1    0.309     104.2
"""
    f = parse_attention(att)
    assert f["attention bf16 char p=0 forward ms"] == 0.044, f
    assert f["attention bf16 gpt2 backward ms"] == 0.309, f
    assert len(f) == 6, f
    s = step_figures({"ms": 18.5, "tokens_per_s": 1, "peak_bytes": 1073741824, "flops": 1,
                      "mallocs": 0}, "gpt2", "bf16")
    assert s == {"step gpt2 bf16 ms": 18.5, "step gpt2 bf16 peak GiB": 1.0}, s
    rounds = {"base": [{"a": 2.0}, {"a": 4.0}, {"a": 3.0}], "this": [{"a": 1.5}, {"a": 1.5},
                                                                      {"a": 9.0}]}
    t = table(rounds)
    assert "a" in t and "3.000" in t and "1.500" in t and "0.500" in t, t
    assert table({"base": [{"a": 2.0}], "this": []}) == "no round has figures of both trees"
    print("bench_ab self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", help="the other tree (a directory)")
    ap.add_argument("--this", default=str(ROOT), help="the changed tree (default: this one)")
    ap.add_argument("--attention", default="bf16",
                    help="bench_attention modes, comma-separated (ieee, 3xtf32, tf32, bf16, f16)")
    ap.add_argument("--steps", default="gpt2:bf16,char:bf16",
                    help="bench_train_step preset:dtype pairs (dtype fp32, bf16 or tf32), "
                         "comma-separated; '' for none")
    ap.add_argument("--base-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the base tree's programs (repeatable)")
    ap.add_argument("--cmake", action="append", default=[], metavar="NAME=VALUE",
                    help="a CMake definition for this tree's build (repeatable)")
    ap.add_argument("--base-cmake", action="append", default=[], metavar="NAME=VALUE",
                    help="a CMake definition for the base tree's build (repeatable)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tests", help="gtest filter: run these tests of this tree first")
    ap.add_argument("--save", help="write the figures of every round to this JSON file")
    ap.add_argument("--table", help="print the table of a file written by --save, and stop")
    ap.add_argument("--self-test", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.table:
        print(table(json.loads(pathlib.Path(args.table).read_text())))
        return 0
    if not args.base:
        ap.error("--base is required (or --table / --self-test)")
    if args.rounds < 1:
        ap.error(f"--rounds: expected at least 1, got {args.rounds}")
    for flag, values in (("--base-env", args.base_env), ("--cmake", args.cmake),
                         ("--base-cmake", args.base_cmake)):
        if any("=" not in e for e in values):
            ap.error(f"{flag}: expected NAME=VALUE, got {values}")
    envs = {"base": dict(os.environ, **dict(e.split("=", 1) for e in args.base_env)),
            "this": dict(os.environ)}
    steps = [s.split(":") for s in args.steps.split(",") if s]
    if any(len(s) != 2 for s in steps):
        ap.error(f"--steps: expected preset:dtype pairs such as gpt2:bf16, got '{args.steps}'")
    trees = {"base": pathlib.Path(args.base).resolve(), "this": pathlib.Path(args.this).resolve()}
    for name, tree in trees.items():
        if not (tree / "zero" / "CMakeLists.txt").is_file():
            sys.exit(f"bench_ab: --{name} {tree} is not a tree of Zero (no zero/CMakeLists.txt)")
    programs = ["bench_attention", "bench_train_step"]
    builds = {}
    defines = {"base": args.base_cmake, "this": args.cmake}
    for name, tree in trees.items():
        tests = name == "this" and bool(args.tests)
        # One tree built two ways keeps the base's build apart; built one way, it is
        # built once.
        two_ways = tree == trees["this"] and defines["base"] != defines["this"]
        folder = "ab-base" if name == "base" and two_ways else "ab"
        builds[name] = build(tree, programs + (list(TEST_PROGRAMS) if tests else []), tests,
                             defines[name], folder)
        print(f"built {name}: {tree}", flush=True)
    if args.tests:
        for prog in TEST_PROGRAMS:
            out = run([builds["this"] / "tests" / prog, f"--gtest_filter={args.tests}",
                       "--gtest_brief=1"])
            # The summary: "[  PASSED  ] n tests." and, where some skip, their count.
            summary = [line.strip() for line in out.splitlines()
                       if re.match(r"\[ +(PASSED|SKIPPED) +\] \d", line)]
            print(f"{prog}: {' '.join(summary) if summary else 'no output'}")
    rounds = {"base": [], "this": []}
    for r in range(args.rounds):
        for name in ("base", "this"):
            tools = builds[name] / "tools"
            figures = {}
            for mode in args.attention.split(","):
                if mode:
                    figures.update(parse_attention(run([tools / "bench_attention", mode],
                                                       env=envs[name])))
            for preset, dtype in steps:
                # "tf32": FP32 tensors with MX_FAST_MATMUL=tf32, as the side-by-side's rows.
                fast, tensors = ("tf32", "fp32") if dtype == "tf32" else ("ieee", dtype)
                result, _ = zero_step(builds[name], preset, fast, 20, 5, False, tensors,
                                      env=envs[name])
                figures.update(step_figures(result, preset, dtype))
            if not figures:
                sys.exit("bench_ab: the benchmarks printed no figures (no CUDA device here?)")
            rounds[name].append(figures)
            # Each round's figures as they come, and saved, so that a run cut short by a
            # time limit still leaves what it measured.
            print(f"round {r + 1} {name}: {json.dumps(figures)}", flush=True)
            if args.save:
                pathlib.Path(args.save).write_text(json.dumps(rounds, indent=1))
    print(table(rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
