"""Sparse relations (docs/scale.md, "Sparse relations"): the plan keeps large,
low-density 2-D tensors as scipy.sparse on NumPy; every result equals the
dense run exactly.  Through the public entry points: `fuse_lang.compile(...)`
with `representation=`, and `fuse run --representation`.  A conformance module
(tests/conftest.py): each NumPy run here is run again on torch and jax (which
keep every tensor dense) and must agree."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fuse_lang
from fuse_lang import FuseError
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
DENSE = {"Edge": "dense", "Reach": "dense"}


def random_dag(n: int, m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, size=(2, m))
    keep = u != v
    return np.unique(np.stack([np.minimum(u, v)[keep], np.maximum(u, v)[keep]], 1), axis=0)


def write_edges(folder: Path, edges: np.ndarray, name: str = "edge.tsv") -> None:
    (folder / name).write_text("".join(f"{a}\t{b}\n" for a, b in edges))


def dense(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def by_id(program, out, name: str = "Reach"):
    """A run's output laid out by node id (the domain numbers the ids it holds:
    LANGUAGE.md §14), as an array file of it holds it (io.array_values)."""
    return dense(by_value(name, out, tensor_axes(program.analysis, name)))


# node ids as positions of an axis of N (`axis`: a positional domain, LANGUAGE.md §14)
def positional(n: int) -> str:
    return f"axis x = {n}, y = {n}, z = {n}\n" + CLOSURE


def hand_closure(edges: np.ndarray, n: int) -> np.ndarray:
    edge = np.zeros((n, n), dtype=bool)
    edge[edges[:, 0], edges[:, 1]] = True
    reach = edge.copy()
    while True:
        grown = reach | ((reach.astype(np.float32) @ edge.astype(np.float32)) > 0)
        if (grown == reach).all():
            return reach.astype(np.float32)
        reach = grown


@pytest.fixture
def graph(tmp_path: Path) -> tuple[Path, np.ndarray, int]:
    edges = random_dag(60, 90)
    write_edges(tmp_path, edges)
    return tmp_path, edges, int(edges.max()) + 1


def test_sparse_closure_equals_dense(graph):
    folder, edges, n = graph
    got = fuse_lang.compile(CLOSURE, base_dir=folder, representation=SPARSE).run()["Reach"]
    dense_program = fuse_lang.compile(CLOSURE, base_dir=folder, representation=DENSE)
    want = dense_program.run()["Reach"]
    assert sp.issparse(got) and isinstance(want, np.ndarray)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got.toarray(), want)
    np.testing.assert_array_equal(by_id(dense_program, want), hand_closure(edges, n))


def test_planner_keeps_a_large_low_density_relation_sparse(tmp_path):
    edges = random_dag(1100, 1500, seed=3)
    edges = np.concatenate([edges, [[1099, 1099]]])
    write_edges(tmp_path, edges)
    program = fuse_lang.compile(positional(1100), base_dir=tmp_path)  # 1.21M cells
    chosen = representations(program.analysis)
    assert chosen["Edge"].kind == chosen["Reach"].kind == "sparse"
    assert chosen["Edge"].nonzeros == len(edges)
    got = program.run()["Reach"]
    assert sp.issparse(got)
    np.testing.assert_array_equal(got.toarray(), hand_closure(edges, 1100))


def test_small_or_dense_relations_stay_dense(graph, tmp_path):
    folder, _, _ = graph
    chosen = representations(fuse_lang.analyze(CLOSURE, str(folder / "c.fuse"), folder))
    assert chosen["Edge"].kind == "dense" and "small" in chosen["Edge"].reason
    out = fuse_lang.compile(CLOSURE, base_dir=folder).run()["Reach"]
    assert isinstance(out, np.ndarray)


def test_facts_load_sparse_and_queries_read_off_the_sparse_form(tmp_path):
    text = """
Parent(Alice, Bob)
Parent(Bob, Carol)
Parent(Carol, Dan)
Parent(Eve, Bob)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Alice, y)?
Ancestor(x, Dan)?
Ancestor(x, y)?
Ancestor(Alice, Dan)?
Ancestor(Dan, Alice)?
Ancestor(x, x)?
export Ancestor
"""
    sparse_run = fuse_lang.compile(text, representation={"Parent": "sparse",
                                                         "Ancestor": "sparse"}).execute()
    dense_run = fuse_lang.compile(text).execute()
    np.testing.assert_array_equal(sparse_run.outputs["Ancestor"].toarray(),
                                  dense_run.outputs["Ancestor"])
    for got, want in zip(sparse_run.queries, dense_run.queries):
        assert got.tuples == want.tuples, got.text
        assert got.free == want.free, got.text
        np.testing.assert_array_equal(dense(got.value), want.value)
    assert sparse_run.queries[0].tuples == [("Bob",), ("Carol",), ("Dan",)]


def test_sinks_of_a_sparse_tensor(graph):
    folder, _, _ = graph
    text = CLOSURE + '"reach.tsv" = Reach(x,y)\n"reach.npz" = Reach(x,y)\n' \
        '"row.json" = Reach(0,y)\n'
    fuse_lang.compile(text, base_dir=folder, representation=SPARSE).run()
    sparse_tsv = (folder / "reach.tsv").read_text()
    sparse_row = (folder / "row.json").read_text()
    stored = sp.load_npz(folder / "reach.npz")
    fuse_lang.compile(text, base_dir=folder, representation=DENSE).run()
    assert sparse_tsv == (folder / "reach.tsv").read_text() and sparse_tsv
    assert sparse_row == (folder / "row.json").read_text()
    np.testing.assert_array_equal(stored.toarray(), np.load(folder / "reach.npz")["Reach"])


def test_embedding_joined_with_a_sparse_relation(graph):
    folder, _, n = graph
    emb = np.random.default_rng(2).standard_normal((n, 5)).astype(np.float32)
    np.save(folder / "emb.npy", emb)
    text = """
R(x,y) = "edge.tsv"
E[x,d] = "emb.npy"
Y[y,d] = R(x,y) E[x,d]
Z[x,d] = R(x,y) E[y,d]
S[x] = R(x,y)
B(x,z) = R(x,y) R(y,z) R(x,z)
export Y, Z, S, B
"""
    got = fuse_lang.compile(text, base_dir=folder, representation={"R": "sparse"}).run()
    want = fuse_lang.compile(text, base_dir=folder).run()
    for name in ("Y", "Z", "S", "B"):
        np.testing.assert_allclose(dense(got[name]), want[name], rtol=1e-6, atol=1e-6)


def test_sparse_given_input(graph):
    folder, edges, n = graph
    edge = sp.csr_array((np.ones(len(edges), np.float32), (edges[:, 0], edges[:, 1])),
                        shape=(n, n))
    sparse_out = fuse_lang.compile(CLOSURE, base_dir=folder, representation=SPARSE).run(
        inputs={"Edge": edge})["Reach"]
    dense_out = fuse_lang.compile(CLOSURE, base_dir=folder).run(inputs={"Edge": edge})["Reach"]
    np.testing.assert_array_equal(sparse_out.toarray(), dense_out)


@pytest.mark.parametrize("overrides, words", [
    ({"Nope": "sparse"}, "`Nope` is not a tensor"),
    ({"Edge": "compressed"}, "is not one of dense, sparse"),
])
def test_bad_overrides_are_refused(graph, overrides, words):
    folder, _, _ = graph
    with pytest.raises(FuseError, match=words):
        fuse_lang.compile(CLOSURE, base_dir=folder, representation=overrides)


def test_only_tensors_of_two_axes_or_more_are_sparse():
    # relations of 3 axes are kept sparse since issue 18 (tests/test_sparse_relations.py)
    with pytest.raises(FuseError, match="only tensors of 2 axes or more"):
        fuse_lang.compile("R(A)\nexport R", representation={"R": "sparse"})
    out = fuse_lang.compile("R(A, B, C)\nexport R", representation={"R": "sparse"}).run()
    assert sp.issparse(out["R"]) and out["R"].shape == (1, 1, 1) and out["R"].nnz == 1


def test_cli_representation(graph):
    folder, _, _ = graph
    program = folder / "closure.fuse"
    program.write_text(CLOSURE + "Reach(0, y)?\n")
    run = [sys.executable, "-m", "fuse_lang.cli", "run", str(program)]
    text = subprocess.run(run + ["--representation", "Edge=sparse", "--representation",
                                 "Reach=sparse"], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    reach_text = text.stdout.splitlines()
    count = int(reach_text[0].split()[1])  # a relation prints as its tuples: `Reach  N tuples`
    assert reach_text[0] == f"Reach  {count} tuples" and count > 20
    assert reach_text[21] == f"  ... and {count - 20} more"
    js = subprocess.run(run + ["--representation", "Reach=sparse", "--format", "json"],
                        capture_output=True, text=True, timeout=120)
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert data["outputs"]["Reach"]["representation"] == "sparse"
    dense_js = json.loads(subprocess.run(run + ["--format", "json"], capture_output=True,
                                         text=True, timeout=120).stdout)
    assert "representation" not in dense_js["outputs"]["Reach"]
    assert dense_js["outputs"]["Reach"]["tuples"] == data["outputs"]["Reach"]["tuples"]
    assert data["outputs"]["Reach"]["count"] == count == len(data["outputs"]["Reach"]["tuples"])
    assert data["queries"][0]["tuples"] == dense_js["queries"][0]["tuples"]
    bad = subprocess.run(run + ["--representation", "Reach"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "NAME=dense or NAME=sparse" in bad.stderr


def test_explain_and_hover_show_the_representation(tmp_path):
    edges = np.concatenate([random_dag(1100, 1500, seed=3), [[1099, 1099]]])
    write_edges(tmp_path, edges)
    program = tmp_path / "closure.fuse"
    program.write_text(positional(1100))
    text = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", str(program)],
                          capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert any(line.startswith("Storage") for line in lines)
    edge_row = next(line for line in lines if line.startswith("  Edge: sparse,"))
    assert f"~{len(edges):,} of 1,210,000 (file lines" in edge_row
    js = json.loads(subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain",
                                    "--format", "json", str(program)],
                                   capture_output=True, text=True, timeout=120).stdout)
    stored = {row[0]: row for row in js["representations"]}
    assert stored["Edge"][1:4] == ["sparse", len(edges), 1_210_000]
    assert stored["Reach"][1] == "sparse"

    from fuse_lang.ide.hover import hover_at

    source = positional(1100)
    analysis = fuse_lang.analyze(source, str(program), tmp_path)
    hover = hover_at(analysis, source.index("Reach"))
    assert "Stored **sparse**: ~" in hover.markdown
    small = fuse_lang.analyze("A[i] = const([1,2])\nexport A")
    assert "Stored **dense** (fewer than 2 axes)." in hover_at(small, 0).markdown


@pytest.mark.reference_only  # torch and jax keep relations dense: 4 TB, refused
def test_a_million_symbols_run_sparse_within_the_memory_guard():
    """1,000,000 x 1,000,000 cells: 4 TB dense (refused before anything runs), a
    few bytes sparse."""
    text = """axis x = 1000000, y = 1000000, z = 1000000
Edge(0, 1)
Edge(1, 2)
Edge(2, 999999)
Reach(x,y) = Edge(x,y)
Reach(x,z) = Reach(x,y) Edge(y,z)
Reach(0, y)?
Reach(x, 999999)?
"""
    result = fuse_lang.compile(text).execute()
    assert result.queries[0].tuples == [(1,), (2,), (999999,)]
    assert result.queries[1].tuples == [(0,), (1,), (2,)]
    with pytest.raises(FuseError, match="over the limit"):
        fuse_lang.compile(text, representation={"Edge": "dense", "Reach": "dense"}).run()


def test_closure_benchmark_runs_small():
    """benchmarks/closure_sparse.py end to end, tiny: it checks its results against
    the hand-written code and prints its ratios (no timing is asserted)."""
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "closure_sparse.py"
    proc = subprocess.run([sys.executable, str(script), "--small"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for label in ("run(Edge input)", "run(Edge file)", "peak memory",
                  "embedding join: sparse vs dense Fuse"):
        assert label in proc.stdout, proc.stdout


# ---- torch (torch.sparse COO) and jax (BCOO): eager runs keep the plan's sparse tensors
def _framework(name: str):
    module = pytest.importorskip(name)
    if name == "torch":
        return lambda x: isinstance(x, module.Tensor) and x.layout == module.sparse_coo
    from jax.experimental import sparse as jsparse

    return lambda x: isinstance(x, jsparse.BCOO)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_framework_sparse_runs_equal_numpy(graph, backend):
    folder, edges, n = graph
    is_native_sparse = _framework(backend)
    emb = np.random.default_rng(2).standard_normal((n, 5)).astype(np.float32)
    np.save(folder / "emb.npy", emb)
    text = CLOSURE + """E[x,d] = "emb.npy"
Y[y,d] = Reach(x,y) E[x,d]
Z[x,d] = Edge(x,y) E[y,d]
S[x] = Reach(x,y)
B(x,z) = Edge(x,y) Edge(y,z) Reach(x,z)
W[x,z] = Reach(x,z) E[x,0]
Reach(0, y)?
Reach(x, 5)?
Reach(0, 5)?
export Y, Z, S, B, W
"""
    stored = {**SPARSE, "B": "sparse"}
    want = fuse_lang.compile(text, base_dir=folder, representation=stored).execute()
    program = fuse_lang.compile(text, base_dir=folder, representation=stored, backend=backend,
                                compiled=False)
    native = program.execute(native=True).outputs
    assert is_native_sparse(native["Reach"]) and is_native_sparse(native["B"])
    got = program.execute()
    assert sp.issparse(got.outputs["Reach"])  # handed out as scipy.sparse, as on NumPy
    np.testing.assert_array_equal(got.outputs["Reach"].toarray(), hand_closure(edges, n))
    for name in ("Reach", "B", "S"):  # counts and 0/1: exactly NumPy's
        np.testing.assert_array_equal(dense(got.outputs[name]), dense(want.outputs[name]))
    for name in ("Y", "Z", "W"):  # float sums, in another order
        np.testing.assert_allclose(dense(got.outputs[name]), dense(want.outputs[name]),
                                   rtol=1e-6, atol=1e-6)
    for mine, theirs in zip(got.queries, want.queries):
        assert mine.tuples == theirs.tuples, mine.text
        np.testing.assert_array_equal(dense(mine.value), dense(theirs.value))


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_framework_sparse_facts_inputs_and_sinks(graph, backend):
    folder, edges, n = graph
    is_native_sparse = _framework(backend)
    edge = sp.csr_array((np.ones(len(edges), np.float32), (edges[:, 0], edges[:, 1])),
                        shape=(n, n))
    program = fuse_lang.compile(CLOSURE + '"reach.tsv" = Reach(x,y)\n', base_dir=folder,
                                representation=SPARSE, backend=backend, compiled=False)
    out = program.execute(inputs={"Edge": edge}, native=True).outputs["Reach"]
    assert is_native_sparse(out)
    reach = hand_closure(edges, n)
    assert (folder / "reach.tsv").read_text() == "".join(
        f"{i}\t{j}\n" for i, j in np.argwhere(reach > 0))
    facts = "Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Eve, Bob)\n" \
        "Anc(x,y) = Parent(x,y)\nAnc(x,z) = Anc(x,y) Parent(y,z)\nAnc(x, Carol)?\nexport Anc\n"
    run = fuse_lang.compile(facts, representation={"Parent": "sparse", "Anc": "sparse"},
                            backend=backend, compiled=False).execute(native=True)
    assert is_native_sparse(run.outputs["Anc"])
    assert run.queries[0].tuples == [("Alice",), ("Bob",), ("Eve",)]


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_framework_sparse_counts_differences_and_demand_equal_numpy(tmp_path, backend):
    """Eager torch/jax sparse over more entries than one padded block (jax pads to
    1024 and beyond): path counts (values above 1), a difference (values below
    0), a closure, and a demand-mode (magic-set guarded) closure, all NumPy's."""
    is_native_sparse = _framework(backend)
    n = 1500
    write_edges(tmp_path, random_dag(n, 3000, seed=4))
    text = CLOSURE + "C[x,z] = Edge(x,y) Edge(y,z)\nD[x,y] = C[x,y] - Reach(x,y)\n" \
        "export C, D\n"
    stored = {**SPARSE, "C": "sparse", "D": "sparse"}
    want = fuse_lang.compile(text, base_dir=tmp_path, representation=stored).execute()
    program = fuse_lang.compile(text, base_dir=tmp_path, representation=stored,
                                backend=backend, compiled=False)
    assert is_native_sparse(program.execute(native=True).outputs["D"])
    got = program.execute()
    assert dense(want.outputs["C"]).max() > 1 and dense(want.outputs["D"]).min() < 0
    for name in ("Reach", "C", "D"):
        np.testing.assert_array_equal(dense(got.outputs[name]), dense(want.outputs[name]))
    rng = np.random.default_rng(5)
    (tmp_path / "parent.tsv").write_text("".join(
        f"P{rng.integers(0, max(k // 2, 1)) if k > 1 else 0}\tP{k}\n" for k in range(1, n)))
    asked = 'Parent(x,y) = "parent.tsv"\nAnc(x,y) = Parent(x,y)\n' \
        "Anc(x,z) = Anc(x,y) Parent(y,z)\nAnc(P1, x)?\n"
    config = fuse_lang.ExecutionConfig(mode="demand")
    want = fuse_lang.compile(asked, base_dir=tmp_path, config=config).execute()
    got = fuse_lang.compile(asked, base_dir=tmp_path, config=config, backend=backend,
                            compiled=False).execute()
    assert len(want.queries[0].tuples) > 100
    assert got.queries[0].tuples == want.queries[0].tuples


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_compiled_framework_runs_keep_relations_dense(graph, backend):
    """A compiled run (jax.jit, torch.compile) is dense: a relation's non-zeros
    change every round, and a graph's shapes are fixed (docs/scale.md)."""
    folder, edges, n = graph
    pytest.importorskip(backend)
    program = fuse_lang.compile(CLOSURE, base_dir=folder, representation=SPARSE,
                                backend=backend, compiled=True)
    out = program.run()["Reach"]
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(by_id(program, out), hand_closure(edges, n))


def test_closure_benchmark_runs_small_on_torch():
    pytest.importorskip("torch")
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "closure_sparse.py"
    proc = subprocess.run([sys.executable, str(script), "--small", "--backend", "torch"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torch sparse vs scipy hand-written" in proc.stdout, proc.stdout


CHAIN_RULES = "Reach(x,y) = Edge(x,y)\nReach(x,z) = Reach(x,y) Edge(y,z)\nexport Reach\n"


def chain(edges: int) -> str:
    return "".join(f"Edge(N{k}, N{k + 1})\n" for k in range(edges)) + CHAIN_RULES


def chain_closure_seconds(edges: int) -> float:
    """CPU seconds of the best of two sparse runs (each checked complete)."""
    program = fuse_lang.compile(chain(edges), representation=SPARSE)
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        reach = program.run()["Reach"]
        best = min(best, time.process_time() - started)
        assert reach.nnz == edges * (edges + 1) // 2
    return best


@pytest.mark.reference_only  # timing only; the dense comparison is the next test's
def test_a_chain_closure_costs_about_its_facts_not_rounds_times_facts():
    """A chain of N edges takes N rounds and derives N^2/2 facts: each round must
    cost about its new facts, not every fact known (N^3 in all, 64x for 4x the
    edges).  Ratios only, with room for a loaded machine: under 32x."""
    small, big = chain_closure_seconds(300), chain_closure_seconds(1200)
    assert big / small < 32, (small, big)


def test_sparse_chain_closure_equals_dense():
    dense = fuse_lang.compile(chain(300), representation=DENSE).run()["Reach"]
    sparse_run = fuse_lang.compile(chain(300), representation=SPARSE).run()["Reach"]
    assert sp.issparse(sparse_run)
    assert np.array_equal(sparse_run.toarray(), np.asarray(dense))


@pytest.mark.reference_only  # a million symbols: torch and jax would hold it dense
def test_chain_closure_in_a_huge_domain_uses_sorted_keys():
    """10^12 cells: the known facts are looked up in their CSR levels, not a bitmap."""
    text = "axis x = 1000000, y = 1000000, z = 1000000\n" + \
        "".join(f"Edge({k}, {k + 1})\n" for k in range(150)) + "Edge(150, 999999)\n" + CHAIN_RULES
    reach = fuse_lang.compile(text).run()["Reach"]
    nodes = list(range(151)) + [999999]
    expected = {(nodes[i], nodes[j]) for i in range(len(nodes)) for j in range(i + 1, len(nodes))}
    coo = reach.tocoo()
    assert set(zip(coo.row.tolist(), coo.col.tolist())) == expected
    assert reach.nnz == len(expected)


@pytest.mark.reference_only  # spies on the NumPy engine's lookups
def test_new_facts_looked_up_in_the_known_levels_equal_dense(monkeypatch):
    """With the whole-subtraction shortcut off, each round's facts are looked up
    row by row in the known facts' CSR levels: shortcuts make many found facts
    known already; the closure equals the dense run's."""
    import fuse_lang.run.sparse.csr as sparse_module
    from fuse_lang.run.fixpoint import closure

    lookups = []
    looked_up = sparse_module._in_levels
    monkeypatch.setattr(sparse_module, "SUBTRACT_BELOW", 0)
    monkeypatch.setattr(closure, "SEARCH_AFTER", 10**9)  # every round a round
    monkeypatch.setattr(sparse_module, "_in_levels",
                        lambda *args: lookups.append(1) or looked_up(*args))
    shortcuts = "".join(f"Edge(N{k}, N{k + 7})\n" for k in range(0, 120, 5))
    text = chain(120) + shortcuts
    got = fuse_lang.compile(text, representation=SPARSE).run()["Reach"]
    want = fuse_lang.compile(text, representation=DENSE).run()["Reach"]
    assert lookups, "no round looked its facts up in the known levels"
    assert sp.issparse(got)
    np.testing.assert_array_equal(got.toarray(), np.asarray(want))


@pytest.mark.reference_only  # tracemalloc of NumPy's and scipy's arrays
def test_closure_peak_memory_stays_near_the_hand_written_loop(tmp_path):
    """The known facts are looked up in their own CSR arrays, not in a copy of
    them: a closure's peak memory stays near a hand-written scipy.sparse loop's
    (a ratio in one process; 1.14 measured, 1.62 with a sorted-key copy)."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import closure_sparse
    from _common import peak_bytes

    n = 50_000
    edge = closure_sparse.random_dag(n, 2 * n)
    closure_sparse.write_tsv(tmp_path / "edge.tsv", edge, n)
    edge = closure_sparse.with_last_node(edge)
    program = fuse_lang.compile(CLOSURE, base_dir=tmp_path)
    engine = lambda: program.run(inputs={"Edge": edge})  # noqa: E731
    assert (engine()["Reach"] != closure_sparse.baseline(edge)).nnz == 0
    ratio = peak_bytes(engine) / peak_bytes(lambda: closure_sparse.baseline(edge))
    assert ratio < 1.3, ratio
