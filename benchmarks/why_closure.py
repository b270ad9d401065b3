"""Why on a large closure: the derivation time of tuples of the 200,000-node forward
graph's transitive closure (datalog_peer_workloads.py's `tc_forward`), as a ratio
against the run's own time.

The first why of a result re-evaluates the run's inputs on NumPy with every value
kept (docs/why.md); each why after it searches back from its tuple over the kept
relations.  Printed: the run's time, the first why's (re-evaluation included), and
the median and largest time of the whys after it (tuples drawn from the closure,
each asked once; then tuples that do not hold), each with its ratio to the run.

    python benchmarks/why_closure.py [--nodes 200000] [--edges 280000] [--tuples 50]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from datalog_peer_workloads import gen_forward_graph  # noqa: E402

import fuse_lang  # noqa: E402

PROGRAM = """\
Edge(x, y) = "edge.tsv"
Path(x, y) = Edge(x, y)
Path(x, z) = Path(x, y) Edge(y, z)
export Path
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=280_000)
    parser.add_argument("--tuples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        gen_forward_graph(Path(folder), args.nodes, args.edges)
        program = fuse_lang.compile(PROGRAM, base_dir=folder)
        started = time.perf_counter()
        result = program.execute(write_sinks=False)
        run_s = time.perf_counter() - started
        closure = result.outputs["Path"]
        coo = closure.tocoo() if hasattr(closure, "tocoo") else None
        rows, cols = (coo.row, coo.col) if coo is not None else np.nonzero(closure)
        print(f"closure: {args.nodes:,} nodes, {args.edges:,} edges, {len(rows):,} tuples; "
              f"run {run_s:.2f} s")
        symbols = program.analysis.domain_symbols
        axis = program.analysis.tensors["Path"].axes
        names = [symbols.get(a.domain) for a in axis]
        rng = np.random.default_rng(args.seed)
        picks = rng.choice(len(rows), size=min(args.tuples + 1, len(rows)), replace=False)

        def values(k: int) -> tuple:
            r, c = int(rows[k]), int(cols[k])
            return (names[0][r] if names[0] else r, names[1][c] if names[1] else c)

        started = time.perf_counter()
        first = result.why("Path", values(int(picks[0])))
        first_s = time.perf_counter() - started
        print(f"first why (re-evaluation included): {first_s:.2f} s = "
              f"{first_s / run_s:.2f}x the run (height {first.height})")
        times, heights = [], []
        for k in picks[1:]:
            started = time.perf_counter()
            tree = result.why("Path", values(int(k)))
            times.append(time.perf_counter() - started)
            heights.append(tree.height)
        print(f"each why after it ({len(times)} tuples, heights {min(heights)}-{max(heights)}): "
              f"median {1000 * statistics.median(times):.1f} ms = "
              f"{statistics.median(times) / run_s:.4f}x the run, largest "
              f"{1000 * max(times):.1f} ms = {max(times) / run_s:.4f}x")
        misses = []
        for k in picks[1:11]:  # a tuple that does not hold: its target reversed
            a, b = values(int(k))
            started = time.perf_counter()
            result.why("Path", (b, a))
            misses.append(time.perf_counter() - started)
        print(f"why not ({len(misses)} tuples): median {1000 * statistics.median(misses):.1f} "
              f"ms, largest {1000 * max(misses):.1f} ms")


if __name__ == "__main__":
    main()
