"""What a cell of a relation file means (LANGUAGE.md §14; docs/language.md,
"Values in relations").  The one place that decides it: the checker, the
whole-file reader, the line reader, `.json`/`.jsonl` and the run all read cells
through these functions, so a file means the same to each of them.

A cell (surrounding spaces and tabs dropped) is
- an **integer** when it is an optional sign (`+` or `-`) and ASCII digits only,
  within 64 bits (`-7`, `+1`, `3000000000`): an int;
- a **float** when it is a decimal number with a point or an exponent (`0.5`,
  `1e-3`), finite: a float;
- else a **symbol**, its text as written (`Ann`, `ann`, `²`, `--5`, `1#a`, an
  integer past 64 bits): a str.
A quoted cell (`"1"`, `"New York"` in a .csv or .tsv) is always a string: `"1"`
and `1` are different values.  In JSON a string is a string, a number a number.
"""
from __future__ import annotations

import math
import re

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")
# digits an int64 always holds (a longer one is checked against the bounds)
SAFE_DIGITS = 18
_BLANKS = " \t"
_BARE_SYMBOL = re.compile(r"[A-Z][A-Za-z0-9_]*'*\Z")  # (front/grammar.lark's NAME, capitalised)

Value = int | float | str


def cell_value(text: str, quoted: bool = False) -> Value:
    """The value of one cell of a text relation file."""
    if quoted:
        return text
    text = text.strip(_BLANKS)
    if _INTEGER.match(text):
        if len(text) <= SAFE_DIGITS:
            return int(text)
        digits = text.lstrip("+-").lstrip("0")
        if len(digits) <= 19:  # (a 5,000-digit integer is never parsed)
            number = int(text)
            if INT64_MIN <= number <= INT64_MAX:
                return number
        return text  # past 64 bits: a symbol, its text
    if _FLOAT.match(text):
        number = float(text)
        return number if math.isfinite(number) else text
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair, alone


def json_value(item: object) -> Value:
    """The value of one cell of a .json/.jsonl relation (SourceError-free: the
    caller says where); ValueError for what no cell can be (a list, an object,
    null, an integer past 64 bits, a float past a double)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        if INT64_MIN <= item <= INT64_MAX:
            return item
        raise ValueError(f"the integer {_short(str(item))} does not fit in 64 bits")
    if isinstance(item, float):
        if math.isfinite(item):
            return item
        raise ValueError(f"the number {item} is not finite")
    if isinstance(item, str):
        if not item.isascii() and (half := _SURROGATE.search(item)) is not None:
            raise ValueError(f"a string holds a lone surrogate (\\u{ord(half.group()):04x}), "
                             f"which is no character: no UTF-8 text can hold it")
        return item
    what = {list: "a list", dict: "an object", type(None): "null"}.get(type(item), repr(item))
    raise ValueError(f"a cell holds {what}, not a value")


def split_quoted(line: str, sep: str) -> list[tuple[str, bool]]:
    """A .csv/.tsv line's fields, each with whether it was quoted (`"a,b"`, a
    doubled `""` inside for a quote).  A field quoted only in part (`ab"c"`) is
    read as written.  ValueError for a quote that is never closed."""
    if '"' not in line:
        return [(field, False) for field in line.split(sep)]
    fields: list[tuple[str, bool]] = []
    k, n = 0, len(line)
    while True:
        while k < n and line[k] in _BLANKS and line[k] != sep:
            k += 1
        if k < n and line[k] == '"':
            parts, k = [], k + 1
            while True:
                end = line.find('"', k)
                if end < 0:
                    raise ValueError("a quoted field is not closed")
                parts.append(line[k:end])
                if line.startswith('"', end + 1):
                    parts.append('"')
                    k = end + 2
                    continue
                k = end + 1
                break
            stop = line.find(sep, k)
            rest = line[k:] if stop < 0 else line[k:stop]
            if rest.strip(_BLANKS):
                raise ValueError("text follows a quoted field's closing quote")
            fields.append(("".join(parts), True))
        else:
            stop = line.find(sep, k)
            fields.append((line[k:] if stop < 0 else line[k:stop], False))
        if stop < 0:
            return fields
        k = stop + 1


def ends_quoted(line: str, sep: str, inside: bool = False) -> bool:
    """Whether a physical line of a .csv/.tsv ends inside a quoted field (so its line
    break belongs to the field, as RFC 4180 reads it); `inside`: the line starts
    inside one (the previous line ended so).  Scans as `split_quoted` reads, once."""
    k, n = 0, len(line)
    while True:
        if inside:
            end = line.find('"', k)
            while end >= 0 and line.startswith('"', end + 1):  # a doubled quote
                end = line.find('"', end + 2)
            if end < 0:
                return True
            inside = False
            k = line.find(sep, end + 1)
            if k < 0:
                return False
            k += 1
        while k < n and line[k] in _BLANKS and line[k] != sep:
            k += 1
        if k < n and line[k] == '"':
            inside, k = True, k + 1
            continue
        k = line.find(sep, k)
        if k < 0:
            return False
        k += 1


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:10]}…{text[-6:]} ({len(text)} digits)"


def value_text(value: object) -> str:
    """A value as a program writes it (LANGUAGE.md §14): a symbol that is a bare
    capitalised name as is (`Alice`), any other string quoted (`"ann"`, `"1"`),
    a number as a number (`7`, `0.5`)."""
    if isinstance(value, str):
        if _BARE_SYMBOL.match(value):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value)
    return str(value)
