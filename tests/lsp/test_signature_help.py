"""Signature help over stdio: the builtin under the cursor and its active parameter."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.front.builtins import BUILTINS

from .conftest import open_doc


async def help_at(client, tmp_path, text):
    offset = text.index("|")
    text = text.replace("|", "", 1)
    uri = open_doc(client, tmp_path / "s.fuse", text)
    line = text.count("\n", 0, offset)
    character = offset - (text.rfind("\n", 0, offset) + 1)
    return await client.text_document_signature_help_async(types.SignatureHelpParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character)))


async def test_the_active_parameter_counts_commas_at_the_call_level(vscode, tmp_path):
    found = await help_at(vscode, tmp_path, "X[i,j] = const([[1, 2]])\nY[i] = sig(X[i,j], |")
    (info,) = found.signatures
    assert info.label == "sig(x, T=1)"
    assert info.documentation == BUILTINS["sig"].doc
    assert [p.label for p in info.parameters] == ["x", "T=1"]
    assert (found.active_signature, found.active_parameter) == (0, 1)


async def test_commas_between_indices_do_not_count(neovim, tmp_path):
    found = await help_at(neovim, tmp_path, "Y[i] = softmax(X[i,|j])")
    assert found.signatures[0].label == "softmax(x, axis=i)"
    assert found.active_parameter == 0


async def test_a_keyword_argument_selects_its_parameter(vscode, tmp_path):
    found = await help_at(vscode, tmp_path, "Y[i] = lnorm(X[i], axis=i, eps=|)")
    assert found.signatures[0].label == "lnorm(x, eps=1e-5, axis=i)"
    assert found.active_parameter == 1


async def test_the_innermost_call_wins_and_reduce_has_help(vscode, tmp_path):
    found = await help_at(vscode, tmp_path, "Y = sig(relu(|X[i]), 2)")
    assert found.signatures[0].label == "relu(x)"
    found = await help_at(vscode, tmp_path, "Y[i] = reduce(max, |")
    assert found.signatures[0].label == "reduce(op, i, ...) expr"
    assert found.active_parameter == 1


async def test_no_help_outside_a_call(vscode, tmp_path):
    assert await help_at(vscode, tmp_path, "Y[i] = relu(X[i]) + |") is None
