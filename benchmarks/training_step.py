"""Training step time: `program.train` against the same model hand-written in the
same framework (a two-layer perceptron with a softmax cross-entropy, Adam,
full batch), on torch and on jax.  Prints ms per step and the ratio, measured in
the same run; the steps' times come from the progress callback (training's
set-up, done once, is left out as it is for the hand-written loop).

A step's time is the median of the steps after the warm-up ones, on both sides:
on a shared machine the mean is dominated by the moments another process has
the core.  Both sides run `--rounds` times, alternating (Fuse, hand-written,
Fuse, ...), each side's best round counting, so that a load that comes and goes
does not fall on one side only.

    python benchmarks/training_step.py [--small] [--steps N] [--rounds R] [--device cuda]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import optax_adam_steps  # noqa: E402

import fuse_lang  # noqa: E402

PROGRAM = """X[n,j] = "x.npy"
T[n,i] = "t.npy"
param W1[h,j], W2[i,h]
axis h = {hidden}
H[n,h] = relu(W1[h,j] X[n,j])
P[n,i.] = softmax(W2[i,h] H[n,h])
L = -(log(P[n,i]) T[n,i]) / {n}
train L
"""


def fuse_ms(folder: Path, backend: str, sizes: dict, steps: int, warm: int,
            device: str = "cpu") -> tuple[float, float]:
    program = fuse_lang.compile(PROGRAM.format(**sizes), backend=backend, device=device,
                                base_dir=folder)
    seen = []
    result = program.train(steps=steps, learning_rate=1e-3, progress=seen.append)
    stamps = [p.elapsed_s for p in seen]
    return _per_step_ms(stamps, warm), result.losses[-1]


def _per_step_ms(stamps: list[float], warm: int) -> float:
    """The median time between the stamps after the first `warm` steps, in ms."""
    return float(np.median(np.diff(stamps[warm - 1:]))) * 1e3


def torch_ms(x, t, w1, w2, steps: int, warm: int, device: str = "cpu") -> tuple[float, float]:
    import torch

    X = torch.tensor(x, dtype=torch.float32, device=device)
    T = torch.tensor(t, dtype=torch.float32, device=device)
    W1 = torch.tensor(w1, dtype=torch.float32, device=device, requires_grad=True)
    W2 = torch.tensor(w2, dtype=torch.float32, device=device, requires_grad=True)
    opt = torch.optim.Adam([W1, W2], lr=1e-3)
    stamps = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        P = torch.softmax(torch.relu(X @ W1.T) @ W2.T, dim=1)
        loss = -(torch.log(P) * T).sum() / X.shape[0]
        loss.backward()
        opt.step()
        value = float(loss.detach())
        stamps.append(time.perf_counter())
    return _per_step_ms(stamps, warm), value


def jax_ms(x, t, w1, w2, steps: int, warm: int, device: str = "cpu") -> tuple[float, float]:
    import jax
    import jax.numpy as jnp

    where = jax.devices("gpu" if device.startswith("cuda") else "cpu")[0]
    X, T = (jax.device_put(jnp.asarray(v, jnp.float32), where) for v in (x, t))
    params = {n: jax.device_put(jnp.asarray(v, jnp.float32), where)
              for n, v in (("W1", w1), ("W2", w2))}

    def loss_fn(p):
        P = jax.nn.softmax(jax.nn.relu(X @ p["W1"].T) @ p["W2"].T, axis=1)
        return -(jnp.log(P) * T).sum() / X.shape[0]

    stamps, value = optax_adam_steps(loss_fn, params, 1e-3, steps, time.perf_counter)
    return _per_step_ms(stamps, warm), value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true", help="tiny sizes (the smoke test)")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None,
                        help="alternating rounds per side, the best counting (default 3)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda: both sides")
    args = parser.parse_args()
    sizes = {"n": 64, "hidden": 8} if args.small else {"n": 512, "hidden": 64}
    steps = args.steps or (12 if args.small else 200)
    warm = max(2, steps // 5)
    rounds = args.rounds or (1 if args.small else 3)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(sizes["n"], 64))
    t = np.eye(10)[rng.integers(0, 10, size=sizes["n"])]
    from fuse_lang.run.train.training import initial_param

    w1 = initial_param("W1", (sizes["hidden"], 64), 0)
    w2 = initial_param("W2", (10, sizes["hidden"]), 0)
    with tempfile.TemporaryDirectory() as folder:
        np.save(Path(folder) / "x.npy", x)
        np.save(Path(folder) / "t.npy", t)
        for backend, hand in (("torch", torch_ms), ("jax", jax_ms)):
            ours = theirs = float("inf")
            for _ in range(rounds):
                ms, our_loss = fuse_ms(Path(folder), backend, sizes, steps, warm, args.device)
                ours = min(ours, ms)
                ms, their_loss = hand(x, t, w1, w2, steps, warm, args.device)
                theirs = min(theirs, ms)
            assert abs(our_loss - their_loss) <= 1e-3 * max(1.0, abs(their_loss)), \
                (backend, our_loss, their_loss)
            print(f"mlp n={sizes['n']} h={sizes['hidden']}, {backend} on {args.device}  fuse {ours:.3f} ms/step"
                  f"  hand-written {theirs:.3f} ms/step  ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
