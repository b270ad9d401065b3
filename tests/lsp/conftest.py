"""Start the real server over stdio, once per test, with a client profile."""
from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "fuse_lsp", "--stdio"]


async def start(lsp_client: LanguageClient, profile: str, root) -> None:
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(profile),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="test")],
    ))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def vscode(lsp_client: LanguageClient, tmp_path):
    """A client announcing VS Code's capabilities (this profile has push diagnostics)."""
    await start(lsp_client, "visual-studio-code", tmp_path)
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def neovim(lsp_client: LanguageClient, tmp_path):
    """A client announcing Neovim 0.11's capabilities (pull diagnostics)."""
    await start(lsp_client, "neovim@v0.11.0", tmp_path)
    yield lsp_client
    await lsp_client.shutdown_session()


def open_doc(client: LanguageClient, path, text: str, version: int = 1) -> str:
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="fuse", version=version,
                                             text=text)))
    return uri


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def utf8(lsp_client: LanguageClient, tmp_path):
    """Neovim 0.11's capabilities, offering UTF-8 positions first (as Neovim does)."""
    capabilities = client_capabilities("neovim@v0.11.0")
    capabilities.general = types.GeneralClientCapabilities(
        position_encodings=[types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16])
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    lsp_client.position_encoding = result.capabilities.position_encoding
    yield lsp_client
    await lsp_client.shutdown_session()
