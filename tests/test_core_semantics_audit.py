"""An audit of the core tensor-equation semantics (LANGUAGE.md §3-6, §10) at their
edges: programs written from the contract, each compared with the same
computation written by hand in NumPy.  This module is in conftest's
CONFORMANCE_MODULES, so every program also runs on torch and on jax (jitted) and
must agree with NumPy, errors included.

Sources are declared like `X[i,j] = "x.npy"`: the file is written to tmp_path and
the same array is given through `run(inputs=...)`.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import fuse_lang

TOL = dict(rtol=1e-5, atol=1e-5)


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64),
                               np.asarray(expected, dtype=np.float64), **TOL)


def run(tmp_path, text, **arrays):
    for name, array in arrays.items():
        np.save(tmp_path / f"{name.lower()}.npy", array)
    program = fuse_lang.compile(text, backend="numpy", device="cpu", base_dir=tmp_path)
    return program.run(inputs=arrays)


def sources(**shapes):
    return "\n".join(f'{name}[{idx}] = "{name.lower()}.npy"' for name, idx in shapes.items()) + "\n"


EMPTY = np.zeros((0, 3), np.float32)  # a source with an axis of no positions


# ------------------------------------------- projection over an axis with no positions

@pytest.mark.parametrize("op", ["max=", "min="])
def test_a_projection_over_an_empty_axis_is_zero(tmp_path, op):
    # max/min of no values has no identity (np.max raised, torch.amax an IndexError
    # that `fuse run --backend torch` showed as an internal error): each cell is 0,
    # as a cell nothing writes
    out = run(tmp_path, sources(E="i,j") + f"Y[j] {op} E[i,j]\nexport Y", E=EMPTY)
    close(out["Y"], np.zeros(3))


@pytest.mark.parametrize("op", ["max", "min"])
def test_reduce_over_an_empty_axis_is_zero(tmp_path, op):
    out = run(tmp_path, sources(E="i,j") + f"Y[j] = reduce({op}, i) E[i,j] + 1\nexport Y",
              E=EMPTY)
    close(out["Y"], np.ones(3))


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_mean_over_an_empty_axis_is_nan_as_pytorchs_without_a_warning(tmp_path):
    # the mean of nothing: PyTorch's and NumPy's NaN (an empty batch's loss is no
    # number: tests/test_lm_audit.py), without NumPy's "Mean of empty slice" warning
    out = run(tmp_path, sources(E="i,j") + "Y[j] avg= E[i,j]\n"
              "Z[j] = reduce(avg, i) E[i,j] + 1\nexport Y, Z", E=EMPTY)
    assert np.isnan(out["Y"]).all() and np.isnan(out["Z"]).all() and out["Y"].shape == (3,)


@pytest.mark.parametrize("op,fn", [("max=", np.max), ("min=", np.min)])
def test_an_equation_projecting_no_positions_adds_nothing_to_the_others(tmp_path, op, fn):
    # `M[j] max= E[i,j]` over no i takes no value: it writes no cell, and M is the
    # other equation's max (a 0 of the empty one would beat these negative values)
    X = np.array([[-3.0, -1.0, -2.0], [-4.0, -6.0, -0.5]], np.float32)
    out = run(tmp_path, sources(E="i,j", X="k,j") +
              f"M[j] {op} E[i,j]\nM[j] {op} X[k,j]\nS[j] = E[i,j]\nS[j] += X[k,j]\n"
              "export M, S", E=EMPTY, X=X)
    close(out["M"], fn(X.astype(np.float64), axis=0))
    close(out["S"], X.astype(np.float64).sum(0))  # an empty sum is 0, added


def test_a_shortest_path_keeps_its_distances_beside_an_equation_over_no_positions(tmp_path):
    # in a recursive min= group too: the empty equation's 0 made every distance 0
    W0 = np.array([0, 5, 7], np.float32)
    W = np.full((3, 3), 1e30, np.float32)
    W[0, 1] = W[1, 2] = 1
    out = run(tmp_path, sources(W0="y", W="x,y", E="k,y") +
              "D[y] min= W0[y]\nD[y] min= D[x] + W[x,y]\nD[y] min= E[k,y]\nexport D",
              W0=W0, W=W, E=EMPTY)
    close(out["D"], [0, 1, 2])


def test_softmax_and_lnorm_along_an_empty_axis(tmp_path):
    out = run(tmp_path, sources(E="i,j") +
              "S[i.,j] = softmax(E[i,j])\nL[i.,j] = lnorm(E[i,j])\nT[i,j] = softmax(E[i,j])\n"
              "export S, L, T", E=EMPTY)
    for name in "SLT":
        assert out[name].shape == (0, 3)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_fuse_run_projects_an_empty_axis_on_every_backend(tmp_path, backend):
    pytest.importorskip(backend)
    np.save(tmp_path / "e.npy", EMPTY)
    (tmp_path / "m.fuse").write_text('E[i,j] = "e.npy"\nY[j] max= E[i,j]\nexport Y\n')
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "--backend", backend,
                           "--format", "json", "m.fuse"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["outputs"]["Y"]["values"] == [0.0, 0.0, 0.0]


# ------------------------------------------- a comparison factor under max= / min= / avg=

LOWER = np.array([[-1.0, -9.0, -9.0], [-4.0, -2.0, -9.0], [-5.0, -6.0, -3.0]], np.float32)


@pytest.mark.parametrize("op,other,fn", [("max=", "-1e30", np.max), ("min=", "1e30", np.min)])
def test_a_comparison_factor_under_an_aggregate_is_told_and_select_takes_its_cells(
        tmp_path, op, other, fn):
    # the comparison multiplies (LANGUAGE.md §13: a Boolean factor), so the masked
    # cells' zeros take part in the max: `fuse check` said nothing of it
    np.save(tmp_path / "x.npy", LOWER)
    text = sources(X="i,j") + f"Y[i] {op} X[i,j] (j <= i)\nexport Y"
    analysis = fuse_lang.analyze(text, str(tmp_path / "p.fuse"))
    (warning,) = [d for d in analysis.diagnostics if d.code == "aggregate-over-absent"]
    fix = f"select((j <= i), X[i,j], {other})"
    assert f"`{fix}`" in warning.message
    assert warning.fixes[0].edits[0].new_text == fix
    masked = np.where(np.tril(np.ones((3, 3))) > 0, LOWER, 0.0)
    close(run(tmp_path, text, X=LOWER)["Y"], fn(masked, axis=1))
    fixed = run(tmp_path, sources(X="i,j") + f"Y[i] {op} {fix}\nexport Y", X=LOWER)["Y"]
    close(fixed, [fn(LOWER[i, :i + 1]) for i in range(3)])


def test_a_mask_on_a_dropped_index_under_max_is_told_too(tmp_path):
    np.save(tmp_path / "x.npy", LOWER)
    text = sources(X="i,j") + "Y[i] max= X[i,j] odd(j)\nexport Y"
    analysis = fuse_lang.analyze(text, str(tmp_path / "p.fuse"))
    (warning,) = [d for d in analysis.diagnostics if d.code == "aggregate-over-absent"]
    assert warning.fixes[0].edits[0].new_text == "select(odd(j), X[i,j], -1e30)"
    fixed = run(tmp_path, sources(X="i,j") + "Y[i] max= select(odd(j), X[i,j], -1e30)\nexport Y",
                X=LOWER)["Y"]
    close(fixed, LOWER[:, 1])
    close(run(tmp_path, text, X=LOWER)["Y"], np.zeros(3))  # the even columns' zeros


@pytest.mark.parametrize("text", ["Y[i] = X[i,j] (j <= i)", "Y[i] max= X[i,j] (i < 2)",
                                  "Y[i] max= X[i,j] even(i)",
                                  "Y[i] max= select((j <= i), X[i,j], -1e30)"])
def test_no_aggregate_warning_where_no_masked_cell_is_aggregated(tmp_path, text):
    np.save(tmp_path / "x.npy", LOWER)
    analysis = fuse_lang.analyze(sources(X="i,j") + text + "\nexport Y", str(tmp_path / "p.fuse"))
    assert not [d for d in analysis.diagnostics if d.code == "aggregate-over-absent"]


# ------------------------------------------- softmax's axis= naming no left-hand-side index

def test_an_axis_keyword_naming_no_lhs_index_says_which_it_named(tmp_path):
    # it said "`axis=` names an index of the left-hand side (i)", the rule, not the fault
    np.save(tmp_path / "v.npy", np.zeros(3, np.float32))
    analysis = fuse_lang.analyze(sources(V="i") + "Y[i] = softmax(V[i], axis=k)\nexport Y",
                                 str(tmp_path / "p.fuse"))
    (error,) = [d for d in analysis.diagnostics if d.code == "bad-argument"]
    assert "`axis=k` is not an index of the left-hand side" in error.message
    assert "(i)" in error.message


# ------------------------------------------- the edges that hold (kept so on every backend)

RNG = np.random.default_rng(2026)
SQ = RNG.uniform(-1, 1, (3, 3)).astype(np.float32)
NEG = RNG.uniform(-5, -1, (4, 3)).astype(np.float32)
VEC = RNG.uniform(-1, 1, 4).astype(np.float32)
INT = np.array([[3, -2, 7], [1, 5, -4]], np.int64)
QK = RNG.uniform(-1, 1, (2, 3, 4)).astype(np.float32)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


EDGES = [
    ("diagonal read", dict(SQ="i,j"), "D[i] = SQ[i,i]", "D", np.diag(SQ)),
    ("trace", dict(SQ="i,j"), "D = SQ[i,i]", "D", np.trace(SQ)),
    ("diagonal write", dict(VEC="i"), "D[i,i] = VEC[i]", "D", np.diag(VEC)),
    ("row sums on the diagonal", dict(SQ="i,j"), "D[i,i] = SQ[i,j]", "D", np.diag(SQ.sum(1))),
    ("an LHS-only index broadcasts", dict(VEC="j"), "axis i = 2\nD[i,j] = VEC[j]", "D",
     np.broadcast_to(VEC, (2, 4))),
    ("an index in no factor", dict(), "axis i = 3\nD[i] = 2", "D", np.full(3, 2.0)),
    ("a term without the index counts once", dict(SQ="i,j", VEC="k"),
     "D[i] = SQ[i,j] + VEC[k] + 1", "D", SQ.sum(1) + VEC.sum() + 1),
    ("offsets past both ends read 0", dict(VEC="i"), "D[i] = VEC[i+1] - VEC[i-2]", "D",
     np.r_[VEC[1:], 0] - np.r_[0, 0, VEC[:-2]]),
    ("a write past the end is dropped", dict(VEC="i"), "D[i-1] = VEC[i]", "D", np.r_[VEC[1:], 0]),
    ("max= of negative values", dict(NEG="b,o"), "D[o] max= NEG[b,o]", "D", NEG.max(0)),
    ("min= of two equations", dict(NEG="b,o"), "D[o] min= NEG[b,o]\nD[o] min= -NEG[b,o]", "D",
     NEG.min(0)),
    ("max-pooling an odd axis of negatives", dict(NEG="b,o"), "D[b/3,o] max= NEG[b,o]", "D",
     np.stack([NEG[:3].max(0), NEG[3]])),
    ("integer data", dict(INT="i,j"), "D[j] avg= INT[i,j] / 2", "D", INT.mean(0) / 2),
    ("two = equations add", dict(SQ="i,j", V3="j"),
     "D[i] = SQ[i,j] V3[j]\nD[i] += relu(SQ[i,j])", "D",
     SQ @ VEC[:3] + np.maximum(SQ.sum(1), 0)),
    ("softmax along a dotted primed middle axis", dict(QK="b,p,d"),
     "D[p,p'.,b] = softmax(QK[b,p,d] QK[b,p',d])", "D",
     _softmax(np.einsum("bpd,bqd->pqb", QK, QK), 1)),
]


@pytest.mark.parametrize("what,shapes,text,out,expected", EDGES, ids=[e[0] for e in EDGES])
def test_edges_of_the_projection_rule(tmp_path, what, shapes, text, out, expected):
    arrays = {"SQ": SQ, "NEG": NEG, "VEC": VEC, "INT": INT, "QK": QK, "V3": VEC[:3]}
    given = {name: arrays[name] for name in shapes}
    close(run(tmp_path, sources(**shapes) + f"{text}\nexport {out}", **given)[out], expected)
