"""Document and workspace symbols, semantic tokens, inlay hints and folding.

Each handler fetches the analysis, converts positions, calls one function of
fuse_lang.ide.outline and wraps its plain data in lsprotocol types.
"""
from __future__ import annotations

import bisect
import functools
import threading
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from fuse_lang.check import analyze
from fuse_lang.ide.outline import (TOKEN_MODIFIERS, TOKEN_TYPES, Fold, OutlineSymbol, SemanticToken,
                               document_outline, folding_ranges, fuse_files, matches_query,
                               semantic_tokens, shape_hints, tensor_symbols)
from fuse_lang.front.span import Span

from ..convert import Converter
from ..server import FuseServer, safe

LEGEND = types.SemanticTokensLegend(token_types=list(TOKEN_TYPES),
                                    token_modifiers=list(TOKEN_MODIFIERS))
MAX_WORKSPACE_FILES = 500
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_WORKSPACE_RESULTS = 1000

SYMBOL_KIND = {
    "dense": types.SymbolKind.Variable,
    "Boolean relation": types.SymbolKind.Boolean,
    "param": types.SymbolKind.Property,
    "source": types.SymbolKind.File,
    "relation source": types.SymbolKind.File,
}
_TYPE_INDEX = {name: k for k, name in enumerate(TOKEN_TYPES)}
_MODIFIER_BIT = {name: 1 << k for k, name in enumerate(TOKEN_MODIFIERS)}


def _symbol(s: OutlineSymbol, convert: Converter) -> types.DocumentSymbol:
    return types.DocumentSymbol(name=s.name, detail=s.detail,
                                kind=SYMBOL_KIND.get(s.kind, types.SymbolKind.Variable),
                                range=convert.range(s.span),
                                selection_range=convert.range(s.name_span))


def encode_tokens(tokens: tuple[SemanticToken, ...], convert: Converter) -> list[int]:
    """LSP's relative encoding: (Δline, Δstart, length, type, modifiers) per token,
    columns in UTF-16 code units."""
    if convert.ascii:
        return _encode_ascii(tokens, convert)
    data: list[int] = []
    last_line = last_start = 0
    for token in tokens:
        line, start = convert.line_column(token.span.start)
        end_line, end = convert.line_column(token.span.end)
        if end_line != line or end <= start:
            continue  # tokens never span lines; be safe anyway
        delta_line = line - last_line
        delta_start = start - (last_start if delta_line == 0 else 0)
        data += [delta_line, delta_start, end - start, _TYPE_INDEX[token.type],
                 _modifier_bits(token.modifiers)]
        last_line, last_start = line, start
    return data


def _encode_ascii(tokens: tuple[SemanticToken, ...], convert: Converter) -> list[int]:
    """encode_tokens for ASCII text (a column is an offset in every encoding), walking
    the lines alongside the tokens, which come sorted, instead of searching them."""
    starts = convert.lines.line_starts
    count = len(starts)
    size = len(convert.text)
    data: list[int] = []
    extend = data.extend
    codes: dict[tuple[str, tuple[str, ...]], tuple[int, int]] = {}
    last_line = last_start = 0
    line = 0
    line_start = 0
    line_end = starts[1] - 1 if count > 1 else size  # the offset of its newline
    for span, kind, modifiers in tokens:
        begin, stop = span
        if begin < 0 or stop > size:
            begin, stop = min(max(begin, 0), size), min(max(stop, 0), size)
        if begin < line_start or begin > line_end:
            if begin < line_start:  # not sorted after all: search
                line = bisect.bisect_right(starts, begin) - 1
            else:
                while begin > line_end:
                    line += 1
                    line_end = starts[line + 1] - 1 if line + 1 < count else size
            line_start = starts[line]
            line_end = starts[line + 1] - 1 if line + 1 < count else size
        if stop > line_end or stop <= begin:
            continue  # tokens never span lines; be safe anyway
        code = codes.get((kind, modifiers))
        if code is None:
            code = codes[(kind, modifiers)] = (_TYPE_INDEX[kind], _modifier_bits(modifiers))
        start = begin - line_start
        if line == last_line:
            extend((0, start - last_start, stop - begin) + code)
        else:
            extend((line - last_line, start, stop - begin) + code)
            last_line = line
        last_start = start
    return data


@functools.lru_cache(maxsize=256)
def _modifier_bits(modifiers: tuple[str, ...]) -> int:
    bits = 0
    for modifier in modifiers:
        bits |= _MODIFIER_BIT.get(modifier, 0)
    return bits


class _FileSymbols:
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


def workspace_symbols_of(analysis, convert: Converter, uri: str,
                         container: str) -> list[types.WorkspaceSymbol]:
    return [types.WorkspaceSymbol(
        name=s.name, kind=SYMBOL_KIND.get(s.kind, types.SymbolKind.Variable),
        container_name=container,
        location=types.Location(uri=uri, range=convert.range(s.name_span)))
        for s in tensor_symbols(analysis)]


def _within(convert: Converter, range_: types.Range) -> Span:
    return Span(convert.offset(range_.start), convert.offset(range_.end))


def register(server: FuseServer) -> None:
    files = _FileSymbols()

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @safe(list)
    def document_symbols(ls: FuseServer, params: types.DocumentSymbolParams):
        uri = params.text_document.uri
        analysis, convert = ls.analysis(uri)
        groups = document_outline(analysis)
        caps = ls.client_capabilities.text_document
        symbol_caps = caps.document_symbol if caps else None
        if symbol_caps is not None and not symbol_caps.hierarchical_document_symbol_support:
            return [types.SymbolInformation(
                name=s.name, kind=SYMBOL_KIND.get(s.kind, types.SymbolKind.Variable),
                location=types.Location(uri=uri, range=convert.range(s.name_span)),
                container_name=group.label) for group in groups for s in group.symbols]
        return [types.DocumentSymbol(
            name=group.label, kind=types.SymbolKind.Namespace,
            detail=_count(len(group.symbols)),
            range=convert.range(group.span),
            selection_range=convert.range(group.symbols[0].name_span),
            children=[_symbol(s, convert) for s in group.symbols]) for group in groups]

    @server.feature(types.WORKSPACE_SYMBOL)
    @safe(list)
    def workspace_symbols(ls: FuseServer, params: types.WorkspaceSymbolParams
                          ) -> list[types.WorkspaceSymbol]:
        found: list[types.WorkspaceSymbol] = []
        open_paths = set()
        for uri in list(ls.workspace.text_documents):
            analysis, convert = ls.analysis(uri)
            path = to_fs_path(uri) if uri.startswith("file:") else None
            if path:
                open_paths.add(str(Path(path).resolve()))
            found += workspace_symbols_of(analysis, convert, uri,
                                          Path(path).name if path else uri)
        roots = [to_fs_path(f.uri) for f in ls.workspace.folders.values()]
        if not roots and ls.workspace.root_path:
            roots = [ls.workspace.root_path]
        for path in fuse_files([r for r in roots if r], MAX_WORKSPACE_FILES, MAX_FILE_BYTES):
            if str(path.resolve()) not in open_paths:
                found += files.get(path, ls.workspace.position_encoding)
        query = params.query
        return [s for s in found if matches_query(query, s.name)][:MAX_WORKSPACE_RESULTS]

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @safe(lambda: types.SemanticTokens(data=[]))
    def tokens_full(ls: FuseServer, params: types.SemanticTokensParams) -> types.SemanticTokens:
        uri = params.text_document.uri
        analysis, convert = ls.analysis(uri)
        tokens = semantic_tokens(analysis, cache=ls.token_cache(uri))
        return types.SemanticTokens(data=encode_tokens(tokens, convert))

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, LEGEND)
    @safe(lambda: types.SemanticTokens(data=[]))
    def tokens_range(ls: FuseServer, params: types.SemanticTokensRangeParams
                     ) -> types.SemanticTokens:
        uri = params.text_document.uri
        analysis, convert = ls.analysis(uri)
        tokens = semantic_tokens(analysis, _within(convert, params.range), ls.token_cache(uri))
        return types.SemanticTokens(data=encode_tokens(tokens, convert))

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    @safe(list)
    def inlay_hints(ls: FuseServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        analysis, convert = ls.analysis(params.text_document.uri)
        return [types.InlayHint(position=convert.position(hint.offset), label=hint.label,
                                kind=types.InlayHintKind.Type, tooltip=hint.tooltip)
                for hint in shape_hints(analysis, _within(convert, params.range))]

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @safe(list)
    def folding(ls: FuseServer, params: types.FoldingRangeParams) -> list[types.FoldingRange]:
        analysis, convert = ls.analysis(params.text_document.uri)
        folds = [_fold(f, convert) for f in folding_ranges(analysis)]
        caps = ls.client_capabilities.text_document
        limit = caps.folding_range.range_limit if caps and caps.folding_range else None
        return folds[:limit] if limit else folds


def _count(n: int) -> str:
    return f"{n} tensor" if n == 1 else f"{n} tensors"


def _fold(fold: Fold, convert: Converter) -> types.FoldingRange:
    kind = (types.FoldingRangeKind.Comment if fold.kind == "comment"
            else types.FoldingRangeKind.Region)
    return types.FoldingRange(start_line=convert.position(fold.span.start).line,
                              end_line=convert.position(fold.span.end).line, kind=kind)
