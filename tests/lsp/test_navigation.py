"""Go to definition, references, highlights and rename over stdio."""
from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .conftest import open_doc
from .test_hover import at

PROGRAM = """\
A[i,j] = const([[1, 2], [3, 4]])
B[j] = const([1, 1])
Y[i] = relu(A[i,j] B[j])
Y[i] += A[i,i]
export Y
"""


def doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


def starts(locations):
    return [(loc.range.start.line, loc.range.start.character) for loc in locations]


async def test_definition_of_a_tensor_and_of_an_index(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "n.fuse", PROGRAM)
    found = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(PROGRAM, "A[i,j] B")))
    assert starts(found) == [(0, 0)]
    found = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(PROGRAM, "export Y", 7)))
    assert starts(found) == [(2, 0), (3, 0)]
    found = await vscode.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(PROGRAM, "i,j] B")))
    assert starts(found) == [(2, 2)]  # the LHS occurrence of this equation's i


async def test_references_with_and_without_the_declaration(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "n.fuse", PROGRAM)
    position = at(PROGRAM, "B[j])")
    every = await neovim.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=position,
        context=types.ReferenceContext(include_declaration=True)))
    assert starts(every) == [(1, 0), (2, 19)]
    uses = await neovim.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=position,
        context=types.ReferenceContext(include_declaration=False)))
    assert starts(uses) == [(2, 19)]


async def test_rename_a_tensor_everywhere(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "n.fuse", PROGRAM)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(PROGRAM, "Y[i] +="), new_name="Out"))
    ranges = sorted((e.range.start.line, e.range.start.character, e.range.end.character)
                    for e in edit.changes[uri])
    assert ranges == [(2, 0, 1), (3, 0, 1), (4, 7, 8)]
    assert {e.new_text for e in edit.changes[uri]} == {"Out"}


async def test_rename_an_index_stays_in_its_equation(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "n.fuse", PROGRAM)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(PROGRAM, "j] B"), new_name="k"))
    assert sorted((e.range.start.line, e.range.start.character)
                  for e in edit.changes[uri]) == [(2, 16), (2, 21)]


@pytest.mark.parametrize("where, new, why", [
    ("Y[i] +=", "A", "`A` is already defined: renaming `Y` to it would merge the two"),
    ("Y[i] +=", "relu", "`relu` is a builtin"),
    ("Y[i] +=", "export", "`export` is a keyword"),
    ("Y[i] +=", "1Y", "`1Y` is not a name"),
    ("j] B", "i", "`i` is already an index of this equation"),
    ("j] B", "B", "an index variable starts with a lowercase letter"),
])
async def test_a_rename_that_would_change_the_meaning_is_refused(vscode, tmp_path, where, new,
                                                                  why):
    """Renaming `Y` to `A` merged two tensors, `j` to `i` two indices, without a
    word: the server answers the rename with an error that says why."""
    uri = open_doc(vscode, tmp_path / "n.fuse", PROGRAM)
    with pytest.raises(JsonRpcException) as raised:
        await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(uri), position=at(PROGRAM, where), new_name=new))
    assert why in str(raised.value)


async def test_prepare_rename_and_highlights(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "n.fuse", PROGRAM)
    prepared = await neovim.text_document_prepare_rename_async(types.PrepareRenameParams(
        text_document=doc(uri), position=at(PROGRAM, "B[j])")))
    assert prepared.placeholder == "B"
    assert await neovim.text_document_prepare_rename_async(types.PrepareRenameParams(
        text_document=doc(uri), position=at(PROGRAM, "relu"))) is None
    marks = await neovim.text_document_document_highlight_async(types.DocumentHighlightParams(
        text_document=doc(uri), position=at(PROGRAM, "B[j])")))
    assert [(m.range.start.line, m.kind) for m in marks] == [
        (1, types.DocumentHighlightKind.Write), (2, types.DocumentHighlightKind.Read)]
