"""A document with a NUL in its first 8 KB is what `fuse check` calls a binary
file: the editor shows the one diagnostic the CLI prints, at the same place."""
from __future__ import annotations

from lsprotocol import types

from . import lsp_text
from .conftest import open_doc
from .test_line_endings import UTF8, fuse_check


async def _diagnostics(client, uri: str) -> list[types.Diagnostic]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return report.items


async def test_nul_gives_the_diagnostics_fuse_check_gives(neovim, tmp_path):
    cases = {
        "early.fuse": "X = const(1)\n\u00e9 = X\x00\x00 Y Z ]]] \x01\x02\n" * 5,
        "late.fuse": "X = const(1)\n" + "# pad \u00e9\n" * 1200 + "Y = X\x00\n",  # past 8 KB
    }
    for name, text in cases.items():
        path = tmp_path / name
        uri = open_doc(neovim, path, text)
        expected = lsp_text.check_json_as_lsp(text, fuse_check(path), UTF8)
        assert lsp_text.lsp_diagnostics(await _diagnostics(neovim, uri)) == expected, name
    early = lsp_text.lsp_diagnostics(await _diagnostics(neovim, (tmp_path / "early.fuse")
                                                        .as_uri()))
    assert [d[0] for d in early] == ["invalid-encoding"]
