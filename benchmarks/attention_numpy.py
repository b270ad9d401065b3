"""An attention block on the NumPy engine against hand-written NumPy (float32).

P = 512 positions, model width D = 256 (query, key and value widths 256 too).
The inputs are given at run time (`prog.run(inputs=...)`); the baseline is the
same computation written with matmul / `np.einsum(optimize=True)`.  Prints the
median of several interleaved repeats and the ratio engine / baseline
(target <= 1.1).

    python benchmarks/attention_numpy.py [--repeats 15] [--profile]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import attention_program, median_times, profile, report, write_sources  # noqa: E402,E501

import fuse_lang  # noqa: E402

P, D = 512, 256

PROGRAM = attention_program(D)


def baseline(x, wq, wk, wv, wo):
    query = x @ wq.T
    key = x @ wk.T
    val = x @ wv.T
    scores = np.einsum("pk,qk->pq", query, key, optimize=True) / np.float32(np.sqrt(D))
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    attn = scores @ val
    return attn @ wo.T


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="cProfile the engine's runs")
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    inputs = {
        "X": rng.standard_normal((P, D), dtype=np.float32),
        "WQ": (rng.standard_normal((D, D), dtype=np.float32) * D ** -0.5),
        "WK": (rng.standard_normal((D, D), dtype=np.float32) * D ** -0.5),
        "WV": (rng.standard_normal((D, D), dtype=np.float32) * D ** -0.5),
        "WO": (rng.standard_normal((D, D), dtype=np.float32) * D ** -0.5),
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_sources(folder, {k.lower(): v for k, v in inputs.items()})
        prog = fuse_lang.compile(PROGRAM, backend="numpy", base_dir=folder,
                                 path=str(folder / "attention.fuse"))
        engine = lambda: prog.run(inputs=inputs)  # noqa: E731
        hand = lambda: baseline(*inputs.values())  # noqa: E731
        got = engine()["Out"]
        want = hand()
        assert got.dtype == np.float32 and want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
        if args.profile:
            profile(engine, args.repeats, args.sort)
            return
        times = median_times({"engine": engine, "baseline": hand}, args.repeats)
    print(f"attention block, P={P}, D={D}, float32, median of {args.repeats}")
    report("attention (run with inputs)", times["engine"], times["baseline"], 1.1)


if __name__ == "__main__":
    main()
