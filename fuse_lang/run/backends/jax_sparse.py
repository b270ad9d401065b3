"""Sparse relations on the jax backend: jax.experimental.sparse BCOO.

Eager jax compiles each operation once per shape it meets, and a relation's
number of non-zeros changes every round; so a BCOO here holds its entries
padded to a power of two (padding: out-of-bound positions, value 0, which BCOO
itself reads as padding), and the two steps that make a tensor canonical
(sort and sum repeats; the product of two sparse tensors, expand-sort-compress)
are jitted per padded size: a few dozen compilations, not one per round.
BCOO's own `@` serves the products with a dense operand; its sparse-sparse
product is not used (its output is sized for the dense worst case).  Eager
runs only: under jax.jit the padded size would have to be fixed in advance
(docs/scale.md).  The operations themselves are framework_sparse's."""
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse as jsparse

from .framework_sparse import FrameworkSparse


def _padded(n: int) -> int:
    return 0 if n == 0 else 1 << (int(n) - 1).bit_length()


def _pad(x: Any, size: int, fill: Any) -> Any:
    return x if x.shape[0] == size else jnp.concatenate(
        [x, jnp.full((size - x.shape[0],), fill, x.dtype)])


@functools.partial(jax.jit, static_argnames=("shape",))
def _sorted_sums(rows: Any, cols: Any, values: Any, shape: tuple[int, int]) -> tuple:
    """Entries sorted row by row, repeats summed into their first; the rest (and
    zeros, and padding) marked invalid."""
    order = jnp.lexsort((cols, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    first = jnp.concatenate([jnp.ones(1, bool), (rows[1:] != rows[:-1]) |
                             (cols[1:] != cols[:-1])]) if rows.shape[0] else rows < 0
    group = jnp.cumsum(first) - 1
    sums = jax.ops.segment_sum(values, group, num_segments=rows.shape[0])[group]
    valid = first & (sums != 0) & (rows < shape[0]) & (cols < shape[1])
    return rows, cols, sums, valid


@functools.partial(jax.jit, static_argnames=("size", "shape"))
def _compact(rows: Any, cols: Any, values: Any, valid: Any, size: int,
             shape: tuple[int, int]) -> Any:
    (kept,) = jnp.nonzero(valid, size=size, fill_value=rows.shape[0])
    rows = jnp.concatenate([rows, jnp.full(1, shape[0], rows.dtype)])[kept]
    cols = jnp.concatenate([cols, jnp.full(1, shape[1], cols.dtype)])[kept]
    values = jnp.concatenate([values, jnp.zeros(1, values.dtype)])[kept]
    return jsparse.BCOO((values, jnp.stack([rows, cols], 1)), shape=shape)


@jax.jit
def _expansion_counts(a_cols: Any, a_values: Any, b_rows: Any) -> tuple[Any, Any]:
    """Per entry (i, k) of A: where B's row k starts and how many entries it has
    (none for A's padding)."""
    starts = jnp.searchsorted(b_rows, a_cols, side="left")
    ends = jnp.searchsorted(b_rows, a_cols, side="right")
    return starts, jnp.where(a_values != 0, ends - starts, 0)


@functools.partial(jax.jit, static_argnames=("size",))
def _expand(a_rows: Any, a_values: Any, b_cols: Any, b_values: Any, starts: Any,
            counts: Any, size: int) -> tuple[Any, Any, Any]:
    """Each A entry paired with each entry of the B row it meets (the join's
    candidates, `size` of them with padding)."""
    owner = jnp.repeat(jnp.arange(counts.shape[0]), counts, total_repeat_length=size)
    offset = jnp.arange(size) - (jnp.cumsum(counts) - counts)[owner]
    real = jnp.arange(size) < counts.sum()
    at = jnp.where(real, starts[owner] + offset, 0)
    return (jnp.where(real, a_rows[owner], jnp.iinfo(a_rows.dtype).max // 2), b_cols[at],
            jnp.where(real, a_values[owner] * b_values[at], 0))


class JaxSparse(FrameworkSparse):
    """A 2-D BCOO array: entries sorted row by row, no repeats, no zeros, padded
    to a power of two with out-of-bound positions."""

    __slots__ = ()

    @classmethod
    def build(cls, rows: Any, cols: Any, values: Any, shape: tuple[int, int]) -> "JaxSparse":
        size = _padded(rows.shape[0])
        rows = _pad(jnp.asarray(rows, jnp.int32), size, shape[0])
        cols = _pad(jnp.asarray(cols, jnp.int32), size, shape[1])
        values = _pad(jnp.asarray(values), size, 0)
        rows, cols, sums, valid = _sorted_sums(rows, cols, values, shape=tuple(shape))
        count = int(valid.sum())
        return cls(_compact(rows, cols, sums, valid, size=_padded(count), shape=tuple(shape)))

    @classmethod
    def from_dense(cls, x: Any) -> "JaxSparse":
        rows, cols = np.nonzero(np.asarray(x))
        return cls.build(jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32),
                         jnp.asarray(x)[rows, cols], tuple(x.shape))

    @staticmethod
    def coordinates(backend: Any, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
                    ) -> tuple[Any, Any, Any]:
        return (jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32),
                jnp.asarray(values, backend.dtype))

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(np.asarray(self.tensor.data)))

    def parts(self) -> tuple[Any, Any, Any]:
        indices = self.tensor.indices
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
        a_rows, a_cols, a_values = self.parts()
        b_rows, b_cols, b_values = right.parts()
        starts, counts = _expansion_counts(a_cols, a_values, b_rows)
        total = int(counts.sum())
        rows, cols, values = _expand(a_rows, a_values, b_cols, b_values, starts, counts,
                                     size=_padded(total))
        shape = (self.shape[0], right.shape[1])
        return self.build(jnp.minimum(rows, shape[0]), cols, values, shape)

    def multiply_sparse(self, other: FrameworkSparse) -> "JaxSparse":
        product = jsparse.bcoo_multiply_sparse(self.tensor, other.tensor)  # type: ignore
        return self.build(product.indices[:, 0], product.indices[:, 1], product.data,
                          self.shape)

    def on_numpy(self) -> Any:
        import scipy.sparse as sp

        from ..sparse import SparseTensor

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
        return jnp.asarray(dense).at[rows, cols].get(mode="fill", fill_value=0)

    @staticmethod
    def host(x: Any) -> np.ndarray:
        return np.asarray(x)

    @staticmethod
    def index_sum(size: int, index: Any, values: Any) -> Any:
        return jnp.zeros(size, values.dtype).at[index].add(values, mode="drop")
