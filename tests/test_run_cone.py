"""Running what can run: a target's dependency cone is compiled alone, so an
error elsewhere does not stop it (fuse_lang.check.cone; docs/execution.md)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import fuse_lang
from fuse_lang.check.cone import NOT_NEEDED, dependency_cone

BROKEN = """\
axis i = 3
A[i] = const([1,2,3])
B[i] = A[i] * 2
C[i] = Nope[i] + 1
D[i] = C[i] + B[i]
E = 1 +* 2
Parent(Alice, Bob)
Ancestor(x,y) = Parent(x,y)
Ancestor(Alice, x)?
export B, D
"""


def test_the_whole_program_is_still_refused():
    with pytest.raises(fuse_lang.FuseError, match="`Nope` is not defined"):
        fuse_lang.compile(BROKEN)


def test_a_target_outside_the_errors_runs_and_says_what_was_not_run():
    result = fuse_lang.compile(BROKEN, targets=["B"]).execute()
    assert list(result.outputs) == ["B"]
    np.testing.assert_allclose(result.outputs["B"], [2, 4, 6])
    reasons = {n.what: (n.line, n.reason) for n in result.not_run}
    assert reasons["C"] == (4, "`Nope` is not defined [undefined-tensor]")
    assert reasons["D"] == (5, NOT_NEEDED)
    assert reasons["E = 1 +* 2"][1].endswith("[syntax-error]")
    assert reasons["Ancestor(Alice, x)?"] == (9, NOT_NEEDED)


def test_a_query_target_runs_its_cone():
    result = fuse_lang.compile(BROKEN, targets=["Ancestor(Alice,x)?"]).execute()
    assert result.outputs == {}
    assert [q.tuples for q in result.queries] == [[("Bob",)]]


def test_a_target_that_depends_on_an_error_is_refused_with_that_error():
    with pytest.raises(fuse_lang.FuseError, match=r"line 4, column 8: `Nope` is not defined "
                                                  r"\[undefined-tensor\]$") as info:
        fuse_lang.compile(BROKEN, targets=["D"])
    assert [d.code for d in info.value.diagnostics] == ["undefined-tensor"]


def test_an_unknown_target_is_a_clear_error():
    with pytest.raises(fuse_lang.FuseError, match="`Nope2` is not an export, query or tensor"):
        fuse_lang.compile(BROKEN, targets=["Nope2"])


def test_the_cone_is_a_pure_function_of_the_analysis():
    analysis = fuse_lang.analyze(BROKEN)
    cone = dependency_cone(analysis, ["B"])
    assert cone.tensors == {"A", "B"} and cone.blocking == ()
    assert len(cone.text) > len(BROKEN) and cone.text.count("\n") >= BROKEN.count("\n")
    assert "Nope" not in cone.text and cone.text.endswith("export B\n")
    # the diagnostics of the document still show the error
    assert "undefined-tensor" in {d.code for d in analysis.diagnostics}


def test_a_clean_program_gives_the_same_values_by_target():
    program = (fuse_lang.compile("axis i = 3\nA[i] = const([1,2,3])\nB[i] = A[i] * 2\n"
                                 "export B\n", targets=["B"]))
    result = program.execute()
    np.testing.assert_allclose(result.outputs["B"], [2, 4, 6])
    assert result.not_run == []


def _cli(tmp_path, *args):
    path = tmp_path / "p.fuse"
    path.write_text(BROKEN)
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", str(path), *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_target_runs_the_cone_and_reports_the_rest(tmp_path):
    whole = _cli(tmp_path)
    assert whole.returncode == 1 and "`Nope` is not defined" in whole.stderr
    done = _cli(tmp_path, "--target", "B", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["outputs"]["B"]["values"] == [2.0, 4.0, 6.0]
    assert {"what": "C", "line": 4, "reason": "`Nope` is not defined [undefined-tensor]"} \
        in data["not_run"]
    assert "p.fuse:4: C was not run: `Nope` is not defined" in done.stderr
    refused = _cli(tmp_path, "--target", "D")
    assert refused.returncode == 1 and "`Nope` is not defined" in refused.stderr
    assert refused.stdout == ""


def test_the_run_summary_lists_what_was_not_run():
    from fuse_lang.ide.run_summary import summarize_run

    result = fuse_lang.compile(BROKEN, targets=["B"]).execute()
    summary = summarize_run(result, program="p.fuse", target="B")
    data = summary.to_json()
    assert {"what": "C", "line": 4, "reason": "`Nope` is not defined [undefined-tensor]"} \
        in data["not_run"]
    assert summary.message().endswith(
        "; not run: C (line 4: `Nope` is not defined [undefined-tensor]) and 1 more")
