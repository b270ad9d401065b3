"""An array file of a tensor over values (LANGUAGE.md §14; docs/cli.md, "What
it writes").

An `.npy`, `.npz` or `.safetensors` file (and a numeric tensor's dense text: the
rows of numbers of a `.csv`, the nested lists of a `.json`) holds positions:
cell `[5, 7]` is row 5, column 7.  A tensor whose axis ranges over a relation column's values keeps
each value at a position of its domain (check.value_tables), and the domain
numbers only the values it holds: ids 0, 5 and 599 are positions 0, 1 and 2.
So such an axis is written indexed by value, as every reader of the file
expects (cell `[599, ...]` for the id 599; the ids the column lacks are rows of
zeros): an axis of integers from 0, at most MAX_AXIS_VALUE.  An axis of symbols
is written by position, as always (a symbol has no number).  An axis of negative
integers, floats or larger ids has no array form: that is a FileProblem that
says to write tuples (a relation's to `.tsv`, `.csv`, `.jsonl`; a numeric
tensor's non-zeros to `.facts`) instead.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .source_files import FileProblem

# The largest value an axis written by value may hold (its length is this + 1):
# past it the file would be all zeros; the sink's dense guard applies below it.
MAX_AXIS_VALUE = 2**31 - 1


def by_value(name: str, array: Any, axes: Sequence[Sequence | None]) -> Any:
    """`array` (dense NumPy or scipy.sparse) with each axis of integer values laid
    out by value; `axes`: each axis' values by position (None: positional)."""
    plan = [_axis_values(name, k, values) for k, values in enumerate(axes)
            if k < np.ndim(array)]
    if all(p is None for p in plan):
        return array
    shape = tuple(array.shape[k] if p is None else int(p[-1]) + 1 if len(p) else 0
                  for k, p in enumerate(plan)) + tuple(array.shape[len(plan):])
    if hasattr(array, "tocoo"):
        coo = array.tocoo()
        coords = [c if k >= len(plan) or plan[k] is None else plan[k][c]
                  for k, c in enumerate(coo.coords)]
        import scipy.sparse as sp

        moved = sp.coo_array((coo.data, tuple(coords)), shape=shape)
        return moved.tocsr() if moved.ndim == 2 else moved
    out = np.zeros(shape, dtype=np.asarray(array).dtype)
    index = tuple(slice(None) if p is None else p for p in plan)
    out[np.ix_(*[np.arange(s) if isinstance(i, slice) else i
                 for s, i in zip(array.shape, index)])] = array
    return out


def _axis_values(name: str, k: int, values: Sequence | None) -> Any:
    """Where each position of axis `k` goes (an int array), or None: by position."""
    if not values or any(type(v) is str for v in values):
        return None
    if any(type(v) is not int for v in values) or min(values) < 0 \
            or max(values) > MAX_AXIS_VALUE:
        shown = ", ".join(str(v) for v in sorted(values, key=float)[:3])
        raise FileProblem(
            f"axis {k} of {name} ranges over values ({shown}, ...) that are no array "
            f"positions (an array file is indexed from 0); write it as tuples of values: "
            f"a relation to a sink .tsv, .csv or .jsonl, a numeric tensor's non-zeros to "
            f".facts")
    return np.asarray(values, dtype=np.int64)
