"""Incremental analysis (`fuse_lang.check.Analyzer`): after every edit its result
equals a from-scratch `analyze` of the same text — diagnostics, IR and spans,
tensors, index roles and scopes, extents and domains — and what did not change
is reused rather than made again."""
from __future__ import annotations

import copy
import dataclasses
import pickle
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from fuse_lang import parse
from fuse_lang.check import Analysis, Analyzer, analyze
from fuse_lang.front import ir
from fuse_lang.front.syntax import ParseCache
from fuse_lang.ide.semantic_tokens import TokenCache, semantic_tokens

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

PROGRAM = """\
# attention over sources, a Datalog part and a recurrence
X[p,d]   = "data/attention_x.npy"
WQ[dk,d] = "data/attention_wq.npy"
WK[dk,d] = "data/attention_wk.npy"
WV[dv,d] = "data/attention_wv.npy"
Dk = const(8)
axis h = 3

Query[p,dk] = WQ[dk,d] X[p,d]
Key[p,dk]   = WK[dk,d] X[p,d]
Val[p,dv]   = WV[dv,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk))
Attn[p,dv]  = Comp[p,p'] Val[p',dv] + 0.5
Big[p,h] = relu(Attn[p,dv] + 1)
M[dv] max= Attn[p,dv]

Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
L[l,e] = tanh(Attn[e,e'] L[l-1,e'])
Ancestor(Alice, x)?
export Attn, Comp, M
"""


def same(incremental: Analysis, scratch: Analysis, program: bool = True) -> None:
    """Every part of two analyses is equal (spans included); the program only with
    `program` (an editor's is made when first read: front/relocation.py)."""
    assert incremental.diagnostics == scratch.diagnostics
    if program:
        assert incremental.program == scratch.program
    assert incremental.tensors == scratch.tensors
    assert list(incremental.tensors) == list(scratch.tensors)
    assert incremental.roles == scratch.roles
    assert incremental.scopes == scratch.scopes
    assert incremental.var_extents == scratch.var_extents
    assert incremental.domain_symbols == scratch.domain_symbols
    assert incremental.order == scratch.order
    assert incremental.recursive == scratch.recursive
    assert incremental.exports == scratch.exports
    assert incremental.recursion == scratch.recursion
    assert incremental.lines.line_starts == scratch.lines.line_starts
    assert (incremental.text, incremental.path, incremental.base_dir) == \
        (scratch.text, scratch.path, scratch.base_dir)


def check_sequence(texts: list[str], base_dir: Path = EXAMPLES) -> list[Analysis]:
    analyzer = Analyzer()
    parse_cache = ParseCache()
    token_cache = TokenCache()
    results = []
    for text in texts:
        got = analyzer.analyze(text, None, base_dir)
        want = analyze(text, None, base_dir)
        same(got, want)
        assert parse(text, parse_cache) == parse(text)
        assert semantic_tokens(got, cache=token_cache) == semantic_tokens(want)
        results.append(got)
    return results


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_a_sequence_of_edits_matches_analysing_from_scratch():
    steps = [PROGRAM]

    def then(old: str, new: str) -> None:
        steps.append(edit(steps[-1], old, new))

    then("+ 0.5", "+ 0.7")                                  # same length: nothing moves
    then("# attention", "# one attention head,\n# attention")  # a line added above all
    then("Big[p,h] = relu(Attn[p,dv] + 1)\n", "")            # a statement removed
    then("axis h = 3", "axis h = 4")                         # an extent changed
    then('"data/attention_x.npy"', '"data/attention_x.npy"\naxis d = 5')  # a conflict
    then("\naxis d = 5", "")                                 # ... and fixed
    then("Key[p,dk]   = WK[dk,d] X[p,d]", "Key[p,dk]   = WK[dk,d X[p,d]")  # a bracket left open
    then("Val[p,dv]   = WV[dv,d] X[p,d]", "Val[p,dv]   = WV[dv,d] X[p,d")  # and another
    then("WK[dk,d X[p,d]", "WK[dk,d] X[p,d]")                # fixed one
    then("X[p,d\n", "X[p,d]\n")                              # fixed the other
    then("Query[p,dk] = WQ[dk,d] X[p,d]", "Query[p,dk] = WQ[dk,d] Xs[p,d]")  # undefined
    then("Xs[p,d]", "X[p,d]")
    then("Comp[p,p'.] = softmax(", "Comp[p,p'.] = softmax(\n    ")  # over two lines
    then("M[dv] max=", "M[dv] max= Dk;  M[dv] max=")          # `;` on a line
    then("Parent(Bob, Carol)", "Parent(Bob, Carol)\nParent(Bob, Carol)")  # a repeated line
    then("Dk = const(8)", "Dk = const(8) +")                 # a syntax error
    then("Dk = const(8) +", "Dk = const(8)")
    then("Ancestor(Alice, x)?", "Ancestor(Alice, x)?\nZ[i] = Attn[i,j] h")  # h: an axis name
    then("\naxis h = 4", "\nh = const(2)")                   # ... now a tensor
    then("Attn[p,dv]  = Comp", "Attn[p,dv]  = sig(Comp")     # unbalanced over the file
    then("= sig(Comp", "= Comp")
    steps.append("")                                          # everything deleted
    steps.append(PROGRAM)                                     # and back
    check_sequence(steps)


FUNCTIONS = """\
# functions inlined before checking (issue 33)
X[p,d]   = "data/attention_x.npy"
WQ[dk,d] = "data/attention_wq.npy"
WK[dk,d] = "data/attention_wk.npy"

fn score(x[p,d], wq[k,d], wk[k,d]) -> s[p,p'] {
  q[p,k]  = wq[k,d] x[p,d]
  kk[p,k] = wk[k,d] x[p,d]
  s[p,p'] = q[p,k] kk[p',k]
}
S[p,p'] = score(X[p,d], WQ[k,d], WK[k,d])
T[p] = relu(score(X[p,d], WK[k,d], WQ[k,d]) + 1) (p' < p)
C[p] = case { T[p] > 1 -> T[p]; default -> 0 }
export S, T, C
"""


def test_edits_of_a_program_with_functions_match_analysing_from_scratch():
    steps = [FUNCTIONS]

    def then(old: str, new: str) -> None:
        steps.append(edit(steps[-1], old, new))

    then("# functions", "# two functions\n# functions")           # every line moves
    then("  s[p,p'] = q[p,k] kk[p',k]", "  s[p,p'] = q[p,k] kk[p',k] / 2")  # a body changed
    then("relu(score(X[p,d], WK[k,d], WQ[k,d])", "relu(score(X[p,d], WK[k,d])")  # too few
    then("relu(score(X[p,d], WK[k,d])", "relu(score(X[p,d], WK[k,d], WQ[k,d])")
    then("fn score(", "fn score2(")                                # every call unknown
    then("fn score2(", "fn score(")
    then("  kk[p,k] = wk[k,d] x[p,d]\n", "")                     # a local left undefined
    then("  q[p,k]  = wq[k,d] x[p,d]\n", "  q[p,k]  = wq[k,d] x[p,d]\n  kk[p,k] = "
         "wk[k,d] x[p,d]\n")
    then("}\nS[p,p']", "\nS[p,p']")                              # a brace left open
    then("\nS[p,p']", "}\nS[p,p']")
    then("T[p] = ", "axis p = 6\nT[p] = ")                         # an axis over a body index
    then("default -> 0", "default -> S[p,p]")
    check_sequence(steps)


def test_only_the_lines_the_cache_lacks_are_lexed(monkeypatch):
    from fuse_lang.front.lexer import Lexer

    lexed: list[str] = []
    lines = Lexer.lines

    def spy(self, text, pos=0, endpos=None):
        lexed.append(text[pos:endpos])
        return lines(self, text, pos, endpos)

    monkeypatch.setattr(Lexer, "lines", spy)
    cache = ParseCache()
    parse(PROGRAM, cache)
    assert lexed == [PROGRAM]  # its lines in one go
    text = edit(PROGRAM, "axis h = 3", "axis h = 4\nZ[i] = Attn[i,j]")  # a line changed, one added
    text = edit(text, "M[dv] max=", "M[dv] min=")  # and one further down
    want = parse(text)
    lexed.clear()
    assert parse(text, cache) == want
    assert lexed == ["axis h = 4\nZ[i] = Attn[i,j]", "M[dv] min= Attn[p,dv]"]


def test_unchanged_statements_are_reused_and_moved_ones_shifted():
    analyzer = Analyzer()
    first = analyzer.analyze(PROGRAM, None, EXAMPLES)
    # a same-length edit inside one statement: every other statement is the same object
    second = analyzer.analyze(edit(PROGRAM, "+ 0.5", "+ 0.7"), None, EXAMPLES)
    old, new = first.program.statements, second.program.statements
    changed = [k for k, (a, b) in enumerate(zip(old, new)) if a is not b]
    assert len(changed) == 1 and isinstance(new[changed[0]], ir.Equation)
    assert new[changed[0]].lhs.name == "Attn"
    # a line added at the top: every statement is its old self moved by the line's length
    third = analyzer.analyze("# more\n" + second.text, None, EXAMPLES)
    for before, after in zip(new, third.program.statements):
        assert after.span == (before.span.start + 7, before.span.end + 7)
    same(third, analyze("# more\n" + second.text, None, EXAMPLES))


@pytest.mark.parametrize("first", ["tensors", "var_extents", "domain_symbols"])
def test_a_one_off_analysis_numbers_domains_as_the_analyzer_does(first):
    # `analyze` makes these three only when one is first read (`fuse check` reads
    # none); whichever is read first, they equal the Analyzer's, domain numbers too
    # (in the second, `j` and `k` belong to no tensor: their numbers depend on the order)
    texts = [PROGRAM, "Early[i] = Missing[i,j] Gone[k]\n" + PROGRAM]
    texts += [p.read_text() for p in sorted(EXAMPLES.glob("*.fuse"))]
    for text in texts:
        want = Analyzer().analyze(text, None, EXAMPLES)
        got = analyze(text, None, EXAMPLES)
        getattr(got, first)
        assert list(got.tensors.items()) == list(want.tensors.items())
        assert list(got.var_extents.items()) == list(want.var_extents.items())
        assert list(got.domain_symbols.items()) == list(want.domain_symbols.items())
        same(got, want)
    # the program above has sources, a recursion and symbols: the numbers mean something
    one_off = analyze(PROGRAM, None, EXAMPLES)
    assert one_off.recursive and one_off.tensors["X"].kind == "source"
    numbers = {axis.domain for info in one_off.tensors.values() for axis in info.axes}
    assert set(one_off.domain_symbols) <= numbers | {d for _, d in one_off.var_extents.values()}
    assert one_off.domain_symbols[one_off.tensors["Parent"].axes[0].domain] == \
        ("Alice", "Bob", "Carol")


def test_a_one_off_analysis_copies_replaces_and_pickles_whole():
    want = Analyzer().analyze(PROGRAM, None, EXAMPLES)
    for make in (copy.copy, copy.deepcopy, dataclasses.replace,
                 lambda a: pickle.loads(pickle.dumps(a))):
        got = make(analyze(PROGRAM, None, EXAMPLES))
        same(got, want)
    changed = dataclasses.replace(analyze(PROGRAM, None, EXAMPLES), tensors={})
    assert changed.tensors == {} and changed.var_extents == want.var_extents


def test_a_one_off_analysis_read_from_many_threads_at_once_gives_each_the_same():
    import sys
    import threading

    want = Analyzer().analyze(PROGRAM, None, EXAMPLES)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for _ in range(30):
            analysis = analyze(PROGRAM, None, EXAMPLES)
            assert "tensors" not in vars(analysis)  # deferred: fuse check never makes it
            got, errors = [], []

            def read(name: str, analysis: Any = analysis, got: list = got,
                     errors: list = errors) -> None:
                try:
                    got.append(getattr(analysis, name))
                except Exception as err:  # noqa: BLE001 - the test reports any
                    errors.append(err)

            threads = [threading.Thread(target=read, args=(name,))
                       for name in ("tensors", "var_extents", "domain_symbols") * 3]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not errors
            same(analysis, want)
    finally:
        sys.setswitchinterval(interval)


def test_an_analyzer_makes_the_tables_when_first_read_in_any_order():
    """The editor's diagnostics need no tensors, var_extents or domain_symbols: an
    Analyzer's analysis makes them when first read, reusing the TensorInfos of the
    last version whose tables were made.  Read late, out of order, or never, they
    equal a fresh analysis' all the same."""
    texts = [PROGRAM, edit(PROGRAM, "+ 0.5", "+ 0.7"), "# top\n" + PROGRAM,
             edit(PROGRAM, "axis h = 3", "axis h = 4"), PROGRAM]
    analyzer = Analyzer()
    results = [analyzer.analyze(text, None, EXAMPLES) for text in texts[:3]]
    assert all("tensors" not in vars(result) for result in results)  # none made yet
    same(results[1], analyze(texts[1], None, EXAMPLES))  # the second's made after the third
    same(results[2], analyze(texts[2], None, EXAMPLES))
    # an edit that moves nothing the TensorInfos hold: they are reused as they are
    again = analyzer.analyze(edit(texts[2], "+ 0.5", "+ 0.6"), None, EXAMPLES)
    assert again.tensors["X"] is results[2].tensors["X"]
    results += [analyzer.analyze(text, None, EXAMPLES) for text in texts[3:]]
    same(results[4], analyze(texts[4], None, EXAMPLES))  # the fourth's never made
    same(results[0], analyze(texts[0], None, EXAMPLES))  # the first's made last


def test_a_rules_safety_is_found_once_and_moves_with_it(monkeypatch):
    """The Datalog safety of a reused rule, and what it reads negated, are not
    found again, even when it moved: what was found (here an unbound head
    variable, an unsafe negation, a negation cycle) moves along."""
    from fuse_lang.check import datalog

    checked: list[str] = []
    check_safety = datalog._check_safety

    def spy(stmt, tensors, diags):
        checked.append(stmt.lhs.name)
        check_safety(stmt, tensors, diags)

    monkeypatch.setattr(datalog, "_check_safety", spy)
    negated = datalog._negated_reads
    read_negated: list[int] = []

    def spy_negated(expr):
        read_negated.append(1)
        return negated(expr)

    monkeypatch.setattr(datalog, "_negated_reads", spy_negated)
    text = PROGRAM + ("Bad(x,y) = Parent(x,z)\nWorse(x,z) = Parent(x,y) not(Ancestor(y,z))\n"
                      "Win(x) = Parent(x,y) not(Win(y))\n")
    steps = [text, "# a line on top\n" + text, "# a line on top\n" + text + "Parent(Carol, Dan)\n",
             edit("# a line on top\n" + text, "Bad(x,y)", "Bad(x,w)")]
    analyzer = Analyzer()
    counts = []
    for step in steps:
        checked.clear()
        read_negated.clear()
        got = analyzer.analyze(step, None, EXAMPLES)
        counts.append((sorted(checked), len(read_negated)))
        want = analyze(step, None, EXAMPLES)
        same(got, want)
        assert {d.code for d in got.diagnostics} >= {"unbound-head-variable", "unsafe-negation",
                                                      "negation-cycle"}
    assert counts[0][1] > 0  # moved, then renumbered: none again; then only the edited rule
    assert counts[1:] == [([], 0), ([], 0), (["Bad"], 0)]


def test_how_a_recursive_group_runs_is_found_again_only_when_its_rules_change(monkeypatch):
    from fuse_lang.check import order

    asked: list[tuple[str, ...]] = []
    recursion_kind = order._recursion_kind

    def spy(group, statements, tensors):
        asked.append(tuple(group))
        return recursion_kind(group, statements, tensors)

    monkeypatch.setattr(order, "_recursion_kind", spy)
    steps = [PROGRAM, "# a line on top\n" + PROGRAM,
             edit(PROGRAM, "L[l,e] = tanh(", "L[l,e] = sig("),          # the recurrence's rule
             edit(PROGRAM, "Ancestor(x,z) = Ancestor(x,y) Parent(y,z)",  # a rule of the group:
                  "Ancestor(x,z) = Ancestor(x,y) - Parent(y,z)")]       # not monotone now
    analyzer = Analyzer()
    counts = []
    for step in steps:
        asked.clear()
        got = analyzer.analyze(step, None, EXAMPLES)
        counts.append(sorted(asked))
        same(got, analyze(step, None, EXAMPLES))
    assert counts[1:] == [[], [("L",)], [("Ancestor",), ("L",)]]


def test_source_files_are_read_again_on_every_analysis(tmp_path):
    import numpy as np

    np.save(tmp_path / "w.npy", np.zeros((2, 3), dtype=np.float32))
    text = 'W[i,j] = "w.npy"\nY[i] = W[i,j]\nexport Y\n'
    analyzer = Analyzer()
    first = analyzer.analyze(text, None, tmp_path)
    assert first.tensors["W"].shape == (2, 3)
    np.save(tmp_path / "w.npy", np.zeros((4, 5), dtype=np.float32))
    second = analyzer.analyze(text, None, tmp_path)
    assert second.tensors["W"].shape == (4, 5)
    same(second, analyze(text, None, tmp_path))


_PIECES = ["(", ")", "[", "]", "\n", ";", " = ", " ", "X[p,d]", " + ", "#", '"', "axis d = 3\n",
           "i", ",", "*", "{", "'", "é", "softmax(", "export ", "\n\n", "Attn[p,dv]", "0"]


@pytest.mark.parametrize("seed", range(6))
def test_random_edit_sequences_match_analysing_from_scratch(seed):
    """Random insertions and deletions, each applied to the previous version (as an
    editor's changes are), on the examples and the program above."""
    rng = random.Random(seed)
    bases = [PROGRAM] + [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.fuse"))]
    text = bases[seed % len(bases)]
    steps = [text]
    for _ in range(25):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.55:
            text = text[:at] + rng.choice(_PIECES) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 12):]
        if rng.random() < 0.1:
            text = rng.choice(bases)  # a whole new document
        steps.append(text)
    check_sequence(steps)


@pytest.mark.parametrize("seed", range(4))
def test_edits_whose_programs_are_never_read_match_analysing_from_scratch(seed):
    """An editor that reads only the diagnostics and tables of most versions: the
    equations stay reused where they were first parsed, moved by more and more
    (front/relocation.py), and every span read from them is still where the text
    has it; the programs of a few versions are read (made, then adopted)."""
    rng = random.Random(100 + seed)
    text = PROGRAM + "".join(f"Z{k}[p,dv] = Attn[p,dv] + {k}\n" for k in range(30))
    analyzer = Analyzer()
    for step in range(30):
        at = rng.randrange(len(text) // 3)  # near the top: what follows moves
        if rng.random() < 0.6:
            text = text[:at] + rng.choice(_PIECES + ["# note\n", "Q[p,dv] = Attn[p,dv]\n"]) \
                + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 6):]
        got = analyzer.analyze(text, None, EXAMPLES)
        read_program = step % 7 == 6
        same(got, analyze(text, None, EXAMPLES), program=read_program)
        if not read_program:  # made only if nothing moved
            assert ("program" in vars(got)) == ("_relocation" not in vars(got))


def test_an_edit_at_the_top_moves_no_equation_until_the_program_is_read():
    text = PROGRAM + "".join(f"Z{k}[p,dv] = Attn[p,dv] + {k}\n" for k in range(30))
    analyzer = Analyzer()
    first = analyzer.analyze(text, None, EXAMPLES)
    equations = [s for s in first.program.statements if isinstance(s, ir.Equation)]
    moved = analyzer.analyze("# a note\n" + text, None, EXAMPLES)
    # the checks read the equations where they were: the same objects
    kept = vars(moved)["_relocation"].statements
    assert sum(any(s is e for e in equations) for s in kept) == len(equations)
    assert "program" not in vars(moved)
    assert moved.diagnostics == analyze("# a note\n" + text, None, EXAMPLES).diagnostics
    # read: made once (the same object to every reader), spans where the text has them
    made = moved.program
    assert made is moved.program and made == analyze("# a note\n" + text).program
    assert made.statements[-1].span.start == len("# a note\n" + text) - len("Z29[p,dv] = "
                                                                             "Attn[p,dv] + 29\n")
    # the next edit (at the end) moves none of them further: its program takes the
    # same copies again (the editor's caches keyed by statement keep working)
    after = analyzer.analyze("# a note\n" + text + "Y = 1\n", None, EXAMPLES)
    assert analyzer.reused >= len(equations)
    assert all(a is b for a, b in zip(after.program.statements, made.statements))
    same(after, analyze("# a note\n" + text + "Y = 1\n", None, EXAMPLES))
    # an edit above them moves them again: copied anew
    again = analyzer.analyze("# two\n# a note\n" + text + "Y = 1\n", None, EXAMPLES)
    assert not any(a is b for a, b in zip(again.program.statements[1:], made.statements[1:]))
    same(again, analyze("# two\n# a note\n" + text + "Y = 1\n", None, EXAMPLES))


def test_recovery_from_brackets_open_over_many_lines_matches_analysing_from_scratch():
    """Unclosed brackets (read on to the end of the file, then recovered from),
    statements over many lines, `;`, and more syntax errors than are reported."""
    lines = [f"A{k}[i] = B[i] + {k}" for k in range(40)]
    body = "\n".join(lines) + "\nB[i] = const([1, 2])\n"
    steps = [body]
    steps.append(body.replace("A3[i] = B[i]", "A3[i] = f(B[i]"))     # open to the end
    steps.append(steps[-1].replace("A20[i] = B[i]", "A20[i] = (B[i]"))  # and another
    steps.append(body.replace("A5[i] = B[i] + 5", "A5[i] = sig(\n" + "  B[i] +\n" * 20 + "5)"))
    steps.append(body.replace("A7[i] = B[i]", "A7[i] = B[i]; C[j] = B[j];; D = (1;"))
    steps.append("@\n" * 250 + body)                                  # too many errors
    steps.append(body)
    # a bracket opened at the top: left open over lines that cannot close it, then
    # closed (or ended by `;`, or met by a wrong closer) far below, or never
    steps.append("Top[i] = f(\n" + body)
    steps.append("Top[i] = f(\n" + body + "  B[i])\n")
    steps.append("Top[i] = f(\n" + body + "E = 1; F = 2\n")
    steps.append("Top[i] = f(\n" + body + "G[i] = B[i]]\n")
    steps.append("Top[i] = f(\n" + body.replace("A30[i]", "  A30[i]"))
    steps.append("Top[i] = [f(\n" + body)
    steps.append(body)
    check_sequence(steps)


def test_shifted_moves_the_spans_inside_named_tuples():
    from typing import NamedTuple

    from fuse_lang.check.symbols import IndexRole, Occurrence, Scope
    from fuse_lang.front.span import Span, shifted

    class Empty(NamedTuple):
        pass

    scope = Scope(0, None, "rhs", "sum", Span(4, 9))
    occ = Occurrence("j", Span(6, 7), 0, "A", 1, "var", False)
    role = IndexRole("j", 2, (occ,), "projected", "sum", scope, ("A",), False)
    moved = shifted(role, 10)
    assert moved.scope.span == Span(14, 19) and moved.occurrences[0].span == Span(16, 17)
    assert moved._replace(scope=scope, occurrences=(occ,)) == role  # the rest is unchanged
    assert shifted(Empty(), 3) == Empty()


def _edit_matrix() -> dict:
    """benchmarks/edit_speed.py's edits (top-of-file inserts and deletes, unclosed
    brackets, a deleted or renamed source, middle and end edits)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "edit_speed.py"
    spec = importlib.util.spec_from_file_location("edit_speed", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def test_the_benchmarks_edits_match_analysing_from_scratch(tmp_path):
    """Each edit of the edit-speed matrix, after the intact program and then back to
    it (one Analyzer throughout): edits that move or renumber every later statement."""
    bench = _edit_matrix()
    intact = bench.generate(120, tmp_path / "data")
    steps = [intact]
    for make in bench.EDITS.values():
        steps += [make(intact), intact]
    check_sequence(steps, tmp_path)
    # and edits one after the other, each on the last
    steps = [intact]
    for make in bench.EDITS.values():
        steps.append(make(steps[-1]))
    check_sequence(steps, tmp_path)


def test_renumbered_and_repeated_statements_match_analysing_from_scratch():
    """Statements reused under a new number (one deleted or added above them), and a
    statement repeated (the same text twice: each keeps domains of its own)."""
    lines = PROGRAM.splitlines(keepends=True)
    query = "Query[p,dk] = WQ[dk,d] X[p,d]\n"
    steps = [PROGRAM,
             "".join(lines[2:]),                       # the first statement deleted
             "Dk2 = const(3)\n" + "".join(lines[2:]),  # one added at the top, as long
             PROGRAM.replace(query, query * 3),         # repeated
             PROGRAM.replace(query, "axis d = 9\n" + query * 2),  # moved, renumbered, conflict
             "# x\n" + PROGRAM.replace(query, query * 2),
             PROGRAM]
    results = check_sequence(steps)
    # the roles' statement numbers follow the statements
    for result in results:
        for k, roles in result.roles.items():
            assert all(role.statement == k for role in roles)


def test_a_moved_statements_roles_and_scopes_are_moved_when_read():
    """After a line inserted at the top, the unchanged statements' index roles and
    scopes are moved when read (the editor's requests read a few): the moved ones,
    the same object at every read, and the whole table equal to a fresh one."""
    analyzer = Analyzer()
    analyzer.analyze(PROGRAM, None, EXAMPLES)
    moved = analyzer.analyze("# top\n" + PROGRAM, None, EXAMPLES)
    fresh = analyze("# top\n" + PROGRAM, None, EXAMPLES)
    k = next(k for k, roles in fresh.roles.items() if roles)
    assert moved.roles[k] is moved.roles[k]
    assert moved.roles[k] == fresh.roles[k] and moved.scopes[k] == fresh.scopes[k]
    assert dict(moved.roles) == dict(fresh.roles) and moved.roles == fresh.roles


def test_an_edit_at_the_top_of_a_large_file_reuses_every_statement_below(tmp_path):
    """Issue 19 item 8: an edit at the top moves every statement below it; each is
    reused (moved along), none parsed or checked again, and the result still equals
    a from-scratch analysis.  A count, not a time."""
    bench = _edit_matrix()
    text = bench.generate(1_000, tmp_path / "data")
    analyzer = Analyzer()
    analyzer.analyze(text, None, tmp_path)
    checked = len(analyzer.analyze(text, None, tmp_path).roles)  # statements with checks
    assert analyzer.reused == checked > 700
    for name in ("comment line inserted at top", "character typed at top",
                 "unclosed ( inserted at top", "first line deleted", "source X renamed"):
        edited = bench.EDITS[name](text)
        analyzer.analyze(text, None, tmp_path)
        result = analyzer.analyze(edited, None, tmp_path)
        same(result, analyze(edited, None, tmp_path))
        # every statement but the edited one (and those whose bare names changed
        # meaning: none here) is reused
        assert analyzer.reused >= checked - 1


# ------------------------------------------------------------ splicing the parse

_LONG_PIECES = _PIECES + ["(\n", "[\n", "\\\n", "\r", "Q[p,dv] = Attn[p,dv]\n", "$", ")\n",
                          "Z3[p,dv] = Attn[p,dv] + 3\n", "Y[i] = (A[i]\n"]


def _long_program(blocks: int) -> str:
    """PROGRAM's statements, renamed per block, with statements over several lines."""
    body = "".join(PROGRAM.replace("Attn", f"Attn{b}").replace("Comp", f"Comp{b}")
                   + f"Long{b}[p,dv] = (Attn{b}[p,dv] +\n    Attn{b}[p,dv])\n"
                   for b in range(blocks))
    return body + "".join(f"Z{k}[p,dv] = Attn0[p,dv] + {k}\n" for k in range(blocks * 4))


@pytest.mark.parametrize("seed", range(5))
def test_a_long_file_parsed_after_each_edit_matches_parsing_it_whole(seed):
    """The editor's parse after an edit finds again only the statements near it
    (syntax.splice) and takes the rest from the last parse: whatever the edit
    (brackets left open over the file, `;`, backslashes, repeated lines, many
    errors), the result is the whole parse's: statements and their spans,
    diagnostics, statement spans."""
    rng = random.Random(seed)
    text = _long_program(12)  # ~400 lines: several of the finder's marks
    cache = ParseCache()
    for _ in range(40):
        assert parse(text, cache) == parse(text)
        at = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.5:
            text = text[:at] + rng.choice(_LONG_PIECES) + text[at:]
        elif roll < 0.8:
            text = text[:at] + text[at + rng.randint(1, 40):]
        elif roll < 0.9:  # a line repeated elsewhere
            lines = text.split("\n")
            lines.insert(rng.randrange(len(lines)), rng.choice(lines))
            text = "\n".join(lines)
        else:  # many errors at once (past the limit, sometimes)
            lines = text.split("\n")
            for _ in range(rng.choice([20, 120, 230])):
                lines.insert(rng.randrange(len(lines)), rng.choice(["$", "Y[i = (", "]]"]))
            text = "\n".join(lines)
    assert parse(text, cache) == parse(text)


def test_a_parse_after_an_edit_finds_again_only_the_statements_near_it(monkeypatch):
    """Issue 19 item 8: after an edit of a long file only about MARK_EVERY lines on
    either side of it are split into statements again (a count, not a time)."""
    from fuse_lang.front import syntax
    from fuse_lang.front.statements import MARK_EVERY

    found: list[int] = []
    real = syntax.find_statements

    def counting(*args, **kwargs):
        for item in real(*args, **kwargs):
            found.append(item[0])
            yield item

    monkeypatch.setattr(syntax, "find_statements", counting)
    text = _long_program(60)  # ~2,000 lines
    cache = ParseCache()
    parse(text, cache)
    assert len(found) > 1000
    lines = text.split("\n")
    for at, new in ((len(lines) // 2, "# a note"), (3, "Z = ("), (len(lines) - 5, "W[i] = 1")):
        edited = "\n".join(lines[:at] + [new] + lines[at:])
        for version in (edited, text):  # the edit, and back
            whole = parse(version)
            found.clear()
            assert parse(version, cache) == whole
            assert len(found) <= 3 * MARK_EVERY, (at, new)


# ------------------------------------------------------------ bare names

_BARE = """\
axis i = 4
param W[i]
S = const(2)
i = const(3)
Ann = const(1)
Person(Ann)
Person(Bob)
Y[i] = W[i] * S
Z[i] = W[i] + i
E[i] = even(i) W[i]
Other(x) = Person(x) (x != Ann)
Q[i] = W[i] + S * S
"""


def test_a_bare_names_meaning_changed_matches_analysing_from_scratch():
    """Whether a bare name is a tensor is part of what a statement's checks are
    kept by when it matters (an index's value, a call's argument: `x != Ann`,
    `even(i)`), and not when it does not (`S` in `Y[i] = W[i] * S`)."""
    steps = [_BARE]
    for definition in ("S = const(2)\n", "i = const(3)\n", "Ann = const(1)\n"):
        steps.append(steps[-1].replace(definition, ""))  # deleted: undefined, an index...
    for definition in ("Ann = const(1)\n", "i = const(3)\n", "S = const(2)\n"):
        steps.append(definition + steps[-1])  # and defined again
    check_sequence(steps)


def test_deleting_a_scalar_read_bare_everywhere_reuses_every_statement():
    """Issue 19 item 8: `S` deleted from a file where every statement multiplies by
    it: each statement is reused (a count, not a time), each reports `S` undefined."""
    text = "axis i = 4\nparam W[i]\nS = const(2)\n" + "".join(
        f"Y{k}[i] = W[i] * S\n" for k in range(300))
    analyzer = Analyzer()
    analyzer.analyze(text, None, EXAMPLES)
    edited = text.replace("S = const(2)\n", "")
    result = analyzer.analyze(edited, None, EXAMPLES)
    same(result, analyze(edited, None, EXAMPLES))
    assert analyzer.reused == 301  # every statement left: the 300 and `param W`
    assert sum(d.code == "undefined-tensor" for d in result.diagnostics) == 300


@pytest.mark.parametrize("seed", range(2))
def test_random_edits_of_a_long_file_match_analysing_from_scratch(seed):
    """The spliced parse (its statements reused where they were, moved along) and
    the checks together, over random edits anywhere in a file long enough for
    the parse to find again only the statements near each edit: every part of
    each analysis equals a fresh one (its program read now and then)."""
    rng = random.Random(200 + seed)
    text = _long_program(8)
    analyzer = Analyzer()
    extra = ["S = const(2)\n", "Y[i] = W[i] * S\n", "Attn0 = const(1)\n"]
    for step in range(30):
        at = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.55:
            text = text[:at] + rng.choice(_LONG_PIECES + extra) + text[at:]
        elif roll < 0.9:
            text = text[:at] + text[at + rng.randint(1, 30):]
        else:
            lines = text.split("\n")
            lines.insert(rng.randrange(len(lines)), rng.choice(lines))
            text = "\n".join(lines)
        got = analyzer.analyze(text, None, EXAMPLES)
        same(got, analyze(text, None, EXAMPLES), program=step % 5 == 4)


def test_lone_indices_and_joined_conflicts_follow_edits():
    # issue 34's checks remembered per statement (lone-index) and made per program
    # (an extent conflict at its join) equal a fresh analysis after each edit
    base = ("W = const([[1,2],[3,4],[5,6]])\nX = const([[1,2],[3,4]])\nB = const([1,2,3])\n"
            "H[b,f] = relu(W[f,d] X[b,d] + B[f])\nexport H\n")
    steps = [base]

    def then(old: str, new: str) -> None:
        steps.append(edit(steps[-1], old, new))

    then("+ B[f]", "+ B[g]")                        # a lone index
    then("W = const", "# weights\nW = const")       # everything moves down a line
    then("W[f,d] X", "W[d,f] X")                    # and a transposed weight
    then("W[d,f] X", "W[f,d] X")
    then("+ B[g]", "+ B[f]")
    results = check_sequence(steps)
    codes = [sorted(d.code for d in r.diagnostics) for r in results]
    assert codes[1] == codes[2] == ["lone-index"]
    assert "extent-conflict" in codes[3] and codes[-1] == []


def test_constants_diagnostics_follow_statements_that_moved():
    # check.constants copies only the statements that read a constant to where they
    # moved (copying every moved statement cost a quarter of a re-check after an edit
    # at the top of 10,000 lines): its diagnostics still sit where the text has them
    base = ("Parent(Alice, Bob)\nParent(Bob, Carol)\nAncestor(x,y) = Parent(x,y)\n"
            "Ancestor(x,z) = Ancestor(x,y) Parent(y,z)\nKids(x) = Parent(Alise, x)\n"
            "Ancestor(Bobb, x)?\nexport Kids\n")
    steps = [base]

    def then(old: str, new: str) -> None:
        steps.append(edit(steps[-1], old, new))

    then("Parent(Alice, Bob)", "# a note\nParent(Alice, Bob)")  # everything moves down
    then("# a note\n", "")                                      # and back up
    then("Ancestor(Bobb, x)?", "Ancestor(Carl, x)?")
    then("Parent(Alice, Bob)", "Parent(Bob, Bob)\n\nParent(Alice, Bob)")
    results = check_sequence(steps)
    for result, text in zip(results, steps):
        found = {(d.code, text[d.span.start:d.span.end]) for d in result.diagnostics}
        assert ("unknown-constant", "Alise") in found, found
        assert ("unknown-constant", "Carl" if "Carl" in text else "Bobb") in found, found
