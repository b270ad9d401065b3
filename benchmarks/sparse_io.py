"""Sparse relations in files: peak memory (tracemalloc) and time of writing and
reading a relation of N symbols and M edges through Fuse, against scipy.sparse's
own save_npz / load_npz (and np.savetxt for the .tsv tuples) in the same run,
and against what the dense relation would need (N^2 float32 cells).

- check: `fuse_lang.analyze` + the plan of `Edge(x,y) = "edge.npz"` (the
  archive's headers only: shape and non-zeros);
- read: `compile(...).run()` of that program (the archive straight into CSR)
  against `scipy.sparse.load_npz`;
- write .npz / .tsv: `run(inputs={"Edge": csr})` of a program with the sink
  `"out.npz" = Edge(x,y)` (or `.tsv`) against `scipy.sparse.save_npz` (or
  `np.savetxt` of the tuples).

    python benchmarks/sparse_io.py [--n 1000000] [--edges 1000000] [--repeats 3]
    python benchmarks/sparse_io.py --small      # the smoke test
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times, peak_bytes  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang.front.numbers import format_bytes  # noqa: E402
from fuse_lang.plan.representation import representations  # noqa: E402

READ = 'Edge(x,y) = "edge.npz"\nexport Edge\n'
WRITE = 'Edge(x,y) = "edge.npz"\n"out{suffix}" = Edge(x,y)\n'


def random_edges(n: int, m: int, seed: int = 0) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    edge = sp.csr_array((np.ones(m, np.float32), (rng.integers(0, n, m), rng.integers(0, n, m))),
                        shape=(n, n))
    edge.sum_duplicates()
    edge.data[:] = 1
    return edge


def megabytes(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def line(label: str, fuse: tuple[int, float], baseline: tuple[int, float], name: str) -> None:
    (fuse_peak, fuse_s), (base_peak, base_s) = fuse, baseline
    print(f"{label:<11} peak fuse {megabytes(fuse_peak):>10}  {name} {megabytes(base_peak):>10}"
          f"  ratio {fuse_peak / max(base_peak, 1):5.2f}   time fuse {fuse_s * 1e3:9.1f} ms  "
          f"{name} {base_s * 1e3:9.1f} ms  ratio {fuse_s / max(base_s, 1e-9):5.2f}")


def measure(fns: dict, repeats: int) -> dict[str, tuple[int, float]]:
    times = median_times(fns, repeats, warmup=1)
    return {name: (peak_bytes(fn), times[name]) for name, fn in fns.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000, help="symbols")
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="tiny sizes (the smoke test)")
    args = parser.parse_args()
    n, m, repeats = (3_000, 3_000, 1) if args.small else (args.n, args.edges, args.repeats)
    edge = random_edges(n, m)
    csr_bytes = edge.data.nbytes + edge.indices.nbytes + edge.indptr.nbytes
    print(f"sparse io, N={n:,} symbols, {edge.nnz:,} edges: CSR {megabytes(csr_bytes)}; "
          f"the dense relation would be {format_bytes(n * n * 4)} (float32)")
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        sp.save_npz(base / "edge.npz", edge, compressed=False)
        check_peak = peak_bytes(lambda: representations(fuse_lang.analyze(
            READ, str(base / "read.fuse"), base)))
        chosen = representations(fuse_lang.analyze(READ, str(base / "read.fuse"), base))["Edge"]
        print(f"check      peak {megabytes(check_peak)} (headers only); plan: {chosen.text}")
        reader = fuse_lang.compile(READ, base_dir=base)
        got = reader.run()["Edge"]
        assert sp.issparse(got) and (got != edge).nnz == 0, "read back differs"
        read = measure({"fuse": reader.run,
                        "load": lambda: sp.load_npz(base / "edge.npz")}, repeats)
        line("read .npz", read["fuse"], read["load"], "load_npz")
        writers = {suffix: fuse_lang.compile(WRITE.format(suffix=suffix), base_dir=base)
                   for suffix in (".npz", ".tsv")}
        coo = edge.tocoo()
        written = measure({
            "npz": lambda: writers[".npz"].run(inputs={"Edge": edge}),
            "save_npz": lambda: sp.save_npz(base / "hand.npz", edge, compressed=False),
            "tsv": lambda: writers[".tsv"].run(inputs={"Edge": edge}),
            "savetxt": lambda: np.savetxt(base / "hand.tsv", np.stack([coo.row, coo.col], 1),
                                          fmt="%d", delimiter="\t"),
        }, repeats)
        assert (sp.load_npz(base / "out.npz") != edge).nnz == 0, "the .npz sink differs"
        assert (base / "out.tsv").read_text() == (base / "hand.tsv").read_text(), \
            "the .tsv sink differs"
        line("write .npz", written["npz"], written["save_npz"], "save_npz")
        line("write .tsv", written["tsv"], written["savetxt"], "savetxt")
        worst = max(read["fuse"][0], written["npz"][0], written["tsv"][0])
        print(f"largest Fuse peak {megabytes(worst)} = {worst / csr_bytes:.1f}x the CSR; "
              f"dense / that peak: {n * n * 4 / worst:,.0f}x")


if __name__ == "__main__":
    main()
