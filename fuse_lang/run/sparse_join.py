"""A contraction (einsum) whose operands include sparse relations of any arity,
joined pairwise on their tuples (docs/scale.md, "Relations of three or more axes").

Each operand becomes a `Tuples` (its axes, one position array per axis, a value
per tuple).  An axis that no other operand and not the result has is summed out
of its operand first (the projection a database pushes below a join).  Then,
while more than one operand is left, the pair sharing axes with the smallest
estimated result (nnz(A) nnz(B) / the shared extents) is joined as one
scipy.sparse matrix product: A's rows are its own kept axes plus the shared
axes still needed later (`batch`), its columns the shared axes, B's rows the
same column keys and its columns its own axes.  Keys are numbered by np.unique
over the tuples present, so the matrices are as small as the tuples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .sparse import SparseTensor, sp
from .sparse_nd import SparseRelation, _coo_result


@dataclass
class Tuples:
    """An operand as tuples: positions per axis and a value each (no repeats)."""

    axes: tuple[str, ...]
    coords: list[np.ndarray]
    data: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.data.size)


def as_tuples(term: str, value: Any) -> Tuples:
    if isinstance(value, SparseRelation):
        return Tuples(tuple(term), list(value.coords()), value.data)
    if isinstance(value, SparseTensor):
        coo = value.matrix.tocoo()
        return Tuples(tuple(term), [coo.row.astype(np.int64), coo.col.astype(np.int64)],
                      coo.data)
    dense = np.asarray(value)
    coords = np.nonzero(dense)
    return Tuples(tuple(term), [c.astype(np.int64) for c in coords], dense[coords])


def _group_keys(parts: Sequence[tuple[Tuples, Sequence[str]]], extents: dict[str, int]
                ) -> list[np.ndarray]:
    """One int64 key per tuple of each (operand, axes) part, all numbered alike:
    mixed radix when the extents' product fits, else ranks of the distinct rows."""
    names = parts[0][1]
    sizes = [t.nnz for t, _ in parts]
    if not names:
        return [np.zeros(n, dtype=np.int64) for n in sizes]
    columns = [[t.coords[t.axes.index(x)] for x in axes] for t, axes in parts]
    if math.prod(extents[x] for x in names) < (1 << 62):
        out = []
        for cols in columns:
            key = np.zeros(cols[0].size, dtype=np.int64)
            for column, x in zip(cols, names):
                key *= extents[x]
                key += column
            out.append(key)
        return out
    stacked = np.concatenate([np.stack(cols, axis=1) for cols in columns])
    ranks = np.unique(stacked, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
    ends = np.cumsum([0] + sizes)
    return [ranks[a:b] for a, b in zip(ends[:-1], ends[1:])]


def project(t: Tuples, keep: set[str], extents: dict[str, int]) -> Tuples:
    """t with the axes outside `keep` summed out."""
    axes = tuple(a for a in t.axes if a in keep)
    if axes == t.axes:
        return t
    columns = [t.coords[t.axes.index(a)] for a in axes]
    (key,) = _group_keys([(t, axes)], extents)
    distinct, first, at = np.unique(key, return_index=True, return_inverse=True)
    data = np.bincount(at.reshape(-1), weights=t.data, minlength=distinct.size)
    return Tuples(axes, [c[first] for c in columns], data.astype(t.data.dtype))


def join(a: Tuples, b: Tuples, keep: set[str], extents: dict[str, int]) -> Tuples:
    """The product of a and b over their shared axes, summing the shared axes
    outside `keep`: one sparse matrix product over compacted keys."""
    shared = [x for x in a.axes if x in b.axes]
    batch = [x for x in shared if x in keep]
    rows_a = batch + [x for x in a.axes if x not in b.axes]
    cols_b = [x for x in b.axes if x not in a.axes]
    col = lambda t, names: [t.coords[t.axes.index(x)] for x in names]  # noqa: E731
    (row_key,) = _group_keys([(a, rows_a)], extents)
    key_a, key_b = _group_keys([(a, shared), (b, shared)], extents)
    (out_key,) = _group_keys([(b, cols_b)], extents)
    rows, row_first, row_at = np.unique(row_key, return_index=True, return_inverse=True)
    middle, mid_at = np.unique(key_a, return_inverse=True)
    found = np.minimum(np.searchsorted(middle, key_b), max(middle.size - 1, 0))
    match = middle[found] == key_b if middle.size else np.zeros(key_b.size, dtype=bool)
    outs, out_first, out_at = np.unique(out_key[match], return_index=True,
                                        return_inverse=True)
    left = sp.csr_array((a.data, (row_at.reshape(-1), mid_at.reshape(-1))),
                        shape=(rows.size, middle.size))
    right = sp.csr_array((b.data[match], (found[match], out_at.reshape(-1))),
                         shape=(middle.size, outs.size))
    product = (left @ right).tocoo()
    product.eliminate_zeros()
    matched_b = np.flatnonzero(match)
    coords = [c[row_first][product.row] for c in col(a, rows_a)] + \
        [c[matched_b[out_first]][product.col] for c in col(b, cols_b)]
    return Tuples(tuple(rows_a + cols_b), coords, product.data)


def _cost(a: Tuples, b: Tuples, extents: dict[str, int]) -> float:
    shared = [x for x in a.axes if x in b.axes]
    if not shared:
        return float("inf")
    return a.nnz * b.nnz / math.prod(extents[x] for x in shared)


def einsum(spec: str, arrays: Sequence[Any], dtype: Any) -> Any:
    """The contraction `spec` over tuples: the result dense below two axes, a
    CSR `SparseTensor` for two, a `SparseRelation` for more."""
    inputs, out = spec.split("->")
    terms = inputs.split(",")
    extents: dict[str, int] = {}
    for term, value in zip(terms, arrays):
        for axis, extent in zip(term, np.shape(value)):
            extents[axis] = int(extent)
    operands = [as_tuples(term, value) for term, value in zip(terms, arrays)]
    while True:  # each axis no other operand (nor the result) has, summed out first
        operands = [project(t, set(out) | {x for u in operands if u is not t for x in u.axes},
                            extents) for t in operands]
        if len(operands) == 1:
            break
        pairs = [(i, j) for i in range(len(operands)) for j in range(i + 1, len(operands))]
        i, j = min(pairs, key=lambda p: (_cost(operands[p[0]], operands[p[1]], extents),
                                         operands[p[0]].nnz * operands[p[1]].nnz))
        rest = [t for k, t in enumerate(operands) if k not in (i, j)]
        keep = set(out) | {x for t in rest for x in t.axes}
        joined = join(operands[i], operands[j], keep, extents)
        operands = rest + [joined]
    (last,) = operands
    order = [last.axes.index(x) for x in out]
    return _coo_result(tuple(extents[x] for x in out), [last.coords[k] for k in order],
                       last.data.astype(dtype), dtype)
