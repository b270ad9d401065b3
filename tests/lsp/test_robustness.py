"""The server never crashes or stops answering, whatever the document holds or
however it is edited; opening and editing never runs anything."""
from __future__ import annotations

import random

from lsprotocol import types

from .conftest import open_doc, wait_for_push

ALPHABET = "XYZWijk'[](){}=+-*/^,.:;?#\"\n 0123456789@relusoftmax"
SEED_TEXT = """\
X[p,d] = const([[1, 2], [3, 4]])
Comp[p,p'.] = softmax(X[p,d] X[p',d] / 2)
"out.npy" = Comp[p,p']
export Comp
"""


def _edit(rng: random.Random, text: str) -> str:
    if text and rng.random() < 0.4:
        start = rng.randrange(len(text))
        return text[:start] + text[start + rng.randint(1, 8):]
    start = rng.randrange(len(text) + 1)
    piece = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6)))
    return text[:start] + piece + text[start:]


async def test_random_edits_never_stop_the_server(vscode, tmp_path):
    rng = random.Random(20261122)
    text = SEED_TEXT
    uri = open_doc(vscode, tmp_path / "fuzz.fuse", text)
    doc = types.TextDocumentIdentifier(uri=uri)
    for version in range(2, 62):
        text = _edit(rng, text)
        vscode.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        lines = text.split("\n")
        line = rng.randrange(len(lines))
        position = types.Position(line=line, character=rng.randrange(len(lines[line]) + 1))
        await vscode.text_document_hover_async(types.HoverParams(text_document=doc,
                                                                 position=position))
        await vscode.text_document_definition_async(types.DefinitionParams(
            text_document=doc, position=position))
    # still answering, with diagnostics for the last version (which may have come
    # while the last requests were answered: looked for among every push)
    diagnostics = await wait_for_push(vscode, uri, version=61)
    assert all(d.code for d in diagnostics)
    assert not (tmp_path / "out.npy").exists()  # nothing was run


async def test_positions_past_the_end_and_binary_looking_text(neovim, tmp_path):
    text = "\x01\x02 Y[i = ☃\n\t\t)))\n"
    uri = open_doc(neovim, tmp_path / "odd.fuse", text)
    doc = types.TextDocumentIdentifier(uri=uri)
    assert await neovim.text_document_hover_async(types.HoverParams(
        text_document=doc, position=types.Position(line=40, character=400))) is None
    report = await neovim.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=doc))
    assert report.items and all(d.code for d in report.items)


async def test_deep_nesting_and_a_huge_line(vscode, tmp_path):
    text = "Y = " + "(" * 5000 + "1" + ")" * 5000 + "\nZ = " + " + ".join(["1"] * 3000) + "\n"
    uri = open_doc(vscode, tmp_path / "deep.fuse", text)
    diagnostics = await wait_for_push(vscode, uri, version=1)
    assert "nesting-too-deep" in {d.code for d in diagnostics}
    result = await vscode.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=1, character=0)))
    assert result is not None and "Z" in result.contents.value
