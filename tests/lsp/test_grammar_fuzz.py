"""Programs generated from the grammar (benchmarks/grammar_fuzz.py) through the
language server over stdio: each is opened, its diagnostics pulled, and hover,
completion, signature help, semantic tokens, outline, folding, inlay hints,
formatting, code actions, `fuse.explain` and `fuse.run` asked of it.  No request fails and nothing is
logged as an error (the server logs an escaping exception with its traceback)."""
from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError

from .conftest import open_doc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import grammar_fuzz  # noqa: E402

PROGRAMS = 200


def _positions(text: str, seed: int) -> list[types.Position]:
    lines = text.split("\n")
    picked = [(0, 0), (len(lines) - 1, len(lines[-1]))]
    for k in range(3):
        line = (seed * 7 + k * 3) % len(lines)
        picked.append((line, (seed * 13 + k * 5) % (len(lines[line]) + 1)))
    return [types.Position(line=a, character=b) for a, b in picked]


async def _ask(client, uri: str, text: str, seed: int) -> bool:
    """Every request of one document; whether `fuse.run` ran it."""
    doc = types.TextDocumentIdentifier(uri=uri)
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=doc))
    for position in _positions(text, seed):
        await client.text_document_hover_async(types.HoverParams(text_document=doc,
                                                                 position=position))
        await client.text_document_completion_async(types.CompletionParams(
            text_document=doc, position=position))
        await client.text_document_signature_help_async(types.SignatureHelpParams(
            text_document=doc, position=position))
    await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(
        text_document=doc))
    await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=doc))
    await client.text_document_folding_range_async(types.FoldingRangeParams(text_document=doc))
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=text.count("\n") + 1, character=0))
    await client.text_document_inlay_hint_async(types.InlayHintParams(text_document=doc,
                                                                      range=whole))
    await client.text_document_formatting_async(types.DocumentFormattingParams(
        text_document=doc, options=types.FormattingOptions(tab_size=4, insert_spaces=True)))
    await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=whole,
        context=types.CodeActionContext(diagnostics=list(report.items))))
    done = None
    for command in ("fuse.explain", "fuse.run"):  # refused in words, or done
        try:
            done = await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command=command, arguments=[uri]))
        except JsonRpcInternalError:
            raise
        except JsonRpcException:
            continue
        assert "internal error" not in str(done), (command, done)
    return isinstance(done, dict) and done.get("ok") is True


async def test_generated_programs_through_the_server(neovim, tmp_path):
    grammar_fuzz.workspace(tmp_path)
    ran = 0
    for seed in range(PROGRAMS):
        text = grammar_fuzz.program(seed)
        uri = open_doc(neovim, tmp_path / f"g{seed}.fuse", text)
        try:
            ran += await _ask(neovim, uri, text, seed)
        except Exception as err:
            raise AssertionError(f"seed {seed}: {type(err).__name__}: {err}\n{text!r}") from err
        neovim.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
    errors = [m.message for m in neovim.log_messages if m.type == types.MessageType.Error]
    assert errors == [], errors[0][-3000:]
    assert ran >= 20  # the runs were reached
