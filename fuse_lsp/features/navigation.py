"""Go to definition (and declaration, the same), references, highlights and
rename: the symbol under the cursor (fuse_lang.ide.query.symbol_at) and its places."""
from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from fuse_lang.front.let_blocks import user_name
from fuse_lang.ide.imported import import_at
from fuse_lang.ide.query import (
    SymbolAt,
    renamable,
    rename_problem,
    rename_refusal,
    symbol_at,
)

from ..convert import Converter
from ..state import DocumentTooLarge, DocumentUnavailable, Feature, FuseServer, safe
from .workspace_names import across_files as _across_files, places


def _symbol(ls: FuseServer, uri: str, position: types.Position
            ) -> tuple[SymbolAt | None, Converter]:
    analysis, convert = ls.analysis(uri)
    return symbol_at(analysis, convert.offset(position)), convert


@safe(list)
def definition(ls: FuseServer, params: types.DefinitionParams) -> list[types.Location]:
    uri = params.text_document.uri
    analysis, convert = ls.analysis(uri)
    offset = convert.offset(params.position)
    target = import_at(analysis, offset)
    if target is not None:  # the path of an import: the file's start
        return [types.Location(uri=Path(target.parsed.path).as_uri(), range=types.Range(
            types.Position(0, 0), types.Position(0, 0)))]
    found = symbol_at(analysis, offset)
    if found is None:
        return []
    return places(ls, uri, analysis, convert, found.definitions)


@safe(list)
def references(ls: FuseServer, params: types.ReferenceParams) -> list[types.Location]:
    uri = params.text_document.uri
    found, convert = _symbol(ls, uri, params.position)
    if found is None:
        return []
    if found.kind in ("tensor", "function"):  # (across the files importing each other)
        return [location for location, definition in _across_files(ls, uri, found)
                if params.context.include_declaration or not definition]
    spans = found.references
    if not params.context.include_declaration:
        spans = tuple(s for s in spans if s not in found.definitions)
    return [types.Location(uri=uri, range=convert.range(s)) for s in spans]


@safe(list)
def highlight(ls: FuseServer, params: types.DocumentHighlightParams
              ) -> list[types.DocumentHighlight]:
    found, convert = _symbol(ls, params.text_document.uri, params.position)
    if found is None:
        return []
    return [types.DocumentHighlight(
        range=convert.range(s),
        kind=(types.DocumentHighlightKind.Write if s in found.definitions
              else types.DocumentHighlightKind.Read)) for s in found.references
        if s.start <= len(convert.text)]  # (this document's: not an imported file's)


@safe()
def prepare_rename(ls: FuseServer, params: types.PrepareRenameParams
                   ) -> types.PrepareRenamePlaceholder | None:
    found, convert = _symbol(ls, params.text_document.uri, params.position)
    if found is None or not renamable(found):
        return None
    # an imported name as written here (`h::Linked`, not the program's `g::Linked`)
    written = convert.text[found.span.start:found.span.end] if "::" in found.name else ""
    return types.PrepareRenamePlaceholder(range=convert.range(found.span),
                                          placeholder=written if "::" in written
                                          else user_name(found.name))


def rename(ls: FuseServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
    # not @safe: an invalid new name is answered with an error, not with nothing
    uri = params.text_document.uri
    try:
        found, convert = _symbol(ls, uri, params.position)
    except (DocumentTooLarge, DocumentUnavailable):  # not analysed: nothing to rename
        return None
    except Exception as error:  # noqa: BLE001
        ls.log_error("rename", error)
        return None
    if found is None or not renamable(found):
        why = found and rename_refusal(found)
        if why:  # (a builtin, an `axis` name: said, as for a new name refused)
            raise JsonRpcInvalidParams(why)
        return None
    new = params.new_name
    problem = rename_problem(ls.analysis(uri)[0], found, new)
    if problem is not None:
        raise JsonRpcInvalidParams(problem)
    if found.kind in ("tensor", "function"):
        # an imported file's name is written `ns::Name` in its importers: the last part
        # of each occurrence is the name (`new` may be written with its namespace)
        new = new.rpartition("::")[2]
        changes: dict[str, list[types.TextEdit]] = {}
        for location, _definition in _across_files(ls, uri, found, last_part=True):
            changes.setdefault(location.uri, []).append(
                types.TextEdit(range=location.range, new_text=new))
        return types.WorkspaceEdit(changes=changes)
    edits = [types.TextEdit(range=convert.range(s), new_text=new) for s in found.references]
    return types.WorkspaceEdit(changes={uri: edits})


FEATURES = (
    Feature(types.TEXT_DOCUMENT_DEFINITION, definition),
    # (a tensor's declaration is its definition: Neovim's `gD` asks for it)
    Feature(types.TEXT_DOCUMENT_DECLARATION, definition),
    Feature(types.TEXT_DOCUMENT_REFERENCES, references),
    Feature(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, highlight),
    Feature(types.TEXT_DOCUMENT_PREPARE_RENAME, prepare_rename),
    Feature(types.TEXT_DOCUMENT_RENAME, rename),
)
