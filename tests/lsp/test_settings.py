"""The `fuse` settings are checked: a value of the wrong kind or out of its range
(docs/lsp.md) is ignored with a warning in the client's log, the value before
kept; diagnostics keep arriving and runs keep working."""
from __future__ import annotations

import asyncio

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import SERVER, WAIT_S, open_doc

BAD = {"memoryLimit": "lots", "debounceMs": 1e12, "precision": "fp8", "backend": 3,
       "allowSinkWrites": "yes"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def badly_set(lsp_client: LanguageClient, tmp_path):
    """VS Code's capabilities (push diagnostics), initialized with bad settings."""
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri(),
        initialization_options={"fuse": BAD}))
    yield lsp_client
    await lsp_client.shutdown_session()


async def _warned(client: LanguageClient, *parts: str) -> str:
    """The first warning in the client's log holding every one of `parts`."""
    async def poll():
        while True:
            for message in client.log_messages:
                if message.type == types.MessageType.Warning \
                        and all(part in message.message for part in parts):
                    return message.message
            await asyncio.sleep(0.02)
    return await asyncio.wait_for(poll(), WAIT_S)


async def test_bad_settings_are_ignored_with_a_warning(badly_set, tmp_path):
    for key in BAD:
        await _warned(badly_set, f"{key} = ", "ignored")
    await _warned(badly_set, "debounceMs", "expected 0 to 10000", "keeping 150")
    # one warning per bad value (`backend` is its own camelCase spelling: not told twice)
    for key in BAD:
        assert sum(m.message.startswith(f"fuse settings: {key} = ")
                   for m in badly_set.log_messages) == 1, key
    # diagnostics arrive after the default debounce, not 10^12 ms
    uri = open_doc(badly_set, tmp_path / "a.fuse", "Y = Q\n")
    params = await asyncio.wait_for(badly_set.wait_for_notification(
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), WAIT_S)
    assert params.uri == uri and [d.code for d in params.diagnostics] == ["undefined-tensor"]
    # a run works: the memory limit is still the default, not "lots"
    uri = open_doc(badly_set, tmp_path / "b.fuse", "X[i] = const([1, 2])\nexport X\n")
    result = await badly_set.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fuse.run", arguments=[uri, {}]))
    assert result["ok"] is True and result["outputs"]["X"]["preview"] == [1, 2]


async def test_settings_changed_later_are_checked_too(badly_set, tmp_path):
    badly_set.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuse": {"debounceMs": -1, "memoryLimit": True}}))
    await _warned(badly_set, "debounceMs = -1", "expected 0 to 10000")
    await _warned(badly_set, "memoryLimit = True", "whole number")
    badly_set.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuse": {"debounceMs": 0, "memoryLimit": 2e9}}))  # in range: taken
    uri = open_doc(badly_set, tmp_path / "c.fuse", "Y = Q\n")
    params = await asyncio.wait_for(badly_set.wait_for_notification(
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), WAIT_S)
    assert params.uri == uri
    assert not [m for m in badly_set.log_messages if "= 0 ignored" in m.message
                or "2000000000" in m.message]
