"""Execution controls (issue 13), NumPy, each against its exact/unblocked run in
the same process:

- Monte Carlo projection: Y[i] = A[i,j] B[j] over --values values of j, at 1%
  samples (seeded): the time against the exact contraction, the standard error
  the run reports and the error it made (|estimate - exact|, relative to the
  exact value's size); then Y[i] = A[i,j] B[j,k] C[k], each value of j a join
  over 16 values of k, the same way.
- Blocked contraction: M[i] max= A[i,j] B[j,k] (the join of --side^3 elements
  is an intermediate before the max): the peak memory NumPy allocates
  (tracemalloc) and the time, with block_size 100,000 against unblocked.

    python benchmarks/execution_controls.py [--values 1000000] [--side 200]
    python benchmarks/execution_controls.py --small   # what the smoke test runs
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times, peak_bytes  # noqa: E402

from fuse_lang import ExecutionConfig, compile  # noqa: E402

ROWS = 4


# Monte Carlo's two cases: the summed index's values each a product of two numbers
# (a dot product: the exact run streams the arrays once, and a random gather of 1%
# of them costs about as much), and each a join over WIDTH more values (the exact
# run multiplies them all; the sampled one 1% of the rows)
WIDTH = 16
CASES = {
    "dot": ("param A[i,j]\nparam B[j]\naxis i = {rows}, j = {values}\n"
            "Y[i] = A[i,j] B[j]\nexport Y\n",
            lambda rng, values: {"B": rng.uniform(size=values)}),
    "join": ("param A[i,j]\nparam B[j,k]\nparam C[k]\naxis i = {rows}, j = {values}, "
             "k = {width}\nY[i] = A[i,j] B[j,k] C[k]\nexport Y\n",
             lambda rng, values: {"B": rng.uniform(size=(values, WIDTH)),
                                  "C": rng.uniform(size=WIDTH)}),
}


def monte_carlo(values: int, repeats: int, case: str = "dot") -> None:
    template, more = CASES[case]
    text = template.format(rows=ROWS, values=values, width=WIDTH)
    rng = np.random.default_rng(0)
    inputs = {"A": rng.normal(1.0, 1.0, size=(ROWS, values)).astype(np.float32),
              **{k: v.astype(np.float32) for k, v in more(rng, values).items()}}
    samples = values // 100
    exact = compile(text)
    sampled = compile(text, config=ExecutionConfig(projection="monte_carlo", samples=samples,
                                                   seed=1))
    times = median_times({"exact": lambda: exact.run(inputs),
                          "monte carlo": lambda: sampled.run(inputs)}, repeats)
    truth = exact.run(inputs)["Y"].astype(np.float64)
    result = sampled.execute(inputs)
    error = result.estimates["Y"]["standard_error"]
    made = np.abs(result.outputs["Y"] - truth)
    what = "" if case == "dot" else f" (each a join over {WIDTH} more)"
    print(f"monte carlo, {values} values{what}, {samples} samples (1%): exact "
          f"{times['exact'] * 1e3:.2f} ms  monte carlo {times['monte carlo'] * 1e3:.2f} ms  "
          f"ratio {times['monte carlo'] / times['exact']:.3f}")
    print(f"monte carlo standard error (relative to |exact|): "
          f"{np.max(error / np.abs(truth)):.4f}  error made: {np.max(made / np.abs(truth)):.4f}"
          f"  within 4 standard errors: {bool((made <= 4 * error).all())}")


def blocked(side: int, repeats: int) -> None:
    text = f"axis i = {side}, j = {side}, k = {side}\nparam A[i,j], B[j,k]\n" \
           f"M[i] max= A[i,j] B[j,k]\nexport M\n"
    rng = np.random.default_rng(2)
    inputs = {"A": rng.normal(size=(side, side)).astype(np.float32),
              "B": rng.normal(size=(side, side)).astype(np.float32)}
    whole = compile(text)
    blocks = compile(text, config=ExecutionConfig(block_size=100_000))
    np.testing.assert_allclose(blocks.run(inputs)["M"], whole.run(inputs)["M"], rtol=1e-6)
    peaks = {"unblocked": peak_bytes(lambda: whole.run(inputs)),
             "blocked": peak_bytes(lambda: blocks.run(inputs))}
    times = median_times({"unblocked": lambda: whole.run(inputs),
                          "blocked": lambda: blocks.run(inputs)}, repeats)
    print(f"blocked, join of {side}^3 elements, block_size 100000: peak memory unblocked "
          f"{peaks['unblocked'] / 1e6:.1f} MB  blocked {peaks['blocked'] / 1e6:.2f} MB  "
          f"ratio {peaks['blocked'] / peaks['unblocked']:.3f}")
    print(f"blocked time: unblocked {times['unblocked'] * 1e3:.2f} ms  blocked "
          f"{times['blocked'] * 1e3:.2f} ms  ratio {times['blocked'] / times['unblocked']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=1_000_000)
    parser.add_argument("--side", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    if args.small:
        args.values, args.side, args.repeats = 20_000, 60, 1
    for case in CASES:
        monte_carlo(args.values, args.repeats, case)
    blocked(args.side, args.repeats)


if __name__ == "__main__":
    main()
