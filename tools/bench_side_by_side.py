#!/usr/bin/env python3
"""Zero next to PyTorch on the same GPU, in one call: element-wise add (256M floats),
sum of all elements, and row softmax 8192x4096, each as time and GB/s, with the copy
bandwidth of the same run, and the Zero/PyTorch ratios against the project's targets;
then square GEMMs (4096^3, 8192^3) in FP32 and TF32 as TFLOP/s.

    python3 tools/bench_side_by_side.py [--build build/default] [--quick]

PyTorch runs in this process (FP32, TF32 off); Zero runs as the bench_kernels
program with --json. Without torch, Zero's figures are printed alone.
"""
import argparse
import json
import pathlib
import subprocess
import sys


def time_torch(fn, warmup, reps):
    import torch
    for _ in range(warmup):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def torch_gemm(sizes, warmup, reps):
    import torch
    out = {"fp32": [], "tf32": []}
    for g in sizes:
        a = torch.randn(g, g, device="cuda")
        b = torch.randn(g, g, device="cuda")
        c = torch.empty(g, g, device="cuda")
        for mode, tf32 in (("fp32", False), ("tf32", True)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            out[mode].append(time_torch(lambda: torch.matmul(a, b, out=c), warmup, reps))
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def torch_figures(n, rows, warmup, reps):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    c = torch.empty_like(a)
    x = torch.randn(rows, 4096, device="cuda")
    return {
        "copy_ms": time_torch(lambda: c.copy_(a), warmup, reps),
        "add_ms": time_torch(lambda: torch.add(a, b, out=c), warmup, reps),
        "sum_ms": time_torch(lambda: a.sum(), warmup, reps),
        "softmax_ms": time_torch(lambda: torch.softmax(x, dim=-1), warmup, reps),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    exe = pathlib.Path(args.build) / "tools" / "bench_kernels"
    cmd = [str(exe), "--json"] + (["--quick"] if args.quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        sys.exit("bench_kernels failed")
    line = out.stdout.strip().splitlines()[-1]
    if not line.startswith("{"):
        print(line)
        return 0
    zero = json.loads(line)
    n, rows = zero["n"], zero["softmax_rows"]
    gb = {"add": 3 * n * 4 / 1e9, "sum": n * 4 / 1e9, "softmax": 2 * rows * 4096 * 4 / 1e9}
    try:
        import torch  # noqa: F401
        ref = torch_figures(n, rows, 2 if args.quick else 5, 5 if args.quick else 20)
    except ImportError:
        ref = None
    print(f"copy bandwidth (Zero's run): {zero['copy_gbps']:.0f} GB/s")
    if ref:
        print(f"copy bandwidth (PyTorch's run): {2 * n * 4 / 1e9 / (ref['copy_ms'] / 1e3):.0f} GB/s")
    print(f"{'work':10} {'Zero ms':>9} {'Zero GB/s':>10} {'Torch ms':>9} {'Torch GB/s':>11} {'Torch/Zero':>11}  target")
    targets = {"add": "Zero >= 95% of copy", "sum": "Zero >= 90% of copy", "softmax": "Torch/Zero >= 1.5"}
    for key in ("add", "sum", "softmax"):
        zms = zero[f"{key}_ms"]
        line = f"{key:10} {zms:9.4f} {gb[key] / (zms / 1e3):10.0f}"
        if ref:
            tms = ref[f"{key}_ms"]
            line += f" {tms:9.4f} {gb[key] / (tms / 1e3):11.0f} {tms / zms:11.2f}"
        else:
            line += f" {'-':>9} {'-':>11} {'-':>11}"
        print(line + "  " + targets[key])
    sizes = zero["gemm_sizes"]
    tg = torch_gemm(sizes, 2 if args.quick else 5, 5 if args.quick else 20) if ref else None
    print(f"{'GEMM':10} {'Zero ms':>9} {'Zero TF/s':>10} {'Torch ms':>9} {'Torch TF/s':>11} {'Torch/Zero':>11}")
    for mode in ("fp32", "tf32"):
        for i, g in enumerate(sizes):
            flops = 2.0 * g ** 3
            zms = zero[f"gemm_{mode}_ms"][i]
            line = f"{mode} {g:<5} {zms:9.3f} {flops / zms / 1e9:10.1f}"
            if tg:
                tms = tg[mode][i]
                line += f" {tms:9.3f} {flops / tms / 1e9:11.1f} {tms / zms:11.2f}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
