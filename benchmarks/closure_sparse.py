"""Transitive closure over a random sparse DAG: Fuse's sparse relations against a
hand-written scipy.sparse semi-naive loop, in one run; and a join of a dense
embedding with a sparse relation against the same computation done dense.

The DAG: N nodes in blocks of BLOCK; each edge joins two nodes of one block,
from the lower to the higher (so the closure grows with the facts, as a
real-world hierarchy's does, not with N^2).  Edge is a `.tsv` relation file;
the plan keeps Edge and Reach sparse from the file's line count.  Timed:

- `run(Edge input)`: `run(inputs={"Edge": csr})` against the hand-written loop on
  the same csr matrix (the closure itself);
- `run(Edge file)`: `run()` reading edge.tsv against np.loadtxt + the loop;
- peak memory of one run of each (tracemalloc: NumPy's and scipy's arrays).

    python benchmarks/closure_sparse.py [--repeats 5] [--big] [--small]
    python benchmarks/closure_sparse.py --backend torch|jax [--n 5000 100000] [--edges 1.4]

--big adds N=1,000,000 with 2,000,000 edges (minutes, several GB); --small runs
tiny sizes with the representation forced sparse (the smoke test).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times, peak_bytes, report  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang.plan.representation import representations  # noqa: E402

PROGRAM = """
Edge(x,y) = "edge.tsv"
Reach(x,y) = Edge(x,y)
Reach(x,z) = Reach(x,y) Edge(y,z)
export Reach
"""

EMBEDDING = """
R(x,y) = "edge.tsv"
E[x,d] = "emb.npy"
Y[y,d] = R(x,y) E[x,d]
export Y
"""

BLOCK = 20


def random_dag(n: int, m: int, seed: int = 0) -> sp.csr_array:
    """About m distinct edges u -> v (u < v), both ends in one block of BLOCK nodes."""
    rng = np.random.default_rng(seed)
    draws = int(m * 1.3)  # some repeat or loop: draw more, keep the first m distinct
    blocks = rng.integers(0, max(n // BLOCK, 1), size=draws)
    u, v = rng.integers(0, BLOCK, size=draws), rng.integers(0, BLOCK, size=draws)
    keep = u != v
    pairs = np.stack([np.minimum(u, v)[keep] + blocks[keep] * BLOCK,
                      np.maximum(u, v)[keep] + blocks[keep] * BLOCK], axis=1)
    _, first = np.unique(pairs, axis=0, return_index=True)
    low, high = pairs[np.sort(first)[:m]].T
    edge = sp.csr_array((np.ones(low.size, np.float32), (low, high)), shape=(n, n))
    edge.sum_duplicates()
    edge.data[:] = 1
    return edge


def with_last_node(edge: sp.csr_array) -> sp.csr_array:
    """Edge and the pair (n-1, n-1): the tuple that gives the file its extent n."""
    n = edge.shape[0]
    last = sp.csr_array((np.ones(1, np.float32), ([n - 1], [n - 1])), shape=edge.shape)
    out = sp.csr_array(edge + last)
    out.data[:] = 1
    return out


def write_tsv(path: Path, edge: sp.csr_array, n: int) -> None:
    coo = edge.tocoo()
    rows = np.stack([coo.row, coo.col], axis=1)
    rows = np.concatenate([rows, [[n - 1, n - 1]]])  # gives the file's extent n
    np.savetxt(path, rows, fmt="%d", delimiter="\t")


def baseline(edge: sp.csr_array) -> sp.csr_array:
    """Semi-naive by hand: join only the pairs new in the last round with Edge."""
    reach = edge.copy()
    delta = edge
    while True:
        found = delta @ edge
        found.data[:] = 1
        new = found - found.multiply(reach)
        new.eliminate_zeros()
        if new.nnz == 0:
            return reach
        reach = reach + new
        delta = new


def from_file(path: Path, n: int) -> sp.csr_array:
    rows = np.loadtxt(path, dtype=np.int64, delimiter="\t", ndmin=2)
    edge = sp.csr_array((np.ones(len(rows), np.float32), (rows[:, 0], rows[:, 1])),
                        shape=(n, n))
    edge.sum_duplicates()
    edge.data[:] = 1
    return baseline(edge)


def closure(n: int, m: int, repeats: int, forced: bool) -> None:
    edge = random_dag(n, m)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        edge_with_self = with_last_node(edge)  # the file's extra tuple, in both contenders
        write_tsv(folder / "edge.tsv", edge, n)
        representation = {"Edge": "sparse", "Reach": "sparse"} if forced else None
        start = time.perf_counter()
        prog = fuse_lang.compile(PROGRAM, base_dir=folder, path=str(folder / "c.fuse"),
                                 representation=representation)
        compile_s = time.perf_counter() - start
        plan = representations(prog.analysis, representation)
        engine = lambda: prog.run(inputs={"Edge": edge_with_self})  # noqa: E731
        hand = lambda: baseline(edge_with_self)  # noqa: E731
        got, want = engine()["Reach"], hand()
        assert sp.issparse(got), type(got)
        assert (got != want).nnz == 0, "the closure differs from the hand-written one"
        print(f"closure, N={n:,}, {edge_with_self.nnz:,} edges, {want.nnz:,} pairs in the "
              f"closure; plan: Edge {plan['Edge'].text}; Reach {plan['Reach'].text}; "
              f"compile (check reads the file) {compile_s * 1e3:.0f} ms")
        times = median_times({"engine": engine, "baseline": hand}, repeats, warmup=1, clock="cpu")
        report(f"closure N={n:,} run(Edge input)", times["engine"], times["baseline"], 2.0)
        from_disk = median_times({"engine": lambda: prog.run(),
                                  "baseline": lambda: from_file(folder / "edge.tsv", n)},
                                 repeats, warmup=1, clock="cpu")
        report(f"closure N={n:,} run(Edge file)", from_disk["engine"], from_disk["baseline"],
               2.0)
        fuse_peak, hand_peak = peak_bytes(engine), peak_bytes(hand)
        facts = edge_with_self.nnz * 12 + (n + 1) * 4
        print(f"closure N={n:,} peak memory: engine {fuse_peak / 1e6:.1f} MB, hand-written "
              f"{hand_peak / 1e6:.1f} MB, ratio {fuse_peak / hand_peak:.2f}; the facts as CSR "
              f"{facts / 1e6:.1f} MB, the closure as CSR {(want.nnz * 12) / 1e6:.1f} MB")


def embedding_join(n: int, m: int, d: int, repeats: int, forced: bool) -> None:
    """Y[y,d] = R(x,y) E[x,d]: sparse R against the same program with R dense, and
    against NumPy's dense R.T @ E."""
    relation = random_dag(n, m)
    emb = np.random.default_rng(1).standard_normal((n, d)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_tsv(folder / "edge.tsv", relation, n)
        np.save(folder / "emb.npy", emb)
        sparse_prog = fuse_lang.compile(EMBEDDING, base_dir=folder,
                                        representation={"R": "sparse"} if forced else None)
        dense_prog = fuse_lang.compile(EMBEDDING, base_dir=folder,
                                       representation={"R": "dense"})
        with_self = with_last_node(relation)
        dense_r = with_self.toarray()
        kind = representations(sparse_prog.analysis,
                               {"R": "sparse"} if forced else None)["R"].kind
        inputs = {"R": with_self, "E": emb}
        got = sparse_prog.run(inputs=inputs)["Y"]
        np.testing.assert_allclose(got, dense_prog.run(inputs={"R": dense_r, "E": emb})["Y"],
                                   rtol=1e-5, atol=1e-5)
        times = median_times({"sparse": lambda: sparse_prog.run(inputs=inputs),
                              "dense": lambda: dense_prog.run(inputs={"R": dense_r, "E": emb}),
                              "numpy": lambda: dense_r.T @ emb}, repeats, warmup=1)
    print(f"embedding join Y[y,d] = R(x,y) E[x,d], N={n:,}, d={d}, {with_self.nnz:,} tuples, "
          f"R {kind}")
    report("embedding join: sparse vs dense Fuse", times["sparse"], times["dense"], 1.0)
    report("embedding join: sparse vs NumPy dense", times["sparse"], times["numpy"], 1.0)
    print(f"embedding join: dense Fuse takes {times['dense'] / times['sparse']:.0f}x, NumPy's "
          f"dense R.T @ E {times['numpy'] / times['sparse']:.0f}x the sparse Fuse run")


def framework_closure(backend: str, n: int, m: int, repeats: int) -> None:
    """The closure on torch (torch.sparse) or jax (BCOO), eager (a compiled run is
    dense), against the hand-written scipy.sparse loop in the same run.  The first
    run is timed apart: jax compiles each operation once per shape it meets."""
    edge = with_last_node(random_dag(n, m))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_tsv(folder / "edge.tsv", edge, n)
        prog = fuse_lang.compile(PROGRAM, base_dir=folder, path=str(folder / "c.fuse"),
                                 representation={"Edge": "sparse", "Reach": "sparse"},
                                 backend=backend, compiled=False)
        engine = lambda: prog.run(inputs={"Edge": edge})  # noqa: E731
        start = time.perf_counter()
        got = engine()["Reach"]
        first = time.perf_counter() - start
        want = baseline(edge)
        assert sp.issparse(got) and (got != want).nnz == 0, "the closure differs"
        times = median_times({"engine": engine, "baseline": lambda: baseline(edge)},
                             repeats, warmup=0)
    kernels = ""
    if backend == "jax":
        from fuse_lang.run.sparse.jax_sparse import compiled_kernels
        kernels = f" ({compiled_kernels()} jitted sparse kernels compiled in this process)"
    print(f"closure on {backend}, N={n:,}, {edge.nnz:,} edges, {want.nnz:,} pairs; first run "
          f"{first:.2f} s{kernels}")
    report(f"closure N={n:,} {backend} sparse vs scipy hand-written", times["engine"],
           times["baseline"], 2.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--big", action="store_true",
                        help="also N=1,000,000 with 2,000,000 edges")
    parser.add_argument("--small", action="store_true", help="tiny sizes (the smoke test)")
    parser.add_argument("--backend", choices=["numpy", "torch", "jax"], default="numpy")
    parser.add_argument("--n", type=int, nargs="*", default=[5_000],
                        help="with --backend torch|jax: the sizes N")
    parser.add_argument("--edges", type=float, default=1.4, help="edges per node (--n)")
    args = parser.parse_args()
    if args.backend != "numpy":
        for n in ([300] if args.small else args.n):
            repeats = 1 if args.small else args.repeats
            framework_closure(args.backend, n, int(n * args.edges), repeats)
        return
    if args.small:
        closure(300, 420, 1, forced=True)
        embedding_join(300, 420, 8, 1, forced=True)
        return
    closure(5_000, 7_000, args.repeats, forced=False)
    embedding_join(5_000, 7_000, 64, args.repeats, forced=False)
    if args.big:
        closure(1_000_000, 2_000_000, max(args.repeats // 2, 1), forced=False)


if __name__ == "__main__":
    main()
