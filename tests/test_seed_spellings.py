"""The seed DSL's spellings (issue 14, item 7), through the public entry points.

The programs here are written for these tests in the spellings of the DSL that
Fuse grew from (`sig(x, T=1.0)`, `concat(..., axis=0)`, an expression in a sink,
topk pairs in JSONL, a `.txt` source on `[ ]`, `W[0,h] = const([[...]])`); data
files are made in tmp_path.  The module is a conformance module (conftest.py):
every NumPy run is repeated on torch and jax and must agree.
"""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import fuse_lang
from fuse_lang import analyze
from fuse_lang.cli import main as cli_main

BACKENDS = ["numpy", "torch", "jax"]


def run(text, tmp_path, **kw):
    prog = tmp_path / "prog.fuse"
    prog.write_text(text)
    return fuse_lang.compile(text, base_dir=tmp_path, path=str(prog), **kw).run()


def codes(text, tmp_path=None):
    return [d.code for d in analyze(text, str(tmp_path / "p.fuse") if tmp_path else None,
                                    tmp_path).diagnostics]


# ------------------------------------------------------ a backslash continues a line
def test_a_backslash_ending_a_line_continues_the_statement(tmp_path):
    text = "\\\n# the seeds' programs start like this\nX = const([1,2])\nY[i] = X[i] \\\n  + 1\nexport Y\n"
    assert text.startswith("\\\n")
    assert codes(text) == []
    np.testing.assert_array_equal(run(text, tmp_path)["Y"], [2, 3])
    # elsewhere a backslash is still not part of the language
    assert "invalid-character" in codes("X = const([1,2]) \\ 2")


# ---------------------------------------------------------------- sig(x, T=...)
def test_sig_temperature_as_keyword_equals_positional(tmp_path):
    out = run("X = const([-1, 0.5, 2])\nA[i] = sig(X[i], T=0.5)\nB[i] = sig(X[i], 0.5)\n"
              "C[i] = sig(X[i], T=0)\nexport A, B, C", tmp_path)
    np.testing.assert_allclose(out["A"], out["B"])
    np.testing.assert_allclose(out["A"], 1 / (1 + np.exp(-np.array([-1, 0.5, 2]) / 0.5)),
                               rtol=1e-6)
    np.testing.assert_array_equal(out["C"], [0, 1, 1])


def test_sig_without_temperature_is_the_logistic_and_step_is_the_seeds_sig(tmp_path):
    # the seeds' `sig(x)` (no T) was a step; in Fuse that is `step(x)` or `sig(x, T=0)`
    out = run("X = const([-1, 2])\nA[i] = sig(X[i])\nB[i] = step(X[i])\nexport A, B", tmp_path)
    np.testing.assert_allclose(out["A"], 1 / (1 + np.exp([1.0, -2.0])), rtol=1e-6)
    np.testing.assert_array_equal(out["B"], [0, 1])


def test_gelu_tanh_is_the_seeds_gelu(tmp_path):
    xs = [-2.0, -0.5, 0.0, 0.7, 3.0]
    out = run(f"X = const({xs})\nG[i] = gelu_tanh(X[i])\nE[i] = gelu(X[i])\nexport G, E",
              tmp_path)
    x = np.array(xs)
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    erf_form = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in xs])
    np.testing.assert_allclose(out["G"], tanh_form, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["E"], erf_form, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------- concat(axis=0)
def test_concat_with_a_numbered_axis_is_the_lhs_index_there(tmp_path):
    out = run("A[e,o] = const([[1,2],[3,4]])\nB[e,o] = const([[5,6],[7,8]])\n"
              "S[e,o] = concat(A[e,o], B[e,o], axis=0)\nT[e,o] = concat(A[e,o], B[e,o], axis=1)\n"
              "export S, T", tmp_path)
    np.testing.assert_array_equal(out["S"], [[1, 2], [3, 4], [5, 6], [7, 8]])
    np.testing.assert_array_equal(out["T"], [[1, 2, 5, 6], [3, 4, 7, 8]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_concat_directly_in_a_sink(tmp_path, backend):
    run("A[d] = const([1,2,3])\nB[d] = const([4,5,6])\nY[d] = A[d] + B[d]\n"
        '"out/trace.npy" = concat(A[d], B[d], Y[d], axis=0)\nexport Y', tmp_path,
        backend=backend)
    np.testing.assert_array_equal(np.load(tmp_path / "out/trace.npy"),
                                  [1, 2, 3, 4, 5, 6, 5, 7, 9])


def test_numbered_axis_without_an_index_there_is_an_error(tmp_path):
    diags = analyze("A = const([1,2])\nB[i] = concat(A[i], A[i], axis=3)").diagnostics
    assert [d.code for d in diags] == ["bad-argument"]
    assert "no index at position 3" in diags[0].message


# ------------------------------------------------------------------- topk
@pytest.mark.parametrize("backend", BACKENDS)
def test_topk_sink_writes_index_score_pairs(tmp_path, backend):
    np.save(tmp_path / "s.npy", np.array([[0.1, 0.9, 0.5], [0.7, 0.7, 0.2]], np.float32))
    run('S[a,b] = "s.npy"\n"top.jsonl" = topk(S[a,b], k=2)\n"all.json" = topk(S[a,b], k=9)\n'
        "export S", tmp_path, backend=backend)
    lines = (tmp_path / "top.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [[i for i, _ in row] for row in rows] == [[1, 2], [0, 1]]  # ties: lower index
    np.testing.assert_allclose([[s for _, s in row] for row in rows], [[0.9, 0.5], [0.7, 0.7]],
                               rtol=1e-6)
    everything = json.loads((tmp_path / "all.json").read_text())
    assert [[i for i, _ in row] for row in everything] == [[1, 2, 0], [0, 1, 2]]  # capped


@pytest.mark.parametrize("sink", ["t.jsonl", "t.npy"])
def test_topk_in_a_sink_with_a_huge_k_gives_the_whole_row(tmp_path, sink):
    run(f'X = const([[1,3,2]])\n"{sink}" = topk(X[i,j], k=1{"0" * 400})\nexport X', tmp_path)
    if sink.endswith(".jsonl"):
        assert json.loads((tmp_path / sink).read_text()) == [[1, 3.0], [2, 2.0], [0, 1.0]]
    else:
        np.testing.assert_array_equal(np.load(tmp_path / sink), [[3, 2, 1]])


def test_topk_larger_than_its_row_is_capped_with_a_warning(tmp_path):
    text = "X = const([[3,1,2],[0,5,4]])\nY[i,j] = topk(X[i,j], k=5)\nexport Y"
    assert codes(text) == ["topk-capped"]
    out = run(text, tmp_path)
    np.testing.assert_array_equal(out["Y"], [[3, 2, 1], [5, 4, 0]])


# -------------------------------------------------------- a .txt source on [ ]
def test_txt_source_on_a_dense_tensor_is_a_position_token_matrix(tmp_path):
    (tmp_path / "prompt.txt").write_text("the cat saw the dog\n")
    np.save(tmp_path / "emb.npy", np.arange(12, dtype=np.float32).reshape(6, 2))
    text = ('X[p,t] = "prompt.txt"\nEmb[t,d] = "emb.npy"\nE[p,d] = X[p,t] Emb[t,d]\n'
            "Count[t] = X[p,t]\nexport E, Count")
    assert "missing-source" not in codes(text, tmp_path)
    out = run(text, tmp_path)
    # tokens numbered in order of first appearance: the=0 cat=1 saw=2 dog=3 (6 rows of Emb)
    np.testing.assert_array_equal(out["Count"], [2, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(out["E"], np.arange(12).reshape(6, 2)[[0, 1, 2, 0, 3]])


# ------------------------------------------------------ W[0,h] = const([[...]])
def test_constant_lhs_index_with_a_literal(tmp_path):
    text = ("W[0,h] = const([[1,2,3]])\nV[1,h] = const([[4,5,6]])\nA[h] = W[0,h]\n"
            "B[h] = V[1,h]\nexport A, B, V")
    assert codes(text) == []
    out = run(text, tmp_path)
    np.testing.assert_array_equal(out["A"], [1, 2, 3])
    np.testing.assert_array_equal(out["B"], [4, 5, 6])
    np.testing.assert_array_equal(out["V"], [[0, 0, 0], [4, 5, 6]])


def test_constant_lhs_index_with_a_literal_of_more_rows_is_an_error():
    diags = analyze("W[0,h] = const([[1,2],[3,4]])").diagnostics
    assert [d.code for d in diags] == ["bad-argument"]
    assert "selects one position" in diags[0].message


# ----------------------------------------------------------- messages
def test_a_sink_that_cannot_be_evaluated_is_located_not_internal(tmp_path, capsys):
    prog = tmp_path / "p.fuse"
    prog.write_text('X = const([1,2])\n"m.npy" = causal_mask(3)\nexport X\n')
    assert cli_main(["run", str(prog)]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err and "EvaluationError" not in err
    assert "line 2: sink 'm.npy'" in err


def test_a_sink_that_cannot_be_evaluated_is_a_fuse_error_through_the_api(tmp_path):
    with pytest.raises(fuse_lang.FuseError, match="line 2: sink 'm.npy': causal_mask"):
        run('X = const([1,2])\n"m.npy" = causal_mask(3)\nexport X', tmp_path)


def test_numpy_warnings_name_the_program_line_not_the_engine(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run("X = const([1000, 1])\nY[i] = exp(X[i])\nexport Y", tmp_path)
    assert np.isinf(out["Y"][0])
    found = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(found) == 1, [str(w.message) for w in caught]
    assert found[0].filename == str(tmp_path / "prog.fuse") and found[0].lineno == 2
    assert "overflow" in str(found[0].message) and "`Y[i] = exp(X[i])`" in str(found[0].message)
    assert "fuse_lang" not in str(found[0].message)


def test_cli_prints_no_engine_path_for_a_numpy_warning(tmp_path):
    import subprocess
    import sys

    prog = tmp_path / "p.fuse"
    prog.write_text("X = const([1000, 1])\nY[i] = exp(X[i])\nexport Y\n")
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", str(prog)],
                          capture_output=True, text=True, timeout=120)
    assert "overflow" in done.stderr
    assert "fuse_lang" not in done.stderr and "numpy_backend" not in done.stderr


# ---------------------------------------------- programs in the seeds' spellings
SEED_STYLE = {
    "mlp with avg= and max=": (
        "In[b,d] = const([[0.5,0.1],[0.2,0.9]])\nW[h,d] = const([[0.3,-0.2],[0.1,0.4]])\n"
        "Bias[h] = const([0.1,-0.1])\nH[b,h] = W[h,d] In[b,d]\nHB[b,h] = B2[b,h]\n"
        "B2[b,h] = Bias[h]\nAct[b,h] = gelu(H[b,h] + HB[b,h])\nP[b,h] = softmax(Act[b,h])\n"
        "Mean[h] avg= P[b,h]\nPeak[b] max= P[b,h]\nexport P, Mean, Peak"),
    "equations that sum, step and a threshold": (
        "Score[a] = const([0.7,-0.2,0.4])\nRisk[a] = const([0.1,0.9,0.3])\nNeg = const(-1.0)\n"
        "Logit[a] = Score[a]\nLogit[a] = Neg Risk[a]\nAllow[a] = step(Logit[a] + Neg const(0.5) + 1)\n"
        "export Allow, Logit"),
    "soft logic with sig(T=)": (
        "A[x] = const([0.8,0.2])\nB[x] = const([0.7,0.9])\nK = const(5.0)\n"
        "Base[x] = const([0.3,0.3])\nC[x] = sig(Base[x] + K A[x] B[x], T=1.0)\nexport C"),
    "attention with a causal mask and dotted softmax": (
        "X[p,d] = const([[0.5,0.1],[-0.2,0.4],[0.3,-0.5]])\nWQ[k,d] = const([[0.2,-0.1],[0.5,0.2]])\n"
        "Q[p,k] = WQ[k,d] X[p,d]\nM[p,p'] = causal_mask(3)\n"
        "S[p,p'] = Q[p,k] Q[p',k] 0.5 + (1 - M[p,p']) const(-10000.0)\n"
        "Att[p,p'.] = softmax(S[p,p'])\nCtx[p,k] = Att[p,p'] Q[p',k]\nexport Ctx"),
    "select rows by constant index": (
        "In[t,d] = const([[0.6,-0.2],[0.1,0.5]])\nWX[h,d] = const([[0.3,0.7],[-0.4,0.2]])\n"
        "H1[h] = relu(WX[h,d] In[0,d])\nH2[h] = relu(WX[h,d] In[1,d] + H1[h])\n"
        "S0[t] = const([1,0])\nS1[t] = const([0,1])\nH[t,h] = S0[t] H1[h] + S1[t] H2[h]\nexport H"),
    "kg scores concatenated": (
        "Hd[e,d] = const([[0.5,0.1],[-0.3,0.4]])\nTl[o,d] = const([[0.2,-0.1],[0.6,0.0]])\n"
        "R[d] = const([1.2,0.9])\nS1[e,o] = Hd[e,d] R[d] Tl[o,d]\nS2[e,o] = Hd[e,d] Tl[o,d]\n"
        "All[e,o] = concat(S1[e,o], S2[e,o], axis=0)\nexport All, S1"),
    "pinn-style constant row": (
        "P[n,d] = const([[0.0,0.0],[0.5,0.25]])\nW1[h,d] = const([[1.2,-0.3],[-0.5,0.8]])\n"
        "W2[1,h] = const([[0.3,-0.6]])\nHid[n,h] = gelu(W1[h,d] P[n,d])\nPred[n] = W2[1,h] Hid[n,h]\n"
        "export Pred"),
}


@pytest.mark.parametrize("name", list(SEED_STYLE))
def test_programs_in_the_seeds_spellings_run(name, tmp_path):
    text = SEED_STYLE[name]
    assert [c for c in codes(text) if c not in ("unused-tensor",)] == [], name
    out = run(text, tmp_path)
    assert out and all(np.all(np.isfinite(v)) for v in out.values())
