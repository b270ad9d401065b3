"""Sparse relations on the jax backend: jax.experimental.sparse BCOO, kept
canonical with `bcoo_sum_duplicates` (sorted, no repeats) and explicit zeros
dropped; products by `@` (bcoo_dot_general).  Eager runs only: under jax.jit a
BCOO's number of non-zeros is part of its shape, and a relation's changes
every round (docs/scale.md).  The operations are framework_sparse's."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse as jsparse

from .framework_sparse import FrameworkSparse


class JaxSparse(FrameworkSparse):
    """A 2-D BCOO array: indices (nnz, 2) sorted row by row, no repeats, no zeros."""

    __slots__ = ()

    @classmethod
    def build(cls, rows: Any, cols: Any, values: Any, shape: tuple[int, int]) -> "JaxSparse":
        indices = jnp.stack([jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32)], 1)
        return cls._canonical(jsparse.BCOO((jnp.asarray(values), indices), shape=shape))

    @classmethod
    def _canonical(cls, array: Any) -> "JaxSparse":
        array = jsparse.bcoo_sum_duplicates(array)
        keep = np.asarray(array.data != 0)
        if not keep.all():  # repeats that cancelled, a product's explicit zeros
            array = jsparse.BCOO((array.data[keep], array.indices[keep]), shape=array.shape,
                                 indices_sorted=True, unique_indices=True)
        return cls(array)

    @classmethod
    def from_dense(cls, x: Any) -> "JaxSparse":
        return cls._canonical(jsparse.BCOO.fromdense(x))

    @staticmethod
    def coordinates(backend: Any, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
                    ) -> tuple[Any, Any, Any]:
        return (jnp.asarray(rows, jnp.int32), jnp.asarray(cols, jnp.int32),
                jnp.asarray(values, backend.dtype))

    def parts(self) -> tuple[Any, Any, Any]:
        indices = self.tensor.indices
        return indices[:, 0], indices[:, 1], self.tensor.data

    def dense(self) -> Any:
        return self.tensor.todense()

    def matmul(self, other: Any, on_left: bool) -> Any:
        other_array = other.tensor if isinstance(other, JaxSparse) else other
        product = self.tensor @ other_array if on_left else other_array @ self.tensor
        return self._canonical(product) if isinstance(product, jsparse.BCOO) else product

    def multiply_sparse(self, other: FrameworkSparse) -> "JaxSparse":
        return self._canonical(jsparse.bcoo_multiply_sparse(self.tensor, other.tensor))

    @staticmethod
    def concat(arrays: list) -> Any:
        return jnp.concatenate(arrays)

    @staticmethod
    def indicator(mask: Any, like: Any) -> Any:
        return mask.astype(like.dtype)

    @staticmethod
    def host(x: Any) -> np.ndarray:
        return np.asarray(x)

    @staticmethod
    def index_sum(size: int, index: Any, values: Any) -> Any:
        return jnp.zeros(size, values.dtype).at[index].add(values)
