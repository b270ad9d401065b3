"""The run result's trace (`runTrace`) and Monte Carlo standard errors, over stdio
(docs/running-from-the-editor.md, "Traces and estimates")."""
from __future__ import annotations

from .conftest import open_doc
from .test_commands import execute
from .test_run_bounds import configure

DATALOG = """Parent(Alice, Bob)
Parent(Bob, Carol)
Parent(Carol, Dave)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Alice, x)?
"""


async def test_a_run_has_no_trace_unless_run_trace_is_on(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "a.fuse", DATALOG)
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["ok"] is True
    assert result["trace"] is None and result["estimates"] == {} and result["report"] == []


async def test_run_trace_puts_the_trace_and_its_tables_in_the_result(vscode, tmp_path):
    configure(vscode, runTrace=True)
    uri = open_doc(vscode, tmp_path / "a.fuse", DATALOG)
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["ok"] is True, result
    trace = result["trace"]
    ancestor = [e for e in trace["equations"] if e["tensor"] == "Ancestor"][0]
    assert ancestor["shape"] == [4, 4] and ancestor["nonzeros"] == 6
    assert ancestor["recursive"] is True and ancestor["seconds"] >= 0
    (fixpoint,) = trace["fixpoints"]
    assert fixpoint["group"] == ["Ancestor"] and fixpoint["strategy"] == "semi_naive"
    assert [r["iteration"] for r in fixpoint["rounds"]] == list(
        range(1, len(fixpoint["rounds"]) + 1))
    assert "trace: equations" in result["report"]
    assert "trace: fixpoint of Ancestor (semi_naive)" in result["report"]


async def test_monte_carlo_standard_errors_are_in_the_result(vscode, tmp_path):
    """A program run with projection="monte_carlo" from the editor is not asked for by
    a setting: the engine's estimates reach the result whenever a run has them."""
    from fuse_lang import ExecutionConfig, compile
    from fuse_lang.ide.run_summary import summarize_run

    text = "axis i = 2, j = 400\nA[i,j] = 1\nY[i] = A[i,j] A[i,j]\nexport Y\n"
    result = compile(text, config=ExecutionConfig(projection="monte_carlo", samples=40,
                                                  seed=3)).execute()
    data = summarize_run(result).to_json()
    estimate = data["estimates"]["Y"]
    assert estimate["index"] == "j" and estimate["samples"] == 40
    assert estimate["standard_error"]["shape"] == [2]
    assert any("Monte Carlo over `j`: 40 of 400 values" in line for line in data["report"])
