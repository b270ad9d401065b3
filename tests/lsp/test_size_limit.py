"""A document over the program size limit (2 MB, as `fuse check` applies to
files): one `file-too-large` diagnostic, no analysis, every feature answering
empty, edits followed, and the server still answering for other documents."""
from __future__ import annotations

import asyncio

from lsprotocol import types

from .conftest import open_doc, wait_for_push

STATEMENT = "Edge12345(a,b) = const([[1, 0], [0, 1]])\n"  # 41 bytes
BIG = STATEMENT * (5 * 1024 * 1024 // len(STATEMENT))  # about 5 MB of valid statements
SMALL = "X[i] = const([1, 2])\nY[i] = Xq[i] + X[i]\nexport Y\n"


def _at(uri: str, line: int = 0, character: int = 3) -> dict:
    return {"text_document": types.TextDocumentIdentifier(uri=uri),
            "position": types.Position(line=line, character=character)}


async def _features(client, uri: str) -> list:
    doc = types.TextDocumentIdentifier(uri=uri)
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=10, character=0))
    return await asyncio.wait_for(asyncio.gather(
        client.text_document_hover_async(types.HoverParams(**_at(uri))),
        client.text_document_completion_async(types.CompletionParams(**_at(uri))),
        client.text_document_formatting_async(types.DocumentFormattingParams(
            text_document=doc, options=types.FormattingOptions(tab_size=4,
                                                               insert_spaces=True))),
        client.text_document_document_symbol_async(types.DocumentSymbolParams(
            text_document=doc)),
        client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(
            text_document=doc)),
        client.text_document_folding_range_async(types.FoldingRangeParams(text_document=doc)),
        client.text_document_inlay_hint_async(types.InlayHintParams(text_document=doc,
                                                                    range=whole)),
        client.text_document_code_lens_async(types.CodeLensParams(text_document=doc)),
        client.text_document_definition_async(types.DefinitionParams(**_at(uri))),
        client.text_document_code_action_async(types.CodeActionParams(
            text_document=doc, range=whole, context=types.CodeActionContext(diagnostics=[]))),
    ), timeout=60)


def _empty(answer) -> bool:
    if answer is None:
        return True
    if isinstance(answer, (list, tuple)):
        return len(answer) == 0
    for field in ("items", "data"):  # a completion list, semantic tokens
        if hasattr(answer, field):
            return len(getattr(answer, field)) == 0
    return False


async def test_a_document_over_the_limit_gets_one_diagnostic_and_empty_features(vscode,
                                                                                 tmp_path):
    uri = open_doc(vscode, tmp_path / "big.fuse", BIG)
    (diag,) = await wait_for_push(vscode, uri)
    assert diag.code == "file-too-large"
    assert "5.2 MB" in diag.message and "up to 2 MB" in diag.message
    assert diag.range.start == types.Position(line=0, character=0)
    answers = await _features(vscode, uri)
    assert all(_empty(answer) for answer in answers), answers
    explained = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fuse.explain", arguments=[uri]))
    assert "Not analysed" in explained["value"]
    symbols = await vscode.workspace_symbol_async(types.WorkspaceSymbolParams(query="Edge"))
    assert symbols == []

    # an edit of the big document is followed; another document is still answered
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=3, character=0),
                              end=types.Position(line=3, character=0)), text="Y = = 1\n")]))
    (diag,) = await wait_for_push(vscode, uri, version=2)
    assert diag.code == "file-too-large"
    small = open_doc(vscode, tmp_path / "small.fuse", SMALL)
    (diag,) = await wait_for_push(vscode, small)
    assert diag.code == "undefined-tensor"


async def test_cut_under_the_limit_the_document_is_analysed_again(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "big.fuse", BIG)
    (diag,) = await wait_for_push(vscode, uri)
    assert diag.code == "file-too-large"
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=SMALL)]))
    (diag,) = await wait_for_push(vscode, uri, version=2)
    assert diag.code == "undefined-tensor"
