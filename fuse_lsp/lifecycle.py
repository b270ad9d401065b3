"""The session's lifecycle: `initialize` (options, push or pull diagnostics),
`initialized` and `workspace/didChangeConfiguration` (the `fuse` settings,
pulled with `workspace/configuration` when the client can answer), and
`shutdown` (pending diagnostics pushes are dropped).
"""
from __future__ import annotations

from lsprotocol import types

from .state import Feature, FuseServer, safe


@safe()
def initialize(ls: FuseServer, params: types.InitializeParams) -> None:
    configure(ls, params.initialization_options)
    text_caps = params.capabilities.text_document
    ls.pull_diagnostics = bool(text_caps and text_caps.diagnostic)
    # VS Code (and its forks) render a Markdown image with a data URI in a hover;
    # other clients show Markdown as text, where one would be a wall of base64
    client = (params.client_info.name if params.client_info else "") or ""
    ls.markdown_images = any(name in client for name in ("Visual Studio Code", "VSCodium",
                                                         "code-server", "Code - OSS"))


async def initialized(ls: FuseServer, params: types.InitializedParams) -> None:
    await pull_configuration(ls)


async def did_change_configuration(ls: FuseServer,
                                   params: types.DidChangeConfigurationParams) -> None:
    try:
        if params.settings:
            configure(ls, params.settings)
        else:  # "settings changed, ask me": the pull model
            await pull_configuration(ls)
    except Exception as error:  # noqa: BLE001
        ls.log_error("didChangeConfiguration", error)


@safe()
def shutdown(ls: FuseServer, *args: object) -> None:
    for push in ls.pushes.values():
        push.cancel()
    ls.pushes.clear()


def configure(ls: FuseServer, settings: object) -> None:
    """Take the client's "fuse" settings; each value refused is a warning in its log."""
    for warning in ls.options.update(settings):
        ls.warn(warning)


async def pull_configuration(ls: FuseServer) -> None:
    """Ask the client for the "fuse" section, when it can answer."""
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    try:
        settings = await ls.workspace_configuration_async(types.ConfigurationParams(
            items=[types.ConfigurationItem(section="fuse")]))
    except Exception as error:  # noqa: BLE001 - a client may fail it: keep the defaults
        ls.log_error("workspace/configuration", error)
        return
    if settings:
        configure(ls, settings[0])


FEATURES = (
    Feature(types.INITIALIZE, initialize),
    Feature(types.INITIALIZED, initialized),
    Feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration),
    Feature(types.SHUTDOWN, shutdown),
)
