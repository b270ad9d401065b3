"""Diagnostics over stdio: push for clients without pull support, pull otherwise,
never both; versions stamped; stale results never land over newer ones."""
from __future__ import annotations

import asyncio

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import SERVER, open_doc, pushes, wait_for_push

BAD = "X[i] = const([1, 2])\nY[i] = Xq[i] + X[i]\nexport Y\n"
GOOD = "X[i] = const([1, 2])\nY[i] = X[i]\nexport Y\n"


async def test_push_diagnostics_for_a_client_without_pull(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "bad.fuse", BAD)
    await wait_for_push(vscode, uri, version=1)
    (diag,) = vscode.diagnostics[uri]
    assert diag.code == "undefined-tensor"
    assert diag.severity == types.DiagnosticSeverity.Error
    assert diag.range == types.Range(start=types.Position(line=1, character=7),
                                     end=types.Position(line=1, character=9))
    assert "did you mean `X`" in diag.message
    assert diag.source == "fuse"
    assert diag.code_description is not None
    assert diag.code_description.href.endswith("diagnostics.md#undefined-tensor")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def patient(lsp_client: LanguageClient, tmp_path):
    """VS Code's capabilities, pushes debounced by a whole second: two edits sent
    together are one quiet period, however loaded the machine (150 ms, the
    default, is less than a process may wait for the CPU there)."""
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri(),
        initialization_options={"debounceMs": 1000}))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_push_follows_edits_and_is_stamped_with_the_version(patient, tmp_path):
    uri = open_doc(patient, tmp_path / "a.fuse", BAD)
    assert len(await wait_for_push(patient, uri, version=1)) == 1
    # two quick edits: only the last version's result is published
    for version, text in ((2, BAD + "Z = 1\n"), (3, GOOD)):
        patient.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    assert list(await wait_for_push(patient, uri, version=3)) == []
    assert [p.version for p in pushes(patient, uri)] == [1, 3]


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
    await wait_for_push(vscode, uri, version=1)
    (diag,) = [d for d in vscode.diagnostics[uri] if d.code == "extent-conflict"]
    (rel,) = diag.related_information
    assert rel.location.uri == uri
    assert rel.location.range.start == types.Position(line=0, character=9)
