"""Code actions over stdio: quick fixes from the engine's fixes (exact edits,
the diagnostic attached, UTF-16 positions) and one "Run on ..." per target."""
from __future__ import annotations

from typing import Union

from lsprotocol import types

from .conftest import open_doc, wait_for_push

BAD = "X[i] = const([1, 2])\nY[i] = Xq[i] + X[i]\nexport Y\n"


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def rng(line: int, start: int, end: int) -> types.Range:
    return types.Range(start=pos(line, start), end=pos(line, end))


def read_code_actions_correctly(client) -> None:
    """lsprotocol 2025.0.0 reads any `{..., "command": ...}` in a code action
    answer as a Command, even a CodeAction whose `command` is an object; the
    protocol tells them apart by whether `command` is a string."""
    converter = client.protocol._converter

    def structure(obj, _):
        is_command = isinstance(obj.get("command"), str)
        return converter.structure(obj, types.Command if is_command else types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], structure)


async def actions(client, uri, where: types.Range, diagnostics=(), only=None):
    read_code_actions_correctly(client)
    found = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=where,
        context=types.CodeActionContext(diagnostics=list(diagnostics), only=only)))
    return list(found or ())


def edits(action) -> dict:
    return {uri: list(changes) for uri, changes in action.edit.changes.items()}


async def test_did_you_mean_fix_with_its_diagnostic(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "bad.fuse", BAD)
    await wait_for_push(vscode, uri, version=1)
    sent = list(vscode.diagnostics[uri])
    found = await actions(vscode, uri, rng(1, 8, 8), sent, only=[types.CodeActionKind.QuickFix])
    (fix,) = found
    assert fix.title == "Change to `X`"
    assert fix.kind == types.CodeActionKind.QuickFix
    assert fix.is_preferred is True
    assert list(fix.diagnostics) == sent  # the client's own diagnostic, attached
    assert edits(fix) == {uri: [types.TextEdit(range=rng(1, 7, 9), new_text="X")]}


async def test_fixes_without_client_diagnostics_and_only_where_asked(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "bad.fuse", BAD)
    (fix,) = await actions(neovim, uri, rng(1, 7, 9), only=[types.CodeActionKind.QuickFix])
    assert fix.diagnostics[0].code == "undefined-tensor"
    assert fix.diagnostics[0].range == rng(1, 7, 9)
    assert await actions(neovim, uri, rng(0, 0, 3), only=[types.CodeActionKind.QuickFix]) == []


async def test_declare_axis_inserts_a_line(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "a.fuse", "Y[i] = 1\nexport Y\n")
    (fix,) = await actions(vscode, uri, rng(0, 2, 2), only=["quickfix"])
    assert fix.title == "Declare `axis i`"
    assert edits(fix) == {uri: [types.TextEdit(range=rng(0, 0, 0),
                                                     new_text="axis i = 1\n")]}


async def test_remove_the_dot(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "d.fuse", "A[i] = const([1,2])\nB[i.] = A[i]\nexport B\n")
    (fix,) = await actions(vscode, uri, rng(1, 2, 4), only=["quickfix"])
    assert fix.title == "Remove the dot"
    assert edits(fix) == {uri: [types.TextEdit(range=rng(1, 3, 4), new_text="")]}


async def test_datalog_rule_written_the_fuse_way(vscode, tmp_path):
    text = "Parent(Ann, Bob)\nAnc(x,z) :- Parent(x,y), Parent(y,z).\nAnc(Ann, x)?\n"
    uri = open_doc(vscode, tmp_path / "dl.fuse", text)
    (fix,) = await actions(vscode, uri, rng(1, 9, 11), only=["quickfix"])
    assert fix.title == "Write it the Fuse way: `Anc(x,z) = Parent(x,y) Parent(y,z)`"
    assert fix.diagnostics[0].code == "datalog-syntax"
    assert edits(fix) == {uri: [types.TextEdit(range=rng(1, 8, 12), new_text=" = "),
                                types.TextEdit(range=rng(1, 23, 25), new_text=" "),
                                types.TextEdit(range=rng(1, 36, 37), new_text="")]}


async def test_fix_positions_count_utf16_units(vscode, tmp_path):
    # the emoji before the typo takes two UTF-16 units
    text = 'X[i] = const([1, 2])\n"\U0001F600.npy" = Xq[i]\nexport X\n'
    uri = open_doc(vscode, tmp_path / "u.fuse", text)
    (fix,) = await actions(vscode, uri, rng(1, 11, 11), only=["quickfix"])
    assert edits(fix) == {uri: [types.TextEdit(range=rng(1, 11, 13), new_text="X")]}


async def test_run_entries_one_per_available_target(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "ok.fuse", "Y = 1\nexport Y\n")
    found = await actions(vscode, uri, rng(0, 0, 0))
    run = [a for a in found if a.command and a.command.command == "fuse.run"]
    assert run[0].title == "Run on cpu (numpy)"
    assert run[0].kind == "source.fuse.run"
    assert list(run[0].command.arguments) == [uri, {"backend": "numpy", "device": "cpu"}]
    assert len({a.title for a in run}) == len(run)
    # a client asking for quick fixes only gets no run entries; one asking for source does
    assert await actions(vscode, uri, rng(0, 0, 0), only=["quickfix"]) == []
    sources = await actions(vscode, uri, rng(0, 0, 0), only=[types.CodeActionKind.Source])
    assert [a.title for a in sources] == [a.title for a in run]
    # and the entry's command runs the program
    result = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
        command=run[0].command.command, arguments=run[0].command.arguments))
    assert result["ok"] is True and result["outputs"]["Y"]["shape"] == []
