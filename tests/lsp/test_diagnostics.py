"""Diagnostics over stdio: push for clients without pull support, pull otherwise,
never both; versions stamped; stale results never land over newer ones."""
from __future__ import annotations

import asyncio

from lsprotocol import types

from .conftest import open_doc

BAD = "X[i] = const([1, 2])\nY[i] = Xq[i] + X[i]\nexport Y\n"
GOOD = "X[i] = const([1, 2])\nY[i] = X[i]\nexport Y\n"


async def wait_for_push(client, uri, version=None, timeout=10.0):
    async def poll():
        while True:
            got = client.diagnostics.get(uri)
            if got is not None and (version is None or
                                    getattr(client, "_fuse_versions", {}).get(uri) == version):
                return got
            await asyncio.sleep(0.02)
    return await asyncio.wait_for(poll(), timeout)


async def test_push_diagnostics_for_a_client_without_pull(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "bad.fuse", BAD)
    await vscode.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    (diag,) = vscode.diagnostics[uri]
    assert diag.code == "undefined-tensor"
    assert diag.severity == types.DiagnosticSeverity.Error
    assert diag.range == types.Range(start=types.Position(line=1, character=7),
                                     end=types.Position(line=1, character=9))
    assert "did you mean `X`" in diag.message
    assert diag.source == "fuse"
    assert diag.code_description is not None
    assert diag.code_description.href.endswith("diagnostics.md#undefined-tensor")


async def test_push_follows_edits_and_is_stamped_with_the_version(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "a.fuse", BAD)
    params = await vscode.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert params.version == 1 and len(params.diagnostics) == 1
    # two quick edits: only the last version's result is published
    for version, text in ((2, BAD + "Z = 1\n"), (3, GOOD)):
        vscode.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    params = await vscode.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert params.version == 3
    assert list(params.diagnostics) == []


async def test_pull_diagnostics_for_neovim_and_no_push(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "bad.fuse", BAD)
    report = await neovim.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [d.code for d in report.items] == ["undefined-tensor"]
    assert report.items[0].range.start == types.Position(line=1, character=7)
    await asyncio.sleep(0.5)  # no push may arrive for a pulling client
    assert uri not in neovim.diagnostics


async def test_related_information_points_at_the_other_place(vscode, tmp_path):
    text = "axis i = 2\naxis i = 3\nY[i] = 1\nexport Y\n"
    uri = open_doc(vscode, tmp_path / "c.fuse", text)
    await vscode.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    (diag,) = [d for d in vscode.diagnostics[uri] if d.code == "extent-conflict"]
    (rel,) = diag.related_information
    assert rel.location.uri == uri
    assert rel.location.range.start == types.Position(line=0, character=9)
