"""Sparse relations of three axes or more (issue 18, item 6; docs/scale.md,
"Relations of three or more axes"): NumPy keeps them as sorted cell keys and
joins them as tuples; answers equal the dense run and a reference evaluator.
Through the public entry points: `fuse_lang.compile(...).run()`, `fuse
explain`, `fuse_lang.analyze`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fuse_lang

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from datalog_programs import evaluate, points_to, points_to_reference, wide, wide_rules  # noqa: E402


def tuples(program, out: dict) -> dict[str, set]:
    analysis = program.analysis
    found = {}
    for name, value in out.items():
        symbols = [analysis.domain_symbols.get(a.domain) for a in analysis.tensors[name].axes]
        coords = zip(*sp.coo_array(value).coords) if sp.issparse(value) else \
            (tuple(c) for c in np.argwhere(np.asarray(value) > 0))
        found[name] = {tuple(symbols[k][int(x)] if symbols[k] else int(x)
                             for k, x in enumerate(c)) for c in coords}
    return found


def write(folder: Path, name: str, rows) -> None:
    (folder / name).write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))


JOIN3 = """
A(x, y, f) = "a.tsv"
B(y, z) = "b.tsv"
C(z, f, w) = "c.tsv"
H(x, f, z) = A(x, y, f) B(y, z)
K(x, w) = A(x, y, f) B(y, z) C(z, f, w)
N(x, f, z) = H(x, f, z) not C(z, f, x)
export H
export K
export N
"""


@pytest.fixture
def join3(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    n, fields = 60, 4
    write(tmp_path, "a.tsv", {(f"N{x}", f"N{y}", f"F{f}") for x, y, f in
                              zip(*rng.integers(0, n, (2, 150)), rng.integers(0, fields, 150))})
    write(tmp_path, "b.tsv", {(f"N{y}", f"N{z}") for y, z in rng.integers(0, n, (120, 2))})
    write(tmp_path, "c.tsv", {(f"N{z}", f"F{f}", f"N{w}") for z, f, w in
                              zip(rng.integers(0, n, 150), rng.integers(0, fields, 150),
                                  rng.integers(0, n, 150))})
    return tmp_path


def test_a_3_ary_sparse_join_equals_the_dense_run(join3):
    sparse = {"A": "sparse", "C": "sparse", "H": "sparse", "N": "sparse"}
    dense = {name: "dense" for name in ("A", "B", "C", "H", "K", "N")}
    fast = fuse_lang.compile(JOIN3, base_dir=join3, representation=sparse)
    slow = fuse_lang.compile(JOIN3, base_dir=join3, representation=dense)
    got, want = fast.run(), slow.run()
    assert sp.issparse(got["H"]) and got["H"].ndim == 3  # a scipy.sparse N-D coo_array
    assert isinstance(want["H"], np.ndarray)
    for name in ("H", "K", "N"):
        np.testing.assert_array_equal(sp.coo_array(got[name]).toarray()
                                      if sp.issparse(got[name]) else got[name], want[name])
    assert tuples(fast, got)["N"] and tuples(fast, got)["N"] < tuples(fast, got)["H"]


def test_the_planner_keeps_a_large_3_ary_relation_sparse_and_explain_says_so(tmp_path):
    rng = np.random.default_rng(1)
    rows = {(f"v{a}", f"v{b}", f"f{f}") for a, b, f in
            zip(*rng.integers(0, 400, (2, 900)), rng.integers(0, 20, 900))}
    write(tmp_path, "load.tsv", rows)
    program = tmp_path / "p.fuse"
    program.write_text('Load(v, b, f) = "load.tsv"\nTo(v, f) = Load(v, b, f)\nexport To\n')
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", str(program)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("Load:"))
    cells = np.prod([len({r[k] for r in rows}) for k in range(3)])
    assert f"sparse, ~{len(rows):,} of {cells:,} (file lines" in line
    assert "3 axes: sparse on numpy, dense on torch and jax" in line
    js = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", str(program),
                         "--format", "json"], capture_output=True, text=True, timeout=120)
    stored = {r[0]: r for r in json.loads(js.stdout)["representations"]}
    assert stored["Load"][1:4] == ["sparse", len(rows), cells]
    out = fuse_lang.compile(program.read_text(), base_dir=tmp_path).run()
    assert sp.issparse(out["To"])  # the projection of a sparse relation stays sparse
    assert {(a, f) for a, _, f in rows} == tuples(
        fuse_lang.compile(program.read_text(), base_dir=tmp_path), out)["To"]


def test_points_to_equals_the_reference_evaluator(tmp_path):
    relations = points_to(tmp_path, facts=3000)
    program = fuse_lang.compile((tmp_path / "points_to.fuse").read_text(), base_dir=tmp_path)
    out = program.run()
    assert sp.issparse(out["Hpt"]) and out["Hpt"].ndim == 3
    want = points_to_reference(relations)
    got = tuples(program, out)
    assert got["Pt"] == want["Pt"] and got["Hpt"] == want["Hpt"]
    assert len(want["Pt"]) > 500 and want["Hpt"]


def test_a_wide_program_with_negation_equals_the_reference_evaluator(tmp_path):
    facts = wide(tmp_path, facts=4000, seed=3)
    program = fuse_lang.compile((tmp_path / "wide.fuse").read_text(), base_dir=tmp_path)
    got = tuples(program, program.run())
    want = evaluate(facts, wide_rules())
    assert sum(len(s) for s in wide_rules()) == 56
    for name, rows in got.items():
        assert rows == want[name], name
    assert got["OnlyRead"] and got["Peer"] and got["Allowed"]


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_other_backends_run_a_3_ary_relation_dense(join3, backend):
    pytest.importorskip(backend)
    sparse = {"A": "sparse", "C": "sparse", "H": "sparse"}
    kwargs = {"compiled": False} if backend == "jax" else {}
    other = fuse_lang.compile(JOIN3, base_dir=join3, representation=sparse, backend=backend,
                              **kwargs).run()
    numpy = fuse_lang.compile(JOIN3, base_dir=join3, representation=sparse).run()
    assert isinstance(other["H"], np.ndarray)  # kept dense there (docs/scale.md)
    np.testing.assert_array_equal(other["H"], sp.coo_array(numpy["H"]).toarray())
    np.testing.assert_array_equal(other["K"], numpy["K"].toarray()
                                  if sp.issparse(numpy["K"]) else numpy["K"])


def test_a_large_relation_file_is_numbered_as_row_by_row(tmp_path):
    rng = np.random.default_rng(2)
    rows = [(f"s{a}", f"t{b}", f"s{c}") for a, b, c in rng.integers(0, 3000, (12000, 3))]
    write(tmp_path, "r.tsv", rows)
    assert (tmp_path / "r.tsv").stat().st_size > 1 << 16  # read whole (io/text_sources.py)
    text = 'R(x, k, y) = "r.tsv"\nQ(x) = R(x, k, y)\nQ(y) = R(x, k, y)\nexport Q\n'
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    first: dict[str, None] = {}
    for a, _, c in rows:  # columns 0 and 2 share a domain (Q's): numbered row by row
        first.setdefault(a)
        first.setdefault(c)
    axes = analysis.tensors["R"].axes
    assert list(analysis.domain_symbols[axes[0].domain]) == list(first)
    assert list(analysis.domain_symbols[axes[1].domain]) == list(dict.fromkeys(
        b for _, b, _ in rows))


def test_a_large_relation_file_with_a_bad_row_names_it(tmp_path):
    lines = [f"a{k}\tb{k}\n" for k in range(9000)]
    lines[6123] = "a\tb\tc\n"
    (tmp_path / "e.tsv").write_text("".join(lines))
    analysis = fuse_lang.analyze('E(x, y) = "e.tsv"\nexport E\n', base_dir=tmp_path)
    messages = [d.message for d in analysis.diagnostics if d.code == "unreadable-source"]
    assert messages and "line 6124 has 3 fields, the first row has 2" in messages[0]


def test_a_large_integer_relation_file(tmp_path):
    rng = np.random.default_rng(4)
    edges = rng.integers(0, 5000, (9000, 2))
    write(tmp_path, "e.tsv", edges)
    text = 'E(x, y) = "e.tsv"\nR(x, y) = E(x, y)\nR(x, z) = R(x, y) E(y, z)\nexport E\n'
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    ids = np.unique(edges)  # the extent: the ids the file holds, never the largest + 1
    assert analysis.tensors["E"].shape == (ids.size,) * 2
    assert analysis.domain_symbols[analysis.tensors["E"].axes[0].domain] == tuple(ids.tolist())
    program = fuse_lang.compile(text, base_dir=tmp_path)
    out = program.run()["E"]
    got = {(int(ids[a]), int(ids[b])) for a, b in zip(*sp.coo_array(out).coords)}
    assert {tuple(e) for e in edges.tolist()} == got


def test_queries_of_a_3_ary_sparse_relation(join3):
    text = JOIN3 + "H(x, f, z)?\nH(x, F1, z)?\nH(N41, f, z)?\n"
    fast = fuse_lang.compile(text, base_dir=join3, representation={"A": "sparse", "H": "sparse"})
    slow = fuse_lang.compile(text, base_dir=join3, representation={"A": "dense", "H": "dense"})
    got = fast.execute().queries
    want = slow.execute().queries
    for mine, theirs in zip(got, want):
        assert set(mine.tuples) == set(theirs.tuples), mine.text
        assert mine.free == theirs.free
    assert sp.issparse(got[0].value) and got[0].value.ndim == 3
    assert got[0].tuples and got[1].tuples and got[2].tuples


def test_fuse_run_prints_a_3_ary_sparse_output(join3):
    program = join3 / "j.fuse"
    program.write_text(JOIN3)
    run = [sys.executable, "-m", "fuse_lang.cli", "run", str(program), "--representation",
           "A=sparse", "--representation", "H=sparse"]
    text = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = next(k for k, x in enumerate(lines) if x.startswith("H "))
    count = int(lines[at].split()[1])  # `H  N tuples`, then its first tuples of values
    assert lines[at] == f"H  {count} tuples" and count > 0
    assert lines[at + 1].startswith("  (N") and lines[at + 1].count(", ") == 2
    js = subprocess.run(run + ["--format", "json"], capture_output=True, text=True, timeout=120)
    assert js.returncode == 0, js.stderr
    h = json.loads(js.stdout)["outputs"]["H"]
    assert h["representation"] == "sparse" and h["count"] == count == len(h["tuples"])
    assert all(len(t) == 3 and all(isinstance(v, str) for v in t) for t in h["tuples"])


@pytest.mark.parametrize("negated", ["not R(x, y, z)", "(1 - R(x, y, z))",
                                     "(1 - step(R(x, y, z)))"])
def test_one_minus_a_sparse_relation_never_makes_the_dense_complement(tmp_path, negated):
    """`(1 - R(...))` of a sparse relation runs as the anti-join of `not R(...)`
    (issue 27): a run's peak memory stays far below the n^3 cells of `1 - R`."""
    import tracemalloc
    n = 200  # 8,000,000 cells: the dense complement alone is 32 MB of float32
    rng = np.random.default_rng(3)
    rows = {tuple(r) for r in rng.integers(0, n, (600, 3))}
    r_rows = set(list(rows)[:300]) | {tuple(r) for r in rng.integers(0, n, (300, 3))}
    write(tmp_path, "a.tsv", [(f"X{x}", f"Y{y}", f"Z{z}") for x, y, z in rows])
    write(tmp_path, "r.tsv", [(f"X{x}", f"Y{y}", f"Z{z}") for x, y, z in r_rows])
    text = f'A(x, y, z) = "a.tsv"\nR(x, y, z) = "r.tsv"\nD(x, y, z) = A(x, y, z) {negated}\n' \
        "export D\n"
    program = fuse_lang.compile(text, base_dir=tmp_path)
    program.run()  # (the files read once)
    tracemalloc.start()
    try:
        out = program.run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n ** 3 * 4 // 8, f"peak {peak:,} bytes"
    assert sp.issparse(out["D"]) and out["D"].ndim == 3
    assert tuples(program, out)["D"] == {(f"X{x}", f"Y{y}", f"Z{z}") for x, y, z in rows - r_rows}
