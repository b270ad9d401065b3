"""The checker's warnings are precise: a correct program checks clean (no warning
on a deliberate pattern), and each ML mistake is told once, at the text the user
wrote (a `fn` body's own line, not each call), with a quick fix whose edit gives a
program that checks clean — through `fuse check --format json` and `analyze`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fuse_lang import analyze

ROOT = Path(__file__).resolve().parent.parent

DENSE = "axis n = 3, d = 8, f = 4\nparam X[n,d], W[f,d], B[f]\n"


def problems(text: str) -> list:
    """The diagnostics above information (a recursion's note is not a problem)."""
    return [d for d in analyze(text).diagnostics if d.severity.value != "information"]


def fixed(text: str, fix) -> str:
    for edit in sorted(fix.edits, key=lambda e: e.span.start, reverse=True):
        text = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    return text


# --------------------------------------------------------------- clean programs
@pytest.mark.parametrize("body", [
    # a max of each of two tensors, each by its own reduce: no join was meant
    "s[b] = (reduce(max, i) x[b,i]) (reduce(max, ii) z[b,ii])",
    # each summed inside its own call's argument
    "s[b] = exp(x[b,i]) exp(z[b,ii])",
])
def test_close_indices_in_their_own_scopes_of_a_body_are_no_typo(body):
    # (the same equation outside a function was clean already)
    text = ("axis n = 2, d = 3\nparam X[n,d], Z[n,d]\n"
            f"fn f(x[b,i], z[b,i]) -> s[b] {{\n  {body}\n}}\nS[n] = f(X[n,d], Z[n,d])\nexport S\n")
    assert problems(text) == []


def test_a_bias_of_another_extent_in_a_body_is_a_deliberate_sum():
    # c's axis (5) is neither b's (3) nor o's (4) at the call: as in a program equation
    text = ("axis n = 3, d = 8, f = 4, m = 5\nparam X[n,d], W[f,d], C[m]\nfn dense(w[o,i], x[b,i], c[j]) -> y[b,o] {\n"
            "  y[b,o] = relu(w[o,i] x[b,i] + c[j])\n}\nY[n,f] = dense(W[f,d], X[n,d], C[m])\n"
            "export Y\n")
    assert problems(text) == []


@pytest.mark.parametrize("loss", [
    "L = CE[n] / 4",                      # the mean of the per-example losses
    "L = 0.25 CE[n]",
    "L = CE[n] / N + 0.001 W[c,d] W[c,d]",  # plus weight decay, by a scalar tensor
])
def test_a_sum_scaled_by_numbers_is_no_lone_index(loss):
    # (`CE[…] shares no index with the rest of its product`: the rest was a number)
    text = ("axis n = 4, c = 2, d = 3\nparam CE[n], W[c,d]\nN = const(4)\n"
            f"{loss}\nexport L\n")
    assert [d.code for d in problems(text) if d.code != "unused-tensor"] == []


def test_a_factor_beside_an_indexed_one_is_still_a_lone_index():
    text = "axis i = 2, j = 2, k = 2\nparam W[i,j], X[j], B[k]\nY[i] = W[i,j] X[j] B[k] / 2\nexport Y\n"
    (diag,) = problems(text)
    assert diag.code == "lone-index" and text[diag.span.start:diag.span.end] == "k"


# --------------------------------------------------------------- mistakes in a fn body
def check_json(path: Path) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "--format", "json",
                           str(path)], capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


def test_a_lone_bias_index_in_a_body_is_told_once_at_the_body(tmp_path):
    text = (DENSE + "fn dense(w[o,i], x[b,i], c[o]) -> y[b,o] {\n"
            "  y[b,o] = relu(w[o,i] x[b,i] + c[oo])\n}\n"
            "Y[n,f] = dense(W[f,d], X[n,d], B[f])\nZ[n,f] = dense(W[f,d], X[n,d], B[f])\n"
            "export Y, Z\n")
    path = tmp_path / "dense.fuse"
    path.write_text(text, encoding="utf-8")
    (diag,) = check_json(path)  # two calls, one warning
    assert diag["code"] == "lone-index" and diag["severity"] == "warning"
    assert (diag["line"], diag["column"], diag["end_column"]) == (4, 35, 37)
    assert "`oo`" in diag["message"] and "did you mean `o`" in diag["message"]
    rename = diag["fixes"][0]
    (edit,) = rename["edits"]
    assert text[edit["start"]:edit["end"]] == "oo" and edit["new_text"] == "o"
    path.write_text(text[:edit["start"]] + "o" + text[edit["end"]:], encoding="utf-8")
    assert check_json(path) == []


def test_attention_in_a_body_that_never_reads_the_key_index_is_a_hint():
    text = ("axis t = 4, k = 4\nparam Q[t,k], K[t,k], V[t,k]\n"
            "fn att(q[s,e], kk[s,e], v[s,e]) -> o[s,e] {\n"
            "  w[s,s'.] = softmax(q[s,e] kk[s',e])\n  o[s,e] = w[s,s'] v[s,e]\n}\n"
            "O[t,k] = att(Q[t,k], K[t,k], V[t,k])\nexport O\n")
    (diag,) = problems(text)
    assert diag.code == "normalised-sum"
    assert text[diag.span.start:diag.span.end] == "s'"
    assert text.rfind("w[s,s']") < diag.span.start < text.find("v[s,e]\n}")  # in the body
    assert problems(fixed(text, diag.fixes[0])) == []


def test_a_dot_with_no_softmax_in_a_body_is_removed_at_the_body():
    text = ("axis n = 3, d = 8\nparam X[n,d]\nfn g(x[b,i]) -> y[b,i] {\n  y[b,i.] = x[b,i] + 1\n}\n"
            "Y[n,d] = g(X[n,d])\nZ[n,d] = g(X[n,d])\nexport Y, Z\n")
    (diag,) = problems(text)  # once, not once per call
    assert diag.code == "dotted-axis" and diag.severity.value == "warning"
    assert text[diag.span.start:diag.span.end] == "i."
    (fix,) = diag.fixes
    # (the fix deleted the call's closing parenthesis: `g(X[n,d]`, a syntax error)
    assert problems(fixed(text, fix)) == []


def test_a_dot_on_a_bodys_right_hand_side_is_an_error_at_the_call_without_a_wrong_fix():
    text = ("axis n = 3, d = 8\nparam X[n,d]\nfn g(x[b,i]) -> y[b,i] {\n  y[b,i] = x[b,i.] + 1\n}\n"
            "Y[n,d] = g(X[n,d])\nexport Y\n")
    (diag,) = problems(text)
    assert diag.code == "dotted-axis" and diag.severity.value == "error"
    assert text[diag.span.start:diag.span.end] == "g(X[n,d])"
    assert diag.fixes == ()


# --------------------------------------------------------------- one diagnosis per slip
@pytest.mark.parametrize("text, slip, meant", [
    ("axis i = 4, t = 5, j = 4\nparam W[i,j], U[i,t]\n"
     "X[i,*t+1] = tanh(W[i,j] X[jj,*t] + U[i,t])\nexport X\n", "jj", "j"),
    ("axis x1 = 3, x2 = 3\nparam P1[x1], P2[x2]\nZ = P1[x1] P2[x2]\nexport Z\n", "x2", "x1"),
    ("axis n = 4\nparam W[n,n'], U[n]\nfn cell(w[i,j], h[j], u[i]) -> y[i] {\n"
     "  y[i] = tanh(w[i,j] h[jj] + u[i])\n}\nY[n] = cell(W[n,n'], U[n'], U[n])\nexport Y\n",
     "jj", "j"),
])
def test_a_likely_typo_is_not_also_a_lone_index(text, slip, meant):
    # (`jj` was also a lone index, its fix `jj` -> `i` disagreeing with the typo's)
    (diag,) = problems(text)
    assert diag.code == "likely-typo-index"
    assert text[diag.span.start:diag.span.end] == slip
    assert diag.fixes[0].title == f"Change `{slip}` to `{meant}`"
    assert problems(fixed(text, diag.fixes[0])) == []


# --------------------------------------------------------------- attention that is off
ATTENTION = "axis t = 4, k = 4\nparam Q[t,k], K[t,k], V[t,k], B[k]\n"


@pytest.mark.parametrize("softmax, output", [
    # the axis given by `axis=` (it was not looked at: clean)
    ("S[t,t'] = softmax(Q[t,k] K[t',k], axis=t')", "O[t,k] = S[t,t'] V[t,k]"),
    # a bias added: a term of a sum (it was a lone index, `t'` -> `k`)
    ("S[t,t'.] = softmax(Q[t,k] K[t',k])", "O[t,k] = S[t,t'] V[t,k] + B[k]"),
])
def test_a_softmax_summed_along_its_axis_is_a_hint_with_the_value_fix(softmax, output):
    text = f"{ATTENTION}{softmax}\n{output}\nexport O\n"
    (diag,) = [d for d in problems(text) if d.code != "unused-tensor"]
    assert diag.code == "normalised-sum"
    assert text[diag.span.start:diag.span.end] == "t'"
    assert diag.fixes[0].title == "Change `V`'s `t` to `t'`"
    assert [d.code for d in problems(fixed(text, diag.fixes[0]))
            if d.code != "unused-tensor"] == []


def test_a_softmax_along_another_axis_is_no_normalised_sum():
    text = (f"{ATTENTION}S[t,t'] = softmax(Q[t,k] K[t',k], axis=t)\n"
            "O[t,k] = S[t,t'] V[t',k]\nexport O\n")
    assert [d.code for d in problems(text) if d.code != "unused-tensor"] == []
