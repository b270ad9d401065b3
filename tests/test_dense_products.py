"""Sparse relations that fill in: products of sparse relations run dense where
that is cheaper, a semi-naive relation that fills in goes on dense, and the
answers, the outputs' representation and the sinks' bytes are those of the
sparse and the dense runs (run/sparse/products.py, docs/scale.md)."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import scipy.sparse as sp

import fuse_lang
from fuse_lang import ExecutionConfig
from fuse_lang.cli.main import main

ANDERSEN = """
AddressOf(y, x) = "address_of.tsv"
Assign(y, z) = "assign.tsv"
Load(y, x) = "load.tsv"
Store(y, x) = "store.tsv"
PointsTo(y, x) = AddressOf(y, x)
PointsTo(y, x) = Assign(y, z) PointsTo(z, x)
PointsTo(y, w) = Load(y, x) PointsTo(x, z) PointsTo(z, w)
PointsTo(z, w) = Store(y, x) PointsTo(y, z) PointsTo(x, w)
"out.tsv" = PointsTo(x, y)
export PointsTo
"""
RELATIONS = ("AddressOf", "Assign", "Load", "Store", "PointsTo")


def _facts(folder, variables: int, facts: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for name in ("address_of", "assign", "load", "store"):
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, variables, size=(facts, 2))}
        # ids as a program's would be: scattered, not 0..n-1
        (folder / f"{name}.tsv").write_text("".join(f"{7 * a + 3}\t{7 * b + 3}\n"
                                                    for a, b in sorted(pairs)))


def _points_to_reference(folder) -> set[tuple[int, int]]:
    """Andersen's analysis by plain set iteration."""
    def read(name):
        return {tuple(map(int, line.split("\t")))
                for line in (folder / f"{name}.tsv").read_text().splitlines()}
    address_of, assign, load, store = (read(n) for n in ("address_of", "assign", "load",
                                                          "store"))
    points = set(address_of)
    while True:
        by_var: dict[int, set[int]] = {}
        for p, o in points:
            by_var.setdefault(p, set()).add(o)
        new = set(points)
        new |= {(y, x) for y, z in assign for x in by_var.get(z, ())}
        new |= {(y, w) for y, x in load for z in by_var.get(x, ()) for w in by_var.get(z, ())}
        new |= {(z, w) for y, x in store for z in by_var.get(y, ()) for w in by_var.get(x, ())}
        if new == points:
            return points
        points = new


@pytest.mark.parametrize("seed", [0, 1])
def test_a_points_to_relation_that_fills_in_goes_dense_and_answers_as_the_sets_do(
        tmp_path, seed):
    _facts(tmp_path, variables=120, facts=150, seed=seed)
    path = tmp_path / "andersen.fuse"
    path.write_text(ANDERSEN)
    result = fuse_lang.compile(
        path.read_text(), base_dir=tmp_path, representation={n: "sparse" for n in RELATIONS},
        config=ExecutionConfig(trace=True)).execute()
    want = _points_to_reference(tmp_path)
    written = {tuple(map(int, line.split("\t")))
               for line in (tmp_path / "out.tsv").read_text().splitlines()}
    assert written == want
    # a relation planned sparse is still given sparse, whatever its last rounds held
    assert sp.issparse(result.outputs["PointsTo"]) or hasattr(result.outputs["PointsTo"],
                                                              "tocoo")
    (fixpoint,) = result.trace["fixpoints"]
    held = [r["held"]["PointsTo"] for r in fixpoint["rounds"]]
    assert held[0] == "sparse" and held[-1] == "dense", held  # it filled in on the way
    dense_run = fuse_lang.compile(path.read_text(), base_dir=tmp_path,
                                  representation={n: "dense" for n in RELATIONS}).execute()
    np.testing.assert_array_equal(np.asarray(result.outputs["PointsTo"].todense()),
                                  dense_run.outputs["PointsTo"])


def test_the_trace_shows_how_each_round_held_the_relation(tmp_path):
    _facts(tmp_path, variables=120, facts=150, seed=0)
    (tmp_path / "andersen.fuse").write_text(ANDERSEN)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["run", "--trace", str(tmp_path / "andersen.fuse")]
                    + [f"--representation={n}=sparse" for n in RELATIONS])
    assert code == 0
    text = out.getvalue()
    assert "iteration  facts added  ms" in text and "held" in text
    lines = text[text.index("trace: fixpoint of PointsTo"):].splitlines()
    assert lines[3].split()[-1] == "sparse" and "dense" in text
    # per rule over all rounds: its line, whose new facts it joined, and its products
    rules = text[text.index("trace: rules of PointsTo"):].splitlines()
    assert rules[1].split() == ["line", "new", "facts", "of", "runs", "joined", "produced",
                                "ms", "products"]
    lines_seen = {int(row.split()[0]) for row in rules[3:] if row.strip()}
    assert lines_seen == {7, 8, 9}  # the three recursive rules of ANDERSEN (line 1 is empty)


def test_the_trace_records_each_rule_of_each_round(tmp_path):
    _facts(tmp_path, variables=120, facts=150, seed=0)
    result = fuse_lang.compile(
        ANDERSEN, base_dir=tmp_path, representation={n: "sparse" for n in RELATIONS},
        config=ExecutionConfig(trace=True)).execute()
    (fixpoint,) = result.trace["fixpoints"]
    first = fixpoint["rounds"][0]["rules"]
    # round 1 joins the first facts into each recursive rule: the Load and Store
    # rules twice (one per PointsTo they read)
    assert sorted(r["line"] for r in first) == [7, 8, 8, 9, 9]
    assert all(r["delta_of"] == "PointsTo" and r["delta_tuples"] > 0 for r in first)
    kinds = {kind for entry in fixpoint["rounds"] for r in entry["rules"] for kind in r["products"]}
    assert "dense blocks" in kinds and kinds <= {"sparse", "sparse x dense", "dense",
                                                 "dense blocks"}
    # what the rules produced covers what each round added
    for entry in fixpoint["rounds"]:
        assert sum(r["tuples"] for r in entry["rules"]) >= entry["facts_added"]


@pytest.mark.parametrize("density", [0.02, 0.4])
def test_numeric_chains_of_sparse_tensors_equal_the_dense_einsum(density):
    """Weighted (not 0/1) chains: the dense product keeps the numbers' type, the
    chain's order does not change the sum."""
    rng = np.random.default_rng(3)
    shapes = {"A": (60, 50), "B": (50, 70), "C": (70, 40)}
    arrays = {n: np.where(rng.random(s) < density, rng.random(s), 0.0)
              for n, s in shapes.items()}
    text = "\n".join(f"{n}[i, j] = const({arrays[n].tolist()})" for n in shapes) + \
        "\nY[i, l] = A[i, j] B[j, k] C[k, l]\nexport Y\n"
    sparse_run = fuse_lang.compile(
        text, representation={"A": "sparse", "B": "sparse", "C": "sparse"},
        precision="fp64").execute()
    want = arrays["A"] @ arrays["B"] @ arrays["C"]
    got = sparse_run.outputs["Y"]
    got = got.toarray() if hasattr(got, "toarray") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


CSPA = """
Assign(x, y) = "assign.tsv"
Dereference(x, y) = "dereference.tsv"
ValueFlow(y, x) = Assign(y, x)
ValueFlow(x, y) = Assign(x, z) MemoryAlias(z, y)
ValueFlow(x, y) = ValueFlow(x, z) ValueFlow(z, y)
MemoryAlias(x, w) = Dereference(y, x) ValueAlias(y, z) Dereference(z, w)
ValueAlias(x, y) = ValueFlow(z, x) ValueFlow(z, y)
ValueAlias(x, y) = ValueFlow(z, x) MemoryAlias(z, w) ValueFlow(w, y)
ValueFlow(x, x) = Assign(x, y)
ValueFlow(x, x) = Assign(y, x)
MemoryAlias(x, x) = Assign(y, x)
MemoryAlias(x, x) = Assign(x, y)
export ValueFlow, MemoryAlias, ValueAlias
"""


def test_diagonal_heads_of_large_relations_are_written_sparse_with_the_dense_answers(tmp_path):
    """`ValueFlow(x, x) = Assign(x, y)` on 400 variables: the diagonal is put
    on a sparse tensor (not scattered over 160,000 cells), and every relation
    equals the dense run's."""
    rng = np.random.default_rng(5)
    pairs = rng.integers(0, 400, size=(420, 2))
    (tmp_path / "assign.tsv").write_text("".join(f"v{a}\tv{b}\n" for a, b in pairs if a != b))
    (tmp_path / "dereference.tsv").write_text("".join(
        f"v{a}\tv{b}\n" for a, b in rng.integers(0, 400, size=(100, 2))))
    names = ("Assign", "Dereference", "ValueFlow", "MemoryAlias", "ValueAlias")
    runs = {form: fuse_lang.compile(CSPA, base_dir=tmp_path,
                                    representation={n: form for n in names}).execute()
            for form in ("sparse", "dense")}
    for name in ("ValueFlow", "MemoryAlias", "ValueAlias"):
        sparse_value = runs["sparse"].outputs[name]
        assert hasattr(sparse_value, "tocoo"), name
        np.testing.assert_array_equal(sparse_value.toarray(), runs["dense"].outputs[name])
    flow = runs["sparse"].outputs["ValueFlow"]
    assert flow.diagonal().sum() > 0  # the diagonal heads wrote their facts


def test_a_diagonal_head_over_symbols_holds_exactly_the_values_present(tmp_path):
    people = [f"p{k}" for k in range(300)]
    (tmp_path / "person.tsv").write_text("".join(f"{p}\n" for p in people))
    text = 'Person(x) = "person.tsv"\nKnows(x, y) = "knows.tsv"\n' \
        "Same(x, x) = Person(x)\nSame(x, y) = Knows(x, y)\n" \
        '"same.tsv" = Same(x, y)\n'
    (tmp_path / "knows.tsv").write_text("p1\tp2\np7\tp3\n")
    fuse_lang.compile(text, base_dir=tmp_path, representation={"Same": "sparse"}).execute()
    got = {tuple(line.split("\t")) for line in (tmp_path / "same.tsv").read_text().splitlines()}
    assert got == {(p, p) for p in people} | {("p1", "p2"), ("p7", "p3")}
