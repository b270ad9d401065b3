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


# Range formatting ("Format Selection"; format-on-paste): the lines of the range
# take their canonical layout, every other line stays as it was.

async def format_range(client, tmp_path, text, start, end):
    uri = open_doc(client, tmp_path / "r.fuse", text)
    return await client.text_document_range_formatting_async(
        types.DocumentRangeFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(*start), end=types.Position(*end)),
            options=types.FormattingOptions(tab_size=4, insert_spaces=True)))


def applied(text: str, edits) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        start = offsets[edit.range.start.line] + edit.range.start.character
        end = offsets[edit.range.end.line] + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
    return text


async def test_a_range_formats_its_lines_and_no_other(vscode, tmp_path):
    # the cursor on line 2 (an empty selection) formats that line only
    edits = await format_range(vscode, tmp_path, MESSY, (2, 4), (2, 4))
    assert applied(MESSY, edits) == MESSY.replace("H[p,e]=relu( W[e,d]X[p,d] )",
                                                  "H[p,e]  = relu(W[e,d] X[p,d])")
    # lines 1-3, the selection ending at the start of line 4 (which it does not take)
    edits = await format_range(vscode, tmp_path, MESSY, (1, 0), (4, 0))
    lines = applied(MESSY, edits).split("\n")
    assert lines[1:4] == FORMATTED.split("\n")[1:4]
    assert lines[0] == "# weights   "  # (its trailing spaces: not selected)
    assert lines[4:] == MESSY.split("\n")[4:]  # the blank lines kept


async def test_a_range_over_the_whole_text_formats_as_the_document(neovim, tmp_path):
    edits = await format_range(neovim, tmp_path, MESSY, (0, 0), (8, 0))
    assert applied(MESSY, edits) == FORMATTED
    assert len(edits) > 1  # a line at a time: the cursor and marks elsewhere stay put


async def test_a_run_of_blank_lines_is_shortened_only_when_selected(vscode, tmp_path):
    edits = await format_range(vscode, tmp_path, MESSY, (5, 0), (6, 1))
    assert applied(MESSY, edits) == MESSY.replace("\n\n\n \n", "\n\n\n")


async def test_a_formatted_range_and_one_with_syntax_errors_need_no_edit(vscode, tmp_path):
    assert list(await format_range(vscode, tmp_path, FORMATTED, (0, 0), (8, 0))) == []
    broken = "Y[i]=W[i]\nZ = 1+\n"
    assert list(await format_range(vscode, tmp_path, broken, (0, 0), (0, 3))) == []


async def test_range_positions_are_utf16(vscode, tmp_path):
    text = "# π 😀\nY=1\nZ=2 # 😀\nW=3\n"
    edits = await format_range(vscode, tmp_path, text, (2, 6), (2, 6))
    assert [(e.range.start, e.range.end, e.new_text) for e in edits] == [
        (types.Position(2, 0), types.Position(3, 0), "Z = 2  # 😀\n")]
