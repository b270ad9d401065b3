"""Document formatting over stdio: one whole-document edit to the canonical
layout; nothing for a formatted document or one with syntax errors."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc

MESSY = """\
# weights   
X[p,d]="x.npy"   # input
H[p,e]=relu( W[e,d]X[p,d] )
M[e]max=H[p,e]


 
export H ,M
"""
FORMATTED = """\
# weights
X[p,d]  = "x.npy"  # input
H[p,e]  = relu(W[e,d] X[p,d])
M[e] max= H[p,e]


export H, M
"""


async def format_doc(client, tmp_path, text):
    uri = open_doc(client, tmp_path / "f.fuse", text)
    return await client.text_document_formatting_async(types.DocumentFormattingParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        options=types.FormattingOptions(tab_size=4, insert_spaces=True)))


async def test_one_edit_replaces_the_whole_document(vscode, tmp_path):
    (edit,) = await format_doc(vscode, tmp_path, MESSY)
    assert edit.new_text == FORMATTED
    assert edit.range == types.Range(start=types.Position(line=0, character=0),
                                     end=types.Position(line=8, character=0))


async def test_a_formatted_document_needs_no_edit(neovim, tmp_path):
    assert list(await format_doc(neovim, tmp_path, FORMATTED)) == []


async def test_a_document_with_syntax_errors_is_not_formatted(vscode, tmp_path):
    assert list(await format_doc(vscode, tmp_path, "Y[i]=W[i,j  X[j]\nZ = 1+\n")) == []


async def test_utf16_end_position(vscode, tmp_path):
    text = "# π ≈ 3.14 😀\nY=1"
    (edit,) = await format_doc(vscode, tmp_path, text)
    assert edit.new_text == "# π ≈ 3.14 😀\nY = 1\n"
    assert edit.range.end == types.Position(line=1, character=3)
