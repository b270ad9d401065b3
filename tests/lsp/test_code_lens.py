"""Code lenses over stdio: "Run" and "Explain" above each export and query."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc

PROGRAM = """\
Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
N = const(3)
M = 2 N
export N, M
Ancestor(Alice,  x)?
"""


def rng(line: int, start: int, end: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start),
                       end=types.Position(line=line, character=end))


async def lenses(client, uri):
    return list(await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri))) or ())


async def test_run_and_explain_above_exports_and_queries(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "p.fuse", PROGRAM)
    found = await lenses(vscode, uri)
    assert [(lens.range, lens.command.title, lens.command.command, list(lens.command.arguments))
            for lens in found] == [
        (rng(6, 0, 11), "Run", "fuse.run", [uri, {"target": ["N", "M"]}]),
        (rng(6, 0, 11), "Explain", "fuse.explain", [uri]),
        (rng(7, 0, 20), "Run", "fuse.run", [uri, {"target": "Ancestor(Alice, x)?"}]),
        (rng(7, 0, 20), "Explain", "fuse.explain", [uri]),
    ]


async def test_a_lens_command_runs_its_target_only(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "p.fuse", PROGRAM)
    export_run, _, query_run, _ = await lenses(neovim, uri)

    async def execute(lens):
        return await neovim.workspace_execute_command_async(types.ExecuteCommandParams(
            command=lens.command.command, arguments=lens.command.arguments))

    exports = await execute(export_run)
    assert sorted(exports["outputs"]) == ["M", "N"] and exports["queries"] == []
    assert exports["outputs"]["M"]["preview"] == [6]
    query = await execute(query_run)
    assert query["outputs"] == {}
    assert query["queries"][0]["tuples"] == [["Bob"], ["Carol"]]


async def test_no_lenses_for_a_program_without_exports_or_queries(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "q.fuse", "Y = 1\n")
    assert await lenses(vscode, uri) == []
