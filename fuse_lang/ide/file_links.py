"""Document links: the paths a program writes in its text — a source's file, a
sink's (once it exists), an imported file — as the spans to click and the files
they open.  Plain data over an Analysis; the language server converts."""
from __future__ import annotations

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
