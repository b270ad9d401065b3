"""Runs from the editor are bounded (docs/running-from-the-editor.md): a time
limit per run, one memory budget shared by all runs, a number of runs at once;
a run that does not fit waits and says so, one that never fits is refused."""
from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .conftest import WAIT_S, open_doc
from .test_commands import SLOW, execute, until

# 2 million steps: minutes unbounded
LONG = SLOW.replace("axis t = 200000", "axis t = 2000000").replace('"slow.npy" = X[i,*t]\n', "")
# 2 MB of tensors (SLOW: 1.6 MB, its U; its X keeps only the latest state)
WIDE = "axis i = 500000\nX[i] = 1\nexport X\n"
# SLOW's memory, three times its steps (two more recurrences of one latest state
# each): a run going on that a loaded machine does not end before the test's checks
PATIENT = SLOW.replace("export X\n", "Y[i,*t+1] = tanh(W[i,j] Y[j,*t] - U[i,t])\n"
                       "Z[i,*t+1] = tanh(W[i,j] Z[j,*t] + 2 U[i,t])\nexport X, Y, Z\n")


def configure(client, **settings) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuse": settings}))


async def test_a_run_stops_at_the_run_time_limit(vscode, tmp_path):
    configure(vscode, runTimeLimit=1)
    uri = open_doc(vscode, tmp_path / "long.fuse", LONG)
    result = await asyncio.wait_for(execute(vscode, "fuse.run", uri, {}), 30)
    assert result["ok"] is False
    assert "long.fuse: the run was stopped at its time limit of 1 s" in result["error"]
    assert "runTimeLimit" in result["error"]


async def test_a_run_larger_than_the_whole_budget_is_refused(vscode, tmp_path):
    configure(vscode, memoryLimit=1_000_000)
    uri = open_doc(vscode, tmp_path / "wide.fuse", WIDE)
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["ok"] is False
    assert "more than the server's memory budget for runs (1.0 MB" in result["error"]
    assert "nothing was run" in result["error"]


@pytest.mark.parametrize("settings", [
    {"maxConcurrentRuns": 1},  # no free slot
    {"maxConcurrentRuns": 4, "memoryLimit": 3_000_000},  # 1.6 MB + 2 MB > 3 MB
], ids=["slots", "memory"])
async def test_a_run_that_does_not_fit_waits_for_the_one_going(vscode, tmp_path, settings):
    configure(vscode, **settings)
    slow = open_doc(vscode, tmp_path / "slow.fuse", PATIENT)
    wide = open_doc(vscode, tmp_path / "wide.fuse", WIDE)
    first = asyncio.ensure_future(vscode.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command="fuse.run", arguments=[slow, {}]), msg_id="slow"))
    await until(lambda: any(isinstance(r, types.WorkDoneProgressReport) and
                            r.message and r.message.startswith("running:")
                            for rs in vscode.progress_reports.values() for r in rs))
    second = asyncio.ensure_future(execute(vscode, "fuse.run", wide, {}))
    said = await until(lambda: [m.message for m in vscode.log_messages
                                if m.message.startswith("fuse.run: waiting: 1 run(s) going")])
    assert "this run needs about 2.0 MB" in said[0]
    assert not second.done()
    vscode.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="slow"))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(first, WAIT_S)
    result = await asyncio.wait_for(second, WAIT_S)
    assert result["ok"] is True and result["outputs"]["X"]["shape"] == [500000]


async def test_run_settings_are_checked(vscode):
    configure(vscode, runTimeLimit=0, maxConcurrentRuns="two")

    def warned(*parts: str) -> list[str]:
        return [m.message for m in vscode.log_messages if m.type == types.MessageType.Warning
                and all(part in m.message for part in parts)]

    await until(lambda: warned("runTimeLimit = 0", "expected 1 to 86400", "keeping 60"))
    await until(lambda: warned("maxConcurrentRuns = 'two'", "whole number", "keeping 2"))


async def test_a_waiting_run_can_be_cancelled(vscode, tmp_path):
    configure(vscode, maxConcurrentRuns=1)
    # the run going on is LONG (minutes), not SLOW: on a loaded machine SLOW (8 s
    # there) ended before the check that it goes on undisturbed
    slow = open_doc(vscode, tmp_path / "slow.fuse", LONG)
    wide = open_doc(vscode, tmp_path / "wide.fuse", WIDE)

    def send(uri: str, msg_id: str):
        return asyncio.ensure_future(vscode.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="fuse.run", arguments=[uri, {}]), msg_id=msg_id))

    first = send(slow, "slow")
    await until(lambda: any(isinstance(r, types.WorkDoneProgressReport) and
                            r.message and r.message.startswith("running:")
                            for rs in vscode.progress_reports.values() for r in rs))
    second = send(wide, "wide")
    await until(lambda: [m for m in vscode.log_messages if "waiting: 1 run(s)" in m.message])
    vscode.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="wide"))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(second, WAIT_S)
    log = await until(lambda: [m for m in vscode.log_messages
                               if "the run of wide.fuse was cancelled" in m.message])
    assert "stopped after" in log[0].message
    assert not first.done()  # the run going on is not disturbed
    vscode.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="slow"))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(first, WAIT_S)
