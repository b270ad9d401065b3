"""A domain's values and their positions (LANGUAGE.md §14; docs/language.md,
"Values in relations").

An index over a relation's column ranges over that column's values; the run
holds each value at a position of its domain (check.domains numbers them).
Here is the one mapping between the two, for everyone who crosses it: facts and
relation files going in (run.inputs), constants in references and comparisons,
arithmetic on index values (run.interpret), answers coming out (run.outputs,
the editor).  A domain without values is positional: a position is its own value.
"""
from __future__ import annotations

from typing import Any

from .analysis import Analysis

# per domain's values tuple (by identity): what is made of it once (a value ->
# position table, its kind, its values as an array)
_MADE: dict[tuple[int, str], tuple[tuple, Any]] = {}
_KEPT = 256


def _once(values: tuple, what: str, make: Any) -> Any:
    kept = _MADE.get((id(values), what))
    if kept is not None and kept[0] is values:
        return kept[1]
    if len(_MADE) >= _KEPT:
        _MADE.clear()
    made = make()
    _MADE[(id(values), what)] = (values, made)
    return made


def domain_values(analysis: Analysis, domain: int) -> tuple | None:
    """The values of a domain in position order; None for a positional domain."""
    return analysis.domain_symbols.get(domain) or None


def position_table(values: tuple) -> dict:
    """{value: position} of a domain's values (made once per values tuple)."""
    return _once(values, "table", lambda: {v: k for k, v in enumerate(values)})


def _kind(values: tuple) -> str:
    """"int" (integers only), "number" (ints and floats) or "symbols" (any str)."""
    def make() -> str:
        kinds = set(map(type, values))
        if str in kinds:
            return "symbols"
        return "int" if kinds <= {int} else "number"
    return _once(values, "kind", make)


def constant_position(analysis: Analysis, domain: int, value: int | str) -> int:
    """The position of a constant on an axis of `domain`: its place among the
    domain's values, -1 when the domain does not hold it; on a positional domain
    an integer is its own position (a symbol there: -1)."""
    values = domain_values(analysis, domain)
    if values is None:
        return value if type(value) is int else -1
    return position_table(values).get(value, -1)


def is_numeric(values: tuple | None) -> bool:
    """Whether a domain's values are numbers only (then in increasing order)."""
    return values is None or _kind(values) != "symbols"


def value_array(values: tuple | None, extent: int) -> Any:
    """Each position's value as a NumPy array (int64, float64 where a value is a
    float): what an index stands for in arithmetic and comparisons.  A domain of
    symbols gives its positions (symbols compare only with `==`/`!=` in one
    domain, where positions compare alike)."""
    import numpy as np

    if values is None or not is_numeric(values):
        return np.arange(extent, dtype=np.int64)
    if _kind(values) == "int":
        from ..io.relation_tuples import int64_values  # (shared with the sinks)

        ints = int64_values(values, all_ints=True)
        # (None past 64 bits: np.array raises there, as it always did)
        return ints if ints is not None else np.array(values, dtype=np.int64)
    return _once(values, "array", lambda: np.array(values, dtype=np.float64))


def positions_of(values: tuple | None, extent: int, wanted: Any) -> Any:
    """The positions of the values `wanted` (an integer array) in a domain, -1 for
    each it does not hold: a computed head's or an offset's cells."""
    import numpy as np

    wanted = np.asarray(wanted)
    if values is None:
        return np.where((wanted >= 0) & (wanted < extent), wanted, -1)
    if not is_numeric(values):
        return np.full(wanted.shape, -1, dtype=np.int64)
    table = value_array(values, extent)
    lookup = _once(values, "lookup", lambda: _lookup(table)) if wanted.dtype.kind == "i" \
        else None
    if lookup is not None:  # (ids: a table over their range, not a search per value)
        low, at = lookup
        offsets = wanted - low
        inside = (offsets >= 0) & (offsets < len(at))
        return np.where(inside, at[np.where(inside, offsets, 0)], -1)
    at = np.clip(np.searchsorted(table, wanted), 0, max(len(table) - 1, 0))
    found = table[at] == wanted if len(table) else np.zeros(wanted.shape, dtype=bool)
    return np.where(found, at, -1)


def _lookup(table: Any) -> tuple[int, Any] | None:
    """For increasing integers that span a range not much wider than they are
    many (ids): (the least, each value's position at value - least, -1 between);
    None for other values."""
    from ..io.whole_files import fits_range_table, range_positions

    if table.dtype.kind != "i" or not len(table) or \
            not fits_range_table(int(table[-1]) - int(table[0]) + 1, len(table)):
        return None
    low = int(table[0])
    return low, range_positions(table, low, int(table[-1]) - low + 1)


def column_positions(values: tuple | None, column: Any) -> Any:
    """A relation file's column (io.relation_files: int64 or bytes array, or a
    tuple of values) as positions in its domain, -1 where it holds a value the
    domain does not."""
    import numpy as np

    if values is None:  # a positional domain (a token file's positions)
        return np.asarray(column, dtype=np.int64)
    kind = getattr(getattr(column, "dtype", None), "kind", None)
    if kind == "i" and _kind(values) == "int":
        return positions_of(values, len(values), column)
    if kind == "S":
        found = _bytes_positions(values, column)
        if found is not None:
            return found
        column = column.astype("U").tolist()
    elif kind is not None:
        column = column.tolist()
    get = position_table(values).get
    return np.fromiter((get(v, -1) for v in column), np.int64, len(column))


def _bytes_positions(values: tuple, column: Any) -> Any:
    """A column of fixed-width bytes looked up by a search of the domain's sorted
    symbols, all in C; None when a symbol is not ASCII (then cell by cell)."""
    import numpy as np

    if _kind(values) != "symbols" or not all(type(v) is str for v in values):
        return None
    try:
        table = _once(values, "bytes", lambda: np.array(values, dtype="S"))
    except UnicodeEncodeError:
        return None
    width = max(table.dtype.itemsize, column.dtype.itemsize)
    table, cells = _comparable(table, width), _comparable(column, width)
    order = np.argsort(table)  # (the symbols are distinct)
    ordered = table[order]
    at = np.clip(np.searchsorted(ordered, cells), 0, max(len(ordered) - 1, 0))
    if not len(ordered):
        return np.full(len(cells), -1, dtype=np.int64)
    return np.where(ordered[at] == cells, order[at], -1)


def _comparable(cells: Any, width: int) -> Any:
    """Fixed-width bytes padded to `width` (at least): as one uint64 each where they
    fit in 8 bytes (sorted and searched faster than bytes; the order differs, the
    equality does not), else as bytes."""
    import numpy as np

    if width <= 8:
        return np.ascontiguousarray(cells.astype("S8")).view(np.uint64).reshape(-1)
    return cells.astype(f"S{width}")


def value_of(values: tuple | None, position: int) -> Any:
    """The value at a position of a domain (a positional domain's: the position)."""
    if values is None or not 0 <= position < len(values):
        return position
    return values[position]
