"""A document as LSP defines it, written for the tests apart from the server's
code: lines end at "\\n", "\\r\\n" or "\\r" only, columns count UTF-16 code units."""
from __future__ import annotations

import bisect
import re

from lsprotocol import types

_ENDING = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    return [0] + [match.end() for match in _ENDING.finditer(text)]


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def position(text: str, offset: int, encoding: str) -> types.Position:
    starts = line_starts(text)
    line = bisect.bisect_right(starts, offset) - 1
    return types.Position(line=line, character=_units(text[starts[line]:offset], encoding))


def offset(text: str, pos: types.Position, encoding: str) -> int:
    starts = line_starts(text)
    if pos.line >= len(starts):
        return len(text)
    start = starts[pos.line]
    end = starts[pos.line + 1] if pos.line + 1 < len(starts) else len(text)
    body = _ENDING.sub("", text[start:end])
    units = 0
    for k, char in enumerate(body):
        if units >= pos.character:
            return start + k
        units += _units(char, encoding)
    return start + len(body)


def apply(text: str, range_: types.Range, new_text: str, encoding: str) -> str:
    return text[:offset(text, range_.start, encoding)] + new_text \
        + text[offset(text, range_.end, encoding):]


def check_json_as_lsp(text: str, diags: list[dict], encoding: str) -> list[tuple]:
    """`fuse check --format json` diagnostics (1-based, columns in characters)
    as (code, start line, start unit, end line, end unit), for `text`."""
    starts = line_starts(text) + [len(text)]

    def units(line: int, column: int) -> tuple[int, int]:
        start = starts[line - 1]
        return line - 1, _units(text[start:start + column - 1], encoding)

    return sorted((d["code"], *units(d["line"], d["column"]),
                   *units(d["end_line"], d["end_column"])) for d in diags)


def lsp_diagnostics(diags: list[types.Diagnostic]) -> list[tuple]:
    return sorted((d.code, d.range.start.line, d.range.start.character,
                   d.range.end.line, d.range.end.character) for d in diags)
