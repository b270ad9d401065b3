"""A Boolean 3-way join whose atoms each hold a column no other atom holds
(issue 18, item 4): the engine projects `u` and `v` out of their atoms before
joining, against the contraction that carries them into the pairwise joins
(opt_einsum's own path for the whole einsum: what the planner chose before).

    H(x,y,z) = T(x,y,z) T(x,u,z) T(v,y,z)

T is a random relation of --rows tuples over --constants symbols per column.
Both contractions run in the same process on the same arrays (NumPy); the
answers must be identical.  Prints the FLOPs `fuse explain` reports for the
equation, the FLOPs of the carried path, the median times and their ratio.

    python benchmarks/datalog_join.py [--constants 300] [--rows 3000] [--repeats 3]
    python benchmarks/datalog_join.py --small      # seconds: what the smoke test runs
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import opt_einsum
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times  # noqa: E402

import fuse_lang  # noqa: E402

RULE = "H(x,y,z) = T(x,y,z) T(x,u,z) T(v,y,z)\nexport H\n"
LETTERS = "abc,adc,ebc->abc"  # the einsum `fuse explain` prints for RULE


def relation(n: int, rows: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.zeros((n, n, n), dtype=np.float32)
    out[tuple(rng.integers(0, n, size=(3, rows)))] = 1
    out[np.arange(n), np.arange(n), np.arange(n)] = 1  # every constant in every column
    return out


def program_text(t: np.ndarray) -> str:
    """The relation as a .tsv source would give it; here as facts (no file)."""
    rows = np.argwhere(t > 0)
    return "".join(f"T(X{a}, Y{b}, Z{c})\n" for a, b, c in rows) + RULE


def explained_flops(text: str) -> tuple[int, int, list[str]]:
    """FLOPs and the naive FLOPs of the join, and its order, from `fuse explain`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "join.fuse"
        path.write_text(text, encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--format",
                               "json", str(path)], capture_output=True, text=True, check=True)
    (eq,) = [e for e in json.loads(proc.stdout)["equations"] if e["tensor"] == "H"]
    (c,) = eq["contractions"]
    return c["flops"], c["naive_flops"], c["steps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--constants", type=int, default=300)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="30 constants, 300 rows")
    args = parser.parse_args()
    if args.small:
        args.constants, args.rows, args.repeats = 30, 300, 1
    t = relation(args.constants, args.rows)
    text = program_text(t)
    flops, naive, steps = explained_flops(text)
    shapes = [t.shape] * 3
    _, carried = opt_einsum.contract_path(LETTERS, *shapes, shapes=True, optimize="auto")
    program = fuse_lang.compile(text)
    # symbols are numbered in order of first appearance: each axis back to 0..n-1
    analysis = program.analysis
    order = [np.argsort([int(s[1:]) for s in analysis.domain_symbols[axis.domain]])
             for axis in analysis.tensors["H"].axes]

    def planned() -> np.ndarray:
        return program.run()["H"]

    def in_number_order(h) -> np.ndarray:
        # a relation the plan keeps sparse comes out of run() sparse: compare it dense
        dense = h.toarray() if sp.issparse(h) else np.asarray(h)
        return dense[np.ix_(*order)]

    def carrying() -> np.ndarray:
        return (opt_einsum.contract(LETTERS, t, t, t, optimize="auto") > 0).astype(np.float32)

    assert np.array_equal(in_number_order(planned()), carrying()), \
        "the two contractions disagree"
    times = median_times({"planned": planned, "carried": carrying}, args.repeats, warmup=0)
    print(f"3-way join, {args.constants} constants per column, {int(t.sum())} tuples")
    print(f"  fuse explain: {flops:.3g} FLOPs (naive {naive:.3g}); order {' ; '.join(steps)}")
    print(f"  u, v carried into the joins (opt_einsum's path): {int(carried.opt_cost):.3g} FLOPs")
    print(f"  FLOPs ratio carried / planned {int(carried.opt_cost) / flops:9.1f}")
    print(f"  planned (fuse run) {times['planned'] * 1e3:9.1f} ms   carried "
          f"{times['carried'] * 1e3:9.1f} ms   ratio carried / planned "
          f"{times['carried'] / times['planned']:6.1f}   answers identical")


if __name__ == "__main__":
    main()
