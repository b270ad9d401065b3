"""`let` and blocks, `&& || !` in conditions, and expressions as indexed `fn`
arguments (issue 33) through the public entry points: the API
(`fuse_lang.analyze`, `fuse_lang.compile(...).run()`), the CLI (`fuse check`,
`run`, `explain`) and the tools (formatting, hover, completion, outline).  Every
program run here on NumPy is run again on torch and jax by tests/conftest.py (this
module is one of its conformance modules).  The language server's part is in
tests/lsp/test_let_blocks.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import analyze, parse
from fuse_lang.check import Analyzer
from fuse_lang.front.let_blocks import file_locals
from fuse_lang.ide.completion import complete
from fuse_lang.ide.folding import folding_ranges
from fuse_lang.ide.formatting import format_text, ir_signature, same_program
from fuse_lang.ide.hover import hover_at
from fuse_lang.ide.inlay_hints import shape_hints
from fuse_lang.ide.outline import document_outline
from fuse_lang.ide.semantic_tokens import semantic_tokens

ROOT = Path(__file__).resolve().parents[1]


def run(text: str) -> dict:
    return {k: np.asarray(v) for k, v in fuse_lang.compile(text, base_dir=ROOT).run().items()}


def codes(text: str) -> list[tuple[str, int, int]]:
    analysis = analyze(text)
    return [(d.code, *analysis.lines.position(d.span.start)) for d in analysis.diagnostics]


# ------------------------------------------------------------------ blocks

BLOCKS = """\
X[i] = const([1,2,3])
{
  let h[i] = 2 X[i]
  let h[i] += 1
  Y[i] = h[i] h[i]
  { let g[i] = h[i] - 1; G[i] = g[i] + h[i] }
}
{ let h[i] = X[i] - 1; Z[i] = h[i] }
export Y, Z, G
"""


def test_a_block_local_is_its_own_tensor_and_its_lets_add():
    assert codes(BLOCKS) == []
    out = run(BLOCKS)
    x = np.array([1, 2, 3])
    h = 2 * x + 1
    np.testing.assert_allclose(out["Y"], h * h)
    np.testing.assert_allclose(out["Z"], x - 1)  # the second block's h is another tensor
    np.testing.assert_allclose(out["G"], (h - 1) + h)  # a nested block reads the outer local
    assert set(out) == {"Y", "Z", "G"}


def test_the_checker_sees_plain_equations_with_locals_renamed_apart():
    statements = analyze(BLOCKS).program.statements
    names = [s.lhs.name for s in statements if hasattr(s, "lhs")]
    assert names == ["X", "h@let.1", "h@let.1", "Y", "g@let.2", "G", "h@let.3", "Z"]


def test_a_block_on_one_line_and_equations_in_any_order():
    text = "X[i] = const([1,2])\n{ Y[i] = h[i] + 1; let h[i] = 3 X[i] }\nexport Y\n"
    assert codes(text) == []
    np.testing.assert_allclose(run(text)["Y"], [4, 7])


def test_a_top_level_let_is_the_files_own():
    text = "X[i] = const([1,2])\nlet T[i] = 3 X[i]\nY[i] = T[i] + 1\nexport Y\n"
    assert codes(text) == []
    np.testing.assert_allclose(run(text)["Y"], [4, 7])
    assert file_locals(parse(text).program.statements) == {"T"}
    analysis = analyze(text)
    hover = hover_at(analysis, text.index("T[i] + 1"))
    assert hover is not None and "Local to this file" in hover.markdown


def test_a_let_inside_a_function_body_is_a_body_local():
    text = """\
fn sq(x[i]) -> y[i] {
  let t[i] = x[i] x[i]
  y[i] = t[i] + 1
}
X[i] = const([1,2,3])
{ let h[i] = sq(X[i] + 1); Y[i] = sq(h[i]) }
export Y
"""
    assert codes(text) == []
    h = (np.array([1, 2, 3]) + 1) ** 2 + 1
    np.testing.assert_allclose(run(text)["Y"], h ** 2 + 1)


@pytest.mark.parametrize("text, expected, words", [
    ("X[i] = const([1,2])\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\nW[i] = h[i] + 1\nexport Y, W",
     [("local-out-of-scope", 2, 7)], ["`h` is local to the block at line 2"]),
    ("X[i] = const([1,2])\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\nexport Y, h",
     [("local-out-of-scope", 2, 10)], ["export or query a tensor that reads it"]),
    ("X[i] = const([1,2])\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\nh?\nexport Y",
     [("local-out-of-scope", 2, 0)], ["visible only inside"]),
    ("X[i] = const([1,2])\nh[i] = X[i]\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\nexport Y, h",
     [("let-redefined", 2, 6)], ["a tensor of the program already"]),
    ("X[i] = const([1,2])\n{ let h[i] = X[i]\n { let h[i] = 2 X[i]; Y[i] = h[i] } }\nexport Y",
     [("let-redefined", 2, 7)], ["a local of an enclosing block"]),
    ("X[i] = const([1,2])\nlet T[i] = X[i]\n{ let T[i] = 2 X[i]; Y[i] = T[i] }\nexport Y",
     [("let-redefined", 2, 6)], ["a `let` of the whole file"]),
    ("X[i] = const([1,2])\nlet T[i] = 3 X[i]\nY[i] = T[i]\nexport Y, T",
     [("local-export", 3, 10)], ["local to this file", "no output"]),
])
def test_mistakes_with_locals(text, expected, words):
    analysis = analyze(text)
    assert codes(text) == expected
    for word in words:
        assert word in analysis.diagnostics[0].message
    assert "@let" not in analysis.diagnostics[0].message


def test_a_diagnostic_inside_a_block_names_the_local_as_written():
    text = "X[i] = const([1,2])\nV[j] = const([1,2,3])\n{ let h[i] = X[i] + V[i]; Y[i] = h[i] }\n" \
        "export Y\n"
    messages = [d.message for d in analyze(text).diagnostics]
    assert messages and not any("@let" in m for m in messages), messages


def test_a_let_that_is_a_source_or_a_block_that_holds_a_declaration_is_refused():
    assert [c for c, *_ in codes('let W[i] = "w.npy"\n')] == ["invalid-statement"]
    assert [c for c, *_ in codes("{ export Y }\n")] == ["syntax-error"]


def test_editor_lists_leave_block_locals_out_and_offer_them_inside():
    analysis = analyze(BLOCKS)
    names = [s.name for g in document_outline(analysis) for s in g.symbols]
    assert sorted(names) == ["G", "X", "Y", "Z"]
    inside = [c.label for c in complete(analysis, BLOCKS.index("h[i] h[i]"))]
    assert "h" in inside and not any("@" in label for label in inside)
    outside = [c.label for c in complete(analysis, len(BLOCKS) - 1)]
    assert "h" not in outside and "g" not in outside
    hover = hover_at(analysis, BLOCKS.index("g[i] + h[i]"))
    assert hover is not None and hover.markdown.startswith("```fuse\ng[i:3]")
    hints = {hint.offset: hint.tooltip for hint in shape_hints(analysis)}
    assert hints[BLOCKS.index("[i] = 2 X") + 3] == "h: dense [i:3]"
    folds = [analysis.lines.position(f.span.start)[0] for f in folding_ranges(analysis)]
    assert folds == [1]  # the block over lines 2-7 (the others are on one line)


# ------------------------------------------------------------- conditions

CONDITIONS = """\
X[i] = const([1,2,3,4,5,6])
A[i] = X[i] (i > 0 && i < 4)
B[i] = X[i] when i < 1 || i > 4
C[i] = X[i] when !(i == 2)
D[i] = X[i] (!(i < 2 || i > 3))
E[i] = select(X[i] > 2 && !(X[i] > 5), X[i], -1)
F[i] = case { X[i] < 2 || X[i] == 6 -> 10; !(X[i] != 4) -> 20; default -> 0 }
N[i] = X[i] when !X[i] - 3 > 0 || X[i] == 1
export A, B, C, D, E, F, N
"""


def test_and_or_not_in_factors_guards_selects_and_cases():
    assert codes(CONDITIONS) == []
    out = run(CONDITIONS)
    x = np.arange(1, 7)
    i = np.arange(6)
    np.testing.assert_allclose(out["A"], x * ((i > 0) & (i < 4)))
    np.testing.assert_allclose(out["B"], x * ((i < 1) | (i > 4)))
    np.testing.assert_allclose(out["C"], x * (i != 2))
    np.testing.assert_allclose(out["D"], x * ~((i < 2) | (i > 3)))
    np.testing.assert_allclose(out["E"], np.where((x > 2) & ~(x > 5), x, -1))
    np.testing.assert_allclose(out["F"], np.where((x < 2) | (x == 6), 10, np.where(x == 4, 20, 0)))
    # `!` binds tightest: (!X[i]) - 3 > 0 never holds (X > 0), so only X == 1
    np.testing.assert_allclose(out["N"], x * (x == 1))


def test_hover_on_or_and_bang_says_what_they_mean():
    text = "X[i] = const([1,2])\nR(i) = X[i] > 1\nY[i] = X[i] when i < 1 || !R(i)\nexport Y\n"
    analysis = analyze(text)
    either = hover_at(analysis, text.index("||"))
    assert either is not None and either.markdown.startswith("```fuse\na || b\n```")
    negation = hover_at(analysis, text.index("!R"))
    assert negation is not None and negation.markdown.startswith("```fuse\n!c\n```")


def test_precedence_is_cs():
    (stmt,) = parse("Y[i] = X[i] when i > 0 && i < 4 || i == 5").program.statements
    guard = stmt.rhs.args[0]
    assert guard.name == "max"  # || outermost
    assert [type(f).__name__ for f in guard.args[0].factors] == ["Call", "Call"]  # the &&
    (neg,) = parse("Y[i] = X[i] (!(i < 3))").program.statements
    assert neg.rhs.factors[1].name == ">="  # a flipped comparison
    (ne,) = parse("Y[i] = X[i] (i != 3)").program.statements
    assert ne.rhs.factors[1].name == "!="  # `!=` is still the comparison


DATALOG = """\
E(1,2)
E(2,3)
E(3,7)
E(6,1)
R(x,y) = E(x,y) (x < 3 || y > 5)
S(x,y) = E(x,y) !R(x,y)
T(x,y) = E(x,y) (!(x < 3) && x != 6)
R(x,y)?
S(x,y)?
T(x,y)?
"""


def test_conditions_in_rules_are_datalog():
    assert codes(DATALOG) == []
    result = fuse_lang.compile(DATALOG, base_dir=ROOT).execute()
    answers = [sorted(q.tuples) for q in result.queries]
    assert answers[0] == [(1, 2), (2, 3), (3, 7)]
    assert answers[1] == [(6, 1)]
    assert answers[2] == [(3, 7)]


def test_bang_of_a_relation_keeps_negations_safety():
    text = "E(1,2)\nF(1)\nR(x) = !F(y) E(x,x)\nR(x)?\n"
    assert "unsafe-negation" in [c for c, *_ in codes(text)]


# --------------------------------------------------- expression arguments

def test_an_expression_is_an_indexed_argument():
    text = """\
fn dense(x[b,d], w[f,d]) -> y[b,f] {
  y[b,f] = x[b,d] w[f,d]
}
X[b,d] = const([[1,2],[3,4]])
P[b,d] = const([[1,1],[1,1]])
W[f,d] = const([[1,0],[0,1],[1,1]])
H[n,h] = dense(X[n,i] + P[n,i], 2 W[h,i])
export H
"""
    assert codes(text) == []
    x, p, w = np.array([[1, 2], [3, 4]]), np.ones((2, 2)), np.array([[1, 0], [0, 1], [1, 1]])
    np.testing.assert_allclose(run(text)["H"], (x + p) @ (2 * w).T)


def test_an_expression_argument_of_the_wrong_rank():
    text = "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([[1,2]])\n" \
        "Y[i] = dbl(relu(X[j,i]))\nexport Y\n"
    analysis = analyze(text)
    assert codes(text) == [("fn-rank", 2, 11)]
    assert "an expression over 2 indices (j, i)" in analysis.diagnostics[0].message


# ------------------------------------------------------------- formatting

@pytest.mark.parametrize("text", [
    BLOCKS, CONDITIONS, DATALOG,
    "X[i]=const([1,2])\n{let h[i]=2 X[i];Y[i]=h[i] when !(i==1)&&i<3||i==0}\nlet T=3\n",
    "fn sq(x[i]) -> y[i] { let t[i] = x[i] x[i]; y[i] = t[i] }\nY[i] = sq(X[i] + 1)\n",
])
def test_formatting_keeps_the_meaning(text):
    formatted = format_text(text)
    assert same_program(text, formatted)
    assert ir_signature(parse(formatted).program) == ir_signature(parse(text).program)
    assert format_text(formatted) == formatted


def test_the_formatter_writes_bang_against_its_operand():
    assert format_text("Y[i] = X[i] ( ! (i == 2) &&! R(i))\n") == \
        "Y[i] = X[i] (!(i == 2) && !R(i))\n"


# -------------------------------------------------------------------- CLI

def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_fuse_check_run_and_explain_blocks(tmp_path):
    path = tmp_path / "b.fuse"
    path.write_text(BLOCKS, encoding="utf-8")
    assert cli("check", str(path)).returncode == 0
    ran = cli("run", str(path), "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert set(json.loads(ran.stdout)["outputs"]) == {"Y", "Z", "G"}
    explained = cli("explain", str(path))
    assert explained.returncode == 0 and "h@let.1" in explained.stdout


def test_fuse_check_reports_a_local_out_of_scope(tmp_path):
    path = tmp_path / "bad.fuse"
    path.write_text("X[i] = const([1,2])\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\n"
                    "W[i] = h[i]\nexport Y, W\n", encoding="utf-8")
    checked = cli("check", str(path))
    assert checked.returncode == 1
    assert "bad.fuse:3:8: error[local-out-of-scope]: `h` is local to the block at line 2" \
        in checked.stdout


# ------------------------------------------------------------- the editor

def test_edits_above_blocks_give_what_analysing_from_scratch_gives():
    bad = BLOCKS + "W[i] = h[i] + 1\nexport W\nlet T = 2\nexport T\n"
    steps = [bad, "# a comment above all\n" + bad, "# two\n# lines\n" + bad,
             ("# two\n# lines\n" + bad).replace("W[i] = h[i] + 1", "W[i] = Y[i] + 1")]
    analyzer = Analyzer()
    for text in steps:
        got = analyzer.analyze(text, None, ROOT)
        want = analyze(text, None, ROOT)
        assert got.diagnostics == want.diagnostics
        assert semantic_tokens(got) == semantic_tokens(want)
        assert [(d.code, *got.lines.position(d.span.start)) for d in got.diagnostics] == \
            [(d.code, *want.lines.position(d.span.start)) for d in want.diagnostics]
    assert [d.code for d in got.diagnostics] == ["local-export"]


def test_the_transformer_with_blocks_equals_the_one_written_out():
    examples = ROOT / "examples"
    blocks = (examples / "transformer_blocks.fuse").read_text(encoding="utf-8")
    written = (examples / "transformer_2layer.fuse").read_text(encoding="utf-8")
    assert analyze(blocks, None, examples).diagnostics == ()
    got = {k: np.asarray(v) for k, v in
           fuse_lang.compile(blocks, base_dir=examples).run().items()}
    want = {k: np.asarray(v) for k, v in
            fuse_lang.compile(written, base_dir=examples).run().items()}
    assert set(got) == set(want) == {"Y"}
    np.testing.assert_allclose(got["Y"], want["Y"], rtol=1e-6, atol=1e-6)
    outline = [s.name for g in document_outline(analyze(blocks, None, examples))
               for s in g.symbols]
    assert sorted(outline) == ["B1", "H", "Mask", "W1", "W2", "WK", "WO", "WQ", "WV", "X", "Y"]


RECURSIVE = """\
E(1,2)
E(2,3)
E(3,4)
E(4,5)
E(5,1)
E(2,7)
Block(3)
Reach(x,y) = E(x,y) (x != 5 || y != 1)
Reach(x,z) = Reach(x,y) E(y,z) (z < 4 || z == 5) !Block(z)
T(x,z) = E(x,z) || T(x,y) E(y,z)
Reach(x,y)?
T(x,y)?
"""


def test_conditions_in_recursive_rules():
    edges = {(1, 2), (2, 3), (3, 4), (4, 5), (5, 1), (2, 7)}
    reach = {(x, y) for x, y in edges if x != 5 or y != 1}
    closure = set(edges)
    while True:
        more = reach | {(x, z) for x, y in reach for y2, z in edges
                        if y == y2 and (z < 4 or z == 5) and z != 3}
        more_closure = closure | {(x, z) for x, y in closure for y2, z in edges if y == y2}
        if more == reach and more_closure == closure:
            break
        reach, closure = more, more_closure
    assert [c for c, *_ in codes(RECURSIVE) if c != "recursion"] == []
    result = fuse_lang.compile(RECURSIVE, base_dir=ROOT).execute()
    assert sorted(result.queries[0].tuples) == sorted(reach)
    assert sorted(result.queries[1].tuples) == sorted(closure)


def test_fuse_check_reports_shadowing_and_exported_locals(tmp_path):
    path = tmp_path / "bad.fuse"
    path.write_text("X[i] = const([1,2])\nh[i] = X[i]\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\n"
                    "let T = 2\nexport Y, h, T\n", encoding="utf-8")
    checked = cli("check", str(path))
    assert checked.returncode == 1
    assert "bad.fuse:3:7: error[let-redefined]: `h` is a tensor of the program already" \
        in checked.stdout
    assert "bad.fuse:5:14: error[local-export]: `T` is a `let`, local to this file" \
        in checked.stdout


def test_fuse_run_conditions_and_an_expression_argument(tmp_path):
    path = tmp_path / "c.fuse"
    path.write_text(CONDITIONS.replace("export A, B, C, D, E, F, N\n", "") +
                    "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nP[i] = dbl(X[i] (i < 2 || i > 4))\n"
                    "export A, P\n", encoding="utf-8")
    ran = cli("run", str(path), "--format", "json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    outputs = json.loads(ran.stdout)["outputs"]
    assert set(outputs) == {"A", "P"}
    assert outputs["P"]["values"] == [2.0, 4.0, 0.0, 0.0, 0.0, 12.0]
    assert outputs["A"]["values"] == [0.0, 2.0, 3.0, 4.0, 0.0, 0.0]


def test_an_index_named_like_a_local_is_still_an_index():
    text = "{ let p = 2; A = p + 1 }\nPE[p] = sin(p / 4) + Z[p]\nZ = const([0, 0, 0])\n" \
        "export A, PE\n"
    assert codes(text) == []
    out = run(text)
    np.testing.assert_allclose(out["A"], 3)
    np.testing.assert_allclose(out["PE"], np.sin(np.arange(3) / 4), rtol=1e-6)
