"""Identifiers as values (issue 27; LANGUAGE.md §14): a transitive closure over a
relation file whose node ids are 0..N-1, and over the same graph with each id
replaced by a random 64-bit integer (negative ones too).  The extent is the
number of distinct ids either way, so time and memory should match: printed
are both runs' wall time (compile + run) and peak memory (tracemalloc), their
ratios (64-bit / small), and a plain Python reference (sets, semi-naive) in the
same run, whose answers both runs are checked against.

    python benchmarks/datalog_ids.py [--small]
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from _common import peak_bytes  # noqa: E402

import fuse_lang  # noqa: E402

PROGRAM = """Edge(x, y) = "edge.tsv"
Path(x, y) = Edge(x, y)
Path(x, z) = Path(x, y) Edge(y, z)
export Path
"""


def graph(nodes: int, edges: int, seed: int) -> list[tuple[int, int]]:
    """A DAG whose edges stay inside blocks of 20 nodes: its closure stays sparse."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, nodes, edges)
    v = u // 20 * 20 + rng.integers(0, 20, edges)
    keep = (u < v) & (v < nodes)
    return sorted(set(zip(u[keep].tolist(), v[keep].tolist())))


def reference(edges: list[tuple[int, int]]) -> set[tuple[int, int]]:
    out = set(edges)
    delta = set(edges)
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    while delta:
        delta = {(a, c) for a, b in delta for c in succ.get(b, ())} - out
        out |= delta
    return out


def run(folder: Path, edges: list[tuple[int, int]]) -> tuple[set, float, int]:
    (folder / "edge.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in edges))
    start = time.perf_counter()
    program = fuse_lang.compile(PROGRAM, base_dir=folder)
    out = program.run()
    seconds = time.perf_counter() - start
    values = program.analysis.domain_symbols[program.analysis.tensors["Path"].axes[0].domain]
    value = out["Path"]
    coords = sp.coo_array(value).coords if sp.issparse(value) else np.nonzero(np.asarray(value))
    got = {(values[int(a)], values[int(b)]) for a, b in zip(*coords)}
    peak = peak_bytes(lambda: fuse_lang.compile(PROGRAM, base_dir=folder).run())
    return got, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a few thousand edges")
    args = parser.parse_args()
    nodes = 2_000 if args.small else 100_000
    edges = graph(nodes, nodes * 2, seed=1)
    rng = random.Random(7)
    ids = list({rng.randrange(-(2**63), 2**63) for _ in range(nodes * 2)})[:nodes]
    rng.shuffle(ids)  # distinct, negative ones too, up to 2^63-1
    ids[0] = 2**63 - 1
    big = [(ids[a], ids[b]) for a, b in edges]
    start = time.perf_counter()
    want = reference(edges)
    reference_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), edges[:50])  # warm up: imports, the first compile
        small_got, small_s, small_peak = run(Path(tmp), edges)
        big_got, big_s, big_peak = run(Path(tmp), big)
    if small_got != want:
        raise SystemExit("ids 0..N-1: Fuse's answers differ from the reference")
    if big_got != {(ids[a], ids[b]) for a, b in want}:
        raise SystemExit("64-bit ids: Fuse's answers differ from the reference")
    print(f"closure of {len(edges):,} edges over {nodes:,} nodes ({len(want):,} pairs): "
          f"answers equal to the reference")
    print(f"ids 0..N-1: {small_s:.2f} s, peak {small_peak / 1e6:.1f} MB")
    print(f"64-bit ids: {big_s:.2f} s, peak {big_peak / 1e6:.1f} MB")
    print(f"ratio 64-bit / small: time {big_s / small_s:.2f}, memory {big_peak / small_peak:.2f}")
    print(f"reference (Python sets): {reference_s:.2f} s; ratio fuse (64-bit) / reference "
          f"{big_s / reference_s:.2f}")


if __name__ == "__main__":
    main()
