"""A second audit of sparse relations (issue 15; docs/scale.md, "Sparse relations"):
`representation=` forced sparse on every kind of tensor equals the dense run on
numpy, torch and jax (eager); memory follows the facts, not the domain; `fuse
explain --representation` shows the storage it gives; a compiled run that the
memory guard refuses names the tensors it kept dense although planned sparse.
Through `fuse_lang.compile(...).run()` and the `fuse` command."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fuse_lang
from fuse_lang.cli import main

NUMBERS = """
W[i,j] = const([[-1.5, -2, -3], [-4, 0, -6], [0, -1, -2]])
V[i,j] = W[i,j] (-1)
Hi[i] max= W[i,j]
Lo[i] min= V[i,j]
Av[i] avg= W[i,j]
M[i,k] max= W[i,j] W[j,k]
P[i,k] = W[i,j] V[j,k]
export Hi, Lo, Av, M, P, V
"""

RELATIONS = """
Edge(A,B)
Edge(B,C)
Edge(C,D)
Edge(A,C)
Edge(A,C)
Reach(x,y) max= Edge(x,y)
Reach(x,z) max= Reach(x,y) Edge(y,z)
Low[x,y] min= Edge(x,y) (-3)
Node(x) = Edge(x,y)
Node(y) = Edge(x,y)
Un(x,y) = Node(x) Node(y) not Reach(x,y)
T(A,B,C)
T(B,C,D)
T(A,A,A)
Q(A,B,C,D)
Q(B,C,D,A)
J(x,y,z,w) = T(x,y,z) Q(y,z,w,v)
K(x) = Node(x) T(x,y,z)
Nothing(x,y) = Edge(x,y) Un(x,y)
export Reach, Low, Un, J, K, Q, Nothing
"""
SPARSE = {"numbers": ["W", "V", "M", "P"],
          "relations": ["Edge", "Reach", "Low", "Un", "T", "Q", "J", "Nothing"]}
EXPECTED = {  # the answers by hand, so that a sparse run equal to a wrong dense one fails
    "Reach": {("A", "B"), ("A", "C"), ("A", "D"), ("B", "C"), ("B", "D"), ("C", "D")},
    "J": {("A", "B", "C", "D")},
    "Nothing": set(),
}


def dense(value) -> np.ndarray:
    return value.toarray() if sp.issparse(value) else np.asarray(value)


def tuples(program, name: str, value) -> set:
    analysis = program.analysis
    symbols = [analysis.domain_symbols.get(a.domain) for a in analysis.tensors[name].axes]
    return {tuple(symbols[k][int(x)] for k, x in enumerate(c))
            for c in np.argwhere(dense(value) > 0)}


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("which", ["numbers", "relations"])
def test_forced_sparse_equals_the_dense_run(backend, which):
    pytest.importorskip(backend)
    text = NUMBERS if which == "numbers" else RELATIONS
    plain = fuse_lang.compile(text, backend=backend, compiled=False)
    forced = fuse_lang.compile(text, backend=backend, compiled=False,
                               representation={n: "sparse" for n in SPARSE[which]})
    want, got = plain.run(), forced.run()
    assert sorted(want) == sorted(got)
    for name in want:
        assert dense(got[name]).shape == dense(want[name]).shape, name
        assert np.array_equal(dense(got[name]), dense(want[name])), name
        if name in SPARSE[which] and len(forced.analysis.tensors[name].shape) == 2:
            assert sp.issparse(got[name]), name  # kept sparse, handed back sparse
    if which == "numbers":
        assert dense(got["Hi"]).tolist() == [-1.5, 0, 0]  # a stored row's max, not 0
        assert dense(got["Lo"]).tolist() == [1.5, 0, 0]
        w = np.array([[-1.5, -2, -3], [-4, 0, -6], [0, -1, -2]], dtype=np.float32)
        assert np.array_equal(dense(got["M"]), (w[:, :, None] * w[None, :, :]).max(axis=1))
        assert np.array_equal(dense(got["P"]), w @ -w)
    else:
        for name, expected in EXPECTED.items():
            assert tuples(forced, name, got[name]) == expected, name
        assert dense(got["Low"]).min() == -3 and np.count_nonzero(dense(got["Low"])) == 4


def test_relations_over_a_large_domain_grow_with_their_facts(tmp_path: Path):
    # 20,000 facts over 40,000 symbols: 1.6e9 cells, 6.4 GB dense; the run must
    # fit in 64 MB (the memory guard counts a sparse tensor by its non-zeros)
    rng = np.random.default_rng(3)
    edges = {(int(a), int(b)) for a, b in rng.integers(0, 20_000, (20_000, 2))}
    edges |= {(20_000 + k, k) for k in range(20_000)}  # every symbol used
    edges = sorted(edges)
    (tmp_path / "edge.tsv").write_text("".join(f"S{a}\tS{b}\n" for a, b in edges))
    text = ('Edge(x,y) = "edge.tsv"\nTwo(x,z) = Edge(x,y) Edge(y,z)\n'
            'Out[x] = Two(x,z)\nexport Two, Out\n')
    program = fuse_lang.compile(text, base_dir=tmp_path, memory_limit=64 * 2**20)
    assert program.analysis.tensors["Two"].shape == (40_000, 40_000)
    out = program.run()
    assert sp.issparse(out["Two"])
    symbols = program.analysis.domain_symbols[program.analysis.tensors["Edge"].axes[0].domain]
    index = {s: k for k, s in enumerate(symbols)}
    rows = [index[f"S{a}"] for a, _ in edges]
    cols = [index[f"S{b}"] for _, b in edges]
    e = sp.csr_array((np.ones(len(edges)), (rows, cols)), shape=(40_000, 40_000))
    want = (e @ e).astype(bool).astype(np.float32)
    assert (out["Two"] != want).nnz == 0
    assert np.array_equal(np.asarray(out["Out"]), np.asarray(want.sum(axis=1)))


def test_a_refused_compiled_run_names_the_tensors_it_keeps_dense(tmp_path: Path):
    pytest.importorskip("jax")
    rng = np.random.default_rng(5)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, 300_000, (3_000, 2))}
    (tmp_path / "e.tsv").write_text("".join(f"S{a}\tS{b}\n" for a, b in sorted(pairs)))
    text = 'Edge(x,y) = "e.tsv"\nTwo(x,z) = Edge(x,y) Edge(y,z)\nexport Two\n'
    limit = 16 * 2**20  # ~6,000 symbols: 36e6 cells, 144 MB dense; a few kB sparse
    compiled = fuse_lang.compile(text, backend="jax", base_dir=tmp_path, memory_limit=limit)
    with pytest.raises(fuse_lang.FuseError) as err:
        compiled.run()
    assert str(err.value).endswith(
        "nothing was run (Edge, Two planned sparse, kept dense by a compiled run: run "
        "eagerly, --no-compile or compiled=False, to keep them sparse)")
    # eager, the same program runs sparse within the limit
    eager = fuse_lang.compile(text, backend="jax", compiled=False, base_dir=tmp_path,
                              memory_limit=limit)
    assert sp.issparse(eager.run()["Two"])
    # numpy plans nothing dense that it could keep sparse: the message is as it was
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile(text, base_dir=tmp_path, memory_limit=1024).run()
    assert str(err.value).endswith("over the limit of 1.0 kB; nothing was run")


DATALOG = Path(__file__).resolve().parent.parent / "examples" / "datalog.fuse"


def test_explain_takes_representation(capsys):
    assert main(["explain", "--representation", "Parent=sparse", "--representation",
                 "Ancestor=dense", str(DATALOG)]) == 0
    out = capsys.readouterr().out
    assert "  Parent: sparse, ~4 of 25 (facts; as asked)\n" in out
    assert "  Ancestor: dense, ~8 of 25 (estimated from its rules; as asked)\n" in out
    assert main(["explain", "--format", "json", "--representation", "Parent=sparse",
                 str(DATALOG)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert ["Parent", "sparse", 4, 25, "facts; as asked"] in data["representations"]
    assert data["run"]["sparse"] == ["Parent"]


@pytest.mark.parametrize("item, status, message", [
    ("Nope=sparse", 1, "representation: `Nope` is not a tensor of this program "
                       "(those are: Parent, Ancestor)"),
    ("Parent=spars", 2, "--representation Parent=spars: 'spars' is not one of dense, sparse"),
    ("Parent", 2, "--representation takes NAME=dense or NAME=sparse, not 'Parent'"),
])
def test_explain_refuses_a_representation_as_run_does(capsys, item, status, message):
    for command in (["explain"], ["run"]):
        assert main(command + ["--representation", item, str(DATALOG)]) == status
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    assert main(["explain", "--format", "json", "--representation", item, str(DATALOG)]) == status
    assert message in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_an_empty_file_and_repeated_lines_forced_sparse(tmp_path: Path, backend):
    pytest.importorskip(backend)
    (tmp_path / "empty.tsv").write_text("")
    (tmp_path / "dup.tsv").write_text("A\tB\nA\tB\nB\tC\nB\tC\n")
    text = ('Edge(x,y) = "dup.tsv"\nEmpty(x,y) = "empty.tsv"\n'
            "R(x,z) = Edge(x,y) Edge(y,z)\nZ(x,z) = Empty(x,y) Edge(y,z)\n"
            "N(x,y) = Edge(x,y) not Empty(x,y)\nC[x] = Edge(x,y)\nexport R, Z, N, C, Edge\n")
    names = ["Edge", "Empty", "R", "Z", "N"]
    forced = fuse_lang.compile(text, backend=backend, compiled=False, base_dir=tmp_path,
                               representation={n: "sparse" for n in names})
    got = forced.run()
    want = fuse_lang.compile(text, backend=backend, compiled=False, base_dir=tmp_path).run()
    for name in want:
        assert np.array_equal(dense(got[name]), dense(want[name])), name
    assert tuples(forced, "Edge", got["Edge"]) == {("A", "B"), ("B", "C")}  # 1, not 2
    assert dense(got["Edge"]).max() == 1
    assert tuples(forced, "R", got["R"]) == {("A", "C")}
    assert sp.issparse(got["Z"]) and got["Z"].nnz == 0 and got["Z"].shape == (3, 3)
    assert tuples(forced, "N", got["N"]) == {("A", "B"), ("B", "C")}
    assert dense(got["C"]).tolist() == [1, 1, 0]
