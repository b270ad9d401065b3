"""A second audit of the structured syntax (issue 33; LANGUAGE.md §12, docs/language.md:
Functions, Local tensors, Choices, Imports), on what tests/test_structured_conformance.py,
test_functions.py, test_let_blocks.py and test_imports.py leave out: a numeric diamond
of imports with an addition through one way, paths and sources from nested folders,
errors deep in an import chain, namespace mistakes, libraries with recursion; functions
calling functions with shadowing parameters, literal and expression arguments, in a
recurrence, with their indices bound transposed; nested blocks and lets in a
recurrence; choices with several arms and index comparisons.  Every value is computed
here with NumPy; this module is a conformance module (tests/conftest.py), so every run
is also compared on torch and jax."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_file(path: Path):
    return fuse_lang.load(path).execute()


def values(result) -> dict[str, np.ndarray]:
    return {name: np.asarray(value, dtype=float) for name, value in result.items()}


def answers(result) -> dict[str, list]:
    return {q.text: sorted(q.tuples) for q in result.queries}


def diagnostics(text: str, path: Path | None = None) -> list[tuple]:
    """(code, line, column, message) of each error and warning, 1-based."""
    analysis = fuse_lang.analyze(text, str(path) if path else None)
    out = []
    for d in analysis.diagnostics:
        if d.severity in (fuse_lang.Severity.ERROR, fuse_lang.Severity.WARNING):
            line = text.count("\n", 0, d.span.start) + 1
            column = d.span.start - (text.rfind("\n", 0, d.span.start) + 1) + 1
            out.append((d.code, line, column, d.message))
    return out


def check_json(path: Path, capsys) -> list[dict]:
    main(["check", "--format", "json", str(path)])
    return json.loads(capsys.readouterr().out)["diagnostics"]


A = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=float)
A_TEXT = "A = const([[1, 2, 3], [4, 5, 6], [7, 8, 9]])\n"
I, J = np.arange(3)[:, None], np.arange(3)[None, :]


# ------------------------------------------------------------ imports

def test_a_diamond_is_one_copy_with_what_one_way_adds_seen_by_the_other(tmp_path):
    # b and c both import d (c by `./sub/../d.fuse`, the same file); c adds 10 to
    # d's W: b's copy is the same tensor, and d's function reads the sum too
    write(tmp_path, {
        "lib/d.fuse": "W[i] = const([1, 2, 3])\nfn dbl(x[i]) -> y[i] { y[i] = 2 x[i] + W[i] }\n"
                      "Seen(A)\n",
        "lib/b.fuse": 'import "d.fuse" as d\nBW[i] = d::W[i]\nBD[i] = d::dbl(BW[i])\n'
                      "d::Seen(B)\n",
        "lib/c.fuse": 'import "./sub/../d.fuse" as dd\ndd::W[i] += 10\ndd::Seen(C)\n',
        "lib/sub/.keep": "",
        "main.fuse": 'import "lib/b.fuse" as b\nimport "lib/c.fuse" as c\n'
                     "Y[i] = b::BW[i]\nZ[i] = b::BD[i] + c::dd::dbl(c::dd::W[i])\n"
                     "S(x) = b::d::Seen(x)\nT(x) = c::dd::Seen(x)\nS(x)?\nT(x)?\nexport Y, Z\n",
    })
    result = run_file(tmp_path / "main.fuse")
    w = np.array([1, 2, 3]) + 10.0
    got = values(result.outputs)
    np.testing.assert_allclose(got["Y"], w)
    np.testing.assert_allclose(got["Z"], 2 * (2 * w + w))
    assert answers(result) == {"S(x)?": [("A",), ("B",), ("C",)],
                               "T(x)?": [("A",), ("B",), ("C",)]}


def test_a_library_in_a_sibling_folder_reads_its_sources_from_its_own_folder(tmp_path):
    write(tmp_path, {
        "proj/models/m.fuse": 'W[i] = "data/w.npy"\nV[i] = W[i] * 10\n',
        "proj/app/main.fuse": 'import "../models/m.fuse" as m\nY[i] = m::V[i] + 1\nexport Y\n',
    })
    (tmp_path / "proj/models/data").mkdir()
    np.save(tmp_path / "proj/models/data/w.npy", np.array([1.0, 2.0, 3.0]))
    got = values(run_file(tmp_path / "proj/app/main.fuse").outputs)
    np.testing.assert_allclose(got["Y"], [11, 21, 31])


def test_an_error_deep_in_an_import_chain_is_said_at_the_program_s_import(tmp_path, capsys):
    write(tmp_path, {
        "lib/a.fuse": '# a\nimport "deep/b.fuse" as b\nA[i] = b::B[i]\n',
        "lib/deep/b.fuse": "# b\nB[i] = const([1, 2])\nC[i] = Misisng[i] + B[i]\n",
        "main.fuse": 'import "lib/a.fuse" as a\nY[i] = a::A[i]\nexport Y\n',
    })
    (found,) = check_json(tmp_path / "main.fuse", capsys)
    assert (found["code"], found["line"], found["column"], found["end_column"]) == \
        ("import-error", 1, 1, 25)
    assert found["message"] == ("in `lib/deep/b.fuse` line 3: `Misisng` is not defined; "
                                "did you mean `C` or `B`? [undefined-tensor]")
    (related,) = found["related"]
    assert (Path(related["path"]), related["line"], related["column"]) == \
        (tmp_path / "lib/deep/b.fuse", 3, 8)
    assert main(["run", str(tmp_path / "main.fuse")]) == 1
    assert "error[import-error]" in capsys.readouterr().err


def test_namespace_mistakes(tmp_path):
    write(tmp_path, {"ok.fuse": "Weight[i] = const([1, 2])\n",
                     "other.fuse": "Weight[i] = const([3, 4])\n"})
    main_path = tmp_path / "main.fuse"
    twice = 'import "ok.fuse" as m\nimport "other.fuse" as m\nY[i] = m::Weight[i]\nexport Y\n'
    assert diagnostics(twice, main_path) == [
        ("invalid-statement", 2, 24, "`m` names two imports: give each its own namespace")]
    typo = 'import "ok.fuse" as m\nY[i] = m::Weigth[i] + m::Nothing[i]\nexport Y\n'
    assert diagnostics(typo, main_path) == [
        ("undefined-tensor", 2, 8,
         "`Weigth` is not defined in `ok.fuse`, imported as `m`; did you mean `m::Weight`?"),
        ("undefined-tensor", 2, 23, "`Nothing` is not defined in `ok.fuse`, imported as `m`")]
    analysis = fuse_lang.analyze(typo, str(main_path))
    fix = analysis.diagnostics[0].fixes[0]
    assert [(typo[e.span.start:e.span.end], e.new_text) for e in fix.edits] == \
        [("m::Weigth", "m::Weight")]
    # a tensor of the namespace's name is another name: both are read
    both = 'import "ok.fuse" as m\nm[i] = const([10, 20])\nY[i] = m::Weight[i] + m[i]\nexport Y\n'
    assert diagnostics(both, main_path) == []
    np.testing.assert_allclose(
        values(fuse_lang.compile(both, base_dir=tmp_path).run())["Y"], [11, 22])
    unknown = 'import "ok.fuse" as m\nY[i] = n::Weight[i]\nexport Y\n'
    assert [d[:3] for d in diagnostics(unknown, main_path)] == [("unknown-namespace", 2, 8)]


def test_a_library_s_recursion_runs_and_its_recursive_functions_are_its_error(tmp_path):
    write(tmp_path, {
        "graph.fuse": "Edge(A, B)\nEdge(B, C)\nEdge(C, D)\n"
                      "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\n",
        "rec.fuse": "fn f(x[i]) -> y[i] { y[i] = g(x[i]) }\n"
                    "fn g(x[i]) -> y[i] { y[i] = f(x[i]) }\nW[i] = const([1, 2])\n",
    })
    text = 'import "graph.fuse" as g\nFrom(y) = g::Path(B, y)\nFrom(y)?\n'
    result = fuse_lang.compile(text, base_dir=tmp_path).execute()
    assert answers(result) == {"From(y)?": [("C",), ("D",)]}
    found = diagnostics('import "rec.fuse" as r\nY[i] = r::W[i]\nexport Y\n',
                        tmp_path / "main.fuse")
    assert [(code, line, column) for code, line, column, _ in found] == \
        [("import-error", 1, 1), ("import-error", 1, 1)]
    assert found[0][3].startswith("in `rec.fuse` line 1: `f` calls itself")
    assert found[0][3].endswith("[fn-recursion]")


# ------------------------------------------------------------ functions

def test_functions_calling_functions_shadowing_and_literal_arguments():
    text = A_TEXT + """\
X = const([1, -2, 3])
fn sq(x[i]) -> y[i] { y[i] = x[i] x[i] }
fn norm2(x[i]) -> s { s = sq(x[i]) }
fn scale(A[i], c) -> y[i] { y[i] = A[i] * c }
fn plusA(x[i]) -> y[i] { B[i] = x[i] + 1; y[i] = B[i] * 2 + A[0,i] }
B = const([100, 100, 100])
N = norm2(X[i])
P[i] = scale(X[i], 2 + 1)
R[i] = sq(X[i] + 1)
K[i] = plusA(X[i]) + plusA(X[i] * 2) + B[i]
export N, P, R, K
"""
    x = np.array([1.0, -2.0, 3.0])
    got = values(fuse_lang.compile(text).run())
    np.testing.assert_allclose(got["N"], (x * x).sum())
    np.testing.assert_allclose(got["P"], 3 * x)  # `A[i]`, the parameter, is the argument
    np.testing.assert_allclose(got["R"], (x + 1) ** 2)
    np.testing.assert_allclose(got["K"], (x + 1) * 2 + A[0] + (2 * x + 1) * 2 + A[0] + 100)


def test_index_comparisons_in_a_body_follow_the_call_s_binding():
    # the call binds by position, so `tri(A[j,i])` reads the body's `j < i` as the
    # caller's `i < j`; a transposed argument transposes the comparison
    text = A_TEXT + """\
fn tri(a[i,j]) -> s[i] { s[i] = a[i,j] when j < i }
fn low(a[i,j]) -> s[i,j] { s[i,j] = select(j <= i, a[i,j], 0) }
fn cs(a[i,j]) -> s[i,j] { s[i,j] = case { i == j -> 1; j > i && a[i,j] > 2 -> a[i,j]; default -> -1 } }
fn off(a[i,j]) -> s[i] { s[i] = a[i,j] (i != j) }
T1[j] = tri(A[j,i])
L1[p,q] = low(A[q,p])
C1[p,q] = cs(A[q,p])
O1[r] = off(A[r,c])
export T1, L1, C1, O1
"""
    got = values(fuse_lang.compile(text).run())
    np.testing.assert_allclose(got["T1"], np.where(J < I, A, 0).sum(1))
    np.testing.assert_allclose(got["L1"], np.where(J <= I, A, 0).T)
    np.testing.assert_allclose(got["C1"], np.where(I == J, 1, np.where((J > I) & (A > 2), A, -1)).T)
    np.testing.assert_allclose(got["O1"], np.where(I != J, A, 0).sum(1))


def test_a_function_in_a_recurrence_with_a_choice_in_its_body():
    text = """\
axis t = 5
X = const([3, -1, 4, -1, 5])
fn clip(x[k], lo) -> y[k] { y[k] = case { x[k] < lo -> lo; x[k] > 4 -> 4; default -> x[k] } }
fn acc(h[k], x[k]) -> y[k] { y[k] = h[k] + x[k] when x[k] > 0 || h[k] > 5 }
H[0] = 0
H[t] = acc(H[t-1], clip(X[t], 0)) (t > 0)
G[t] = select(t >= 2 && !(t == 4), clip(X[t], -0.5), 9)
export H, G
"""
    x = np.array([3, -1, 4, -1, 5], dtype=float)
    clipped = np.clip(x, 0, 4)
    h = [0.0]
    for t in range(1, 5):
        h.append(h[-1] + clipped[t] if clipped[t] > 0 or h[-1] > 5 else 0.0)
    t = np.arange(5)
    got = values(fuse_lang.compile(text).run())
    np.testing.assert_allclose(got["H"], h)
    np.testing.assert_allclose(got["G"], np.where((t >= 2) & (t != 4), np.clip(x, -0.5, 4), 9))


def test_wrong_arity_and_rank_are_said_at_the_call():
    text = """\
X = const([1, 2, 3, 4])
fn f(a[i], b[i]) -> y[i] { y[i] = a[i] + b[i] }
Y[i] = f(X[i])
Z[i] = f(X[i], X[i], X[i])
W[i] = f(X[i,j], X[i])
V[i] = f(X, X[i])
U[i] = f(3, X[i])
Q[r] = f(X[r] X[c], X[r])
export Y, Z, W, V, U, Q
"""
    assert diagnostics(text) == [
        ("fn-arguments", 3, 8, "`f` takes 2 arguments (a[i], b[i]), not 1"),
        ("fn-arguments", 4, 8, "`f` takes 2 arguments (a[i], b[i]), not 3"),
        ("fn-rank", 5, 8, "argument 1 of `f` has 2 indices; its parameter `a[i]` has 1"),
        ("fn-rank", 6, 8, "argument 1 of `f` has 0 indices; its parameter `a[i]` has 1"),
        ("fn-rank", 7, 8, "argument 1 of `f` has 0 indices; its parameter `a[i]` has 1"),
        ("fn-rank", 8, 10, "argument 1 of `f` is an expression over 2 indices (r, c); its "
                          "parameter `a[i]` has 1"),
    ]


# ------------------------------------------------------------ let and blocks

def test_nested_shadowing_and_a_read_after_the_block_are_errors():
    text = """\
X = const([1, 2, 3])
{
  let h[i] = X[i] + 1
  {
    let h[i] = X[i] * 10
    A[i] = h[i]
  }
  B[i] = h[i]
}
C[i] = h[i]
export A, B, C
"""
    assert diagnostics(text) == [
        ("let-redefined", 5, 9,
         "`h` is a local of an enclosing block already: a local needs a name of its own"),
        ("local-out-of-scope", 10, 8,
         "`h` is local to the block at line 2: it is visible only inside that block"),
    ]


@pytest.mark.parametrize("line, column, message", [
    # a top-level `let` of a name a plain equation defines made that tensor a
    # file-local silently (`export X` then said `local-export`, no cause)
    ("let X[i] = 1", 5, "`X` is a tensor of the program already: a `let` needs a name of "
                        "its own (a plain equation adds to `X`)"),
    # a `let` of an imported name added to the library's tensor silently
    ("let m::W[i] = 1", 5, "`m::W` is an imported file's name: a `let` defines a name of "
                           "this file's own (a plain equation adds to a tensor the imported "
                           "file defines)"),
    ("{ let m::W[i] = 1; Z[i] = m::W[i] }", 7,
     "`m::W` is an imported file's name: a `let` defines a name of this file's own (a "
     "plain equation adds to a tensor the imported file defines)"),
])
def test_a_let_never_takes_over_a_name(tmp_path, line, column, message):
    write(tmp_path, {"ok.fuse": "W[i] = const([1, 2])\n"})
    text = f'import "ok.fuse" as m\nX[i] = m::W[i]\n{line}\nY[i] = X[i] + m::W[i]\nexport X, Y\n'
    assert diagnostics(text, tmp_path / "main.fuse") == [("let-redefined", 3, column, message)]
    got = values(fuse_lang.compile(text, base_dir=tmp_path, past_errors=True).run())
    np.testing.assert_allclose(got["Y"], [2, 4])  # the `let` left out: nothing added


def test_a_let_in_a_recurrence():
    text = """\
axis t = 4
X = const([1, 2, 3, 4])
{
  let s[t] = X[t]
  let s[t] += 0.5 * s[t-1] (t > 0)
  Y[t] = s[t]
}
export Y
"""
    want = [1.0]
    for x in (2, 3, 4):
        want.append(x + 0.5 * want[-1])
    np.testing.assert_allclose(values(fuse_lang.compile(text).run())["Y"], want)


# ------------------------------------------------------------ choices

def test_case_arms_and_guards_with_index_comparisons():
    text = """\
A = const([[1, -5, 2], [3, 0, 7], [4, 2, -1]])
C[i,j] = case {
  A[i,j] > 3 && i != j -> 100
  A[i,j] < 0 || j == 0 -> A[i,j] * 2
  !(A[i,j] == 2) -> 7
  default -> -1
}
S[i,j] = select(i < j, A[i,j], A[j,i])
W[i] = A[i,j] when (j <= i && !(A[i,j] < 0)) || j == 2
export C, S, W
"""
    a = np.array([[1, -5, 2], [3, 0, 7], [4, 2, -1]], dtype=float)
    got = values(fuse_lang.compile(text).run())
    np.testing.assert_allclose(got["C"], np.where(
        (a > 3) & (I != J), 100, np.where((a < 0) | (J == 0), a * 2, np.where(a != 2, 7, -1))))
    np.testing.assert_allclose(got["S"], np.where(I < J, a, a.T))
    np.testing.assert_allclose(got["W"], np.where(((J <= I) & (a >= 0)) | (J == 2), a, 0).sum(1))


# ------------------------------------------------------------ explain

def test_explain_names_each_written_out_equation_s_origin(tmp_path, capsys):
    write(tmp_path, {
        "lib.fuse": "W[i] = const([100, 200, 300])\n"
                    "fn f(W[i]) -> y[i] { B[i] = W[i] * 2; y[i] = B[i] + 1 }\n"
                    "fn g(x[i]) -> y[i] { y[i] = x[i] + W[i] }\n"
                    "{ let t[i] = W[i] + 1; Out[i] = t[i] }\n",
        "main.fuse": 'import "lib.fuse" as m\nX[i] = const([1, 2, 3])\n'
                     "Y[i] = m::f(X[i])\nZ[i] = m::g(X[i]) + m::Out[i]\nexport Y, Z\n",
    })
    got = values(run_file(tmp_path / "main.fuse").outputs)
    x, w = np.array([1.0, 2, 3]), np.array([100.0, 200, 300])
    np.testing.assert_allclose(got["Y"], 2 * x + 1)  # the parameter `W`, not the file's
    np.testing.assert_allclose(got["Z"], x + w + w + 1)
    assert main(["explain", str(tmp_path / "main.fuse")]) == 0
    said = capsys.readouterr().out
    for line in ("line 3: B@m::f.1[i] = X[i] * 2   (from fn m::f, called at line 3)",
                 "line 4: y@m::g.1[i] = X[i] + m::W[i]   (from fn m::g, called at line 4)",
                 "line 1: m::Out[i] = m::t@let.1[i]   (from lib.fuse:4)"):
        assert line in said, said


def test_an_index_a_call_sums_inside_is_said_as_such():
    # `O[k] = off(A[i,k])`: the call's result is over `i`; `k` goes to the body's
    # `j`, summed there. The error said "nothing in the program gives it" and
    # offered `axis k = N`, though `k` is in the call as written
    text = A_TEXT + ("fn off(a[i,j]) -> s[i] { s[i] = a[i,j] (i != j) }\n"
                     "O[k] = off(A[i,k])\nP[k] = off(a=A[i,k])\nQ[k] = R[k] + 1\nexport O, P, Q\n")
    analysis = fuse_lang.analyze(text)
    unsized = [d for d in analysis.diagnostics if d.code == "unsized-tensor"]
    assert [(d.message, d.fixes) for d in unsized[:2]] == [
        (f"`{name}`'s axis `k` has no known extent: `k` is an index of an argument of "
         f"`off` only, and the function's result has no axis for it (the call sums it), "
         f"so a run cannot compute `{name}`", ()) for name in ("O", "P")]
    assert [text[d.span.start:d.span.end] for d in unsized[:2]] == ["O[k]", "P[k]"]
    assert [d.code for d in analysis.diagnostics
            if d.severity is fuse_lang.Severity.ERROR] == \
        ["unsized-tensor", "unsized-tensor", "undefined-tensor"]


def test_a_library_s_recurrence_over_its_own_axis(tmp_path):
    # the library's `axis t = 4` is its own: the program's `axis t = 2` does not meet it
    write(tmp_path, {"rlib.fuse": "axis t = 4\nX = const([1, 2, 3, 4])\nH[0] = 1\n"
                                  "H[t] = 0.5 * H[t-1] + X[t] (t > 0)\nexport H\n"})
    text = 'import "rlib.fuse" as r\naxis t = 2\nY[u] = r::H[u] * 2\nT[t] = 1\nexport Y, T\n'
    h = [1.0]
    for x in (2, 3, 4):
        h.append(0.5 * h[-1] + x)
    got = values(fuse_lang.compile(text, base_dir=tmp_path).run())
    np.testing.assert_allclose(got["Y"], 2 * np.array(h))
    np.testing.assert_allclose(got["T"], [1, 1])
