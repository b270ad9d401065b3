"""Sparse relations on the jax backend: jax.experimental.sparse BCOO.

Eager jax compiles each operation once per shape it meets, and a relation's
number of non-zeros changes every round; so a BCOO here holds its entries
padded to a power of two, at least _SMALLEST (padding: out-of-bound positions,
value 0, which BCOO itself reads as padding), and what a fixpoint round does is
a few jitted kernels over those padded sizes: make canonical (sort, sum
repeats; also the union of two relations and the facts of one not in another),
the product of two (expand, then the same sort), each packing the entries it
keeps first, then cut to their padded count.  The shape is an array argument,
not a static one, so a run compiles a few dozen kernels, once per process, not
one per operation, shape and round; an operation syncs with the host once,
for the count (the padded size of the result).  BCOO's own `@` serves
the products with a dense operand; its sparse-sparse product is not used (its
output is sized for the dense worst case).  Eager runs only: under jax.jit the
padded size would have to be fixed in advance (docs/scale.md).  On jax's CPU
device the arrays are host memory, and the same steps (join, sort, pack, cut,
expand, gather) run in NumPy on them, compiling nothing: a first run's time was
mostly these kernels' compilations, one per padded size.  The other operations
are framework.py's."""
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse as jsparse

from ..backends.base import Backend
from .framework import FrameworkSparse

# The smallest padded size: every small relation shares one shape, so one
# compilation per kernel serves them all (sorting a thousand entries costs
# microseconds; compiling a kernel for one more size, 0.5-2 s on a busy CPU).
_SMALLEST = 1024


def _padded(n: int) -> int:
    """The smallest power of two at least n and _SMALLEST."""
    return max(_SMALLEST, 1 << (int(n) - 1).bit_length()) if n else _SMALLEST


def _bounds(shape: tuple[int, int]) -> Any:
    return np.asarray(shape, np.int32)


def _on_cpu(arrays: list) -> bool:
    """Whether these arrays live in host memory (NumPy's, or jax's CPU device):
    there NumPy joins and cuts them, where eager jax would compile a kernel for
    each new combination of sizes (most of a first run's compilations)."""
    for x in arrays:
        if not isinstance(x, np.ndarray) and \
                any(d.platform != "cpu" for d in getattr(x, "devices", lambda: ())()):
            return False
    return True


def _joined(indices: list, values: list, bounds: tuple[int, int]) -> tuple[Any, Any]:
    """Entries of several parts in one pair of arrays, padded to a power of two
    (padding: the out-of-bound position `bounds`, value 0).  On the CPU, by NumPy;
    else eager: a cheap concatenation, compiled once per combination of sizes."""
    total = sum(int(v.shape[0]) for v in values)
    size = _padded(total)
    if _on_cpu(indices + values):
        dtype = values[0].dtype
        index = np.empty((size, 2), np.int32)
        value = np.zeros(size, dtype)
        at = 0
        for part, part_values in zip(indices, values):
            n = int(part_values.shape[0])
            index[at:at + n] = np.asarray(part)
            value[at:at + n] = np.asarray(part_values)
            at += n
        index[at:] = np.asarray(bounds, np.int32)
        return jax.device_put(index), jax.device_put(value)  # (jnp.asarray compiles)
    if size > total:
        indices = [*indices, np.broadcast_to(np.asarray(bounds, np.int32), (size - total, 2))]
        values = [*values, np.zeros(size - total, values[0].dtype)]
    if len(values) == 1:
        return jnp.asarray(indices[0]), jnp.asarray(values[0])
    return jnp.concatenate(indices), jnp.concatenate(values)


def _packed(rows: Any, cols: Any, values: Any, valid: Any, bounds: Any) -> tuple:
    """The valid entries first, in their order, then padding: (indices, values,
    how many are valid); the caller keeps the padded count of them.  A scatter
    to each one's rank (XLA's CPU sort is slow to run; a scatter, to compile)."""
    size = rows.shape[0]
    at = jnp.where(valid, jnp.cumsum(valid) - 1, size)  # past the end: dropped
    rows = jnp.full(size, bounds[0], rows.dtype).at[at].set(rows, mode="drop")
    cols = jnp.full(size, bounds[1], cols.dtype).at[at].set(cols, mode="drop")
    values = jnp.zeros(size, values.dtype).at[at].set(values, mode="drop")
    return jnp.stack([rows, cols], 1), values, valid.sum()


# The kernels take the shape as an array (`bounds`), not a static argument: one
# compilation per padded size serves every relation.
@jax.jit
def _canonical(indices: Any, values: Any, bounds: Any, positive: Any) -> tuple:
    """Entries sorted row by row, repeats summed into their first, packed: the
    non-zero sums (the positive ones, `positive`) inside `bounds`."""
    rows, cols, values = jax.lax.sort((indices[:, 0], indices[:, 1], values), num_keys=2)
    first = jnp.concatenate([jnp.ones(1, bool), (rows[1:] != rows[:-1]) |
                             (cols[1:] != cols[:-1])])
    group = jnp.cumsum(first) - 1
    sums = jax.ops.segment_sum(values, group, num_segments=rows.shape[0])[group]
    valid = first & jnp.where(positive, sums > 0, sums != 0) & (rows < bounds[0]) & \
        (cols < bounds[1])
    return _packed(rows, cols, sums, valid, bounds)


@jax.jit
def _kept(indices: Any, values: Any, bounds: Any) -> tuple:
    """New values on a canonical pattern: the non-zeros, packed."""
    valid = (values != 0) & (indices[:, 0] < bounds[0]) & (indices[:, 1] < bounds[1])
    return _packed(indices[:, 0], indices[:, 1], values, valid, bounds)


@jax.jit
def _is_boolean(values: Any) -> Any:
    return ((values == 1) | (values == 0)).all()  # 0: the padding


@jax.jit
def _indicator(values: Any) -> Any:
    return (values > 0).astype(values.dtype)


@jax.jit
def _expansion_counts(a: Any, a_values: Any, b: Any) -> tuple[Any, Any, Any]:
    """Per entry (i, k) of A: where B's row k starts and how many entries it has
    (none for A's padding); and how many pairs in all."""
    starts = jnp.searchsorted(b[:, 0], a[:, 1], side="left")
    ends = jnp.searchsorted(b[:, 0], a[:, 1], side="right")
    counts = jnp.where(a_values != 0, ends - starts, 0)
    return starts, counts, counts.sum()


@functools.partial(jax.jit, static_argnames=("size",))
def _expanded(a: Any, a_values: Any, b: Any, b_values: Any, starts: Any, counts: Any,
              bounds: Any, size: int) -> tuple[Any, Any]:
    """Each A entry paired with each entry of the B row it meets (the join's
    candidates, `size` of them with padding), unsorted."""
    owner = jnp.repeat(jnp.arange(counts.shape[0]), counts, total_repeat_length=size)
    offset = jnp.arange(size) - (jnp.cumsum(counts) - counts)[owner]
    real = jnp.arange(size) < counts.sum()
    at = jnp.where(real, starts[owner] + offset, 0)
    rows = jnp.where(real, a[owner, 0], bounds[0])
    return jnp.stack([rows, b[at, 1]], 1), jnp.where(real, a_values[owner] * b_values[at], 0)


# On the CPU the same steps run in NumPy (the arrays are host memory already):
# eager jax would compile each kernel once per padded size, seconds per size for
# the sort (most of a first run's time), where NumPy compiles nothing.
def _host_packed(rows: np.ndarray, cols: np.ndarray, values: np.ndarray,
                 valid: np.ndarray, bounds: tuple[int, int]) -> tuple:
    """_packed's result on the host, cut to the padded count already."""
    count = int(valid.sum())
    size = _padded(count)
    index = np.empty((size, 2), np.int32)
    index[:] = np.asarray(bounds, np.int32)
    index[:count, 0], index[:count, 1] = rows[valid], cols[valid]
    value = np.zeros(size, values.dtype)
    value[:count] = values[valid]
    return jax.device_put(index), jax.device_put(value), count


def _host_canonical(indices: Any, values: Any, bounds: tuple[int, int], positive: bool
                    ) -> tuple:
    """_canonical in NumPy: sorted row by row, repeats summed, the non-zero (or
    positive) sums inside `bounds`, packed."""
    index, values = np.asarray(indices), np.asarray(values)
    order = np.lexsort((index[:, 1], index[:, 0]))
    rows, cols, values = index[order, 0], index[order, 1], values[order]
    first = np.ones(rows.size, bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(values, starts) if starts.size else values[:0]
    rows, cols = rows[starts], cols[starts]
    valid = ((sums > 0) if positive else (sums != 0)) & (rows < bounds[0]) & (cols < bounds[1])
    return _host_packed(rows, cols, sums, valid, bounds)


def _host_kept(indices: Any, values: Any, bounds: tuple[int, int]) -> tuple:
    """_kept in NumPy."""
    index, values = np.asarray(indices), np.asarray(values)
    rows, cols = index[:, 0], index[:, 1]
    valid = (values != 0) & (rows < bounds[0]) & (cols < bounds[1])
    return _host_packed(rows, cols, values, valid, bounds)


def _host_expanded(a: Any, a_values: Any, b: Any, b_values: Any) -> tuple[list, list]:
    """_expansion_counts and _expanded in NumPy: each A entry (i, k) paired with
    each entry of B's row k (B sorted row by row), as parts for _sorted."""
    a, a_values, b, b_values = (np.asarray(x) for x in (a, a_values, b, b_values))
    starts = np.searchsorted(b[:, 0], a[:, 1], side="left")
    counts = np.where(a_values != 0, np.searchsorted(b[:, 0], a[:, 1], side="right") - starts,
                      0)
    owner = np.repeat(np.arange(counts.size), counts)
    at = starts[owner] + np.arange(owner.size) - (np.cumsum(counts) - counts)[owner]
    indices = np.stack([a[owner, 0], b[at, 1]], 1).astype(np.int32)
    return [indices], [a_values[owner] * b_values[at]]


class JaxSparse(FrameworkSparse):
    """A 2-D BCOO array: entries sorted row by row, no repeats, no zeros, padded
    to a power of two with out-of-bound positions; `count` the real entries."""

    __slots__ = ("count",)

    def __init__(self, tensor: Any, count: int | None = None) -> None:
        super().__init__(tensor)
        self.count = int(np.count_nonzero(np.asarray(tensor.data))) if count is None else count

    @classmethod
    def build(cls, rows: Any, cols: Any, values: Any, shape: tuple[int, int]) -> "JaxSparse":
        indices = jnp.stack([jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32)], 1)
        return cls._sorted([indices], [jnp.asarray(values)], tuple(shape))

    @classmethod
    def _sorted(cls, indices: list, values: list, shape: tuple[int, int],
                positive: bool = False) -> "JaxSparse":
        """The canonical tensor of these parts' entries (repeats summed)."""
        indices, values = _joined(indices, values, shape)
        if _on_cpu([indices, values]):
            return cls._compacted(_host_canonical(indices, values, shape, positive), shape)
        return cls._compacted(_canonical(indices, values, _bounds(shape), np.bool_(positive)),
                              shape)

    @classmethod
    def _compacted(cls, packed: tuple, shape: tuple[int, int]) -> "JaxSparse":
        """A kernel's (indices, values, count), cut to the padded count: the one
        host sync of an operation."""
        indices, values, count = packed
        count = int(count)
        size = _padded(count)
        if size < values.shape[0]:
            if _on_cpu([indices, values]):  # (a copy of the kept part, no compilation)
                indices, values = (jax.device_put(np.asarray(indices)[:size]),
                                   jax.device_put(np.asarray(values)[:size]))
            else:
                indices, values = indices[:size], values[:size]
        return cls(jsparse.BCOO((values, indices), shape=tuple(shape)), count)

    @classmethod
    def _with_values(cls, like: FrameworkSparse, values: Any) -> "JaxSparse":
        if _on_cpu([like.tensor.indices, values]):
            return cls._compacted(_host_kept(like.tensor.indices, values, like.shape),
                                  like.shape)
        return cls._compacted(_kept(like.tensor.indices, values, _bounds(like.shape)),
                              like.shape)

    def _union(self, other: FrameworkSparse, sign: int) -> "JaxSparse":
        if not isinstance(other, JaxSparse):
            return super()._union(other, sign)  # type: ignore[return-value]
        data = other.tensor.data
        return self._sorted([self.tensor.indices, other.tensor.indices],
                            [self.tensor.data, data if sign == 1 else -data], self.shape)

    def step(self) -> "JaxSparse":
        data = self.tensor.data
        if _on_cpu([data]):
            values = np.asarray(data)
            if ((values == 1) | (values == 0)).all():
                return self
            return self._with_values(self, (values > 0).astype(values.dtype))
        if bool(_is_boolean(data)):
            return self
        return self._with_values(self, _indicator(data))

    def new_facts(self, known: Any) -> "JaxSparse | None":
        """1 where self > 0 and `known` is not: the positive entries of
        step(self) - step(known), in one sort."""
        if not isinstance(known, JaxSparse):
            return super().new_facts(known)  # type: ignore[return-value]
        mine, theirs = self.tensor.data, known.tensor.data
        if _on_cpu([mine, theirs]):
            mine, theirs = np.asarray(mine), np.asarray(theirs)
            signed = [(mine > 0).astype(mine.dtype), -(theirs > 0).astype(theirs.dtype)]
        else:
            signed = [_indicator(mine), -_indicator(theirs)]
        new = self._sorted([self.tensor.indices, known.tensor.indices], signed, self.shape,
                           positive=True)
        return new if new.count else None

    @classmethod
    def from_dense(cls, x: Any) -> "JaxSparse":
        rows, cols = np.nonzero(np.asarray(x))
        return cls.build(jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32),
                         jnp.asarray(x)[rows, cols], tuple(x.shape))

    @staticmethod
    def coordinates(backend: Backend, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
                    ) -> tuple[Any, Any, Any]:
        return (jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32),
                jnp.asarray(values, backend.dtype))

    @property
    def nnz(self) -> int:
        return self.count

    def parts(self) -> tuple[Any, Any, Any]:
        indices = self.tensor.indices
        if _on_cpu([indices]):  # host views: no kernel per size to slice them
            indices = np.asarray(indices)
        return indices[:, 0], indices[:, 1], self.tensor.data

    def dense(self) -> Any:
        return self.tensor.todense()

    def matmul(self, other: Any, on_left: bool) -> Any:
        if isinstance(other, JaxSparse):
            left, right = (self, other) if on_left else (other, self)
            return left._sparse_product(right)
        return self.tensor @ other if on_left else other @ self.tensor

    def _sparse_product(self, right: "JaxSparse") -> "JaxSparse":
        """self @ right by expand-sort-compress (the usual sparse-sparse product)."""
        a, a_values, b, b_values = (self.tensor.indices, self.tensor.data,
                                    right.tensor.indices, right.tensor.data)
        shape = (self.shape[0], right.shape[1])
        if _on_cpu([a, a_values, b, b_values]):
            return self._sorted(*_host_expanded(a, a_values, b, b_values), shape)
        starts, counts, total = _expansion_counts(a, a_values, b)
        indices, values = _expanded(a, a_values, b, b_values, starts, counts, _bounds(shape),
                                    size=_padded(int(total)))
        return self._sorted([indices], [values], shape)

    def multiply_sparse(self, other: FrameworkSparse) -> "JaxSparse":
        product = jsparse.bcoo_multiply_sparse(self.tensor, other.tensor)  # type: ignore
        return self.build(product.indices[:, 0], product.indices[:, 1], product.data,
                          self.shape)

    def on_numpy(self) -> Any:
        import scipy.sparse as sp

        from .csr import SparseTensor

        rows, cols, values = (np.asarray(x) for x in self.parts())
        real = values != 0  # not the padding
        values = values[real].astype(np.float64 if values.dtype == np.float64 else np.float32)
        return SparseTensor(sp.csr_array((values, (rows[real], cols[real])), shape=self.shape))

    def tuples(self) -> tuple[np.ndarray, np.ndarray]:
        rows, cols, values = (np.asarray(x) for x in self.parts())
        real = values != 0
        return rows[real], cols[real]

    @staticmethod
    def concat(arrays: list) -> Any:
        return jnp.concatenate(arrays)

    @staticmethod
    def indicator(mask: Any, like: Any) -> Any:
        return mask.astype(like.dtype)

    @staticmethod
    def gather(dense: Any, rows: Any, cols: Any) -> Any:
        if _on_cpu([dense, rows, cols]):  # (padding positions read 0, as mode="fill")
            dense, rows, cols = np.asarray(dense), np.asarray(rows), np.asarray(cols)
            inside = (rows < dense.shape[0]) & (cols < dense.shape[1])
            out = np.zeros(rows.shape, dense.dtype)
            out[inside] = dense[rows[inside], cols[inside]]
            return out
        return jnp.asarray(dense).at[rows, cols].get(mode="fill", fill_value=0)

    @staticmethod
    def host(x: Any) -> np.ndarray:
        return np.asarray(x)

    @staticmethod
    def index_sum(size: int, index: Any, values: Any) -> Any:
        return jnp.zeros(size, values.dtype).at[index].add(values, mode="drop")


def compiled_kernels() -> int:
    """How many compilations the kernels above hold (the benchmark's count)."""
    kernels = (_canonical, _kept, _is_boolean, _indicator, _expansion_counts, _expanded)
    return sum(getattr(k, "_cache_size", lambda: 0)() for k in kernels)
