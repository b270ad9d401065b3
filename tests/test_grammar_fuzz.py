"""Programs generated from the grammar (benchmarks/grammar_fuzz.py; issue 28, "no
traceback from any input"): a few hundred seeded programs, syntactically valid and
semantically odd, through `fuse_lang.analyze`, `plan_program`, the editor's
functions, `fuse check --format json`, `fuse explain` and `fuse run` (NumPy):
none raises, none says "internal error", none goes without an answer.  Then the
faults the generator found, each through a public entry point."""
from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fuse_lang
from fuse_lang.cli.main import main as fuse_main

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "grammar_fuzz.py"
TIMEOUT = 600  # a bound for a hung process, not a speed target (about 20 s here)


def test_generated_programs_raise_nothing():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--start", "0", "--count", "300",
                           "--every", "7", "--cli-every", "5"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    summary = re.search(r"300 programs from seed 0: (.*); 0 distinct faults", proc.stdout)
    assert summary, proc.stdout[-2000:]
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (\w+)", summary.group(1)))
    assert counts.get("ran", 0) >= 40, counts  # the runs were reached, not only the checks
    assert counts.get("error", 0) >= 100, counts


def _errors(text: str, base_dir: Path | None = None) -> list[fuse_lang.Diagnostic]:
    analysis = fuse_lang.analyze(text, base_dir=base_dir)
    fuse_lang.plan_program(analysis)
    return [d for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]


@pytest.mark.parametrize("text", [
    "axis k = 1\nEdge(-7, 1)\nY[k] = Edge(k, 1)",             # was an IndexError in the run
    "axis k = 2\nEdge(Bob, 1)\nEdge(-7, 1)\nY[k] = Edge(k, 1)",  # was Y = [1, 1]: -7 wrapped
])
def test_a_negative_integer_of_a_fact_on_a_fixed_axis_is_no_position(text):
    """On an axis whose extent is fixed (`axis k = 2`) a fact's integers are
    positions from 0 (LANGUAGE.md §14): -7 is outside it, as 7 is (NumPy read -7
    as the axis' last position, or raised)."""
    errors = _errors(text)
    assert [d.code for d in errors] == ["extent-conflict"]
    assert text[errors[0].span.start:errors[0].span.end] == "-7"
    assert "position -7 is outside an axis of extent" in errors[0].message
    with pytest.raises(fuse_lang.FuseError, match="position -7 is outside"):
        fuse_lang.compile(text).run()


def test_without_a_fixed_extent_a_negative_integer_is_a_value():
    result = fuse_lang.compile("Edge(-7, 1)\nEdge(3, 1)\nY[k] = Edge(k, 1)").run()
    assert result["Y"].tolist() == [1.0, 1.0]  # the values -7 and 3, two positions


def test_a_negative_integer_of_a_relation_file_on_a_fixed_axis(tmp_path):
    """`fuse check` says it where the file is read (the run said the file had
    "changed since it was checked")."""
    (tmp_path / "r.csv").write_text("2,-7\n-1,2\n", encoding="utf-8")
    program = tmp_path / "p.fuse"
    program.write_text('axis x = 3\nR(x, y) = "r.csv"\nY[x] = R(x, 2)\n', encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = fuse_main(["check", "--format", "json", str(program)])
    assert code == 1
    found = json.loads(out.getvalue())
    diagnostics = found["diagnostics"] if isinstance(found, dict) else found
    messages = [d["message"] for d in diagnostics if d["code"] == "extent-conflict"]
    assert messages and "position -1 is outside an axis of extent 3" in messages[0]


@pytest.mark.parametrize("text", ["B[i] = even()", "B = odd() W"])
def test_the_plan_of_even_without_its_argument(text):
    """`plan_program` of a program with `argument-count` errors plans it anyway
    (it raised IndexError)."""
    assert "argument-count" in [d.code for d in _errors(text)]


@pytest.mark.parametrize("text", ['Y(j) = ("é" == d)', "Y(j) = (Alice == d)", "Y(j) = (d == 1)"])
def test_a_rule_of_comparisons_alone_binds_no_variable(text):
    """A rule whose body is a comparison with a variable nothing binds says so
    (`unsafe-comparison`), as the same rule with an atom does (the run raised
    KeyError, or said the index had no extent)."""
    errors = _errors(text)
    assert [d.code for d in errors] == ["unsafe-comparison"]
    assert text[errors[0].span.start:errors[0].span.end] == "d"
    with pytest.raises(fuse_lang.FuseError, match="unsafe-comparison"):
        fuse_lang.compile(text).run()


def test_a_rule_of_a_comparison_of_its_head_still_broadcasts():
    assert fuse_lang.compile("axis j = 3\nY(j) = (j == 1)").run()["Y"].tolist() == [0, 1, 0]


@pytest.mark.parametrize("op, expected", [("=", [3.0]), ("avg=", [1.5]), ("max=", [2.0])])
def test_pooling_by_a_divisor_larger_than_the_axis(op, expected):
    """`Y[i/2^63-1]` pools the whole axis into one block (⌈2/(2^63-1)⌉ = 1): the
    run padded the block with 2^63 zeros ("array is too big", NumPy's words)."""
    text = f"X[i] = const([1, 2])\nY[i/9223372036854775807] {op} X[i]"
    assert fuse_lang.compile(text).run()["Y"].tolist() == expected


@pytest.mark.parametrize("text", ["R(1:) = 1", "Y[1:] = 1"])
def test_the_unsized_axis_of_a_slice_is_not_named_by_its_inner_name(text):
    """A slice's axis of unknown extent: the message said "the index `:0`" and the
    fix inserted `axis :0 = 1`, which does not parse."""
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "unsized-index"]
    assert len(found) == 1
    assert ":0" not in found[0].message and "slice" in found[0].message
    assert found[0].fixes == ()


def test_no_swap_of_an_index_with_itself():
    """`B[k, k]` where `B[i, k]` has other extents: "Swap to `B[k,k]`" changed nothing."""
    text = "axis i = 1, k = 2\nB[i, k] = const([[1, 1]])\nY = B[k, k]"
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "extent-conflict"]
    assert found and all(not d.fixes for d in found)


@pytest.mark.parametrize("text", [
    "X[i] = const([1, 3, 2])\nS = topk(X[i], k=1)",              # the run said "axis `None`"
    "X[i] = const([1, 3, 2])\nS = max(topk(X[i], k=2), 0)",
    "X[i] = const([1, 3, 2])\nS = X[i] topk(X[i], k=2)",          # NumPy's "could not be broadcast"
    "R(A, B)\nC = topk(not R(_, y), k=5)",
])
def test_topk_under_a_left_hand_side_without_axes(text):
    """topk ranks along the last LHS axis (LANGUAGE.md §10): with none, and no
    `reduce` keeping the argument's axis, `fuse check` says so."""
    errors = _errors(text)
    assert [d.code for d in errors] == ["bad-argument"]
    assert "has none" in errors[0].message
    assert text[errors[0].span.start:].startswith("topk(")


def test_topk_kept_by_a_reduce_under_a_scalar_left_hand_side_still_runs():
    text = "X[i] = const([1, 3, 2])\nS = reduce(sum, i) topk(X[i], k=2)"
    assert fuse_lang.compile(text).run()["S"].tolist() == 5.0


@pytest.mark.parametrize("text, code", [
    ('X = ("a" == "a")', "not-a-number"),  # the run raised AssertionError
    ("X = (Ann == 1)", "not-a-number"),
    ('X = ("a" != 2) + 1', "not-a-number"),
    ('let X = ("" ^ "")', "invalid-statement"),  # the run: "cannot evaluate String here"
    ('{ let X = "a" + 1; Y = X }', "invalid-statement"),
    ('fn f(a) -> out { out = "a" + a }\nY = f(1)', "invalid-statement"),
])
def test_symbols_and_strings_where_no_variable_or_a_let_holds_them(text, code):
    """A comparison of symbol constants in a statement without variables, and a
    string inside a `let`, a block or a function's body: `fuse check` says it, as
    it does in a plain equation with variables."""
    assert code in [d.code for d in _errors(text)]
    with pytest.raises(fuse_lang.FuseError, match=code):
        fuse_lang.compile(text).run()


def test_a_comparison_of_numbers_without_variables_still_runs():
    assert fuse_lang.compile("X = (1 == 1) + (2 < 1)").run()["X"].tolist() == 1.0


@pytest.mark.parametrize("lhs", ['T["ann", k]', "T[Alice, k]", "T(Alice, k)"])
def test_a_symbol_on_the_left_of_a_source(tmp_path, lhs):
    """A source's left-hand side names the file's axes: the run of `T["ann", k] =
    "t.txt"` said "t.txt changed since it was checked" (it had not)."""
    (tmp_path / "t.txt").write_text("the cat sat\n", encoding="utf-8")
    text = f'{lhs} = "t.txt"'
    errors = _errors(text, tmp_path)
    assert [d.code for d in errors] == ["invalid-statement"]
    assert "index variables" in errors[0].message


@pytest.mark.parametrize("rhs, expected", [
    ("reduce(max, k) A[k] + (k != 1)", 3.0),  # NumPy's "cannot broadcast a non-scalar"
    ("(k != 1) + reduce(max, k) A[k]", 3.0),
    ("reduce(max, k) A[k] + k", 3.0),          # (as before: k outside the reduce, summed)
])
def test_an_index_of_a_reduce_compared_outside_it(rhs, expected):
    """Outside `reduce(max, k)`, `(k != 1)` is a Boolean factor of k, summed on the
    right-hand side as a bare `k` is; the comparison's operand projected k on its
    own, which the run did not do, and its axis was left over."""
    text = f"axis k = 2\nA[k] = const([1, 2])\nC = {rhs}"
    assert fuse_lang.compile(text).run()["C"].tolist() == expected


def test_a_guard_on_an_index_of_a_reduce():
    text = "axis j = 3, k = 2\nA[k] = const([1, 2])\nC[j] = reduce(max, k) A[k] - 1 when k != 1"
    assert fuse_lang.compile(text).run()["C"].tolist() == [1.0, 1.0, 1.0]  # ("left over")


@pytest.mark.parametrize("rhs", ["W[j] k + reduce(max, k) W[j]", "W[j] (k != j) + reduce(max, k) W[j]"])
def test_an_index_a_reduce_names_read_outside_it(rhs):
    """`k` named by a reduce whose body lacks it, read outside as a value or in a
    comparison: summed there (the run said "indices k are left over")."""
    text = f"axis j = 2, k = 2\nW[j] = const([1, 2])\nQ[j] = {rhs}"
    assert fuse_lang.compile(text).run()["Q"].tolist() == [2.0, 4.0]


def test_a_sum_of_indices_over_an_axis_of_extent_0():
    """Reads outside an axis are 0, an axis of extent 0 too (NumPy's take raised
    IndexError: "cannot do a non-empty take from an empty axes")."""
    text = "axis i = 0, j = 2, k = 2\nC[k, i] = 1\nY[j, k] = C[j, j+k] + 1"
    assert fuse_lang.compile(text).run()["Y"].tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("text", [
    "X[i] = const([1, 2])\nY[0:] = X[5:]",  # a slice starting past its axis
    "R(d, 1:) = [.5]\nA[j] = R[j, -3]",     # an axis whose only position is -3
])
def test_no_negative_extent(text):
    """A slice past its axis, or an axis whose positions are negative, had a
    negative extent, and the check raised IndexError; now diagnostics."""
    assert _errors(text)


def test_log_softmax_over_an_axis_of_extent_0():
    """As softmax and lnorm: nothing to normalise (NumPy's max has no identity)."""
    text = "axis x = 0, b = 2\nX[b, x] = 1\nY[b, x] = log_softmax(X[b, x])"
    assert fuse_lang.compile(text).run()["Y"].shape == (2, 0)
