"""Sparse relations of three or more axes on the NumPy backend (docs/scale.md,
"Relations of three or more axes").

A `SparseRelation` holds its tuples as sorted, distinct cell keys (the C-order
position of each tuple, int64) with a value each (1.0 for a Boolean relation):
a membership test, a union and the semi-naive difference are sorted-array
operations (`np.searchsorted`), costing the tuples asked, not the cells.

A join (`einsum`, any number of operands of which one is sparse, any arity)
runs pairwise, the pair with the smallest estimated result first; each pair is
one scipy.sparse matrix product over *compacted grouped keys*: the left
operand's rows are its kept axes (with the shared axes the result keeps), its
columns the shared ones, numbered by `np.unique` over the tuples present (never
over the cells), so a join costs its tuples and the matches, whatever the
extents.  An axis that no later operand and not the result needs is summed out
of its operand first.  A result of two axes is the CSR `SparseTensor` of
csr.py; of three or more a `SparseRelation`; of fewer a dense array.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .csr import SparseTensor
from .value import SparseValue, sp

_KEY_LIMIT = 1 << 62  # cell keys are int64: a tensor with more cells is not kept this way


def fits_keys(shape: Sequence[int]) -> bool:
    """Whether every cell of `shape` has an int64 key."""
    return math.prod(int(e) for e in shape) < _KEY_LIMIT


def _strides(shape: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= int(extent)
    return strides[::-1]


def _keys_of(coords: Sequence[np.ndarray], shape: Sequence[int]) -> np.ndarray:
    key = np.zeros(len(coords[0]) if len(coords) else 0, dtype=np.int64)
    for column, stride in zip(coords, _strides(shape)):
        key += column.astype(np.int64) * stride
    return key


class SparseRelation(SparseValue):
    """An N-D tensor (N >= 3) as sorted distinct cell keys and their values."""

    __slots__ = ("shape", "keys", "data")
    __array_priority__ = 1000

    def __init__(self, shape: tuple[int, ...], keys: np.ndarray, data: np.ndarray) -> None:
        self.shape = tuple(int(e) for e in shape)
        self.keys = keys  # sorted, distinct
        self.data = data

    @classmethod
    def from_coords(cls, shape: tuple[int, ...], coords: Sequence[np.ndarray], data: np.ndarray,
                    ) -> "SparseRelation":
        """Entries at `coords` (one array per axis); repeats are summed, zeros dropped."""
        keys = _keys_of(coords, shape)
        order = np.argsort(keys, kind="stable")
        keys, data = keys[order], data[order]
        if keys.size and (keys[1:] == keys[:-1]).any():
            keys, at = np.unique(keys, return_inverse=True)
            data = np.bincount(at, weights=data, minlength=keys.size).astype(data.dtype)
        keep = data != 0
        return cls(shape, keys[keep], data[keep])

    @classmethod
    def from_positions(cls, shape: tuple[int, ...], positions: Any, dtype: Any
                       ) -> "SparseRelation":
        """A 0/1 tensor, 1 at each row of `positions` (n x ndim); repeats count once,
        positions outside the shape are dropped."""
        rows = np.asarray(positions, dtype=np.int64).reshape(-1, len(shape))
        inside = ((rows >= 0) & (rows < np.asarray(shape, dtype=np.int64))).all(axis=1)
        rows = rows[inside]
        keys = np.unique(_keys_of(rows.T, shape))
        return cls(shape, keys, np.ones(keys.size, dtype=dtype))

    @classmethod
    def from_any(cls, value: Any, dtype: Any) -> "SparseRelation":
        """A SparseRelation, a scipy.sparse N-D coo_array or a dense array."""
        if isinstance(value, SparseRelation):
            return value.astype(dtype)
        if sp.issparse(value):
            coo = sp.coo_array(value)
            return cls.from_coords(coo.shape, coo.coords, coo.data.astype(dtype))
        dense = np.asarray(value)
        coords = np.nonzero(dense)
        return cls.from_coords(dense.shape, coords, dense[coords].astype(dtype))

    # ---- what an array answers
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.keys.size)

    def coords(self) -> tuple[np.ndarray, ...]:
        """One array of positions per axis, in key order."""
        out, rest = [], self.keys
        for stride in _strides(self.shape):
            out.append(rest // stride)
            rest = rest % stride
        return tuple(out)

    def __repr__(self) -> str:
        return f"SparseRelation(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        dense = np.zeros(self.shape, dtype=self.dtype if dtype is None else dtype)
        dense.reshape(-1)[self.keys] = self.data
        return dense

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        dense = [np.asarray(x) if isinstance(x, SparseRelation) else x for x in inputs]
        return getattr(ufunc, method)(*dense, **kwargs)

    def toarray(self) -> np.ndarray:
        return np.asarray(self)

    def on_numpy(self) -> "SparseRelation":
        return self

    def native(self) -> Any:
        """A scipy.sparse N-D `coo_array` (scipy >= 1.13)."""
        return sp.coo_array((self.data.copy(), self.coords()), shape=self.shape)

    def astype(self, dtype: Any) -> "SparseRelation":
        if self.data.dtype == dtype:
            return self
        return SparseRelation(self.shape, self.keys, self.data.astype(dtype))

    def copy(self) -> "SparseRelation":
        return SparseRelation(self.shape, self.keys.copy(), self.data.copy())

    def transpose(self, *order: Any) -> "SparseRelation":
        if len(order) == 1 and not isinstance(order[0], int):
            order = tuple(order[0]) if order[0] is not None else tuple(range(self.ndim))[::-1]
        if tuple(order) == tuple(range(self.ndim)):
            return self
        coords = self.coords()
        return SparseRelation.from_coords(tuple(self.shape[k] for k in order),
                                          [coords[k] for k in order], self.data)

    # ---- arithmetic that stays sparse
    def __add__(self, other: Any) -> Any:
        if isinstance(other, SparseRelation):
            return self._merged_flat(other, 1.0)
        if np.ndim(other) == 0 and other == 0:
            return self
        return np.asarray(self) + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, SparseRelation):
            return self._merged_flat(other, -1.0)
        return np.asarray(self) - other

    def __rsub__(self, other: Any) -> Any:
        return other - np.asarray(self)

    def _merged_flat(self, other: "SparseRelation", sign: float) -> "SparseRelation":
        keys = np.concatenate([self.keys, other.keys])
        data = np.concatenate([self.data, (sign * other.data).astype(self.data.dtype)])
        merged = SparseRelation.from_coords((_KEY_LIMIT,), [keys], data)
        return SparseRelation(self.shape, merged.keys, merged.data)

    def __neg__(self) -> "SparseRelation":
        return SparseRelation(self.shape, self.keys, -self.data)

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, SparseRelation):
            both, mine, theirs = np.intersect1d(self.keys, other.keys, assume_unique=True,
                                                return_indices=True)
            return SparseRelation(self.shape, both, self.data[mine] * other.data[theirs])
        if np.ndim(other) == 0:
            return SparseRelation(self.shape, self.keys, self.data * other)
        if np.shape(other) == self.shape:
            values = self.data * np.asarray(other).reshape(-1)[self.keys]
            keep = values != 0
            return SparseRelation(self.shape, self.keys[keep], values[keep])
        return np.asarray(self) * other

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if np.ndim(other) == 0:
            return SparseRelation(self.shape, self.keys, self.data / other)
        return np.asarray(self) / other

    def step(self, dtype: Any) -> "SparseRelation":
        """1 where > 0."""
        keep = self.data > 0
        return SparseRelation(self.shape, self.keys[keep], np.ones(int(keep.sum()), dtype=dtype))

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key is a tuple of self (> 0)."""
        if not self.keys.size:
            return np.zeros(keys.shape, dtype=bool)
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        return (self.keys[at] == keys) & (self.data[at] > 0)

    def new_facts(self, known: Any, dtype: Any) -> "SparseRelation | None":
        """1 where self > 0 and `known` is not; None when nothing is new.  Costs
        self's tuples times log(known's)."""
        found = self.step(dtype)
        if isinstance(known, SparseRelation):
            fresh = ~known.contains(found.keys)
        else:
            fresh = np.asarray(known).reshape(-1)[found.keys] <= 0
        if not fresh.any():
            return None
        return SparseRelation(self.shape, found.keys[fresh], found.data[fresh])

    def grow(self, delta: "SparseRelation") -> "SparseRelation":
        """self + delta for new facts (keys self lacks): one sorted insertion."""
        if delta.keys.size and self.keys.size and self.contains(delta.keys).any():
            merged = self + delta
            self.keys, self.data = merged.keys, merged.data
            return self
        at = np.searchsorted(self.keys, delta.keys)
        self.keys = np.insert(self.keys, at, delta.keys)
        self.data = np.insert(self.data, at, delta.data.astype(self.data.dtype))
        return self

    def select(self, axis: int, position: int, dtype: Any) -> Any:
        """The tuples with `position` on `axis`, without that axis (`R(x, A, y)`)."""
        coords = self.coords()
        at = coords[axis] == position
        kept = [k for k in range(self.ndim) if k != axis]
        return value_of_entries(tuple(self.shape[k] for k in kept), [coords[k][at] for k in kept],
                                self.data[at].astype(dtype), dtype)

    def diagonal(self, a: int, b: int, dtype: Any) -> Any:
        """Axes a < b merged into one at a (`R(x, x, y)`): the tuples whose two
        positions agree, never a dense copy (numpy's diagonal would make one)."""
        coords = self.coords()
        at = coords[a] == coords[b]
        kept = [k for k in range(self.ndim) if k != b]
        shape = tuple(min(self.shape[a], self.shape[b]) if k == a else self.shape[k]
                      for k in kept)
        return value_of_entries(shape, [coords[k][at] for k in kept],
                                self.data[at].astype(dtype), dtype)

    def reduce(self, op: str, axes: tuple[int, ...], dtype: Any) -> Any:
        """Project axes away by sum (or max, min of non-negative values): sparse
        when two axes or more are left."""
        kept = [k for k in range(self.ndim) if k not in axes]
        if op not in ("sum", "max") or (op == "max" and (self.data < 0).any()):
            return getattr(np, {"avg": "mean"}.get(op, op))(np.asarray(self), axis=axes) \
                .astype(dtype)
        coords = self.coords()
        return value_of_entries(tuple(self.shape[k] for k in kept), [coords[k] for k in kept],
                                self.data.astype(dtype), dtype, op)


def value_of_entries(shape: tuple[int, ...], coords: Sequence[np.ndarray], data: np.ndarray,
                     dtype: Any, op: str = "sum") -> Any:
    """Entries (repeats combined by op) as the representation of their shape:
    dense below two axes, CSR for two, a SparseRelation above."""
    if op == "max" and data.size:
        keys = _keys_of(coords, shape) if coords else np.zeros(data.size, np.int64)
        order = np.lexsort((data, keys))  # the largest of a key last
        keys, data = keys[order], data[order]
        last = np.append(keys[1:] != keys[:-1], True)
        keys, data = keys[last], data[last]
        coords = SparseRelation(shape, keys, data).coords() if shape else ()
    if not shape:  # every axis projected: one number (np.add.at has no cell to add into)
        total = data.sum() if op == "sum" else data.max(initial=0)
        return np.asarray(total, dtype=dtype)
    if len(shape) < 2:
        out = np.zeros(shape, dtype=dtype)
        np.add.at(out, tuple(coords), data) if op == "sum" else out.__setitem__(
            tuple(coords), data)
        return out
    if len(shape) == 2:
        matrix = sp.csr_array((data.astype(dtype), (coords[0], coords[1])), shape=shape)
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        return SparseTensor(matrix)
    return SparseRelation.from_coords(shape, coords, data.astype(dtype))
