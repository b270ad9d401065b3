"""A finished run's relations as indexed tuples of positions, for provenance.

Each Boolean relation's value (dense, scipy CSR or an N-D sparse relation) is read
once into an (n, arity) int64 array of positions; a lookup with some columns bound
searches a sorted key of those columns (made on first use of that pattern), so a
membership test or the tuples matching a partial binding cost a binary search,
not a scan: a why over millions of tuples answers in milliseconds after this.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def positions_of(value: Any) -> np.ndarray:
    """The cells above 0 of a relation's value as an (n, arity) array of positions."""
    if hasattr(value, "on_numpy"):  # a sparse tensor of run/sparse (any backend)
        value = value.on_numpy()
        if callable(getattr(value, "coords", None)):  # an N-D relation
            coords, data = value.coords(), np.asarray(value.data)
        else:  # a 2-D CSR tensor
            coo = value.matrix.tocoo()
            coords, data = (coo.row, coo.col), coo.data
        keep = data > 0
        columns = [np.asarray(c)[keep] for c in coords]
    elif hasattr(value, "tocoo"):  # scipy.sparse
        coo = value.tocoo()
        keep = coo.data > 0
        columns = [np.asarray(c)[keep] for c in coo.coords]
    else:
        dense = np.asarray(value)
        if dense.ndim == 0:
            return np.zeros((1 if dense > 0 else 0, 0), dtype=np.int64)
        columns = list(np.nonzero(dense > 0))
    if not columns:
        return np.zeros((0, 0), dtype=np.int64)
    return np.stack([np.asarray(c, dtype=np.int64) for c in columns], axis=1)


class Relation:
    """One relation's tuples (positions) and its lookups by bound columns."""

    def __init__(self, rows: np.ndarray, extents: tuple[int, ...]) -> None:
        self.rows = rows
        self.extents = tuple(max(int(e), 1) for e in extents)
        self._keys: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def _key(self, columns: tuple[int, ...], values: np.ndarray) -> np.ndarray:
        """Mixed-radix keys of `values` (one row per tuple, one column per bound axis)."""
        key = np.zeros(values.shape[0], dtype=np.int64)
        for k, axis in enumerate(columns):
            key = key * self.extents[axis] + values[:, k]
        return key

    def _sorted(self, columns: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        made = self._keys.get(columns)
        if made is None:
            key = self._key(columns, self.rows[:, list(columns)])
            order = np.argsort(key, kind="stable")
            made = self._keys[columns] = (key[order], order)
        return made

    def _fits(self, columns: tuple[int, ...]) -> bool:
        size = 1
        for axis in columns:
            size *= self.extents[axis]
        return size < 2 ** 62

    def matching(self, bound: Mapping[int, int]) -> np.ndarray:
        """The tuples whose columns `bound` (axis -> position) hold those positions."""
        if not bound:
            return self.rows
        if any(p < 0 or p >= self.extents[a] for a, p in bound.items()):
            return self.rows[:0]
        columns = tuple(sorted(bound))
        if not self._fits(columns):  # keys would overflow: a scan
            keep = np.ones(len(self), dtype=bool)
            for axis, position in bound.items():
                keep &= self.rows[:, axis] == position
            return self.rows[keep]
        keys, order = self._sorted(columns)
        key = int(self._key(columns, np.array([[bound[a] for a in columns]], dtype=np.int64))[0])
        start = int(np.searchsorted(keys, key, side="left"))
        stop = int(np.searchsorted(keys, key, side="right"))
        return self.rows[order[start:stop]]

    def holds(self, positions: tuple[int, ...]) -> bool:
        if not positions:
            return len(self) > 0
        return len(self.matching(dict(enumerate(positions)))) > 0


class Store:
    """The relations of a run, each read into a `Relation` on first ask."""

    def __init__(self, values: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> None:
        self._values = values
        self._shapes = shapes
        self._made: dict[str, Relation] = {}

    def has(self, name: str) -> bool:
        return name in self._values

    def relation(self, name: str) -> Relation:
        made = self._made.get(name)
        if made is None:
            rows = positions_of(self._values[name])
            made = self._made[name] = Relation(rows, tuple(self._shapes[name]))
        return made
