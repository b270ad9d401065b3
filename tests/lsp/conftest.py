"""Start the real server over stdio, once per test, with a client profile."""
from __future__ import annotations

import asyncio
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import (
    ClientServerConfig,
    LanguageClient,
    client as pytest_lsp_client,
    client_capabilities,
)

SERVER = [sys.executable, "-m", "fuse_lsp", "--stdio"]
# How long a test waits for something the server does (a push, a log line, a run's
# progress): a bound for a hung server, not a speed target.  The server is a
# subprocess; on a loaded CI machine its first analysis can take seconds.
WAIT_S = 60.0


def _keep_push(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    """pytest-lsp's handler of publishDiagnostics, keeping every push too.

    pytest-lsp keeps only each document's latest diagnostics, without their version:
    a test that waited for them after an edit could read the push of the version
    before it (or wait for a notification that had come already).  Every push is
    kept in `client.pushes`, in order, so a test waits for the version it made."""
    client.diagnostics[params.uri] = params.diagnostics
    client.__dict__.setdefault("pushes", []).append(params)


# (every test client of this folder is made with pytest-lsp's default features)
pytest_lsp_client.DEFAULT_CLIENT_FEATURES[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _keep_push


def _register(client: LanguageClient, params: types.RegistrationParams) -> None:
    """A client's answer to `client/registerCapability` (pytest-lsp's client has
    none, and fails the test on the server's request): taken, as an editor takes
    it, and kept in `client.registrations`.  (The server registers the watched
    `.fuse` files with a client whose capabilities offer it: VS Code's, Neovim's.)"""
    client.__dict__.setdefault("registrations", []).extend(params.registrations)


pytest_lsp_client.DEFAULT_CLIENT_FEATURES[types.CLIENT_REGISTER_CAPABILITY] = _register


def pushes(client: LanguageClient, uri: str) -> list[types.PublishDiagnosticsParams]:
    """Every push of `uri`'s diagnostics so far, in the order they came."""
    return [p for p in client.__dict__.get("pushes", ()) if p.uri == uri]


async def wait_for_push(client: LanguageClient, uri: str, version: int | None = None,
                        timeout: float = WAIT_S):
    """The diagnostics of the latest push of `uri`, once one came; with `version`,
    once the push of that version came (an earlier version's push is not it)."""
    async def poll():
        while True:
            got = [p for p in pushes(client, uri) if version is None or p.version == version]
            if got:
                return got[-1].diagnostics
            await asyncio.sleep(0.02)
    return await asyncio.wait_for(poll(), timeout)


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
