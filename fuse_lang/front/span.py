"""Source spans and the mapping between offsets and line/column positions.

Spans are 0-based character offsets into the program text (end exclusive).
Users see 1-based lines and columns; the language server converts to UTF-16
itself, in one place.

Lines end as LSP says they do: at "\n", "\r\n" or a lone "\r", and nowhere
else (not at U+2028, U+0085, "\v" or "\f", where Python's str.splitlines ends
them): the editor, the server and `fuse check` count the same lines.
"""
from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple


class Span(NamedTuple):
    """A half-open range of character offsets. A named tuple, not a dataclass:
    the parser makes hundreds of thousands of them and tuples are built fast."""

    start: int
    end: int

    def cover(self, other: "Span") -> "Span":
        """The smallest span holding both."""
        return Span(min(self.start, other.start), max(self.end, other.end))

    def contains(self, offset: int) -> bool:
        """Whether `offset` is inside (an empty span holds its own offset)."""
        return self.start <= offset < self.end or (self.start == self.end == offset)


NO_SPAN = Span(0, 0)

_LONE_CR = re.compile(r"\r(?!\n)")
_LINE_END = re.compile(r"\r\n?|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


def lf_endings(text: str) -> str:
    """`text` with every lone "\r" made "\n", so that the lexer (whose lines end
    at "\n", a "\r" before it being space) ends lines where LSP does.  The same
    length: every offset into it is one into `text`."""
    if "\r" not in text or text.count("\r") == text.count("\r\n"):
        return text
    return _LONE_CR.sub("\n", text)


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their endings (LSP's: "\n", "\r\n", "\r")."""
    return _LINE.findall(text)


class LineIndex:
    """Offsets <-> (line, column), both 0-based, columns counted in characters;
    lines end at "\n", "\r\n" or "\r" (a position inside "\r\n" is at the end
    of its line's text plus one)."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        if "\r" in text:
            starts += [match.end() for match in _LINE_END.finditer(text)]
        else:  # the common case, in C
            find = text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
        self.line_starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        """The 0-based (line, column) of a character offset (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line, offset - self.line_starts[line]

    def offset(self, line: int, column: int) -> int:
        """The character offset of a 0-based (line, column), clamped to the text and
        to the line's end."""
        if line < 0:
            return 0
        if line >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[line]
        return min(start + max(column, 0), self._end(line))

    def line_text(self, line: int) -> str:
        """The text of a 0-based line, without its line ending ("" past the end)."""
        if not 0 <= line < len(self.line_starts):
            return ""
        return self.text[self.line_starts[line]:self._end(line)]

    def _end(self, line: int) -> int:
        """Where the text of `line` ends (before its line ending)."""
        if line + 1 >= len(self.line_starts):
            return len(self.text)
        end = self.line_starts[line + 1] - 1  # at the ending's last character
        if self.text[end] == "\n" and end > self.line_starts[line] \
                and self.text[end - 1] == "\r":
            end -= 1
        return end

    @property
    def line_count(self) -> int:
        """How many lines the text has (lines end at \\n, \\r\\n or a lone \\r)."""
        return len(self.line_starts)


# ------------------------------------------------------------- moving spans

# Field annotations whose values hold no offsets: copied as they are.
_PLAIN = frozenset({"str", "bool", "int", "float", "int | str", "int | None", "str | None",
                    "Severity", "tuple[str, ...]", str, bool, int, float})
# A Span as _tuple_new(Span, (start, end)): a named tuple's own __new__ is a Python
# function, a frame per Span (a moved statement has dozens)
_tuple_new = tuple.__new__


def shifted(value: Any, delta: int) -> Any:
    """A copy of `value` with every Span in it moved by `delta` characters: the
    same IR, diagnostics or analysis parts for a statement that moved in its
    text.  Goes through tuples, lists, dicts' values, named tuples and slotted
    dataclasses (whose frozen-ness it bypasses, as their generated __init__
    does); other values (names, numbers, enums, sets of names) are shared."""
    return _SHIFTERS.get(type(value), _first_shift)(value, delta)


# Each type's shift function (value, delta) -> shifted value, found by the value's
# type in one look-up (a moved statement has a hundred values to go through).
def _same(value: Any, delta: int) -> Any:
    return value


def _shift_span(value: Span, delta: int) -> Span:
    return _tuple_new(Span, (value[0] + delta, value[1] + delta))


def _shift_tuple(value: tuple, delta: int) -> tuple:
    get = _SHIFTERS.get
    return tuple([get(type(item), _first_shift)(item, delta) for item in value])


def _shift_list(value: list, delta: int) -> list:
    get = _SHIFTERS.get
    return [get(type(item), _first_shift)(item, delta) for item in value]


def _shift_dict(value: dict, delta: int) -> dict:
    get = _SHIFTERS.get
    return {key: get(type(item), _first_shift)(item, delta) for key, item in value.items()}


def _first_shift(value: Any, delta: int) -> Any:
    """The shift of a value of a type met for the first time (its function made)."""
    return _shifter(type(value))(value, delta)


_SHIFTERS: dict[type, Any] = {Span: _shift_span, tuple: _shift_tuple, list: _shift_list,
                              dict: _shift_dict, str: _same, int: _same, bool: _same,
                              float: _same, type(None): _same}


def _shifter(kind: type) -> Any:
    """The shift function of a slotted dataclass or a named tuple, generated once
    per class (it runs for every node of every moved statement); of any other
    class, `_same`."""
    shift: Any = _same
    names: dict[str, Any] = {"new": object.__new__, "K": kind, "S": Span, "tn": _tuple_new,
                             "get": _SHIFTERS.get, "first": _first_shift}
    fields = getattr(kind, "__dataclass_fields__", None)
    if fields is not None and "__slots__" in kind.__dict__:
        lines = ["def shift(v, d):", "    o = new(K)"]
        for k, f in enumerate(fields.values()):
            names[f"set{k}"] = kind.__dict__[f.name].__set__  # the slot's own setter
            if _node_tuple(f.type):
                lines += _shifted_tuple_lines(f.name, f.type)
                lines.append(f"    set{k}(o, t)")
            else:
                lines.append(f"    set{k}(o, {_shifted_field(f.name, f.type)})")
        lines.append("    return o")
        exec("\n".join(lines), names)  # noqa: S102 - code made from the class' field names
        shift = names["shift"]
    elif issubclass(kind, tuple) and hasattr(kind, "_fields"):
        names["new"] = tuple.__new__
        types = getattr(kind, "__annotations__", {})
        values = "".join(f"{_shifted_field(name, types.get(name))}, " for name in kind._fields)
        exec(f"def shift(v, d):\n    return new(K, ({values}))", names)  # noqa: S102
        shift = names["shift"]
    _SHIFTERS[kind] = shift
    return shift


def _node_tuple(annotation: Any) -> bool:
    """Whether a field annotated `annotation` holds a tuple of nodes (maybe None)."""
    return isinstance(annotation, str) and annotation.startswith("tuple[") and \
        annotation.endswith((", ...]", ", ...] | None")) and annotation not in _PLAIN


def _shifted_tuple_lines(name: str, annotation: str) -> list[str]:
    """Lines that set `t` to field `name` of `v`, a tuple of nodes, moved by `d`:
    a loop in the shift function itself, not a call per tuple (nor a list
    comprehension, a frame of its own on this Python): a moved statement has a
    tuple per reference and per call."""
    lines = [f"    t = v.{name}"]
    indent = "    "
    if annotation.endswith("| None"):
        lines.append("    if t is not None:")
        indent = "        "
    return lines + [f"{indent}l = []", f"{indent}for x in t:",
                     f"{indent}    l.append(get(type(x), first)(x, d))", f"{indent}t = tuple(l)"]


def _shifted_field(name: str, annotation: Any) -> str:
    """The expression for field `name` of `v` moved by `d` (see _shifter)."""
    if annotation == "Span" or annotation is Span:
        return f"tn(S, (v.{name}[0] + d, v.{name}[1] + d))"
    if annotation in _PLAIN:
        return f"v.{name}"
    return f"get(type(v.{name}), first)(v.{name}, d)"
