"""Names across files that import each other (docs/language.md, Imports): places in
imported files as locations of their own, and the references of a tensor in every
document of the workspace that imports the file it is defined in (its `ns::Name`
there), so that a rename edits them all."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from lsprotocol import types
from pygls.uris import from_fs_path

from fuse_lang.check import Analysis, Analyzer
from fuse_lang.front.span import Span
from fuse_lang.ide.imported import home_of, imports_file, located, name_here
from fuse_lang.ide.outline import fuse_files
from fuse_lang.ide.query import SymbolAt, function_references, tensor_references

from ..convert import Converter
from ..state import FuseServer, file_path

MAX_WORKSPACE_FILES = 300  # .fuse files of the workspace looked at for importers


def places(ls: FuseServer, uri: str, analysis: Analysis, convert: Converter,
           spans: tuple[Span, ...]) -> list[types.Location]:
    """`spans` of the document's analysis as locations, each in its own file."""
    converters: dict[str, Converter] = {}
    out = []
    for place in located(analysis, spans):
        if place.path is None:
            out.append(types.Location(uri=uri, range=convert.range(place.span)))
            continue
        other = converters.get(place.path)
        if other is None:
            assert place.text is not None
            other = converters[place.path] = Converter(place.text,
                                                       encoding=ls.workspace.position_encoding)
        out.append(types.Location(uri=Path(place.path).as_uri(), range=other.range(place.span)))
    return out


def across_files(ls: FuseServer, uri: str, found: SymbolAt, last_part: bool = False
                 ) -> list[tuple[types.Location, bool]]:
    """Every occurrence of the tensor (or function) `found`, in this document, the
    files it imports and the workspace's documents that import its file, each with
    whether it is a definition.  `last_part`: each span only the name's last part
    (`Path` of `g::Path`: what a rename edits)."""
    analysis, convert = ls.analysis(uri)
    home, local = home_of(analysis, found.name)
    here = _path(uri)
    home = home or here  # (a name of this document: its importers are looked at too)
    seen: set[tuple[str, int, int]] = set()
    out: list[tuple[types.Location, bool]] = []
    width = len(local.rpartition("::")[2])
    for doc_uri, other, other_convert in _analyses(ls, uri, analysis, convert, home, found):
        name = found.name if doc_uri == uri else name_here(other, home, local)
        if name is None:
            continue
        functions = other.inlined.functions if other.inlined is not None else {}
        if found.kind == "function" and name in functions:
            spans = function_references(other, name)
            definitions = {functions[name].name_span}
        elif name in other.tensors:
            spans, definitions = tensor_references(other, name), set(other.tensors[name].definitions)
        elif doc_uri == uri:
            spans, definitions = found.references, set(found.definitions)
        else:
            continue
        if last_part:
            spans = tuple(Span(max(s.start, s.end - width), s.end) for s in spans)
            definitions = {Span(max(s.start, s.end - width), s.end) for s in definitions}
        for span, location in zip(spans, places(ls, doc_uri, other, other_convert, spans)):
            key = (location.uri, location.range.start.line, location.range.start.character)
            if key not in seen:
                seen.add(key)
                out.append((location, span in definitions))
    return out


def workspace_roots(ls: FuseServer) -> list[str]:
    """The workspace folders' paths (the root's, for a client without folders)."""
    roots = [file_path(f.uri) for f in ls.workspace.folders.values()]
    if not any(roots):
        root_uri = ls.workspace.root_uri
        roots = [(file_path(root_uri) if root_uri else None) or ls.workspace.root_path]
    return [r for r in roots if r]


def _path(uri: str) -> str | None:
    path = file_path(uri)
    return os.path.normpath(os.path.abspath(path)) if path else None


def _analyses(ls: FuseServer, uri: str, analysis: Analysis, convert: Converter,
              home: str | None, found: SymbolAt) -> Iterator[tuple[str, Analysis, Converter]]:
    """This document's analysis, then those of the workspace's documents that are
    `home` or import it (open ones as the editor has them, others from disk)."""
    yield uri, analysis, convert
    if home is None or found.kind not in ("tensor", "function"):
        return
    here = _path(uri)
    candidates: dict[str, str] = {}
    for doc_uri in ls.open_uris():
        path = _path(doc_uri)
        if path is not None:
            candidates[path] = doc_uri
    # (the files the others import that are open, read as the editor has them)
    cache = ls.note_open_texts()
    for file in fuse_files(workspace_roots(ls), limit=MAX_WORKSPACE_FILES):
        # (its path as the workspace folder's spells it, not resolved: a folder reached
        # through a link names its files, and their imports, through the link)
        candidates.setdefault(os.path.normpath(os.path.abspath(file)), from_fs_path(str(file)))
    for path, doc_uri in sorted(candidates.items()):
        if path == here:
            continue
        document = ls.open_document(doc_uri)
        opened = document is not None
        try:
            text = document.source if document is not None else \
                Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if path != home and "import" not in text:
            continue
        if opened:
            other, other_convert = ls.analysis(doc_uri)
        else:
            other = Analyzer(remember=False, import_cache=cache).analyze(text, path)
            other_convert = Converter(text, other.lines, ls.workspace.position_encoding)
        if path == home or imports_file(other, home):
            yield doc_uri, other, other_convert
