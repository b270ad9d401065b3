"""Why's second conformance audit (docs/why.md): derivations through negation,
comparisons and arithmetic over negative integers and floats, relations read from
files, the 200-level cut, tuples that do not hold, max=/min=/avg= and long sums at
--top/--limit's edges, targets that name nothing, `--format json`'s shape, and a
number's terms against `fuse run`'s value; the forms tests/test_why.py,
tests/test_why_audit.py and tests/test_why_property.py leave out."""
from __future__ import annotations

import json
import math
import warnings

import pytest
from test_why import fuse  # (the CLI as a process, no traceback allowed)

import fuse_lang
from fuse_lang.ide.why_text import parse_target, why_text

PEOPLE = """\
Person(Ann, 25)
Person(Bob, 30)
Person(Cy, -7)
Person("New York", 40)
Score(Ann, 1.5)
Score(Bob, -2.25)
Banned(Bob, Spam)
Edge(A, B)
Edge(B, C)
Node(A)
Node(B)
Node(C)
Node(D)
Reach(x, y) = Edge(x, y)
Reach(x, z) = Reach(x, y) Edge(y, z)
Unreached(x) = Node(x) not Reach(A, x)
Allowed(x) = Person(x, a) (a > 18) not Banned(x, _)
Young(x, b) = Person(x, a) (a < 0) (b == a * 2)
Far(x, y) = Person(x, a) Person(y, b) (a - b > 40)
Good(x) = Score(x, s) (s > 1.0)
Big(x, s) = Score(x, s) (s != -2.25)
export Reach, Unreached, Allowed, Young, Far, Good, Big
"""

NUMBERS = """\
X[i,j] = const([[1.5, -2, 3], [0, 0, 0], [-1, -5, -2]])
B[j] = const([2, -1, 0.5])
Y[i] = X[i,j] B[j]
M[i] max= X[i,j] B[j]
N[i] min= X[i,j] B[j]
V[i] avg= X[i,j] B[j]
Z[i] = sig(X[i,j] B[j] + B[i])
T[i] = X[i,j] B[j] + 1
T[i] = X[i,j] X[i,j]
export Y, M, N, V, Z, T
"""


def run(text: str, **kwargs):
    return fuse_lang.compile(text, **kwargs).execute(write_sinks=False)


@pytest.fixture(scope="module")
def people():
    return run(PEOPLE)


@pytest.fixture(scope="module")
def numbers():
    return run(NUMBERS)


def test_a_tuple_that_holds_because_something_is_absent_shows_the_absence_checked(people):
    tree = people.why("Unreached", ("D",))
    assert (tree.height, tree.place.line, dict(tree.bindings)) == (1, 16, {"x": "D"})
    assert [c.text for c in tree.conditions] == ["no tuple of Reach(A, D)"]
    assert [(c.text, c.kind, c.place.line) for c in tree.children] == [("Node(D)", "fact", 13)]
    # (A reaches nothing of its own: its absence is checked the same way)
    assert [c.text for c in people.why("Unreached", ("A",)).conditions] == [
        "no tuple of Reach(A, A)"]
    # the tuple whose absence was needed is there: the `not` is the goal that stops it
    blocked, = people.why("Unreached", ("C",)).rules
    assert (blocked.place.line, blocked.goal, blocked.reason) == (
        16, "not Reach(A, C)", "a tuple matches `Reach(A, C)`")
    assert why_text(people.why("Allowed", ("Bob",))).splitlines() == [
        "Allowed(Bob) does not hold.",
        "  line 17: Allowed(x) = Person(x, a) (a > 18) not Banned(x, _)",
        "    stops at not Banned(Bob, _): a tuple matches `Banned(Bob, _)`"]


def test_comparisons_and_arithmetic_over_negative_integers_and_floats(people):
    young = people.why("Young", ("Cy", -14))
    assert dict(young.bindings) == {"x": "Cy", "b": -14, "a": -7}
    assert [c.text for c in young.conditions] == ["-7 < 0", "-14 == -7 * 2"]
    assert people.why("Young", ("Cy", -13)).rules[0].reason == \
        "false for every binding: `-13 == -7 * 2`"
    far = people.why("Far", ("New York", "Cy"))
    assert [c.text for c in far.conditions] == ["40 - -7 > 40"]
    assert [c.text for c in far.children] == ['Person("New York", 40)', "Person(Cy, -7)"]
    assert people.why("Far", ("Cy", "New York")).rules[0].reason == \
        "false for every binding: `-7 - 40 > 40`"
    assert [c.text for c in people.why("Good", ("Ann",)).conditions] == ["1.5 > 1.0"]
    assert people.why("Good", ("Bob",)).rules[0].reason == \
        "false for every binding: `-2.25 > 1.0`"
    assert people.why("Big", ("Bob", -2.25)).rules[0].reason == \
        "false for every binding: `-2.25 != -2.25`"
    allowed = people.why("Allowed", ("New York",))
    assert allowed.text == 'Allowed("New York")' and dict(allowed.bindings)["a"] == 40
    assert [c.text for c in allowed.conditions] == ["40 > 18", 'no tuple of Banned("New York", _)']


def test_target_values_as_written_quoted_negative_and_float(people):
    assert parse_target('Person("New York", 40)') == ("Person", ("New York", 40))
    assert parse_target("Score(Bob,-2.250)") == ("Score", ("Bob", -2.25))
    assert parse_target("Score(Ann, 15e-1)") == ("Score", ("Ann", 1.5))
    assert people.why(*parse_target("Score(Ann, 15e-1)")).text == "Score(Ann, 1.5)"
    assert people.why("Person", ("Ann", 25.0)).kind == "fact"  # (25.0 is the integer 25)
    # one space more is another string, a float not in the column another value: answers
    spaced = people.why("Person", ("New  York", 40))
    assert spaced.rules == () and spaced.note == \
        "\"New  York\" is no value of `Person`'s column 1: no tuple of `Person` holds it"
    assert people.why("Score", ("Ann", 1.6)).note == \
        "1.6 is no value of `Score`'s column 2: no tuple of `Score` holds it"
    assert people.why("Person", ("Ann", "25")).text == 'Person(Ann, "25")'


def test_relations_read_from_a_file_with_quoted_negative_and_float_values(tmp_path):
    (tmp_path / "edges.csv").write_text('A,B\nB,"C D"\n"C D",-3\n-3,2.5\n')
    program = tmp_path / "p.fuse"
    program.write_text('Edge(x, y) = "edges.csv"\nPath(x, y) = Edge(x, y)\n'
                       "Path(x, z) = Path(x, y) Edge(y, z)\nexport Path\n")
    done = fuse("why", str(program), "Path(B, -3)")
    assert done.returncode == 0 and done.stdout.splitlines() == [
        'Path(B, -3)   by line 3: Path(x, z) = Path(x, y) Edge(y, z)   [x = B, z = -3, y = "C D"]',
        '  ├─ Path(B, "C D")   by line 2: Path(x, y) = Edge(x, y)   [x = B, y = "C D"]',
        '  │  └─ Edge(B, "C D")   row 2 of edges.csv',
        '  └─ Edge("C D", -3)   row 3 of edges.csv']
    result = fuse_lang.compile(program.read_text(), base_dir=tmp_path).execute(write_sinks=False)
    tree = result.why("Path", ("A", 2.5))
    assert tree.height == 4 and tree.values == ("A", 2.5)
    leaves = [n for n in _nodes(tree) if not n.children]
    assert [(n.kind, n.place.line, n.place.text) for n in leaves] == [
        ("file", 1, "A,B"), ("file", 2, 'B,"C D"'), ("file", 3, '"C D",-3'),
        ("file", 4, "-3,2.5")]
    assert result.why("Path", ("A", "2.5")).note.startswith('"2.5" is no value of `Path`')


def _nodes(tree):
    yield tree
    for child in tree.children:
        yield from _nodes(child)


def test_a_derivation_cut_at_its_200th_level_says_so_and_a_limit_cut_does_not():
    chain = "\n".join(f"Edge({i}, {i + 1})" for i in range(210))
    result = run(chain + "\nPath(x, y) = Edge(x, y)\nPath(x, z) = Path(x, y) Edge(y, z)\n"
                 "export Path\n")
    deep = why_text(result.why("Path", (0, 210), limit=10 ** 9)).splitlines()
    cut = [line for line in deep if "more" in line]
    assert len(cut) == 1 and cut[0].endswith(
        "└─ ... 21 more (below the 200th level: a derivation shows 200 levels at most)")
    assert deep.index(cut[0]) == 200  # (the 200th level's node, line 200, is cut below)
    small = why_text(result.why("Path", (0, 210), limit=2)).splitlines()
    assert small[-1] == "  └─ ... 1 more" and "level" not in "\n".join(small)
    one = result.why("Path", (0, 3), limit=1)
    assert one.children == () and one.more == 5


def test_max_min_and_avg_show_the_term_that_is_their_value(numbers):
    m = numbers.why("M", (0,), top=1)
    assert m.value == 3 and m.parts[0].op == "max" and [t.value for t in m.parts[0].terms] == [3]
    assert dict(m.parts[0].terms[0].bindings) == {"j": 0}
    n = numbers.why("N", (2,), top=3).parts[0]
    assert (n.op, n.total, [t.value for t in n.terms]) == ("min", -2, [-2, -1, 5])
    v = numbers.why("V", (0,)).parts[0]
    assert v.op == "mean" and v.count == 3
    assert math.isclose(sum(t.value for t in v.terms) / v.count, v.total)
    assert math.isclose(v.total, numbers.why("V", (0,)).value, rel_tol=1e-6)
    # a 0 times a negative number is shown as the 0 it is, not -0
    text = why_text(numbers.why("M", (1,)))
    assert "j = 1: X[1, 1] 0 × B[1] -1 = 0\n" in text and "-0" not in text


def test_the_terms_add_up_to_the_number_fuse_run_prints(numbers):
    import numpy as np

    for name in "YMNVZT":
        for i in range(3):
            answer = numbers.why(name, (i,), top=10 ** 9)
            assert math.isclose(answer.value, float(np.asarray(numbers.outputs[name])[i]),
                                rel_tol=1e-6, abs_tol=1e-9)
            each = []
            for part in answer.parts:
                assert part.share == 1.0 and len(part.terms) == part.count
                values = [t.value for t in part.terms]
                reduce = {"sum": math.fsum, "max": max, "min": min,
                          "mean": lambda v: math.fsum(v) / len(v)}[part.op]
                assert math.isclose(reduce(values) if values else 0.0, part.total,
                                    rel_tol=1e-9, abs_tol=1e-12)
                for term in part.terms:
                    assert math.isclose(math.prod(f.value for f in term.factors), term.value,
                                        rel_tol=1e-9, abs_tol=1e-12)
                each.append(1 / (1 + math.exp(-part.total)) if part.nonlinearity == "sig"
                            else part.total)
            assert math.isclose(sum(each), answer.value, rel_tol=1e-6, abs_tol=1e-9)
    t = numbers.why("T", (0,))
    assert [p.place.line for p in t.parts] == [8, 9] and [p.total for p in t.parts] == [7.5, 15.25]


def test_a_sum_of_many_terms_at_top_and_limit_edges(tmp_path):
    import numpy as np

    rng = np.random.default_rng(7)
    np.save(tmp_path / "a.npy", rng.normal(size=(4, 500)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.normal(size=500).astype(np.float32))
    program = tmp_path / "p.fuse"
    program.write_text('A[i,j] = "a.npy"\nB[j] = "b.npy"\nY[i] = A[i,j] B[j]\nexport Y\n')
    result = fuse_lang.compile(program.read_text(), base_dir=tmp_path).execute(write_sinks=False)
    every = result.why("Y", (2,), top=10 ** 30).parts[0]
    assert every.count == 500 == len(every.terms) and every.share == 1.0
    assert math.isclose(math.fsum(t.value for t in every.terms), every.total, rel_tol=1e-9)
    one = result.why("Y", (2,), top=1).parts[0]
    biggest = max(abs(t.value) for t in every.terms)
    assert [abs(t.value) for t in one.terms] == [biggest]
    assert math.isclose(one.share, biggest / math.fsum(abs(t.value) for t in every.terms))
    for option in [{"top": 0}, {"top": -1}, {"limit": 0}, {"top": True}, {"limit": 2.0}]:
        with pytest.raises(fuse_lang.FuseError, match="is a whole number of 1 or more"):
            result.why("Y", (2,), **option)
    for flag, value in [("--top", "0"), ("--limit", "-1")]:
        done = fuse("why", str(program), "Y[2]", flag, value)
        assert done.returncode == 2 and done.stdout == ""
        assert f"argument {flag}: expected 1 or more, not {value}" in done.stderr
    done = fuse("why", str(program), "Y[2]", "--top", "99999999999999999999", "--format", "json")
    assert done.returncode == 0 and len(json.loads(done.stdout)["parts"][0]["terms"]) == 500


def test_targets_that_name_no_element_are_said_in_words(numbers, people):
    for name, index, words in [
            ("Nope", (1,), "`Nope` is not a tensor of this program (those are: B, M, N, T, V, X, "
                           "Y, Z)"),
            ("Y", (3,), "3 is outside `Y`'s axis 0 (positions 0 to 2)"),
            ("Y", (-1,), "-1 is outside `Y`'s axis 0 (positions 0 to 2)"),
            ("Y", (1.0,), "1.0 is no position of `Y`'s axis 0 (positions 0 to 2)"),
            ("Y", ("A",), "A is no position of `Y`'s axis 0 (positions 0 to 2)"),
            ("Y", (0, 0), "`Y` has 1 axis, but 2 values were given"),
            ("Y", (), "`Y` has 1 axis, but 0 values were given")]:
        with pytest.raises(fuse_lang.FuseError) as raised:
            numbers.why(name, index)
        assert str(raised.value) == words
    with pytest.raises(fuse_lang.FuseError, match=r"^`Reach` has 2 axes, but 3 values were given$"):
        people.why("Reach", ("A", "B", "C"))
    # a value no column holds is an answer: the tuple does not hold
    assert people.why("Reach", ("A", "ZZ")).note == \
        "ZZ is no value of `Reach`'s column 2: no tuple of `Reach` holds it"


def test_cli_json_shapes_and_error_objects(tmp_path):
    program = tmp_path / "people.fuse"
    program.write_text(PEOPLE)
    tree = json.loads(fuse("why", str(program), "Unreached(D)", "--format", "json").stdout)
    assert list(tree) == ["type", "relation", "values", "text", "height", "kind", "place",
                          "bindings", "conditions", "children", "more"]
    assert tree["conditions"] == [{"type": "Condition", "kind": "not",
                                   "text": "no tuple of Reach(A, D)"}]
    assert tree["children"][0]["place"] == {"type": "Place", "file": str(program), "line": 13,
                                            "text": "Node(D)"}
    not_held = json.loads(fuse("why", str(program), "Allowed(Bob)", "--format", "json").stdout)
    assert not_held == {
        "type": "WhyNot", "relation": "Allowed", "values": ["Bob"], "text": "Allowed(Bob)",
        "rules": [{"type": "Blocked", "place": {
            "type": "Place", "file": str(program), "line": 17,
            "text": "Allowed(x) = Person(x, a) (a > 18) not Banned(x, _)"},
            "goal": "not Banned(Bob, _)", "reason": "a tuple matches `Banned(Bob, _)`"}],
        "note": ""}
    done = fuse("why", str(program), "Reach(A)", "--format", "json")
    assert done.returncode == 1 and json.loads(done.stdout) == {
        "error": f"fuse: {program}: why Reach: `Reach` has 2 axes, but 1 value was given",
        "diagnostics": []}


def test_cli_number_json_and_text_agree_with_fuse_run(tmp_path):
    program = tmp_path / "n.fuse"
    program.write_text(NUMBERS)
    ran = json.loads(fuse("run", str(program), "--format", "json").stdout)
    number = json.loads(fuse("why", str(program), "T[0]", "--format", "json").stdout)
    assert list(number) == ["type", "tensor", "index", "text", "value", "parts", "note"]
    part = number["parts"][0]
    assert list(part) == ["type", "place", "nonlinearity", "projected", "total", "terms",
                          "count", "share", "note", "op"]
    assert part["terms"][0] == {"type": "Term", "bindings": [["j", 0]], "factors": [
        {"type": "Factor", "text": "X[0, 0]", "value": 1.5, "tensor": "X", "index": [0, 0]},
        {"type": "Factor", "text": "B[0]", "value": 2.0, "tensor": "B", "index": [0]}],
        "value": 3.0}
    shown = ran["outputs"]["T"]
    first = shown["values"][0] if isinstance(shown, dict) else shown[0]
    assert math.isclose(number["value"], first) and number["value"] == sum(
        p["total"] for p in number["parts"]) == 22.75


def test_a_tensor_the_whole_run_leaves_out_is_explained_from_its_own_cone(tmp_path):
    # `H` (read by nothing exported) was "not computed by this run"; past an error
    # elsewhere it was "not a tensor of this program (those are: P, Q)"
    program = tmp_path / "p.fuse"
    for text in ["P(1)\nQ(x) = P(x)\nH(x) = P(x)\nexport Q\n",
                 "P(1)\nQ(x) = P(x)\nH(x) = P(x)\nBad(x) = Nope(x)\nexport Q\n"]:
        program.write_text(text)
        done = fuse("why", str(program), "H(1)")
        assert done.returncode == 0 and done.stdout.splitlines() == [
            "H(1)   by line 3: H(x) = P(x)   [x = 1]", "  └─ P(1)   fact, line 1"]
    # an input given to a source outside that cone is not in the way
    import numpy as np

    np.save(tmp_path / "s.npy", np.array([1.0, 2.0], dtype=np.float32))
    np.save(tmp_path / "given.npy", np.array([3.0, 5.0], dtype=np.float32))
    program.write_text('S[i] = "s.npy"\nY[i] = S[i] S[i]\nP(1)\nH(x) = P(x)\n'
                       "G[i] = S[i] P(1)\nexport Y\n")
    for target, first in [("H(1)", "H(1)   by line 4: H(x) = P(x)   [x = 1]"),
                          ("G[1]", "G[1] = 5")]:
        done = fuse("why", str(program), target, "--input", f"S={tmp_path / 'given.npy'}")
        assert done.returncode == 0 and done.stdout.splitlines()[0] == first, done.stderr
    # a tensor that reads the error: said so, not "no tensor of this program"
    program.write_text("P(1)\nQ(x) = P(x)\nBad(x) = Nope(x)\nR(x) = Bad(x)\nexport Q\n")
    done = fuse("why", str(program), "R(1)")
    assert done.returncode == 1 and done.stderr.strip() == (
        f"fuse: {program}: why R: `R` is not computed by this run: what it reads has errors "
        f"(line 3, column 10: `Nope` is not defined [undefined-tensor])")
    done = fuse("why", str(program), "Bad(1)")
    assert done.returncode == 1 and done.stderr.strip() == (
        f"fuse: {program}: why Bad: `Bad` is not computed by this run: `Nope` is not defined "
        f"[undefined-tensor] (the run left out what has errors, and what reads it)")
    assert "`Zz` is not a tensor of this program (those are: P, Q; the run left out Bad for " \
        "errors, and what reads it)" in fuse("why", str(program), "Zz(1)").stderr


def test_a_number_of_nans_and_infinities_is_explained_without_numpys_warnings():
    with pytest.warns(RuntimeWarning, match=r"line 2: `L\[i\] = log\(X\[i\]\) X\[i\]`"):
        result = run("X[i] = const([0, 1])\nL[i] = log(X[i]) X[i]\nexport L\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answer = result.why("L", (0,))
    assert [str(w.message) for w in caught] == []
    assert math.isnan(answer.value) and [f.value for f in answer.parts[0].terms[0].factors][1] == 0
    assert why_text(answer).splitlines()[-1] == "      log(X[i]) -inf × X[0] 0 = nan"


def test_a_bf16_run_says_its_number_is_explained_in_fp32():
    pytest.importorskip("torch")
    text = "X[i,j] = const([[1, 2, 3], [4, 5, 6]])\nB[j] = const([0.1, 0.2, 0.3])\n" \
        "V[i] avg= X[i,j] B[j]\nexport V\n"
    result = run(text, backend="torch", precision="bf16")
    answer = result.why("V", (1,))
    assert float(result.outputs["V"][1]) != answer.value  # (bf16 keeps 8 bits)
    assert math.isclose(answer.value, (0.4 + 1.0 + 1.8) / 3, rel_tol=1e-6)
    assert answer.note == ("the run computed in bf16; these values are the reference engine's, "
                           "in fp32 (docs/why.md), so the run's value can differ in the digits "
                           "bf16 drops")
    assert run(text, backend="torch").why("V", (1,)).note == ""
