"""The one place where engine offsets meet LSP positions.

The engine speaks 0-based character offsets into the text; LSP speaks lines
and code units of the encoding agreed at initialization (UTF-16 unless the
client offered UTF-8 or UTF-32 and the server took it).  Every handler
converts through a Converter made for the exact text it answers about.
"""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.front.span import LineIndex, Span


class Converter:
    def __init__(self, text: str, lines: LineIndex | None = None,
                 encoding: str = "utf-16") -> None:
        self.text = text
        self.lines = lines or LineIndex(text)
        self.ascii = text.isascii()  # then a column is its column in every encoding
        self.encoding = str(getattr(encoding, "value", encoding) or "utf-16").lower()

    def position(self, offset: int) -> types.Position:
        line, col = self.line_column(offset)
        return types.Position(line=line, character=col)

    def line_column(self, offset: int) -> tuple[int, int]:
        """(line, column in code units) without building a Position (hot loops)."""
        line, col = self.lines.position(offset)
        return line, self.units(line, col)

    def units(self, line: int, column: int) -> int:
        """A column counted in characters into the line, in the agreed encoding's
        code units."""
        if self.ascii:
            return column
        # the line's characters as they are: a column past its text (inside a
        # "\r\n") counts the "\r" too, as the ASCII case does
        start = self.lines.line_starts[line]
        return _units(self.text[start:start + column], self.encoding)

    def range(self, span: Span) -> types.Range:
        return types.Range(start=self.position(span.start), end=self.position(span.end))

    def span(self, range_: types.Range) -> Span:
        return Span(self.offset(range_.start), self.offset(range_.end))

    def offset(self, position: types.Position) -> int:
        if self.ascii:
            return self.lines.offset(position.line, position.character)
        line_text = self.lines.line_text(position.line)
        column = _column_from_units(line_text, position.character, self.encoding)
        return self.lines.offset(position.line, column)


# A lone surrogate (a client may send one: JSON's "\ud83d") is one code unit of
# UTF-16 and three bytes of UTF-8 as its editor counts it ("surrogatepass"); strict
# encoding would raise, and every answer about the document with it.


def _char_units(char: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _column_from_units(line: str, units: int, encoding: str) -> int:
    if line.isascii():
        return min(units, len(line))
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += _char_units(char, encoding)
    return len(line)
