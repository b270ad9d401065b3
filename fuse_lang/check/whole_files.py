"""Large, plain relation files read whole, column by column (docs/scale.md,
"Reading large relation files").

The checker numbers a relation file's symbols per domain in order of first
appearance, row by row.  `check.sources` reads small or irregular files row by
row in Python (and names a bad row); a plain file of WHOLE_FILE_BYTES or more
is cut into cells by numpy over its bytes: integers are parsed in C
(`np.fromstring`), ASCII symbols become a fixed-width byte array whose
`np.unique(..., return_index=True)` gives each symbol's first row.  numpy is
imported here only for such a file: a small program's check never pays for it.
"""
from __future__ import annotations

import re
from typing import Any

# From this many bytes a plain relation file is split whole; a smaller one, or one
# with blank lines or cells, spaces, "\r" or NUL, or rows of differing widths,
# is read row by row (which names the row that is wrong).
WHOLE_FILE_BYTES = 1 << 16
_NOT_PLAIN = re.compile(r"[^\S\t\n]|\x00")  # whitespace but tabs and newlines, or NUL


def split_columns(text: str, sep: str) -> list | None:
    """A plain relation file's cells, one array per column: int64 when the file
    holds integers only, fixed-width bytes for ASCII symbols, else lists of str.
    None when the file is small or not plain (see WHOLE_FILE_BYTES)."""
    if len(text) < WHOLE_FILE_BYTES or _NOT_PLAIN.search(text) or text.startswith(("\n", sep)) \
            or "\n\n" in text or sep + sep in text or sep + "\n" in text or "\n" + sep in text \
            or text.endswith(sep):
        return None  # what the row-by-row reader would strip, or a blank line or cell
    import numpy as np

    if not text.endswith("\n"):
        text += "\n"
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    line_ends = np.flatnonzero(raw == 10)
    seps = np.flatnonzero(raw == ord(sep))
    per_line = np.diff(np.searchsorted(seps, line_ends), prepend=0)  # separators per line
    if (per_line != per_line[0]).any():
        return None
    width = int(per_line[0]) + 1
    flat = text[:-1].replace("\n", sep)
    digits = flat.replace(sep, "")
    if digits.isascii() and digits.isdigit():  # no symbol, no sign: parsed in C
        numbers = np.fromstring(flat, dtype=np.int64, sep=sep)  # (text mode: not deprecated)
        return [numbers[c::width] for c in range(width)]
    if not text.isascii():
        cells = flat.split(sep)
        return [cells[c::width] for c in range(width)]
    ends = np.flatnonzero((raw == 10) | (raw == ord(sep)))  # each cell's end
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    longest = int(lengths.max())
    grid = np.zeros((ends.size, longest), dtype=np.uint8)
    for k in range(longest):  # the k-th byte of every cell that has one
        has = lengths > k
        grid[has, k] = raw[starts[has] + k]
    cells = grid.view(f"S{longest}").reshape(-1)
    return [cells[c::width] for c in range(width)]


def relation_of_columns(columns: list) -> tuple[tuple, int, tuple] | None:
    """(columns' distinct values, rows, first_seen) as `check.sources` describes
    them: a symbol column's values in order of first appearance, an integer
    column's in increasing order with only its largest in first_seen (positions
    are not numbered), the symbols' first appearances row by row.  None when a
    column mixes integers and symbols (the row-by-row reader numbers those)."""
    import numpy as np

    width, rows = len(columns), len(columns[0])
    values: list[list[Any]] = []
    places, keys, integers = [], [], []
    for c, column in enumerate(columns):
        if isinstance(column, np.ndarray) and column.dtype.kind == "i":
            distinct = np.unique(column).tolist()
            values.append(distinct)
            integers.append((c, distinct[-1]))
            continue
        first_rows, distinct = _first_appearances(column)
        if any(map(str.isdigit, distinct)) or any(v.startswith("-") for v in distinct):
            return None
        values.append(distinct)
        keys.append(first_rows * width + c)  # the cell's place, row by row
        places += [(c, v) for v in distinct]
    order = np.argsort(np.concatenate(keys), kind="stable").tolist() if keys else []
    seen = tuple(integers) + tuple(places[k] for k in order)
    return tuple(tuple(v) for v in values), rows, seen


def _first_appearances(column: Any) -> tuple[Any, list[str]]:
    """The rows where each distinct value first appears (increasing) and the values."""
    import numpy as np

    if isinstance(column, np.ndarray):  # fixed-width bytes: compared as uint64 words
        size = column.dtype.itemsize
        padded = column.astype(f"S{size - size % 8 + 8}") if size % 8 else column
        words = padded.view(np.uint64).reshape(column.size, -1)
        if words.shape[1] == 1:
            first = np.unique(words[:, 0], return_index=True)[1]
        else:
            first = np.unique(words, axis=0, return_index=True)[1]
        first = np.sort(first)
        return first, column[first].astype("U").tolist()
    rows = len(column)
    first_row = dict(zip(reversed(column), range(rows - 1, -1, -1)))  # value -> first row
    distinct = sorted(first_row, key=first_row.__getitem__)
    return np.fromiter(map(first_row.__getitem__, distinct), np.int64, len(distinct)), distinct
