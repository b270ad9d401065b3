"""A relation file read as its columns of values (LANGUAGE.md §9, §14;
docs/language.md, "Relation files").

`.csv` (commas), `.tsv` and Soufflé's `.facts` (tabs), `.jsonl` (a JSON list a
line) and `.json` (a list of lists).  Read as a user has them: UTF-8 with or
without a byte-order mark, `\\n` or `\\r\\n` line ends, blank lines skipped,
quoted fields in .csv/.tsv (a quoted field is a string: `"1"` is not `1`), no
comment syntax (`#` is a character like any other).  What each cell means is
`io.cells`' to say, for every reader alike.

Two readers give the same columns: a line reader in Python (any file; names the
line that is wrong), and for a plain file of WHOLE_FILE_BYTES or more (ASCII, no
quotes, no blank cells, one width: io.whole_files) a reader over the whole text in numpy, whose
columns are int64 or fixed-width bytes arrays.  A column that mixes kinds is a
list of values either way.  The checker and the run read a file through
`read_relation` once per compile (io.file_reads), so both see one relation.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .cells import cell_value, ends_quoted, json_value, split_quoted
from .source_files import DuplicateKey, SourceError, json_unique_keys, read_text

RELATION_SUFFIXES = (".csv", ".tsv", ".facts", ".json", ".jsonl")
_SEPARATORS = {".csv": ",", ".tsv": "\t", ".facts": "\t"}
_LOWER_WORD = re.compile(r"[a-z_][a-z0-9_ ]*\Z")


@dataclass(frozen=True)
class RelationFile:
    """A relation file's columns: each an int64 or bytes numpy array (the whole-file
    reader) or a tuple of values (int, float, str)."""

    columns: tuple[Any, ...]
    rows: int
    # the first row, read as data, when it looks like a header (`header-row`)
    header: tuple[str, ...] | None = None

    def column_values(self, c: int) -> list:
        """Column `c` as Python values (bytes decoded)."""
        column = self.columns[c]
        if hasattr(column, "dtype"):
            if column.dtype.kind == "S":
                return column.astype("U").tolist()
            return column.tolist()
        return list(column)

    def tuples(self) -> list[tuple]:
        """The rows, as tuples of values (for tests and small files)."""
        return list(zip(*(self.column_values(c) for c in range(len(self.columns)))))


def read_relation(path: Path, header: bool | None = None, whole: bool = True,
                  tensor: str | None = None) -> RelationFile:
    """The relation in the file at `path` (SourceError with the line that is wrong).
    `header`: True skips the first row, False reads it as data, None reads it as
    data and says whether it looks like a header.  `whole`: a large plain file may
    be read by the whole-file reader (tests compare the two).  `tensor`: the entry
    of a .json object that holds one per tensor.  A `.facts` file has no header
    (Soufflé writes none): its first row is data unless `header` says otherwise."""
    suffix = path.suffix.lower()
    if suffix == ".facts" and header is None:
        header = False
    if suffix in (".json", ".jsonl"):
        rows = list(_json_rows(path, suffix, tensor))
        return _from_rows(rows, header)
    if suffix not in _SEPARATORS:
        raise SourceError(f"a relation reads {', '.join(RELATION_SUFFIXES)} files, not "
                          f"{suffix or 'a file without a suffix'}")
    text = read_text(path)  # (without a byte-order mark)
    sep = _SEPARATORS[suffix]
    if whole and len(text) >= _whole_file_bytes():
        from .whole_files import split_relation

        plain = text.replace("\r\n", "\n") if "\r" in text else text
        first, _, rest = plain.partition("\n")
        nullary = f"\n{NULLARY}\n" in f"\n{plain}\n"  # a line `()`: the line reader's
        split = split_relation(rest, sep, quoted=suffix != ".facts") \
            if first.strip() and not nullary else None
        if split is not None:
            first_row = _line_values(first, sep, suffix != ".facts", 1)
            if len(first_row) == len(split):
                return _with_first_row(first_row, split, header)
    return _from_rows(list(_text_rows(text, sep, suffix != ".facts")), header)


def _whole_file_bytes() -> int:
    from . import whole_files

    return whole_files.WHOLE_FILE_BYTES


def _text_rows(text: str, sep: str, quoted: bool) -> Iterator[list]:
    """The rows of a .csv/.tsv/.facts text: a line each (`\\n` or `\\r\\n`), blank
    lines skipped; in .csv/.tsv a quoted field may hold line breaks (as a sink
    writes a string with one, and RFC 4180 reads it); Soufflé's `()` is the tuple
    of a true nullary relation."""
    width = -1
    lines = text.split("\n")
    k = 0
    while k < len(lines):
        number, line = k + 1, lines[k]
        k += 1
        if not line.strip(_BLANKS):
            continue
        if quoted and '"' in line and ends_quoted(line, sep):
            parts = [line]  # (the line breaks, and a \r before one, are the field's)
            while k < len(lines):
                k += 1
                parts.append(lines[k - 1])
                if not ends_quoted(parts[-1], sep, inside=True):
                    break
            line = "\n".join(parts)  # (still open at the end: the parse says so)
        row = _line_values(line, sep, quoted, number)
        if width < 0:
            width = len(row)
        elif len(row) != width:
            raise SourceError(f"line {number} has {len(row)} field{'s' * (len(row) != 1)}, the first row has "
                              f"{width}")
        yield row


_BLANKS = " \t\r"  # what a blank line holds (a line of U+00A0 or U+3000 holds a value)
NULLARY = "()"  # Soufflé's line for the one tuple of a true nullary relation


def _line_values(line: str, sep: str, quoted: bool, number: int) -> list:
    if line.endswith("\r"):
        line = line[:-1]
    if line.strip(_BLANKS) == NULLARY:
        return []
    if not quoted:
        fields = [(field, False) for field in line.split(sep)]
    else:
        try:
            fields = split_quoted(line, sep)
        except ValueError as err:
            raise SourceError(f"line {number}: {err}") from None
    if "\r" in line and any("\r" in field for field, was_quoted in fields if not was_quoted):
        raise SourceError(_LONE_CR.format(number=number))
    if line.startswith("\ufeff"):  # (the file's own was taken off: io.source_files)
        raise SourceError(f"line {number} starts with a byte-order mark (U+FEFF), which "
                          f"would be read as a character of its first value: files joined "
                          f"together (cat a.csv b.csv)? remove it")
    return [cell_value(field, was_quoted) for field, was_quoted in fields]


# A carriage return that ends no line (old Mac line ends, `\r` alone) would be read
# as a character of a value, every line one tuple: refused (a quoted field keeps one)
_LONE_CR = ("line {number} holds a carriage return (\\r) that is not followed by a line "
            "feed: lines end in \\n or \\r\\n (a file saved with old Mac line ends? "
            "convert them to \\n)")


def _json_rows(path: Path, suffix: str, tensor: str | None) -> Iterator[list]:
    text = read_text(path)  # (without a byte-order mark)
    if suffix == ".json":
        data = json_entry(parse_json(text), tensor)
        if not isinstance(data, list) or not all(isinstance(r, list) for r in data):
            raise SourceError("a relation in .json is a list of lists (one per tuple)")
        numbered: Any = enumerate(data, 1)
        where = "tuple"
    else:
        numbered = ((k, parse_json(line, f"line {k} ")) for k, line in
                    enumerate(text.split("\n"), 1) if line.strip())
        where = "line"
    width = -1
    for k, item in numbered:
        row = item if isinstance(item, list) else [item]
        try:
            values = [json_value(cell) for cell in row]
        except ValueError as err:
            raise SourceError(f"{where} {k}: {err}") from None
        if width < 0:
            width = len(values)
        elif len(values) != width:
            raise SourceError(f"{where} {k} has {len(values)} field{'s' * (len(values) != 1)}, "
                              f"the first has {width}")
        yield values


def _from_rows(rows: list[list], header: bool | None) -> RelationFile:
    if header and rows:
        rows = rows[1:]
    if not rows:
        return RelationFile((), 0)
    columns = tuple(zip(*rows))
    looks = None
    if header is None and looks_like_header(rows[0], [c[1:] for c in columns]):
        looks = tuple(rows[0])
    return RelationFile(columns, len(rows), looks)


def _with_first_row(first: list, rest: list, header: bool | None) -> RelationFile:
    """The whole-file reader's columns of every row but the first, and the first
    row read line by line (a header, if any, is there)."""
    import numpy as np

    rows = len(rest[0]) if rest else 0
    if header:
        return RelationFile(tuple(rest), rows)
    looks = None
    if header is None:
        looks = tuple(first) if looks_like_header(first, rest) else None
    columns = []
    for value, column in zip(first, rest):
        kind = getattr(column, "dtype", None)
        if kind is not None and kind.kind == "i" and type(value) is int:
            columns.append(np.concatenate([np.array([value], dtype=np.int64), column]))
        elif kind is not None and kind.kind == "S" and type(value) is str and value.isascii() \
                and value:
            columns.append(np.concatenate([np.array([value.encode()]), column]))
        else:
            values = column.astype("U").tolist() if kind is not None and kind.kind == "S" \
                else (column.tolist() if kind is not None else list(column))
            columns.append(tuple([value] + values))
    return RelationFile(tuple(columns), rows + 1, looks)


def looks_like_header(first: list, rest: list) -> bool:
    """Whether a relation file's first row looks like a header (docs/language.md):
    every cell a symbol seen nowhere else in its column, and some column either
    all numbers below it, or headed by a lowercase word (`parent`, `node_id`)
    over values none of which is one."""
    if not rest or not len(rest[0]) or not first or not all(type(v) is str and v for v in first):
        return False
    telling = False
    for value, column in zip(first, rest):
        below = _kinds(column)
        if value in below["values"]:
            return False
        if below["numbers"]:
            telling = True
        elif _LOWER_WORD.match(value) and not below["lower"]:
            telling = True
    return telling


def _kinds(column: Any) -> dict:
    """What a header test asks of the cells below the first row."""
    kind = getattr(column, "dtype", None)
    if kind is not None and kind.kind in "if":
        return {"values": (), "numbers": len(column) > 0, "lower": False}
    values = column.astype("U").tolist() if kind is not None else list(column)
    if not values:
        return {"values": (), "numbers": False, "lower": False}
    return {"values": set(values),
            "numbers": all(type(v) is not str for v in values),
            "lower": any(type(v) is str and _LOWER_WORD.match(v) for v in values)}


def parse_json(text: str, where: str = "") -> object:
    """JSON text as Python data; SourceError (`where`: "line 3 ") when it is not JSON
    or nests too deeply to read."""
    try:
        return json_unique_keys(text)
    except json.JSONDecodeError as err:
        raise SourceError(f"{where}is not JSON ({err.msg})" if where else
                          f"not JSON ({err})") from None
    except RecursionError:
        raise SourceError(f"{where or 'the JSON '}nests too deeply to read") from None
    except DuplicateKey as err:  # JSON keeps the last silently: the first's data lost
        raise SourceError(f"{where or 'the JSON '}names {err.args[0]!r} twice in one "
                          f"object; which one is meant?") from None


def json_entry(data: object, tensor: str | None) -> object:
    """A .json source's data for `tensor`: an object holds one entry per tensor
    (or a single one); anything else is the data itself."""
    if not isinstance(data, dict):
        return data
    if tensor in data:
        return data[tensor]
    if len(data) == 1:
        return next(iter(data.values()))
    raise SourceError(f"holds no entry named {tensor}")
