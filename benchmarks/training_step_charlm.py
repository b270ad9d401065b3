"""Training step time of the character-level transformer of
examples/training/char_transformer.fuse: `program.train` against the same model
hand-written in the same framework (torch with torch.optim.Adam, eager; jax with
optax.adam under one jax.jit), from the same start, on the same batch of
windows of real text (make_chars.py's corpus).  Both sides must reach the same
loss; prints ms per step and the ratio (goal: within 1.2x), measured in the same
run: `--rounds` alternating rounds of each side, the median per side.  The
steps' times come from the progress callback, as in training_step.py
(training's set-up and the first `warm` steps, jax's tracing among them, are left
out alike).

    python benchmarks/training_step_charlm.py [--small] [--steps N] [--rounds R]
    python benchmarks/training_step_charlm.py --clock cpu        # steadier when loaded
    python benchmarks/training_step_charlm.py --profile torch    # where Fuse's step goes
    python benchmarks/training_step_charlm.py --device cuda      # both sides on the GPU
"""
from __future__ import annotations

import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "examples" / "training"))
from _common import optax_adam_steps, profile  # noqa: E402
from _frameworks import parse_args  # noqa: E402
from make_chars import corpus, sized_program, windows  # noqa: E402

import fuse_lang  # noqa: E402

EXAMPLE = ROOT / "examples" / "training" / "char_transformer.fuse"
TARGET = 1.2
REAL = {"windows": 32, "window": 64, "width": 64, "heads": 4, "key": 16, "mlp": 256}
SMALL = {"windows": 4, "window": 16, "width": 16, "heads": 2, "key": 8, "mlp": 32}
RATE = 1e-3


FIRST_STEPS: list[float] = []  # each Fuse run's first step (capture or compile), seconds
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
now = time.perf_counter  # main() sets it from --clock


def fuse_train(folder: Path, backend: str, sizes: dict, steps: int, device: str = "cpu"
               ) -> tuple[list[float], float]:
    """`program.train` on the full batch: the time stamp after each step (taken
    by the progress callback), and the last step's loss."""
    text = sized_program(EXAMPLE.read_text(encoding="utf-8"), sizes["window"], sizes["width"],
                         sizes["heads"], sizes["key"], sizes["mlp"])
    program = fuse_lang.compile(text, backend=backend, device=device, base_dir=folder)
    stamps: list[float] = []
    result = program.train(steps=steps, learning_rate=RATE,
                           progress=lambda _: stamps.append(now()))
    FIRST_STEPS.append(result.first_step_seconds or 0.0)
    return stamps, result.losses[-1]


def starting_params(folder: Path, sizes: dict) -> dict[str, np.ndarray]:
    """The params `program.train` starts from (seed 0): each drawn as training draws
    it, by its shape and its start (its role's initialiser: a bias zeros)."""
    from fuse_lang.check.loss import loss_of
    from fuse_lang.check.param_roles import param_starts
    from fuse_lang.run.train.training import initial_param

    text = sized_program(EXAMPLE.read_text(encoding="utf-8"), sizes["window"], sizes["width"],
                         sizes["heads"], sizes["key"], sizes["mlp"])
    analysis = fuse_lang.analyze(text, base_dir=folder)
    names = loss_of(analysis).params
    starts = param_starts(analysis)
    return {n: initial_param(n, analysis.tensors[n].shape, 0, starts[n]) for n in names}


def torch_train(data: np.ndarray, params: dict[str, np.ndarray], sizes: dict,
                steps: int, device: str = "cpu") -> tuple[list[float], float]:
    import torch
    import torch.nn.functional as F

    chars = torch.tensor(data, dtype=torch.float32, device=device)
    x, t = chars[:, :-1], chars[:, 1:]
    window = x.shape[1]
    w = {n: torch.tensor(v, dtype=torch.float32, device=device, requires_grad=True)
         for n, v in params.items()}
    opt = torch.optim.Adam(list(w.values()), lr=RATE)
    masked = -1e9 * (1 - torch.tril(torch.ones(window, window, device=device)))
    scale = math.sqrt(sizes["key"])

    def norm(v):
        return F.layer_norm(v, v.shape[-1:], eps=1e-5)

    def block(h, i):
        a = norm(h)
        q = torch.einsum("hkd,npd->nhpk", w[f"WQ{i}"], a)
        k = torch.einsum("hkd,npd->nhpk", w[f"WK{i}"], a)
        v = torch.einsum("hkd,npd->nhpk", w[f"WV{i}"], a)
        s = torch.softmax(q @ k.transpose(-1, -2) / scale + masked, dim=-1)
        h = h + torch.einsum("dhk,nhpk->npd", w[f"WO{i}"], s @ v)
        f = F.gelu(norm(h) @ w[f"U{i}"].T + w[f"BU{i}"])
        return h + f @ w[f"D{i}"].T

    def loss_fn():
        h = x @ w["Emb"] + w["Pos"][:window]
        h = block(block(h, 1), 2)
        p = torch.softmax(norm(h) @ w["Out"].T + w["BOut"], dim=-1)
        return -(torch.log(p) * t).sum() / t.sum()

    stamps = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        opt.step()
        value = float(loss.detach())
        stamps.append(now())
    return stamps, value


def jax_train(data: np.ndarray, params: dict[str, np.ndarray], sizes: dict,
              steps: int, device: str = "cpu") -> tuple[list[float], float]:
    import jax
    import jax.numpy as jnp

    where = jax.devices("gpu" if device.startswith("cuda") else "cpu")[0]
    chars = jax.device_put(jnp.asarray(data, jnp.float32), where)
    x, t = chars[:, :-1], chars[:, 1:]
    window = x.shape[1]
    w = {n: jax.device_put(jnp.asarray(v, jnp.float32), where) for n, v in params.items()}
    masked = -1e9 * (1 - jnp.tril(jnp.ones((window, window))))
    scale = math.sqrt(sizes["key"])

    def norm(v):
        centred = v - v.mean(-1, keepdims=True)
        return centred / jnp.sqrt((centred * centred).mean(-1, keepdims=True) + 1e-5)

    def block(p, h, i):
        a = norm(h)
        q = jnp.einsum("hkd,npd->nhpk", p[f"WQ{i}"], a)
        k = jnp.einsum("hkd,npd->nhpk", p[f"WK{i}"], a)
        v = jnp.einsum("hkd,npd->nhpk", p[f"WV{i}"], a)
        s = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / scale + masked, axis=-1)
        h = h + jnp.einsum("dhk,nhpk->npd", p[f"WO{i}"], s @ v)
        f = jax.nn.gelu(norm(h) @ p[f"U{i}"].T + p[f"BU{i}"], approximate=False)
        return h + f @ p[f"D{i}"].T

    def loss_fn(p):
        h = x @ p["Emb"] + p["Pos"][:window]
        h = block(p, block(p, h, 1), 2)
        probs = jax.nn.softmax(norm(h) @ p["Out"].T + p["BOut"], axis=-1)
        return -(jnp.log(probs) * t).sum() / t.sum()

    stamps, value = optax_adam_steps(loss_fn, w, RATE, steps, now)
    return stamps, value


def per_step_ms(stamps: list[float], warm: int) -> float:
    return (stamps[-1] - stamps[warm - 1]) / (len(stamps) - warm) * 1e3


def compare(backend: str, hand: Callable, folder: Path, data: np.ndarray, sizes: dict,
            steps: int, rounds: int, device: str = "cpu") -> float:
    """Median ms per step of each side over alternating rounds; prints the ratio."""
    warm = max(2, steps // 5)
    params = starting_params(folder, sizes)
    ours, theirs = [], []
    for _ in range(rounds):
        stamps, our_loss = fuse_train(folder, backend, sizes, steps, device)
        ours.append(per_step_ms(stamps, warm))
        stamps, their_loss = hand(data, params, sizes, steps, device)
        theirs.append(per_step_ms(stamps, warm))
        assert abs(our_loss - their_loss) <= 2e-3 * max(1.0, abs(their_loss)), \
            (backend, our_loss, their_loss)
    fuse, written = statistics.median(ours), statistics.median(theirs)
    ratio = fuse / written
    print(f"char transformer n={sizes['windows']} window={sizes['window']} "
          f"d={sizes['width']} heads={sizes['heads']}, {backend} on {device}  fuse {fuse:.3f} ms/step  "
          f"hand-written {written:.3f} ms/step  ratio {ratio:.2f}  target <= {TARGET}  "
          f"{'OK' if ratio <= TARGET else 'MISSED'}  (loss {our_loss:.4f} = {their_loss:.4f})  "
          f"first step {min(FIRST_STEPS[-rounds:]):.2f} s")
    return ratio


def main() -> None:
    def configure(parser):
        parser.add_argument("--steps", type=int, default=None)
        parser.add_argument("--rounds", type=int, default=None,
                            help="alternating rounds per side (the median is reported)")

    args = parse_args(__doc__.split("\n\n")[0], repeats=5, configure=configure)
    global now
    now = CLOCK[args.clock]
    sizes = SMALL if args.small else REAL
    steps = args.steps or (12 if args.small else 60)
    rounds = args.rounds or (1 if args.small else 3)
    text = corpus(20_000 if args.small else 100_000)
    data = windows(text, sizes["window"])["chars_train"][:sizes["windows"]]
    hands = {"torch": torch_train, "jax": jax_train}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        np.save(folder / "chars_train.npy", data)
        if args.profile in hands:
            profile(lambda: fuse_train(folder, args.profile, sizes, steps), 1, args.sort)
            return
        print(f"training step, {args.threads or 'default'} thread(s), {args.clock} clock, "
              f"full batch, Adam, {steps} steps ({max(2, steps // 5)} warm-up), median of {rounds} rounds")
        for backend in ("torch", "jax"):
            if backend in args.pairs:
                compare(backend, hands[backend], folder, data.astype(np.float64), sizes,
                        steps, rounds, args.device)


if __name__ == "__main__":
    main()
