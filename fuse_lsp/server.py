"""The Fuse language server, assembled: a thin pygls layer over fuse_lang's
pure functions.

Each feature module lists its handlers (`FEATURES`: method, handler,
options; `COMMANDS`: name, handler).  A handler fetches the document's
analysis (fuse_lsp.state, cached per version), converts positions in one
place (fuse_lsp.convert), calls one function of fuse_lang and wraps its plain
data in lsprotocol types; one that fails logs the error and answers with an
empty result: the server keeps serving.
"""
from __future__ import annotations

from . import lifecycle
from .features import (
    call_hierarchy,
    code_actions,
    code_lens,
    commands,
    completion,
    diagnostics,
    folding,
    formatting,
    hover,
    inlay_hints,
    links,
    navigation,
    pictures,
    selection,
    semantic_tokens,
    symbols,
)
from .state import FuseServer

FEATURE_MODULES = (lifecycle, diagnostics, hover, navigation, symbols, semantic_tokens,
                   inlay_hints, folding, selection, links, call_hierarchy, completion,
                   formatting, code_actions, code_lens)


def create_server() -> FuseServer:
    server = FuseServer()
    for module in FEATURE_MODULES:
        for method, handler, options in module.FEATURES:
            server.feature(method, options)(handler)
    for name, handler in commands.COMMANDS + pictures.COMMANDS:
        server.command(name)(handler)
    return server
