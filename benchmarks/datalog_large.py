"""Large fact sets (issue 18, item 6): a points-to analysis of 52,153 facts
(about 45,000 symbols in the variables' column type) and a program of 100,000
facts over 56 rules, each run through `fuse_lang.compile(...).run()` and checked
against a small reference evaluator (benchmarks/datalog_programs.py: Python
sets, semi-naive) in the same run; and the reading of a 1,000,000-line relation
file by the checker, whole columns against row by row.

Printed: wall time (compile + run), peak memory (tracemalloc: NumPy's and
scipy's arrays and Python's objects), the reference's time and the ratio.

    python benchmarks/datalog_large.py [--small] [--repeats 1]

--small runs a few thousand facts (the smoke test).  Last, the measurement
behind the choice of join (docs/scale.md): a sparse matrix product over
compacted keys against expanding the matching pairs.
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
from _common import median_times, peak_bytes  # noqa: E402
from datalog_programs import evaluate, points_to, points_to_reference, wide, wide_rules  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang.io.relation_files import read_relation  # noqa: E402
from fuse_lang.run.sparse.join import Tuples, join  # noqa: E402


def answers(program, out: dict) -> dict[str, set]:
    """Each output's tuples by symbol (a sparse output read off its non-zeros)."""
    analysis = program.analysis
    found = {}
    for name, value in out.items():
        symbols = [analysis.domain_symbols[a.domain] for a in analysis.tensors[name].axes]
        coords = zip(*sp.coo_array(value).coords) if sp.issparse(value) else \
            (tuple(c) for c in np.argwhere(np.asarray(value) > 0))
        found[name] = {tuple(symbols[k][int(x)] for k, x in enumerate(c)) for c in coords}
    return found


def timed(fn, clock=time.perf_counter):
    start = clock()
    value = fn()
    return value, clock() - start


def compare(label: str, folder: Path, program_file: str, reference) -> None:
    text = (folder / program_file).read_text()
    program, compile_s = timed(lambda: fuse_lang.compile(text, base_dir=folder))
    out, run_s = timed(program.run)
    want, reference_s = timed(reference)
    got = answers(program, out)
    wrong = [n for n in got if got[n] != want[n]]
    if wrong:
        raise SystemExit(f"{label}: Fuse's answers differ from the reference for {wrong}")
    peak = peak_bytes(lambda: fuse_lang.compile(text, base_dir=folder).run())
    total = compile_s + run_s
    sizes = ", ".join(f"{n} {len(got[n]):,}" for n in got)
    print(f"{label}: fuse {total:.2f} s (compile {compile_s:.2f} s + run {run_s:.2f} s), "
          f"peak {peak / 1e6:.0f} MB; reference (Python sets) {reference_s:.2f} s; "
          f"ratio {total / reference_s:.2f}; answers equal ({sizes})")


def tsv_loading(rows: int, folder: Path) -> None:
    """The reading of a relation file of `rows` lines of symbols and of integers
    (io.relation_files, as the checker and the run read it): the whole-file reader
    against the line reader (the reader for small or irregular files); the two
    give the same relation."""
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, rows // 5, (2, rows))
    for kind, cells in (("symbols", lambda a: f"v{a}"), ("integers", str)):
        path = folder / f"{kind}.tsv"
        path.write_text("".join(f"{cells(a)}\t{cells(b)}\n" for a, b in zip(u, v)))
        whole, whole_s = timed(lambda path=path: read_relation(path, None, whole=True),
                               time.process_time)
        by_line, by_line_s = timed(lambda path=path: read_relation(path, None, whole=False),
                                   time.process_time)
        if whole.tuples() != by_line.tuples():
            raise SystemExit(f"{kind}: the two readers disagree")
        print(f"reading {rows:,} lines of {kind}: whole file {whole_s:.2f} s CPU, "
              f"line by line {by_line_s:.2f} s CPU; ratio {whole_s / by_line_s:.2f}")


def expand_join(a: Tuples, b: Tuples, extents: dict[str, int]) -> np.ndarray:
    """The other way to join tuples, for comparison: A(x,y,f) B(y,h) -> (x,f,h) by
    sorting B on y, expanding every matching pair, then summing repeats (np.unique)."""
    order = np.argsort(b.coords[0], kind="stable")
    ys = b.coords[0][order]
    low, high = np.searchsorted(ys, a.coords[1], "left"), np.searchsorted(ys, a.coords[1], "right")
    counts = high - low
    left = np.repeat(np.arange(a.nnz), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    right = order[np.repeat(low, counts) + offsets]
    key = (a.coords[0][left] * extents["f"] + a.coords[2][left]) * extents["h"] + \
        b.coords[1][right]
    distinct, at = np.unique(key, return_inverse=True)
    np.bincount(at, weights=a.data[left] * b.data[right])
    return distinct


def join_choice(cases) -> None:
    """How a join of tuples runs (docs/scale.md): one scipy.sparse product over
    compacted keys (run/sparse_join.join) against expanding the matching pairs."""
    rng = np.random.default_rng(0)
    for variables, nnz_a, nnz_b, heaps in cases:
        extents = {"x": variables, "y": variables, "f": 40, "h": heaps}
        a = Tuples(("x", "y", "f"), [rng.integers(0, variables, nnz_a),
                                     rng.integers(0, variables, nnz_a),
                                     rng.integers(0, 40, nnz_a)], np.ones(nnz_a))
        b = Tuples(("y", "h"), [rng.integers(0, variables, nnz_b),
                                rng.integers(0, heaps, nnz_b)], np.ones(nnz_b))
        times = median_times({"matmul": lambda a=a, b=b, e=extents: join(a, b, {"x", "f", "h"}, e),
                              "expand": lambda a=a, b=b, e=extents: expand_join(a, b, e)},
                             3, 1, "cpu")
        size = join(a, b, {"x", "f", "h"}, extents).nnz
        if size != expand_join(a, b, extents).size:
            raise SystemExit("the two joins disagree")
        print(f"join A(x,y,f) {nnz_a:,} x B(y,h) {nnz_b:,} ({variables:,} values of y, "
              f"{heaps:,} of h) -> {size:,} tuples: sparse product {times['matmul'] * 1e3:.1f} "
              f"ms, expand pairs {times['expand'] * 1e3:.1f} ms; ratio "
              f"{times['matmul'] / times['expand']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a few thousand facts")
    args = parser.parse_args()
    facts = (3_000, 6_000, 20_000) if args.small else (52_153, 100_000, 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pt").mkdir()
        rel = points_to(folder / "pt", facts[0])
        variables = {c for rows in rel.values() for row in rows for c in row if c[0] == "v"}
        compare(f"points-to, {facts[0]:,} facts ({len(variables):,} variables)",
                folder / "pt", "points_to.fuse", lambda: points_to_reference(rel))
        (folder / "wide").mkdir()
        base = wide(folder / "wide", facts[1])
        rules = sum(len(s) for s in wide_rules())
        compare(f"wide program, {facts[1]:,} facts, {rules} rules", folder / "wide",
                "wide.fuse", lambda: {k: v for k, v in evaluate(base, wide_rules()).items()})
        tsv_loading(facts[2], folder)
    join_choice([(2_000, 2_000, 4_000, 50)] if args.small else
                [(45_000, 10_000, 20_000, 5_000), (45_000, 100_000, 200_000, 5_000),
                 (200_000, 1_000_000, 1_000_000, 5_000), (2_000, 100_000, 400_000, 50)])


if __name__ == "__main__":
    main()
