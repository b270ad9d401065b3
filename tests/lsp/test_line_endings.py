"""Lines end where LSP says (\\n, \\r\\n, \\r) in the server's copy of a document,
in the engine and in formatting: not at U+2028, U+0085, \\v or \\f."""
from __future__ import annotations

import json
import subprocess
import sys

from lsprotocol import types

from . import lsp_text
from .conftest import open_doc

UTF8 = "utf-8"  # the position encoding the Neovim profile agrees on


def _change(client, uri: str, version: int, range_: types.Range, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=range_, text=text)]))


async def _formatted(client, uri: str, text: str) -> str:
    edits = await client.text_document_formatting_async(types.DocumentFormattingParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        options=types.FormattingOptions(tab_size=4, insert_spaces=True)))
    for edit in reversed(edits or []):
        text = lsp_text.apply(text, edit.range, edit.new_text, UTF8)
    return text


async def _pulled(client, uri: str) -> list[types.Diagnostic]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return report.items


def fuse_check(path) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "fuse_lsp", "--check", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout)["diagnostics"]


async def test_an_insert_after_a_line_separator_lands_where_the_editor_put_it(neovim, tmp_path):
    # the case: pygls split lines at U+2028 and formatting reordered them
    text = "# a\u2028b\nX = const(1)\nY = X\nZ  =  Y\n"
    uri = open_doc(neovim, tmp_path / "sep.fuse", text)
    at = types.Position(line=3, character=0)
    _change(neovim, uri, 2, types.Range(start=at, end=at), "W = Y\n")
    text = lsp_text.apply(text, types.Range(start=at, end=at), "W = Y\n", UTF8)
    assert await _formatted(neovim, uri, text) == \
        "# a\u2028b\nX = const(1)\nY = X\nW = Y\nZ = Y\n"


async def test_edits_around_every_odd_separator(neovim, tmp_path):
    text = "X = const(1) # \x85 \x0b \x0c end\nY = X\r\nZ = Y\rW  =  Z\n"
    uri = open_doc(neovim, tmp_path / "odd.fuse", text)
    for version, (line, character, new) in enumerate(
            [(2, 0, "V = W\r"), (1, 5, " "), (0, 15, "\u2028")], start=2):
        at = types.Position(line=line, character=character)
        _change(neovim, uri, version, types.Range(start=at, end=at), new)
        text = lsp_text.apply(text, types.Range(start=at, end=at), new, UTF8)
    assert await _formatted(neovim, uri, text) == \
        "X = const(1)  # \u2028\x85 \x0b \x0c end\r\nY = X\r\nV = W\r\nZ = Y\r\nW = Z\r\n"
    assert not await _pulled(neovim, uri)


async def test_a_file_of_lone_carriage_returns_is_three_statements(neovim, tmp_path):
    text = "X = const(1)\rY  =  X\rZ = Y + Q\r"
    path = tmp_path / "cr.fuse"
    uri = open_doc(neovim, path, text)
    diags = await _pulled(neovim, uri)
    assert [(d.code, d.range.start.line) for d in diags] == [("undefined-tensor", 2)]
    assert [(d["code"], d["line"]) for d in fuse_check(path)] == [("undefined-tensor", 3)]
    path.write_bytes(b"X = const(1)\rY  =  X\rZ = Y\r")
    assert fuse_check(path) == []
    text = path.read_text(encoding="utf-8", newline="") if sys.version_info >= (3, 13) \
        else path.read_bytes().decode()
    uri = open_doc(neovim, tmp_path / "cr2.fuse", text)
    assert await _formatted(neovim, uri, text) == "X = const(1)\rY = X\rZ = Y\r"


async def test_a_range_ending_after_a_carriage_return_is_the_same_in_any_script(neovim,
                                                                              tmp_path):
    # an unterminated string runs to its line's end, the "\r" of "\r\n" with it
    ascii_uri = open_doc(neovim, tmp_path / "a.fuse", 'e = 1\r\nX = "abc\r\n')
    wide_uri = open_doc(neovim, tmp_path / "b.fuse", '\u00e9 = 1\r\nX = "abc\r\n')
    ranges = []
    for uri in (ascii_uri, wide_uri):
        [diag] = [d for d in await _pulled(neovim, uri) if d.code == "unterminated-string"]
        ranges.append(diag.range)
    assert ranges[0] == ranges[1]
    assert ranges[1].end == types.Position(line=1, character=9)
    path = tmp_path / "b.fuse"
    [found] = [d for d in fuse_check(path) if d["code"] == "unterminated-string"]
    assert (found["end_line"], found["end_column"]) == (2, 10)
