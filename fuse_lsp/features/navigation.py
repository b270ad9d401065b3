"""Hover, go to definition, references, highlights and rename."""
from __future__ import annotations

import re

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from fuse_lang.ide.hover import hover_at
from fuse_lang.ide.query import symbol_at

from ..server import FuseServer, safe

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*'*\Z")


def register(server: FuseServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @safe()
    def hover(ls: FuseServer, params: types.HoverParams) -> types.Hover | None:
        analysis, convert = ls.analysis(params.text_document.uri)
        found = hover_at(analysis, convert.offset(params.position))
        if found is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value=found.markdown),
                           range=convert.range(found.span))

    def symbol(ls: FuseServer, uri: str, position: types.Position):
        analysis, convert = ls.analysis(uri)
        return symbol_at(analysis, convert.offset(position)), convert

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @safe(list)
    def definition(ls: FuseServer, params: types.DefinitionParams) -> list[types.Location]:
        uri = params.text_document.uri
        found, convert = symbol(ls, uri, params.position)
        if found is None:
            return []
        return [types.Location(uri=uri, range=convert.range(s)) for s in found.definitions]

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @safe(list)
    def references(ls: FuseServer, params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        found, convert = symbol(ls, uri, params.position)
        if found is None:
            return []
        spans = found.references
        if not params.context.include_declaration:
            spans = tuple(s for s in spans if s not in found.definitions)
        return [types.Location(uri=uri, range=convert.range(s)) for s in spans]

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @safe(list)
    def highlight(ls: FuseServer, params: types.DocumentHighlightParams
                  ) -> list[types.DocumentHighlight]:
        found, convert = symbol(ls, params.text_document.uri, params.position)
        if found is None:
            return []
        return [types.DocumentHighlight(
            range=convert.range(s),
            kind=(types.DocumentHighlightKind.Write if s in found.definitions
                  else types.DocumentHighlightKind.Read)) for s in found.references]

    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    @safe()
    def prepare_rename(ls: FuseServer, params: types.PrepareRenameParams):
        found, convert = symbol(ls, params.text_document.uri, params.position)
        if found is None or found.kind == "builtin":
            return None
        return types.PrepareRenamePlaceholder(range=convert.range(found.span),
                                              placeholder=found.name)

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    def rename(ls: FuseServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
        uri = params.text_document.uri
        try:
            found, convert = symbol(ls, uri, params.position)
        except Exception as error:  # noqa: BLE001
            ls.log_error("rename", error)
            return None
        if found is None or found.kind == "builtin":
            return None
        new = params.new_name
        if not _NAME.match(new):
            raise JsonRpcInvalidParams(f"`{new}` is not a name")
        if found.kind == "index" and not (new[0].islower() or new[0] == "_"):
            raise JsonRpcInvalidParams("an index variable starts with a lowercase letter or _")
        edits = [types.TextEdit(range=convert.range(s), new_text=new) for s in found.references]
        return types.WorkspaceEdit(changes={uri: edits})
