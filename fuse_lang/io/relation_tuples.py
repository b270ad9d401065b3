"""A relation's tuples as values (LANGUAGE.md §14): the one reading of a Boolean
tensor (or a sparse tensor's non-zeros) as rows of column values, sorted by
value.  `fuse run`'s text and JSON, the editor's results and hover, query
answers and sinks all read relations through `relation_tuples`.

A position p on an axis is a value: `values[p]` where the axis has values (the
analysis' `domain_symbols` of its domain: symbols, ints, floats), else p itself
(a positional axis).  Tuples are sorted by their values, column by column, in
one total order over mixed types: numbers (ints and floats by magnitude, NaN
last) before strings, strings by their text.  A sparse value is read off its
stored entries, never made dense; the sort costs the tuples, not the cells.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from . import cells

AxisValues = Sequence[Any] | None  # an axis' values by position; None: positional


@dataclass(frozen=True, slots=True)
class RelationTuples:
    """A relation's tuples, sorted by value: per column a table of values
    (`values[a]`, an object array: the distinct values present, or the axis'
    whole table where it is not much longer) and each tuple's index into it
    (`codes[a]`), and each tuple's stored number (`weights`: 1 for a Boolean
    relation's tuples, the value of a numeric tensor's non-zero)."""
    count: int
    arity: int
    values: tuple[np.ndarray, ...]
    codes: tuple[np.ndarray, ...]
    weights: np.ndarray
    # per column, where its table holds only ints: them as an int64 array (a sink
    # formats them by arithmetic, io.tuple_bytes.encoded_ints); else None
    numbers: tuple[np.ndarray | None, ...] = ()

    def rows(self, start: int = 0, stop: int | None = None) -> list[tuple]:
        """Tuples `start` to `stop` (all by default), each a tuple of plain
        Python values (str, int, float)."""
        stop = self.count if stop is None else min(stop, self.count)
        if stop <= start:
            return []
        if not self.arity:
            return [()] * (stop - start)
        return list(zip(*self.columns(start, stop)))

    def columns(self, start: int = 0, stop: int | None = None) -> list[list]:
        """Per column the values of tuples `start` to `stop`."""
        part = slice(start, self.count if stop is None else stop)
        return [table[codes[part]].tolist() for table, codes in zip(self.values, self.codes)]


def relation_tuples(value: Any, axes: Sequence[AxisValues], boolean: bool = True
                    ) -> RelationTuples:
    """The tuples of `value` (a dense array, a scipy.sparse array of any number of
    axes, or a sparse tensor of fuse_lang.run.sparse, read through `on_numpy`)
    as values, sorted by value: the cells above 0 of a Boolean tensor
    (`boolean`), else the cells that are not 0 with their numbers as `weights`.
    `axes` gives each axis' values by position (None: positional)."""
    positions, weights = stored_entries(value, boolean)
    arity = len(positions)
    if arity == 0:
        return RelationTuples(int(weights.size), 0, (), (), weights)
    tables, codes, ranks, numbers = [], [], [], []
    for axis, at in enumerate(positions):
        named = axes[axis] if axis < len(axes) else None
        at = np.asarray(at, dtype=np.int64)
        whole = _whole_axis(at, named)
        table, code, rank = whole[:3] if whole is not None else _column(at, named)
        tables.append(table)
        codes.append(code)
        ranks.append(rank)
        numbers.append(whole[3] if whole is not None else None)
    order = _tuple_order(ranks)
    if order is not None:  # else the tuples came in order (a CSR matrix's, a dense array's)
        codes, weights = [c[order] for c in codes], weights[order]
    return RelationTuples(int(weights.size), arity, tuple(tables), tuple(codes), weights,
                          tuple(numbers))


def relation_tuple_chunks(value: Any, axes: Sequence[AxisValues], boolean: bool = True,
                          rows: int = 1 << 18) -> Iterator[RelationTuples]:
    """`relation_tuples(value, axes, boolean)` as consecutive chunks, in the same
    order, every chunk sharing the same `values` and `numbers` tables.  A
    two-axis relation (CSR or dense) whose positions ascend with their values
    on both axes (positional axes, or ids numbered in order) is read a block of
    about `rows` tuples at a time, straight from its rows: its tuples are never
    all in memory at once (a sink of millions of tuples then needs the memory of
    one block).  Any other comes as one chunk."""
    blocks = _row_blocks(value, axes, boolean, rows)
    yield from blocks if blocks is not None else (relation_tuples(value, axes, boolean),)


def _row_blocks(value: Any, axes: Sequence[AxisValues], boolean: bool, rows: int
                ) -> Iterator[RelationTuples] | None:
    """`relation_tuple_chunks`' blocks of rows, or None where they do not come
    in value order (see there)."""
    if hasattr(value, "on_numpy"):
        value = value.on_numpy()
        value = getattr(value, "matrix", None)  # run/sparse/csr.py's; an N-D one: None
    if getattr(value, "format", None) == "csr" and value.ndim == 2:
        if not value.has_canonical_format:  # (columns sorted and unique: a cached C check)
            return None
        count = int(value.nnz)
    elif isinstance(value, np.ndarray) and value.ndim == 2:
        count = int(np.count_nonzero(value > 0 if boolean else value != 0))
    else:
        return None
    tables = [_ascending_table(extent, axes[k] if k < len(axes) else None, count)
              for k, extent in enumerate(value.shape)]
    if any(t is None for t in tables):
        return None
    values = tuple(t[0] for t in tables)
    numbers = tuple(t[1] for t in tables)

    def chunk(at: np.ndarray, to: np.ndarray, data: np.ndarray) -> RelationTuples:
        keep = data > 0 if boolean else data != 0
        return RelationTuples(int(np.count_nonzero(keep)), 2, values, (at[keep], to[keep]),
                              data[keep], numbers)

    def csr_blocks() -> Iterator[RelationTuples]:
        indptr, start = value.indptr, 0
        while start < value.shape[0]:
            stop = max(start + 1, int(np.searchsorted(indptr, indptr[start] + rows, "right")) - 1)
            stop = min(stop, value.shape[0])
            lo, hi = int(indptr[start]), int(indptr[stop])
            at = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(indptr[start:stop + 1]))
            yield chunk(at, value.indices[lo:hi], value.data[lo:hi])
            start = stop

    def dense_blocks() -> Iterator[RelationTuples]:
        step = max(1, rows // max(1, value.shape[1]))
        for start in range(0, value.shape[0], step):
            block = value[start:start + step]
            at, to = np.nonzero(block > 0 if boolean else block != 0)
            yield chunk(at + start, to, block[at, to])

    return dense_blocks() if isinstance(value, np.ndarray) else csr_blocks()


def _ascending_table(extent: int, named: AxisValues, count: int
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """An axis' whole table of values (an object array) and them as int64s, where
    its values ascend with their positions (a positional axis, ids numbered in
    order) and it is not much longer than the relation's `count` tuples; else
    None (see `_axis_table`)."""
    whole = _axis_table(extent, named, count)
    if whole is None or whole[2] is not None:  # not ascending: ranks to sort by
        return None
    return whole[0], whole[1]


def _tuple_order(ranks: list[np.ndarray]) -> np.ndarray | None:
    """The order of the tuples by their columns' ranks, first column first (None:
    the order they come in): one key per tuple where the ranks' ranges multiply
    within 64 bits (a sort of one array, none when the tuples already come in
    order, as a CSR matrix's do, and a table instead of a sort when the keys'
    range is near their count), else `np.lexsort`."""
    key = np.zeros(ranks[0].size, dtype=np.int64)
    room = 1
    for rank in ranks:
        span = int(rank.max()) + 1 if rank.size else 1
        room *= span
        if room >= 1 << 62:
            return np.lexsort(ranks[::-1])
        key = key * span + rank
    if key.size < 2 or bool(np.all(key[1:] >= key[:-1])):
        return None
    if room <= 4 * key.size + 1024:  # distinct keys placed in a table, not sorted
        at = np.full(room, -1, dtype=np.int64)
        at[key] = np.arange(key.size, dtype=np.int64)
        order = at[at >= 0]
        if order.size == key.size:  # else a key repeats (a tuple given twice): sort
            return order
    return np.argsort(key, kind="stable")


def stored_entries(value: Any, boolean: bool) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The positions (one array per axis) and numbers of the cells kept."""
    if hasattr(value, "on_numpy"):  # a sparse tensor of run/sparse (any backend)
        value = value.on_numpy()
        if callable(getattr(value, "coords", None)):  # run/sparse/nd.py's relation
            coords, data = value.coords(), np.asarray(value.data)
        else:  # run/sparse/csr.py's tensor
            coo = value.matrix.tocoo()
            coords, data = tuple(coo.coords), coo.data
    elif hasattr(value, "tocoo"):  # scipy.sparse
        coo = value.tocoo()
        coords, data = tuple(coo.coords), coo.data
    else:
        dense = np.asarray(value)
        if dense.ndim == 0:
            kept = bool(dense > 0) if boolean else bool(dense != 0)
            return (), dense.reshape(1)[:int(kept)].astype(np.float64)
        coords = np.nonzero(dense > 0 if boolean else dense != 0)
        return coords, dense[coords]
    keep = data > 0 if boolean else data != 0
    return tuple(c[keep] for c in coords), data[keep]


def _column(at: np.ndarray, named: AxisValues) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A column's distinct values present (an object array), each tuple's index
    into them, and each tuple's rank in the order of values."""
    present, code = _distinct(at)
    if named is None:  # positional: the position is the value, and its order
        table = np.empty(present.size, dtype=object)
        table[:] = present.tolist()
        return table, code, at
    limit = len(named)
    if present.size and int(present[-1]) < limit and set(map(type, named)) == {int}:
        numbers = _int64(named)
        if numbers is not None:  # ids: looked up, ordered and shown in bulk
            found_ints = numbers[present]
            table = np.empty(present.size, dtype=object)
            table[:] = found_ints.tolist()
            rank = np.empty(present.size, dtype=np.int64)
            rank[np.argsort(found_ints, kind="stable")] = np.arange(present.size)
            return table, code, rank[code]
    found = [named[p] if p < limit else p for p in present.tolist()]
    kinds = set(map(type, found))
    if not kinds <= {int, float, str}:  # NumPy scalars read out, bools as numbers
        found = [_plain(v) for v in found]
        kinds = set(map(type, found))
    table = np.empty(len(found), dtype=object)
    table[:] = found
    rank = np.empty(len(found), dtype=np.int64)
    rank[_order_by_value(found, kinds)] = np.arange(len(found), dtype=np.int64)
    return table, code, rank[code]


def _order_by_value(found: list, kinds: set) -> Any:
    """The positions of `found` in the order of their values (`value_key`'s),
    in bulk where the values are all ints that fit 64 bits, all floats without
    NaN, or all strings: a column of a million values sorts in a fraction of a
    second.  Any other mix sorts by `value_key`."""
    if kinds == {int} or (kinds == {float} and not any(map(math.isnan, found))):
        try:
            numbers = np.array(found, dtype=np.int64 if kinds == {int} else np.float64)
        except OverflowError:  # an int past 64 bits: sorted one by one below
            pass
        else:
            return np.argsort(numbers, kind="stable")
    if kinds == {str}:
        return sorted(range(len(found)), key=found.__getitem__)
    return sorted(range(len(found)), key=lambda k: value_key(found[k]))


def _whole_axis(at: np.ndarray, named: AxisValues
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """`_column` where the axis' table is not much longer than the column: the
    whole table (positions, or ids) with the positions as codes, so no pass to
    find the values present; each position's rank, once per table (none where
    the values ascend with the positions: the positions are the ranks); and the
    table as int64s.  None where the table is long, holds anything but 64-bit
    ints, or the column has a position past it."""
    if at.size == 0 or int(at.min()) < 0:
        return None
    whole = _axis_table(int(at.max()) + 1, named, at.size)
    if whole is None:
        return None
    table, numbers, rank = whole
    return table, at, (at if rank is None else rank[at]), numbers


def _axis_table(extent: int, named: AxisValues, count: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """An axis' whole table for `count` tuples whose positions reach `extent`: its
    values (an object array), them as int64s and each position's rank (None when
    they ascend); None where the table is much longer than the tuples, holds
    anything but 64-bit ints, or is shorter than `extent`."""
    if named is None:  # positional: the positions are the values, in order
        if extent > 4 * count + 1024:
            return None
        table = np.empty(extent, dtype=object)
        table[:] = range(extent)
        return table, np.arange(extent, dtype=np.int64), None
    if len(named) > 4 * count + 1024 or extent > len(named):
        return None
    return _int_table(named)


# the last int tables and arrays made, by the identity of the axis' values (a
# relation's columns often share one domain; the values are an analysis' tuple,
# kept alive)
_INT_TABLES: list[tuple[Any, Any]] = []
_INT_ARRAYS: list[tuple[Any, Any]] = []


def int64_values(values: Sequence[Any], all_ints: bool = False) -> np.ndarray | None:
    """A domain's values as an int64 array, where every one is an int within 64
    bits; else None (`all_ints`: the caller knows they are all ints).  Made once for
    the last few domains (by identity): the run's lookups (check.value_tables) and
    its sinks share it."""
    return _remembered(_INT_ARRAYS, values, lambda: _int64(values)
                       if all_ints or set(map(type, values)) == {int} else None)


def _int_table(named: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """An axis' values, all ints within 64 bits, as an object table, an int64
    array and each position's rank (None when they ascend); else None."""
    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        numbers = int64_values(named)
        if numbers is None:
            return None
        table = np.fromiter(named, dtype=object, count=numbers.size)
        rank = None
        if not bool(np.all(numbers[1:] > numbers[:-1])):
            rank = np.empty(numbers.size, dtype=np.int64)
            rank[np.argsort(numbers, kind="stable")] = np.arange(numbers.size)
        return table, numbers, rank
    return _remembered(_INT_TABLES, named, make)


def _remembered(cache: list[tuple[Any, Any]], values: Sequence[Any], make: Any) -> Any:
    """What `make()` gives for `values`, kept in `cache` for the last four
    domains by identity (an analysis' tuple, kept alive while it is asked)."""
    for seen, made in cache:
        if seen is values:
            return made
    made = make()
    cache[:] = [(values, made), *cache[:3]]
    return made


def _distinct(at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct positions in `at`, ascending, and each entry's index into
    them: by marking a table of the positions where it is not much longer than
    `at` (linear), else by sorting (`np.unique`)."""
    if at.size and int(at.min()) >= 0 and int(at.max()) < 4 * at.size + 1024:
        seen = np.zeros(int(at.max()) + 1, dtype=bool)
        seen[at] = True
        index = np.cumsum(seen, dtype=np.int64) - 1
        return np.flatnonzero(seen), index[at]
    present, code = np.unique(at, return_inverse=True)
    return present, code.reshape(-1)


def _int64(values: Sequence[int]) -> np.ndarray | None:
    """Python ints as an int64 array; None past 64 bits."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return None


def _plain(v: Any) -> Any:
    """A value as plain Python (a NumPy scalar read out)."""
    return v.item() if isinstance(v, np.generic) else v


def value_key(v: Any) -> tuple:
    """The total order of values: numbers before strings (NaN after every other
    number), numbers by magnitude, strings by text, anything else last."""
    if isinstance(v, (bool, np.bool_)):
        return (0, 0, int(v), "")
    if isinstance(v, (int, float, np.integer, np.floating)):
        if isinstance(v, (float, np.floating)) and math.isnan(v):
            return (0, 1, 0, "")
        return (0, 0, v, "")
    if isinstance(v, str):
        return (1, 0, 0, v)
    return (2, 0, 0, repr(v))


def value_text(v: Any) -> str:
    """A value as a program writes it (io.cells.value_text), a NumPy scalar too."""
    return cells.value_text(_plain(v))


def tuple_text(row: Sequence[Any]) -> str:
    """A tuple as `(Alice, Bob)`; a 1-tuple `(Bob)`."""
    return "(" + ", ".join(map(value_text, row)) + ")"
