#!/usr/bin/env python3
"""Checks Zero's GPT against an independent PyTorch GPT: logits, loss and every gradient.

Two steps: Zero writes one forward/backward step of a small GPT (weights, batch, logits,
loss, gradients; see tools/dump_gpt_step.cpp), then this script loads the weights into a
plain PyTorch GPT written below, runs the same batch in FP32 with TF32 off (on CUDA when
available, else the CPU) and compares:

  build/default/tools/dump_gpt_step --out /tmp/step.safetensors      (--device cpu|cuda)
  python3 tools/torch_reference.py /tmp/step.safetensors

The PyTorch model is nanoGPT's architecture written from its definition, not Zero's code:
pre-LayerNorm blocks (eps 1e-5), learned positions, causal attention through
F.scaled_dot_product_attention, GeLU with the tanh approximation, the head tied to the
token embedding, Linear weights [out, in] with biases. Parameters load by name, strictly.

Tolerances: logits max|diff| / max|logit| and |loss diff| / |loss| below 1e-4; each
gradient's max|diff| / max|grad| below 1e-3. Prints a table and PASS or FAIL (exit 0 / 1).

--backend numpy runs a float64 NumPy forward instead (no torch needed) and checks only the
logits and the loss: the gradients need autograd. Exit code 77 (CTest: skipped) when the
chosen backend's modules are missing.

--table compares several files of the same model and batch (dump_gpt_step in each
precision mode, on each device) with a float64 PyTorch model, next to PyTorch itself in
FP32 (TF32 off) and in TF32, all on the same FP32 weights:

  python3 tools/torch_reference.py --table /tmp/char_cpu.safetensors /tmp/char_ieee.safetensors ...

Each row is one source: max|diff| / max|ref| of the logits and of the worst gradient
against float64, and both over PyTorch FP32's. Zero's default (ieee on CUDA, and the CPU)
must be within --within (2x) of PyTorch FP32 on the logits and the worst gradient, else
exit 1. tools/gpu_precision.sh runs the whole comparison for the char and GPT-2 shapes.
"""
import argparse
import math
import sys

LOGITS_TOL = 1e-4
LOSS_TOL = 1e-4
GRAD_TOL = 1e-3
SKIP = 77


def need(modules):
    """Imports `modules` or exits with SKIP, naming what is missing."""
    loaded = []
    for name in modules:
        try:
            loaded.append(__import__(name))
        except ImportError as e:
            print(f"SKIP: torch_reference.py needs {', '.join(modules)} ({e})")
            sys.exit(SKIP)
    return loaded


def read_step(path):
    """name -> numpy array, and the sizes from the file's metadata."""
    need(["numpy", "safetensors"])
    from safetensors import safe_open
    from safetensors.numpy import load_file
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata() or {}
    missing = [k for k in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd") if k not in meta]
    if missing:
        sys.exit(f"error: {path} lacks metadata {missing}: write it with tools/dump_gpt_step")
    cfg = {k: int(meta[k]) for k in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")}
    return load_file(path), cfg, meta.get("device", "?")


def split(tensors):
    """(parameters, gradients, ids, targets, logits, loss), parameters by nanoGPT name."""
    params = {k: v for k, v in tensors.items() if k.startswith("transformer.")}
    grads = {k[len("grad."):]: v for k, v in tensors.items() if k.startswith("grad.")}
    if set(grads) != set(params):
        sys.exit(f"error: gradients and parameters differ: {sorted(set(grads) ^ set(params))}")
    return (params, grads, tensors["batch.ids"], tensors["batch.targets"],
            tensors["out.logits"], tensors["out.loss"])


def rel_max(got, want):
    """max|got - want| / max|want| (max|diff| itself when want is all zeros)."""
    import numpy as np
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return math.inf
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    diff = float(np.max(np.abs(got - want))) if want.size else 0.0
    return diff / scale if scale > 0 else diff


# ------------------------------------------------------------------ PyTorch

def torch_model(torch, cfg, dropout=0.0):
    """A plain nanoGPT-shaped model whose state-dict names are Zero's parameter names.

    `dropout` is applied where nanoGPT applies it (after the embeddings, to the attention
    probabilities, after each c_proj) in training mode; tools/bench_train_side_by_side.py
    uses it, the reference check keeps 0."""
    nn, F = torch.nn, torch.nn.functional
    c, n_head = cfg["n_embd"], cfg["n_head"]

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(c, 3 * c)
            self.c_proj = nn.Linear(c, c)
            self.resid_dropout = nn.Dropout(dropout)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.c_attn(x).split(c, dim=2)
            q, k, v = (z.view(b, t, n_head, c // n_head).transpose(1, 2) for z in (q, k, v))
            p = dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, D)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(c, 4 * c)
            self.c_proj = nn.Linear(4 * c, c)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(c, eps=1e-5)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(c, eps=1e-5)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(cfg["vocab_size"], c),
                wpe=nn.Embedding(cfg["block_size"], c),
                drop=nn.Dropout(dropout),
                h=nn.ModuleList(Block() for _ in range(cfg["n_layer"])),
                ln_f=nn.LayerNorm(c, eps=1e-5)))

        def forward(self, ids):
            tr = self.transformer
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = tr.drop(tr.wte(ids) + tr.wpe(pos))
            for block in tr.h:
                x = block(x)
            return F.linear(tr.ln_f(x), tr.wte.weight)  # the tied head: no lm_head parameter

    return GPT()


def run_torch(params, ids, targets, cfg, dtype="float32", tf32=False, quiet=False):
    """logits, loss and name -> gradient from PyTorch, as numpy arrays, computed in `dtype`
    (the FP32 weights converted) with TF32 on or off."""
    (torch,) = need(["torch"])
    torch.backends.cuda.matmul.allow_tf32 = tf32  # off: FP32 products, like Zero's default
    torch.backends.cudnn.allow_tf32 = tf32
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch_model(torch, cfg).to(getattr(torch, dtype))
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    wrong = [f"{k}: file {tuple(v.shape)}, model {shapes[k]}" for k, v in params.items()
             if k in shapes and tuple(v.shape) != shapes[k]]
    if wrong:
        sys.exit("error: shapes differ:\n  " + "\n  ".join(wrong))
    # strict: every model parameter is in the file and every file parameter is used.
    model.load_state_dict({k: torch.from_numpy(v).to(getattr(torch, dtype)) for k, v in params.items()},
                          strict=True)
    model.to(device)
    ids_t = torch.from_numpy(ids).long().to(device)
    targets_t = torch.from_numpy(targets).long().to(device)
    logits = model(ids_t)  # (B, T, V)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets_t.reshape(-1))
    loss.backward()
    grads = {k: p.grad.detach().cpu().numpy() for k, p in model.named_parameters()}
    if not quiet:
        print(f"PyTorch {torch.__version__} on {device}, FP32, TF32 off")
    return logits.detach().cpu().numpy(), loss.item(), grads


# ------------------------------------------------------------------ NumPy (forward only)

def run_numpy(params, ids, targets, cfg):
    """logits and loss from a float64 NumPy forward of the same architecture."""
    (np,) = need(["numpy"])
    p = {k: v.astype(np.float64) for k, v in params.items()}
    c, h = cfg["n_embd"], cfg["n_head"]
    d = c // h

    def layer_norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * p[name + ".weight"] + p[name + ".bias"]

    def linear(x, name):  # weight [out, in]
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    b, t = ids.shape
    x = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][:t]  # (B, T, C)
    future = np.triu(np.ones((t, t), dtype=bool), k=1)  # position s > t is masked out
    for i in range(cfg["n_layer"]):
        pre = f"transformer.h.{i}."
        qkv = linear(layer_norm(x, pre + "ln_1"), pre + "attn.c_attn")  # (B, T, 3C)
        q, k, v = (z.reshape(b, t, h, d).transpose(0, 2, 1, 3) for z in np.split(qkv, 3, axis=2))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)  # (B, H, T, T)
        scores = np.where(future, -np.inf, scores)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        y = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, c)  # (B, T, C)
        x = x + linear(y, pre + "attn.c_proj")
        x = x + linear(gelu(linear(layer_norm(x, pre + "ln_2"), pre + "mlp.c_fc")), pre + "mlp.c_proj")
    logits = layer_norm(x, "transformer.ln_f") @ p["transformer.wte.weight"].T  # (B, T, V)
    flat = logits.reshape(-1, logits.shape[-1])
    shifted = flat - flat.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    loss = -log_probs[np.arange(flat.shape[0]), targets.reshape(-1)].mean()
    print(f"NumPy {np.__version__} forward in float64 (gradients are not checked by this backend)")
    return logits, float(loss), None


# ------------------------------------------------------------------ comparison

def errors(logits, grads, ref_logits, ref_grads):
    """(logits error, worst gradient error, its name) against the reference."""
    worst = max((rel_max(grads[k], ref_grads[k]), k) for k in ref_grads)
    return rel_max(logits, ref_logits), worst[0], worst[1]


def table(paths, within):
    """One row per source against float64; exit status 1 if Zero's default is not within
    `within` times PyTorch FP32's error on the logits and the worst gradient."""
    import numpy as np
    first, cfg, _ = read_step(paths[0])
    params, _, ids, targets, _, _ = split(first)
    del first
    ref_logits, _, ref_grads = run_torch(params, ids, targets, cfg, "float64", quiet=True)
    rows = []
    for label, tf32 in (("PyTorch FP32 (TF32 off)", False), ("PyTorch TF32", True)):
        logits, _, grads = run_torch(params, ids, targets, cfg, "float32", tf32, quiet=True)
        rows.append((label, *errors(logits, grads, ref_logits, ref_grads), None))
    for path in paths:
        tensors, other_cfg, device = read_step(path)
        p, g, other_ids, _, logits, _ = split(tensors)
        same = other_cfg == cfg and np.array_equal(other_ids, ids) and all(
            np.array_equal(p[k], params[k]) for k in params)
        if not same:
            sys.exit(f"error: {path} holds another model or batch than {paths[0]}")
        from safetensors import safe_open
        with safe_open(path, framework="numpy") as f:
            precision = (f.metadata() or {}).get("precision", "?")
        default = precision in ("ieee", "cpu")
        label = f"Zero {device} {precision}" + (" (default)" if default else "")
        rows.append((label, *errors(logits, g, ref_logits, ref_grads), default))
    base_logits, base_grad = rows[0][1], rows[0][2]
    shape = ", ".join(f"{k} {v}" for k, v in cfg.items())
    print(f"max|diff| / max|float64| on {shape}, B {ids.shape[0]}, T {ids.shape[1]}")
    print(f"{'source':<30} {'logits':>9} {'worst grad':>10} {'x FP32':>7} {'x FP32':>7}  worst tensor")
    failed = []
    for label, e_logits, e_grad, name, default in rows:
        r_logits, r_grad = e_logits / base_logits, e_grad / base_grad
        ok = not default or (r_logits <= within and r_grad <= within)
        if not ok:
            failed.append(label)
        print(f"{label:<30} {e_logits:9.1e} {e_grad:10.1e} {r_logits:7.2f} {r_grad:7.2f}  {name}"
              f"{'' if ok else '  <-- over ' + format(within, 'g') + 'x'}")
    print("PASS: Zero's default within " + format(within, "g") + "x of PyTorch FP32" if not failed
          else "FAIL: " + ", ".join(failed))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", nargs="+", help="the file(s) tools/dump_gpt_step wrote")
    parser.add_argument("--backend", choices=("torch", "numpy"), default="torch")
    parser.add_argument("--table", action="store_true",
                        help="compare every file and PyTorch FP32/TF32 with a float64 model")
    parser.add_argument("--within", type=float, default=2.0,
                        help="--table: how many times PyTorch FP32's error Zero's default may have")
    args = parser.parse_args()
    if args.table:
        need(["torch", "numpy", "safetensors"])
        return table(args.step, args.within)
    if len(args.step) != 1:
        parser.error("one step file, or --table with several")
    args.step = args.step[0]

    tensors, cfg, zero_device = read_step(args.step)
    params, zero_grads, ids, targets, zero_logits, zero_loss = split(tensors)
    print(f"{args.step}: Zero on {zero_device}, " + ", ".join(f"{k} {v}" for k, v in cfg.items()))
    run = run_torch if args.backend == "torch" else run_numpy
    logits, loss, grads = run(params, ids, targets, cfg)

    rows = [("logits", rel_max(zero_logits, logits), LOGITS_TOL),
            ("loss", abs(float(zero_loss) - loss) / abs(loss), LOSS_TOL)]
    if grads is not None:
        rows += [("grad." + k, rel_max(zero_grads[k], grads[k]), GRAD_TOL) for k in sorted(grads)]
    print(f"loss: Zero {float(zero_loss):.7f}, reference {loss:.7f}")
    print(f"{'tensor':<44} {'rel. error':>11} {'tolerance':>10}")
    for name, err, tol in rows:
        print(f"{name:<44} {err:11.3e} {tol:10.0e}{'' if err <= tol else '  <-- FAIL'}")
    if grads is not None:
        worst = max(rows[2:], key=lambda r: r[1])
        print(f"worst gradient: {worst[0]} ({worst[1]:.3e})")
    failed = [name for name, err, tol in rows if not err <= tol]  # NaN fails too
    print("PASS" if not failed else f"FAIL ({len(failed)} of {len(rows)} over tolerance)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
