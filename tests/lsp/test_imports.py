"""Imports over stdio (issue 33): a program importing a library resolves it; go to
definition on `ns::Name` and on the import's path lands in the library; hover shows
an imported tensor's shape; completion after `ns::` lists the library's names;
references and rename reach across the files; when the library changes (an edit
of the open file, or a file changed on disk) the importer's diagnostics come again."""
from __future__ import annotations

import asyncio

from lsprotocol import types

from .conftest import WAIT_S, open_doc, wait_for_push
from .test_hover import at, hover

LIB = """\
fn reach(e(x,y)) -> p(x,y) {
  p(x,y) = e(x,y)
  p(x,z) = p(x,y) e(y,z)
}
Road(Paris, Lyon)
Road(Lyon, Nice)
Linked(x,y) = Road(x,y)
Linked(x,z) = Linked(x,y) Road(y,z)
"""

MAIN = """\
import "lib/graph.fuse" as g
Edge(A, B)
Reach(x,y) = g::reach(Edge(x,y))
From(x) = g::Linked(Paris, x)
export Reach, From
"""


def write_lib(tmp_path, text=LIB):
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib" / "graph.fuse").write_text(text, encoding="utf-8")
    return (tmp_path / "lib" / "graph.fuse").as_uri()


async def wait_until(client, uri, check, timeout=WAIT_S):
    async def poll():
        while True:
            got = client.diagnostics.get(uri)
            if got is not None and check(got):
                return got
            await asyncio.sleep(0.02)
    return await asyncio.wait_for(poll(), timeout)


async def test_navigation_hover_and_completion_into_the_library(vscode, tmp_path):
    lib_uri = write_lib(tmp_path)
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    errors = [d for d in await wait_for_push(vscode, uri)
              if d.severity == types.DiagnosticSeverity.Error]
    assert errors == []
    doc = types.TextDocumentIdentifier(uri=uri)
    where = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=at(MAIN, "g::Linked", 4)))
    assert [(w.uri, w.range.start.line) for w in where] == [(lib_uri, 6), (lib_uri, 7)]
    assert where[0].range.start.character == 0 and where[0].range.end.character == 6
    to_file = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=at(MAIN, "lib/graph")))
    assert [(w.uri, w.range.start.line) for w in to_file] == [(lib_uri, 0)]
    fn = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=at(MAIN, "g::reach", 4)))
    assert [(w.uri, w.range.start.line) for w in fn] == [(lib_uri, 0)]
    shown = (await hover(vscode, uri, at(MAIN, "g::Linked", 4))).contents.value
    assert "g::Linked" in shown and "shape `(3, 3)`" in shown and "lib/graph.fuse:7" in shown
    text = MAIN + "Q(x) = g::"
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    items = await vscode.text_document_completion_async(types.CompletionParams(
        text_document=doc, position=types.Position(line=5, character=10)))
    items = items.items if hasattr(items, "items") else items
    assert {"Linked", "Road", "reach"} <= {i.label for i in items}
    assert "Edge" not in {i.label for i in items}


async def test_the_other_features_keep_to_the_document(vscode, tmp_path):
    write_lib(tmp_path)
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    await wait_for_push(vscode, uri)
    doc = types.TextDocumentIdentifier(uri=uri)
    last = MAIN.count("\n")
    symbols = await vscode.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc))
    assert all(s.range.end.line <= last for s in symbols or [])
    names = {c.name for s in symbols for c in ([s] + list(s.children or []))}
    assert not any(n.startswith("g::") for n in names), names  # the library's are its own
    tokens = await vscode.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc))
    lines = 0
    for k in range(0, len(tokens.data), 5):
        lines += tokens.data[k]
    assert lines == last - 1  # the last token is on the last line (export), none past it
    assert list(tokens.data[:3]) == [0, 0, 6]  # `import` first
    folds = await vscode.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=doc))
    assert all(f.end_line <= last for f in folds or [])
    hints = await vscode.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=doc, range=types.Range(types.Position(0, 0), types.Position(last, 0))))
    assert all(h.position.line <= last for h in hints or [])


async def test_references_and_rename_across_the_files(vscode, tmp_path):
    lib_uri = write_lib(tmp_path)
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    await wait_for_push(vscode, uri)
    doc = types.TextDocumentIdentifier(uri=uri)
    refs = await vscode.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=at(MAIN, "g::Linked", 4),
        context=types.ReferenceContext(include_declaration=True)))
    assert sorted((r.uri == lib_uri, r.range.start.line) for r in refs) == \
        [(False, 3), (True, 6), (True, 7), (True, 7)]
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc, position=at(MAIN, "g::Linked", 4), new_name="Connected"))
    mine = edit.changes[uri]
    assert [(e.range.start.character, e.range.end.character, e.new_text) for e in mine] == \
        [(13, 19, "Connected")]  # `g::Linked` keeps its namespace
    assert len(edit.changes[lib_uri]) == 3
    # from the library, opened: the importer on disk is renamed too
    lib = open_doc(vscode, tmp_path / "lib" / "graph.fuse", LIB)
    await wait_for_push(vscode, lib)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=types.TextDocumentIdentifier(uri=lib),
        position=at(LIB, "Linked(x,y) = Road"), new_name="Connected"))
    assert len(edit.changes[lib]) == 3
    (e,) = edit.changes[uri]
    assert (e.range.start.line, e.range.start.character, e.new_text) == (3, 13, "Connected")


async def test_the_importer_s_diagnostics_follow_the_library(vscode, tmp_path):
    write_lib(tmp_path)
    lib = open_doc(vscode, tmp_path / "lib" / "graph.fuse", LIB)
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    await wait_until(vscode, uri, lambda d: not any(
        x.severity == types.DiagnosticSeverity.Error for x in d))
    # an edit of the open library: `Linked` is gone, the importer's read of it is undefined
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=lib, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text=LIB.replace("Linked", "Connected"))]))
    got = await wait_until(vscode, uri, lambda d: any(x.code == "undefined-tensor" for x in d))
    assert "`Linked` is not defined in `lib/graph.fuse`" in [
        x for x in got if x.code == "undefined-tensor"][0].message
    # closed and broken on disk: a watched-file change brings the import's error
    vscode.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=lib)))
    write_lib(tmp_path, LIB + "Bad[i] = Nothing[i]\n")
    vscode.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=lib, type=types.FileChangeType.Changed)]))
    got = await wait_until(vscode, uri, lambda d: any(x.code == "import-error" for x in d))
    error = [x for x in got if x.code == "import-error"][0]
    assert error.range.start.line == 0 and "line 9" in error.message
    assert error.related_information[0].location.uri == lib
    assert error.related_information[0].location.range.start.line == 8
