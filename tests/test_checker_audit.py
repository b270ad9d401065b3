"""`fuse check`'s diagnostics held to LANGUAGE.md and docs/diagnostics.md on
fresh wrong programs: each mistake gets its documented code, at the place of the
mistake, with words that say what it is."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fuse_lang

ROOT = Path(__file__).resolve().parents[1]


def diagnostics(text: str, path: str = "audit.fuse") -> list[tuple[str, str]]:
    """(code, the text under its span) of each diagnostic of `text`."""
    return [(d.code, text[d.span.start:d.span.end])
            for d in fuse_lang.analyze(text, path).diagnostics]


def check_json(tmp_path: Path, name: str, text: str) -> list[dict]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "--format", "json",
                           name], capture_output=True, cwd=tmp_path, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


# --- an unterminated string inside an open bracket --------------------------------

@pytest.mark.parametrize("text, string", [
    ('Parent(Alice, "Bob)\nParent?\n', '"Bob)'),
    ('Lives(Ann, "New York)\nLives(Bob, Paris)\nLives?\n', '"New York)'),
    ('E(A, B)\nIn(x) = E(x, "B)\nIn?\n', '"B)'),
    ('W[i,j] = relu("w.npy)\n', '"w.npy)'),
])
def test_an_unterminated_string_that_took_the_closing_bracket_is_the_mistake_said(text, string):
    # The string runs to the end of its line, so it holds the ')' that would have
    # closed the '(': the string is the mistake (docs/diagnostics.md,
    # unterminated-string), not the bracket it swallowed.
    assert diagnostics(text)[0] == ("unterminated-string", string)
    assert "unclosed-bracket" not in [code for code, _ in diagnostics(text)]


def test_an_unterminated_string_on_a_later_line_leaves_the_bracket_before_it_said():
    text = 'E(A, B)\nX = f(A,\n "b) \nE?\n'
    assert diagnostics(text) == [("unclosed-bracket", "("), ("unterminated-string", '"b) ')]


def test_the_unterminated_string_is_said_by_fuse_check_json_at_its_column(tmp_path):
    (diag,) = check_json(tmp_path, "facts.fuse", 'Parent(Alice, Bob)\nParent(Bob, "Cy)\n'
                         'Parent(Cy, Dan)\nParent?\n')
    assert (diag["code"], diag["line"], diag["column"], diag["end_column"]) == \
        ("unterminated-string", 2, 13, 17)


# --- a closing bracket that skips one ------------------------------------------------

def test_a_closer_that_skips_an_open_bracket_is_said_where_it_is():
    # `const([1, 2, 3)`: the ')' closes the '(' with the '[' still open.  That ')'
    # is the mistake (docs/diagnostics.md, unmatched-bracket: "one of the wrong
    # kind"), not a '(' "never closed": the '(' is closed, and the statements after
    # it are read as statements of their own.
    text = "B[i] = const([1, 2, 3)\nC[i] = B[i]\nexport C\n"
    got = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert [(d.code, text[d.span.start:d.span.end]) for d in got] == \
        [("unmatched-bracket", ")")]
    assert got[0].message == "')' does not match '['; expected ']'"


# --- a bracket left open over a line break -------------------------------------------

def test_a_syntax_error_after_a_bracket_left_open_points_at_the_bracket():
    # `relu(A[i]` left open goes on over the line break (LANGUAGE.md §1), so the
    # next line, a statement of its own to the writer, is read into this one: the
    # syntax error says where the statement went on.
    text = "A[i] = const([1, 2])\nB[i] = relu(A[i]\nC[i] = A[i])\nexport B\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert diag.code == "syntax-error"
    (note,) = diag.related
    assert text[note.span.start:note.span.end] == "(" and note.span.start == text.index("(A[i]")
    assert "not closed on its line" in note.message


def test_a_syntax_error_in_a_statement_on_one_line_has_no_such_note():
    text = "A[i] = const([1, 2])\nB[i] = relu(A[i] +)\nexport B\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert diag.code == "syntax-error" and diag.related == ()


# --- constant positions past an axis ---------------------------------------------------

def test_every_constant_past_its_axis_is_said_not_only_the_largest():
    # Each is a mistake of its own line (LANGUAGE.md §3: a constant selects one
    # position); the first was silent while a larger one was written elsewhere.
    text = "A[i,j] = const([[1, 2, 3]])\nY[i] = A[i,5]\nZ[i] = A[i,7]\nV[i] = A[i,1]\n" \
        "export Y, Z, V\n"
    got = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert [(d.code, d.message, text[d.span.start:d.span.end]) for d in got] == [
        ("extent-conflict", "position 5 is outside an axis of extent 3", "5"),
        ("extent-conflict", "position 7 is outside an axis of extent 3", "7"),
    ]
    assert all(text[r.span.start:r.span.end] == "[[1, 2, 3]]" for d in got for r in d.related)


def test_a_constant_past_a_file_axis_is_said_beside_a_slice_past_it(tmp_path):
    import numpy as np

    np.save(tmp_path / "w.npy", np.ones((3, 4), dtype=np.float32))
    got = check_json(tmp_path, "w.fuse", 'W[i,j] = "w.npy"\nY[i] = W[i, 5]\nZ[i] = W[i, 2:9]\n'
                     'export Y, Z\n')
    assert [(d["code"], d["line"], d["column"]) for d in got] == \
        [("extent-conflict", 2, 13), ("extent-conflict", 3, 13)]


# --- an equation's operator that Fuse has not -------------------------------------------

@pytest.mark.parametrize("line, operator, words", [
    ("Y[i] sum= A[i,j]", "sum=", "`=` sums the indices the left-hand side does not keep"),
    ("Y sum= A[i,j]", "sum=", "`=` sums"),
    ("Y[i] mean= A[i,j]", "mean=", "did you mean `avg=`?"),
    ("Y[i] mx= A[i,j]", "mx=", "did you mean `max=`?"),
    ("Y[i] prod= A[i,j]", "prod=", "not a projection operator"),
    ("Y[i] *= A[i,i]", "*=", "write the product on the right-hand side"),
    ("Y[i] -= A[i,i]", "-=", "`Y[i] += -B[i]`"),
])
def test_an_operator_fuse_has_not_is_named_with_the_ones_it_has(line, operator, words):
    # LANGUAGE.md §2: `=`, `+=`, `max=`, `min=`, `avg=` (the parser said "missing
    # '=' between the left-hand side and the expression" for `sum=`).
    text = f"A[i,j] = const([[1, 2], [3, 4]])\n{line}\nexport Y\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert diag.code == "syntax-error"
    assert text[diag.span.start:diag.span.end] == operator
    assert words in diag.message
    assert "`=`, `+=`, `max=`, `min=` or `avg=`" in diag.message


def test_a_second_equals_is_still_the_comparison_mistake():
    text = "A[i] = const([1, 2])\nY[i] = A[i] sum= 2\nexport Y\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert "a second '='" in diag.message


# --- what an error says already is not said again ---------------------------------------

@pytest.mark.parametrize("text", [
    "A[i,j] = const([[1, 2], [3, 4]])\nB[i] = A[i]\nC[i] = A[i,j,k]\nexport B, C\n",
    "A[i] = const([1, 2])\nZ = A\nexport Z\n",
    "E(A, B)\nR(x,y,z) = E(x,y,z)\nR?\n",
])
def test_a_tensor_read_with_the_wrong_arity_is_not_said_never_read(text):
    # The arity-mismatch is the mistake; "`A` is never read" (unused-tensor) was
    # said beside it, untrue: the program reads it, wrongly.
    codes = [d.code for d in fuse_lang.analyze(text, "a.fuse").diagnostics]
    assert "arity-mismatch" in codes and "unused-tensor" not in codes


def test_a_tensor_no_statement_reads_is_still_said_never_read():
    text = "A[i] = const([1, 2])\nB[i] = const([3, 4])\nC[i] = A[i,i]\nexport C\n"
    got = [(d.code, text[d.span.start:d.span.end])
           for d in fuse_lang.analyze(text, "a.fuse").diagnostics]
    assert ("unused-tensor", "B") in got


def test_an_unbound_head_variable_is_not_also_an_unknown_extent():
    # `z` is bound by nothing: unbound-head-variable says so (docs/diagnostics.md);
    # the unknown-extent warning at the same `z` was its consequence, said twice.
    text = "E(A, B)\nR(x, z) = E(x, y)\nR?\n"
    assert diagnostics(text) == [("unbound-head-variable", "z")]


# --- a source file's rows --------------------------------------------------------------

@pytest.mark.parametrize("name, data, lhs, words", [
    ("e.tsv", "A\tB\nC\nD\tE\n", "E(x,y)", "line 2 has 1 field, the first row has 2"),
    ("m.csv", "1,2\n3\n", "M[i,j]", "row 2 has 1 number, the first row has 2"),
    ("n.csv", "1\n3,4,5\n", "M[i,j]", "row 2 has 3 numbers, the first row has 1"),
])
def test_a_ragged_source_file_is_said_in_words(tmp_path, name, data, lhs, words):
    (tmp_path / name).write_text(data)
    text = f'{lhs} = "{name}"\nexport {lhs[0]}\n'
    (diag,) = fuse_lang.analyze(text, str(tmp_path / "a.fuse")).diagnostics
    assert diag.code == "unreadable-source" and words in diag.message


# --- a query's variable spelled like a capitalised symbol ------------------------------

def test_a_query_variable_that_is_a_symbol_in_lowercase_is_hinted_with_the_symbol():
    text = "Parent(Ann, Bob)\nParent(Bob, Cy)\nParent(ann, x)?\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert diag.code == "lowercase-constant" and text[diag.span.start:diag.span.end] == "ann"
    assert "did you mean `Ann`?" in diag.message
    (fix,) = diag.fixes
    assert [edit.new_text for edit in fix.edits] == ["Ann"]


@pytest.mark.parametrize("query", ["Parent(x, y)?", "Parent(a, b)?", "Parent(who, x)?"])
def test_short_or_unrelated_query_variables_get_no_hint(query):
    # one-letter variables beside one-letter symbols are the usual Datalog
    text = f"Parent(A, B)\nParent(Ann, Bob)\n{query}\n"
    assert fuse_lang.analyze(text, "a.fuse").diagnostics == ()


def test_one_colon_for_an_imported_name_is_said_with_the_two(tmp_path):
    (tmp_path / "g.fuse").write_text("T[i] = const([1, 2])\n")
    text = 'import "g.fuse" as g\nY[i] = g:T[i]\nexport Y\n'
    (diag,) = fuse_lang.analyze(text, str(tmp_path / "a.fuse")).diagnostics
    assert diag.code == "syntax-error" and text[diag.span.start:diag.span.end] == "g:T"
    assert "`g::T`" in diag.message


# --- a virtual index with a step a recurrence has not -----------------------------------

@pytest.mark.parametrize("line, written", [
    ("X[i,*t+1] = X[i,*t-1] + 1", "*t-1"),       # read a step back: only *t is kept
    ("X[i,*t+1] = X[i,*t+1] + 1", "*t+1"),
    ("X[i,*t+2] = X[i,*t] + 1", "*t+2"),         # a step of two
    ("X[i,*t-1] = X[i,*t] + 1", "*t-1"),
])
def test_a_virtual_index_off_its_one_step_is_an_error(line, written):
    # LANGUAGE.md §3: `X[i,*t+1] = f(X[j,*t])`, only the latest value kept.  These
    # ran silently as `*t+1` and `*t`.
    text = f"axis t = 3\naxis i = 2\n{line}\nexport X\n"
    got = [(d.code, text[d.span.start:d.span.end], d.message)
           for d in fuse_lang.analyze(text, "a.fuse").diagnostics if d.code != "recursion"]
    assert len(got) == 1, got
    code, under, message = got[0]
    assert (code, under) == ("virtual-index", written)
    assert f"not `{written}`" in message


def test_the_recurrences_of_the_contract_have_no_virtual_index_error():
    text = ("axis t = 3\naxis i = 2\nW[i,j] = const([[0.1, 0], [0, 0.1]])\n"
            "U[j,t] = const([[1, 0, 1], [0, 1, 0]])\nX[i,*t] = U[i,0]\n"
            "X[i,*t+1] = sig(W[i,j] X[j,*t] + U[i,t])\nexport X\n")
    assert [d.code for d in fuse_lang.analyze(text, "a.fuse").diagnostics] == ["recursion"]


def test_fuse_run_refuses_a_virtual_read_a_step_back(tmp_path):
    (tmp_path / "r.fuse").write_text("axis t = 3\naxis i = 2\nX[i,*t+1] = X[i,*t-1] + 1\n"
                                     "export X\n")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "r.fuse"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 1 and "virtual-index" in proc.stderr + proc.stdout


# --- one mistake, one error ---------------------------------------------------------------

def test_an_index_builtin_given_no_index_is_one_error_not_also_undefined():
    text = "X[i] = const([1, 2])\nY[i] = X[i] even(j)\nexport Y\n"
    assert diagnostics(text) == [("bad-argument", "j")]


def test_an_undefined_name_alone_is_still_said():
    text = "X[i] = const([1, 2])\nY[i] = X[i] Nope[i] even(i)\nexport Y\n"
    assert diagnostics(text) == [("undefined-tensor", "Nope")]


def test_a_column_with_more_values_than_its_axis_says_so_in_words():
    # "this domain has extent 2 but more symbols than that" named neither the
    # column nor the axis it shares its values with
    text = "Likes(Ann, Tea)\nLikes(Bob, Cake)\nLikes(Cy, Jam)\nW[x] = const([1, 2])\n" \
        "S[y] = Likes(y, f) W[y]\nexport S\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert diag.code == "extent-conflict" and text[diag.span.start:diag.span.end] == "Cy"
    assert diag.message == ("`Cy` is value number 3 of a domain of extent 2: this column shares "
                            "its values with an axis of extent 2, and cannot hold more symbols "
                            "than that")


# --- an index summed inside one side of a comparison -----------------------------------

def test_an_index_only_in_one_side_of_a_comparison_is_warned_summed_there():
    # Each call argument is a scope (LANGUAGE.md §5) and a comparison is a call:
    # `(X[j] < X[i])` compares sum_j X[j] with X[i], silently ([0, 0, 0] here).
    text = "X[i] = const([3, 1, 2])\nR[i] = (X[j] < X[i])\nexport R\n"
    (diag,) = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert (diag.code, diag.severity.value) == ("lone-index", "warning")
    assert text[diag.span.start:diag.span.end] == "j"
    assert "summed there before comparing" in diag.message
    assert "reduce(sum, j)" in diag.message


@pytest.mark.parametrize("line", [
    "R[i] = reduce(sum, j) (X[j] < X[i])",      # the count, written out
    "R[i] = X[i] (X[i] > 1)",
    "R[i] = M[i,j] (M[i,j] > 1)",                # j outside the comparison too
    "R[i] = M[i,j] (j < i)",
    "R[i,j] = (M[i,j] > X[j])",
    "R[i] = select(X[i] > S, X[i], 0)",          # a scalar tensor in a comparison
    "R[i] = M[i,j] when M[i,j] > 2",
])
def test_comparisons_without_a_sum_inside_them_are_clean(line):
    text = ("X[i] = const([3, 1, 2])\nM[i,j] = const([[1, 2, 3], [4, 5, 6], [7, 8, 9]])\n"
            f"S = const(2)\n{line}\nexport R, X, M, S\n")
    assert fuse_lang.analyze(text, "a.fuse").diagnostics == ()


def test_a_rule_with_a_comparison_is_left_alone():
    text = "Age(Ann, 30)\nAge(Bob, 12)\nAdult(x) = Age(x, a) (a >= 18)\nAdult?\n"
    assert fuse_lang.analyze(text, "a.fuse").diagnostics == ()


@pytest.mark.parametrize("text, error", [
    ("A[i,j] = const([[1, 2], [3]])\nexport A\n", "bad-argument"),
    ("A[i] = const([[1, 2], [3, 4]])\nexport A\n", "bad-argument"),
    ("A[i] = const([1, 2])\nY[i] = A[]\nexport Y\n", "arity-mismatch"),
])
def test_an_erring_statement_s_left_indices_are_not_also_unknown_extents(text, error):
    # the statement's error is why nothing sizes its left-hand side: said once
    assert [d.code for d in fuse_lang.analyze(text, "a.fuse").diagnostics] == [error]


def test_a_sound_statement_beside_an_erring_one_still_says_its_own_unsized_axis():
    text = "A[i] = const([[1], [2, 3]])\nB[i,k] = A[i]\nexport B\n"
    got = [(d.code, text[d.span.start:d.span.end])
           for d in fuse_lang.analyze(text, "a.fuse").diagnostics]
    assert got == [("bad-argument", "[[1], [2, 3]]"), ("unsized-tensor", "B[i,k]")]


# --- NumPy's indexing of a call's result ------------------------------------------

def test_indices_after_a_call_are_removed_by_the_fix() -> None:
    """`const([1, 2])[i]` (NumPy's spelling) names the mistake and removes the
    indices; after the fix the program checks clean and gives the list."""
    text = "A[i] = const([1, 2])[i]\nexport A\n"
    [d] = fuse_lang.analyze(text, "a.fuse").diagnostics
    assert d.code == "misplaced-list" and text[d.span.start:d.span.end] == "[i]"
    [edit] = d.fixes[0].edits
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert fixed.startswith("A[i] = const([1, 2])\n")
    assert not fuse_lang.analyze(fixed, "a.fuse").diagnostics


# --- what a left-hand side silently dropped ------------------------------------------

def test_a_negative_position_on_a_left_hand_side_is_invalid_index() -> None:
    """`X[-1] = 5` wrote outside the axis and was dropped without a word; on the
    right it was already `invalid-index`.  A relation's head keeps -1 as a value."""
    found = diagnostics("axis i = 3\nX[i] = 1\nX[-1] = 5\nexport X\n")
    assert found == [("invalid-index", "-1")]
    assert diagnostics("A(3)\nS(-5) = A(x)\nR(-1)\nR?\nS?\n") == []


@pytest.mark.parametrize("lhs, what", [("W[0, j]", "a constant"), ("W[i+1, j]", "an offset"),
                                       ("W[i/2, j]", "a division"), ("W[0:1, j]", "a slice")])
def test_a_source_left_hand_side_takes_index_variables_only(lhs, what) -> None:
    """The whole file was read whatever stood there (`W[0, j] = "w.npy"` gave every row)."""
    [(code, _)] = [d for d in diagnostics(f'{lhs} = "w.npy"\nexport W\n')
                   if d[0] != "missing-source"]
    assert code == "invalid-statement"
    [d] = [d for d in fuse_lang.analyze(f'{lhs} = "w.npy"\n', "a.fuse").diagnostics
           if d.code == "invalid-statement"]
    assert f"not with {what}" in d.message
