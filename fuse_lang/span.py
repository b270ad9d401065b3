"""Source spans and the mapping between offsets and line/column positions.

Spans are 0-based character offsets into the program text (end exclusive).
Users see 1-based lines and columns; the language server converts to UTF-16
itself, in one place.
"""
from __future__ import annotations

import bisect
from typing import NamedTuple


class Span(NamedTuple):
    """A half-open range of character offsets. A named tuple, not a dataclass:
    the parser makes hundreds of thousands of them and tuples are built fast."""

    start: int
    end: int

    def cover(self, other: "Span") -> "Span":
        return Span(min(self.start, other.start), max(self.end, other.end))

    def contains(self, offset: int) -> bool:
        return self.start <= offset < self.end or (self.start == self.end == offset)


NO_SPAN = Span(0, 0)


class LineIndex:
    """Offsets <-> (line, column), both 0-based, columns counted in characters."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self.line_starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line, offset - self.line_starts[line]

    def offset(self, line: int, column: int) -> int:
        if line < 0:
            return 0
        if line >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[line]
        end = self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts) else len(self.text)
        return min(start + max(column, 0), end)

    def line_text(self, line: int) -> str:
        if not 0 <= line < len(self.line_starts):
            return ""
        start = self.line_starts[line]
        end = self.line_starts[line + 1] if line + 1 < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    @property
    def line_count(self) -> int:
        return len(self.line_starts)
