"""Why's conformance audit (docs/why.md): what the answers say, checked against the
run's relations, for the forms tests/test_why.py and tests/test_why_property.py leave
out."""
from __future__ import annotations

import json

import pytest
from test_why import fuse  # (the CLI as a process, no traceback allowed)

import fuse_lang


def run(text: str):
    return fuse_lang.compile(text).execute(write_sinks=False)


def test_a_computed_head_blames_the_goal_that_stops_the_binding_giving_the_tuple():
    # Q(6, B) needs m = 5, which P holds and `m < 3` refuses: the why-not said "its head
    # computes other values from every binding" (m = 0, the binding past `m < 3`, gives 1)
    result = run("P(0)\nP(5)\nQ(6, A)\nQ(m + 1, B) = P(m) (m < 3)\nexport Q\n")
    blocked, = result.why("Q", (6, "B")).rules
    assert (blocked.goal, blocked.reason) == ("m < 3", "false for every binding: `5 < 3`")
    # no binding of the body gives 3 at all: the head is what stops it
    blocked, = result.why("Q", (1, "A")).rules
    assert blocked.reason == "its head cannot give this tuple"
    assert type(result.why("Q", (1, "B"))).__name__ == "Derivation"


def test_a_value_that_needs_quotes_written_unquoted_is_told_to_be_quoted(tmp_path):
    # `Allowed(New York)` said only "expected `,` or `)` at column 13" (which is also what
    # a shell or a %%fuse line leaves of an unprotected `Allowed("New York")`)
    program = tmp_path / "p.fuse"
    program.write_text('Person("New York")\nPerson("é")\nPerson(Ann)\nexport Person\n')
    for target, quoted in [("Person(New York)", '"New York"'), ("Person(é)", '"é"')]:
        done = fuse("why", str(program), target)
        assert done.returncode == 2 and done.stdout == "", done.stdout
        assert f"values are separated by `,`, and a string that is no symbol is quoted: " \
            f"{quoted} (on a command line or a %%fuse line, inside single quotes: " \
            f"'Person({quoted})')" in done.stderr, done.stderr
        assert fuse("why", str(program), target.replace("(", "(\"").replace(")", "\")")
                    ).stdout.startswith(f"Person({quoted})   fact, line ")
    assert "expected `,` or `)` at column 11" in fuse("why", str(program), "Person(Ann").stderr


def test_numpy_positions_are_positions_and_an_index_that_is_no_tuple_is_said_in_words():
    # `why("Y", (np.int64(1),))` said "1 is outside `Y`'s axis 1 (positions 0 to 1)",
    # and an index of None raised a TypeError
    import numpy as np

    result = run("A[i,j] = const([[1, -2], [3, 4]])\nB[j] = const([5, 6])\n"
                 "Y[i] = A[i,j] B[j]\nexport Y\n")
    for index in [(np.int64(1),), np.array([1]), np.int64(1), tuple(np.argwhere([0, 1])[0])]:
        answer = result.why("Y", index)
        assert answer.text == "Y[1]" and answer.value == 3 * 5 + 4 * 6
    with pytest.raises(fuse_lang.FuseError, match="why's index is the tuple's values or the "
                       "element's positions"):
        result.why("Y", None)
    # (and True is no value: it was taken for the 1 of a relation's column)
    counted = run("N(0)\nN(1)\nexport N\n").why("N", (True,))
    assert type(counted).__name__ == "WhyNot" and "True is no value" in counted.note


def test_run_json_says_which_why_targets_could_not_be_answered(tmp_path):
    # `fuse run --why A --why Nope(A) --format json` exited 1 with a "why" list of one
    # answer and nothing in the document saying which target failed or why
    program = tmp_path / "p.fuse"
    program.write_text("Edge(A, B)\nPath(x, y) = Edge(x, y)\nexport Path\n")
    done = fuse("run", str(program), "--why", "Path(A, B)", "--why", "Nope(A)", "--why",
                "Path(A)", "--format", "json")
    data = json.loads(done.stdout)
    assert done.returncode == 1 and [w["text"] for w in data["why"]] == ["Path(A, B)"]
    assert len(data["why_errors"]) == 2 and "`Nope` is not a tensor" in data["why_errors"][0]
    assert "`Path` has 2 axes, but 1 value was given" in data["why_errors"][1]
    assert data["why_errors"] == done.stderr.splitlines()
    fine = json.loads(fuse("run", str(program), "--why", "Path(A, B)", "--format", "json").stdout)
    assert "why_errors" not in fine


def test_cli_exit_statuses_of_elements_and_values_not_there(tmp_path):
    # (docs/cli.md: an element the tensor does not have exits 1 in words; a tuple a
    # column cannot hold is an answer, exit 0; neither is a traceback)
    program = tmp_path / "p.fuse"
    program.write_text('Edge(A, B)\nEdge("New York", A)\nDeg[x] = Edge(x, y)\n'
                       "Y[i] = const([1, 2, 3])\nexport Deg, Y, Edge\n")
    for target, words in [("Y[7]", "7 is outside `Y`'s axis 0 (positions 0 to 2)"),
                          ("Deg[Zed]", "Zed is not a value of `Deg`'s axis 0 (its values: A, "
                                       '"New York")')]:
        done = fuse("why", str(program), target)
        assert done.returncode == 1 and done.stdout == "" and words in done.stderr, done.stderr
        data = json.loads(fuse("why", str(program), target, "--format", "json").stdout)
        assert words in data["error"]
    assert fuse("why", str(program), 'Deg["New York"]').stdout.startswith('Deg["New York"] = 1')
    done = fuse("why", str(program), "Edge(Zed, A)")
    assert done.returncode == 0 and "Zed is no value of `Edge`'s column 1" in done.stdout


def test_a_block_let_local_is_named_in_its_equations_as_its_tuples_are():
    # the equations said `H(x) = h(x, _)` over a child `h@let.1(A, B)` (a name asked about
    # as `h` is no tensor), and a why-not stopped at `h@let.1(C, _)` of `... h(x, _)`
    result = run("E(A, B)\nE(B, C)\nV(A)\nV(C)\n{\n  let h(x, y) = E(x, y) E(y, _)\n"
                 "  H(x) = V(x) h(x, _)\n  N[x] = h(x, y)\n}\nexport H, N\n")
    tree = result.why("H", ("A",))
    assert tree.place.text == "H(x) = V(x) h@let.1(x, _)"
    assert [c.text for c in tree.children] == ["V(A)", "h@let.1(A, B)"]
    assert tree.children[1].place.text == "h@let.1(x, y) = E(x, y) E(y, _)"
    blocked, = result.why("H", ("C",)).rules
    assert blocked.place.text == tree.place.text and blocked.goal == "h@let.1(C, _)"
    number = result.why("N", ("A",))
    assert number.parts[0].place.text == "N[x] = h@let.1(x, y)"
    assert [f.text for t in number.parts[0].terms for f in t.factors] == ["h@let.1(A, B)"]


def test_a_fuse_cell_why_keeps_a_targets_quoted_values(tmp_path):
    # `%%fuse --why Person(Bob,"30")`: the line's shell-like split dropped the quotes,
    # and the why answered about the integer 30 ("does not hold") without a word
    pytest.importorskip("IPython")
    from test_notebook_magic import run_cells  # (tests/ is on the path)

    cell = ('%%fuse --why Person(Bob,"30") --why Person("New York",1) --why '
            "'Person(Ann, \"25\")'\nPerson(Bob, \"30\")\nPerson(\"New York\", 1)\n"
            "Person(Ann, 25)\nexport Person\n")
    seen, = run_cells(tmp_path, [cell])
    assert seen["error"] is None, seen
    assert 'why Person(Bob, "30"):\nPerson(Bob, "30")   fact, line 1' in seen["stdout"]
    assert 'why Person("New York", 1):\nPerson("New York", 1)   fact, line 2' in seen["stdout"]
    assert 'why Person(Ann, "25"):\nPerson(Ann, "25") does not hold.' in seen["stdout"]
