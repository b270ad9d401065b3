"""Document symbols (tensors grouped by kind) and workspace symbols (the open
documents and the `*.fuse` files under the workspace folders), from
fuse_lang.ide.outline."""
from __future__ import annotations

import threading
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from fuse_lang.check import Analysis, TensorKind, analyze
from fuse_lang.front.program_size import MAX_PROGRAM_BYTES
from fuse_lang.ide.outline import (
    FUNCTIONS,
    OutlineGroup,
    OutlineSymbol,
    document_outline,
    function_symbols,
    fuse_files,
    matches_query,
    tensor_symbols,
)

from ..convert import Converter
from ..state import DocumentTooLarge, Feature, FuseServer, file_path, safe
from .workspace_names import workspace_roots

MAX_WORKSPACE_FILES = 500
MAX_FILE_BYTES = MAX_PROGRAM_BYTES  # files beside the open documents, read from disk
MAX_WORKSPACE_RESULTS = 1000

SYMBOL_KIND = {
    TensorKind.DENSE: types.SymbolKind.Variable,
    TensorKind.BOOLEAN_RELATION: types.SymbolKind.Boolean,
    TensorKind.PARAM: types.SymbolKind.Property,
    TensorKind.SOURCE: types.SymbolKind.File,
    TensorKind.RELATION_SOURCE: types.SymbolKind.File,
}


def _kind(symbol: OutlineSymbol) -> types.SymbolKind:
    if symbol.kind == "function":
        return types.SymbolKind.Function
    return SYMBOL_KIND.get(symbol.kind, types.SymbolKind.Variable)


def _count(n: int, what: str = "tensor") -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _document_symbol(group: OutlineGroup, convert: Converter) -> types.DocumentSymbol:
    """A group (a namespace) with its tensors as children."""
    children = [types.DocumentSymbol(name=s.name, detail=s.detail, kind=_kind(s),
                                     range=convert.range(s.span),
                                     selection_range=convert.range(s.name_span))
                for s in group.symbols]
    return types.DocumentSymbol(
        name=group.label, kind=types.SymbolKind.Namespace,
        detail=_count(len(group.symbols), "function" if group.label == FUNCTIONS else "tensor"),
        range=convert.range(group.span),
        selection_range=convert.range(group.symbols[0].name_span), children=children)


def _flat_symbols(groups: tuple[OutlineGroup, ...], convert: Converter,
                  uri: str) -> list[types.SymbolInformation]:
    """For a client without hierarchical document symbols."""
    return [types.SymbolInformation(
        name=s.name, kind=_kind(s),
        location=types.Location(uri=uri, range=convert.range(s.name_span)),
        container_name=group.label) for group in groups for s in group.symbols]


@safe(list)
def document_symbols(ls: FuseServer, params: types.DocumentSymbolParams
                     ) -> list[types.DocumentSymbol] | list[types.SymbolInformation]:
    uri = params.text_document.uri
    analysis, convert = ls.analysis(uri)
    groups = document_outline(analysis)
    caps = ls.client_capabilities.text_document
    symbol_caps = caps.document_symbol if caps else None
    # (LSP: DocumentSymbol only to a client that says it takes them; one that says
    # nothing of document symbols, as a hand-written client, reads SymbolInformation)
    if not (symbol_caps and symbol_caps.hierarchical_document_symbol_support):
        return _flat_symbols(groups, convert, uri)
    return [_document_symbol(group, convert) for group in groups]


def workspace_symbols_of(analysis: Analysis, convert: Converter, uri: str,
                         container: str) -> list[types.WorkspaceSymbol]:
    return [types.WorkspaceSymbol(
        name=s.name, kind=_kind(s), container_name=container,
        location=types.Location(uri=uri, range=convert.range(s.name_span)))
        for s in function_symbols(analysis) + tensor_symbols(analysis)]


class FileSymbols:
    """Workspace symbols of files on disk, re-read only when a file changes."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, int, list[types.WorkspaceSymbol]]] = {}
        self._lock = threading.Lock()

    def get(self, path: Path, encoding: str = "utf-16") -> list[types.WorkspaceSymbol]:
        try:
            stat = path.stat()
        except OSError:
            return []
        key = f"{encoding}:{path}"
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return []
        analysis = analyze(text, str(path), path.parent)
        found = workspace_symbols_of(analysis, Converter(text, analysis.lines, encoding),
                                     from_fs_path(str(path)) or path.as_uri(), path.name)
        with self._lock:
            self._cache[key] = (stat.st_mtime_ns, stat.st_size, found)
        return found


_FILES = FileSymbols()  # shared by every server of the process: keyed by path and encoding


def _open_document_symbols(ls: FuseServer) -> tuple[list[types.WorkspaceSymbol], set[str]]:
    """The symbols of the open documents, and their resolved paths."""
    found: list[types.WorkspaceSymbol] = []
    open_paths = set()
    for uri in ls.open_uris():
        path = file_path(uri)
        if path:
            open_paths.add(str(Path(path).resolve()))
        try:
            analysis, convert = ls.analysis(uri)
        except DocumentTooLarge:
            continue  # not analysed: no symbols (nor its file's, read from disk)
        found += workspace_symbols_of(analysis, convert, uri, Path(path).name if path else uri)
    return found, open_paths


@safe(list)
def workspace_symbols(ls: FuseServer, params: types.WorkspaceSymbolParams
                      ) -> list[types.WorkspaceSymbol]:
    found, open_paths = _open_document_symbols(ls)
    for path in fuse_files(workspace_roots(ls), MAX_WORKSPACE_FILES, MAX_FILE_BYTES):
        if str(path.resolve()) not in open_paths:
            found += _FILES.get(path, ls.workspace.position_encoding)
    query = params.query
    return [s for s in found if matches_query(query, s.name)][:MAX_WORKSPACE_RESULTS]


FEATURES = (
    Feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, document_symbols),
    Feature(types.WORKSPACE_SYMBOL, workspace_symbols),
)
