"""An audit of issue 34 (the checker catches an ML user's mistakes where they are
made) with programs its first tests do not write: a hand-written softmax that
divides by an unsummed tensor, a bias added by a second equation (`+=`), a bias
read with another index of the equation, a transposed weight beside a correct
use, a weight of an imported file transposed at its use, and a lone index that
an `axis` declaration makes a clash — each told once, at the token of the
mistake, with a fix whose edit checks clean; and the near misses that must stay
clean — through `fuse check --format json` and `analyze`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuse_lang import analyze

ROOT = Path(__file__).resolve().parent.parent
DENSE = "axis b = 3, v = 5\nparam Z[b,v]\n"
LAYER = "axis n = 3, d = 8, f = 4\nparam X[n,d], W[f,d], B[f]\n"


def check_json(path: Path) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "--format", "json",
                           str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


def apply(text: str, edits: list[dict]) -> str:
    for edit in sorted(edits, key=lambda e: e["start"], reverse=True):
        text = text[:edit["start"]] + edit["new_text"] + text[edit["end"]:]
    return text


def at(text: str, needle: str, within: str | None = None) -> tuple[int, int, int, int]:
    """The 1-based (line, column, end_line, end_column) of `needle` (inside the first
    `within` when given), as `fuse check --format json` writes a range."""
    start = text.index(within) + within.index(needle) if within else text.index(needle)
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return line, column, line, column + len(needle)


def where(diag: dict) -> tuple[int, int, int, int]:
    return diag["line"], diag["column"], diag["end_line"], diag["end_column"]


def problems(text: str) -> list:
    return [d for d in analyze(text).diagnostics if d.severity.value != "information"]


# --------------------------------------------------------------- a divisor's lone index
SOFTMAX = DENSE + "E[b,v] = exp(Z[b,v])\nP[b,v] = E[b,v] / E[b,v']\nexport P\n"


def test_a_softmax_written_out_that_divides_by_an_unsummed_tensor(tmp_path):
    # Σ_v' E[b,v] / E[b,v'] is no softmax: the sum is of the quotient, not the divisor
    path = tmp_path / "softmax.fuse"
    path.write_text(SOFTMAX, encoding="utf-8")
    (diag,) = check_json(path)
    assert (diag["code"], diag["severity"]) == ("lone-index", "warning")
    assert where(diag) == at(SOFTMAX, "v'")
    assert diag["message"] == (
        "`v'` occurs only here, in a divisor, and not on the left-hand side, so the whole "
        "quotient is summed over `v'`, not the divisor: to divide by the sum of `E` over "
        "`v'`, write `reduce(sum, v')` around it")
    (fix,) = diag["fixes"]
    assert fix["title"] == "Sum over `v'` explicitly (reduce)"
    fixed = apply(SOFTMAX, fix["edits"])
    assert "P[b,v] = E[b,v] / (reduce(sum, v') E[b,v'])\n" in fixed
    path.write_text(fixed, encoding="utf-8")
    assert check_json(path) == []


@pytest.mark.parametrize("line", [
    "S[b] = E[b,v]\nP[b,v] = E[b,v] / S[b]",              # the sum named first
    "P[b,v] = E[b,v] / (reduce(sum, v') E[b,v'])",          # the sum written out
    "M[b] = E[b,v] / 5",                                    # a mean by a number
    "N = const(5)\nM[b] = E[b,v] / N",                      # by a scalar tensor
    "H = 1 / E[b,v]",                                       # a sum of reciprocals
])
def test_a_divisor_that_is_meant_stays_clean(line):
    text = DENSE + "E[b,v] = exp(Z[b,v])\n" + line + "\n"
    codes = {d.code for d in problems(text)} - {"unused-tensor"}
    assert codes == set(), codes


def test_a_divisor_in_a_function_body_is_told_once_at_the_body():
    text = (DENSE + "fn smax(z[b,v]) -> p[b,v] { e[b,v] = exp(z[b,v]); p[b,v] = e[b,v] / e[b,v'] }"
            "\nP[b,v] = smax(Z[b,v])\nQ[b,v] = smax(Z[b,v])\nexport P, Q\n")
    (diag,) = problems(text)
    assert diag.code == "lone-index"
    assert diag.span.start == text.index("e[b,v'] }") + 4  # the body's `v'`, not a call


# --------------------------------------------------------------- a second equation
def test_a_bias_added_by_a_second_equation_is_a_term_of_its_sum(tmp_path):
    text = LAYER + "H[n,f] = W[f,d] X[n,d]\nH[n,f] += B[g]\nexport H\n"
    path = tmp_path / "plus.fuse"
    path.write_text(text, encoding="utf-8")
    (diag,) = check_json(path)
    assert diag["code"] == "lone-index"
    assert where(diag) == at(text, "g", "B[g]")
    assert diag["message"] == (
        "`g` occurs only here and not on the left-hand side, so it is summed over this "
        "equation, which adds to `H`'s other equations: the sum of `B` over `g` is added "
        "to every element; did you mean `f`?")
    rename, explicit = diag["fixes"]
    assert rename["title"] == "Change `g` to `f`"
    assert apply(text, rename["edits"]).endswith("H[n,f] += B[f]\nexport H\n")
    assert "H[n,f] += (reduce(sum, g) B[g])" in apply(text, explicit["edits"])
    path.write_text(apply(text, rename["edits"]), encoding="utf-8")
    assert check_json(path) == []


def test_a_repeated_equation_is_a_term_as_much_as_plus_equals():
    text = LAYER + "H[n,f] = W[f,d] X[n,d]\nH[n,f] = 0.5 B[g]\nexport H\n"
    (diag,) = problems(text)
    assert diag.code == "lone-index" and text[diag.span.start:diag.span.end] == "g"


@pytest.mark.parametrize("text", [
    # two projections that add: each reads the left-hand side's index
    "P = const([[1,2],[3,4]])\nQ = const([[1,2],[3,4]])\nS[o] = P[b,o]\nS[o] += Q[c,o]\n"
    "export S",
    # a scalar loss with a regulariser in its own equation
    "A = const([1,2])\nR = const([3,4])\nL = A[n]\nL += 0.01 R[w]\nexport L",
    # one equation: a deliberate projection, as before
    "P = const([[1,2],[3,4]])\nS[o] = P[b,o]\nexport S",
    # a bias of another extent than every left-hand-side index: a sum that is meant
    "axis n = 3, f = 4\nparam B[e], A[n,f]\naxis e = 7\nH[n,f] = A[n,f]\nH[n,f] += B[e]\n"
    "export H",
])
def test_second_equations_that_are_meant_stay_clean(text):
    codes = {d.code for d in problems(text)}
    assert "lone-index" not in codes, codes


# --------------------------------------------------------------- conflicts at the slip
def write_block(tmp_path: Path, body: str) -> tuple[Path, str]:
    shapes = {"x": (2, 5, 32), "w1": (64, 32), "w2": (32, 64), "b1": (64,)}
    for name, shape in shapes.items():
        np.save(tmp_path / f"{name}.npy", np.zeros(shape, dtype=np.float32))
    text = ('X[b,t,d] = "x.npy"\nW1[f,d] = "w1.npy"\nW2[d,f] = "w2.npy"\nB1[f] = "b1.npy"\n'
            + body)
    path = tmp_path / "block.fuse"
    path.write_text(text, encoding="utf-8")
    return path, text


def test_a_bias_read_with_another_index_is_the_error_not_the_input(tmp_path):
    # `d` is 32 in W1 and in X and 64 only in B1: B1[d] is the slip
    path, text = write_block(tmp_path, "H1[b,t,f] = relu(W1[f,d] X[b,t,d] + B1[d])\nexport H1\n")
    (diag,) = [d for d in check_json(path) if d["severity"] == "error"]
    assert diag["code"] == "extent-conflict"
    assert where(diag) == at(text, "B1[d]")
    assert diag["message"] == (
        "extents conflict where `B1` is used: `d` has extent 32 in this equation (from the "
        "shape of x.npy) but indexes axis 0 of `B1`, of extent 64 (from the shape of b1.npy)")


def test_a_weight_transposed_beside_a_correct_use_is_the_error(tmp_path):
    # only `f` clashes (32 in W2, 64 in H1 as W1 and B1 made it): W2[f,d] is the slip
    path, text = write_block(tmp_path, "H1[b,t,f] = relu(W1[f,d] X[b,t,d] + B1[f])\n"
                                       "Y[b,t,d] = W2[f,d] H1[b,t,f]\nexport Y\n")
    (diag,) = check_json(path)
    assert diag["code"] == "extent-conflict"
    assert where(diag) == at(text, "W2[f,d]", "= W2[f,d]")
    assert "`f` has extent 64 in this equation (from the shape of w1.npy) but indexes axis 0 " \
           "of `W2`, of extent 32 (from the shape of w2.npy)" in diag["message"]


def test_an_imported_weight_transposed_at_its_use_is_an_error_at_the_use(tmp_path):
    (tmp_path / "lib.fuse").write_text(
        "axis n = 3, d = 8, f = 4\nparam W[f,d]\n"
        "X[n,d] = const([[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8]])\n",
        encoding="utf-8")
    text = 'import "lib.fuse" as m\nZ[n,d] = m::X[n,d] + m::W[d,n]\nexport Z\n'
    path = tmp_path / "main.fuse"
    path.write_text(text, encoding="utf-8")
    # (not an `import-error` blaming the library's literal, whose two axes both clash,
    # nor its `param W[f,d]`: the library checks clean on its own)
    (diag,) = check_json(path)
    assert diag["code"] == "extent-conflict"
    assert where(diag) == at(text, "m::W[d,n]")
    # (the library's own `axis f = 4`, as the library writes it)
    assert "`d` has extent 8 in this equation (from this literal) but indexes axis 0 of " \
           "`m::W`, of extent 4 (from axis f = 4)" in diag["message"]
    assert "`n` has extent 3 in this equation (from this literal) but indexes axis 1 of " \
           "`m::W`, of extent 8 (from axis d = 8)" in diag["message"]
    assert {(r["path"].endswith("lib.fuse"), r["line"]) for r in diag["related"]} == \
        {(True, 3), (True, 1)}


def test_a_lone_index_an_axis_declaration_makes_a_clash_is_one_error_with_the_rename():
    text = LAYER + "{ let h[n,f] = W[f,d] X[n,d]\n  H[n,f] = h[n,f] + B[d] }\nexport H\n"
    a = analyze(text)
    (diag,) = [d for d in a.diagnostics if d.severity.value != "information"]
    assert diag.code == "extent-conflict"
    assert text[diag.span.start:diag.span.end] == "B[d]"
    assert diag.message == (
        "extents conflict where `B` is used: `d` has extent 8 in this equation (from axis "
        "d = 8) but indexes axis 0 of `B`, of extent 4 (from axis f = 4)")
    (rename,) = diag.fixes
    assert rename.title == "Change `d` to `f`"
    (edit,) = rename.edits
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert problems(fixed) == []


# --------------------------------------------------------------- other places, same rule
@pytest.mark.parametrize("line, slip", [
    ("H[n,f] = gelu(W[f,d] X[n,d] + B[g])", "g"),                   # another builtin
    ("H[n,f] = W[f,d] X[n,d] - B[e]", "e"),                          # subtracted
    ("H[n,f] = W[f,d] * X[n,d] + 0.5 B[f']", "f'"),                  # a prime, scaled
    ("let h[n,f] = W[f,d] X[n,d] + B[g]\nH[n,f] = relu(h[n,f])", "g"),  # a file's let
    ("{ let h[n,f] = W[f,d] X[n,d] + B[g]; H[n,f] = tanh(h[n,f]) }", "g"),  # a block
])
def test_a_bias_slip_is_told_at_the_index_wherever_the_equation_is(line, slip):
    text = LAYER + line + "\nexport H\n"
    (diag,) = problems(text)
    assert diag.code == "lone-index"
    b = text.index("B[" + slip + "]") + 2
    assert (diag.span.start, diag.span.end) == (b, b + len(slip))
    assert diag.message.endswith("did you mean `f`?")


@pytest.mark.parametrize("text", [
    # `n` and `f` have one extent: the nearest letter, not the first index
    "axis n = 4, d = 8, f = 4\nparam X[n,d], W[f,d], B[f]\nH[n,f] = W[f,d] X[n,d] + B[g]\n"
    "export H\n",
    # a function body, its extents not known where it is written
    LAYER + "fn lin(x[n,d], w[f,d], b[f]) -> y[n,f] { y[n,f] = w[f,d] x[n,d] + b[g] }\n"
    "H[n,f] = lin(X[n,d], W[f,d], B[f])\nexport H\n",
])
def test_the_rename_of_equally_likely_indices_is_the_nearest_letter(text):
    (diag,) = problems(text)
    assert diag.code == "lone-index"
    assert text[diag.span.start:diag.span.end] == "g"
    assert diag.fixes[0].title == "Change `g` to `f`"


# --------------------------------------------------------------- a recurrence that never steps
RNN = ("axis t = 3, i = 2\nW = const([[1,0],[0,1]])\nU = const([[1,1,1],[2,2,2]])\n"
       "X[i,*t] = tanh(W[i,j] X[j,*t] + U[i,t])\nexport X\n")


def test_an_rnn_update_without_the_plus_one_is_an_error_with_the_fix(tmp_path):
    path = tmp_path / "rnn.fuse"
    path.write_text(RNN, encoding="utf-8")
    (diag,) = [d for d in check_json(path) if d["severity"] == "error"]
    assert diag["code"] == "virtual-step"
    assert where(diag) == at(RNN, "X[i,*t]")
    assert diag["message"] == (
        "`X[..., *t]` reads `X` at the step it writes, and no equation of `X` writes `*t+1`: "
        "`t` never steps, so a run would only chain `X` to a fixpoint; write the update at "
        "`*t+1` (with a start `X[..., *t] = ...` if it is not 0)")
    (fix,) = diag["fixes"]
    fixed = apply(RNN, fix["edits"])
    assert "X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])" in fixed
    assert problems(fixed) == []


@pytest.mark.parametrize("equations", [
    "X[i,*t] = U[i,0]\nX[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])",   # a start and a step
    "X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])\nY[i] = X[i,*t]",      # its last value read
])
def test_recurrences_that_step_stay_clean(equations):
    text = RNN.replace("X[i,*t] = tanh(W[i,j] X[j,*t] + U[i,t])", equations)
    assert {d.code for d in problems(text)} <= {"unused-tensor"}


# --------------------------------------------------------------- PyTorch's initialiser names
@pytest.mark.parametrize("written, meant", [
    ("xavier", "glorot"), ("xavier_uniform_", "glorot"), ("Xavier", "glorot"),
    ("he", "kaiming"), ("kaiming_uniform_", "kaiming"), ("zeros_", "zeros"),
])
def test_a_pytorch_initialiser_name_suggests_fuses(written, meant):
    text = f"axis i = 4, o = 2\nparam W[o,i] = {written}\nexport W\n"
    (diag,) = problems(text)
    assert diag.code == "bad-initialiser"
    assert text[diag.span.start:diag.span.end] == written
    assert diag.message.startswith(f"`{written}` is not an initialiser; did you mean `{meant}`? (")


def test_a_normal_variant_is_told_that_fuses_draws_uniformly():
    text = "axis i = 4, o = 2\nparam W[o,i] = kaiming_normal_\nexport W\n"
    (diag,) = problems(text)
    assert diag.message.startswith(
        "`kaiming_normal_` is not an initialiser; did you mean `kaiming`? Fuse's `kaiming` "
        "draws uniformly; for a normal draw, write `normal(std)`. (the initialisers: ")


# --------------------------------------------------------------- valid padding, joined later
def test_a_valid_convolution_joined_with_its_full_input_is_a_conflict_at_the_join(tmp_path):
    # (the valid padding was dropped without a word: H had 7 positions, zeros past the end)
    text = ("X = const([1,2,3,4,5,6,7])\nK = const([1,1,1])\naxis x = valid\n"
            "H[x] = K[dx] X[x+dx]\nG[x] = H[x] X[x]\nexport G\n")
    path = tmp_path / "valid.fuse"
    path.write_text(text, encoding="utf-8")
    (diag,) = check_json(path)
    assert diag["code"] == "extent-conflict"
    assert where(diag) == at(text, "X[x]", "H[x] X[x]")
    assert diag["message"] == (
        "extents conflict where `X` is used: `x` has extent 5 in this equation (from valid "
        "windows over an axis of 7) but indexes axis 0 of `X`, of extent 7 (from this literal)")


def test_a_valid_convolution_joined_with_its_own_length_stays_clean():
    text = ("X = const([1,2,3,4,5,6,7])\nK = const([1,1,1])\nB = const([1,2,3,4,5])\n"
            "axis x = valid\nH[x] = K[dx] X[x+dx]\nG[x] = H[x] + B[x]\nexport G\n")
    a = analyze(text)
    assert [d for d in a.diagnostics if d.severity.value != "information"] == []
    assert a.tensors["G"].shape == (5,)


# --------------------------------------------------------------- padding on the wrong index
WINDOW = "X = const([1,2,3,4,5,6,7])\nK = const([1,1,1])\n"


@pytest.mark.parametrize("padding, effect", [
    ("valid", "pads nothing"),
    ("same", "moves the window back by half the position's extent, not the tap's"),
])
def test_padding_declared_on_the_kernels_tap_is_a_warning_with_the_fix(padding, effect):
    text = WINDOW + f"axis dx = {padding}\nH[x] = K[dx] X[x+dx]\nexport H\n"
    a = analyze(text)
    (diag,) = [d for d in a.diagnostics if d.severity.value != "information"]
    assert diag.code == "padding-index" and diag.severity.value == "warning"
    assert a.lines.position(diag.span.start) == (2, 5)
    assert diag.message == (
        f"`dx` is a window's tap, not its position: in `x+dx` the position is `x` (`dx` is "
        f"the kernel's), so `axis dx = {padding}` {effect}; declare the padding on `x`")
    (fix,) = diag.fixes
    (edit,) = fix.edits
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert f"axis x = {padding}\n" in fixed
    b = analyze(fixed)
    assert [d for d in b.diagnostics if d.severity.value != "information"] == []
    assert b.tensors["H"].shape == ((5,) if padding == "valid" else (7,))


@pytest.mark.parametrize("lines, note", [
    ("axis y = valid\nH[x] = K[dx] X[x+dx]", ""),
    ("axis x = valid\nfn conv(k[dx], v[x]) -> y[x] { y[x] = k[dx] v[x+dx] }\n"
     "H[x] = conv(K[dx], X[x])",
     " (a declaration does not reach into a `fn` body, whose indices are its own)"),
])
def test_padding_on_no_window_does_nothing_and_says_so(lines, note):
    text = WINDOW + lines + "\nexport H\n"
    (diag,) = problems(text)
    assert diag.code == "padding-index"
    name = lines[5]
    assert diag.message == (f"no window `{name}+…` has `{name}` as its position, so "
                            f"`axis {name} = valid` does nothing{note}")


@pytest.mark.parametrize("lines", [
    "axis x = same\nB = const([1,2,3,4,5,6,7])\nH[x] = K[dx] X[x+dx] + B[x]",  # a bias
    "axis x = valid\nS = K[dx] X[x+dx]",           # the valid windows summed
    "axis x = valid\nP[x/2] max= K[dx] X[x+dx]",   # pooled as it is convolved
])
def test_padding_on_a_windows_position_stays_clean(lines):
    assert problems(WINDOW + lines + "\n") == []


# --------------------------------------------------------------- a transposed param
def test_a_param_transposed_at_its_use_names_both_axes_and_swaps(tmp_path):
    # two declared axes: one union merges both domains and records one clash; both
    # indices are named, and the swap is offered, as for weights read from files
    text = LAYER + "H[n,f] = relu(W[d,f] X[n,d] + B[f])\nexport H\n"
    path = tmp_path / "param.fuse"
    path.write_text(text, encoding="utf-8")
    (diag,) = check_json(path)
    assert diag["code"] == "extent-conflict"
    assert where(diag) == at(text, "W[d,f]")
    assert diag["message"] == (
        "extents conflict where `W` is used: `f` has extent 4 in this equation (from axis "
        "f = 4) but indexes axis 1 of `W`, of extent 8 (from axis d = 8); `d` has extent 8 "
        "in this equation (from axis d = 8) but indexes axis 0 of `W`, of extent 4 (from "
        "axis f = 4)")
    (swap,) = diag["fixes"]
    assert swap["title"] == "Swap to `W[f,d]`"
    path.write_text(apply(text, swap["edits"]), encoding="utf-8")
    assert check_json(path) == []
