"""The closure of a chain of N edges (N rounds to its fixpoint) at several N.

Each chain's closure `Path` is checked (every pair in order, N(N+1)/2 tuples);
prints the run's CPU time (steadier than wall time on a shared machine) at each
N and its ratio to the smallest N's, beside the ratio of the rounds (N), of the
tuples derived (N^2: what proportional cost grows like) and of N rounds that
each touch every known tuple (N^3).  `--sparse` forces Edge and Path sparse
(the plan keeps a chain dense below 2^20 cells); `--big` adds 4000 edges.

    python benchmarks/chain_closure.py [--edges 250 500 1000] [--sparse] [--big]
"""
from __future__ import annotations

import argparse
import time

import fuse_lang

RULES = "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\nexport Path\n"
SPARSE = {"Edge": "sparse", "Path": "sparse"}


def chain(edges: int) -> str:
    return "".join(f"Edge(N{k}, N{k + 1})\n" for k in range(edges)) + RULES


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edges", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--sparse", action="store_true", help="force Edge and Path sparse")
    parser.add_argument("--big", action="store_true", help="add a chain of 4000 edges")
    args = parser.parse_args()
    sizes = sorted(set(args.edges) | ({4000} if args.big else set()))
    base = None
    for n in sizes:
        program = fuse_lang.compile(chain(n), representation=SPARSE if args.sparse else None)
        started = time.process_time()
        closure = program.run()["Path"]
        seconds = time.process_time() - started
        assert closure.sum() == n * (n + 1) // 2, n
        base = base or (n, seconds)
        scale = n / base[0]
        print(f"chain of {n} edges: {seconds:.2f} s CPU  ratio {seconds / base[1]:.1f}x  "
              f"(rounds {scale:.0f}x, tuples {scale ** 2:.0f}x, every tuple each round "
              f"{scale ** 3:.0f}x)", flush=True)


if __name__ == "__main__":
    main()
