"""Large, plain relation files read whole, column by column (docs/scale.md,
"Reading large relation files").

`io.relation_files` reads small or irregular files line by line in Python (and
names a bad line); a plain file of WHOLE_FILE_BYTES or more is cut into cells by
numpy over its bytes: a column of integers becomes int64 (parsed in C), a column
of symbols a fixed-width byte array whose `np.unique(..., return_index=True)`
gives each symbol's first row.  A cell is what `io.cells` says it is: a column
whose cells are of several kinds, or that holds a cell numpy cannot tell
(a float, a 19-digit integer), is read cell by cell through `io.cells`.  numpy is
imported here only for such a file: a small program's check never pays for it.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from .cells import SAFE_DIGITS, cell_value

# From this many bytes a plain relation file is split whole; a smaller one, or one
# with blank lines or cells, spaces, "\r", NUL, quotes or non-ASCII text, or rows
# of differing widths, is read line by line (which names the line that is wrong).
WHOLE_FILE_BYTES = 1 << 16
# the ASCII characters that make a file not plain (str.isspace's, but tab and
# newline, and NUL)
_NOT_PLAIN_ASCII = (0x0, 0xB, 0xC, 0xD, 0x1C, 0x1D, 0x1E, 0x1F, 0x20)
_NUMBER_BYTES = b"0123456789+-.eE"
# Integers (ids) are numbered and looked up by a table over their range instead of
# a sort or a search where the range is at most this many times as long as they
# are many (benchmarks/speed_tricks.py measures it)
RANGE_TABLE_FACTOR = 2


def fits_range_table(span: int, count: int) -> bool:
    """Whether `count` integers over a range of `span` take a table over it."""
    return span < RANGE_TABLE_FACTOR * count + 1024


def split_relation(text: str, sep: str, quoted: bool) -> list | None:
    """A plain relation file's columns (its text after any first line): int64
    arrays, fixed-width bytes arrays of symbols, or tuples of values (a column of
    several kinds).  None when the file is not plain (see WHOLE_FILE_BYTES)."""
    if not text or not text.isascii() or (quoted and '"' in text):
        return None  # what the line reader would decode or unquote
    import numpy as np

    if not text.endswith("\n"):
        text += "\n"
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    low = raw <= max(_NOT_PLAIN_ASCII)  # (a comparison a byte: a table lookup costs 20x)
    if low.any():
        not_plain = np.zeros(256, dtype=bool)
        not_plain[list(_NOT_PLAIN_ASCII)] = True
        if not_plain[raw[low]].any():
            return None
    is_end = (raw == 10) | (raw == ord(sep))  # each cell's end: a separator or line end
    if is_end[0] or (is_end[1:] & is_end[:-1]).any():
        return None  # a blank line or cell (what the line reader would strip)
    ends = np.flatnonzero(is_end)
    line_end = raw[ends] == 10
    lines = int(np.count_nonzero(line_end))
    width = ends.size // lines
    if width * lines != ends.size or not line_end[width - 1::width].all():
        return None  # rows of differing widths
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    longest = int(lengths.max())
    numbers = _integers(raw, text, sep, starts, lengths, longest)
    if numbers is not None:
        return [np.ascontiguousarray(numbers[c::width]) for c in range(width)]
    grid = np.zeros((ends.size, longest), dtype=np.uint8)
    for k in range(longest):  # the k-th byte of every cell that has one
        has = lengths > k
        grid[has, k] = raw[starts[has] + k]
    cells = grid.view(f"S{longest}").reshape(-1)
    return [_column(np.ascontiguousarray(cells[c::width]), grid[c::width])
            for c in range(width)]


def _integers(raw: Any, text: str, sep: str, starts: Any, lengths: Any, longest: int) -> Any:
    """Every cell parsed in C when the file holds integers only (a sign, then
    digits), each within 64 bits; None otherwise (a cell that io.cells reads
    otherwise: the cell-by-cell path decides)."""
    import numpy as np

    if longest > SAFE_DIGITS + 2:
        return None
    # every byte a digit, a sign, the separator or a line end (counted by comparisons)
    signs = np.flatnonzero((raw == ord("+")) | (raw == ord("-")))
    digits = np.count_nonzero((raw - np.uint8(ord("0"))) < 10)  # (below "0" wraps past 9)
    if digits + signs.size + starts.size != raw.size:  # (a cell a separator or line end)
        return None
    if signs.size:  # a sign only first in its cell, a digit after it
        kinds = np.zeros(256, dtype=np.uint8)  # 1: digit, 2: sign, 3: separator
        kinds[ord("0"):ord("9") + 1] = 1
        kinds[[ord("+"), ord("-")]] = 2
        kinds[[10, ord(sep)]] = 3
        of = kinds[raw]
        if (signs + 1 >= raw.size).any() or (of[signs + 1] != 1).any() \
                or ((signs > 0) & (of[np.maximum(signs - 1, 0)] != 3)).any():
            return None
        if ((lengths - (of[starts] == 2)) < 1).any():  # a sign alone
            return None
    elif (lengths < 1).any():
        return None
    numbers = np.fromstring(text[:-1].replace("\n", sep), dtype=np.int64, sep=sep)
    if numbers.size != starts.size or (numbers == np.iinfo(np.int64).max).any() \
            or (numbers == np.iinfo(np.int64).min).any():
        return None  # strtoll holds a value past 64 bits at a bound: cell by cell instead
    return numbers


def _column(cells: Any, grid: Any) -> Any:
    """One column's cells as int64 when every one is an integer io.cells parses
    alike, as bytes when none can be a number, else as values cell by cell."""
    import numpy as np

    if cells.size == 0:
        return cells
    digit = (grid >= ord("0")) & (grid <= ord("9"))
    signed = (grid[:, 0] == ord("+")) | (grid[:, 0] == ord("-"))
    count = digit.sum(axis=1)
    integer = (digit[:, 0] | signed) & (digit | (grid == 0))[:, 1:].all(axis=1) \
        & (count >= 1) & (count <= SAFE_DIGITS + 1)
    if integer.all():
        try:  # (a 19-digit integer past 2^63-1 is a symbol: cell by cell below)
            return cells.astype(np.int64)
        except OverflowError:
            pass
    numberish = np.zeros(256, dtype=bool)
    numberish[list(_NUMBER_BYTES)] = numberish[0] = True
    if integer.any() or numberish[grid].all(axis=1).any():
        return tuple(cell_value(v) for v in cells.astype("U").tolist())
    return cells


def relation_of_columns(columns: list) -> tuple[tuple, int, Any]:
    """(columns' distinct values, rows, ranked) as `SourceInfo` describes them:
    each column's values in order of first appearance, and a RankedSymbols:
    per column, its values and their ranks, each value's place among the
    columns' first appearances row by row, the order the checker numbers them in."""
    import numpy as np

    width, rows = len(columns), len(columns[0])
    values: list[list[Any]] = []
    parts, keys = [], []
    for c, column in enumerate(columns):
        first_rows, distinct, cells = _first_appearances(column)
        values.append(distinct)
        keys.append(first_rows * width + c)  # the cell's place, row by row
        parts.append((c, distinct, cells))
    order = _order_of_distinct(np.concatenate(keys), rows * width)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    split = np.split(rank, np.cumsum([len(k) for k in keys])[:-1])
    ranked = RankedSymbols({c: (distinct, part, cells)
                            for (c, distinct, cells), part in zip(parts, split)})
    return tuple(tuple(v) for v in values), rows, ranked


class RankedSymbols:
    """A relation file's symbols in the order the checker numbers them: per
    symbol column, its distinct values in order of first appearance, each one's
    rank among all the columns' first appearances, row by row (`count` of them in
    all), and the values as an array: int64 for a column of integers, else
    fixed-width bytes (None when not ASCII).  Kept with
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

    def numbered(self, columns: tuple[int, ...], span: Any) -> "NumberedSymbols":
        """{symbol: (number, span)} of these columns (of one domain), numbered from
        `base_after`'s base in rank order, each symbol at its first appearance.
        Shared: copy it before changing it."""
        assert self._base is not None
        known = self._numbered.get((columns, span))
        if known is None:
            values, ranks = self._merged(columns)
            known = self._numbered[(columns, span)] = NumberedSymbols(
                values, ranks + self._base, span)
        return known

    def _merged(self, columns: tuple[int, ...]) -> tuple[list[str], Any]:
        """The distinct values of these columns in rank order, with the rank each
        first appears at."""
        if len(columns) == 1:
            return self.columns[columns[0]][:2]
        import numpy as np

        parts = [self.columns[c] for c in columns]
        ranks = np.concatenate([part[1] for part in parts])
        order = _order_of_distinct(ranks, self.count)  # (the ranks are distinct)
        kinds = {part[2].dtype.kind if part[2] is not None else None for part in parts}
        every = np.empty(len(ranks), dtype=object)  # the columns' own values (no copies)
        at = 0
        for part in parts:
            every[at:at + len(part[0])] = part[0]
            at += len(part[0])
        if kinds == {"i"}:  # columns of integers, in C: the first of each value
            numbers = np.concatenate([part[2] for part in parts])[order]
            first = order[_first_rows(numbers)[0]]
            return every[first].tolist(), ranks[first]
        if kinds == {"S"}:  # in C: the first of each value
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


def _first_appearances(column: Any) -> tuple[Any, list, Any]:
    """The rows where each distinct value first appears (increasing), the values,
    and the same as an array (int64 or fixed-width bytes; None for a column of
    neither)."""
    import numpy as np

    if isinstance(column, np.ndarray) and column.dtype.kind == "i":
        first, distinct = _first_rows(column)
        return first, distinct.tolist(), distinct
    if isinstance(column, np.ndarray):  # fixed-width bytes: compared as uint64 words
        size = column.dtype.itemsize
        padded = column.astype(f"S{size - size % 8 + 8}") if size % 8 else column
        words = np.ascontiguousarray(padded).view(np.uint64).reshape(column.size, -1)
        if words.shape[1] == 1:
            first = np.unique(words[:, 0], return_index=True)[1]
        else:
            first = np.unique(words, axis=0, return_index=True)[1]
        first = np.sort(first)
        distinct = column[first]
        return first, distinct.astype("U").tolist(), distinct
    rows = len(column)
    first_row = dict(zip(reversed(column), range(rows - 1, -1, -1)))  # value -> first row
    distinct = sorted(first_row, key=first_row.__getitem__)
    return (np.fromiter(map(first_row.__getitem__, distinct), np.int64, len(distinct)),
            distinct, None)


def _first_rows(column: Any) -> tuple[Any, Any]:
    """Of a column of integers: the row where each distinct value first appears
    (increasing) and the values in that order.  Where the values span a range
    not much wider than the column (ids), by a table over the range (linear);
    else by np.unique's sort."""
    import numpy as np

    size = column.size
    low = int(column.min()) if size else 0
    if size and fits_range_table(int(column.max()) - low + 1, size):
        first = np.full(int(column.max()) - low + 1, size, dtype=np.int64)
        np.minimum.at(first, column - low, np.arange(size))  # (the least row wins)
        held = np.flatnonzero(first < size)
        rows = first[held]
        order = _order_of_distinct(rows, size)
        return rows[order], column[rows[order]]
    distinct, rows = np.unique(column, return_index=True)
    order = np.argsort(rows)
    return rows[order], distinct[order]


def _order_of_distinct(keys: Any, bound: int) -> Any:
    """np.argsort of distinct integers in [0, bound): by a table over the bound
    (linear) where the keys fill a good part of it, else by a sort."""
    import numpy as np

    if not fits_range_table(bound, keys.size):
        return np.argsort(keys)
    slots = range_positions(keys, 0, bound)
    return slots[slots >= 0]


def range_positions(keys: Any, low: int, span: int) -> Any:
    """A table over [low, low + span) of distinct integers `keys`: each key's
    position in `keys` at key - low, -1 where no key is (a lookup without a
    search, for keys that fill a good part of their range: fits_range_table)."""
    import numpy as np

    slots = np.full(span, -1, dtype=np.int64)
    slots[keys - low if low else keys] = np.arange(keys.size)
    return slots


class NumberedSymbols(Mapping):
    """{symbol: (number, span)} of a relation file's column, read from its arrays:
    the symbols in numbering order, their numbers and the one span.  A run mostly
    iterates the symbols (the domain's values in order); the table by symbol (a
    dict of every symbol, tens of MB for a few hundred thousand) is made only
    when a symbol is looked up."""

    def __init__(self, values: list, numbers: Any, span: Any) -> None:
        self._values = values
        self._numbers = numbers
        self._span = span
        self._index: dict | None = None

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator:
        return iter(self._values)

    def __contains__(self, value: object) -> bool:
        return value in self._by_symbol()

    def __getitem__(self, value: Any) -> tuple[int, Any]:
        return int(self._numbers[self._by_symbol()[value]]), self._span

    def items(self) -> Any:  # in numbering order, without the table by symbol
        return zip(self._values, zip(self._numbers.tolist(), itertools.repeat(self._span)))

    def _by_symbol(self) -> dict:
        if self._index is None:
            self._index = {value: k for k, value in enumerate(self._values)}
        return self._index
