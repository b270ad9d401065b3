"""Syntax errors as users coming from einsum/PyTorch, Python or Soufflé make them:
one diagnostic per mistake, on the offending text, in words, with a did-you-mean
where one is obvious; the lines after the mistake are still analysed (an
undefined name later in the file is still reported, a correct line is not)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fuse_lang import Severity, analyze

HEAD = "axis i = 3\nparam W[i]\n"
TAIL = "Z[i] = Q[i]\nexport Z\n"  # `Q` undefined: must still be reported after the mistake


def errors(text: str) -> list[tuple[str, str, str]]:
    """(code, the text its range covers, message) of each error, in order."""
    return [(d.code, text[d.span.start:d.span.end], d.message)
            for d in analyze(text).diagnostics if d.severity == Severity.ERROR]


def one_mistake(line: str) -> tuple[str, str, str]:
    """The one error of `line` between valid lines; the later undefined name is
    reported too, and nothing else."""
    text = HEAD + line + TAIL
    found = errors(text)
    assert len(found) == 2, found
    assert found[1][:2] == ("undefined-tensor", "Q"), found
    return found[0]


@pytest.mark.parametrize("line, word, keyword", [
    ("exprot W\n", "exprot", "export"),
    ("improt \"lib.fuse\"\n", "improt", "import"),
    ("parm V[i]\n", "parm", "param"),
    ("Param V[i]\n", "Param", "param"),
    ("axs j = 4\n", "axs", "axis"),
])
def test_a_misspelled_keyword_gets_did_you_mean(line, word, keyword):
    code, covered, message = one_mistake(line)
    assert (code, covered) == ("syntax-error", word)
    assert message == f"`{word}` is not a keyword: did you mean `{keyword}`?"


def test_a_missing_equals_is_not_taken_for_a_keyword():
    code, covered, message = one_mistake("Y W\n")
    assert (code, covered) == ("syntax-error", "W")
    assert message == "missing '=' between the left-hand side and the expression"


def test_colon_equals_is_worded():
    code, covered, message = one_mistake("Y[i] := W[i]\n")
    assert (code, covered) == ("syntax-error", ":=")
    assert message.startswith("`:=` is not Fuse's: an equation is written with `=`")


@pytest.mark.parametrize("line", ["Y[i] = W[i] when W[i] = 0\n", "Y[i] = W[i] = 2\n"])
def test_a_second_equals_suggests_a_comparison(line):
    code, covered, message = one_mistake(line)
    assert (code, covered) == ("syntax-error", "=")
    assert "to compare, write `==`" in message
    text = HEAD + line + TAIL
    (diag, _) = [d for d in analyze(text).diagnostics if d.severity == Severity.ERROR]
    assert diag.span.start == len(HEAD) + line.rindex("=")  # the second '='


def test_a_doubled_equals_is_not_a_comparison():
    code, covered, message = one_mistake("Y = = W\n")
    assert (code, covered) == ("syntax-error", "=")
    assert message.startswith("unexpected '='; expected ")


def test_a_comparison_with_no_right_operand():
    code, covered, message = one_mistake("Y[i] = W[i] ==\n")
    assert code == "syntax-error"
    assert message == "missing an operand after the operator"


@pytest.mark.parametrize("line, mark", [
    ("// a note in Soufflé's style\n", "//"),
    ("   // indented\n", "//"),
    ("Y[i] = W[i] // after an equation\n", "//"),
    ("/* a C comment */\n", "/*"),
    ("Y[i] = W[i] /* after an equation */\n", "/*"),
    ("// Soufflé's rule: path(x, y) :- edge(x, y).\n", "//"),  # (not `é`, not `:-`)
    ('// a "quote\n', "//"),  # (not an unterminated string)
    ("-- SQL's comment, a line of its own\n", "--"),
])
def test_a_comment_of_another_language_is_named(line, mark):
    code, covered, message = one_mistake(line)
    assert (code, covered) == ("syntax-error", mark)
    assert message == (f"`{mark}` starts no comment in Fuse: a comment starts with `#` "
                       f"and runs to the end of the line")
    (diag,) = [d for d in analyze(HEAD + line + TAIL).diagnostics if d.code == "syntax-error"]
    (fix,) = diag.fixes
    (edit,) = fix.edits
    fixed = apply_edit(HEAD + line + TAIL, edit)
    assert [d.code for d in analyze(fixed).diagnostics
            if d.severity == Severity.ERROR] == ["undefined-tensor"]  # only `Q`, as meant


def apply_edit(text, edit):
    return text[:edit.span.start] + edit.new_text + text[edit.span.end:]


def test_a_division_or_a_double_negation_is_not_taken_for_a_comment():
    assert errors(HEAD + "Y[i] = W[i] / 2\nV[i] = W[i] / (W[i] + 1)\nN[i] = W[i] -- W[i]\n"
                  "M[i] = --W[i]\nexport Y, V, N, M\n") == []
    code, covered, _ = one_mistake("Y[i] = --W[i] W[i] +\n")  # an error, not of a comment
    assert (code, covered) == ("syntax-error", "")  # (at the end of the statement)


@pytest.mark.parametrize("line, directive, words", [
    (".decl edge(x: number, y: number)\n", ".decl", "Fuse declares no relations"),
    (".input edge\n", ".input", '`Edge(x, y) = "edge.facts"`'),
    (".output path\n", ".output", "`export Path`"),
])
def test_souffle_directives_are_named(line, directive, words):
    code, covered, message = one_mistake(line)
    assert (code, covered) == ("syntax-error", directive)
    assert message.startswith(f"`{directive}` is Soufflé's; ")
    assert words in message


@pytest.mark.parametrize("opened", [
    # a function's body left open: its indented lines are not read as statements
    # (`x` would be undefined), the line at column 1 after them is
    "fn f(x[i]) -> y[i] {\n  y[i] = x[i] * 2\n\n",
    # a block of equations left open
    "Y[i] = {\n  let h[i] = W[i] * 2\n  h[i] + 1\n\n",
    "{\n  let h[i] = W[i] * 2\n  Y[i] = h[i] + 1\n",
])
def test_an_unclosed_brace_takes_its_indented_lines_only(opened):
    text = HEAD + opened + "V[i] = W[i] * 3\n" + TAIL
    assert errors(text) == [
        ("unclosed-bracket", "{", "'{' is never closed"),
        ("undefined-tensor", "Q", "`Q` is not defined"),
    ]
    # the correct line after the block is analysed: `V` is defined
    assert "V" in analyze(text).tensors


@pytest.mark.parametrize("line, code, covered, message", [
    ("X[i] = W[i\n", "unclosed-bracket", "[", "'[' is never closed"),
    ("X[i] = relu(W[i]\n", "unclosed-bracket", "(", "'(' is never closed"),
    ("X[i] = W[i]]\n", "unmatched-bracket", "]", "']' closes nothing"),
    ("X[i] = W[i] +\n", "syntax-error", "", "missing an operand after the operator"),
    ("X[i] = W[i] \u2013 1\n", "invalid-character", "\u2013",
     "'\u2013' is not part of the Fuse language"),
    ("import \u201clib.fuse\u201d\n", "invalid-character", "\u201c",
     "'\u201c' is not part of the Fuse language"),
    ("import \"lib.fuse\n", "unterminated-string", "\"lib.fuse",
     "this string has no closing '\"' on its line"),
])
def test_one_diagnostic_on_the_offending_token(line, code, covered, message):
    assert one_mistake(line) == (code, covered, message)


def test_the_command_line_reports_the_keyword_typo_with_its_position(tmp_path):
    path = tmp_path / "typo.fuse"
    path.write_text(HEAD + "exprot W\n" + TAIL, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr
    diags = [d for d in json.loads(proc.stdout)["diagnostics"] if d["severity"] == "error"]
    # JSON positions are 1-based lines and columns; the end column is exclusive
    assert [(d["code"], d["line"], d["column"], d["end_line"], d["end_column"])
            for d in diags] == [("syntax-error", 3, 1, 3, 7), ("undefined-tensor", 4, 8, 4, 9)]
    assert "did you mean `export`?" in diags[0]["message"]


@pytest.mark.parametrize("line, op", [("  + W[i]\n", "+"), ("  * 2\n", "*"), ("  - W[i]\n", "-")])
def test_an_expression_going_on_over_a_line_break(line, op):
    text = HEAD + "Y[i] = W[i]\n" + line + TAIL
    found = errors(text)
    assert [f[:2] for f in found] == [("syntax-error", op), ("undefined-tensor", "Q")]
    assert found[0][2].startswith(f"a statement cannot start with '{op}': a statement ends "
                                  f"with its line")
    assert "open a `(`" in found[0][2]


def test_a_stray_comma_names_the_end_of_the_statement():
    # (not the terminals only a `{ }` block feeds the parser: ';', 'let', '{', '}', a new line)
    assert one_mistake("Y[i] = W[i],\n") == (
        "syntax-error", ",", "unexpected ','; expected a name or the end of the statement")


def test_the_end_of_the_statement_is_never_left_out_of_a_long_list():
    code, covered, message = one_mistake("Y[i] = W[i] ? 1 : 0\n")
    assert (code, covered) == ("syntax-error", "?")
    assert message.endswith(", ... or the end of the statement")


def test_case_arms_separated_by_a_comma():
    code, covered, message = one_mistake("Y[i] = case { W[i] > 0 -> W[i], default -> 0 }\n")
    assert (code, covered) == ("syntax-error", ",")
    assert message == "unexpected ',': the arms of a `case` are separated by `;` or a new line"


@pytest.mark.parametrize("line, covered, words", [
    ("Y = reduce(sum) W[i]\n", ")", "`reduce` names its operator, then the indices it reduces"),
    ("Y = reduce() W[i]\n", ")", "`reduce` names its operator, then the indices it reduces"),
    ("Y = 1 + reduce(max, i)\n", "", "`reduce(sum, i)` reduces the expression after it"),
])
def test_a_reduce_without_its_indices_or_its_operand_says_its_form(line, covered, words):
    code, under, message = one_mistake(line)
    assert (code, under) == ("syntax-error", covered)
    assert message.startswith(words) and message.endswith("`reduce(sum, i) X[i]`")
