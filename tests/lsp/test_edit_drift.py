"""No drift: after any sequence of incremental edits (valid positions and
positions past a line's or the document's end, CRLF and lone CR endings,
surrogate pairs, deletions across lines, statements that define and undefine
names) the diagnostics the server gives equal a fresh `fuse_lang.analyze` of
the same text: codes, ranges, messages and related places.  The server's
incremental analysis (one `Analyzer` per document) is compared after every few
edits, on the real server over stdio.  `benchmarks/edit_drift.py --edits N`
runs a longer campaign of the same edits."""
from __future__ import annotations

import asyncio
import random

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fuse_lang import analyze
from fuse_lsp.convert import Converter

from . import lsp_text, random_edits
from .conftest import SERVER, wait_for_push

EDITS = 600  # per run: five runs, 3,000 edits in all


async def _session(lsp_client: LanguageClient, tmp_path, encoding: str) -> None:
    capabilities = client_capabilities("neovim@v0.11.0")  # pull diagnostics
    kind = types.PositionEncodingKind.Utf8 if encoding == "utf-8" \
        else types.PositionEncodingKind.Utf16
    capabilities.general = types.GeneralClientCapabilities(position_encodings=[kind])
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    assert result.capabilities.position_encoding == kind


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def utf16(lsp_client: LanguageClient, tmp_path):
    await _session(lsp_client, tmp_path, "utf-16")
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def utf8(lsp_client: LanguageClient, tmp_path):
    await _session(lsp_client, tmp_path, "utf-8")
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def pushed(lsp_client: LanguageClient, tmp_path):
    """VS Code's capabilities (push diagnostics), the debounce off.  (Every push is
    kept, conftest.wait_for_push: waiting for the next notification would miss one
    that came while nothing waited, between two waits or during the edits.)"""
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri(),
        initialization_options={"debounceMs": 0}))
    yield lsp_client
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, rng: random.Random, seed: int) -> tuple[str, str, str]:
    """A random example opened beside the examples (never written: the server has
    the text), so that their data files are read as the examples' are."""
    text = random_edits.base_text(rng)
    path = random_edits.EXAMPLES / f"drift-{seed}.fuse"
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="fuse", version=1,
                                             text=text)))
    return text, str(path), uri


def _send(client: LanguageClient, uri: str, version: int, edit: random_edits.Edit) -> None:
    change: types.TextDocumentContentChangeEvent = \
        types.TextDocumentContentChangeWholeDocument(text=edit.text) \
        if edit.start is None or edit.end is None else types.TextDocumentContentChangePartial(
            range=types.Range(start=random_edits.position(edit.start),
                              end=random_edits.position(edit.end)), text=edit.text)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[change]))


def fresh(text: str, path: str, encoding: str) -> list[tuple]:
    """A fresh analysis' diagnostics of `text` as LSP would have them."""
    def at(offset: int) -> tuple[int, int]:
        position = lsp_text.position(text, offset, encoding)
        return position.line, position.character

    return sorted((d.code, *at(d.span.start), *at(d.span.end), d.message,
                   tuple((*at(r.span.start), *at(r.span.end), r.message) for r in d.related))
                  for d in analyze(text, path).diagnostics)


def served(items: list[types.Diagnostic]) -> list[tuple]:
    def at(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return sorted((d.code, *at(d.range.start), *at(d.range.end), d.message,
                   tuple((*at(r.location.range.start), *at(r.location.range.end), r.message)
                         for r in d.related_information or ()))
                  for d in items)


async def pulled(client: LanguageClient, uri: str) -> list[tuple]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return served(report.items)


async def campaign(client: LanguageClient, encoding: str, seed: int, edits: int,
                   out_of_range: bool = True) -> int:
    """`edits` random edits of one document, its diagnostics pulled after every
    few and compared with a fresh analysis; returns how many were compared."""
    rng = random.Random(seed)
    text, path, uri = _open(client, rng, seed)
    compared = 0
    pull_at = 0
    for step in range(edits):
        edit = random_edits.random_edit(rng, text, encoding, out_of_range)
        _send(client, uri, step + 2, edit)
        text = random_edits.apply(text, edit, encoding)
        if step >= pull_at or step == edits - 1:
            pull_at = step + rng.choice((1, 1, 2, 3, 5))
            assert await pulled(client, uri) == fresh(text, path, encoding), \
                (seed, step, edit, text)
            compared += 1
    return compared


@pytest.mark.parametrize("seed", range(3))
async def test_random_edits_in_utf16_positions_never_drift(utf16, seed):
    assert await campaign(utf16, "utf-16", seed, EDITS) > EDITS // 4


@pytest.mark.parametrize("seed", range(3, 5))
async def test_random_edits_in_utf8_positions_never_drift(utf8, seed):
    assert await campaign(utf8, "utf-8", seed, EDITS) > EDITS // 4


async def test_random_edits_never_drift_in_the_diagnostics_pushed(pushed):
    """The diagnostics pushed for the last version, the server having analysed some
    versions on the way and skipped others (pauses between the edits)."""
    rng = random.Random(5)
    text, path, uri = _open(pushed, rng, 5)
    version = 1
    for step in range(EDITS):
        edit = random_edits.random_edit(rng, text, "utf-16")
        version = step + 2
        _send(pushed, uri, version, edit)
        text = random_edits.apply(text, edit, "utf-16")
        if rng.random() < 0.2:
            await asyncio.sleep(rng.random() * 0.01)
    last = await wait_for_push(pushed, uri, version=version)
    assert served(last) == fresh(text, path, "utf-16"), text


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
def test_positions_out_of_range_are_clamped_as_lsp_says(encoding):
    """A character past its line's end is the line's end (before its "\\r\\n"), a
    line past the document's end is the document's end, a position between a
    surrogate pair's halves (or inside a UTF-8 sequence) is after the character:
    the server's copy (fuse_lsp.convert) and this test's (lsp_text) agree."""
    text = "a\U0001f600b\r\ncd\rx\n\u00e9"
    convert = Converter(text, encoding=encoding)
    for line, character in [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 99),
                            (0, random_edits.HUGE), (1, 2), (1, 3), (2, 9), (3, 0), (3, 1),
                            (3, 5), (4, 0), (9, random_edits.HUGE)]:
        position = types.Position(line=line, character=character)
        assert convert.offset(position) == lsp_text.offset(text, position, encoding), position
    at = lambda line, character: convert.offset(types.Position(line=line, character=character))  # noqa: E731
    assert at(0, 99) == at(0, random_edits.HUGE) == text.index("\r\n")
    assert at(1, 99) == text.index("\rx")
    assert at(4, 0) == at(9, 7) == len(text)
    assert at(0, 2) == 2  # inside the emoji (UTF-16: between its halves): after it
