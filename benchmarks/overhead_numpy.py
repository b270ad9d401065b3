"""Per-equation overhead of the NumPy engine on tiny tensors.

A generated program of 200 equations over vectors of 4 elements (a chain of
joins with a bias and relu, elementwise updates, and softmaxes), compiled once
and run many times.  The arithmetic is negligible, so the time per run divided
by the number of equations is the engine's fixed cost per equation (target
< 20 microseconds).  The baseline is the same chain written by hand in NumPy,
measured in the same run; the ratio is printed beside it.

    python benchmarks/overhead_numpy.py [--equations 200] [--runs 200] [--repeats 7] [--profile]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import fuse_lang  # noqa: E402

N = 4


def program(equations: int) -> str:
    """Three kinds of equation in turn: a join (matrix-vector) with a bias and
    relu, an elementwise update, and a softmax."""
    lines = ['W[i,j] = "w.npy"', 'B[i] = "b.npy"', 'A0[i] = "a0.npy"']
    for k in range(1, equations + 1):
        prev = f"A{k - 1}"
        if k % 3 == 1:
            lines.append(f"A{k}[i] = relu(W[i,j] {prev}[j] + B[i])")
        elif k % 3 == 2:
            lines.append(f"A{k}[i] = {prev}[i] * 0.5 + B[i]")
        else:
            lines.append(f"A{k}[i.] = softmax({prev}[i])")
    lines.append(f"export A{equations}")
    return "\n".join(lines) + "\n"


def baseline(equations: int, w: np.ndarray, b: np.ndarray, a0: np.ndarray) -> np.ndarray:
    a = a0
    half = np.float32(0.5)
    for k in range(1, equations + 1):
        if k % 3 == 1:
            a = np.maximum(w @ a + b, 0)
        elif k % 3 == 2:
            a = a * half + b
        else:
            e = np.exp(a - a.max())
            a = e / e.sum()
    return a


def per_run(fn, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--equations", type=int, default=200)
    parser.add_argument("--runs", type=int, default=200, help="runs per timed repeat")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="cProfile the engine's runs")
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    data = {"w": rng.standard_normal((N, N), dtype=np.float32) * np.float32(0.5),
            "b": rng.standard_normal(N, dtype=np.float32) * np.float32(0.1),
            "a0": rng.standard_normal(N, dtype=np.float32)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, array in data.items():
            np.save(folder / f"{name}.npy", array)
        text = program(args.equations)
        prog = fuse_lang.compile(text, backend="numpy", base_dir=folder,
                                 path=str(folder / "overhead.fuse"))
        last = f"A{args.equations}"
        engine = lambda: prog.run()  # noqa: E731
        hand = lambda: baseline(args.equations, data["w"], data["b"], data["a0"])  # noqa: E731
        np.testing.assert_allclose(engine()[last], hand(), rtol=1e-4, atol=1e-6)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            per_run(engine, args.runs)
            profiler.disable()
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(30)
            return
        per_run(engine, 3)
        engine_times, hand_times = [], []
        for _ in range(args.repeats):
            engine_times.append(per_run(engine, args.runs))
            hand_times.append(per_run(hand, args.runs))
    t_engine = statistics.median(engine_times)
    t_hand = statistics.median(hand_times)
    per_eq = t_engine / args.equations * 1e6
    print(f"per-equation overhead: {args.equations} equations on {N}-element tensors, "
          f"{args.runs} runs x median of {args.repeats}, float32")
    print(f"engine   {t_engine * 1e3:8.3f} ms per run   {per_eq:7.2f} us per equation   "
          f"target < 20 us   {'OK' if per_eq < 20 else 'MISSED'}")
    print(f"baseline {t_hand * 1e3:8.3f} ms per run   "
          f"{t_hand / args.equations * 1e6:7.2f} us per equation   "
          f"ratio {t_engine / t_hand:6.1f}")


if __name__ == "__main__":
    main()
