"""Completion of the path being typed in a string where a program names a file: an
import's (`.fuse` files), a source's (the data files a source reads) and a sink's
(the files a sink writes), listed from the folder the path names so far (relative
to the program's).  A string elsewhere (a relation's constant, `"ann"`) gets none.
Plain data; completion.complete offers it."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..check import Analysis
from ..front.lexer import Tok, tokenize
from ..front.span import Span
from ..io.sink_paths import SINK_SUFFIXES
from ..io.source_files import path_problem
from ..io.sources import SUFFIXES

MAX_ENTRIES = 200  # a folder's entries offered at most (a huge folder is cut short)
_SUFFIXES = {"import": (".fuse",), "source": SUFFIXES, "sink": SINK_SUFFIXES}


@dataclass(frozen=True, slots=True)
class PathItem:
    label: str  # a file's name, or a folder's with its `/`
    folder: bool
    replace: Span  # what of the path it replaces: the part after the last `/`
    detail: str  # "folder", or what the file is for here


def path_items(analysis: Analysis, offset: int) -> list[PathItem] | None:
    """The files and folders that may complete the path under `offset`; None where
    `offset` is not in the path of an import, a source or a sink."""
    line = analysis.lines.position(offset)[0]
    start = analysis.lines.line_starts[line]
    before = analysis.lines.line_text(line)[:offset - start]
    toks = tokenize(before)
    if not toks or toks[-1].type != "BAD_STRING" or toks[-1].end_pos != len(before):
        return None  # (the text up to the cursor: a string left open there)
    kind = _kind(toks[:-1])
    if kind is None:
        return None
    typed = toks[-1].value[1:]
    if "\\" in typed or path_problem(typed):
        return None
    folder_part, _, prefix = typed.rpartition("/")
    folder = analysis.base_dir / (folder_part + "/" if folder_part else "")
    if typed.startswith("/"):
        folder = Path(folder_part + "/")
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)[:MAX_ENTRIES * 4]
    except (OSError, ValueError):
        return None if not folder_part else []
    replace = Span(offset - len(prefix), offset)
    items = []
    for entry in entries:
        name = entry.name
        if (name.startswith(".") and not prefix.startswith(".")) or not name.startswith(prefix):
            continue
        if '"' in name or "\\" in name:
            continue  # (a name the string would have to escape)
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir:
            items.append(PathItem(name + "/", True, replace, "folder"))
        elif os.path.splitext(name)[1].lower() in _SUFFIXES[kind]:
            items.append(PathItem(name, False, replace, f"{kind} file"))
        if len(items) >= MAX_ENTRIES:
            break
    return items


def _kind(before: list[Tok]) -> str | None:
    """Which path a string opened after `before` (the line's tokens) is: "import",
    "source", "sink", or None (not a path: a constant, an argument)."""
    semis = [k for k, tok in enumerate(before) if tok.type == "SEMI"]
    if semis:
        before = before[semis[-1] + 1:]
    types = [tok.type for tok in before]
    if not types:
        return "sink"  # `"out.npz" = Y[i]`
    if types == ["IMPORT"]:
        return "import"
    if types[-1] == "LPAR" and len(types) >= 2 and before[-2].value == "source":
        types = types[:-2]  # `E(x,y) = source("e.tsv", header=1)`
    if types[-1:] != ["EQUAL"] or types[0] != "NAME":
        return None
    if types[1:-1] and (types[1] not in ("LSQB", "LPAR") or types[-2] not in ("RSQB", "RPAR")):
        return None
    inside = set(types[2:-2])  # a left-hand side's indices: names, numbers, commas
    return "source" if inside <= {"NAME", "NUMBER", "COMMA", "DOT", "PLUS", "MINUS"} else None
