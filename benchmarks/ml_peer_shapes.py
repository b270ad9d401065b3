"""Shapes and programs the other ML benchmarks do not try: Fuse against the same
computation written by hand in NumPy, eager torch and jax.jit, in the same run.

Each case is a small Fuse program and the hand-written function in each
framework; the outputs are checked equal first, then the medians of the
interleaved calls are compared (`run_native` against the hand-written function
on the same framework tensors).  The ratio Fuse / hand-written is printed per
case and framework; no target is asserted (the other benchmarks hold targets):
this is a survey of where the per-call overhead or the planner's choices cost.

Cases: an 8x8 matmul (per-call overhead), a chain of four matrices of very
different sizes (contraction order), a broadcasting chain of elementwise
operations, softmax along the first axis, layer norm over a wide batch,
attention with many heads, a 1-d convolution through index arithmetic, a
recurrence over many steps, and an embedding lookup (a product with a one-hot
matrix, and `gather`).

    python benchmarks/ml_peer_shapes.py [--small] [--repeats 15]
        [--cases tiny_matmul,chain4,...] [--frameworks numpy,torch,jax|all]
        (all adds torch-compile and jax-eager)
"""
from __future__ import annotations

import argparse
import os
import sys

# one BLAS thread, as torch and XLA get below: on a small shared machine a
# multithreaded BLAS waits for descheduled threads (NumPy's 512x1000 @ 1000x64
# took 5-8 ms with two threads, 0.8 ms with one), which swamps what is measured
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times, write_sources  # noqa: E402

import fuse_lang  # noqa: E402

FRAMEWORKS = ("numpy", "torch", "jax")
# on request (--frameworks): Fuse compiled=True against torch.compile, and Fuse
# compiled=False against eager jax (no jit); torch.compile unrolls the RNN's
# 1,000 steps (minutes to compile), so that case is left out of torch-compile
MORE = ("torch-compile", "jax-eager")
SKIP = {("rnn_steps", "torch-compile")}


@dataclass
class Case:
    name: str
    program: str
    output: str
    inputs: dict[str, np.ndarray]
    hand: Callable[[Any, dict], Any]  # (namespace: np / torch / jnp, inputs) -> output
    rtol: float = 2e-3
    atol: float = 2e-4


def rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale))


def cases(small: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    s = 4 if small else 1
    out = []
    a = {"A": rand(rng, 8, 8), "B": rand(rng, 8, 8)}
    out.append(Case("tiny_matmul", 'A[i,j] = "a.npy"\nB[j,k] = "b.npy"\n'
                    "Y[i,k] = A[i,j] B[j,k]\nexport Y\n", "Y", a,
                    lambda ns, v: v["A"] @ v["B"]))
    n, m = 400 // s, 8
    c = {"A": rand(rng, n, m), "B": rand(rng, m, n), "C": rand(rng, n, m),
         "D": rand(rng, m, n)}
    out.append(Case("chain4", 'A[a,b] = "a.npy"\nB[b,c] = "b.npy"\nC[c,d] = "c.npy"\n'
                    'D[d,e] = "d.npy"\nY[a,e] = A[a,b] B[b,c] C[c,d] D[d,e]\nexport Y\n', "Y",
                    c, lambda ns, v: v["A"] @ ((v["B"] @ v["C"]) @ v["D"]), rtol=1e-2, atol=1e-2))
    b, h = 4096 // s, 256 // s
    e = {"X": rand(rng, b, h), "G": rand(rng, h), "B": rand(rng, h), "S": rand(rng, b)}
    out.append(Case("broadcast_chain",
                    'X[b,h] = "x.npy"\nG[h] = "g.npy"\nB[h] = "b.npy"\nS[b] = "s.npy"\n'
                    "Y[b,h] = relu(X[b,h] * G[h] + B[h]) * S[b] - X[b,h] * 0.5\nexport Y\n",
                    "Y", e, lambda ns, v: _relu(ns, v["X"] * v["G"] + v["B"]) * v["S"][:, None]
                    - v["X"] * 0.5))
    r = 1024 // s
    x = {"X": rand(rng, r, r)}
    out.append(Case("softmax_axis0", 'X[i,j] = "x.npy"\nY[i.,j] = softmax(X[i,j])\nexport Y\n',
                    "Y", x, lambda ns, v: _softmax0(ns, v["X"])))
    ln = {"X": rand(rng, 8192 // s, 64)}
    out.append(Case("layer_norm", 'X[b,d] = "x.npy"\nY[b,d.] = lnorm(X[b,d])\nexport Y\n',
                    "Y", ln, lambda ns, v: _lnorm(ns, v["X"])))
    hh, p, k = 64 // s, 64, 16
    at = {"Q": rand(rng, hh, p, k), "K": rand(rng, hh, p, k), "V": rand(rng, hh, p, k)}
    out.append(Case("many_heads",
                    'Q[h,p,k] = "q.npy"\nK[h,p,k] = "k.npy"\nV[h,p,k] = "v.npy"\n'
                    "S[h,p,p'.] = softmax(Q[h,p,k] K[h,p',k] / 4)\n"
                    "A[h,p,v] = S[h,p,p'] V[h,p',v]\nexport A\n", "A", at,
                    lambda ns, v: _heads(ns, v)))
    ch, length, o, w = 16, 4096 // s, 32, 5
    cv = {"I": rand(rng, ch, length), "W": rand(rng, o, ch, w, scale=0.2)}
    out.append(Case("conv1d", 'I[c,x] = "i.npy"\nW[o,c,dx] = "w.npy"\n'
                    "Y[o,x] = W[o,c,dx] I[c,x+dx]\nexport Y\n", "Y", cv,
                    lambda ns, v: _conv(ns, v)))
    steps, width = 1000 // s, 16
    rn = {"W": rand(rng, width, width, scale=0.25), "U": rand(rng, width, steps)}
    out.append(Case("rnn_steps", 'W[i,j] = "w.npy"\nU[i,t] = "u.npy"\n'
                    "X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])\nexport X\n", "X", rn,
                    lambda ns, v: _rnn(ns, v)))
    vocab, dim, pos = 1000 // s, 64, 512 // s
    ids = rng.integers(0, vocab, pos)
    onehot = np.zeros((pos, vocab), np.float32)
    onehot[np.arange(pos), ids] = 1
    em = {"T": onehot, "E": rand(rng, vocab, dim)}
    out.append(Case("embed_onehot", 'T[p,v] = "t.npy"\nE[v,d] = "e.npy"\n'
                    "Y[p,d] = T[p,v] E[v,d]\nexport Y\n", "Y", em,
                    lambda ns, v: v["E"][_argmax1(ns, v["T"])]))
    eg = {"Ids": ids.astype(np.float32), "E": em["E"]}
    out.append(Case("embed_gather", 'Ids[p] = "ids.npy"\nE[v,d] = "e.npy"\n'
                    "Y[p,d] = gather(E[v,d], Ids[p], axis=v)\nexport Y\n", "Y", eg,
                    lambda ns, v: v["E"][_as_ids(ns, v["Ids"])]))
    return out


def _relu(ns, x):
    return ns.maximum(x, 0) if ns is not _torch() else x.clamp_min(0)


def _softmax0(ns, x):
    if ns is _torch():
        return ns.softmax(x, dim=0)
    e = ns.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _lnorm(ns, x):
    if ns is _torch():
        return ns.nn.functional.layer_norm(x, (x.shape[-1],), eps=1e-5)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / ns.sqrt(var + 1e-5)


def _heads(ns, v):
    s = ns.einsum("hpk,hqk->hpq", v["Q"], v["K"]) / 4
    if ns is _torch():
        s = ns.softmax(s, dim=-1)
    else:
        e = ns.exp(s - s.max(axis=-1, keepdims=True))
        s = e / e.sum(axis=-1, keepdims=True)
    return ns.einsum("hpq,hqv->hpv", s, v["V"])


def _conv(ns, v):
    i, w = v["I"], v["W"]
    width = w.shape[2]
    if ns is _torch():
        padded = ns.nn.functional.pad(i, (0, width - 1))
        return ns.nn.functional.conv1d(padded[None], w)[0]
    length = i.shape[1]
    padded = ns.pad(i, ((0, 0), (0, width - 1)))
    cols = ns.stack([padded[:, d:d + length] for d in range(width)], axis=-1)  # c, x, dx
    return ns.einsum("ocd,cxd->ox", w, cols)


def _rnn(ns, v):
    w, u = v["W"], v["U"]
    if ns.__name__.startswith("jax"):
        import jax

        def body(x, ut):
            x = ns.tanh(w @ x + ut)
            return x, None
        return jax.lax.scan(body, ns.zeros(w.shape[0], w.dtype), u.T)[0]
    x = ns.zeros(w.shape[0], dtype=w.dtype) if ns is not _torch() else ns.zeros(w.shape[0])
    for t in range(u.shape[1]):
        x = ns.tanh(w @ x + u[:, t])
    return x


def _argmax1(ns, t):
    return t.argmax(1) if ns is _torch() else t.argmax(axis=1)


def _as_ids(ns, ids):
    return ids.long() if ns is _torch() else ids.astype(ns.int32)


def _torch():
    return sys.modules.get("torch")


# ------------------------------------------------------------------ frameworks
def framework(name: str):
    """(namespace, put, sync, to_numpy, backend, compiled, wrap) for one framework."""
    if name == "numpy":
        return np, (lambda a: a), (lambda x: x), np.asarray, "numpy", None, (lambda f: f)
    if name in ("torch", "torch-compile"):
        import torch
        compiled = name == "torch-compile"
        return (torch, torch.from_numpy, (lambda x: x), (lambda t: t.detach().numpy()),
                "torch", compiled, torch.compile if compiled else (lambda f: f))
    import jax
    import jax.numpy as jnp
    eager = name == "jax-eager"
    return (jnp, jnp.asarray, jax.block_until_ready, np.asarray, "jax", not eager,
            (lambda f: f) if eager else jax.jit)


def measure(case: Case, fw_name: str, repeats: int) -> tuple[float, float, int, int]:
    ns, put, sync, to_np, backend, compiled, wrap = framework(fw_name)
    if fw_name == "torch-compile":
        import torch._dynamo
        torch._dynamo.reset()  # each case's hand-written function compiled afresh
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_sources(folder, {k.lower(): a for k, a in case.inputs.items()})
        prog = fuse_lang.compile(case.program, backend=backend, base_dir=folder,
                                 path=str(folder / f"{case.name}.fuse"), compiled=compiled)
        native = {k: put(a) for k, a in case.inputs.items()}
        hand = wrap(lambda **v: case.hand(ns, v))
        want = to_np(sync(hand(**native)))
        got = to_np(sync(prog.run_native(native)[case.output]))
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.name} [{fw_name}]")
        before = prog.compilations
        times = median_times({"fuse": lambda: sync(prog.run_native(native)[case.output]),
                              "hand": lambda: sync(hand(**native))}, repeats)
        return times["fuse"], times["hand"], before, prog.compilations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes, few repeats (smoke)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cases", default="")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                        help=f"comma-separated from {', '.join(FRAMEWORKS + MORE)}, or all")
    args = parser.parse_args()
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                          "intra_op_parallelism_threads=1")
    import torch
    torch.set_num_threads(1)
    repeats = 3 if args.small else args.repeats
    wanted = {c for c in args.cases.split(",") if c}
    fws = list(FRAMEWORKS + MORE) if args.frameworks == "all" else \
        [f for f in args.frameworks.split(",") if f]
    unknown = [f for f in fws if f not in FRAMEWORKS + MORE]
    if unknown:
        parser.error(f"unknown framework(s) {', '.join(unknown)}")
    for case in cases(args.small):
        if wanted and case.name not in wanted:
            continue
        for fw in fws:
            if (case.name, fw) in SKIP:
                continue
            fuse, hand, before, after = measure(case, fw, repeats)
            print(f"{case.name:<16} {fw:<6} fuse {fuse * 1e3:9.3f} ms   hand-written "
                  f"{hand * 1e3:9.3f} ms   ratio {fuse / hand:7.2f}   "
                  f"compilations {before} -> {after}", flush=True)


if __name__ == "__main__":
    main()
