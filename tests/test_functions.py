"""`fn` functions and `select`/`case`/`when` (issue 33) through the public entry
points: the API (`fuse_lang.analyze`, `fuse_lang.compile(...).run()`), the CLI
(`fuse check`, `run`, `explain`), and the tools (formatting, hover).  The language
server's part is in tests/lsp/test_functions.py; incremental analysis of programs
with functions in tests/test_incremental.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import analyze, parse
from fuse_lang.ide.formatting import format_text, ir_signature, same_program
from fuse_lang.ide.hover import hover_at

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BACKENDS = ["numpy", "torch", "jax"]


def run(text: str, backend: str = "numpy", base_dir: Path = EXAMPLES) -> dict:
    if backend != "numpy":
        pytest.importorskip(backend)
    return fuse_lang.compile(text, backend=backend, base_dir=base_dir).run()


def errors(text: str) -> list:
    return [d for d in analyze(text).diagnostics if d.severity.value == "error"]


# ------------------------------------------------------------------ functions

DENSE = """\
fn dense(x[b,d], w[f,d]) -> y[b,f] {
  y[b,f] = x[b,d] w[f,d]
}
X[b,d] = const([[1,2],[3,4]])
W[f,d] = const([[1,0],[0,1],[1,1]])
"""


def test_a_call_is_its_body_with_the_arguments_bound_by_position():
    out = run(DENSE + "H[n,h] = relu(dense(X[n,i], W[h,i]) - 2)\nexport H\n")
    x = np.array([[1, 2], [3, 4]])
    w = np.array([[1, 0], [0, 1], [1, 1]])
    np.testing.assert_allclose(out["H"], np.maximum(x @ w.T - 2, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_transformer_with_functions_equals_the_one_written_out(backend):
    with_fn = run((EXAMPLES / "transformer_fn.fuse").read_text(encoding="utf-8"), backend)
    written = run((EXAMPLES / "transformer_2layer.fuse").read_text(encoding="utf-8"), backend)
    assert set(with_fn) == set(written) == {"Y"}
    np.testing.assert_allclose(np.asarray(with_fn["Y"]), np.asarray(written["Y"]),
                               rtol=1e-5, atol=1e-6)


def test_the_transformer_with_functions_is_shorter():
    lines = {name: len((EXAMPLES / name).read_text(encoding="utf-8").splitlines())
             for name in ("transformer_fn.fuse", "transformer_2layer.fuse")}
    assert lines["transformer_fn.fuse"] < lines["transformer_2layer.fuse"]


def test_two_calls_never_share_a_local_and_a_local_never_meets_a_program_tensor():
    text = """\
fn twice(x[i]) -> y[i] { T[i] = 2 x[i]; y[i] = T[i] }
T[i] = const([10, 20])
A[i] = twice(T[i]) + twice(twice(T[i]))
export A, T
"""
    assert errors(text) == []
    out = run(text)
    np.testing.assert_allclose(out["T"], [10, 20])  # the body's T is its own
    np.testing.assert_allclose(out["A"], [2 * 10 + 4 * 10, 2 * 20 + 4 * 20])
    names = [s.lhs.name for s in analyze(text).program.statements if hasattr(s, "lhs")]
    assert names == ["T", "T@twice.1", "y@twice.1", "T@twice.2", "y@twice.2", "T@twice.3",
                     "y@twice.3", "A"]


def test_an_axis_declaration_does_not_reach_a_body_index():
    text = """\
axis i = 3
fn total(x[j,i]) -> s[j] { s[j] = x[j,i] }
M[a,b] = const([[1,2],[3,4]])
S[a] = total(M[a,b])
export S
"""
    assert errors(text) == []
    np.testing.assert_allclose(run(text)["S"], [3, 7])


def test_arguments_with_constants_offsets_and_scalars():
    text = """\
fn scale(x[i], c) -> y[i] { y[i] = c x[i] }
M[r,k] = const([[1,2,3],[4,5,6]])
Row[k] = scale(M[1,k], 2)
Shifted[k] = scale(M[0,k-1], 10)
export Row, Shifted
"""
    assert errors(text) == []
    out = run(text)
    np.testing.assert_allclose(out["Row"], [8, 10, 12])
    np.testing.assert_allclose(out["Shifted"], [0, 10, 20])  # zero before the axis' start


def test_a_call_written_with_bare_names_and_a_function_calling_a_function():
    text = """\
fn add(a, b) -> s { s = a + b }
fn add3(a, b, c) -> s { s = add(add(a, b), c) }
A = const(1)
B = const(2)
S = add3(A, B, 4) + add(A, B)
export S
"""
    assert errors(text) == []
    assert float(run(text)["S"]) == 10.0


def test_an_index_value_and_builtins_in_a_body():
    text = """\
fn ramp(x[p]) -> y[p] { y[p] = x[p] * p + max(x[p], 2) }
X[q] = const([1, 1, 5])
Y[q] = ramp(X[q])
export Y
"""
    assert errors(text) == []
    np.testing.assert_allclose(run(text)["Y"], [0 + 2, 1 + 2, 10 + 5])


def test_recursion_is_refused_with_the_chain():
    text = "fn f(x[i]) -> y[i] { y[i] = g(x[i]) }\nfn g(x[i]) -> y[i] { y[i] = f(x[i]) }\n" \
           "X = const([1,2])\nY[i] = f(X[i])\n"
    found = [(d.code, d.message) for d in errors(text)]
    assert ("fn-recursion", "`f` calls itself (f -> g -> f): a function is inlined, so it "
            "cannot recurse") in found
    # the call is reported, and its statement left out without cascades
    assert [code for code, _ in found].count("fn-recursion") == 3
    assert not any(d.code == "undefined-tensor" for d in analyze(text).diagnostics)


def test_a_diagnostic_inside_a_body_lands_at_the_call_with_the_body_line():
    text = DENSE + "V[k] = const([1,2,3])\nH[n,h] = dense(X[n,i], V[i,h])\n"
    analysis = analyze(text)
    (diag,) = [d for d in analysis.diagnostics if d.severity.value == "error"]
    assert diag.code == "arity-mismatch"
    assert diag.span.start == text.index("V[i,h]")  # the argument, inside the call
    assert [r.message for r in diag.related][0] == "in `fn dense`, inlined at this call"


def test_an_extent_conflict_in_a_body_points_at_the_argument_and_the_body_line():
    text = """\
fn mm(a[i,k], b[k,j]) -> c[i,j] {
  c[i,j] = a[i,k] b[k,j]
}
A = const([[1,2,3],[3,4,5]])
B = const([[5,6],[7,8]])
Y[i,j] = mm(A[i,k], B[k,j])
"""
    analysis = analyze(text)
    (diag,) = [d for d in analysis.diagnostics if d.code == "extent-conflict"]
    assert analysis.lines.position(diag.span.start) == (5, 20)  # B[k,j], in the call
    body = [r for r in diag.related if "in `fn mm`" in r.message]
    assert [analysis.lines.position(r.span.start) for r in body] == [(1, 2)]


def test_a_function_named_like_a_builtin():
    assert [d.code for d in errors("fn relu(x[i]) -> y[i] { y[i] = x[i] }")] == \
        ["invalid-statement"]


def test_a_result_index_no_parameter_has_keeps_the_functions_name_at_the_call():
    text = """\
fn outer(x[p]) -> s[p,p'] { s[p,p'] = x[p] x[p'] }
X[i] = const([1, 2])
S[i,p'] = outer(X[i])
export S
"""
    assert errors(text) == []
    np.testing.assert_allclose(run(text)["S"], [[1, 2], [2, 4]])


def test_a_body_holds_equations_only():
    (diag,) = parse('fn f(x[i]) -> y[i] { y[i] = "a.npy" }').diagnostics
    assert diag.code == "invalid-statement" and "equations only" in diag.message


# -------------------------------------------------------------------- choices

CHOICES = """\
A[i,j] = const([[1,2],[3,4]])
Sel[i,j] = select(A[i,j] > 2, A[i,j], -1)
Case[i,j] = case {
  A[i,j] == 1 -> 10
  A[i,j] < 4  -> A[i,j]
  default     -> 0
}
NoDefault[i,j] = case { A[i,j] > 3 -> 1 }
Lower[i] = A[i,j] when (j < i)
Guard[i,j] = A[i,j] when (A[i,j] != 2)
Inf[i] = select(A[i,0] > 1, log(A[i,0] - 1), 7)
export Sel, Case, NoDefault, Lower, Guard, Inf
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_select_case_and_when_on_every_backend(backend):
    assert errors(CHOICES) == []
    out = {k: np.asarray(v) for k, v in run(CHOICES, backend).items()}
    np.testing.assert_allclose(out["Sel"], [[-1, -1], [3, 4]])
    np.testing.assert_allclose(out["Case"], [[10, 2], [3, 0]])
    np.testing.assert_allclose(out["NoDefault"], [[0, 0], [0, 1]])
    np.testing.assert_allclose(out["Lower"], [0, 3])
    np.testing.assert_allclose(out["Guard"], [[1, 0], [3, 4]])
    # the branch not taken is not multiplied in: log(0) = -inf gives no NaN
    np.testing.assert_allclose(out["Inf"], [7, np.log(2)], rtol=1e-6)


def test_case_and_when_are_selects_in_the_ir():
    one = parse("A = const(1)\nY = case { A > 0 -> 1; default -> 2 }").program
    two = parse("A = const(1)\nY = select(A > 0, 1, 2)").program
    assert ir_signature(one) == ir_signature(two)
    one = parse("A = const(1)\nY = A when (A > 0)").program
    two = parse("A = const(1)\nY = select(A > 0, A, 0)").program
    assert ir_signature(one) == ir_signature(two)


def test_branches_with_different_indices_broadcast_along_the_left_hand_sides():
    # elementwise, by index name (LANGUAGE.md §4), as np.where broadcasts: B[i] along j
    text = ("A[i,j] = const([[1.0, 3.0, 5.0], [4.0, 0.0, 6.0]])\nB[i] = const([10.0, 20.0])\n"
            "C[j] = const([7.0, 8.0, 9.0])\n"
            "Y[i,j] = select(A[i,j] > 2, A[i,j], B[i])\n"
            "Z[i,j] = case { A[i,j] > 2 -> C[j]; default -> B[i] }\n"
            "W[j,i] = select(B[i] > 15, C[j], A[i,j])\nexport Y, Z, W\n")
    assert errors(text) == []
    out = fuse_lang.compile(text).run()
    a, b, c = (np.array([[1.0, 3, 5], [4, 0, 6]]), np.array([10.0, 20]), np.array([7.0, 8, 9]))
    np.testing.assert_array_equal(out["Y"], np.where(a > 2, a, b[:, None]))
    np.testing.assert_array_equal(out["Z"], np.where(a > 2, c[None, :], b[:, None]))
    np.testing.assert_array_equal(out["W"], np.where(b[None, :] > 15, c[:, None], a.T))


def test_branches_with_an_index_summed_outside_the_choice_are_an_error():
    # B[i] would count once per j
    (diag,) = errors("A = const([[1,2],[3,4]])\nB = const([5,6])\n"
                     "Y[i] = select(A[i,j] > 2, A[i,j], B[i])")
    assert diag.code == "select-shapes"
    assert errors("A = const([[1,2],[3,4]])\nY[i] = select(A[i,0] > 2, A[i,j] (j < 1), 0)") \
        == []  # j is summed inside the branch: it keeps [i]


def test_default_is_the_last_arm():
    (diag,) = parse("A = const(1)\nY = case { default -> 1; A > 0 -> 2 }").diagnostics
    assert diag.code == "syntax-error" and "last arm" in diag.message


# ---------------------------------------------------------------- formatting

def test_formatting_keeps_the_meaning_of_functions_and_choices():
    text = ("fn  f( x[ i ] ,w[i,j] )->y[ j ]{\n   y[j]=x[i]  w[i,j]\n   z[j] = y[j]}\n"
            "A[i]=const([1,2]);W[i,j]=const([[1,2],[3,4]])\n"
            "Y[j]=case{A[j]>1->f(A[i],W[i,j]);default->0}\nZ[i]=A[i]when(A[i]>1)\n")
    out = format_text(text)
    assert out != text and same_program(text, out) and format_text(out) == out
    assert ir_signature(parse(out).program) == ir_signature(parse(text).program)
    assert out.startswith("fn f(x[i], w[i,j]) -> y[j] {\n   y[j] = x[i] w[i,j]\n")
    assert "Y[j] = case { A[j] > 1 -> f(A[i], W[i,j]); default -> 0 }" in out
    assert "Z[i] = A[i] when (A[i] > 1)" in out


def test_the_examples_are_formatted():
    for name in ("transformer_fn.fuse", "transformer_2layer.fuse"):
        text = (EXAMPLES / name).read_text(encoding="utf-8")
        assert format_text(text) == text, name


# --------------------------------------------------------------------- hover

def test_hover_on_a_call_shows_the_signature_and_the_calls_shape():
    text = DENSE + "H[n,h] = dense(X[n,i], W[h,i])\nexport H\n"
    analysis = analyze(text)
    hover = hover_at(analysis, text.index("dense(X"))
    assert hover is not None
    assert "fn dense(x[b,d], w[f,d]) -> y[b,f]" in hover.markdown
    assert "over `[n,h]`, shape (2, 3)" in hover.markdown
    x = hover_at(analysis, text.index("X[n,i]"))
    assert x is not None and "X[b:2, d:2]" in x.markdown


# ----------------------------------------------------------------------- CLI

def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_fuse_check_run_and_explain_a_program_with_functions():
    path = str(EXAMPLES / "transformer_fn.fuse")
    checked = cli("check", path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = cli("run", path, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert "Y" in json.loads(ran.stdout)["outputs"]
    explained = cli("explain", path)
    assert explained.returncode == 0, explained.stderr
    assert "q@head.1[p,k] = WQ[0,0,k,d] X[p,d]   (from fn head in fn layer, called at " \
           "line 36)" in explained.stdout


def test_fuse_check_reports_a_mistake_in_a_call_at_the_call(tmp_path):
    path = tmp_path / "bad.fuse"
    path.write_text(DENSE + "V[k] = const([1,2,3])\nH[n,h] = dense(X[n,i], W[h,i,j])\n",
                    encoding="utf-8")
    checked = cli("check", str(path), "--format", "json")
    assert checked.returncode == 1
    found = json.loads(checked.stdout)
    diags = found["diagnostics"] if isinstance(found, dict) else found
    (diag,) = [d for d in diags if d["code"] == "fn-rank"]
    assert (diag["line"], diag["column"]) == (7, 10)
    assert "argument 2 of `dense` has 3 indices" in diag["message"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_function_over_relations_and_a_guarded_rule(backend):
    text = """\
fn hop(e(x,y)) -> r(x,y) { r(x,y) = e(x,w) e(w,y) }
Edge(A, B)
Edge(B, C)
Edge(C, D)
Edge(D, A)
Two(a,c) = hop(Edge(a,c))
Reach(a,b) = Edge(a,b)
Reach(a,c) = Reach(a,b) Edge(b,c)
Far(a,c) = Reach(a,c) when (a != c)
export Two, Far
"""
    assert errors(text) == []
    out = {k: np.asarray(v) for k, v in run(text, backend).items()}
    assert sorted(zip(*np.nonzero(out["Two"]))) == [(0, 2), (1, 3), (2, 0), (3, 1)]
    assert int(out["Far"].sum()) == 12  # every pair on the cycle but a node with itself
