"""A 5,000-digit number in the editor (issue 19): the document gets its
diagnostics, the number's with its range, and every feature still answers."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc

DIGITS = "9" * 5000
TEXT = f"axis i = 3\nparam X[i]\nY = X[{DIGITS}]\nZ[i] = X[i] + Xq[i]\nexport Z\n"


async def test_a_huge_number_gets_a_diagnostic_and_the_rest_is_checked(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "huge.fuse", TEXT)
    report = await neovim.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    by_code = {d.code: d for d in report.items}
    assert set(by_code) == {"number-too-long", "undefined-tensor"}
    assert by_code["number-too-long"].range == types.Range(
        start=types.Position(line=2, character=6), end=types.Position(line=2, character=5006))
    hover = await neovim.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=3, character=0)))
    assert hover is not None and "Z" in hover.contents.value
