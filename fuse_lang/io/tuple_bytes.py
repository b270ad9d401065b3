"""Lines of tuples as bytes, in bulk (a sink of millions of tuples in well under
a second).

A column is a table of texts (one per distinct value, `RelationTuples.shown`)
and each tuple's index into it.  Each text is encoded once into a row of a
padded byte matrix.  Where no text holds a NUL byte, each table's rows get
their delimiter (or line end) after the text, each tuple's cells are gathered
as whole rows (one fixed-width copy per column) and the padding is dropped at
the end; else a line's length is the sum of its cells' lengths plus one
delimiter or line end each, and the bytes are copied column by column and
character by character, one vectorized copy per character position.  Either
way the cost is the tuples times the longest cells, with no Python object per
tuple.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

Texts = tuple[np.ndarray, np.ndarray]  # a column's texts encoded: lengths, padded bytes


def lines_bytes(columns: Sequence[tuple[Texts, np.ndarray]], delimiter: str,
                made: dict | None = None) -> bytes:
    """One line per tuple: `columns` holds per column (texts, codes), the
    `encoded` texts of its distinct values and each tuple's index into them;
    cells are joined by `delimiter` (one character), each line ends in a newline.
    `made`: what was prepared from the same texts for an earlier chunk of tuples
    (a dict kept by the caller across its chunks)."""
    if not columns:
        return b""
    made = {} if made is None else made
    if all(_nul_free(texts, made) for texts, _ in columns):
        return _padded_lines(columns, delimiter, made)
    count = columns[0][1].size
    encoded = [texts for texts, _ in columns]
    widths = [lengths[codes] for (lengths, _), (_, codes) in zip(encoded, columns)]
    line = np.full(count, len(columns), dtype=np.int64)  # a delimiter or line end per cell
    for width in widths:
        line += width
    ends = np.cumsum(line)
    out = np.full(int(ends[-1]) if count else 0, ord(delimiter.encode()), dtype=np.uint8)
    if count:
        out[ends - 1] = ord("\n")
    start = ends - line  # where each line's first cell starts
    for (_, matrix), (_, codes), width in zip(encoded, columns, widths):
        for j in range(matrix.shape[1]):
            has = width > j  # the tuples whose cell has a j-th byte
            out[start[has] + j] = matrix[codes[has], j]
        start = start + width + 1
    return out.tobytes()


def _nul_free(texts: Texts, made: dict) -> bool:
    """Whether no text holds a NUL byte (the padding of `_padded_lines`)."""
    lengths, matrix = texts
    key = ("nul free", id(matrix))
    if key not in made:  # (the matrix kept with it: its id stays its own)
        made[key] = (matrix, bool(np.array_equal(np.count_nonzero(matrix, axis=1), lengths)))
    return made[key][1]


def _records(texts: Texts, end: str, made: dict) -> np.ndarray:
    """The texts each followed by `end`, padded with NULs to one width: a row a text."""
    lengths, matrix = texts
    key = ("records", id(matrix), end)
    if key not in made:
        table = np.zeros((matrix.shape[0], matrix.shape[1] + 1), dtype=np.uint8)
        table[:, :matrix.shape[1]] = matrix
        table[np.arange(matrix.shape[0]), lengths] = ord(end)
        made[key] = (matrix, table)
    return made[key][1]


def _padded_lines(columns: Sequence[tuple[Texts, np.ndarray]], delimiter: str,
                  made: dict) -> bytes:
    """`lines_bytes` where no text holds a NUL byte: per column a table of its
    texts each followed by the delimiter (the last column's by a newline),
    padded with NULs to one width, gathered for every tuple as fixed-width
    records (one field of a record a column); the NULs then dropped."""
    count = columns[0][1].size
    tables = [_records(texts, "\n" if k == len(columns) - 1 else delimiter, made)
              for k, (texts, _) in enumerate(columns)]
    fields = [np.ascontiguousarray(table).view(f"V{table.shape[1]}").reshape(-1)
              for table in tables]  # a row of a table: one value of `width` bytes
    lines = np.empty(count, dtype=[(f"c{k}", f.dtype) for k, f in enumerate(fields)])
    for k, (field, (_, codes)) in enumerate(zip(fields, columns)):
        lines[f"c{k}"] = field[codes]  # one gather a column
    return lines.tobytes().translate(None, b"\0")


def encoded(texts: Sequence[str]) -> Texts:
    """The texts' UTF-8 lengths and their bytes as rows of a padded matrix (once
    per column, however many chunks of tuples `lines_bytes` then writes)."""
    data = [str(t).encode("utf-8") for t in texts]
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    width = int(lengths.max()) if lengths.size else 0
    padded = np.frombuffer(b"".join(d.ljust(width, b"\0") for d in data), dtype=np.uint8)
    return lengths, padded.reshape(len(data), width)


def encoded_ints(values: np.ndarray) -> Texts:
    """`encoded` of ints' decimal texts, computed over the whole array (no string
    per value): the digits by division by ten, then copied in place for each
    group of texts of one length and sign."""
    values = np.asarray(values, dtype=np.int64)
    negative = values < 0
    rest = np.abs(values).astype(np.uint64)  # |-2^63| fits in 64 unsigned bits
    powers = np.array([10 ** k for k in range(20)], dtype=np.uint64)
    digits = np.searchsorted(powers, rest, side="right").clip(min=1)
    lengths = (digits + negative).astype(np.int64)
    width = int(lengths.max()) if lengths.size else 0
    most = int(digits.max()) if digits.size else 0
    by_place = np.empty((most, values.size), dtype=np.uint8)  # row k: the digit of 10^k
    ten = np.uint64(10)
    for k in range(most):
        by_place[k] = rest % ten + np.uint64(ord("0"))
        rest //= ten
    matrix = np.zeros((values.size, width), dtype=np.uint8)
    # (np.unique would import numpy.ma, ~10 ms of a process that writes one sink)
    for count in np.flatnonzero(np.bincount(digits)).tolist():
        for sign in (0, 1):
            rows = np.flatnonzero((digits == count) & (negative == bool(sign)))
            if rows.size:
                matrix[rows, sign:sign + count] = by_place[count - 1::-1, rows].T
                if sign:
                    matrix[rows, 0] = ord("-")
    return lengths, matrix
