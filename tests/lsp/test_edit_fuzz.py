"""Random incremental edits full of line-ending look-alikes (\\r, \\r\\n, U+2028,
U+0085, \\v, \\f), NUL and non-ASCII, with hover and formatting requests between
them: the server's copy of the text stays the editor's, and its diagnostics are
exactly those of `fuse check` on the same text, in UTF-8 and UTF-16 positions."""
from __future__ import annotations

import contextlib
import io
import json
import random

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fuse_lang.cli import main as fuse_main
from fuse_lang.ide.formatting import format_text

from . import lsp_text
from .conftest import SERVER, open_doc
from .test_line_endings import fuse_check

SEED_TEXT = """\
axis i = 3
X[i] = const([1, 2, 3])  # \u00e9t\u00e9
Y[i] = X[i] + 1\r\nZ = reduce(+, Y[i])\rexport Z
"""
PIECES = ["\r", "\r\n", "\n", "\u2028", "\x85", "\x0b", "\x0c", "\u00e9", "\u2603",
          "\U0001d538", " ", "X", "Y[i]", "= ", "+ 1", "(", ")", "[", "]", "#", '"', ";",
          "W = X\n", "axis j = 2\r"]
NUL_EVERY = 40  # a NUL now and then (in the first 8 KB it makes the text "binary")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def utf16(lsp_client: LanguageClient, tmp_path):
    """Neovim's capabilities (pull diagnostics) with UTF-16 positions only."""
    capabilities = client_capabilities("neovim@v0.11.0")
    capabilities.general = types.GeneralClientCapabilities(
        position_encodings=[types.PositionEncodingKind.Utf16])
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


def _edit_range(rng: random.Random, text: str) -> tuple[int, int]:
    """Offsets an LSP position can name: not inside a "\\r\\n".  A NUL is soon
    taken out again: while there is one, the text is "binary" to both sides."""
    if "\x00" in text and rng.random() < 0.3:
        nul = text.index("\x00")
        return nul, nul + 1
    def at() -> int:
        while True:
            k = rng.randrange(len(text) + 1)
            if not (0 < k < len(text) and text[k - 1] == "\r" and text[k] == "\n"):
                return k
    start = at()
    end = start
    if text and rng.random() < 0.4:
        for _ in range(20):
            end = at()
            if start <= end <= start + 12:
                break
        else:
            end = start
    return start, end


def _piece(rng: random.Random, step: int) -> str:
    if step % NUL_EVERY == NUL_EVERY - 1:
        return "\x00"
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))


async def _pull(client, uri: str) -> list[tuple]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return lsp_text.lsp_diagnostics(report.items)


def _checked(path, text: str, encoding: str) -> list[tuple]:
    """`fuse check --format json` (in this process) of `text`, as LSP tuples."""
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fuse_main(["check", "--format", "json", str(path)])
    return lsp_text.check_json_as_lsp(text, json.loads(out.getvalue())["diagnostics"],
                                      encoding)


async def _fuzz(client, tmp_path, encoding: str, seed: int, steps: int = 400) -> None:
    rng = random.Random(seed)
    path = tmp_path / "fuzz.fuse"
    text = SEED_TEXT
    uri = open_doc(client, path, text)
    doc = types.TextDocumentIdentifier(uri=uri)
    for step in range(steps):
        start, end = _edit_range(rng, text)
        new = _piece(rng, step)
        range_ = types.Range(start=lsp_text.position(text, start, encoding),
                             end=lsp_text.position(text, end, encoding))
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=step + 2),
            content_changes=[types.TextDocumentContentChangePartial(range=range_, text=new)]))
        text = text[:start] + new + text[end:]
        if step % 3 == 0:
            await client.text_document_hover_async(types.HoverParams(
                text_document=doc, position=lsp_text.position(
                    text, rng.randrange(len(text) + 1), encoding)))
        if step % 5 == 0:  # formatting: its edit, applied, is the engine's layout
            edits = await client.text_document_formatting_async(types.DocumentFormattingParams(
                text_document=doc, options=types.FormattingOptions(tab_size=4,
                                                                   insert_spaces=True)))
            formatted = text
            for edit in reversed(edits or []):
                formatted = lsp_text.apply(formatted, edit.range, edit.new_text, encoding)
            assert formatted == format_text(text), (step, text)
        if step % 25 == 24:
            assert await _pull(client, uri) == _checked(path, text, encoding), (step, text)
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)
    expected = lsp_text.check_json_as_lsp(text, fuse_check(path), encoding)  # fuse-lsp --check
    assert await _pull(client, uri) == expected, text


async def test_random_edits_in_utf8_positions(neovim, tmp_path):
    await _fuzz(neovim, tmp_path, "utf-8", seed=20261124)


async def test_random_edits_in_utf16_positions(utf16, tmp_path):
    await _fuzz(utf16, tmp_path, "utf-16", seed=1919)
