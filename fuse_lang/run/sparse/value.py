"""What a sparse tensor is on every backend, apart from any one backend's type.

`SparseValue` is the base of each backend's sparse tensor (NumPy's CSR
`SparseTensor` in csr.py and its `SparseRelation` of 3 axes or more in nd.py;
torch.sparse and BCOO ones in torch_sparse.py, jax_sparse.py): the engine asks
`is_sparse` and reads results through `on_numpy`.  `pair_plan` decides how a
product of two operands runs sparse, for every backend alike.  `sp` is
scipy.sparse, imported when a sparse tensor is first made (a dense run never
pays for it).
"""
from __future__ import annotations

from typing import Any

import numpy as np


class _LazyScipy:
    """scipy.sparse, imported when a sparse tensor is first made (a dense run never pays)."""

    def __getattr__(self, name: str) -> Any:
        import scipy.sparse

        return getattr(scipy.sparse, name)


sp = _LazyScipy()


class SparseValue:
    """What every backend's sparse tensor is (the NumPy `SparseTensor` in csr.py;
    torch.sparse and BCOO ones in torch_sparse.py, jax_sparse.py): the engine
    asks `is_sparse` and reads results through `on_numpy`."""

    __slots__ = ()

    def on_numpy(self) -> "SparseValue":
        """This tensor on the NumPy backend (csr.SparseTensor; nd.SparseRelation)."""
        raise NotImplementedError

    def native(self) -> Any:
        """The framework's own sparse tensor (scipy.sparse, torch.sparse, BCOO)."""
        raise NotImplementedError

    def reshape(self, *shape: Any) -> Any:
        """Itself to its own shape (the interpreter asks); any other shape is dense."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        if tuple(shape) == tuple(self.shape):  # type: ignore[attr-defined]
            return self
        return np.asarray(self).reshape(shape)


def is_sparse(x: Any) -> bool:
    """A sparse tensor of any backend."""
    return isinstance(x, SparseValue)


def pair_plan(ta: str, tb: str, out: str, ndim_a: int, ndim_b: int) -> tuple | None:
    """How a product of two operands of at most two axes runs sparse (shared by
    every backend): ("multiply", transpose_b, transpose_out) for `R(x,y) S(x,y)`,
    ("matmul", kept_a, kept_b, contracted, transpose_out) for a matrix product;
    None when neither fits (the product runs on dense copies)."""
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or ndim_a != len(ta) \
            or ndim_b != len(tb):
        return None
    if len(ta) == 2 and set(ta) == set(tb) and set(out) == set(ta):  # R(x,y) S(x,y)
        return ("multiply", tb != ta, out != ta)
    shared = set(ta) & set(tb)
    if len(shared) != 1 or shared & set(out) or len(ta) > 2 or len(tb) > 2:
        return None
    (c,) = shared
    kept_a = [x for x in ta if x != c]
    kept_b = [x for x in tb if x != c]
    if any(x not in out for x in kept_a + kept_b) or len(out) != len(kept_a) + len(kept_b):
        return None
    return ("matmul", kept_a, kept_b, c, len(out) == 2 and "".join(kept_a + kept_b) != out)
