"""Multi-file projects over stdio (the multi-file audit): an importer's diagnostics
follow its imports as `fuse check` reads them (a file that appears, a cycle, a file
outside the workspace folder reached with `..`, a library open with unsaved text),
and references and rename across files edit exactly the right places (a library
open with unsaved lines, a workspace folder reached through a link, the namespace a
name is written with)."""
from __future__ import annotations

import os

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

import fuse_lang

from .conftest import SERVER, open_doc
from .test_commands import until
from .test_hover import at
from .test_imports import wait_until
from .test_protocol_audit import pulled

LIB = "Road(Paris, Lyon)\nRoad(Lyon, Nice)\nLinked(x,y) = Road(x,y)\nW[i] = const([1, 2, 3])\n"
MAIN = 'import "lib.fuse" as g\nFrom(x) = g::Linked(Paris, x)\nexport From\n'


def doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


def said(diagnostics):
    """(code, line, first column, message) of each diagnostic, as the editor has it."""
    return [(d.code, d.range.start.line, d.range.start.character, d.message)
            for d in diagnostics]


def fuse_check(path):
    """What `fuse check` says of the file on disk: (code, line, column, message)."""
    analysis = fuse_lang.analyze(path.read_text(encoding="utf-8"), str(path))
    return [(d.code, *analysis.lines.position(d.span.start), d.message)
            for d in analysis.diagnostics]


def edits(edit, root):
    """A WorkspaceEdit as {path under root: [(line, start, end, text)]}."""
    return {os.path.relpath(uri.removeprefix("file://"), root):
            sorted((e.range.start.line, e.range.start.character, e.range.end.character,
                    e.new_text) for e in changes)
            for uri, changes in edit.changes.items()}


def changed_on_disk(client, path, kind=types.FileChangeType.Changed):
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=kind)]))


async def test_an_import_not_found_that_appears_on_disk_is_read(vscode, tmp_path):
    """The importer kept `import-not-found` after the file was created and the editor
    said so: only the files an analysis had read were looked for among its imports."""
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    got = await wait_until(vscode, uri, lambda d: len(d) == 1)
    target = tmp_path / "lib.fuse"
    assert said(got) == [("import-not-found", 0, 7, "cannot import `lib.fuse`: it does not "
                          f"exist (looked for {target})")]
    assert said(got) == fuse_check(tmp_path / "main.fuse")
    target.write_text(LIB, encoding="utf-8")
    changed_on_disk(vscode, target, types.FileChangeType.Created)
    assert said(await wait_until(vscode, uri, lambda d: len(d) == 0)) == []
    assert fuse_check(tmp_path / "main.fuse") == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def refreshing(lsp_client: LanguageClient, tmp_path):
    """Neovim 0.11's capabilities (pull diagnostics), able to pull again when asked."""
    capabilities = client_capabilities("neovim@v0.11.0")
    capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(
        refresh_support=True)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_nested_import_that_appears_asks_a_pull_client_to_pull_again(refreshing,
                                                                            tmp_path):
    (tmp_path / "mid.fuse").write_text('import "base.fuse" as b\nM(x) = b::Linked(Paris, x)\n',
                                       encoding="utf-8")
    uri = open_doc(refreshing, tmp_path / "main.fuse",
                   'import "mid.fuse" as m\nX(x) = m::M(x)\nexport X\n')
    assert await pulled(refreshing, uri) == ["import-not-found"]
    (tmp_path / "base.fuse").write_text(LIB, encoding="utf-8")
    changed_on_disk(refreshing, tmp_path / "base.fuse", types.FileChangeType.Created)
    await until(lambda: refreshing.diagnostic_refresh_count)
    assert await pulled(refreshing, uri) == []
    assert fuse_check(tmp_path / "main.fuse") == []


async def test_the_open_library_s_text_wins_until_it_is_closed(vscode, tmp_path):
    (tmp_path / "lib.fuse").write_text(LIB, encoding="utf-8")
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    await wait_until(vscode, uri, lambda d: len(d) == 0)
    lib = (tmp_path / "lib.fuse").as_uri()
    vscode.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=lib, language_id="fuse", version=1, text=LIB.replace("Linked", "Lnk"))))
    got = await wait_until(vscode, uri, lambda d: len(d) == 1)
    assert said(got) == [("undefined-tensor", 1, 10, "`Linked` is not defined in `lib.fuse`, "
                          "imported as `g`; did you mean `g::Lnk`?")]
    vscode.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(lib)))
    assert said(await wait_until(vscode, uri, lambda d: len(d) == 0)) == []
    assert fuse_check(tmp_path / "main.fuse") == []  # (the unsaved text is gone)


async def test_a_cycle_is_said_as_fuse_check_says_it_and_rename_crosses_it(vscode, tmp_path):
    a_text = 'import "b.fuse" as b\nA[i] = b::B[i]\nexport A\n'
    (tmp_path / "b.fuse").write_text('import "a.fuse" as a\nB[i] = const([1, 2])\n',
                                     encoding="utf-8")
    uri = open_doc(vscode, tmp_path / "a.fuse", a_text)
    got = await wait_until(vscode, uri, lambda d: len(d) == 1)
    assert said(got) == [("import-cycle", 0, 0, "in `b.fuse` line 1: imports go round in a "
                          "cycle: a.fuse imports b.fuse imports a.fuse")]
    assert said(got) == fuse_check(tmp_path / "a.fuse")
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(a_text, "b::B", 3), new_name="C"))
    assert edits(edit, tmp_path) == {"a.fuse": [(1, 10, 11, "C")], "b.fuse": [(1, 0, 1, "C")]}


async def test_rename_from_a_library_open_with_unsaved_lines(vscode, tmp_path):
    """A closed importer was analysed against the library's saved text (the open
    texts were a snapshot from the last importing analysis): its places in the
    library, a line off, became a second edit there, `Road` renamed `Conn`."""
    (tmp_path / "lib.fuse").write_text(LIB, encoding="utf-8")
    (tmp_path / "main.fuse").write_text(MAIN, encoding="utf-8")
    unsaved = "# a line not saved yet\n" + LIB
    lib = (tmp_path / "lib.fuse").as_uri()
    vscode.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=lib, language_id="fuse", version=1, text=unsaved)))
    await wait_until(vscode, lib, lambda d: True)
    refs = await vscode.text_document_references_async(types.ReferenceParams(
        text_document=doc(lib), position=at(unsaved, "Linked"),
        context=types.ReferenceContext(include_declaration=True)))
    assert sorted((r.uri == lib, r.range.start.line, r.range.start.character) for r in refs) \
        == [(False, 1, 10), (True, 3, 0)]
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(lib), position=at(unsaved, "Linked"), new_name="Conn"))
    assert edits(edit, tmp_path) == {"lib.fuse": [(3, 0, 6, "Conn")],
                                     "main.fuse": [(1, 13, 19, "Conn")]}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def linked(lsp_client: LanguageClient, tmp_path):
    """VS Code's capabilities, its workspace folder a link to the real folder."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    root = (tmp_path / "link").as_uri()
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=root,
        workspace_folders=[types.WorkspaceFolder(uri=root, name="linked")]))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_rename_under_a_workspace_folder_reached_through_a_link(linked, tmp_path):
    """The workspace's files were named by their resolved paths, the open ones by
    the link's: a closed importer's import never matched, and its `h::Linked` was
    left as it was (undefined after the rename)."""
    root = tmp_path / "link"
    (root / "lib.fuse").write_text(LIB, encoding="utf-8")
    (root / "other.fuse").write_text('import "lib.fuse" as h\nO(x) = h::Linked(x, Nice)\n'
                                     'export O\n', encoding="utf-8")
    uri = open_doc(linked, root / "main.fuse", MAIN)
    await wait_until(linked, uri, lambda d: len(d) == 0)
    edit = await linked.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(MAIN, "g::Linked", 4), new_name="Conn"))
    assert edits(edit, root) == {"main.fuse": [(1, 13, 19, "Conn")],
                                 "lib.fuse": [(2, 0, 6, "Conn")],
                                 "other.fuse": [(1, 10, 16, "Conn")]}


TWO = ('import "lib.fuse" as g\nimport "lib.fuse" as h\n'
       'From(x) = g::Linked(Paris, x) h::Linked(x, Nice)\nexport From\n')


@pytest.mark.parametrize("new", ["Conn", "g::Conn", "h::Conn"])
async def test_a_rename_keeps_the_name_s_namespace(vscode, tmp_path, new):
    (tmp_path / "lib.fuse").write_text(LIB, encoding="utf-8")
    uri = open_doc(vscode, tmp_path / "main.fuse", TWO)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(TWO, "h::Linked", 4), new_name=new))
    assert edits(edit, tmp_path) == {"main.fuse": [(2, 13, 19, "Conn"), (2, 33, 39, "Conn")],
                                     "lib.fuse": [(2, 0, 6, "Conn")]}


async def test_a_rename_to_another_namespace_is_refused(vscode, tmp_path):
    """`g::Linked` renamed `k::Conn` was renamed `Conn` in g's file without a word;
    prepareRename on `h::Linked` offered `g::Linked` (the program's name of it)."""
    (tmp_path / "lib.fuse").write_text(LIB, encoding="utf-8")
    uri = open_doc(vscode, tmp_path / "main.fuse", TWO)
    for written in ("g::Linked", "h::Linked"):
        prepared = await vscode.text_document_prepare_rename_async(types.PrepareRenameParams(
            text_document=doc(uri), position=at(TWO, written, 4)))
        assert prepared.placeholder == written
    with pytest.raises(JsonRpcException) as raised:
        await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(uri), position=at(TWO, "g::Linked", 4), new_name="k::Conn"))
    assert "`k::Conn`: a rename keeps the namespace (`g::`): write the new name alone, " \
        "`Conn`" in str(raised.value)


async def test_a_library_outside_the_workspace_reached_with_dotdot(vscode, tmp_path):
    shared = tmp_path.parent / (tmp_path.name + "_shared")
    shared.mkdir()
    (shared / "lib.fuse").write_text(LIB, encoding="utf-8")
    (tmp_path / "proj").mkdir()
    main = (f'import "../../{shared.name}/lib.fuse" as g\nFrom(x) = g::Linked(Paris, x)\n'
            'g::Road(Nice, Rome)\nexport From\n')
    path = tmp_path / "proj" / "main.fuse"
    uri = open_doc(vscode, path, main)
    await wait_until(vscode, uri, lambda d: len(d) == 0)
    found = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(main, "g::Linked", 4)))
    assert [(f.uri, f.range.start.line) for f in found] == [((shared / "lib.fuse").as_uri(), 2)]
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(main, "g::Road", 4), new_name="Street"))
    assert edits(edit, tmp_path.parent) == {
        f"{tmp_path.name}/proj/main.fuse": [(2, 3, 7, "Street")],
        f"{shared.name}/lib.fuse": [(0, 0, 4, "Street"), (1, 0, 4, "Street"),
                                    (2, 14, 18, "Street")]}
    (shared / "lib.fuse").write_text(LIB + "Bad[i] = Nope[i]\n", encoding="utf-8")
    changed_on_disk(vscode, shared / "lib.fuse")
    got = await wait_until(vscode, uri, lambda d: len(d) == 1)
    assert said(got) == [("import-error", 0, 0, f"in `../../{shared.name}/lib.fuse` line 5: "
                          "`Nope` is not defined [undefined-tensor]")]
    assert said(got) == fuse_check(path)


async def test_a_run_reads_an_open_library_as_the_editor_has_it(vscode, tmp_path):
    """Diagnostics, hover and explain read the open library's unsaved text, the run
    its saved one: `V` was shape (4,) in the hover and (3,) in the run beside it."""
    (tmp_path / "lib.fuse").write_text(LIB, encoding="utf-8")
    main = 'import "lib.fuse" as g\nV[i] = g::W[i] * 2\nexport V\n'
    uri = open_doc(vscode, tmp_path / "main.fuse", main)
    lib = (tmp_path / "lib.fuse").as_uri()
    vscode.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=lib, language_id="fuse", version=1, text=LIB.replace("[1, 2, 3]", "[5, 6, 7, 8]"))))
    await wait_until(vscode, uri, lambda d: len(d) == 0)
    for arguments in ({}, {"target": "V"}):
        result = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fuse.run", arguments=[uri, arguments]))
        assert result["ok"] and result["outputs"]["V"]["preview"] == [10.0, 12.0, 14.0, 16.0]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def two_folders(lsp_client: LanguageClient, tmp_path):
    """VS Code's capabilities, a workspace of two folders (`app`, the first, and `tools`)."""
    folders = []
    for name in ("app", "tools"):
        (tmp_path / name).mkdir()
        folders.append(types.WorkspaceFolder(uri=(tmp_path / name).as_uri(), name=name))
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=folders[0].uri, workspace_folders=folders))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_rename_reaches_the_importers_of_every_workspace_folder(two_folders, tmp_path):
    """Only the first folder's files were looked at for importers: the second's
    `h::Linked` was left as it was, though workspace symbols list its files."""
    (tmp_path / "app" / "lib.fuse").write_text(LIB, encoding="utf-8")
    (tmp_path / "tools" / "t.fuse").write_text(
        'import "../app/lib.fuse" as h\nT(x) = h::Linked(x, Nice)\nexport T\n', encoding="utf-8")
    uri = open_doc(two_folders, tmp_path / "app" / "main.fuse", MAIN)
    await wait_until(two_folders, uri, lambda d: len(d) == 0)
    edit = await two_folders.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(MAIN, "g::Linked", 4), new_name="Conn"))
    assert edits(edit, tmp_path) == {"app/main.fuse": [(1, 13, 19, "Conn")],
                                     "app/lib.fuse": [(2, 0, 6, "Conn")],
                                     "tools/t.fuse": [(1, 10, 16, "Conn")]}


async def test_a_folder_deleted_or_made_on_disk_reaches_the_importer(vscode, tmp_path):
    """A client may tell of a folder, not of each file in it: the importer of a file
    in it is checked again all the same."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "graph.fuse").write_text(LIB, encoding="utf-8")
    text = MAIN.replace('"lib.fuse"', '"lib/graph.fuse"')
    uri = open_doc(vscode, tmp_path / "main.fuse", text)
    await wait_until(vscode, uri, lambda d: len(d) == 0)
    (tmp_path / "lib" / "graph.fuse").rename(tmp_path / "graph.fuse")
    (tmp_path / "lib").rmdir()
    changed_on_disk(vscode, tmp_path / "lib", types.FileChangeType.Deleted)
    got = await wait_until(vscode, uri, lambda d: len(d) == 1)
    assert [d.code for d in got] == ["import-not-found"] == [c[0] for c in fuse_check(
        tmp_path / "main.fuse")]
    (tmp_path / "lib").mkdir()
    (tmp_path / "graph.fuse").rename(tmp_path / "lib" / "graph.fuse")
    changed_on_disk(vscode, tmp_path / "lib", types.FileChangeType.Created)
    assert said(await wait_until(vscode, uri, lambda d: len(d) == 0)) == []
