#!/usr/bin/env python3
"""Converts GPT weights between Zero (safetensors) and PyTorch: nanoGPT and Hugging Face GPT-2.

Zero's model.safetensors uses nanoGPT's parameter names exactly (transformer.wte.weight,
transformer.h.0.attn.c_attn.weight, ...), with every Linear weight in PyTorch's nn.Linear
layout [out, in]. The output head is tied to the token embedding, so Zero lists it once,
as transformer.wte.weight; nanoGPT's state dict lists both keys for one storage.

  nanoGPT   same names. Export adds lm_head.weight (the same tensor as transformer.wte.weight)
            and writes a ckpt.pt that nanoGPT's sample.py loads ({'model': ..., 'model_args':
            ...}); import accepts that ckpt.pt or a bare state dict, strips torch.compile's
            "_orig_mod." prefix, drops lm_head.weight (after checking it equals wte) and the
            causal-mask buffers (attn.bias), and adds zero biases to a bias=False model.
  hf        Hugging Face GPT2LMHeadModel. Its c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj are
            Conv1D modules whose weights are stored [in, out]: they are transposed both ways.
            Keys with or without the "transformer." prefix are read; lm_head.weight is added
            on export and dropped on import, like nanoGPT.

Usage (.pt files need `torch`; everything else needs only `safetensors` and `numpy`):
  tools/convert_checkpoint.py export --format nanogpt model.safetensors ckpt.pt --n-head 6
  tools/convert_checkpoint.py export --format hf model.safetensors gpt2.pt        (or gpt2.safetensors)
  tools/convert_checkpoint.py import --format nanogpt ckpt.pt model.safetensors
  tools/convert_checkpoint.py import --format hf model.safetensors zero_gpt2.safetensors  (or .bin/.pt)
  tools/convert_checkpoint.py self-test          # round trips on a tiny random model; exit 0 if all agree
The number of heads cannot be read from weights: export takes --n-head, or the Zero file's
metadata "n_head". Imported files carry metadata n_layer, n_head (when known), n_embd,
block_size, vocab_size, as strings.
"""
import argparse
import os
import re
import sys
import tempfile

try:
    import numpy as np
    from safetensors.numpy import load_file, save_file
    from safetensors import safe_open
except ImportError as e:  # exit code 77: CTest reports the self-test as skipped
    print(f"convert_checkpoint.py needs numpy and safetensors ({e}); pip install safetensors numpy")
    sys.exit(77)

CONV1D = re.compile(r"^transformer\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
LAYER = re.compile(r"^transformer\.h\.(\d+)\.")


def fail(msg):
    sys.exit(f"error: {msg}")


def torch_module():
    try:
        import torch
        return torch
    except ImportError:
        fail("reading or writing .pt/.bin files needs PyTorch (pip install torch); "
             "use .safetensors files to convert without it")


# ------------------------------------------------------------------ files

def load_tensors(path):
    """name -> numpy array, and the file's metadata (safetensors) or extra dict (.pt)."""
    if not os.path.isfile(path):
        fail(f"no such file: {path}")
    if path.endswith(".safetensors"):
        with safe_open(path, framework="numpy") as f:
            meta = f.metadata() or {}
        return load_file(path), meta
    torch = torch_module()
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        obj = torch.load(path, map_location="cpu")
    extra = {}
    if isinstance(obj, dict) and "model" in obj and isinstance(obj["model"], dict):
        extra = {k: v for k, v in obj.items() if k != "model"}
        obj = obj["model"]
    return {k: v.detach().cpu().numpy() for k, v in obj.items()}, extra


def save_tensors(path, tensors, metadata=None, wrap=None):
    """Writes .safetensors (no torch needed) or .pt; `wrap(state_dict)` builds the .pt object.

    Arrays that are the same Python object (the tied head) stay one storage in a .pt file."""
    if path.endswith(".safetensors"):
        unique = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
        save_file(unique, path, metadata=metadata)
        return
    torch = torch_module()
    made = {}
    state = {}
    for k, v in tensors.items():
        if id(v) not in made:
            made[id(v)] = torch.from_numpy(np.ascontiguousarray(v))
        state[k] = made[id(v)]
    torch.save(wrap(state) if wrap else state, path)


# ------------------------------------------------------------------ names and shapes

def config_of(t):
    """n_layer, n_embd, vocab_size, block_size of a Zero-named state dict."""
    if "transformer.wte.weight" not in t or "transformer.wpe.weight" not in t:
        fail("no transformer.wte.weight / transformer.wpe.weight: not a GPT checkpoint")
    layers = {int(m.group(1)) for k in t if (m := LAYER.match(k))}
    v, c = t["transformer.wte.weight"].shape
    return {"n_layer": len(layers), "n_embd": c, "vocab_size": v,
            "block_size": t["transformer.wpe.weight"].shape[0]}


def expected_shapes(cfg):
    c, shapes = cfg["n_embd"], {}
    shapes["transformer.wte.weight"] = (cfg["vocab_size"], c)
    shapes["transformer.wpe.weight"] = (cfg["block_size"], c)
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        for ln in ("ln_1", "ln_2"):
            shapes[p + ln + ".weight"] = shapes[p + ln + ".bias"] = (c,)
        shapes[p + "attn.c_attn.weight"], shapes[p + "attn.c_attn.bias"] = (3 * c, c), (3 * c,)
        shapes[p + "attn.c_proj.weight"], shapes[p + "attn.c_proj.bias"] = (c, c), (c,)
        shapes[p + "mlp.c_fc.weight"], shapes[p + "mlp.c_fc.bias"] = (4 * c, c), (4 * c,)
        shapes[p + "mlp.c_proj.weight"], shapes[p + "mlp.c_proj.bias"] = (c, 4 * c), (c,)
    shapes["transformer.ln_f.weight"] = shapes["transformer.ln_f.bias"] = (c,)
    return shapes


def check_zero_names(t, what):
    """Every expected tensor present with its shape, nothing else; returns the config."""
    cfg = config_of(t)
    want = expected_shapes(cfg)
    missing = sorted(set(want) - set(t))
    extra = sorted(set(t) - set(want))
    wrong = [f"{k}: {tuple(t[k].shape)}, expected {want[k]}" for k in want
             if k in t and tuple(t[k].shape) != want[k]]
    if missing or extra or wrong:
        fail(f"{what} does not match the GPT layout of n_layer {cfg['n_layer']}, n_embd "
             f"{cfg['n_embd']}:" + "".join(f"\n  missing {k}" for k in missing[:10]) +
             "".join(f"\n  unexpected {k}" for k in extra[:10]) +
             "".join(f"\n  shape of {w}" for w in wrong[:10]))
    return cfg


def to_zero_dtypes(t):
    out = {}
    for k, v in t.items():
        if v.dtype.kind == "f" and v.dtype != np.float32:
            print(f"note: {k} converted from {v.dtype} to float32")
            v = v.astype(np.float32)
        out[k] = v
    return out


def drop_tied_head(t, what):
    head = t.pop("lm_head.weight", None)
    if head is not None and not np.array_equal(head, t.get("transformer.wte.weight")):
        fail(f"{what}: lm_head.weight differs from transformer.wte.weight; Zero's head is tied "
             "to the embedding, so an untied head cannot be converted")


def add_missing_biases(t, cfg):
    """A nanoGPT bias=False model computes the same as one with zero biases."""
    added = 0
    for k, shape in expected_shapes(cfg).items():
        if k.endswith(".bias") and k not in t:
            t[k] = np.zeros(shape, dtype=np.float32)
            added += 1
    if added:
        print(f"note: added {added} zero biases (the checkpoint was made with bias=False)")


# ------------------------------------------------------------------ conversions

def import_checkpoint(fmt, src, dst):
    raw, extra = load_tensors(src)
    t = {}
    for k, v in raw.items():
        k = k.removeprefix("_orig_mod.")  # torch.compile wraps nanoGPT's model
        if re.search(r"\.attn\.(masked_)?bias$", k):
            continue  # causal-mask buffers, not parameters
        if fmt == "hf" and not k.startswith(("transformer.", "lm_head.")):
            k = "transformer." + k  # GPT2Model keys lack the prefix
        t[k] = v
    if fmt == "hf":
        t = {k: (v.T.copy() if CONV1D.match(k) else v) for k, v in t.items()}
    drop_tied_head(t, src)
    t = to_zero_dtypes(t)
    cfg = config_of(t)
    add_missing_biases(t, cfg)
    cfg = check_zero_names(t, src)
    meta = {k: str(v) for k, v in cfg.items()}
    args = extra.get("model_args") or {}
    if "n_head" in args:
        meta["n_head"] = str(args["n_head"])
    meta["converted_from"] = f"{fmt}:{os.path.basename(src)}"
    save_tensors(dst, t, meta)
    print(f"wrote {dst}: {len(t)} tensors, " + ", ".join(f"{k} {v}" for k, v in meta.items()))


def export_checkpoint(fmt, src, dst, n_head):
    t, meta = load_tensors(src)
    if not src.endswith(".safetensors"):
        fail(f"expected a Zero .safetensors file to export, got {src}")
    cfg = check_zero_names(t, src)
    n_head = n_head or (int(meta["n_head"]) if "n_head" in meta else None)
    out = dict(t)
    if fmt == "hf":
        out = {k: (v.T.copy() if CONV1D.match(k) else v) for k, v in out.items()}
    out["lm_head.weight"] = out["transformer.wte.weight"]  # the same array: tied
    wrap = None
    if fmt == "nanogpt" and not dst.endswith(".safetensors"):
        if not n_head:
            fail("nanoGPT's ckpt.pt needs model_args.n_head, which the weights do not determine: "
                 "pass --n-head")
        if cfg["n_embd"] % n_head:
            fail(f"n_embd {cfg['n_embd']} is not divisible by --n-head {n_head}")
        model_args = dict(cfg, n_head=n_head, bias=True, dropout=0.0)
        wrap = lambda state: {"model": state, "model_args": model_args, "iter_num": 0,
                              "best_val_loss": float("inf"), "config": {}}
    if dst.endswith(".safetensors"):
        out.pop("lm_head.weight")  # safetensors refuses shared tensors; loaders re-tie it
    save_tensors(dst, out, {"format": "pt"}, wrap)
    print(f"wrote {dst}: {len(out)} tensors ({fmt})")


# ------------------------------------------------------------------ self-test

def self_test():
    rng = np.random.default_rng(0)
    cfg = {"n_layer": 2, "n_embd": 8, "vocab_size": 11, "block_size": 16}
    zero = {k: rng.standard_normal(s).astype(np.float32) for k, s in expected_shapes(cfg).items()}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "zero.safetensors")
        save_file(zero, src, metadata={"n_head": "2"})
        cases = [("hf", "hf.safetensors")]
        try:
            import torch  # noqa: F401
            cases += [("hf", "hf.pt"), ("nanogpt", "ckpt.pt")]
        except ImportError:
            print("note: torch is not installed; only the .safetensors round trip is tested")
        for fmt, name in cases:
            mid = os.path.join(tmp, name)
            back = os.path.join(tmp, "back_" + name.replace(".", "_") + ".safetensors")
            export_checkpoint(fmt, src, mid, None)
            if fmt == "hf":  # the exported file has Hugging Face's layout
                exported, _ = load_tensors(mid)
                w = exported["transformer.h.0.attn.c_attn.weight"]
                if w.shape != (8, 24) or not np.array_equal(w, zero["transformer.h.0.attn.c_attn.weight"].T):
                    failures.append(f"{name}: c_attn.weight not transposed to Conv1D [in, out]")
            import_checkpoint(fmt, mid, back)
            got = load_file(back)
            if set(got) != set(zero) or any(not np.array_equal(got[k], zero[k]) for k in zero):
                failures.append(f"{name}: round trip changed the weights")
    for f in failures:
        print("FAILED:", f)
    print("self-test passed" if not failures else "self-test FAILED")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("export", "import"):
        p = sub.add_parser(name)
        p.add_argument("--format", choices=("nanogpt", "hf"), required=True)
        p.add_argument("src")
        p.add_argument("dst")
        if name == "export":
            p.add_argument("--n-head", type=int, default=None)
    sub.add_parser("self-test")
    args = parser.parse_args()
    if args.command == "self-test":
        return self_test()
    if args.command == "export":
        export_checkpoint(args.format, args.src, args.dst, args.n_head)
    else:
        import_checkpoint(args.format, args.src, args.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
