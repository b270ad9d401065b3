"""The session's lifecycle: `initialize` (options, push or pull diagnostics),
`initialized` (the `.fuse` files watched, `watch_files`) and
`workspace/didChangeConfiguration` (the `fuse` settings, pulled with
`workspace/configuration` when the client can answer), and `shutdown` (pending
diagnostics pushes are dropped).
"""
from __future__ import annotations

import asyncio
import logging

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


log = logging.getLogger("fuse_lsp")
WATCHED = "fuse-watched-files"  # the id of the registration of `watch_files`


async def initialized(ls: FuseServer, params: types.InitializedParams) -> None:
    # (together: a client that never answers one of them holds back no other)
    await asyncio.gather(pull_configuration(ls), watch_files(ls))


async def watch_files(ls: FuseServer) -> None:
    """Ask the client to tell the server of `.fuse` files created, changed or
    deleted on disk (`workspace/didChangeWatchedFiles`, what an importer's
    diagnostics follow), when it takes that registration.  A client sends those
    events only for the globs a server registered (Neovim, Helix, Zed, Emacs's
    lsp-mode): without it an import changed on disk went unseen until the
    importer's next edit.  One that refuses keeps the server as it was."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if not (watched and watched.dynamic_registration):
        return
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(
                id=WATCHED, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern="**/*.fuse")]))]))
    except Exception as error:  # noqa: BLE001 - refused (or no such method): not watched
        ls.refused("client/registerCapability (the watched files)", error)


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
        ls.refused("workspace/configuration", error)
        return
    if settings:
        configure(ls, settings[0])


FEATURES = (
    Feature(types.INITIALIZE, initialize),
    Feature(types.INITIALIZED, initialized),
    Feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration),
    Feature(types.SHUTDOWN, shutdown),
)
