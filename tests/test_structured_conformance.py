"""The structured syntax against its contract (LANGUAGE.md §12-13, docs/language.md:
Functions, Local tensors, Conditions, Choices, Imports, Builtins): programs that
combine `fn`, `let` blocks, `select`/`case`/`when`, `&& || !`, keyword arguments
and `import` as a user would, each value computed here with NumPy, through
`fuse_lang.compile`/`analyze` and the CLI.  The regression tests are the
mismatches an audit found, minimised."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main


def errors(text: str, path: Path | None = None) -> list[fuse_lang.Diagnostic]:
    analysis = fuse_lang.analyze(text, str(path) if path else None)
    return [d for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]


def run(text: str, **options) -> dict[str, np.ndarray]:
    result = fuse_lang.compile(text, **options).run()
    return {name: np.asarray(value) for name, value in result.items()}


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


A = np.array([[1, -5], [3, 0], [4, 2]], dtype=float)
A_TEXT = "A = const([[1, -5], [3, 0], [4, 2]])\n"


# ------------------------------------------------------------ values

def test_conditions_and_choices_match_numpy():
    text = A_TEXT + """\
R1[i,j] = !A[i,j]
R2[i,j] = !!(A[i,j] > 1)
R3[i,j] = case { A[i,j] > 2 -> 1; A[i,j] < 0 -> 2 }
R4[i] = A[i,j] (A[i,j] > 0 || j == 1) + 1
R5[i] = A[i,j] when A[i,j] > 0 && i != j
R6[i,j] = !(A[i,j] > 1) && !(A[i,j] < -1) || i == 2
R7[i] = select(A[i,j] > 0, A[i,j], 0) when i > 0
R8[i,j] = !(A[i,j] != 0)
export R1, R2, R3, R4, R5, R6, R7, R8
"""
    i, j = np.arange(3)[:, None], np.arange(2)[None, :]
    want = {
        "R1": 1 - (A > 0), "R2": A > 1, "R3": np.where(A > 2, 1, np.where(A < 0, 2, 0)),
        "R4": (A * ((A > 0) | (j == 1))).sum(1) + 1,
        "R5": np.where((A > 0) & (i != j), A, 0).sum(1),
        "R6": (~(A > 1) & ~(A < -1)) | (i == 2),
        "R7": np.where(np.arange(3) > 0, np.where(A > 0, A, 0).sum(1), 0),
        "R8": A == 0,
    }
    got = run(text)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], np.asarray(value, dtype=float), err_msg=name)


def test_functions_calling_functions_with_lets_and_colliding_indices():
    text = """\
A = const([[1, 2, 3], [4, 5, 6]])
B = const([[1, 0], [2, 1], [0, 3]])
fn mm(x[i,k], y[k,j]) -> z[i,j] { z[i,j] = x[i,k] y[k,j] }
fn tr(x[i,j]) -> t[j,i] { t[j,i] = x[i,j] }
fn sq(x[i,j]) -> y[i,j] {
  let t[i,j] = x[i,j] x[i,j]
  A[i,j] = t[i,j] + 1            # a body's own tensor: not the program's A
  y[i,j] = A[i,j]
}
C[k,i] = mm(A[k,j], B[j,i])
D[j,i] = tr(mm(A[i,k], B[k,j]))
F[i] = mm(A[i,k], B[k,j])
G[i,j] = sq(mm(A[i,k], B[k,j]))
export C, D, F, G
"""
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=float)
    b = np.array([[1, 0], [2, 1], [0, 3]], dtype=float)
    got = run(text)
    np.testing.assert_allclose(got["C"], a @ b)
    np.testing.assert_allclose(got["D"], (a @ b).T)
    np.testing.assert_allclose(got["F"], (a @ b).sum(1))
    np.testing.assert_allclose(got["G"], (a @ b) ** 2 + 1)


def test_let_blocks_nest_and_siblings_keep_their_own_locals():
    text = """\
X = const([1, 2, 3])
{
  let h[i] = X[i] * 2
  {
    let g[i] = h[i] + 1
    let h2[i] = g[i] g[i]
    Y[i] = g[i] h[i] + h2[i]
  }
  Z[i] = h[i]
}
{ let h[i] = X[i] - 1; W[i] = h[i] }
let Sc = 0.5
Out[i] = Sc W[i]
export Y, Z, W, Out
"""
    x = np.array([1, 2, 3.0])
    h, w = 2 * x, x - 1
    got = run(text)
    np.testing.assert_allclose(got["Y"], (h + 1) * h + (h + 1) ** 2)
    np.testing.assert_allclose(got["Z"], h)
    np.testing.assert_allclose(got["Out"], 0.5 * w)


# ------------------------------------------------------------ keyword arguments

@pytest.mark.parametrize("call, want", [
    ("max(b=0, a=X[i] - 2)", [0, 0, 1]),                 # in any order, by name
    ("pow(n=2, x=X[i])", [1, 4, 9]),
    ("select(X[i] > 1, b=0, a=X[i])", [0, 2, 3]),
    ("sig(T=2, x=X[i])", 1 / (1 + np.exp(-np.array([1, 2, 3]) / 2))),
])
def test_keyword_arguments_bind_by_name_in_any_order(call, want):
    got = run(f"X = const([1, 2, 3])\nY[i] = {call}\nexport Y\n")
    np.testing.assert_allclose(got["Y"], want, rtol=1e-6)


@pytest.mark.parametrize("call, said", [
    # a keyword given twice ran with one of them (topk: k=2's shape, k=1's values)
    ("topk(X[i], k=2, k=1)", "`topk` is given `k=` twice"),
    ("sig(X[i], T=0.5, T=1)", "`sig` is given `T=` twice"),
    ("lnorm(X[i], eps=1e-5, eps=1)", "`lnorm` is given `eps=` twice"),
    ("max(a=X[i], a=1)", "`max` is given `a=` twice"),
    # "given `n` twice: positionally and as `n=`" (and "takes 2 arguments, not 0")
    ("pow(n=2)", "`pow` is given `n=` but not `x` before it"),
    ("pow(X[i], x=2)", "`pow` is given `x` twice: positionally and as `x=`"),
])
def test_a_misplaced_keyword_is_one_clear_error(call, said):
    found = errors(f"X = const([1, 2, 3])\nY[i] = {call}\nexport Y\n")
    assert [(d.code, d.message.split(" (")[0]) for d in found] == [("bad-argument", said)]


FNS = """\
X = const([1, 2, 3])
fn f(x[i]) -> y[i] { y[i] = x[i] + 1 }
fn g(w[i], v[i]) -> y[i] { y[i] = w[i] - v[i] + f(x=v[i]) }
"""


def test_a_function_takes_its_arguments_by_name_too():
    got = run(FNS + "Y[i] = g(v=X[i], w=2 X[i]) + f(x=f(X[i]))\nexport Y\n")
    x = np.array([1, 2, 3.0])
    np.testing.assert_allclose(got["Y"], (2 * x - x + x + 1) + x + 2)


@pytest.mark.parametrize("call, said, column", [
    # was "`f` takes 1 argument (x[i]), not 1"
    ("f(X[i], y=1)", "`f` has no parameter `y` (parameters: x[i])", 16),
    ("g(X[i], w=X[i])", "`g` is given `w` twice: positionally and as `w=`", 16),
    ("g(w=X[i], w=X[i])", "`g` is given `w=` twice", 18),
    ("g(v=X[i])", "`g` is given `v=` but not `w` before it (w[i], v[i])", 8),
])
def test_a_function_argument_by_a_wrong_name_is_said(call, said, column):
    analysis = fuse_lang.analyze(FNS + f"Y[i] = {call}\nexport Y\n")
    found = [d for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]
    assert [(d.code, d.message) for d in found] == [("fn-arguments", said)]
    assert analysis.lines.position(found[0].span.start) == (3, column - 1)


def test_a_duplicate_parameter_is_pointed_at():
    analysis = fuse_lang.analyze("fn k(x[i], x[i]) -> y[i] { y[i] = x[i] }\n")
    (diag,) = [d for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]
    assert "`x` names two parameters" in diag.message
    assert analysis.lines.position(diag.span.start) == (0, 11)  # the second `x`


# ------------------------------------------------------------ fuse run past errors

@pytest.mark.parametrize("line, code", [
    ("T[i] = two(A[i], A[i])", "fn-arguments"),
    ("T[i] = A[i] +* 2", "syntax-error"),
])
def test_run_refuses_with_the_cause_not_a_cascade(tmp_path, capsys, line, code):
    # a statement left out for its error defined `T`: `fuse run` said "`T` is not
    # defined" (at U's line) and never the error itself, which `fuse check` shows
    path = tmp_path / "p.fuse"
    path.write_text("A = const([1, 2, 3])\nfn two(x[i]) -> y[i] { y[i] = x[i] }\n"
                    f"{line}\nU[i] = T[i] + 1\nexport U\n", encoding="utf-8")
    assert main(["run", str(path)]) == 1
    said = capsys.readouterr().err
    assert f"error[{code}]" in said and "is not defined" not in said
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.load(path, past_errors=True)
    assert f"[{code}]" in str(err.value)


def test_a_target_run_refuses_with_the_cause_in_its_cone_only(tmp_path, capsys):
    path = tmp_path / "p.fuse"
    path.write_text("A = const([1, 2, 3])\nB[i] = A[i] + Nope[i]\n"
                    "fn two(x[i]) -> y[i] { y[i] = x[i] }\nT[i] = two(A[i], A[i])\n"
                    "U[i] = T[i] + 1\nexport U, B\n", encoding="utf-8")
    assert main(["run", "--target", "U", str(path)]) == 1
    said = capsys.readouterr().err
    assert "error[fn-arguments]" in said and "Nope" not in said and "not defined" not in said


# ------------------------------------------------------------ imports

def test_an_uncalled_function_of_an_imported_file_is_checked(tmp_path):
    # checked alone, lib.fuse has errors; imported, they were not reported at all
    write(tmp_path, {"lib.fuse": "W = const([1, 2])\n"
                                 "fn f(x[i]) -> y[i] { y[i] = x[i] + Zz[i] }\n"
                                 "fn g(x[i]) -> y[i] { y[i] = relux(x[i]) }\n"})
    alone = fuse_lang.analyze((tmp_path / "lib.fuse").read_text(), str(tmp_path / "lib.fuse"))
    assert sorted(d.code for d in alone.diagnostics) == ["undefined-tensor", "unknown-function"]
    text = 'import "lib.fuse" as lib\nC[i] = lib::W[i]\nexport C\n'
    found = errors(text, tmp_path / "main.fuse")
    assert [d.code for d in found] == ["import-error", "import-error"]
    assert "line 2: `Zz` is not defined (in `fn f`" in found[0].message
    assert "line 3: `relux` is neither a builtin nor a function" in found[1].message
    assert [r.span for d in found for r in d.related[:1]] == [
        d.span for d in sorted(alone.diagnostics, key=lambda d: d.span.start)]
    # called by the importer, it is said at the call, as before
    called = errors('import "lib.fuse" as lib\nC[i] = lib::f(lib::W[i])\nexport C\n',
                    tmp_path / "main.fuse")
    assert "`lib::Zz` is not defined" in next(d.message for d in called
                                              if d.code == "undefined-tensor")


def test_a_nested_namespace_fix_edits_the_part_that_is_wrong(tmp_path):
    write(tmp_path, {"lib/base.fuse": "W = const([1, 2, 3])\n",
                     "lib/mid.fuse": 'import "base.fuse" as b\nV[i] = b::W[i] + 1\n'})
    head = 'import "lib/mid.fuse" as mm\n'
    text = head + "X[i] = mm::bb::W[i]\nexport X\n"
    (diag,) = errors(text, tmp_path / "main.fuse")
    assert diag.code == "unknown-namespace"
    assert "`bb` is not a namespace in `lib/mid.fuse` (imported as `mm`)" in diag.message
    (edit,) = diag.fixes[0].edits
    assert text[edit.span.start:edit.span.end] == "bb" and edit.new_text == "b"  # was `mm`
    text = head + "X[i] = mm::b::Wx[i]\nexport X\n"
    (diag,) = errors(text, tmp_path / "main.fuse")
    assert diag.code == "undefined-tensor" and "did you mean `mm::b::W`?" in diag.message
    (edit,) = diag.fixes[0].edits
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert errors(fixed, tmp_path / "main.fuse") == []  # was `b::W`: not a namespace here


def test_imports_of_imports_twice_and_facts_added(tmp_path, capsys):
    write(tmp_path, {
        "lib/base.fuse": "Seen(A)\nW = const([1, 2, 3])\nfn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\n",
        "lib/mid.fuse": 'import "base.fuse" as b\nSeen(B)\nV[i] = b::W[i] + 1\n',
        "main.fuse": 'import "lib/mid.fuse" as m\nimport "lib/base.fuse" as base\n'
                     'import "lib/base.fuse" as other\nother::Seen(C)\n'
                     "W[i] = m::V[i] + base::dbl(m::b::W[i])\nQ(x) = base::Seen(x)\n"
                     "export W, Q\n"})
    assert main(["run", "--format", "json", str(tmp_path / "main.fuse")]) == 0
    out = json.loads(capsys.readouterr().out)["outputs"]
    np.testing.assert_allclose(out["W"]["values"], [4, 7, 10])
    assert sorted(map(tuple, out["Q"]["tuples"])) == [("A",), ("C",)]


def test_blocks_and_lets_read_names_through_any_alias(tmp_path):
    # a block's or a top-level let's `other::W` (a second alias) and `m::b::W` (a
    # nested import) were "not defined", though the same equation outside a block
    # read them; and `let lt::Q` of a name the file lacks was no error
    write(tmp_path, {"lib/base.fuse": "Seen(A)\nW = const([1, 2, 3])\n",
                     "lib/mid.fuse": 'import "base.fuse" as b\nV[i] = b::W[i] + 1\n'})
    head = ('import "lib/mid.fuse" as m\nimport "lib/base.fuse" as base\n'
            'import "lib/base.fuse" as other\n')
    text = head + ("{ let t[i] = m::b::W[i]; Y[i] = t[i] + other::W[i] }\n"
                   "let Z[i] = other::W[i]\nZ2[i] = Z[i] + m::V[i]\nexport Y, Z2\n")
    got = run(text, base_dir=tmp_path)
    np.testing.assert_allclose(got["Y"], [2, 4, 6])
    np.testing.assert_allclose(got["Z2"], [3, 5, 7])
    found = errors(head + "{ Y[i] = m::Nope[i] }\nlet base::Q = 1\n", tmp_path / "main.fuse")
    assert [(d.code, d.message) for d in found] == [
        ("undefined-tensor", "`Nope` is not defined in `lib/mid.fuse`, imported as `m`"),
        ("let-redefined", "`base::Q` is an imported file's name: a `let` defines a name "
                          "of this file's own (a plain equation adds to a tensor the "
                          "imported file defines)"),
        ("undefined-tensor", "`Q` is not defined in `lib/base.fuse`, imported as `base`")]


def test_a_block_with_a_syntax_error_does_not_cascade():
    # the block is left out for its error: `Y` was then reported undefined as well
    found = errors("X = const([1, 2])\n{\n  fn f(x[i]) -> y[i] { y[i] = x[i] }\n"
                   "  Y[i] = X[i]\n  let h[i] = 1\n}\nZ[i] = Y[i] + 1\nexport Z\n")
    assert [d.code for d in found] == ["syntax-error"]


def test_a_result_index_meeting_an_argument_index_is_warned():
    # `outer(A[q])`: the result's own `q` and the argument's `q` (bound to `p`) are
    # one index at the call, a diagonal, where the text reads like an outer product
    text = ("fn outer(x[p]) -> s[p,q] { s[p,q] = x[p] x[q] }\nA = const([1, 2, 3])\n"
            "G[q] = outer(A[q])\nH[i,q] = outer(A[i])\nexport G, H\n")
    analysis = fuse_lang.analyze(text)
    assert [(d.code, analysis.lines.position(d.span.start)) for d in analysis.diagnostics] \
        == [("fn-index-clash", (2, 7))]
    got = run(text)
    np.testing.assert_allclose(got["G"], [1, 4, 9])  # what the lowering says it is
    np.testing.assert_allclose(got["H"], np.outer([1, 2, 3], [1, 2, 3]))


def test_arguments_naming_one_parameter_index_differently_are_warned():
    # over x[i], y[i], `f(A[k], A[j])` was read as f(A[k], A[k]) with `j` dropped, and
    # `W[k,j]` then said `j` has no extent "from anything in the program"
    text = ("A = const([1, 2, 3])\nfn f(x[i], y[i]) -> z[i] { z[i] = x[i] y[i] }\n"
            "W[k] = f(A[k], A[j])\nV[k] = f(A[k], 2 A[k])\nexport W, V\n")
    analysis = fuse_lang.analyze(text)
    (diag,) = analysis.diagnostics
    assert diag.code == "fn-index-mismatch"
    assert analysis.lines.position(diag.span.start) == (2, 17)  # the `j`
    got = run(text)
    np.testing.assert_allclose(got["W"], [1, 4, 9])
    np.testing.assert_allclose(got["V"], [2, 8, 18])


@pytest.mark.parametrize("relative", [True, False])
def test_an_import_cycle_back_to_the_program_is_one_error(tmp_path, monkeypatch, relative):
    # named relative (`fuse check main.fuse`), the program was not known as the file
    # its importer imports: a second copy of it was read, and `m::X` in back.fuse
    # was "not defined" besides the cycle (and `me::X` of a self-import read the copy)
    write(tmp_path, {"main.fuse": 'import "back.fuse" as b\nX = 1\nexport X, b::Z\n',
                     "back.fuse": 'import "main.fuse" as m\nZ = m::X + 1\n',
                     "self.fuse": 'import "self.fuse" as me\nX = 1\nY = me::X + 1\nexport Y\n'})
    monkeypatch.chdir(tmp_path)
    for name in ("main.fuse", "self.fuse"):
        path = name if relative else str(tmp_path / name)
        analysis = fuse_lang.analyze((tmp_path / name).read_text(), path)
        assert [d.code for d in analysis.diagnostics] == ["import-cycle"], name


def test_a_lone_index_in_a_written_out_call_is_no_traceback():
    # every node of a call's written-out equation has the call's span: the lone-index
    # check looked `k` up by span, found the comparison's bare `j`, and raised
    # StopIteration out of `fuse check`
    text = ("axis j = 3\nB = const([[1, 2], [3, 4]])\n"
            "fn f(b[k,l]) -> y[j] { y[j] = b[k,l] (j > l) }\nY[j] = f(B[k,l])\nexport Y\n")
    assert errors(text) == []
    np.testing.assert_allclose(run(text)["Y"], [0, 4, 10])


def test_an_imported_files_index_values_keep_their_declared_index(tmp_path):
    # the file's `axis j` renames its index `j` to `j@m`; a bare `j` (the index's
    # value, or a comparison's operand) stayed `j`: "`j` is not defined" at the import
    write(tmp_path, {"lib/m.fuse": "axis j = 3\nP[j] = j\nQ[j] = P[j] (j < 2)\n"})
    text = 'import "lib/m.fuse" as m\nY[j] = m::Q[j]\nexport Y\n'
    assert errors(text, tmp_path / "main.fuse") == []
    np.testing.assert_allclose(run(text, base_dir=tmp_path)["Y"], [0, 1, 0])
    # a conflict names the file's index as the file writes it (`j`, not `j@m`); it is
    # the program's use that clashes (the file checks clean alone), so it is told there
    text = 'import "lib/m.fuse" as m\naxis i = 2\nY[i] = m::Q[i + 1]\nexport Y\n'
    (diag,) = errors(text, tmp_path / "main.fuse")
    assert diag.code == "extent-conflict"
    assert text[diag.span.start:diag.span.end] == "m::Q[i + 1]"
    assert "of extent 3 (from axis j = 3)" in diag.message and "@" not in diag.message


def test_an_unknown_call_in_a_called_body_points_at_the_body_line():
    # the related place was the function's name, not the line that makes the call
    text = ("Q = const([1, 2])\nfn h(x[i]) -> y[i] {\n  t[i] = x[i]\n"
            "  y[i] = t[i] + undefined_fn(x[i])\n}\nU[i] = h(Q[i])\nexport U\n")
    analysis = fuse_lang.analyze(text)
    (diag,) = [d for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]
    assert diag.code == "unknown-function"
    assert analysis.lines.position(diag.span.start)[0] == 5  # at the call
    assert analysis.lines.position(diag.related[0].span.start) == (3, 2)  # the body line


def test_a_run_error_names_a_blocks_locals_as_written():
    # the run's names of a block's locals (`h@let.1`) stayed in the message
    text = ("A[i] = const([1.0, 2.0])\n{\n  let h[i] = 0.5 h[i] + A[i] + g[i]\n"
            "  let g[i] = 0.9 g[i] + h[i]\n  Y[i] = h[i]\n}\nexport Y\n")
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile(text, max_iterations=5).run()
    message = str(err.value)
    assert "line 3: `h[i] = 0.5 h[i] + A[i] + g[i]`: h, g did not converge in 5" in message
    assert "@" not in message
