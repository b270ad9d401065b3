"""An attention block and a transformer block: Fuse on JAX and Torch against the
same math written by hand in each framework (float32).

Attention: one head, P = 512 positions, model width D = 256 (query, key, value
and output widths 256 too), as benchmarks/attention_numpy.py.  Transformer:
the block of examples/transformer.fuse (causal attention, residual, layer norm,
a GELU MLP of width 4D with a residual, layer norm) at P = 512, D = 256.

Three pairs, each measured in the same run (see benchmarks/_frameworks.py):
Fuse on jax (jax.jit) vs hand-written jax.jit; Fuse on torch eager vs eager
torch; Fuse on torch with compiled=True vs hand-written torch.compile.  Prints
the medians and the ratios Fuse / hand-written (target <= 1.1), after checking
that the outputs agree, and that new input values of the same shapes add no
compilation.

    python benchmarks/attention_backends.py [--device cpu|cuda] [--repeats 31]
        [--workloads attention,transformer] [--pairs jax,torch,torch-compile]
        [--hand-mask select|arithmetic] [--threads N] [--clock wall|cpu]
        [--small] [--profile jax|torch|torch-compile]
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import attention_program  # noqa: E402
from _frameworks import Framework, Workload, parse_args, run_all  # noqa: E402

WEIGHTS_ATTENTION = ("WQ", "WK", "WV", "WO")


def transformer_program(p: int, d: int) -> str:
    """examples/transformer.fuse at P = p, D = d (key width d, MLP width 4d)."""
    return f"""
X[p,d]    = "x.npy"
WQ[dk,d]  = "wq.npy"
WK[dk,d]  = "wk.npy"
WV[dv,d]  = "wv.npy"
WO[d,dv]  = "wo.npy"
W1[h,d]   = "w1.npy"
B1[h]     = "b1.npy"
W2[d,h]   = "w2.npy"
Dk = const({d})

Mask[p,p'] = causal_mask({p})

Query[p,dk] = WQ[dk,d] X[p,d]
Key[p,dk]   = WK[dk,d] X[p,d]
Val[p,dv]   = WV[dv,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk) - 1e9 * (1 - Mask[p,p']))
Attn[p,dv]  = Comp[p,p'] Val[p',dv]

H[p,d.]  = lnorm(X[p,d] + WO[d,dv] Attn[p,dv])
F[p,h]   = gelu(W1[h,d] H[p,d] + B1[h])
Y[p,d.]  = lnorm(H[p,d] + W2[d,h] F[p,h])

export Y
"""


def make_inputs(p: int, d: int, transformer: bool):
    def inputs(seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        out = {"X": rng.standard_normal((p, d), dtype=np.float32)}
        for name in WEIGHTS_ATTENTION:
            out[name] = rng.standard_normal((d, d), dtype=np.float32) * np.float32(d ** -0.5)
        if transformer:
            h = 4 * d
            out["W1"] = rng.standard_normal((h, d), dtype=np.float32) * np.float32(d ** -0.5)
            out["B1"] = rng.standard_normal(h, dtype=np.float32) * np.float32(0.1)
            out["W2"] = rng.standard_normal((d, h), dtype=np.float32) * np.float32(h ** -0.5)
        return out
    return inputs


# ------------------------------------------------------------ hand-written jax
def jax_attention(d: int):
    import jax

    scale = np.float32(1 / math.sqrt(d))

    @jax.jit
    def attention(X, WQ, WK, WV, WO):
        q, k, v = X @ WQ.T, X @ WK.T, X @ WV.T
        comp = jax.nn.softmax((q @ k.T) * scale, axis=-1)
        return (comp @ v) @ WO.T

    return attention


def jax_transformer(p: int, d: int, mask: str):
    import jax
    import jax.numpy as jnp

    scale = np.float32(1 / math.sqrt(d))

    def masked(scores):
        causal = jnp.tril(jnp.ones((p, p), dtype=bool))
        if mask == "arithmetic":  # the program's own spelling (Fuse has no select)
            return scores - 1e9 * (1 - causal.astype(jnp.float32))
        return jnp.where(causal, scores, -1e9)

    def layer_norm(x):
        return jax.nn.standardize(x, axis=-1, epsilon=1e-5)

    @jax.jit
    def block(X, WQ, WK, WV, WO, W1, B1, W2):
        q, k, v = X @ WQ.T, X @ WK.T, X @ WV.T
        comp = jax.nn.softmax(masked((q @ k.T) * scale), axis=-1)
        h = layer_norm(X + (comp @ v) @ WO.T)
        f = jax.nn.gelu(h @ W1.T + B1, approximate=False)
        return layer_norm(h + f @ W2.T)

    return block


# ---------------------------------------------------------- hand-written torch
def torch_attention(d: int, fw: Framework):
    import torch

    scale = 1 / math.sqrt(d)

    def attention(X, WQ, WK, WV, WO):
        q, k, v = X @ WQ.T, X @ WK.T, X @ WV.T
        comp = torch.softmax((q @ k.T) * scale, dim=-1)
        return (comp @ v) @ WO.T

    return torch.compile(attention) if fw.compiled else attention


def torch_transformer(p: int, d: int, fw: Framework, mask: str):
    import torch
    import torch.nn.functional as F

    scale = 1 / math.sqrt(d)
    causal = torch.ones((p, p), dtype=torch.bool, device=fw.device).tril()  # a buffer

    def masked(scores):
        if mask == "arithmetic":  # the program's own spelling (Fuse has no select)
            return scores - 1e9 * (1 - causal.to(scores.dtype))
        return scores.masked_fill(~causal, -1e9)

    def block(X, WQ, WK, WV, WO, W1, B1, W2):
        q, k, v = X @ WQ.T, X @ WK.T, X @ WV.T
        comp = torch.softmax(masked((q @ k.T) * scale), dim=-1)
        h = F.layer_norm(X + (comp @ v) @ WO.T, (d,), eps=1e-5)
        f = F.gelu(h @ W1.T + B1)
        return F.layer_norm(h + f @ W2.T, (d,), eps=1e-5)

    return torch.compile(block) if fw.compiled else block


def workloads(p: int, d: int, which: list[str], mask: str = "select") -> list[Workload]:
    out = []
    if "attention" in which:
        out.append(Workload(
            "attention", attention_program(d), "Out", make_inputs(p, d, False),
            {"jax": lambda fw: jax_attention(d),
             "torch": lambda fw: torch_attention(d, fw),
             "torch-compile": lambda fw: torch_attention(d, fw)}))
    if "transformer" in which:
        out.append(Workload(
            "transformer", transformer_program(p, d), "Y", make_inputs(p, d, True),
            {"jax": lambda fw: jax_transformer(p, d, mask),
             "torch": lambda fw: torch_transformer(p, d, fw, mask),
             "torch-compile": lambda fw: torch_transformer(p, d, fw, mask)}))
    return out


def main() -> None:
    def options(parser):
        parser.add_argument("--workloads", default="attention,transformer")
        parser.add_argument("--hand-mask", choices=("select", "arithmetic"), default="select",
                            help="how the hand-written transformer masks its scores: "
                                 "select (jnp.where / masked_fill, as users write it; the "
                                 "default) or arithmetic (- 1e9 * (1 - mask), the Fuse "
                                 "program's own spelling)")

    args = parse_args(__doc__.splitlines()[0], repeats=31, configure=options)
    p, d = (16, 8) if args.small else (512, 256)
    which = [w.strip() for w in args.workloads.split(",")]
    mask = "" if args.hand_mask == "select" else "; hand-written mask: arithmetic"
    run_all(f"attention and transformer blocks, P={p}, D={d}{mask}",
            workloads(p, d, which, args.hand_mask), args)


if __name__ == "__main__":
    main()
