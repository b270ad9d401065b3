"""Sparse values in files (docs/scale.md, "Sparse files"): sinks and `fuse run
--out` keep a sparse value sparse (scipy.sparse's `.npz`, or `.tsv` tuples); a
scipy.sparse `.npz` is a source whose header alone gives the checker its shape
and the planner its count, loaded straight into the sparse form; query answers
are read off the non-zeros.  Through `fuse_lang.compile(...).run()`,
`fuse_lang.analyze`, and `fuse` (`fuse_lang.cli.main`).  A conformance module
(tests/conftest.py): each NumPy run here runs again on torch and jax."""
from __future__ import annotations

import dataclasses
import json
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fuse_lang
from fuse_lang import FuseError
from fuse_lang.cli import main
from fuse_lang.ide.run_summary import summarize_array
from fuse_lang.io.array_values import by_value
from fuse_lang.plan.representation import representations
from fuse_lang.run.outputs import tensor_axes

CLOSURE = """
Edge(x,y) = "edge.tsv"
Reach(x,y) = Edge(x,y)
Reach(x,z) = Reach(x,y) Edge(y,z)
export Reach
"""
SPARSE = {"Edge": "sparse", "Reach": "sparse"}
TWO_STEPS = CLOSURE.replace("Reach(x,y) Edge(y,z)", "Edge(x,y) Edge(y,z)")
QUERIES = "Reach(0, y)?\nReach(x, 7)?\nReach(3, 9)?\nReach(x, y)?\n"
# the second program of a round trip: the closure read back from its .npz
READ_BACK = 'Reach(x,y) = "reach.npz"\n' + QUERIES + "export Reach\n"


def edges_of(n: int, m: int, seed: int = 0, block: int = 10) -> np.ndarray:
    """A DAG whose edges stay inside blocks of `block` nodes (its closure stays
    sparse too), and the edge (0, n-1) that fixes the extent."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, size=m)
    v = u // block * block + rng.integers(0, block, size=m)
    keep = (u != v) & (v < n)
    pairs = np.stack([np.minimum(u, v)[keep], np.maximum(u, v)[keep]], 1)
    return np.unique(np.concatenate([pairs, [[0, n - 1]]]), axis=0)


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    edges = edges_of(600, 840)  # 360,000 cells, ~800 edges: planned sparse
    (tmp_path / "edge.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in edges))
    return tmp_path


def dense(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def test_a_sparse_export_round_trips_through_npz(graph):
    first = fuse_lang.compile(CLOSURE + '"reach.npz" = Reach(x,y)\n' + QUERIES,
                              base_dir=graph).execute()
    assert sp.issparse(first.outputs["Reach"])
    stored = sp.load_npz(graph / "reach.npz")  # scipy's own format, indexed by node id
    first_analysis = first.plan.analysis
    np.testing.assert_array_equal(stored.toarray(), by_value(
        "Reach", first.outputs["Reach"], tensor_axes(first_analysis, "Reach")).toarray())
    program = fuse_lang.compile(READ_BACK, base_dir=graph)
    chosen = representations(program.analysis)["Reach"]
    assert chosen.kind == "sparse" and chosen.nonzeros == stored.nnz
    assert "sparse file header" in chosen.reason
    second = program.execute()
    assert sp.issparse(second.outputs["Reach"])
    np.testing.assert_array_equal(second.outputs["Reach"].toarray(), stored.toarray())
    for got, want in zip(second.queries, first.queries):
        assert got.tuples == want.tuples and got.free == want.free, got.text
    assert sp.issparse(second.queries[3].value)  # `Reach(x, y)?`: never densified


@pytest.mark.reference_only  # runs the CLI on each backend itself
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_fuse_run_out_round_trip_on_every_backend(tmp_path, backend, capsys):
    if backend != "numpy":
        pytest.importorskip(backend)
    edges = edges_of(80, 110)  # small, kept sparse as asked; one join, no recursion (eager
    # jax compiles per padded size, each round of a closure another: a minute here)
    (tmp_path / "edge.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in edges))
    (tmp_path / "closure.fuse").write_text(TWO_STEPS + "Reach(0, y)?\nReach(x, 7)?\n"
                                           '"sink.npz" = Reach(x,y)\n"sink.tsv" = Reach(x,y)\n')
    (tmp_path / "back.fuse").write_text(READ_BACK)
    eager = ["--backend", backend, "--no-compile"] if backend != "numpy" else []
    sparse = ["--representation", "Edge=sparse", "--representation", "Reach=sparse"]
    assert main(["run", str(tmp_path / "closure.fuse"), *eager, *sparse, "--out",
                 str(tmp_path / "reach.npz"), "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["outputs"]["Reach"]["representation"] == "sparse"
    with zipfile.ZipFile(tmp_path / "reach.npz") as archive:  # sparse, not N x N
        assert "indptr.npy" in archive.namelist()
    out = sp.load_npz(tmp_path / "reach.npz")  # the sinks hold the same tuples
    assert (sp.load_npz(tmp_path / "sink.npz") != out).nnz == 0
    coo = out.tocoo()
    assert (tmp_path / "sink.tsv").read_text() == "".join(
        f"{i}\t{j}\n" for i, j in sorted(zip(coo.row.tolist(), coo.col.tolist())))
    assert main(["run", str(tmp_path / "back.fuse"), *eager, "--representation",
                 "Reach=sparse", "--format", "json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["outputs"]["Reach"]["count"] == first["outputs"]["Reach"]["count"]
    assert [q["tuples"] for q in second["queries"][:2]] == \
        [q["tuples"] for q in first["queries"]]


def test_check_reads_only_the_header(tmp_path):
    n, m = 200_000, 400_000
    rng = np.random.default_rng(1)
    matrix = sp.csr_array((np.ones(m, np.float32), (rng.integers(0, n, m),
                                                    rng.integers(0, n, m))), shape=(n, n))
    sp.save_npz(tmp_path / "edges.npz", matrix, compressed=False)
    text = 'R(x,y) = "edges.npz"\nS(x,z) = R(x,y) R(y,z)\nexport S\n'
    tracemalloc.start()
    analysis = fuse_lang.analyze(text, str(tmp_path / "p.fuse"), tmp_path)
    chosen = representations(analysis)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert not [d for d in analysis.diagnostics if d.severity.value == "error"]
    assert analysis.tensors["R"].shape == (n, n)
    assert chosen["R"].kind == "sparse" and chosen["R"].nonzeros == matrix.nnz
    assert peak < (tmp_path / "edges.npz").stat().st_size / 10  # the arrays were not read


def _archive(path: Path, **members) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in members.items():
            with archive.open(f"{name}.npy", "w") as fp:
                np.lib.format.write_array(fp, np.asarray(value), allow_pickle=False)


CSR = dict(format=np.bytes_(b"csr"), shape=np.array([3, 3]), data=np.ones(2, np.float32),
           indices=np.array([0, 2]), indptr=np.array([0, 1, 1, 2]))


@pytest.mark.parametrize("members, words", [
    ({"format": np.bytes_(b"dia"), "offsets": np.array([0])}, "format 'dia'"),
    ({"indptr": np.array([0, 2])}, "`indptr` array holds (2,)"),
    ({"indices": np.array([0.5, 1.0])}, "`indices` array holds"),
    ({"shape": np.array([3, 3, 3])}, "3-D sparse array"),
    ({"data": np.array(["a", "b"])}, "`data` array: it holds text"),
    ({"format": np.array(7)}, "`format` member is not a format name"),
])
def test_a_malformed_sparse_npz_is_a_diagnostic(tmp_path, members, words):
    _archive(tmp_path / "r.npz", **{**CSR, **members})
    analysis = fuse_lang.analyze('R(x,y) = "r.npz"\nexport R\n', str(tmp_path / "p.fuse"),
                                 tmp_path)
    found = [d for d in analysis.diagnostics if d.code == "unreadable-source"]
    assert found and words in found[0].message, [d.message for d in analysis.diagnostics]


def test_a_sparse_npz_whose_positions_leave_the_shape_is_refused_at_run(tmp_path, capsys):
    _archive(tmp_path / "r.npz", **{**CSR, "indices": np.array([0, 5])})
    (tmp_path / "p.fuse").write_text('R(x,y) = "r.npz"\nexport R\n')
    assert main(["check", str(tmp_path / "p.fuse")]) == 0  # the header is sound
    with pytest.raises(FuseError, match="`indices` go outside the shape"):
        fuse_lang.compile('R(x,y) = "r.npz"\nexport R\n', base_dir=tmp_path).run()
    assert main(["run", str(tmp_path / "p.fuse")]) == 1
    assert "go outside the shape" in capsys.readouterr().err


def test_a_numeric_sparse_source_and_its_sinks(tmp_path):
    n = 400
    rng = np.random.default_rng(4)
    rows, cols = rng.integers(0, n, 300), rng.integers(0, n, 300)
    weights = sp.coo_array((rng.standard_normal(300).astype(np.float32), (rows, cols)),
                           shape=(n, n))
    sp.save_npz(tmp_path / "w.npz", weights)  # compressed, coo: read as CSR
    text = ('W[i,j] = "w.npz"\nV[i] = W[i,j]\n"w.tsv" = W[i,j]\n"w2.npz" = W[i,j]\n'
            '"wd.npy" = W[i,j]\nW[3, j]?\nW[i, j]?\nexport W, V\n')
    run = fuse_lang.compile(text, base_dir=tmp_path).execute()
    want = weights.toarray()
    assert sp.issparse(run.outputs["W"])
    np.testing.assert_allclose(run.outputs["W"].toarray(), want, rtol=1e-6)
    np.testing.assert_allclose(run.outputs["V"], want.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.queries[0].value, want[3], rtol=1e-6)  # the values, read off
    assert sp.issparse(run.queries[1].value)
    lines = (tmp_path / "w.tsv").read_text().splitlines()
    canonical = sp.csr_array(weights)
    assert len(lines) == canonical.nnz
    i, j, v = lines[0].split("\t")
    assert float(v) == pytest.approx(float(want[int(i), int(j)]))
    np.testing.assert_allclose(sp.load_npz(tmp_path / "w2.npz").toarray(), want, rtol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "wd.npy"), want, rtol=1e-6)  # dense format
    dense_run = fuse_lang.compile(text, base_dir=tmp_path, representation={"W": "dense"})
    np.testing.assert_allclose(dense_run.execute().outputs["V"], run.outputs["V"], rtol=1e-5,
                               atol=1e-5)


def test_symbols_go_to_tsv_tuples_and_back(tmp_path):
    facts = "".join(f"Link(N{k}, N{k + 1})\n" for k in range(40))
    text = facts + "Path(x,y) = Link(x,y)\nPath(x,z) = Path(x,y) Link(y,z)\n" \
        '"path.tsv" = Path(x,y)\nPath(N5, y)?\n'
    first = fuse_lang.compile(text, base_dir=tmp_path, representation={
        "Link": "sparse", "Path": "sparse"}).execute()
    lines = (tmp_path / "path.tsv").read_text().splitlines()
    assert lines[0] == "N0\tN1" and len(lines) == 41 * 40 // 2
    again = fuse_lang.compile('Path(x,y) = "path.tsv"\nPath(N5, y)?\n', base_dir=tmp_path,
                              representation={"Path": "sparse"}).execute()
    assert again.queries[0].tuples == first.queries[0].tuples


def test_a_bare_query_of_a_sparse_relation_is_read_off(graph):
    text = CLOSURE + "Reach?\n"
    sparse_run = fuse_lang.compile(text, base_dir=graph, representation=SPARSE).execute()
    dense_run = fuse_lang.compile(text, base_dir=graph, representation={
        "Edge": "dense", "Reach": "dense"}).execute()
    got, want = sparse_run.queries[0], dense_run.queries[0]
    assert sp.issparse(got.value) and got.free == want.free
    assert got.tuples == want.tuples and got.tuples
    mine, theirs = summarize_array(got.value), summarize_array(np.asarray(want.value))
    # (the sparse summary's std is computed from its non-zeros: equal to rounding)
    assert mine.std == pytest.approx(theirs.std, rel=1e-12)
    assert dataclasses.replace(mine, std=theirs.std) == theirs


@pytest.mark.reference_only  # a compiled jax run keeps it dense: the memory guard refuses
def test_a_huge_sparse_value_is_never_written_dense(tmp_path):
    # an axis of a million positions (`axis`: positional; facts' integers are positions)
    text = 'axis x = 1000000, y = 1000000\nEdge(0, 999999)\nEdge(999999, 7)\n' \
        '"edge.npy" = Edge(x,y)\n"edge.tsv" = Edge(x,y)\n'
    program = fuse_lang.compile(text, base_dir=tmp_path, representation={"Edge": "sparse"})
    with pytest.raises(FuseError, match="dense form of a sparse value"):
        program.run()
    ok = fuse_lang.compile(text.replace('"edge.npy" = Edge(x,y)\n', ""), base_dir=tmp_path,
                           representation={"Edge": "sparse"})
    ok.run()
    assert (tmp_path / "edge.tsv").read_text() == "0\t999999\n999999\t7\n"


def test_out_to_a_folder_and_to_one_file(graph, capsys):
    program = CLOSURE.replace("export Reach", "N[x] = Reach(x,y)\nexport Reach, N")
    (graph / "p.fuse").write_text(program)
    assert main(["run", str(graph / "p.fuse"), "--out", str(graph / "res") + "/"]) == 0
    reach = sp.load_npz(graph / "res" / "Reach.npz")
    np.testing.assert_array_equal(np.load(graph / "res" / "N.npy"), reach.sum(axis=1))
    capsys.readouterr()
    assert main(["run", str(graph / "p.fuse"), "--out", str(graph / "both.npz")]) == 2
    err = capsys.readouterr().err
    assert "Reach is sparse" in err and "folder" in err
    assert not (graph / "both.npz").exists()
    dense = ["--representation", "Edge=dense", "--representation", "Reach=dense"]
    assert main(["run", str(graph / "p.fuse"), *dense, "--out", str(graph / "d.npz")]) == 0
    with np.load(graph / "d.npz") as archive:  # all dense: one archive by name, as before
        assert sorted(archive.files) == ["N", "Reach"]


def test_a_sparse_npz_as_an_input(graph, capsys):
    (graph / "p.fuse").write_text(CLOSURE)
    edges = np.loadtxt(graph / "edge.tsv", dtype=np.int64)
    sp.save_npz(graph / "given.npz", sp.csr_array(
        (np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(600, 600)))
    assert main(["run", str(graph / "p.fuse"), "--input", f"Edge={graph / 'given.npz'}",
                 "--out", str(graph / "r.npz")]) == 0
    program = fuse_lang.compile(CLOSURE, base_dir=graph)  # Edge from edge.tsv: node ids
    want = by_value("Reach", program.run()["Reach"], tensor_axes(program.analysis, "Reach"))
    np.testing.assert_array_equal(sp.load_npz(graph / "r.npz").toarray(), dense(want))


def test_pictures_of_sparse_results(graph):
    pytest.importorskip("matplotlib")
    (graph / "p.fuse").write_text(CLOSURE)
    assert main(["run", str(graph / "p.fuse"), "--out", str(graph / "reach.npz"),
                 "--plot", str(graph / "pics")]) == 0
    assert main(["plot", str(graph / "reach.npz"), "--out", str(graph / "again")]) == 0
    assert sorted(p.name for p in (graph / "pics").iterdir()) and \
        [p.name for p in (graph / "again").iterdir()] == ["reach.svg"]


@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_a_sparse_npz_relation_with_facts(tmp_path, kind):
    sp.save_npz(tmp_path / "r.npz", sp.csr_array(np.array([[0, 2.0, 0], [0, 0, -1.0],
                                                           [0, 0, 0]])))
    text = 'R(x,y) = "r.npz"\nR(2, 0)\nR(x, y)?\nR(1, 2)?\nexport R\n'
    run = fuse_lang.compile(text, base_dir=tmp_path, representation={"R": kind}).execute()
    np.testing.assert_array_equal(dense(run.outputs["R"]), [[0, 1, 0], [0, 0, 0], [1, 0, 0]])
    assert run.queries[0].tuples == [(0, 1), (2, 0)] and run.queries[1].tuples == []
