"""Datalog habits (issue 27, point 7): a rule, fact or query written with Datalog's
punctuation (`:-`, commas between atoms, a final `.`, `?-`, `!`) gets the
`datalog-syntax` error saying how Fuse writes it, with a fix that rewrites the
statement; and a syntax error does not cascade into `undefined-tensor` or
`unused-tensor` about the names on the broken statement.  Through
`fuse_lang.analyze`, `compile` and `fuse check`."""
from __future__ import annotations

import pytest

import fuse_lang
from fuse_lang import Severity, compile
from fuse_lang.check import Analyzer
from fuse_lang.cli import main as cli_main

FACTS = "Parent(Ann, Bob)\nParent(Bob, Cy)\n"
FUSE_RULES = ("Ancestor(x,y) = Parent(x,y)\nAncestor(x,z) = Parent(x,y) Ancestor(y,z)\n"
              "Ancestor(Ann, x)?\n")


def diagnostics(text: str) -> list:
    return list(fuse_lang.analyze(text).diagnostics)


def problems(text: str) -> list:
    """The errors and warnings of `text` (a recursive rule is said as information)."""
    return [d for d in diagnostics(text) if d.severity in (Severity.ERROR, Severity.WARNING)]


def the(text: str, code: str = "datalog-syntax"):
    found = [d for d in diagnostics(text) if d.code == code]
    assert len(found) == 1, [(d.code, d.message) for d in diagnostics(text)]
    return found[0]


def applied(text: str, diag) -> str:
    """`text` with the diagnostic's (first) fix made."""
    (fix, *_) = diag.fixes
    for edit in sorted(fix.edits, key=lambda e: e.span.start, reverse=True):
        text = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    return text


def answers(text: str) -> list[set[tuple]]:
    return [set(q.tuples) for q in compile(text).execute().queries]


def test_a_rule_with_a_neck_commas_and_a_period():
    text = FACTS + ("Ancestor(x,y) :- Parent(x,y).\n"
                    "Ancestor(x,z) :- Parent(x,y), Ancestor(y,z).\nAncestor(Ann, x)?\n")
    diags = diagnostics(text)
    assert [d.code for d in diags] == ["datalog-syntax", "datalog-syntax"]  # no cascade
    rule = diags[1]
    assert rule.severity is Severity.ERROR
    assert text[rule.span.start:rule.span.end] == ":-"
    assert "Fuse writes a rule as its head, `=`, then the body's atoms side by side" \
        in rule.message
    assert "`Ancestor(x,z) = Parent(x,y) Ancestor(y,z)`" in rule.message
    assert rule.fixes[0].title == "Write it the Fuse way: `Ancestor(x,z) = Parent(x,y) " \
        "Ancestor(y,z)`"
    fixed = applied(applied(text, rule), diags[0])
    assert fixed == FACTS + FUSE_RULES
    assert problems(fixed) == []
    assert answers(fixed) == answers(FACTS + FUSE_RULES) == [{("Bob",), ("Cy",)}]


def test_commas_alone_and_a_period_alone():
    text = FACTS + "Grand(x,z) = Parent(x,y), Parent(y,z)\nGrand(x, y)?\n"
    d = the(text)
    assert text[d.span.start:d.span.end] == ","
    assert "not separated by commas" in d.message
    assert applied(text, d) == FACTS + "Grand(x,z) = Parent(x,y) Parent(y,z)\nGrand(x, y)?\n"
    text = FACTS + "Child(y,x) = Parent(x,y).\nChild(x, y)?\n"
    d = the(text)
    assert "ends with its line, without a final `.`" in d.message
    assert problems(applied(text, d)) == []


def test_a_fact_with_a_period():
    text = "Parent(Ann, Bob).\nParent(Bob, Cy)\nParent(x, y)?\n"
    d = the(text)
    assert (d.span.start, d.span.end) == (16, 17)
    assert "`Parent(Ann, Bob)`" in d.message
    fixed = applied(text, d)
    assert fixed == "Parent(Ann, Bob)\nParent(Bob, Cy)\nParent(x, y)?\n"
    assert answers(fixed) == [{("Ann", "Bob"), ("Bob", "Cy")}]


def test_a_query_and_negation():
    text = FACTS + "Root(x) :- Parent(x, y), !Parent(_, x).\n?- Root(x).\n"
    diags = diagnostics(text)
    assert [d.code for d in diags] == ["datalog-syntax", "datalog-syntax"]
    query = diags[1]
    assert "Fuse writes a query as the atom followed by `?`: `Root(x)?`" in query.message
    fixed = applied(applied(text, query), diags[0])
    assert fixed == FACTS + "Root(x) = Parent(x, y) not Parent(_, x)\nRoot(x)?\n"
    assert problems(fixed) == []
    assert answers(fixed) == [{("Ann",)}]


def test_a_rule_over_several_lines_is_joined_by_its_fix():
    text = FACTS + "Ancestor(x,y) = Parent(x,y)\nAncestor(x,z) :-\n    Parent(x,y),\n" \
        "    Ancestor(y,z).\nAncestor(Ann, x)?\n"
    diags = diagnostics(text)
    assert [(d.code, text[d.span.start:d.span.end]) for d in diags] == [
        ("datalog-syntax", ":-"), ("datalog-syntax", ","), ("datalog-syntax", ".")]
    assert "a Datalog rule over 3 lines" in diags[0].message
    assert "goes on with the Datalog rule of line 4" in diags[2].message
    assert all("`Ancestor(x,z) = Parent(x,y) Ancestor(y,z)`" in d.message for d in diags)
    assert diags[0].fixes == diags[1].fixes == diags[2].fixes
    fixed = applied(text, diags[1])
    assert fixed == FACTS + FUSE_RULES
    assert problems(fixed) == []


def test_a_rule_over_several_lines_without_a_fix():
    d = the(FACTS + "Grand(x,z) :-\nGrand(x, y)?\n")  # the body never came
    assert "written over several lines" in d.message and "on one line" in d.message
    assert d.fixes == ()
    text = FACTS + "Grand(x,z) :-\n  Parent(x,y),  # a comment the fix would lose\n" \
        "  Parent(y,z).\nGrand(x, y)?\n"
    diags = diagnostics(text)
    assert [d.code for d in diags] == ["datalog-syntax"] * 3
    assert all(d.fixes == () and "`Grand(x,z) = Parent(x,y) Parent(y,z)`" in d.message
               for d in diags)


def test_datalog_case_is_pointed_out_without_a_fix():
    d = the("anc(X,Y) :- par(X,Y).\n")
    assert "uppercase letter" in d.message and "`A(x) = B(x)`" in d.message
    assert d.fixes == ()


def test_every_broken_statement_is_reported():
    text = (FACTS + "A(x,y) :- Parent(x,y).\nB[i] = = 1\nC(x) = Parent(x,y), Parent(y,z)\n"
            "D(x,y) = Parent(x,y).\n")
    assert [d.code for d in diagnostics(text)] == [
        "datalog-syntax", "syntax-error", "datalog-syntax", "datalog-syntax"]


@pytest.mark.parametrize("text", [
    "Y[i] = X[i], Z[i] +",  # commas that are not the only mistake
    "X = const([1])\nY[i] = = X[i].",
])
def test_other_mistakes_keep_the_parsers_words(text):
    assert "syntax-error" in [d.code for d in diagnostics(text)]
    assert "datalog-syntax" not in [d.code for d in diagnostics(text)]


@pytest.mark.parametrize("text", [
    ":-", ".", "?-", "?- .", "A :- .", "A(x) :- ,", ", .", "!", "A(x) = !", "A :- :- B",
    "?-A", "A(x) :- B(x), .", "A(x) :- !", "export A, B.", ":- B(x).", "A(x) :-\n  B(x).",
    "A(x) :- B(x)\t.\t", "(:-)", "A[x] :- B[x] ; C(x) :- D(x).",
])
def test_odd_datalog_never_raises(text):
    for d in diagnostics(text):
        assert d.severity in Severity
        for fix in d.fixes:
            assert fuse_lang.analyze(applied(text, d)) is not None and fix.edits


# ------------------------------------------------------------------ cascades


def test_a_broken_definition_is_not_undefined_where_read():
    text = FACTS + "A(x,y) = Parent(x,y)\nC(x,y) = A(x,y) ++\nD(x,y) = C(x,y)\nD(Ann, x)?\n"
    assert [d.code for d in diagnostics(text)] == ["syntax-error"]


def test_a_name_read_only_on_a_broken_statement_is_not_unused():
    text = FACTS + "Ancestor(x,y) :- Parent(x,y), Ancestor(y,z).\nAncestor(Ann, x)?\n"
    assert [d.code for d in diagnostics(text)] == ["datalog-syntax"]


def test_other_undefined_and_unused_names_are_still_reported():
    text = FACTS + ("Lone(x) = Parent(x, y)\nC(x,y) = Parent(x,y) ++\n"
                    "D(x,y) = C(x,y) Missing(y)\nD(Ann, x)?\n")
    diags = diagnostics(text)
    assert [(d.code, text[d.span.start:d.span.end]) for d in diags] == [
        ("unused-tensor", "Lone"), ("syntax-error", "+"), ("undefined-tensor", "Missing")]


def test_an_editors_analyzer_agrees_after_edits():
    analyzer = Analyzer()
    clean = FACTS + "A(x,y) = Parent(x,y)\nC(x,y) = A(x,y)\nD(x,y) = C(x,y)\nD(Ann, x)?\n"
    broken = clean.replace("C(x,y) = A(x,y)", "C(x,y) :- A(x,y), A(y,x).")
    lines = clean.replace("C(x,y) = A(x,y)", "C(x,y) :-\n  A(x,y),\n  A(y,x).")
    for text in (clean, broken, clean, broken, lines, clean, lines, "# top\n" + lines):
        got = [(d.code, d.span, d.message) for d in analyzer.analyze(text).diagnostics]
        assert got == [(d.code, d.span, d.message) for d in diagnostics(text)]
    assert [d.code for d in analyzer.analyze(broken).diagnostics] == ["datalog-syntax"]


def test_fuse_check_prints_the_fix(tmp_path, capsys):
    prog = tmp_path / "p.fuse"
    prog.write_text(FACTS + "Child(y,x) :- Parent(x,y).\nChild(x, y)?\n")
    assert cli_main(["check", str(prog)]) == 1
    out = capsys.readouterr().out
    assert "error[datalog-syntax]" in out
    assert "fix: Write it the Fuse way: `Child(y,x) = Parent(x,y)`" in out
