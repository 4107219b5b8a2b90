#!/usr/bin/env python3
"""Checks Zero's safetensors files against the reference `safetensors` Python library.

Usage: safetensors_python_check.py PATH/TO/safetensors_resave

Writes a file with the reference library (F32, I32, a 0-d tensor, an empty tensor,
metadata), has Zero load it and write it again (safetensors_resave), then reads Zero's
file with the reference library and requires identical names, dtypes, shapes, values
and metadata. Exits 77 (CTest: skipped) when `safetensors` or `numpy` is not installed.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as e:
    print(f"skipped: {e} (pip install safetensors numpy)")
    sys.exit(77)


def main() -> int:
    resave = sys.argv[1]
    rng = np.random.default_rng(0)
    tensors = {
        "transformer.wte.weight": rng.standard_normal((5, 3)).astype(np.float32),
        "ids": np.array([0, -1, 2**31 - 1, -(2**31), 7], dtype=np.int32),
        "scalar": np.array(3.25, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    metadata = {"format": "pt", "step": "12"}
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "ref.safetensors"), os.path.join(tmp, "zero.safetensors")
        save_file(tensors, src, metadata=metadata)
        subprocess.run([resave, src, dst], check=True)
        back = load_file(dst)
        with safe_open(dst, framework="numpy") as f:
            back_meta = f.metadata()
    failures = []
    if set(back) != set(tensors):
        failures.append(f"names differ: {sorted(back)} vs {sorted(tensors)}")
    for name, ref in tensors.items():
        got = back.get(name)
        if got is None:
            continue
        if got.dtype != ref.dtype or got.shape != ref.shape or not np.array_equal(got, ref):
            failures.append(f"{name}: got {got.dtype} {got.shape} {got!r}, expected {ref.dtype} "
                            f"{ref.shape} {ref!r}")
    if back_meta != {**metadata, "resaved_by": "zero"}:
        failures.append(f"metadata: got {back_meta}")
    for f in failures:
        print("MISMATCH", f)
    print("ok: the reference library reads Zero's file" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
