"""The typed RunPlan (run.run_plan): made once per input-shape signature, immutable,
executed by the run and rendered by `fuse explain` as the same object."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang.ide.explain import explain_program, run_plan_lines
from fuse_lang.run.run_plan import EQUATION, FIXPOINT, RECURRENCE, TENSOR, RunPlan

CLOSURE = """\
Edge(A, B)
Edge(B, C)
Edge(C, D)
Path(x, y) = Edge(x, y)
Path(x, z) = Path(x, y) Edge(y, z)
export Path
"""

SCORES = """\
axis d = 3
param X[p,d]
S[p,p'] = X[p,d] X[p',d]
Y[p] = S[p,p'] + S[p,p']
export Y
"""


def test_the_run_executes_the_plan_explain_renders():
    program = fuse_lang.compile(CLOSURE)
    explained = explain_program(program)
    assert isinstance(explained.run_plan, RunPlan)
    result = program.execute()
    assert result.plan is explained.run_plan  # the very object, not an equal one
    assert explained.plan is explained.run_plan.contractions
    assert program.execute().plan is explained.run_plan  # made once per signature


def test_a_plan_per_input_shape_signature():
    program = fuse_lang.compile(SCORES)
    small = program.run_plan({"X": np.ones((4, 3))})
    assert program.execute({"X": np.ones((4, 3))}).plan is small
    other = program.run_plan({"X": np.ones((5, 3))})
    assert other is not small and other.shapes["S"] == (5, 5)
    assert small.signature == (("X", (4, 3)),)


def test_the_plan_says_how_each_group_is_computed():
    plan = fuse_lang.compile(CLOSURE).run_plan()
    groups = {g.names: g for g in plan.schedule(True).groups}
    assert groups[("Path",)].how == FIXPOINT and groups[("Path",)].strategy == "closure"
    assert plan.fixpoints[("Path",)].closure is not None  # the rule the search follows
    assert groups[("Edge",)].how == TENSOR
    scores = fuse_lang.compile(SCORES).run_plan({"X": np.ones((4, 3))})
    assert {g.names[0]: g.how for g in scores.schedule(True).groups}["S"] == EQUATION
    assert scores.schedule(True).memory.total > 0
    lines = run_plan_lines(plan)
    assert any("Path: to a fixpoint, semi-naive rounds, then one graph search" in line
               for line in lines)
    naive = fuse_lang.compile(CLOSURE, config=fuse_lang.ExecutionConfig(fixpoint="naive"))
    assert {g.names: g.strategy for g in naive.run_plan().schedule(True).groups
            if g.how == FIXPOINT} == {("Path",): "naive"}


def test_a_group_that_semi_naive_cannot_run_exactly_is_planned_naive():
    text = "axis i = 3\nparam W[i]\nX[i] = W[i]\nX[i] = 0.5 X[i]\nexport X\n"
    plan = fuse_lang.compile(text).run_plan()
    (group,) = [g for g in plan.schedule(True).groups if g.how == FIXPOINT]
    assert group.strategy == "naive"
    assert plan.fixpoints[("X",)].how.startswith("naive: semi-naive was asked")


def test_a_recurrence_is_planned_as_one():
    text = "axis t = 5\nA[0] = 1\nA[t] = A[t-1] * 2\nexport A\n"
    plan = fuse_lang.compile(text).run_plan()
    (group,) = [g for g in plan.schedule(True).groups if g.names == ("A",)]
    assert group.how == RECURRENCE and group.recurrence.index == "t"


def test_plans_and_programs_do_not_change():
    program = fuse_lang.compile(CLOSURE)
    plan = program.run_plan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.analysis = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.shapes["Path"] = (1, 1)  # type: ignore[index]
    with pytest.raises(AttributeError, match="does not change"):
        program.analysis = None
    program.memory_limit = 1 << 30  # a run hook may be set
    assert program.execute().outputs["Path"].sum() == 6


def test_training_keeps_its_bookkeeping_in_the_run_result():
    program = fuse_lang.compile(CLOSURE)
    result = program.execute()
    assert result.rounds and set(result.rounds) == {("Path",)}
    assert not hasattr(program, "rounds_taken")


def test_fuse_explain_prints_the_run_plan(tmp_path, capsys):
    from fuse_lang.cli import main

    (tmp_path / "closure.fuse").write_text(CLOSURE, encoding="utf-8")
    assert main(["explain", str(tmp_path / "closure.fuse")]) == 0
    out = capsys.readouterr().out
    assert "run plan (numpy):" in out
    assert "1. Edge: read (its facts, source file or input)" in out
    assert "2. Path: to a fixpoint, semi-naive rounds, then one graph search" in out
    assert main(["explain", "--format", "json", str(tmp_path / "closure.fuse")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"]["groups"][1] == {"tensors": ["Path"], "how": "fixpoint",
                                        "strategy": "closure"}


def test_a_program_that_cannot_run_is_explained_from_its_analysis(tmp_path, capsys):
    from fuse_lang.cli import main

    (tmp_path / "broken.fuse").write_text("Y[i] = Missing[i]\nexport Y\n", encoding="utf-8")
    assert main(["explain", str(tmp_path / "broken.fuse")]) == 1
    assert "run plan" not in capsys.readouterr().out


def test_inputs_of_the_shapes_the_program_has_are_not_analysed_again(monkeypatch):
    from fuse_lang.run import program as program_module

    program = fuse_lang.compile("axis p = 4, d = 3\nparam X[p,d]\nY[p] = X[p,d]\nexport Y\n")
    analyses = []
    real = program_module.analyze
    monkeypatch.setattr(program_module, "analyze",
                        lambda *a, **k: analyses.append(k) or real(*a, **k))
    plan = program.run_plan({"X": np.ones((4, 3))})
    assert plan.analysis is program.analysis and not analyses
    assert program.run({"X": np.ones((4, 3))})["Y"].tolist() == [3.0] * 4


def test_demand_mode_is_explained_on_the_programs_own_lines(tmp_path, capsys):
    from fuse_lang.cli import main

    path = tmp_path / "demand.fuse"
    path.write_text(CLOSURE.replace("export Path\n", "Path(A, x)?\n"), encoding="utf-8")
    assert main(["explain", "--mode", "demand", str(path)]) == 0
    out = capsys.readouterr().out
    assert "line 5: Path(x, z) = Path(x, y) Edge(y, z)" in out
    assert "line 1" + "0" not in out  # the rewritten text's lines are not the file's
    assert "3. Path_bf: to a fixpoint" in out  # what runs: the rewrite


def test_fuse_explain_compiles_from_the_analysis_it_made(tmp_path, monkeypatch, capsys):
    from fuse_lang.cli import main
    from fuse_lang.run import program as program_module

    (tmp_path / "closure.fuse").write_text(CLOSURE, encoding="utf-8")
    again = []
    real = program_module.analyze
    monkeypatch.setattr(program_module, "analyze", lambda *a, **k: again.append(a) or real(*a, **k))
    assert main(["explain", str(tmp_path / "closure.fuse")]) == 0
    assert "run plan (numpy):" in capsys.readouterr().out and not again


SEGMENTS = """\
axis i = 3, t = 4
param X[i]
M[i] = 1.0
A[i] = X[i] + 1
R[t,i] = R[t-1,i] + A[i]
B[i] = R[t,i] * 2
C[i] = B[i] M[i]
export C
"""


def test_straight_segments_read_and_hand_back_what_later_segments_need():
    # a recurrence between two straight runs: the first hands back what it computes
    # and the constant mask the last one reads (not the param only it reads); the
    # last reads the mask and the recurrence's tensor from earlier segments
    schedule = fuse_lang.compile(SEGMENTS).run_plan().schedule(True)
    assert [(s.straight, [g.names for g in s.groups], s.reads, s.keeps)
            for s in schedule.segments] == [
        (True, [("X",), ("M",), ("A",)], (), ("M", "A")),
        (False, [("R",)], (), ()),
        (True, [("B",), ("C",)], ("M", "R"), ("B", "C")),
    ]
