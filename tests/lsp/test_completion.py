"""Completion over stdio: tensors, builtins (snippets only for clients that take
them), index variables with extents inside brackets, keywords at a statement's start."""
from __future__ import annotations

import numpy as np
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fuse_lang.front.builtins import BUILTINS, NAMED_BUILTINS

from .conftest import SERVER, open_doc

PROGRAM = """\
X[p,d] = "x.npy"
W[e,d] = "w.npy"
H[p,e] = relu(W[e,d] X[p,d])
export H
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def emacs(lsp_client: LanguageClient, tmp_path):
    """Emacs 29's eglot: no snippets, no markdown; keeps the server's capabilities."""
    lsp_client.initialize_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("emacs@v29.1"), root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


def write_data(folder):
    np.save(folder / "x.npy", np.zeros((6, 4), np.float32))
    np.save(folder / "w.npy", np.zeros((3, 4), np.float32))


def end_of(text: str) -> types.Position:
    lines = text.split("\n")
    return types.Position(line=len(lines) - 1, character=len(lines[-1]))


async def complete(client, tmp_path, text, trigger=None):
    write_data(tmp_path)
    uri = open_doc(client, tmp_path / "c.fuse", text)
    context = types.CompletionContext(
        trigger_kind=types.CompletionTriggerKind.TriggerCharacter if trigger
        else types.CompletionTriggerKind.Invoked, trigger_character=trigger)
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=end_of(text),
        context=context))
    assert isinstance(result, types.CompletionList)
    return result.items


async def test_the_server_announces_its_trigger_characters(emacs):
    server = emacs.initialize_result.capabilities
    assert list(server.completion_provider.trigger_characters) == ["[", "(", ",", '"', "/"]
    assert list(server.signature_help_provider.trigger_characters) == ["(", ","]
    assert server.document_formatting_provider


async def test_at_a_statement_start_keywords_and_tensors(vscode, tmp_path):
    items = await complete(vscode, tmp_path, PROGRAM + "\n")
    assert [(i.label, i.kind, i.detail) for i in items] == [
        ("axis", types.CompletionItemKind.Keyword, "axis d = 64"),
        ("export", types.CompletionItemKind.Keyword, "export Y, Z"),
        ("fn", types.CompletionItemKind.Keyword, "fn f(x[i]) -> y[i] { ... }"),
        ("import", types.CompletionItemKind.Keyword, 'import "lib/graph.fuse" as g'),
        ("let", types.CompletionItemKind.Keyword, "let h[i] = W[i,j] X[j]"),
        ("param", types.CompletionItemKind.Keyword, "param W[i,j]"),
        ("train", types.CompletionItemKind.Keyword, "train Loss"),
        ("H", types.CompletionItemKind.Variable, "dense [p:6, e:3]"),
        ("W", types.CompletionItemKind.Variable, "source [e:3, d:4]"),
        ("X", types.CompletionItemKind.Variable, "source [p:6, d:4]"),
    ]
    h = items[7]
    assert h.documentation.kind == types.MarkupKind.Markdown
    assert "**dense** · shape `(6, 3)`" in h.documentation.value


async def test_inside_a_references_brackets_index_variables(vscode, tmp_path):
    items = await complete(vscode, tmp_path, PROGRAM + "Y[p] = W[e,", trigger=",")
    assert [(i.label, i.kind, i.detail) for i in items] == [
        ("d", types.CompletionItemKind.TypeParameter, "index · extent 4 · axis 1 of W"),
        ("e", types.CompletionItemKind.TypeParameter, "index · extent 3"),
        ("p", types.CompletionItemKind.TypeParameter, "index · extent ?"),
    ]


async def test_in_a_call_index_variables_first_then_tensors_and_builtins(vscode, tmp_path):
    items = await complete(vscode, tmp_path, PROGRAM + "Y[p,e] = relu(", trigger="(")
    labels = [i.label for i in items]
    assert labels == ["e", "p", "H", "W", "X"] + sorted([*NAMED_BUILTINS, "reduce"])  # comparisons are operators
    assert [i.sort_text for i in items] == sorted(i.sort_text for i in items)


async def test_builtins_are_snippets_for_vscode(vscode, tmp_path):
    items = await complete(vscode, tmp_path, PROGRAM + "Y[p,e] = so")
    softmax = next(i for i in items if i.label == "softmax")
    assert softmax.kind == types.CompletionItemKind.Function
    assert softmax.detail == "softmax(x, axis=i)"
    assert softmax.documentation == BUILTINS["softmax"].doc
    assert softmax.insert_text == "softmax($1)"
    assert softmax.insert_text_format == types.InsertTextFormat.Snippet


async def test_builtins_are_plain_names_without_snippet_support(emacs, tmp_path):
    items = await complete(emacs, tmp_path, PROGRAM + "Y[p,e] = so")
    softmax = next(i for i in items if i.label == "softmax")
    assert softmax.insert_text is None and softmax.insert_text_format is None
    assert softmax.detail == "softmax(x, axis=i)"
    h = next(i for i in items if i.label == "H")
    assert isinstance(h.documentation, str)  # no markdown for this client
    assert h.documentation.startswith("```fuse\nH[p:6, e:3]")


async def test_nothing_inside_a_comment(vscode, tmp_path):
    assert list(await complete(vscode, tmp_path, PROGRAM + "# softmax(")) == []


async def test_a_broken_document_still_completes(vscode, tmp_path):
    text = "Y[i] = W[i,j X[j]\n" + PROGRAM + "Z[p] = H[p,"
    items = await complete(vscode, tmp_path, text, trigger=",")
    assert [(i.label, i.detail) for i in items] == [("e", "index · extent 3 · axis 1 of H"),
                                                    ("p", "index · extent 6")]
