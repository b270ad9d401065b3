"""Demand mode (`fuse run --mode demand`, plan/demand.py) against forward mode and the
program as written: an audit's regressions.  The rewrite runs a program of its own;
what a user sees of it (answers, trace lines, errors, diagnostics, whys) speaks of
the program the user wrote.  The slow random comparison (answers, exports, whys and
trace lines against a naive evaluator) is benchmarks/demand_fuzz.py."""
from __future__ import annotations

import json

import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, FuseError
from fuse_lang.cli.main import main as cli_main

CHAIN = """Parent(Alice, Bob)
Parent(Bob, Cy)
Parent(Cy, Dee)

Anc(x,y) = Parent(x,y)
Anc(x,z) = Anc(x,y) Parent(y,z)
Anc(Alice, x)?
"""


def answers(text: str, mode: str) -> list[tuple[str, str, set]]:
    result = fuse_lang.compile(text, config=ExecutionConfig(mode=mode)).execute()
    return [(q.text, q.tensor, set(q.tuples)) for q in result.queries]


def test_a_rule_over_lines_with_a_comment_runs_in_demand_mode():
    # the rewrite wrote the rule on one line, its comment swallowing the rest of it:
    # "demand mode could not rewrite this program's queries: '(' is never closed"
    text = CHAIN.replace("Anc(x,z) = Anc(x,y) Parent(y,z)",
                         'Anc(x,z) = (Anc(x,y)   # "a step\n   Parent(y,z))  # then one more')
    assert answers(text, "demand") == answers(text, "forward") == [
        ("Anc(Alice, x)?", "Anc", {("Bob",), ("Cy",), ("Dee",)})]
    explained = fuse_lang.compile(text, config=ExecutionConfig(mode="demand")).demand
    assert "Anc_bf(x,z) = Magic_Anc_bf(x) (Anc_bf(x,y) Parent(y,z))" in explained.rules


def test_a_query_over_lines_with_a_comment_keeps_its_own_text():
    # its answer came back as `Anc_bf(Alice, # who ...)?`, the rewrite's relation
    text = CHAIN.replace("Anc(Alice, x)?", 'Anc(Alice,  # who "descends"\n    x)?')
    demand = answers(text, "demand")
    assert demand == answers(text, "forward")
    assert demand[0][1] == "Anc" and demand[0][0].startswith("Anc(Alice,")


def test_a_hash_in_a_string_is_no_comment_to_the_rewrite():
    text = CHAIN.replace("Cy", '"C#y"').replace(
        "Anc(x,z) = Anc(x,y) Parent(y,z)", 'Anc(x,z) = (Anc(x,y) # a "quote\n Parent(y,z))')
    assert answers(text, "demand") == answers(text, "forward") == [
        ("Anc(Alice, x)?", "Anc", {("Bob",), ("C#y",), ("Dee",)})]


def test_the_trace_of_a_demand_run_cites_the_programs_own_lines(tmp_path, capsys):
    # it cited the lines of the rewritten program (16 in a file of 7 lines)
    (tmp_path / "p.fuse").write_text(CHAIN)
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", "demand", "--trace",
                     "--format", "json"]) == 0
    trace = json.loads(capsys.readouterr().out)["trace"]
    cited = {(rule["line"], rule["delta_of"]) for fixpoint in trace["fixpoints"]
             for round_ in fixpoint["rounds"] for rule in round_.get("rules", ())}
    assert cited == {(6, "Anc_bf")}  # `Anc(x,z) = Anc(x,y) Parent(y,z)`, the recursive rule
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", "demand", "--trace"]) == 0
    table = capsys.readouterr().out.split("trace: rules of Anc_bf")[1].splitlines()
    assert table[3].split()[:2] == ["6", "Anc_bf"]


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_the_programs_own_lines_with_any_line_ending(tmp_path, capsys, newline):
    # a text of lone "\r"s ended its last line with the rewrite's "\n": line 7 (the
    # query), not line 5, for the first rule
    text = CHAIN.replace("Anc(x,z) = Anc(x,y) Parent(y,z)",
                         "Anc(x,z) = (Anc(x,y) # a step\n  Parent(y,z))")
    (tmp_path / "p.fuse").write_bytes(text.replace("\n", newline).encode())
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", "demand"]) == 0
    assert "Anc(Alice, x)?  Bob; Cy; Dee" in capsys.readouterr().out
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", "demand",
                     "--max-iterations", "1"]) == 1
    assert "line 5: `Anc(x,y) = Parent(x,y)`: Anc_bf did not" in capsys.readouterr().err


def test_a_fixpoint_limit_in_demand_mode_names_the_rule_as_written(tmp_path, capsys):
    # it said `line 11: Anc_bf(x,y) = Magic_Anc_bf(x) Parent(x,y)`: a line the file lacks
    (tmp_path / "p.fuse").write_text(CHAIN)
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", "demand",
                     "--max-iterations", "1"]) == 1
    err = capsys.readouterr().err
    assert "line 5: `Anc(x,y) = Parent(x,y)`: Anc_bf did not reach a fixpoint" in err
    assert "(Anc_bf is demand mode's copy of Anc for the queries that bind its arguments " \
        "as bf (b bound, f free))" in err and "Magic" not in err
    with pytest.raises(FuseError, match=r"line 5: `Anc\(x,y\) = Parent\(x,y\)`"):
        fuse_lang.compile(CHAIN, config=ExecutionConfig(mode="demand",
                                                        max_iterations=1)).execute()


def test_the_diagnostics_of_a_demand_run_are_the_programs(tmp_path, capsys):
    # the JSON held the rewritten program's (`Anc_bf` depends on itself, line 11)
    (tmp_path / "p.fuse").write_text(CHAIN)
    shown = []
    for mode in ("forward", "demand"):
        assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", mode,
                         "--format", "json"]) == 0
        shown.append(json.loads(capsys.readouterr().out)["diagnostics"])
    assert shown[0] == shown[1] and shown[0]
    assert all(d["line"] <= CHAIN.count("\n") for d in shown[1])


def test_a_query_of_an_imported_relation_runs_in_demand_mode(tmp_path):
    # the rewrite copied the imported rules' text from the program's own text at
    # their offsets in the library ("`Reach_bf` is not a namespace here", "')' closes
    # nothing"): a relation of an imported file is read in full instead
    (tmp_path / "graph.fuse").write_text(
        "Edge(A, B)\nEdge(B, C)\nEdge(C, D)\n"
        "Reach(x, y) = Edge(x, y)\nReach(x, z) = Reach(x, y) Edge(y, z)\n")
    text = 'import "graph.fuse" as g\ng::Reach(B, x)?\nFar(x) = g::Reach(A, x)\nFar(D)?\n'
    got = []
    for mode in ("forward", "demand"):
        program = fuse_lang.compile(text, base_dir=tmp_path, config=ExecutionConfig(mode=mode))
        got.append([(q.text, q.tensor, set(q.tuples)) for q in program.execute().queries])
    assert got[0] == got[1] == [("g::Reach(B, x)?", "g::Reach", {("C",), ("D",)}),
                                ("Far(D)?", "Far", {()})]
    assert [r.tensor for r in program.demand.relations] == ["Far"]


def test_the_flights_example_with_a_library_function_runs_in_demand_mode(capsys):
    # (examples/flights.fuse: "'@' is not part of the Fuse language", the rules a
    # `fn` call wrote out copied as text)
    from pathlib import Path

    example = str(Path(__file__).resolve().parent.parent / "examples" / "flights.fuse")
    shown = []
    for mode in ("forward", "demand"):
        assert cli_main(["run", example, "--mode", mode]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1] and "FromHub(Oslo, x)?  Bergen" in shown[1]


def test_the_exports_of_a_demand_run_are_forward_modes_arrays(tmp_path):
    # the seed was a fact, `Magic_Anc_bf(Zed)`: Zed joined the column's domain (a 4x4
    # array), and Cy, asked for, was numbered before the file's symbols (rows permuted)
    (tmp_path / "par.tsv").write_text("Alice\tBob\nBob\tCy\n")
    text = ('Parent(x, y) = "par.tsv"\nAnc(x,y) = Parent(x,y)\nAnc(x,z) = Anc(x,y) Parent(y,z)\n'
            'Anc(Cy, x)?\nAnc(Zed, x)?\nAnc(Alice, x)?\nexport Anc\n')
    runs = [fuse_lang.compile(text, base_dir=tmp_path, config=ExecutionConfig(mode=mode)).execute()
            for mode in ("forward", "demand")]
    assert runs[0].outputs["Anc"].shape == runs[1].outputs["Anc"].shape == (3, 3)
    assert (runs[0].outputs["Anc"] == runs[1].outputs["Anc"]).all()
    assert [set(q.tuples) for q in runs[1].queries] == [set(), set(), {("Bob",), ("Cy",)}]


def test_a_number_asked_of_a_column_of_symbols_reads_it_in_full():
    # (no comparison seeds it: `(b0 == 1)` over symbols is `not-a-number`)
    text = "E(Alice, 1)\nE(1, 2)\nR(x, y) = E(x, y)\nR(1, y)?\nR(2, y)?\nR(Alice, y)?\n"
    assert answers(text, "demand") == answers(text, "forward") == [
        ("R(1, y)?", "R", {(2,)}), ("R(2, y)?", "R", set()), ("R(Alice, y)?", "R", {(1,)})]


def test_a_why_of_demand_modes_own_relation_says_what_it_is(tmp_path, capsys):
    # it said "`Anc_bf` is not computed by this run (nothing it exports, queries or
    # writes reads it)": it is, but it is the rewrite's, not the program's
    (tmp_path / "p.fuse").write_text(CHAIN)
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--mode", "demand",
                     "--why", "Anc_bf(Alice, Bob)", "--why", "Magic_Anc_bf(Alice)",
                     "--why", "Anc(Alice, Dee)"]) == 1
    captured = capsys.readouterr()
    assert "`Anc_bf` is not a tensor of this program: Anc_bf is demand mode's copy of Anc" \
        in captured.err
    assert "`Magic_Anc_bf` is not a tensor of this program: Magic_Anc_bf holds the values " \
        "demand mode asks Anc_bf for" in captured.err and "not computed" not in captured.err
    assert "Anc(Alice, Dee)   by line 6: Anc(x,z) = Anc(x,y) Parent(y,z)" in captured.out
    result = fuse_lang.compile(CHAIN, config=ExecutionConfig(mode="demand")).execute()
    with pytest.raises(FuseError, match=r"those are: Anc, Parent\)"):
        result.why("Nope", ("A",))


def test_a_constant_of_a_body_atom_adds_no_value_to_a_column_in_demand_mode(tmp_path):
    # the magic rule `Magic_P_bb(0, -2) = Magic_P_fb(2)` put 0 into P's columns (a
    # head's constant is a value): the exported P was 4x4, forward mode's 3x3
    text = ("E(1, 2)\nE(2, 3)\nP(x, y) = E(x, y)\nP(3, 2) = P(0, -2)\nP(3, 1) = P(1, 2)\n"
            "P(x, z) = P(x, y) P(y, z)\nP(q, 1)?\nexport P\n")
    runs = [fuse_lang.compile(text, config=ExecutionConfig(mode=mode)).execute()
            for mode in ("forward", "demand")]
    assert runs[0].outputs["P"].shape == runs[1].outputs["P"].shape == (3, 3)
    assert (runs[0].outputs["P"] == runs[1].outputs["P"]).all()
    assert [set(q.tuples) for q in runs[1].queries] == [{(1,), (2,), (3,)}]
    rules = fuse_lang.compile(text, config=ExecutionConfig(mode="demand")).demand.rules
    assert "Magic_P_bb(1, 2) = Magic_P_fb(1)" in rules  # 1, 2: values of P's columns
    assert not any("Magic_P_bb(0" in rule for rule in rules)  # 0 is none: P read in full
    # symbols: a symbol in a head is numbered before a file's, so it is pinned by a
    # comparison; and a magic relation whose every guard has a constant is tied to
    # its relation's columns (its seed `(b0 == C)` found no value: no answer)
    (tmp_path / "e.tsv").write_text("A\tB\nB\tC\n")
    text = ('E(x, y) = "e.tsv"\nP(x, y) = E(x, y)\nP(C, A) = P(A, B)\nP(x, z) = P(x, y) P(y, z)\n'
            'Q(C, A) = E(A, B)\nQ(C, B)?\nQ(C, x)?\nP(q, A)?\nexport P, Q\n')
    runs = [fuse_lang.compile(text, base_dir=tmp_path, config=ExecutionConfig(mode=mode)).execute()
            for mode in ("forward", "demand")]
    for name in ("P", "Q"):
        assert (runs[0].outputs[name] == runs[1].outputs[name]).all()
    assert [set(q.tuples) for q in runs[1].queries] == [set(), {("A",)}, {("A",), ("B",), ("C",)}] \
        == [set(q.tuples) for q in runs[0].queries]
    rules = fuse_lang.compile(text, base_dir=tmp_path, config=ExecutionConfig(mode="demand")
                              ).demand.rules
    assert "Magic_P_bb_pin(b0, b1) = (b0 == A) (b1 == B)" in rules
    assert "Magic_Q_bf_tie(b0, b1) = Magic_Q_bf(b0) Q_bf(b0, b1) Q(b0, b1)" in rules


def test_a_negation_bound_by_a_later_atom_is_left_out_of_a_magic_rule():
    # `Magic_S_bf(x) = Magic_R_bf(x) not Bad(x, w)`: w is bound only by T(y, w), after
    # S: "demand mode could not rewrite this program's queries: `w` ... ungrounded"
    text = ("E(A, B)\nE(B, C)\nT(B, W1)\nT(C, W2)\nBad(A, W2)\nS(x, y) = E(x, y)\n"
            "S(x, z) = S(x, y) E(y, z)\nR(x, y) = not Bad(x, w) S(x, y) T(y, w)\nR(A, y)?\n"
            "Q(x, y) = not Bad(x, W2) S(x, y)\nQ(A, y)?\nQ(B, y)?\n")
    assert answers(text, "demand") == answers(text, "forward") == [
        ("R(A, y)?", "R", {("B",)}), ("Q(A, y)?", "Q", set()), ("Q(B, y)?", "Q", {("C",)})]
    rules = fuse_lang.compile(text, config=ExecutionConfig(mode="demand")).demand.rules
    assert "Magic_S_bf(x) = Magic_R_bf(x)" in rules  # (what binds it comes later)
    assert "Magic_S_bf(x) = Magic_Q_bf(x) not Bad(x, W2)" in rules  # (bound: kept)


def test_a_demand_query_answers_with_forward_modes_array():
    # `QueryAnswer.value` was over the adorned copy's own column: P_fb's first column
    # holds A and B (its heads), P's C too (F's, through Q's rule)
    text = ("E(1)\nE(2)\nF(C)\nP(A, y) = E(y)\nP(B, y) = E(y)\nQ(x) = P(x, _) F(x)\n"
            "P(x, 1)?\nP(x, y)?\nexport Q\n")
    values = [[(q.free, q.value.tolist()) for q in fuse_lang.compile(
        text, config=ExecutionConfig(mode=mode)).execute().queries] for mode in ("forward", "demand")]
    assert values[0][0] == values[1][0] == (("x",), [0.0, 1.0, 1.0])  # C, A, B
    assert values[0] == values[1]


@pytest.mark.parametrize("mode", ["forward", "demand"])
def test_the_trace_and_a_run_error_cite_an_imported_rule_where_it_is_written(tmp_path, capsys,
                                                                             mode):
    # they cited `main.fuse` line 5 (the program has 4) for graph.fuse's line 6
    (tmp_path / "graph.fuse").write_text(
        "# a library\nEdge(A, B)\nEdge(B, C)\nEdge(C, D)\n"
        "Reach(x, y) = Edge(x, y)\nReach(x, z) = Reach(x, y) Edge(y, z)\n")
    (tmp_path / "main.fuse").write_text(
        'import "graph.fuse" as g\ng::Reach(B, x)?\nFar(x) = g::Reach(A, x)\nFar(D)?\n')
    main = str(tmp_path / "main.fuse")
    assert cli_main(["run", main, "--mode", mode, "--trace", "--format", "json"]) == 0
    trace = json.loads(capsys.readouterr().out)["trace"]
    cited = {(rule["file"], rule["line"]) for fixpoint in trace["fixpoints"]
             for round_ in fixpoint["rounds"] for rule in round_.get("rules", ())}
    assert cited == {("graph.fuse", 6)}
    assert cli_main(["run", main, "--mode", mode, "--trace"]) == 0
    assert "graph.fuse:6  g::Reach" in capsys.readouterr().out
    assert cli_main(["run", main, "--mode", mode, "--max-iterations", "1"]) == 1
    assert "graph.fuse, line 5: `Reach(x, y) = Edge(x, y)`: g::Reach did not reach" \
        in capsys.readouterr().err
