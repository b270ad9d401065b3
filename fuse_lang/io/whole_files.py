"""Large, plain relation files read whole, column by column (docs/scale.md,
"Reading large relation files").

The checker numbers a relation file's symbols per domain in order of first
appearance, row by row.  `io.text_sources` reads small or irregular files row by
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
# the ASCII characters _NOT_PLAIN finds (str.isspace's, but tab and newline, and NUL)
_NOT_PLAIN_ASCII = (0x0, 0xB, 0xC, 0xD, 0x1C, 0x1D, 0x1E, 0x1F, 0x20)


def split_columns(text: str, sep: str) -> list | None:
    """A plain relation file's cells, one array per column: int64 when the file
    holds integers only, fixed-width bytes for ASCII symbols, else lists of str.
    None when the file is small or not plain (see WHOLE_FILE_BYTES)."""
    if len(text) < WHOLE_FILE_BYTES or text.startswith(("\n", sep)) \
            or "\n\n" in text or sep + sep in text or sep + "\n" in text or "\n" + sep in text \
            or text.endswith(sep):
        return None  # what the row-by-row reader would strip, or a blank line or cell
    import numpy as np

    if not text.endswith("\n"):
        text += "\n"
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    if text.isascii():  # the same test, in C over the bytes
        not_plain = np.zeros(256, dtype=bool)
        not_plain[list(_NOT_PLAIN_ASCII)] = True
        if not_plain[raw].any():
            return None
    elif _NOT_PLAIN.search(text):
        return None
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


def relation_of_columns(columns: list) -> tuple[tuple, int, tuple, tuple] | None:
    """(columns' distinct values, rows, integers, symbols) as `SourceInfo`
    describes them: a symbol column's values in order of first appearance, an
    integer column's in increasing order, with (column, largest) in `integers`
    (positions are not numbered); per symbol column, (column, its values, their
    ranks): each value's place among the symbols' first appearances, row by row,
    the order the checker numbers them in.  None when a column mixes integers and
    symbols (the row-by-row reader numbers those)."""
    import numpy as np

    width, rows = len(columns), len(columns[0])
    values: list[list[Any]] = []
    integers, symbols, keys = [], [], []
    for c, column in enumerate(columns):
        if isinstance(column, np.ndarray) and column.dtype.kind == "i":
            distinct = np.unique(column).tolist()
            values.append(distinct)
            integers.append((c, distinct[-1]))
            continue
        appearances = _first_appearances(column)
        if appearances is None:
            return None
        first_rows, distinct, cells = appearances
        values.append(distinct)
        keys.append(first_rows * width + c)  # the cell's place, row by row
        symbols.append((c, distinct, cells))
    ranked = None
    if keys:
        order = np.argsort(np.concatenate(keys))  # (the places are distinct)
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        parts = np.split(rank, np.cumsum([len(k) for k in keys])[:-1])
        ranked = RankedSymbols({c: (distinct, part, cells)
                                for (c, distinct, cells), part in zip(symbols, parts)})
    return tuple(tuple(v) for v in values), rows, tuple(integers), ranked


class RankedSymbols:
    """A relation file's symbols in the order the checker numbers them: per
    symbol column, its distinct values in order of first appearance, each one's
    rank among all the columns' first appearances, row by row (`count` of them in
    all), and the values as fixed-width bytes (None when not ASCII).  Kept with
    the file's reading (io.file_reads): a second analysis of the same file in
    one compile reuses its merged columns and numbered symbols."""

    # numbers start this far past the symbols met before, so that a second
    # analysis that meets a few more (demand mode's rewrite) keeps the same ones
    SLACK = 1 << 20

    def __init__(self, columns: dict[int, tuple[list[str], Any, Any]]) -> None:
        self.columns = columns
        self.count = sum(len(values) for values, _, _ in columns.values())
        self._base: int | None = None
        self._numbered: dict[tuple, dict] = {}

    def base_after(self, seen: int) -> int:
        """The first number of this file's symbols when `seen` numbers are taken:
        the last analysis' where it is still free."""
        if self._base is None or self._base <= seen:
            self._base = seen + 1 + self.SLACK
            self._numbered.clear()
        return self._base

    def numbered(self, columns: tuple[int, ...], span: Any) -> dict:
        """{symbol: (number, span)} of these columns (of one domain), numbered from
        `base_after`'s base in rank order, each symbol at its first appearance.
        Shared: copy it before changing it."""
        assert self._base is not None
        known = self._numbered.get((columns, span))
        if known is None:
            import itertools

            values, ranks = self._merged(columns)
            known = self._numbered[(columns, span)] = dict(zip(
                values, zip((ranks + self._base).tolist(), itertools.repeat(span))))
        return known

    def _merged(self, columns: tuple[int, ...]) -> tuple[list[str], Any]:
        """The distinct values of these columns in rank order, with the rank each
        first appears at."""
        if len(columns) == 1:
            return self.columns[columns[0]][:2]
        import numpy as np

        parts = [self.columns[c] for c in columns]
        ranks = np.concatenate([part[1] for part in parts])
        order = np.argsort(ranks)
        every = np.array([v for part in parts for v in part[0]], dtype=object)
        if all(part[2] is not None for part in parts):  # in C: the first of each value
            width = max(part[2].dtype.itemsize for part in parts)
            cells = np.concatenate([part[2].astype(f"S{width}") for part in parts])[order]
            if width <= 8:
                cells = np.ascontiguousarray(cells.astype("S8")).view(np.uint64)
            first = order[np.sort(np.unique(cells, return_index=True)[1])]
            return every[first].tolist(), ranks[first]
        every = every[order]
        seen = dict(zip(every[::-1].tolist(), ranks[order][::-1].tolist()))  # the first kept
        values = list(dict.fromkeys(every.tolist()))
        return values, np.fromiter(map(seen.__getitem__, values), np.int64, len(values))


def _first_appearances(column: Any) -> tuple[Any, list[str], Any] | None:
    """The rows where each distinct value first appears (increasing), the values,
    and the same as bytes (None for a column of str); None when a value reads as
    an integer (all digits, or a leading minus)."""
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
        distinct = column[first]
        if numeric_bytes(distinct):
            return None
        return first, distinct.astype("U").tolist(), distinct
    rows = len(column)
    first_row = dict(zip(reversed(column), range(rows - 1, -1, -1)))  # value -> first row
    distinct = sorted(first_row, key=first_row.__getitem__)
    if any(map(str.isdigit, distinct)) or any(v.startswith("-") for v in distinct):
        return None
    return (np.fromiter(map(first_row.__getitem__, distinct), np.int64, len(distinct)),
            distinct, None)


def numeric_bytes(cells: Any) -> bool:
    """Whether a fixed-width bytes array (NUL-padded ASCII cells, none empty) holds
    a cell that is all digits or starts with a minus: what `str.isdigit` and
    `startswith("-")` say of each, in C."""
    import numpy as np

    if cells.size == 0:
        return False
    grid = np.ascontiguousarray(cells).view(np.uint8).reshape(cells.size, cells.dtype.itemsize)
    digits = ((grid >= ord("0")) & (grid <= ord("9"))) | (grid == 0)
    return bool((digits.all(axis=1) & (grid[:, 0] != 0)).any() or (grid[:, 0] == ord("-")).any())
