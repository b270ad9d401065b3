"""`fn` functions over stdio (issue 33): a mistake inside a call's body lands at
the call with the body line as related information; hover on a call shows the
function's signature and the call's shape; go to definition and references work
on a function's name."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc, wait_for_push
from .test_hover import at, hover

PROGRAM = """\
fn mm(a[i,k], b[k,j]) -> c[i,j] {
  c[i,j] = a[i,k] b[k,j]
}
A = const([[1,2,3],[3,4,5]])
B = const([[5,6],[7,8],[9,10]])
Y[i,j] = mm(A[i,k], B[k,j])
Z[i,j] = mm(Y[i,k], Y[k,j]) when (Y[i,j] > 40)
export Y, Z
"""

BAD = PROGRAM.replace("B = const([[5,6],[7,8],[9,10]])", "B = const([[5,6],[7,8]])")


async def test_a_mistake_in_a_body_lands_at_the_call_with_the_body_line(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "f.fuse", BAD)
    diags = await wait_for_push(vscode, uri)
    conflicts = [d for d in diags if d.code == "extent-conflict"]
    assert conflicts, [(d.code, d.message) for d in diags]
    diag = conflicts[0]
    assert diag.range.start.line == 5  # the call `Y[i,j] = mm(A[i,k], B[k,j])`
    lines = {(r.location.range.start.line, r.message) for r in diag.related_information}
    assert (1, "in `fn mm`, inlined at this call") in lines


async def test_hover_definition_and_references_of_a_function(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "g.fuse", PROGRAM)
    assert list(await wait_for_push(vscode, uri)) == []
    result = await hover(vscode, uri, at(PROGRAM, "mm(A[i,k]"))
    text = result.contents.value
    assert "fn mm(a[i,k], b[k,j]) -> c[i,j]" in text
    assert "shape (2, 2)" in text
    doc = types.TextDocumentIdentifier(uri=uri)
    where = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=at(PROGRAM, "mm(Y[i,k]")))
    (location,) = where if isinstance(where, list) else [where]
    assert location.range.start == types.Position(line=0, character=3)
    refs = await vscode.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=at(PROGRAM, "mm(a"),
        context=types.ReferenceContext(include_declaration=True)))
    assert sorted(r.range.start.line for r in refs) == [0, 5, 6]
