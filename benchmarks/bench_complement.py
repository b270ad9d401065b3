"""`(1 - R(x,y,z))` of a sparse relation runs as the anti-join `not R(x,y,z)` runs
(issue 27, point 5): the relation's tuples are dropped from the positive join,
and the dense complement (every cell of three ~1,000-symbol columns, 10^9
cells) is never made.

    D(x,y,z) = A(x,y,z) not R(x,y,z)                # the baseline
    D(x,y,z) = A(x,y,z) (1 - R(x,y,z))
    D(x,y,z) = A(x,y,z) (1 - step(R(x,y,z)))

A and R are random relations of --rows tuples over --constants symbols per
column (half of R's tuples are A's); `.tsv` files give the columns' symbols, and
the relations are given to each run as inputs, kept sparse, so that the figures
time the rule rather than the reading of files.  Each spelling is compiled once
and executed on NumPy in the same process; the answers (D's tuples) must be
identical.  Prints each spelling's median time
and its ratio to `not` (about 1: the same anti-join), and the representation
`fuse explain` gives D (sparse).

The dense complement the engine made before is measured too, at --dense-constants
symbols per column where it fits in memory: the same program with the anti-join
of `1 - R` switched off from outside (a patch applied before compiling; the
product has no switch for it), against the anti-join at that size.

    python benchmarks/bench_complement.py [--constants 1000] [--rows 5000] [--repeats 3]
    python benchmarks/bench_complement.py --small    # a second: what a smoke test runs
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang.plan.representation import representations  # noqa: E402
from fuse_lang.run.interpret.builtin_calls import BuiltinCalls  # noqa: E402
from fuse_lang.run.sparse.nd import SparseRelation  # noqa: E402

SPELLINGS = {"not R": "not R(x,y,z)", "(1 - R)": "(1 - R(x,y,z))",
             "(1 - step(R))": "(1 - step(R(x,y,z)))"}
PROGRAM = 'A(x,y,z) = "a.tsv"\nR(x,y,z) = "r.tsv"\nD(x,y,z) = A(x,y,z) {negated}\nD(x,y,z)?\n'


def relations(n: int, rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A's and R's tuples (positions): `rows` distinct each, half of R's taken from A."""
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, n, size=(rows, 3)), axis=0)
    shared = a[rng.choice(len(a), size=len(a) // 2, replace=False)]
    r = np.unique(np.concatenate([shared, rng.integers(0, n, size=(rows - len(shared), 3))]),
                  axis=0)
    return a, r


def compiled(folder: Path, n: int, tuples: dict[str, np.ndarray], negated: str
             ) -> tuple[fuse_lang.CompiledProgram, dict[str, SparseRelation]]:
    """The program over a.tsv and r.tsv (they give the columns' symbols), and A and R
    as inputs, kept sparse (so the figures time the rule, not the reading of files)."""
    for name, rows in tuples.items():
        (folder / f"{name.lower()}.tsv").write_text(
            "".join(f"X{x}\tY{y}\tZ{z}\n" for x, y, z in rows), encoding="utf-8")
    program = fuse_lang.compile(PROGRAM.format(negated=negated), base_dir=folder)
    shape = tuple(axis.extent for axis in program.analysis.tensors["A"].axes)
    inputs = {}
    for name, rows in tuples.items():
        rows = rows[(rows < np.array(shape)).all(axis=1)]  # (a symbol no tuple of A has)
        inputs[name] = SparseRelation.from_coords(shape, list(rows.T),
                                                  np.ones(len(rows), np.float32))
    return program, inputs


def answer(program: fuse_lang.CompiledProgram, inputs: dict) -> set[tuple]:
    (query,) = program.execute(inputs=inputs).queries
    return set(query.tuples)


@contextmanager
def dense_complement() -> Iterator[None]:
    """`1 - R` evaluated as the sum it is written as: the dense complement."""
    factor = BuiltinCalls.factor
    BuiltinCalls.factor = lambda self, f: self.eval(f)  # type: ignore[method-assign]
    try:
        yield
    finally:
        BuiltinCalls.factor = factor  # type: ignore[method-assign]


def anti_joins(n: int, rows: int, repeats: int) -> None:
    a, r = relations(n, rows)
    runs, answers, kinds = {}, {}, {}
    with tempfile.TemporaryDirectory() as name:
        for label, negated in SPELLINGS.items():
            program, inputs = compiled(Path(name), n, {"A": a, "R": r}, negated)
            answers[label] = answer(program, inputs)
            kinds[label] = representations(program.analysis)["D"].kind
            runs[label] = lambda program=program, inputs=inputs: program.execute(inputs=inputs)
    assert all(found == answers["not R"] for found in answers.values()), "the spellings disagree"
    times = median_times(runs, repeats, warmup=1)
    base = times["not R"]
    print(f"D(x,y,z) = A(x,y,z) <R negated>: {n} symbols per column ({n ** 3:.3g} cells), "
          f"{rows} tuples each, {len(answers['not R'])} answers, identical")
    for label, seconds in times.items():
        print(f"  {label:14} {seconds * 1e3:9.1f} ms   D {kinds[label]:6}  ratio to not R "
              f"{seconds / base:6.2f}")


def against_dense(n: int, rows: int, repeats: int) -> None:
    a, r = relations(n, rows)
    with tempfile.TemporaryDirectory() as name:
        anti, inputs = compiled(Path(name), n, {"A": a, "R": r}, SPELLINGS["(1 - R)"])
        found = answer(anti, inputs)
        dense, _ = compiled(Path(name), n, {"A": a, "R": r}, SPELLINGS["(1 - R)"])

        def run_dense() -> object:
            with dense_complement():
                return dense.execute(inputs=inputs)
        with dense_complement():
            assert answer(dense, inputs) == found, "the dense complement disagrees"
        times = median_times({"anti-join": lambda: anti.execute(inputs=inputs),
                              "dense": run_dense}, repeats, warmup=0)
    print(f"(1 - R) at {n} symbols per column ({n ** 3:.3g} cells), {rows} tuples each:")
    print(f"  anti-join {times['anti-join'] * 1e3:9.1f} ms   dense complement (as before) "
          f"{times['dense'] * 1e3:9.1f} ms   ratio dense / anti-join "
          f"{times['dense'] / times['anti-join']:7.1f}   answers identical")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--constants", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--dense-constants", type=int, default=150,
                        help="the size at which the dense complement is measured (n^3 cells)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", action="store_true",
                        help="100 constants, 500 rows, dense at 40, one repeat")
    args = parser.parse_args()
    if args.small:
        args.constants, args.rows, args.dense_constants, args.repeats = 100, 500, 40, 1
    anti_joins(args.constants, args.rows, args.repeats)
    against_dense(args.dense_constants, args.rows, args.repeats)


if __name__ == "__main__":
    main()
