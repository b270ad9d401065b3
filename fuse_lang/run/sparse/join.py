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

from . import csr as sparse, products
from .csr import SparseTensor
from .nd import SparseRelation, value_of_entries
from .value import sp


class _JoinFactor:
    """What a join keeps as tuples rather than cells (`Complement`, `TupleFilter`):
    anything other than a join reads it dense, through `__array__`."""

    __array_priority__ = 1000
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        dense = [np.asarray(x) if isinstance(x, _JoinFactor) else x for x in inputs]
        return getattr(ufunc, method)(*dense, **kwargs)

    def __mul__(self, other: Any) -> Any:
        return np.asarray(self) * other

    __rmul__ = __mul__

    def reshape(self, *shape: Any) -> Any:
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self if tuple(shape) == self.shape else np.asarray(self).reshape(shape)


class Complement(_JoinFactor):
    """`not R(...)` of a sparse relation: 1 where R has no tuple.  Kept as R's
    tuples; a join applies it as an anti-join (drops the matching tuples), and
    anything else reads it dense."""

    anti_join = True  # csr.py's einsum sends it here

    def __init__(self, relation: Any) -> None:
        self.relation = relation  # a 0/1 sparse tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.relation.shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        dense = 1 - np.asarray(self.relation)
        return dense if dtype is None else dense.astype(dtype)

    def transpose(self, *order: Any) -> "Complement":
        return Complement(self.relation.transpose(*order))


class TupleFilter(_JoinFactor):
    """A comparison of indices in a join of sparse relations (`(x != y)`, `(x < 3)`,
    plan.representation.tuple_filter): kept as each side's values by position (a
    vector over one index, or a number), so a join drops the tuples it is false on
    instead of multiplying by a dense mask over every cell; anything else reads it
    dense.  `sides`: per side, the position of its index among the filter's axes
    (None: a number) and its values, exactly the arrays the dense path compares."""

    tuple_filter = True  # csr.py's einsum sends it here

    def __init__(self, compare: Any, sides: list[tuple[int | None, Any]],
                 shape: tuple[int, ...], dtype: Any) -> None:
        self.compare = compare
        self.sides = sides
        self._shape = tuple(int(n) for n in shape)
        self.dtype = dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    def mask(self, columns: Sequence[np.ndarray]) -> np.ndarray:
        """Where the comparison holds, for tuples at these positions (one column
        per axis of the filter)."""
        values = [np.asarray(data) if axis is None else np.asarray(data)[columns[axis]]
                  for axis, data in self.sides]
        return np.asarray(self.compare(values[0], values[1]), dtype=bool)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        grids = [np.asarray(data) if axis is None else np.asarray(data).reshape(
            [-1 if k == axis else 1 for k in range(self.ndim)]) for axis, data in self.sides]
        dense = np.broadcast_to(self.compare(grids[0], grids[1]), self._shape)
        return dense.astype(self.dtype if dtype is None else dtype)

    def transpose(self, *order: Any) -> "TupleFilter":
        order = tuple(order[0]) if len(order) == 1 and not isinstance(order[0], int) \
            else tuple(order)
        moved = [(None if axis is None else order.index(axis), data)
                 for axis, data in self.sides]
        return TupleFilter(self.compare, moved, tuple(self._shape[k] for k in order),
                           self.dtype)


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
    """Any operand as its tuples: a sparse one's entries, a dense one's non-zeros."""
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
    at_row, at_col, data = _entries(products.matmul(left, right))
    matched_b = np.flatnonzero(match)
    coords = [c[row_first][at_row] for c in col(a, rows_a)] + \
        [c[matched_b[out_first]][at_col] for c in col(b, cols_b)]
    return Tuples(tuple(rows_a + cols_b), coords, data)


def _entries(product: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zero cells of a product (sparse or dense): rows, columns, values."""
    if not sp.issparse(product):
        at_row, at_col = np.nonzero(product)
        return at_row, at_col, product[at_row, at_col]
    product = product.tocoo()
    product.eliminate_zeros()
    return product.row, product.col, product.data


def anti_join(t: Tuples, negative: Tuples, extents: dict[str, int]) -> Tuples:
    """t without the tuples that match one of `negative` on its axes (t has them all)."""
    names = list(negative.axes)
    mine, theirs = _group_keys([(t, names), (negative, names)], extents)
    absent = ~np.isin(mine, theirs[negative.data > 0])
    return Tuples(t.axes, [c[absent] for c in t.coords], t.data[absent])


def _cost(a: Tuples, b: Tuples, extents: dict[str, int]) -> float:
    shared = [x for x in a.axes if x in b.axes]
    if not shared:
        return float("inf")
    # an axis of extent 0 (an empty domain, an empty relation file's) joins to nothing
    return a.nnz * b.nnz / max(math.prod(extents[x] for x in shared), 1)


def einsum(spec: str, arrays: Sequence[Any], dtype: Any) -> Any:
    """The contraction `spec` with a sparse operand: csr.py's CSR products
    where they fit, else over tuples (the result dense below two axes, a CSR
    `SparseTensor` for two, a `SparseRelation` for more)."""
    direct = sparse.einsum(spec, arrays, dtype)
    if direct is not None:
        return direct
    inputs, out = spec.split("->")
    terms = inputs.split(",")
    extents: dict[str, int] = {}
    for term, value in zip(terms, arrays):
        for axis, extent in zip(term, np.shape(value)):
            extents[axis] = int(extent)
    positive, negated, compared = _filters(terms, arrays)
    operands = [as_tuples(term, value) for term, value in positive]
    anti = [as_tuples(term, value.relation) for term, value in negated]
    while True:  # each axis no other operand (nor the result) has, summed out first
        operands, compared = _filtered(operands, compared)  # as soon as one operand can
        needed = set(out) | {x for t in anti for x in t.axes} | {x for t, _ in compared
                                                               for x in t}
        operands = [project(t, needed | {x for u in operands if u is not t for x in u.axes},
                            extents) for t in operands]
        if len(operands) == 1:
            break
        pairs = [(i, j) for i in range(len(operands)) for j in range(i + 1, len(operands))]
        i, j = min(pairs, key=lambda p: (_cost(operands[p[0]], operands[p[1]], extents),
                                         operands[p[0]].nnz * operands[p[1]].nnz))
        rest = [t for k, t in enumerate(operands) if k not in (i, j)]
        keep = needed | {x for t in rest for x in t.axes}
        joined = join(operands[i], operands[j], keep, extents)
        operands = rest + [joined]
    (last,), compared = _filtered(operands, compared)
    assert not compared  # the positive operands cover every filter's axes
    for negative in anti:
        last = anti_join(last, negative, extents)
    last = project(last, set(out), extents)
    order = [last.axes.index(x) for x in out]
    return value_of_entries(tuple(extents[x] for x in out), [last.coords[k] for k in order],
                            last.data.astype(dtype), dtype)


def _filters(terms: Sequence[str], arrays: Sequence[Any]) -> tuple[list, list, list]:
    """The operands joined as tuples, the anti-joins (`not R`) and the comparisons
    (TupleFilter) applied to them: a negation or comparison over an axis no
    positive operand has is read dense, as an operand of its own."""
    positive = [(t, v) for t, v in zip(terms, arrays)
                if not isinstance(v, (Complement, TupleFilter))]
    if not positive:  # nothing to filter: every operand read as its tuples
        return list(zip(terms, arrays)), [], []
    covered = {x for t, _ in positive for x in t}
    negated: list = []
    compared: list = []
    for term, value in zip(terms, arrays):
        if not isinstance(value, (Complement, TupleFilter)):
            continue
        if not set(term) <= covered:
            positive.append((term, value))  # (as_tuples reads it dense)
        else:
            (negated if isinstance(value, Complement) else compared).append((term, value))
    return positive, negated, compared


def _filtered(operands: list[Tuples], compared: list) -> tuple[list[Tuples], list]:
    """Each comparison applied to the first operand that has all its axes (its
    tuples where it holds); the comparisons no operand can take yet."""
    operands = list(operands)
    waiting = []
    for term, comparison in compared:
        at = next((i for i, t in enumerate(operands) if set(term) <= set(t.axes)), None)
        if at is None:
            waiting.append((term, comparison))
            continue
        t = operands[at]
        keep = comparison.mask([t.coords[t.axes.index(x)] for x in term])
        operands[at] = Tuples(t.axes, [c[keep] for c in t.coords], t.data[keep])
    return operands, waiting
