"""`let`, blocks, `&& || !` and expression arguments over stdio (issue 33): a read
of a local outside its block is `local-out-of-scope` at the read; hover on a local
shows its shape under the name as written; definition, references and rename stay
in the block; the outline and completion outside the block leave locals out."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc, wait_for_push
from .test_hover import at, hover

PROGRAM = """\
X[i] = const([1,2,3,4])
{
  let h[i] = 2 X[i]
  Y[i] = h[i] + 1 when i > 0 && !(i == 2)
}
{ let h[i] = X[i] - 1; Z[i] = h[i] (i < 1 || i > 2) }
let S = 3
Out[i] = S Y[i]
export Out, Z
"""


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def test_a_program_with_blocks_and_conditions_is_clean(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "a.fuse", PROGRAM)
    assert list(await wait_for_push(vscode, uri)) == []


async def test_every_diagnostic_of_locals_lands_on_the_text(vscode, tmp_path):
    text = PROGRAM + "W[i] = h[i]\nh2[i] = X[i]\n{ let h2[i] = X[i]; V[i] = h2[i] }\n" \
        "export S, W, V\n"
    uri = open_doc(vscode, tmp_path / "b.fuse", text)
    diags = await wait_for_push(vscode, uri)
    found = sorted((d.code, d.range.start.line, d.range.start.character) for d in diags
                   if d.code in ("local-out-of-scope", "let-redefined", "local-export"))
    assert found == [("let-redefined", 11, 6), ("local-export", 12, 7),
                     ("local-out-of-scope", 9, 7)]
    scope = next(d for d in diags if d.code == "local-out-of-scope")
    assert "`h` is local to the block at line 2" in scope.message
    assert scope.related_information[0].location.range.start.line == 1


async def test_hover_definition_references_and_rename_of_a_local(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "c.fuse", PROGRAM)
    assert list(await wait_for_push(vscode, uri)) == []
    text = (await hover(vscode, uri, at(PROGRAM, "h[i] + 1"))).contents.value
    assert text.startswith("```fuse\nh[i:4]")
    assert "Local to the block at line 2" in text and "@let" not in text
    where = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(PROGRAM, "h[i] + 1")))
    (location,) = where if isinstance(where, list) else [where]
    assert location.range.start == types.Position(line=2, character=6)
    refs = await vscode.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=at(PROGRAM, "h[i] + 1"),
        context=types.ReferenceContext(include_declaration=True)))
    assert sorted(r.range.start.line for r in refs) == [2, 3]  # not the other block's h
    prepared = await vscode.text_document_prepare_rename_async(types.PrepareRenameParams(
        text_document=doc(uri), position=at(PROGRAM, "h[i] + 1")))
    assert prepared.placeholder == "h"
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(PROGRAM, "h[i] + 1"), new_name="hidden"))
    assert sorted((e.range.start.line, e.range.start.character) for e in edit.changes[uri]) \
        == [(2, 6), (3, 9)]


async def test_outline_and_completion_leave_block_locals_out(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "d.fuse", PROGRAM)
    assert list(await wait_for_push(vscode, uri)) == []
    groups = await vscode.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=doc(uri)))
    names = [c.name for g in groups for c in g.children]
    assert sorted(names) == ["Out", "S", "X", "Y", "Z"]
    outside = await vscode.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=at(PROGRAM, "S Y[i]")))
    labels = [item.label for item in outside.items]
    assert "X" in labels and "h" not in labels and not any("@" in label for label in labels)
    inside = await vscode.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=at(PROGRAM, "h[i] + 1")))
    assert "h" in [item.label for item in inside.items]


async def test_an_expression_argument_of_a_function(vscode, tmp_path):
    text = """\
fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }
X = const([1,2])
Y[i] = dbl(X[i] + 1)
Z[i] = dbl(relu(X[j] X[i]))
export Y, Z
"""
    uri = open_doc(vscode, tmp_path / "e.fuse", text)
    diags = await wait_for_push(vscode, uri)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diags] == [
        ("fn-rank", 3, 11)]
    assert "an expression over 2 indices (j, i)" in diags[0].message
