"""Document and workspace symbols: a program's tensors grouped by kind (the
outline), the shape each shows beside its name, the workspace-symbol query
match and the walk that finds a workspace's `*.fuse` files.

Everything is in the engine's terms (spans); the language server converts to
LSP positions and types.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..check import Analysis, TensorInfo, TensorKind
from ..front.ir_text import ref_text
from ..front.span import Span

# (group label, the TensorInfo kinds it holds), in the order an outline shows them
GROUPS: tuple[tuple[str, tuple[TensorKind, ...]], ...] = (
    ("sources", (TensorKind.SOURCE, TensorKind.RELATION_SOURCE)),
    ("params", (TensorKind.PARAM,)),
    ("Boolean relations", (TensorKind.BOOLEAN_RELATION,)),
    ("dense tensors", (TensorKind.DENSE,)),
)
FUNCTIONS = "functions"  # the group of the document's `fn` definitions (shown first)


@dataclass(frozen=True, slots=True)
class OutlineSymbol:
    """One tensor: `span` is its first defining statement, `name_span` the name there."""

    name: str
    kind: TensorKind | str  # TensorInfo.kind, or "function" (a `fn` definition)
    detail: str  # the shape with each axis' index: "[p:6, d:4]", "scalar"; a fn's signature
    span: Span
    name_span: Span


@dataclass(frozen=True, slots=True)
class OutlineGroup:
    label: str  # "functions" | "sources" | "params" | "Boolean relations" | "dense tensors"
    span: Span  # covers its symbols' spans
    symbols: tuple[OutlineSymbol, ...]  # in text order


def shape_detail(info: TensorInfo) -> str:
    """`[p:6, d:4]` (`?` for an unknown extent), `scalar` for a 0-d tensor."""
    text = info.axes_text
    return text if text != "[]" else "scalar"


def tensor_symbols(analysis: Analysis) -> tuple[OutlineSymbol, ...]:
    """Every tensor the program defines, in order of its first definition."""
    statements = analysis.program.statements
    found = []
    for info in analysis.tensors.values():
        if not info.definitions or not info.statements or "@" in info.name:
            continue  # (`s@head.1`: a local of an inlined `fn` call)
        if info.definitions[0].start > len(analysis.text):
            continue  # a tensor of an imported file (check/imports.py): its file's own
        stmt = statements[info.statements[0]]
        name_span = info.definitions[0]
        span = stmt.span.cover(name_span)
        found.append(OutlineSymbol(info.name, info.kind, shape_detail(info), span, name_span))
    return tuple(sorted(found, key=lambda s: (s.name_span.start, s.name)))


def function_symbols(analysis: Analysis) -> tuple[OutlineSymbol, ...]:
    """The document's own `fn` definitions (not its imported files'), in text order."""
    inlined = analysis.inlined
    if inlined is None:
        return ()
    size = len(analysis.text)
    return tuple(sorted(
        (OutlineSymbol(fn.name, "function", f"({', '.join(ref_text(p) for p in fn.params)}) "
                       f"-> {ref_text(fn.result)}", fn.span, fn.name_span)
         for fn in inlined.functions.values() if fn.span.end <= size),
        key=lambda s: s.span.start))


def document_outline(analysis: Analysis) -> tuple[OutlineGroup, ...]:
    """The functions, then the tensors grouped by kind (sources, params, relations,
    dense); empty groups left out."""
    symbols = tensor_symbols(analysis)
    groups = []
    functions = function_symbols(analysis)
    if functions:
        groups.append(OutlineGroup(FUNCTIONS, Span(functions[0].span.start,
                                                   functions[-1].span.end), functions))
    for label, kinds in GROUPS:
        members = tuple(s for s in symbols if s.kind in kinds)
        if not members:
            continue
        span = Span(min(s.span.start for s in members), max(s.span.end for s in members))
        groups.append(OutlineGroup(label, span, members))
    return tuple(groups)


def matches_query(query: str, name: str) -> bool:
    """Case-insensitive subsequence match: `qk` matches `QueryKey`; `` matches all."""
    rest = iter(name.lower())
    return all(char in rest for char in query.lower())


SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})


def fuse_files(roots: Iterable[str | Path], limit: int = 500,
               max_bytes: int = 2 * 1024 * 1024, max_folders: int = 10_000) -> tuple[Path, ...]:
    """The `*.fuse` files under `roots` (hidden folders skipped), at most `limit`,
    leaving out files larger than `max_bytes`; the walk stops after `max_folders`
    folders (a workspace opened at a home folder stays cheap).  Sorted per folder."""
    found: list[Path] = []
    seen: set[Path] = set()
    folders = 0
    for root in roots:
        for folder, dirs, files in os.walk(root):
            folders += 1
            if folders > max_folders:
                return tuple(found)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            for name in sorted(files):
                if not name.endswith(".fuse"):
                    continue
                path = Path(folder) / name
                try:
                    if not path.is_file() or path.stat().st_size > max_bytes:
                        continue
                    resolved = path.resolve()
                except OSError:
                    continue
                if resolved in seen:
                    continue
                seen.add(resolved)
                found.append(path)
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)
