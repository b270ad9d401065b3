"""A diagnostic as `fuse` prints it: `path:line:col: severity[code]: message`,
the line, a caret under the span, its notes and its first fix."""
from __future__ import annotations

import os
import sys
from typing import NoReturn

from ..front.diagnostics import Diagnostic
from ..front.span import LineIndex
from .status import EXIT_ERRORS, CommandFailed, fail

LONG_LINE = 240  # characters of a source line shown; a longer one is cut around the span


def render_text(path: str, lines: LineIndex, diag: Diagnostic) -> str:
    """`diag` in `path` (whose text `lines` indexes) as lines of text."""
    line, col = lines.position(diag.span.start)
    end_line, end_col = lines.position(diag.span.end)
    source, at = lines.line_text(line), col
    width = max(1, (end_col if end_line == line else len(source)) - col)
    if len(source) > LONG_LINE:  # (a program on one line: each diagnostic would repeat it)
        source, at, width = _around(source, col, width)
    gutter = f"{line + 1} | "
    out = [f"{path}:{line + 1}:{col + 1}: {diag.severity.value}[{diag.code}]: {diag.message}",
           f"{gutter}{source}",
           " " * len(gutter) + _caret_indent(source[:at]) + "^" * min(width, 200)]
    for rel in diag.related:
        if rel.position is not None:  # in another file (an imported one)
            r_line, r_col = rel.position[:2]
        else:
            r_line, r_col = lines.position(rel.span.start)
        out.append(f"  {_shown(rel.path, path)}:{r_line + 1}:{r_col + 1}: note: {rel.message}")
    for fix in diag.fixes[:1]:
        out.append(f"  fix: {fix.title}")
    return "\n".join(out)


def diagnostic_json(path: str, lines: LineIndex, diag: Diagnostic) -> dict:
    """`diag` in `path` as `--format json` writes it: its places in other files
    named as the text output names them (`_shown`)."""
    out = diag.to_json(lines, path)
    for related in out.get("related", ()):
        if "path" in related:
            related["path"] = _shown(related["path"], path)
    return out


def fail_with_diagnostics(path: str, text: str, err: Exception) -> NoReturn:
    """A program that could not be compiled or run (`err`, a FuseError): its
    diagnostics printed at their places in the program (in file order), else its
    one line; CommandFailed (exit 1) carrying them as `fuse check` JSON."""
    diagnostics = getattr(err, "diagnostics", ())
    if not diagnostics:
        fail(f"fuse: {path}: {err}", EXIT_ERRORS)
    lines = LineIndex(text)
    ordered = sorted(diagnostics, key=lambda d: d.span.start)
    for d in ordered:
        print(render_text(path, lines, d), file=sys.stderr)
    raise CommandFailed(EXIT_ERRORS, None, tuple(diagnostic_json(path, lines, d) for d in ordered))


def _shown(other: str | None, path: str) -> str:
    """Another file's (absolute) path as the program's is given: from the current
    folder when the program's is relative (`lib/graph.fuse`, beside `main.fuse`)."""
    if other is None:
        return path
    if os.path.isabs(other) and not os.path.isabs(path):
        try:
            return os.path.relpath(other)
        except ValueError:  # (another drive)
            return other
    return other


def _around(source: str, col: int, width: int) -> tuple[str, int, int]:
    """A line longer than LONG_LINE characters cut around the span at `col`, with
    `...` where it was cut: the shown text, the span's column and width in it."""
    start = max(0, col - LONG_LINE // 4)
    end = min(len(source), start + LONG_LINE)
    before, after = ("..." if start else ""), ("..." if end < len(source) else "")
    width = max(1, min(width, end - col))  # (the carets end with the text shown)
    return before + source[start:end] + after, col - start + len(before), width


def _caret_indent(prefix: str) -> str:
    """Blanks under `prefix`, keeping its tabs so the caret lines up in a terminal."""
    return "".join("\t" if ch == "\t" else " " for ch in prefix)
