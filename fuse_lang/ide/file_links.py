"""Document links: the paths a program writes in its text — a source's file, a
sink's (once it exists), an imported file — as the spans to click and the files
they open; and the hover of a source's or a sink's path (the file it names).
Plain data over an Analysis; the language server converts."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..check import Analysis
from ..front import ir
from ..front.span import Span
from ..io.source_files import path_problem
from ..io.sources import split_member


@dataclass(frozen=True, slots=True)
class FileLink:
    span: Span  # the path as written, inside its quotes
    path: str  # the file it names, absolute
    tooltip: str


def file_links(analysis: Analysis) -> tuple[FileLink, ...]:
    """Each path of the text that names an existing file, in text order."""
    found: list[tuple[ir.String, str, str]] = []
    for stmt in analysis.program.statements:
        if type(stmt) is ir.Source:
            file = split_member(stmt.path.value)[0]
            found.append((stmt.path, file, f"the data of `{stmt.lhs.name}`"))
        elif type(stmt) is ir.Sink:
            found.append((stmt.path, stmt.path.value, "where this sink writes"))
    if analysis.imports is not None:
        for decl, resolved in analysis.imports.decls:
            if resolved is not None:
                found.append((decl.path, resolved, f"the file imported as `{decl.alias}`"))
    links = []
    text_end = len(analysis.text)
    for string, file, what in found:
        span = Span(string.span.start + 1, string.span.end - 1)
        if not file or path_problem(file) or not (0 <= span.start <= span.end <= text_end):
            continue
        path = analysis.base_dir / file
        try:
            if not path.is_file():
                continue
            absolute = str(path.resolve())
        except (OSError, RuntimeError):  # (a loop of links, a path too long)
            continue
        links.append(FileLink(span, absolute, f"Open {Path(file).name}: {what}"))
    return tuple(sorted(links, key=lambda link: link.span))


def path_hover(analysis: Analysis, offset: int) -> tuple[str, Span] | None:
    """A hover on a source's or a sink's path: the file it names, and whether it is there
    (markdown, and the path's span with its quotes)."""
    for stmt in analysis.program.statements:
        if type(stmt) is not ir.Source and type(stmt) is not ir.Sink:
            continue
        string = stmt.path
        if not string.span.start <= offset <= string.span.end:
            continue
        file = split_member(string.value)[0] if type(stmt) is ir.Source else string.value
        if not file or path_problem(file):
            return None  # (the diagnostics say why no file has this name)
        path = analysis.base_dir / file
        shown = os.path.normpath(path).replace("`", "\\`")
        try:
            there = path.is_file()
        except OSError:
            there = False
        if type(stmt) is ir.Source:
            info = analysis.tensors.get(stmt.lhs.name)
            shape = f", shape `{tuple(info.shape)}`" if info is not None and there and \
                all(e is not None for e in info.shape) else ""
            what = f"**file** · the data of `{stmt.lhs.name}`{shape}"
            status = "" if there else "\n\nNo such file."
        else:
            what = "**file** · where this sink writes (when a run may write sinks)"
            status = "\n\nIt exists: a run writes over it." if there else ""
        return f"`{shown}`\n\n{what}{status}", string.span
    return None
