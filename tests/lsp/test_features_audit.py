"""An audit of the server's features against what users expect of a good language
server (rust-analyzer, pyright, gopls), over stdio: selection ranges, document
links, call hierarchy, hovers on keywords and paths, path completion, references
of an `axis` name, renames refused with a reason, formatting of comments inside
blocks, and positions after non-ASCII text (UTF-16)."""
from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .conftest import open_doc


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def utf16(text: str, needle: str, delta: int = 0) -> types.Position:
    """The position of `needle` (plus `delta` characters) in UTF-16 code units."""
    offset = text.index(needle) + delta
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=text.count("\n", 0, offset),
                          character=len(text[start:offset].encode("utf-16-le")) // 2)


def spelled(text: str, range_: types.Range) -> str:
    """The text a range (UTF-16 columns) covers."""
    lines = text.split("\n")
    out = []
    for line in range(range_.start.line, range_.end.line + 1):
        units = lines[line].encode("utf-16-le")
        start = range_.start.character if line == range_.start.line else 0
        end = range_.end.character if line == range_.end.line else len(units) // 2
        out.append(units[2 * start:2 * end].decode("utf-16-le"))
    return "\n".join(out)


SELECT = """\
axis d = 2
X[d] = const([1, 2])
Tag("🎉 party", Bob)
Y[i] = relu(W[i,d] X[d] + 1)  # 🎉
W[i,d] = const([[1, 2], [3, 4]])
{
  let h[i] = 2 Y[i]
  Z[i] = h[i] when i > 0
}
export Z
"""


async def test_selection_ranges_grow_from_the_word_to_the_text(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "s.fuse", SELECT)
    found = await vscode.text_document_selection_range_async(types.SelectionRangeParams(
        text_document=doc(uri),
        positions=[utf16(SELECT, "d] X[d] +"), utf16(SELECT, "Bob", 1),
                   utf16(SELECT, "h[i] when"), utf16(SELECT, "# 🎉", 3)]))
    chains = []
    for first in found:
        chain, node = [], first
        while node is not None:
            chain.append(spelled(SELECT, node.range))
            node = node.parent
        chains.append(chain)
    assert chains[0][:-1] == ["d", "W[i,d]", "W[i,d] X[d]", "W[i,d] X[d] + 1",
                              "relu(W[i,d] X[d] + 1)", "Y[i] = relu(W[i,d] X[d] + 1)"]
    assert chains[1][:-1] == ["Bob", 'Tag("🎉 party", Bob)']
    assert chains[2][:-1] == ["h", "h[i]", "h[i] when i > 0", "Z[i] = h[i] when i > 0",
                              "{\n  let h[i] = 2 Y[i]\n  Z[i] = h[i] when i > 0\n}"]
    assert chains[3][:-1] == ["# 🎉"]
    assert all(chain[-1] == SELECT.rstrip("\n") + "\n" or chain[-1] == SELECT
               for chain in chains)


async def test_selection_ranges_in_a_broken_document_still_reach_the_text(vscode, tmp_path):
    text = "Y[i] = relu(\nZ = 1\n"
    uri = open_doc(vscode, tmp_path / "b.fuse", text)
    found = await vscode.text_document_selection_range_async(types.SelectionRangeParams(
        text_document=doc(uri), positions=[types.Position(0, 2), types.Position(5, 0)]))
    assert len(found) == 2  # one answer per position, whatever the text
    for first in found:
        node = first
        while node.parent is not None:
            node = node.parent
        assert node.range == types.Range(types.Position(0, 0), types.Position(2, 0))


BLOCK_COMMENTS = """\
X[i] = const([1, 2])
{  # a block
  let h[i]=2 X[i]
  # why h: doubled
  Y[i]=h[i]
}
fn f(a[i]) -> b[i] {
    # the body
  b[i] = a[i]
}
Z[i] = f(Y[i])
export Z
"""


async def test_a_comment_line_in_a_block_keeps_its_indentation(vscode, tmp_path):
    """A whole-line comment inside `{ }` was moved to column 1, out of its block."""
    uri = open_doc(vscode, tmp_path / "f.fuse", BLOCK_COMMENTS)
    options = types.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await vscode.text_document_formatting_async(types.DocumentFormattingParams(
        text_document=doc(uri), options=options))
    formatted = edits[0].new_text
    assert formatted.splitlines()[1:9] == [
        "{  # a block", "  let h[i] = 2 X[i]", "  # why h: doubled", "  Y[i] = h[i]", "}",
        "fn f(a[i]) -> b[i] {", "    # the body", "  b[i] = a[i]"]
    again = open_doc(vscode, tmp_path / "g.fuse", formatted)
    assert list(await vscode.text_document_formatting_async(types.DocumentFormattingParams(
        text_document=doc(again), options=options))) == []


LINKED = """\
import "lib/l.fuse" as lib
X[i,j] = "🎉 x.npy"
E(x,y) = source("e.tsv", header=0)
M[i] = "missing.npy"
Y[i] = lib::twice(X[i,j] E(i,j))
"out.npz" = Y[i]
export Y, M
"""


async def test_document_links_open_the_files_a_program_names(vscode, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "l.fuse").write_text("fn twice(a[i]) -> b[i] {\n  b[i] = 2 a[i]\n}\n")
    import numpy as np

    np.save(tmp_path / "🎉 x.npy", np.zeros((2, 2), np.float32))
    (tmp_path / "e.tsv").write_text("0\t1\n")
    uri = open_doc(vscode, tmp_path / "p.fuse", LINKED)
    links = await vscode.text_document_document_link_async(types.DocumentLinkParams(
        text_document=doc(uri)))
    found = [(spelled(LINKED, link.range), link.target, link.tooltip) for link in links]
    assert found == [
        ("lib/l.fuse", (tmp_path / "lib" / "l.fuse").as_uri(),
         "Open l.fuse: the file imported as `lib`"),
        ("🎉 x.npy", (tmp_path / "🎉 x.npy").as_uri(), "Open 🎉 x.npy: the data of `X`"),
        ("e.tsv", (tmp_path / "e.tsv").as_uri(), "Open e.tsv: the data of `E`")]
    # (the missing source and the sink not yet written name no file: no links)
    assert links[1].range == types.Range(types.Position(1, 10), types.Position(1, 18))


KEYWORDS = """\
X[i] = const([1, 2])
"🎉.npz" = X[i]; export X
let C = 2
"""


async def test_a_statement_keyword_has_a_hover(vscode, tmp_path):
    """A hover on `export`, `let`, ... showed nothing: it now tells what the word does
    (as completion does), on the word itself, after non-ASCII text too."""
    uri = open_doc(vscode, tmp_path / "k.fuse", KEYWORDS)
    found = await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=utf16(KEYWORDS, "export", 3)))
    assert spelled(KEYWORDS, found.range) == "export"
    assert found.range.start == types.Position(1, 17)
    assert found.contents.value == ("```fuse\nexport Y, Z\n```\n**keyword** · The program's "
                                    "outputs: what `run` returns and shows.")
    found = await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=utf16(KEYWORDS, "let")))
    assert spelled(KEYWORDS, found.range) == "let" and "A local tensor" in found.contents.value
    assert await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=utf16(KEYWORDS, "; export"))) is None


async def test_completion_at_a_statement_start_offers_import_and_train(vscode, tmp_path):
    text = KEYWORDS + "\n"
    uri = open_doc(vscode, tmp_path / "c.fuse", text)
    found = await vscode.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=types.Position(3, 0)))
    keywords = [item.label for item in found.items
                if item.kind == types.CompletionItemKind.Keyword]
    assert keywords == ["axis", "export", "fn", "import", "let", "param", "train"]


async def test_a_hover_on_a_path_names_its_file(vscode, tmp_path):
    """A hover on a source's or a sink's path showed nothing."""
    import numpy as np

    np.save(tmp_path / "🎉 x.npy", np.zeros((2, 3), np.float32))
    text = 'X[i,j] = "🎉 x.npy"\nM[i] = "missing.npy"\n"out.npz" = X[i,j]\nexport M\n'
    uri = open_doc(vscode, tmp_path / "p.fuse", text)

    async def hover(needle):
        return await vscode.text_document_hover_async(types.HoverParams(
            text_document=doc(uri), position=utf16(text, needle, 1)))

    found = await hover('"🎉 x.npy"')
    assert spelled(text, found.range) == '"🎉 x.npy"'
    assert found.contents.value == (f"`{tmp_path / '🎉 x.npy'}`\n\n**file** · the data of `X`, "
                                    "shape `(2, 3)`")
    assert (await hover('"missing')).contents.value.endswith("\n\nNo such file.")
    sink = (await hover('"out.npz')).contents.value
    assert sink == (f"`{tmp_path / 'out.npz'}`\n\n**file** · where this sink writes "
                    "(when a run may write sinks)")


FLOW = """\
A[i] = const([1, 2])  # 🎉
{ let h[i] = 2 A[i]; Y[i] = h[i] + A[i] }
Y[i] += A[i] Y2[i]
Y2[i] = A[i] A[i]
E("🎉", B)
Anc(x,y) = E(x,y)
Anc(x,z) = Anc(x,y) E(y,z)
export Y, Anc
"""


async def test_the_call_hierarchy_follows_the_dataflow(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "h.fuse", FLOW)

    async def prepare(needle):
        return await vscode.text_document_prepare_call_hierarchy_async(
            types.CallHierarchyPrepareParams(text_document=doc(uri),
                                             position=utf16(FLOW, needle)))

    def places(ranges):
        return [(r.start.line, r.start.character, spelled(FLOW, r)) for r in ranges]

    [a] = await prepare("A[i] =")
    assert (a.name, a.kind, a.detail) == ("A", types.SymbolKind.Variable, "[i:2]")
    assert spelled(FLOW, a.range) == "A[i] = const([1, 2])"
    assert spelled(FLOW, a.selection_range) == "A"
    readers = await vscode.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=a))
    assert [(call.from_.name, places(call.from_ranges)) for call in readers] == [
        ("h", [(1, 15, "A")]), ("Y", [(1, 35, "A"), (2, 8, "A")]),
        ("Y2", [(3, 8, "A"), (3, 13, "A")])]
    [h] = await prepare("h[i] +")
    assert spelled(FLOW, h.range) == "h[i] = 2 A[i]"  # a block's local, named as written
    assert [call.from_.name for call in await vscode.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=h))] == ["Y"]
    [y] = await prepare("Y, Anc")
    reads = await vscode.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item=y))
    assert [(call.to.name, places(call.from_ranges)) for call in reads] == [
        ("h", [(1, 28, "h")]), ("A", [(1, 35, "A"), (2, 8, "A")]), ("Y2", [(2, 13, "Y2")])]
    [anc] = await prepare("Anc(x,z)")
    assert anc.kind == types.SymbolKind.Boolean
    reads = await vscode.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item=anc))
    assert [(call.to.name, places(call.from_ranges)) for call in reads] == [
        ("E", [(5, 11, "E"), (6, 20, "E")]), ("Anc", [(6, 11, "Anc")])]  # recursive
    [e] = await prepare('E("🎉"')
    assert e.selection_range == types.Range(types.Position(4, 0), types.Position(4, 1))
    assert spelled(FLOW, e.range) == 'E("🎉", B)'
    assert not await prepare("const")  # a builtin is no node of the dataflow


async def test_completion_of_the_path_of_an_import_a_source_and_a_sink(vscode, tmp_path):
    """Inside a path's quotes completion offered nothing: it now lists the folder the
    path names so far (folders, and the files such a path may name), replacing the
    part after the last `/`; a string that is a constant gets nothing."""
    (tmp_path / "data").mkdir()
    (tmp_path / "lib").mkdir()
    for name in ("data/🎉 w.npy", "data/edges.tsv", "data/notes.md", "lib/g.fuse", "x.npy",
                 ".hidden.npy"):
        (tmp_path / name).write_text("")
    text = ('import "li"\nW[i,j] = "data/"\nE(x,y) = source("data/e")\nLikes("an", x)?\n'
            'Y[i] = W[i,i]\n"da" = Y[i]\n')
    uri = open_doc(vscode, tmp_path / "p.fuse", text)

    async def complete(needle, delta):
        found = await vscode.text_document_completion_async(types.CompletionParams(
            text_document=doc(uri), position=utf16(text, needle, delta)))
        return [(item.label, item.kind, spelled(text, item.text_edit.range))
                for item in found.items]

    folder, file = types.CompletionItemKind.Folder, types.CompletionItemKind.File
    assert await complete('"li"', 3) == [("lib/", folder, "li")]
    assert await complete('"data/"', 6) == [("edges.tsv", file, ""), ("🎉 w.npy", file, "")]
    assert await complete('"data/e"', 7) == [("edges.tsv", file, "e")]
    assert await complete('"da" =', 3) == [("data/", folder, "da")]
    top = await complete('"data/"', 1)  # (a hidden file only when its `.` is typed)
    assert top == [("data/", folder, ""), ("lib/", folder, ""), ("x.npy", file, "")]
    found = await vscode.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=utf16(text, '"an"', 2)))
    assert list(found.items) == []  # a relation's constant is no path


AXES = """\
axis d = 2, e = 3  # 🎉
X[d,e] = const([[1, 2, 3], [4, 5, 6]])
Y[d] = X[d,e]
Z[e'] = X[d,e']
export Y, Z
"""


async def test_references_of_an_axis_declaration_are_its_indices(neovim, tmp_path):
    """References and highlights on an `axis` declaration's name found nothing: they are
    every index of that name (the extent it gives); no rename starts there."""
    uri = open_doc(neovim, tmp_path / "a.fuse", AXES)
    position = utf16(AXES, "d = 2")
    found = await neovim.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=position,
        context=types.ReferenceContext(include_declaration=True)))
    assert [(r.range.start.line, r.range.start.character, spelled(AXES, r.range))
            for r in found] == [(0, 5, "d"), (1, 2, "d"), (2, 2, "d"), (2, 9, "d"),
                                (3, 10, "d")]
    found = await neovim.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=utf16(AXES, "e = 3"),
        context=types.ReferenceContext(include_declaration=False)))
    assert [(r.range.start.line, r.range.start.character) for r in found] == [(1, 4), (2, 11)]
    marks = await neovim.text_document_document_highlight_async(types.DocumentHighlightParams(
        text_document=doc(uri), position=position))
    assert [(m.range.start.line, m.kind) for m in marks][:2] == [
        (0, types.DocumentHighlightKind.Write), (1, types.DocumentHighlightKind.Read)]
    definition = await neovim.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=utf16(AXES, "e = 3")))
    assert [(d.range.start.line, d.range.start.character) for d in definition] == [(0, 12)]
    assert await neovim.text_document_prepare_rename_async(types.PrepareRenameParams(
        text_document=doc(uri), position=position)) is None
    hover = await neovim.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=position))
    assert "**axis** · extent **2**" in hover.contents.value


async def test_selection_ranges_of_an_import(vscode, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "l.fuse").write_text("fn twice(a[i]) -> b[i] {\n  b[i] = 2 a[i]\n}\n")
    text = 'import "lib/l.fuse" as lib\nX[i] = const([1, 2])\nY[i] = lib::twice(X[i])\n' \
        'export Y\n'
    uri = open_doc(vscode, tmp_path / "i.fuse", text)
    [found] = await vscode.text_document_selection_range_async(types.SelectionRangeParams(
        text_document=doc(uri), positions=[utf16(text, "l.fuse")]))
    chain = []
    while found is not None:
        chain.append(spelled(text, found.range))
        found = found.parent
    assert chain[:2] == ['"lib/l.fuse"', 'import "lib/l.fuse" as lib'] and len(chain) == 3


EMOJI_LINE = 'X[i] = const([1, 2])\n"🎉 out.npy" = X[i]; Y[i] = X[i] + 1\nexport Y\n'


async def test_places_after_an_emoji_on_the_same_line_count_utf16_units(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "u.fuse", EMOJI_LINE)
    position = utf16(EMOJI_LINE, "X[i] + 1")
    assert position == types.Position(1, 28)  # (27 characters, the emoji two units)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=position, new_name="Xs"))
    assert sorted((e.range.start.line, e.range.start.character, e.range.end.character)
                  for e in edit.changes[uri]) == [(0, 0, 1), (1, 15, 16), (1, 28, 29)]
    marks = await vscode.text_document_document_highlight_async(types.DocumentHighlightParams(
        text_document=doc(uri), position=utf16(EMOJI_LINE, "Y[i] =")))
    assert [spelled(EMOJI_LINE, m.range) for m in marks] == ["Y", "Y"]
    tokens = await vscode.text_document_semantic_tokens_range_async(
        types.SemanticTokensRangeParams(text_document=doc(uri), range=types.Range(
            types.Position(1, 0), types.Position(2, 0))))
    starts, line, column = [], 0, 0  # (LSP's relative encoding: from line 0, column 0)
    for k in range(0, len(tokens.data), 5):
        delta_line, delta_start, length = tokens.data[k:k + 3]
        line, column = line + delta_line, delta_start if delta_line else column + delta_start
        starts.append((column, spelled(EMOJI_LINE, types.Range(
            types.Position(line, column), types.Position(line, column + length)))))
    assert starts == [(0, '"🎉 out.npy"'), (15, "X"), (17, "i"), (21, "Y"), (23, "i"),
                      (28, "X"), (30, "i"), (35, "1")]


async def test_a_rename_on_a_builtin_or_an_axis_name_says_why_not(vscode, tmp_path):
    """A rename on a builtin answered nothing (a client without prepareRename then
    says nothing either): it is refused with the reason, as a bad new name is."""
    text = "axis d = 2\nX[d] = const([1, 2])\nY[d] = relu(X[d])\nexport Y\n"
    uri = open_doc(vscode, tmp_path / "r.fuse", text)
    for needle, why in (("relu", "`relu` is a builtin: it cannot be renamed"),
                        ("d = 2", "`axis d` gives its extent to every index named `d`")):
        assert await vscode.text_document_prepare_rename_async(types.PrepareRenameParams(
            text_document=doc(uri), position=utf16(text, needle))) is None
        with pytest.raises(JsonRpcException) as raised:
            await vscode.text_document_rename_async(types.RenameParams(
                text_document=doc(uri), position=utf16(text, needle), new_name="q"))
        assert why in str(raised.value)
    assert await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=utf16(text, "export"), new_name="q")) is None


async def test_the_new_requests_answer_empty_for_what_they_cannot_read(vscode, tmp_path):
    """A document that is not open and has no file, an item the client made up."""
    gone = (tmp_path / "gone.fuse").as_uri()
    assert list(await vscode.text_document_document_link_async(types.DocumentLinkParams(
        text_document=doc(gone)))) == []
    assert list(await vscode.text_document_selection_range_async(types.SelectionRangeParams(
        text_document=doc(gone), positions=[types.Position(0, 0)]))) == []
    uri = open_doc(vscode, tmp_path / "o.fuse", FLOW)
    here = types.Range(types.Position(0, 0), types.Position(0, 1))
    for item in (types.CallHierarchyItem(name="A", kind=types.SymbolKind.Variable, uri=gone,
                                         range=here, selection_range=here),
                 types.CallHierarchyItem(name="Nope", kind=types.SymbolKind.Variable, uri=uri,
                                         range=here, selection_range=here, data=[1, "x"])):
        assert list(await vscode.call_hierarchy_incoming_calls_async(
            types.CallHierarchyIncomingCallsParams(item=item))) == []
        assert list(await vscode.call_hierarchy_outgoing_calls_async(
            types.CallHierarchyOutgoingCallsParams(item=item))) == []
    # an item without the server's data: its name as shown
    item = types.CallHierarchyItem(name="Y2", kind=types.SymbolKind.Variable, uri=uri,
                                   range=here, selection_range=here)
    reads = await vscode.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item=item))
    assert [call.to.name for call in reads] == ["A"]


async def test_declaration_is_the_definition_and_conditions_complete_indices_first(
        neovim, tmp_path):
    text = "A[i,j] = const([[1, 2], [3, 4]])\nZ[i] = A[i,i]\nY[i] = A[i,j] when \nexport Z\n"
    uri = open_doc(neovim, tmp_path / "d.fuse", text)
    found = await neovim.text_document_declaration_async(types.DeclarationParams(
        text_document=doc(uri), position=utf16(text, "A[i,i]")))
    assert [(d.range.start.line, d.range.start.character) for d in found] == [(0, 0)]
    items = await neovim.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=utf16(text, "when ", 5)))
    assert [item.label for item in items.items][:3] == ["i", "j", "A"]


async def test_a_utf8_client_gets_links_and_selections_in_bytes(utf8, tmp_path):
    (tmp_path / "🎉 x.npy").write_bytes(b"")
    text = 'X[i,j] = "🎉 x.npy"  # é\nexport X\n'
    uri = open_doc(utf8, tmp_path / "u.fuse", text)
    [link] = await utf8.text_document_document_link_async(types.DocumentLinkParams(
        text_document=doc(uri)))
    assert link.range == types.Range(types.Position(0, 10), types.Position(0, 20))
    assert link.tooltip is None  # (Neovim shows none: LSP's documentLink.tooltipSupport)
    [found] = await utf8.text_document_selection_range_async(types.SelectionRangeParams(
        text_document=doc(uri), positions=[types.Position(0, 24)]))  # in the comment
    assert found.range == types.Range(types.Position(0, 23), types.Position(0, 27))
