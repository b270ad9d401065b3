"""The one place where engine offsets meet LSP positions.

The engine speaks 0-based character offsets into the text; LSP speaks lines
and UTF-16 code units.  Every handler converts through a Converter made for
the exact text it answers about.
"""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.span import LineIndex, Span


class Converter:
    def __init__(self, text: str, lines: LineIndex | None = None) -> None:
        self.text = text
        self.lines = lines or LineIndex(text)
        self.ascii = text.isascii()  # then a column is its UTF-16 column

    def position(self, offset: int) -> types.Position:
        line, col = self.lines.position(offset)
        if not self.ascii:
            col = _utf16_len(self.lines.line_text(line)[:col])
        return types.Position(line=line, character=col)

    def line_column(self, offset: int) -> tuple[int, int]:
        """(line, UTF-16 column) without building a Position (hot loops)."""
        line, col = self.lines.position(offset)
        if not self.ascii:
            col = _utf16_len(self.lines.line_text(line)[:col])
        return line, col

    def range(self, span: Span) -> types.Range:
        return types.Range(start=self.position(span.start), end=self.position(span.end))

    def offset(self, position: types.Position) -> int:
        if self.ascii:
            return self.lines.offset(position.line, position.character)
        line_text = self.lines.line_text(position.line)
        column = _column_from_utf16(line_text, position.character)
        return self.lines.offset(position.line, column)


def _utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _column_from_utf16(line: str, units: int) -> int:
    if line.isascii():
        return min(units, len(line))
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line)
