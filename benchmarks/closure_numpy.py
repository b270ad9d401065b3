"""Transitive closure on the NumPy engine against a hand-written semi-naive loop.

A random sparse directed graph on N = 1000 nodes (Edge given at run time as a
Boolean input); the program is the two Datalog rules of reachability, run by
the engine's semi-naive forward chaining.  The baseline is the same semi-naive
loop written by hand with float32 matrix products.  The closure is checked
against the baseline and against breadth-first search (scipy).  Prints the
median of several interleaved repeats and the ratio (target <= 1.5).

    python benchmarks/closure_numpy.py [--repeats 7] [--nodes 1000] [--profile]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times, profile, report, write_sources  # noqa: E402

import fuse_lang  # noqa: E402

PROGRAM = """
Edge(x,y) = "edge.npy"
Path(x,y) = Edge(x,y)
Path(x,z) = Path(x,y) Edge(y,z)
export Path
"""


def random_graph(n: int, degree: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(int(n * degree), 2))
    out = np.zeros((n, n), dtype=np.float32)
    out[edges[:, 0], edges[:, 1]] = 1
    return out


def baseline(edge: np.ndarray) -> np.ndarray:
    """Semi-naive: join only the paths found in the last round with Edge."""
    reach = edge.copy()
    delta = edge
    while True:
        found = (delta @ edge) > 0
        new = found & (reach == 0)
        if not new.any():
            return reach
        delta = new.astype(np.float32)
        reach += delta


def bfs_closure(edge: np.ndarray) -> np.ndarray:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    graph = csr_matrix(edge)
    n = edge.shape[0]
    out = np.zeros((n, n), dtype=np.float32)
    for source in range(n):
        order = breadth_first_order(graph, source, return_predecessors=False)
        out[source, order[1:]] = 1
    # a node reaches itself only through a cycle: check its predecessors
    incoming = [np.nonzero(edge[:, v])[0] for v in range(n)]
    for v in range(n):
        if any(out[v, u] or u == v for u in incoming[v]):
            out[v, v] = 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--degree", type=float, default=1.5, help="mean out-degree")
    parser.add_argument("--profile", action="store_true", help="cProfile the engine's runs")
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    edge = random_graph(args.nodes, args.degree)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_sources(folder, {"edge": edge})
        prog = fuse_lang.compile(PROGRAM, backend="numpy", base_dir=folder,
                                 path=str(folder / "closure.fuse"))
        engine = lambda: prog.run(inputs={"Edge": edge})  # noqa: E731
        hand = lambda: baseline(edge)  # noqa: E731
        got = engine()["Path"]
        want = hand()
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(want, bfs_closure(edge))
        rounds = 0
        reach, delta = edge.copy(), edge
        while delta.any():
            rounds += 1
            delta = (((delta @ edge) > 0) & (reach == 0)).astype(np.float32)
            reach += delta
        if args.profile:
            profile(engine, args.repeats, args.sort)
            return
        times = median_times({"engine": engine, "baseline": hand}, args.repeats, warmup=1)
    print(f"transitive closure, N={args.nodes}, {int(edge.sum())} edges, "
          f"{int(want.sum())} pairs in the closure, {rounds} semi-naive rounds, float32, "
          f"median of {args.repeats}; closure checked against the baseline and BFS")
    report("closure (semi-naive, Edge input)", times["engine"], times["baseline"], 1.5)


if __name__ == "__main__":
    main()
