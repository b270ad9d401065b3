"""Why (docs/why.md): derivations of tuples, why-nots and numbers' terms, through the
API (`RunResult.why`) and the command line (`fuse why`, `fuse run --why`)."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fuse_lang
import fuse_lang.ide.why_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

PEOPLE = """\
Person(Ann, 25)
Person(Bob, 30)
Person(Cy, 7)
Person("New York", 40)
Banned(Bob, Spam)
Parent(Ann, Bob)
Parent(Bob, Cy)
Parent(Cy, Dee)
Ancestor(x, y) = Parent(x, y)
Ancestor(x, z) = Ancestor(x, y) Parent(y, z)
Adult(x) = Person(x, a) (a > 18)
Allowed(x) = Adult(x) not Banned(x, _)
export Ancestor, Allowed
"""


def run(text: str, base_dir: Path = ROOT, path: str | None = None, **kwargs):
    return fuse_lang.compile(text, base_dir=base_dir, path=path, **kwargs).execute(
        write_sinks=False)


def fuse(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def nodes(tree):
    yield tree
    for child in tree.children:
        yield from nodes(child)


def test_recursion_gives_the_shortest_derivation_with_rules_bindings_and_facts():
    result = run(PEOPLE, path="people.fuse")
    tree = result.why("Ancestor", ("Ann", "Dee"))
    assert tree.text == "Ancestor(Ann, Dee)" and tree.height == 3 and tree.kind == "rule"
    assert tree.place.line == 10 and tree.place.text == "Ancestor(x, z) = Ancestor(x, y) Parent(y, z)"
    assert dict(tree.bindings) == {"x": "Ann", "y": "Cy", "z": "Dee"}
    assert [c.text for c in tree.children] == ["Ancestor(Ann, Cy)", "Parent(Cy, Dee)"]
    leaves = [n for n in nodes(tree) if not n.children]
    assert {(n.text, n.kind, n.place.line) for n in leaves} == {
        ("Parent(Ann, Bob)", "fact", 6), ("Parent(Bob, Cy)", "fact", 7),
        ("Parent(Cy, Dee)", "fact", 8)}
    assert all(n.height == 1 + max(c.height for c in n.children)
               for n in nodes(tree) if n.children)


def test_negation_and_comparisons_are_checked_conditions():
    result = run(PEOPLE)
    tree = result.why("Allowed", ("Ann",))
    assert [c.text for c in tree.conditions] == ["no tuple of Banned(Ann, _)"]
    adult = tree.children[0]
    assert adult.text == "Adult(Ann)" and [c.text for c in adult.conditions] == ["25 > 18"]
    assert adult.children[0].text == "Person(Ann, 25)"
    # a symbol that is no identifier is shown quoted, as written
    assert result.why("Allowed", ("New York",)).text == 'Allowed("New York")'


def test_why_not_names_the_first_goal_that_fails():
    result = run(PEOPLE)
    banned = result.why("Allowed", ("Bob",))
    assert type(banned).__name__ == "WhyNot"
    assert [(b.goal, b.reason) for b in banned.rules] == [
        ("not Banned(Bob, _)", "a tuple matches `Banned(Bob, _)`")]
    young = result.why("Allowed", ("Cy",))
    assert young.rules[0].goal == "Adult(Cy)" and young.rules[0].reason == "no tuple matches"
    adult = result.why("Adult", ("Cy",))
    assert adult.rules[0].goal == "a > 18" and "`7 > 18`" in adult.rules[0].reason
    back = result.why("Ancestor", ("Dee", "Ann"))
    assert [b.goal for b in back.rules] == ["Parent(Dee, Ann)", "Ancestor(Dee, y)"]
    fact = result.why("Parent", ("Dee", "Ann"))
    assert fact.rules == () and "facts only" in fact.note
    unknown = result.why("Ancestor", ("Zed", "Ann"))
    assert "Zed is no value" in unknown.note


def test_computed_heads_and_values_from_datalog_values():
    result = run((EXAMPLES / "datalog_values.fuse").read_text(), base_dir=EXAMPLES)
    tree = result.why("N", (3,))
    assert tree.height == 3 and [c.text for c in tree.conditions] == ["2 < 10"]
    assert tree.children[0].text == "N(2)"
    older = result.why("Older", ("Bob", "Ann"))
    assert [c.text for c in older.conditions] == ["30 > 25"]
    even = result.why("Even", (4,))
    assert [c.text for c in even.conditions] == ["4 == 2 + 2"]
    odd = result.why("Even", (3,))
    assert odd.rules[0].goal == "n == m + m"
    assert odd.rules[0].reason.startswith("false for every binding: `3 == 0 + 0`, ")


def test_file_rows_are_leaves_with_their_line():
    path = EXAMPLES / "datalog_file.fuse"
    result = run(path.read_text(), base_dir=EXAMPLES, path=str(path))
    tree = result.why("Cyclic", ("Bern",))
    rows = {(n.text, n.place.file, n.place.line) for n in nodes(tree) if n.kind == "file"}
    assert rows == {("Road(Bern, Paris)", "data/roads.tsv", 3),
                    ("Road(Paris, Oslo)", "data/roads.tsv", 4),
                    ("Road(Oslo, Bern)", "data/roads.tsv", 5)}


def test_a_large_derivation_is_cut_with_the_count_of_what_is_left():
    chain = "\n".join(f"Edge({i}, {i + 1})" for i in range(40))
    text = chain + "\nPath(x, y) = Edge(x, y)\nPath(x, z) = Path(x, y) Edge(y, z)\nexport Path\n"
    result = run(text)
    whole = result.why("Path", (0, 40), limit=1000)
    assert whole.height == 40 and whole.size() == 80  # 40 Path nodes, 40 Edge leaves
    cut = result.why("Path", (0, 40), limit=10)

    def more(tree):
        return tree.more + sum(more(c) for c in tree.children)
    assert cut.size() == 10 and cut.size() + more(cut) == 80


def test_attention_element_is_split_into_its_terms():
    result = run((EXAMPLES / "attention.fuse").read_text(), base_dir=EXAMPLES)
    attn = result.why("Attn", (5, 2))
    part, = attn.parts
    assert part.nonlinearity is None and part.projected == ("p'",) and part.count == 6
    assert math.isclose(part.total, attn.value, rel_tol=1e-4, abs_tol=1e-6)
    assert len(part.terms) == 5 and 0 < part.share <= 1
    for term in part.terms:
        assert math.isclose(term.value, math.prod(f.value for f in term.factors), rel_tol=1e-9)
    top = part.terms[0]
    p = dict(top.bindings)["p'"]
    assert [f.text for f in top.factors] == [f"Comp[5, {p}]", f"Val[{p}, 2]"]
    comp = result.why("Comp", (5, 2), top=8)
    part, = comp.parts
    assert part.nonlinearity == "softmax along p'" and part.count == 8 and part.share == 1.0
    assert math.isclose(sum(t.value for t in part.terms), part.total, rel_tol=1e-9)
    assert part.terms[0].factors[-1].text == "1/sqrt(Dk)"


def test_mlp_element_shows_its_nonlinearity_and_previous_layer():
    result = run((EXAMPLES / "mlp.fuse").read_text(), base_dir=EXAMPLES)
    why = result.why("X", (2, 3))
    part, = why.parts
    assert part.nonlinearity == "sig" and part.projected == ("k",)
    assert math.isclose(1 / (1 + math.exp(-part.total)), why.value, rel_tol=1e-5)
    assert all(t.factors[1].text.startswith("X[1, ") for t in part.terms)


def test_bad_requests_are_said_in_words():
    result = run(PEOPLE)
    with pytest.raises(fuse_lang.FuseError, match="not a tensor of this program"):
        result.why("Nope", ("Ann",))
    with pytest.raises(fuse_lang.FuseError, match="has 2 axes, but 1 value was given"):
        result.why("Ancestor", ("Ann",))
    # a negative top cut the terms as a slice does (-1: all but the last), 2.5 gave a note
    for option, bad in [("top", -1), ("top", 0), ("top", 2.5), ("limit", 0), ("limit", "x")]:
        with pytest.raises(fuse_lang.FuseError, match=f"why's {option} is a whole number of 1 "
                           f"or more, not {bad!r}"):
            result.why("Ancestor", ("Ann", "Dee"), **{option: bad})


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_answer_is_the_same_on_every_backend_and_representation(backend):
    pytest.importorskip(backend)
    numpy_tree = run(PEOPLE).why("Ancestor", ("Ann", "Dee"))
    assert run(PEOPLE, backend=backend).why("Ancestor", ("Ann", "Dee")) == numpy_tree
    sparse = {"Ancestor": "sparse", "Parent": "sparse"}
    assert run(PEOPLE, representation=sparse).why("Ancestor", ("Ann", "Dee")) == numpy_tree
    attention = (EXAMPLES / "attention.fuse").read_text()
    numbers = run(attention, base_dir=EXAMPLES).why("Attn", (5, 2))
    other = run(attention, base_dir=EXAMPLES, backend=backend).why("Attn", (5, 2))
    assert other.parts[0].terms == numbers.parts[0].terms


def test_cli_why_text_and_json(tmp_path):
    program = tmp_path / "people.fuse"
    program.write_text(PEOPLE)
    done = fuse("why", str(program), "Allowed(Ann)")
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        "Allowed(Ann)   by line 12: Allowed(x) = Adult(x) not Banned(x, _)   [x = Ann]",
        "  ├─ checked: no tuple of Banned(Ann, _)",
        "  └─ Adult(Ann)   by line 11: Adult(x) = Person(x, a) (a > 18)   [x = Ann, a = 25]",
        "     ├─ checked: 25 > 18",
        "     └─ Person(Ann, 25)   fact, line 1"]
    done = fuse("why", str(program), "Ancestor(Ann, Dee)", "--format", "json")
    data = json.loads(done.stdout)
    assert data["type"] == "Derivation" and data["height"] == 3
    assert data["place"]["line"] == 10 and data["children"][1]["text"] == "Parent(Cy, Dee)"
    done = fuse("why", str(program), "Allowed(Bob)")
    assert "stops at not Banned(Bob, _)" in done.stdout
    done = fuse("why", str(EXAMPLES / "attention.fuse"), "Attn[5, 2]", "--top", "2")
    assert done.returncode == 0 and "the top 2 by magnitude" in done.stdout


def test_cli_bad_targets_exit_with_a_message(tmp_path):
    program = tmp_path / "people.fuse"
    program.write_text(PEOPLE)
    for target, status, words in [
            ("Ancestor(Ann", 2, "expected `,` or `)`"),
            # (it said "expected `,` or `)` at column 19", the column of the `)`)
            ("Ancestor(Ann, Dee) x", 2, "nothing may follow `)` (column 20)"),
            ("Ancestor() x", 2, "nothing may follow `)` (column 12)"),
            ("Ancestor(x, Ann)", 2, "`x` is a variable"),
            ("Ancestor(Ann)", 1, "has 2 axes, but 1 value was given"),
            ("Nope(Ann)", 1, "`Nope` is not a tensor of this program")]:
        done = fuse("why", str(program), target)
        assert done.returncode == status and words in done.stderr, done.stderr


def test_cli_run_why(tmp_path):
    program = tmp_path / "people.fuse"
    program.write_text(PEOPLE)
    done = fuse("run", str(program), "--why", "Ancestor(Ann, Cy)", "--why", "Allowed(Bob)")
    assert done.returncode == 0
    assert "why Ancestor(Ann, Cy):\nAncestor(Ann, Cy)   by line 10" in done.stdout
    assert "why Allowed(Bob):\nAllowed(Bob) does not hold." in done.stdout
    done = fuse("run", str(program), "--why", "Ancestor(Ann, Cy)", "--format", "json")
    data = json.loads(done.stdout)
    assert data["why"][0]["text"] == "Ancestor(Ann, Cy)" and "Ancestor" in data["outputs"]
    done = fuse("run", str(program), "--why", "Ancestor(Ann,")
    assert done.returncode == 2 and "--why" in done.stderr
    # a target the run cannot answer is said after the results, which still show
    # (they were dropped: nothing on stdout, `"outputs": {}` in JSON)
    done = fuse("run", str(program), "--why", "Nope(Ann)", "--why", "Allowed(Bob)")
    assert done.returncode == 1 and done.stdout.startswith("Ancestor  6 tuples\n")
    assert "why Allowed(Bob):\nAllowed(Bob) does not hold." in done.stdout
    assert done.stderr == (f"fuse: {program}: why Nope: `Nope` is not a tensor of this program "
                           f"(those are: Adult, Allowed, Ancestor, Banned, Parent, Person)\n")
    done = fuse("run", str(program), "--why", "Ancestor(Ann)", "--format", "json")
    data = json.loads(done.stdout)
    assert done.returncode == 1 and "Ancestor" in data["outputs"] and data["why"] == []
    assert "has 2 axes, but 1 value was given" in done.stderr


def test_a_factor_names_the_element_it_reads_to_ask_its_own_why():
    result = run((EXAMPLES / "attention.fuse").read_text(), base_dir=EXAMPLES)
    term = result.why("Attn", (5, 2)).parts[0].terms[0]
    comp = term.factors[0]
    assert comp.tensor == "Comp" and comp.index[0] == 5
    inner = result.why(comp.tensor, comp.index)
    assert math.isclose(inner.value, comp.value, rel_tol=1e-6)


def test_a_rule_of_a_form_not_explained_is_named():
    text = "N(0)\nN(1)\nSize[x] = const([1, 5])\nBig(x) = Size[x] N(x)\nexport Big\n"
    result = run(text)
    with pytest.raises(fuse_lang.FuseError, match="`Size` is not a Boolean relation"):
        result.why("Big", (1,))


def test_a_max_projection_and_a_scalar():
    text = "X[i,j] = const([[1, 5], [3, 2]])\nM[i] max= X[i,j]\nS = X[i,j] X[i,j]\nexport M, S\n"
    result = run(text)
    m = result.why("M", (0,))
    part, = m.parts
    assert part.op == "max" and part.total == 5 == m.value
    assert [t.value for t in part.terms] == [5, 1]
    s = result.why("S", ())
    assert s.text == "S" and s.value == 1 + 25 + 9 + 4 and s.parts[0].projected == ("i", "j")


def test_a_deep_derivation_is_cut_at_its_200th_level():
    chain = "\n".join(f"Edge({i}, {i + 1})" for i in range(300))
    text = chain + "\nPath(x, y) = Edge(x, y)\nPath(x, z) = Path(x, y) Edge(y, z)\nexport Path\n"
    tree = run(text).why("Path", (0, 300), limit=100_000)
    depth, node = 1, tree
    while node.children:
        node, depth = node.children[0], depth + 1
    # the 200th node, Path(0, 101), stands for its 101 Path and 100 Edge tuples below
    assert tree.height == 300 and depth == 200 and node.text == "Path(0, 101)"
    assert node.more == 201
    assert "... " in fuse_lang.ide.why_text.why_text(tree)


def test_leaves_from_inputs_and_array_files(tmp_path):
    import numpy as np

    graph = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=np.float32)
    np.save(tmp_path / "g.npy", graph)
    program = fuse_lang.compile('G(x, y) = "g.npy"\nH(x, z) = G(x, y) G(y, z)\nexport H\n',
                                base_dir=tmp_path)
    from_file = program.execute().why("H", (0, 2))
    assert [(c.kind, c.place.file, c.place.text) for c in from_file.children] == [
        ("file", "g.npy", "[0, 1]"), ("file", "g.npy", "[1, 2]")]
    given = program.execute({"G": graph}).why("H", (0, 2))
    assert [(c.kind, c.place) for c in given.children] == [("input", None), ("input", None)]
    # a relation with facts and rules: a fact is a leaf, whatever rule could give it too
    result = run("Edge(A, B)\nReach(A)\nReach(y) = Reach(x) Edge(x, y)\nexport Reach\n")
    assert result.why("Reach", ("A",)).kind == "fact"
    assert result.why("Reach", ("B",)).children[0].text == "Reach(A)"


def test_a_number_not_split_is_said_and_its_json_is_strict(tmp_path):
    program = tmp_path / "shift.fuse"
    program.write_text("X[i] = const([1, 2, 3])\nY[i+1] = X[i]\nexport Y\n")
    done = fuse("why", str(program), "Y[1]", "--format", "json")

    def refuse(constant):
        raise AssertionError(f"not strict JSON: {constant}")
    data = json.loads(done.stdout, parse_constant=refuse)
    part, = data["parts"]
    assert data["value"] == 1.0 and part["total"] is None and part["terms"] == []
    assert "not split into terms" in part["note"]


def test_the_closure_benchmark_runs_small():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "why_closure.py"),
                           "--nodes", "2000", "--edges", "2800", "--tuples", "5"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^each why after it \(5 tuples, heights \d+-\d+\): median [\d.]+ ms = "
                     r"[\d.]+x the run", done.stdout, re.M), done.stdout


def test_an_element_over_a_sparse_relation_reads_its_row_only(tmp_path):
    rows = [(k % 50, (7 * k) % 40_000) for k in range(2_000)]
    (tmp_path / "r.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    text = 'R(x, y) = "r.tsv"\nDeg[x] = R(x, y)\nexport Deg\n'
    program = fuse_lang.compile(text, base_dir=tmp_path, representation={"R": "sparse"})
    why = program.execute().why("Deg", (3,), top=100)
    part, = why.parts
    expected = sorted(b for a, b in set(rows) if a == 3)
    assert why.value == part.total == part.count == len(expected) == 40
    assert sorted(dict(t.bindings)["y"] for t in part.terms) == expected


def test_an_equation_with_a_constant_on_its_left_writes_only_its_position():
    result = run((EXAMPLES / "hmm.fuse").read_text(), base_dir=EXAMPLES)
    later = result.why("Alpha", (1, 0))
    assert [p.place.line for p in later.parts] == [15]  # `Alpha[0,s] = ...` is not Alpha[1,.]
    assert math.isclose(later.parts[0].total, later.value, rel_tol=1e-5)
    first = result.why("Alpha", (0, 1))
    start = first.parts[0]
    assert start.place.line == 14 and start.projected == () and start.count == 1
    assert math.isclose(start.total, first.value, rel_tol=1e-5)
    with pytest.raises(fuse_lang.FuseError, match=r"is not a value of `D`'s axis 0 \(its values: "):
        run((EXAMPLES / "embedding_reasoning.fuse").read_text(), base_dir=EXAMPLES).why(
            "D", (0, 1))


def test_a_quoted_number_is_a_string_not_the_integer(tmp_path):
    # LANGUAGE.md §14: "1" and 1 are different constants; the target "25" asked about
    # the integer 25 (and said it held)
    program = tmp_path / "q.fuse"
    program.write_text('Person(Ann, 25)\nPerson(Bob, "30")\nexport Person\n')
    done = fuse("why", str(program), 'Person(Ann, "25")')
    assert done.returncode == 0 and done.stdout.startswith('Person(Ann, "25") does not hold.')
    assert '"25" is no value of `Person`\'s column 2' in done.stdout
    assert fuse("why", str(program), 'Person(Bob, "30")').stdout.startswith(
        'Person(Bob, "30")   fact, line 2')
    assert "does not hold" in fuse("why", str(program), "Person(Bob, 30)").stdout
    result = run(program.read_text())
    assert result.why("Person", ("Ann", 25)).kind == "fact"
    assert "does not hold" in fuse_lang.ide.why_text.why_text(result.why("Person", ("Ann", "25")))


def test_a_max_min_or_mean_reads_its_zero_terms_and_shows_the_winner_first():
    # a 0 adds nothing to a sum, but it is a max's value here and one of a mean's terms:
    # the terms shown were -3 and -1 for a max of 0, and a mean of 3 terms said "2 terms"
    text = ("X[i,j] = const([[-3, 0, -1], [1, 4, 2]])\nM[i] max= X[i,j]\nN[i] min= X[i,j]\n"
            "V[i] avg= X[i,j]\nS[i] = X[i,j]\nexport M, N, V, S\n")
    result = run(text)
    top = result.why("M", (0,), top=1).parts[0]
    assert top.total == 0 and top.count == 3 and [t.value for t in top.terms] == [0]
    assert [t.value for t in result.why("N", (1,), top=2).parts[0].terms] == [1, 2]
    mean = result.why("V", (0,)).parts[0]
    assert mean.count == 3 and sorted(t.value for t in mean.terms) == [-3, -1, 0]
    assert math.isclose(sum(t.value for t in mean.terms) / mean.count, mean.total)
    assert result.why("S", (0,)).parts[0].count == 2  # (a sum's 0 is no term)
    text = fuse_lang.ide.why_text.why_text(result.why("M", (1,), top=2))
    assert "the max over j: 3 terms, total 4\n    the 2 largest (" in text


def test_an_element_without_projection_is_a_sum_of_its_terms():
    result = run("A[i] = const([1, 2])\nT[i] = A[i] + A[i]\nP[i] = A[i] A[i]\nexport T, P\n")
    assert "the sum: 2 terms, total 4" in fuse_lang.ide.why_text.why_text(result.why("T", (1,)))
    assert "the product: 1 term, total 4" in fuse_lang.ide.why_text.why_text(
        result.why("P", (1,)))


def test_a_tensor_outside_the_targets_cone_is_said_so(tmp_path):
    result = fuse_lang.compile(PEOPLE, targets=["Allowed"]).execute(write_sinks=False)
    with pytest.raises(fuse_lang.FuseError, match=r"`Ancestor` is not computed by this run: "
                       r"not needed by the target \(the run computed only its targets'"):
        result.why("Ancestor", ("Ann", "Bob"))
    with pytest.raises(fuse_lang.FuseError, match=r"`Parent` is not computed by this run \(the "
                       r"run computed only its targets' dependency cone\)"):
        result.why("Parent", ("Ann", "Bob"))
    program = tmp_path / "people.fuse"
    program.write_text(PEOPLE)
    done = fuse("run", str(program), "--target", "Allowed", "--why", "Ancestor(Ann, Bob)")
    assert done.returncode == 1 and "`Ancestor` is not computed by this run" in done.stderr


def test_statements_of_an_imported_file_and_of_a_fn_call_say_where_they_are(tmp_path):
    # an imported file's fact was placed at a line of the program past its end
    # ("fact, line 18" of a 17-line program) and its rules had no text; a rule a fn
    # call wrote out showed the call, whose variables are not the bindings shown
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "l.fuse").write_text(
        "# a library\nBase(A)\nUp(x) = Base(x)\nfn reach(e(x,y)) -> p(x,y) {\n"
        "  p(x,y) = e(x,y)\n  p(x,z) = p(x,y) e(y,z)\n}\nW[i] = const([1, 2, 3])\n")
    program = tmp_path / "main.fuse"
    program.write_text('import "lib/l.fuse" as l\nE(A, B)\nE(B, C)\nMine(x) = l::Up(x)\n'
                       "R(x,y) = l::reach(E(x,y))\nS = l::W[i]\nexport Mine, R, S\n")
    done = fuse("why", str(program), "Mine(A)")
    assert done.returncode == 0 and done.stdout.splitlines() == [
        "Mine(A)   by line 4: Mine(x) = l::Up(x)   [x = A]",
        "  └─ l::Up(A)   by lib/l.fuse:3: l::Up(x) = l::Base(x)   [x = A]",
        "     └─ l::Base(A)   fact, lib/l.fuse:2"]
    data = json.loads(fuse("why", str(program), "Mine(A)", "--format", "json").stdout)
    leaf = data["children"][0]["children"][0]["place"]
    assert (Path(leaf["file"]), leaf["line"]) == (tmp_path / "lib" / "l.fuse", 2)
    done = fuse("why", str(program), "R(A, C)")
    assert "by line 5: p@l::reach.1(x,z) = p@l::reach.1(x,y) E(y,z)   (from fn l::reach, " \
        "called at line 5)   [x = A, z = C, y = B]" in done.stdout
    assert "\n  lib/l.fuse:8: l::W[i] = const([1, 2, 3])\n" in fuse(
        "why", str(program), "l::W[1]").stdout


def test_a_demand_mode_run_explains_the_programs_own_relations():
    # demand mode runs a magic-sets rewrite: the queried `Anc` was "not computed by
    # this run (nothing it exports, queries or writes reads it)"
    text = ("Parent(A, B)\nParent(B, C)\nParent(D, E)\nAnc(x,y) = Parent(x,y)\n"
            "Anc(x,z) = Anc(x,y) Parent(y,z)\nAnc(A, x)?\n")
    result = fuse_lang.compile(text, config=fuse_lang.ExecutionConfig(mode="demand")).execute()
    assert result.queries[0].tuples == [("B",), ("C",)]
    tree = result.why("Anc", ("A", "C"))
    assert tree.place.line == 5 and [c.text for c in tree.children] == ["Anc(A, B)", "Parent(B, C)"]
    assert result.why("Anc", ("D", "E")).height == 1  # (the program's relation, not the demanded part)
    assert "does not hold" in fuse_lang.ide.why_text.why_text(result.why("Anc", ("C", "A")))


def test_a_tensor_a_fn_call_wrote_out_can_be_asked_about_and_its_factors_read_as_ir(tmp_path):
    # `d@dot.1` (a name why itself shows) was refused as a target; a factor's constant
    # index in an equation a fn call wrote out showed the call's text in its place
    # (`W[dot(W[1,i], X[i]), 1]`)
    program = tmp_path / "fnn.fuse"
    program.write_text("W[n,i] = const([[1, 2], [3, 4]])\nX[i] = const([5, 6])\n"
                       "fn dot(w[i], x[i]) -> d {\n  d = w[i] x[i] / sqrt(4)\n}\n"
                       "Y = dot(W[1,i], X[i])\nexport Y\n")
    done = fuse("why", str(program), "d@dot.1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "  line 6: d@dot.1 = W[1,i] X[i] / sqrt(4)   (from fn dot, called at line 6)",
        "    the sum over i: 2 terms, total 19.5",
        "      i = 1: W[1, 1] 4 × X[1] 6 × 1/sqrt(4) 0.5 = 12",
        "      i = 0: W[1, 0] 3 × X[0] 5 × 1/sqrt(4) 0.5 = 7.5"]
    assert fuse_lang.ide.why_text.parse_target("p@graph::reach.2(A, B)") == (
        "p@graph::reach.2", ("A", "B"))


def test_a_multi_line_equation_reads_as_one_line_and_a_subtracted_term_shows_its_sign():
    # the equation's second line broke the answer's layout, and `- 1` showed as `1 = -1`
    result = run("A[i,j] = const([[1, 2], [3, 4]])\nS[i] = relu(A[i,j]\n            - 1)\n"
                 "D[i] = A[i,j] - A[j,i]\nexport S, D\n")
    text = fuse_lang.ide.why_text.why_text(result.why("S", (1,)))
    assert text.splitlines() == [
        "S[1] = 6", "  line 2: S[i] = relu(A[i,j] - 1)",
        "    relu of the sum over j: 3 terms, total 6",
        "      j = 1: A[1, 1] 4 = 4", "      j = 0: A[1, 0] 3 = 3", "      - 1 = -1"]
    assert "      j = 0: - A[0, 1] 2 = -2" in fuse_lang.ide.why_text.why_text(
        result.why("D", (1,)))
