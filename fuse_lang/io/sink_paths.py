"""What a sink's path may be, said without numpy (LANGUAGE.md §9): the suffixes
a sink writes and why a path is none, for `fuse check` (the diagnostic
`unwritable-sink`) and for the run (`io.sinks.check_sink_path`), so that both
refuse the same sinks.  Where a sink may write (inside the program's folder, a
folder that exists) depends on the run and is the run's to say."""
from __future__ import annotations

import os
from pathlib import PurePath
from typing import Iterable

from ..front import ir
from ..front.diagnostics import Diagnostic, Related, make
from .source_files import path_problem

SINK_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".facts", ".json", ".jsonl", ".txt")


def suffix_problem(target: str) -> str | None:
    """Why no sink writes a file named `target` (its suffix), or None."""
    name = PurePath(target).name or target
    if PurePath(target).suffix.lower() in SINK_SUFFIXES:
        return None
    writes = f"a sink writes {', '.join(SINK_SUFFIXES[:-1])} or {SINK_SUFFIXES[-1]}"
    return f"{name}: {writes}" if name else f"the path is empty; {writes}"


def sink_diagnostic(stmt: ir.Sink) -> Diagnostic | None:
    """`unwritable-sink` for a sink no run could write (a path with a NUL byte or
    a character the file system cannot take, a suffix no sink writes), or None."""
    target = stmt.path.value
    problem = path_problem(target) or suffix_problem(target)
    if problem is None:
        return None
    shown = target.replace("\0", "\\0").encode("utf-8", "backslashreplace").decode("utf-8")
    return make("unwritable-sink", f"the sink `{shown}` cannot be written: {problem}",
                stmt.path.span)


def repeated_sinks(sinks: Iterable[ir.Sink]) -> list[Diagnostic]:
    """`sink-twice` for each sink whose file an earlier sink writes too (`o.csv`,
    `./o.csv`): the later one would replace it, and the earlier one's value would
    be lost without a word."""
    first: dict[str, ir.Sink] = {}
    found = []
    for stmt in sinks:
        earlier = first.setdefault(os.path.normpath(stmt.path.value), stmt)
        if earlier is not stmt:
            found.append(make(
                "sink-twice", f"`{stmt.path.value}` is the file of an earlier sink too: this one "
                f"would replace it, and the earlier value would be lost; give each sink a "
                f"file of its own", stmt.path.span,
                related=(Related(earlier.path.span, "the earlier sink of this file"),)))
    return found


def sinks_over_sources(sinks: Iterable[ir.Sink], sources: Iterable[tuple[str, ir.String]],
                       base_dir: str | os.PathLike) -> list[Diagnostic]:
    """`sink-over-source` for each sink that writes a file the program reads as a
    tensor's source (`sources`: (tensor, its path), paths from `base_dir`; the same
    file by another spelling or through a link too): the run replaces the data
    it read, so the file's own values are gone and a second run reads these."""
    read: dict[str, tuple[str, ir.String]] = {}
    for name, path in sources:
        read.setdefault(_real(base_dir, path.value), (name, path))
    found = []
    for stmt in sinks:
        hit = read.get(_real(base_dir, stmt.path.value)) if read else None
        if hit is not None:
            name, path = hit
            found.append(make(
                "sink-over-source", f"this sink writes `{stmt.path.value}`, the file `{name}` "
                f"is read from: the run replaces the data it read (a second run reads the "
                f"values written, not the file's own); write another file", stmt.path.span,
                related=(Related(path.span, f"`{name}` read from it"),)))
    return found


def _real(base_dir: str | os.PathLike, path: str) -> str:
    """A path's file, links followed (as far as the file system allows)."""
    try:
        return os.path.realpath(os.path.join(base_dir, path))
    except (OSError, ValueError):  # (a NUL byte: said as unwritable-sink)
        return path

