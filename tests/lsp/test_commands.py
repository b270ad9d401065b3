"""fuse.run and fuse.explain over stdio: results, progress, cancellation,
errors, sinks, and options from the client's configuration."""
from __future__ import annotations

import asyncio
import re
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import SERVER, WAIT_S, open_doc, start
from .test_code_actions import actions

PROGRAM = """\
A[i,j] = const([[1, 2], [3, 4], [5, 6]])
B[j,k] = const([[1, 0, 2], [0, 1, 3]])
C[i,k] = A[i,j] B[j,k]
Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
export C
Ancestor(Alice, x)?
Ancestor(Carol, Alice)?
"""
WITH_SINK = "X[i] = const([1, 2, 3])\nY[i] = 2 X[i]\n\"out.npy\" = Y[i]\nexport Y\n"
# a recurrence of many steps: long enough to cancel (about 10 s on numpy)
SLOW = """\
axis i = 2
axis t = 200000
W[i,j] = const([[0.5, 0], [0, 0.5]])
U[j,t] = 1
X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])
"slow.npy" = X[i,*t]
export X
"""


async def execute(client, command: str, *arguments):
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def until(predicate, timeout: float = WAIT_S):
    async def poll():
        while not (found := predicate()):
            await asyncio.sleep(0.02)
        return found
    return await asyncio.wait_for(poll(), timeout)


def allow_sinks(client) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuse": {"allowSinkWrites": True}}))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def initialized(lsp_client: LanguageClient, tmp_path):
    """A client that keeps the server's answer to `initialize`."""
    lsp_client.initialize_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_commands_code_actions_and_lenses_are_advertised(initialized):
    capabilities = initialized.initialize_result.capabilities
    assert {"fuse.run", "fuse.train", "fuse.explain"} <= set(
        capabilities.execute_command_provider.commands)
    assert list(capabilities.code_action_provider.code_action_kinds) == [
        types.CodeActionKind.QuickFix, "source.fuse.run", "source.fuse.train"]
    assert capabilities.code_lens_provider is not None


async def test_run_returns_a_structured_result_and_a_message(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["ok"] is True
    assert (result["program"], result["backend"], result["device"]) == ("prog.fuse", "numpy", "cpu")
    c = result["outputs"]["C"]
    assert c["shape"] == [3, 3] and c["dtype"] == "float32" and c["size"] == 9
    # C = A B = [[1,2,8],[3,4,18],[5,6,28]]
    assert c["preview"] == [1, 2, 8, 3, 4, 18, 5, 6]
    assert c["truncated"] is True
    assert (c["min"], c["max"]) == (1, 28)
    assert c["mean"] == pytest.approx(75 / 9)
    assert c["nonfinite"] == 0 and c["nonzeros"] == 9
    first, second = result["queries"]
    assert first["text"] == "Ancestor(Alice, x)?"
    assert first["boolean"] is True and first["free"] == ["x"]
    assert first["tuples"] == [["Bob"], ["Carol"]]
    assert first["answer"] == "2 answers"
    assert second["tuples"] == [] and second["answer"] == "no"
    assert result["sinks"] == []
    message = await until(lambda: vscode.messages and vscode.messages[-1])
    assert message.type == types.MessageType.Info
    assert re.fullmatch(r"Ran prog\.fuse on cpu \(numpy\): C \(3, 3\), "
                        r"Ancestor\(Alice, x\)\? 2 answers, Ancestor\(Carol, Alice\)\? no "
                        r"in [\d.]+ (ms|s)", message.message), message.message
    assert result["message"] == message.message


async def test_run_a_single_target(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    only_c = await execute(vscode, "fuse.run", uri, {"target": "C"})
    assert list(only_c["outputs"]) == ["C"] and only_c["queries"] == []
    assert only_c["target"] == "C"
    query = await execute(vscode, "fuse.run", uri, {"target": "Ancestor(Alice,x)?"})
    assert query["outputs"] == {}
    assert [q["text"] for q in query["queries"]] == ["Ancestor(Alice, x)?"]
    unknown = await execute(vscode, "fuse.run", uri, {"target": "Nope"})
    assert unknown["ok"] is False and "`Nope` is not an export, query or tensor" in \
        unknown["error"]


async def test_a_target_runs_past_an_error_it_does_not_depend_on(vscode, tmp_path):
    broken = PROGRAM.replace("export C", "D[i] = Nope[i]\nexport C, D")
    uri = open_doc(vscode, tmp_path / "prog.fuse", broken)
    # the diagnostics still show the error
    diagnostics = await until(lambda: vscode.diagnostics.get(uri))
    assert [d.code for d in diagnostics if d.severity == types.DiagnosticSeverity.Error] == \
        ["undefined-tensor"]
    whole = await execute(vscode, "fuse.run", uri, {})
    assert whole["ok"] is False and "`Nope` is not defined" in whole["error"]
    only_c = await execute(vscode, "fuse.run", uri, {"target": "C"})
    assert only_c["ok"] is True and list(only_c["outputs"]) == ["C"]
    assert {"what": "D", "line": 8, "reason": "`Nope` is not defined [undefined-tensor]"} in \
        only_c["not_run"]
    assert "; not run: D (line 8: `Nope` is not defined [undefined-tensor])" in \
        only_c["message"]
    refused = await execute(vscode, "fuse.run", uri, {"target": "D"})
    assert refused["ok"] is False and "line 8, column 8: `Nope` is not defined" in \
        refused["error"]


async def test_the_whole_document_runs_past_an_error_nothing_it_runs_needs(vscode, tmp_path):
    # C (exported) and the queries are fine; D reads an undefined tensor, and nothing
    # exported, queried or written needs it: fuse.run without a target runs the rest
    broken = PROGRAM.replace("export C", "D[i] = Nope[i]\nexport C")
    uri = open_doc(vscode, tmp_path / "prog.fuse", broken)
    diagnostics = await until(lambda: vscode.diagnostics.get(uri))  # still shown
    assert "undefined-tensor" in {d.code for d in diagnostics}
    whole = await execute(vscode, "fuse.run", uri, {})
    assert whole["ok"] is True and whole["target"] is None
    assert list(whole["outputs"]) == ["C"]
    assert [q["answer"] for q in whole["queries"]] == ["2 answers", "no"]
    assert whole["not_run"] == [
        {"what": "D", "line": 8, "reason": "`Nope` is not defined [undefined-tensor]"}]
    assert "; not run: D (line 8: `Nope` is not defined [undefined-tensor])" in \
        whole["message"]
    message = await until(lambda: vscode.messages and vscode.messages[-1])
    assert message.type == types.MessageType.Warning and message.message == whole["message"]
    # the "Run on cpu (numpy)" code action runs the same way
    found = await actions(vscode, uri, types.Range(start=types.Position(line=0, character=0),
                                                   end=types.Position(line=0, character=0)),
                          only=["source.fuse.run"])
    (numpy,) = [a for a in found if a.title == "Run on cpu (numpy)"]
    assert list(numpy.command.arguments) == [uri, {"backend": "numpy", "device": "cpu"}]
    by_action = await execute(vscode, numpy.command.command, *numpy.command.arguments)
    assert by_action["ok"] is True and list(by_action["outputs"]) == ["C"]
    assert [n["what"] for n in by_action["not_run"]] == ["D"]


async def test_explain_returns_the_plan_as_markdown(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    result = await execute(vscode, "fuse.explain", uri)
    assert result["kind"] == "markdown"
    md = result["value"]
    assert md.startswith("## Plan of `prog.fuse`")
    assert "| `C` | `(3, 3)` |" in md
    assert "### Evaluation order" in md
    assert ("`Ancestor` — *recursive: evaluated by forward chaining to a fixpoint "
            "(semi-naive)*") in md
    assert "**line 3** `C[i,k] = A[i,j] B[j,k]`" in md
    assert "| `j` | 2 | D2 | projected (sum) in right-hand side; joins `A`, `B` |" in md
    assert "- einsum `ab,bc->ac` (`A[i,j] B[j,k] -> [i,k]`)" in md
    assert "**Total:**" in md and "flops" in md


async def test_explain_warns_when_the_program_has_errors(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "bad.fuse", "Y[i] = Xq[i]\nexport Y\n")
    md = (await execute(vscode, "fuse.explain", uri))["value"]
    assert md.startswith("> **1 error** in this program")


async def test_run_reports_work_done_progress(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    await execute(vscode, "fuse.run", uri, {})
    ((token, reports),) = [(t, r) for t, r in vscode.progress_reports.items()
                           if str(t).startswith("fuse.run/")]
    begin, *middle, end = reports
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.title == "Running prog.fuse on cpu (numpy)" and begin.cancellable is True
    assert middle and all(isinstance(r, types.WorkDoneProgressReport) for r in middle)
    assert middle[0].message == "running on cpu (numpy)"
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message.startswith("done in")


async def test_progress_counts_groups_and_iterations_and_its_cancel_stops_the_run(
        vscode, tmp_path):
    allow_sinks(vscode)
    uri = open_doc(vscode, tmp_path / "slow.fuse", SLOW)
    pending = asyncio.ensure_future(execute(vscode, "fuse.run", uri, {}))

    def counted():
        return [(t, r) for t, rs in vscode.progress_reports.items() for r in rs
                if isinstance(r, types.WorkDoneProgressReport) and r.message
                and re.search(r"group \d+/\d+ \(`X`\): iteration [1-9]\d*", r.message)]
    found = await until(counted, timeout=60)
    token, report = found[0]
    assert re.fullmatch(r"running: [\d.]+ s, \d+ operations, group 3/3 \(`X`\): "
                        r"iteration \d+", report.message), report.message
    assert report.percentage == 66  # two groups of three done
    begin = vscode.progress_reports[token][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.percentage == 0
    # the progress token's cancel (the button in the editor) cancels the run
    vscode.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL,
                           types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(pending, WAIT_S)
    assert result == {"ok": False, "cancelled": True, "error": "cancelled"}
    assert isinstance(vscode.progress_reports[token][-1], types.WorkDoneProgressEnd)
    await until(lambda: [m for m in vscode.log_messages if "stopped after" in m.message])
    assert not (tmp_path / "slow.npy").exists()  # no partial sink file


async def test_cancel_request_stops_the_run(vscode, tmp_path):
    allow_sinks(vscode)
    uri = open_doc(vscode, tmp_path / "slow.fuse", SLOW)
    pending = asyncio.ensure_future(vscode.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command="fuse.run", arguments=[uri, {}]), msg_id="run-1"))
    # wait until it is running, then cancel the request
    await until(lambda: any(isinstance(r, types.WorkDoneProgressReport) and
                            r.message and r.message.startswith("running:")
                            for rs in vscode.progress_reports.values() for r in rs))
    vscode.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="run-1"))
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(pending, WAIT_S)
    assert raised.value.code == types.LSPErrorCodes.RequestCancelled
    # the run itself ends at its next operation, long before it would have finished
    # (the line looked for is the run's own, not any other that says "cancelled")
    log = await until(lambda: [m for m in vscode.log_messages
                               if "the run of slow.fuse was cancelled" in m.message])
    assert "the run of slow.fuse was cancelled and stopped after" in log[0].message
    ends = [r for rs in vscode.progress_reports.values() for r in rs
            if isinstance(r, types.WorkDoneProgressEnd)]
    assert [e.message for e in ends] == ["cancelled"]
    assert not (tmp_path / "slow.npy").exists()
    assert not [m for m in vscode.messages if m.message.startswith("Ran ")]
    # and the server goes on serving
    assert (await execute(vscode, "fuse.explain", uri))["kind"] == "markdown"


async def test_a_failing_program_gives_an_error_message(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "bad.fuse", "X[i] = const([1, 2])\nY[i] = Xq[i]\nexport Y\n")
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["ok"] is False
    assert result["error"].startswith("bad.fuse: line 2, column 8: `Xq` is not defined")
    message = await until(lambda: vscode.messages and vscode.messages[-1])
    assert message.type == types.MessageType.Error
    assert message.message == result["error"]
    ends = [r for rs in vscode.progress_reports.values() for r in rs
            if isinstance(r, types.WorkDoneProgressEnd)]
    assert [e.message for e in ends] == ["failed"]


async def test_an_unknown_backend_or_device_is_an_error(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    result = await execute(vscode, "fuse.run", uri, {"backend": "tensorflow"})
    assert result["ok"] is False and "unknown backend 'tensorflow'" in result["error"]


async def test_run_on_another_backend_precision_and_compiled(vscode, tmp_path):
    pytest.importorskip("jax")
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    plain = await execute(vscode, "fuse.run", uri, {})
    wide = await execute(vscode, "fuse.run", uri, {"backend": "jax", "precision": "fp64"})
    assert wide["ok"] is True and wide["backend"] == "jax"
    assert wide["outputs"]["C"]["dtype"] == "float64"
    assert wide["outputs"]["C"]["preview"] == plain["outputs"]["C"]["preview"]
    assert [(q["text"], q["tuples"]) for q in wide["queries"]] == \
        [(q["text"], q["tuples"]) for q in plain["queries"]]
    eager = await execute(vscode, "fuse.run", uri, {"backend": "jax", "compiled": False})
    assert eager["ok"] is True and eager["outputs"]["C"]["dtype"] == "float32"
    refused = await execute(vscode, "fuse.run", uri, {"precision": "bf16"})
    assert refused["ok"] is False
    assert "the numpy backend supports fp32 and fp64, not 'bf16'" in refused["error"]


async def test_bad_arguments_are_invalid_params(vscode):
    with pytest.raises(JsonRpcException) as raised:
        await execute(vscode, "fuse.run")
    assert raised.value.code == types.ErrorCodes.InvalidParams


async def test_opening_and_editing_never_run_and_sinks_wait_for_permission(vscode, tmp_path):
    allow_sinks(vscode)  # even when sinks may be written, only fuse.run writes them
    uri = open_doc(vscode, tmp_path / "s.fuse", WITH_SINK)
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=WITH_SINK + "\n")]))
    vscode.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    doc = types.TextDocumentIdentifier(uri=uri)
    await vscode.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
    await vscode.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(start=types.Position(line=0, character=0),
                                             end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    await asyncio.sleep(0.5)
    assert not (tmp_path / "out.npy").exists()
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["sinks"] and (tmp_path / "out.npy").exists()


async def test_sinks_are_not_written_by_default(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "s.fuse", WITH_SINK)
    result = await execute(vscode, "fuse.run", uri, {})
    assert result["ok"] is True and result["sinks"] == []
    assert result["outputs"]["Y"]["preview"] == [2, 4, 6]
    assert not (tmp_path / "out.npy").exists()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def configured(lsp_client: LanguageClient, tmp_path):
    """A client whose `workspace/configuration` answers fuse.allowSinkWrites = true."""
    lsp_client.set_configuration({"allowSinkWrites": True}, section="fuse")
    await start(lsp_client, "visual-studio-code", tmp_path)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_options_come_from_workspace_configuration(configured, tmp_path):
    uri = open_doc(configured, tmp_path / "s.fuse", WITH_SINK)
    result = await until_ok(configured, uri)
    assert len(result["sinks"]) == 1 and result["sinks"][0].endswith("out.npy")
    assert (tmp_path / "out.npy").exists()


async def until_ok(client, uri):
    """The configuration is pulled after `initialized`: give it a moment (a bound for
    a server that never pulls it, not a speed target)."""
    deadline = time.perf_counter() + WAIT_S
    while True:
        result = await execute(client, "fuse.run", uri, {})
        if result["sinks"] or time.perf_counter() > deadline:
            return result
        await asyncio.sleep(0.1)
