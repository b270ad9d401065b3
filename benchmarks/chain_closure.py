"""The closure of a chain of N edges (N rounds to its fixpoint) at several N.

Each chain's closure `Path` is checked (every pair in order, N(N+1)/2 tuples);
prints the run's CPU time (steadier than wall time on a shared machine) at each N and its ratio to the smallest N's, beside the
ratio of the rounds (N) and of the dense work (N rounds of an (N+1)^2 x (N+1)
product: N^4).  Proportional cost would grow like the tuples derived (N^2).

    python benchmarks/chain_closure.py [--edges 250 500 1000]
"""
from __future__ import annotations

import argparse
import time

import fuse_lang

RULES = "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\nexport Path\n"


def chain(edges: int) -> str:
    return "".join(f"Edge(N{k}, N{k + 1})\n" for k in range(edges)) + RULES


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edges", type=int, nargs="+", default=[250, 500, 1000])
    args = parser.parse_args()
    base = None
    for n in sorted(args.edges):
        program = fuse_lang.compile(chain(n))
        started = time.process_time()
        closure = program.run()["Path"]
        seconds = time.process_time() - started
        assert closure.sum() == n * (n + 1) // 2, n
        base = base or (n, seconds)
        scale = n / base[0]
        print(f"chain of {n} edges: {seconds:.2f} s CPU  ratio {seconds / base[1]:.1f}x  "
              f"(rounds {scale:.0f}x, tuples {scale ** 2:.0f}x, dense work {scale ** 4:.0f}x)")


if __name__ == "__main__":
    main()
