"""Sparse relations on the torch backend: a coalesced torch.sparse COO tensor
(`torch.sparse.mm` for products; the Boolean semiring is the engine's `step`
after a product).  The operations themselves are framework.py's."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from ..backends.base import Backend
from .framework import FrameworkSparse


class TorchSparse(FrameworkSparse):
    """A 2-D torch.sparse COO tensor, coalesced (sorted row by row, no repeats)."""

    __slots__ = ()

    @classmethod
    def build(cls, rows: Any, cols: Any, values: Any, shape: tuple[int, int]) -> "TorchSparse":
        tensor = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, shape,
                                         check_invariants=False).coalesce()
        return cls._nonzero(tensor.indices(), tensor.values(), shape)

    @classmethod
    def _with_values(cls, like: FrameworkSparse, values: Any) -> "TorchSparse":
        return cls._nonzero(like.tensor.indices(), values, like.shape)  # same pattern

    @classmethod
    def _nonzero(cls, indices: Any, values: Any, shape: tuple[int, int]) -> "TorchSparse":
        """A coalesced tensor of these (sorted, distinct) positions, zeros dropped."""
        keep = values != 0
        if not bool(keep.all()):  # repeats that cancelled, or zeros given
            kept = keep.nonzero().squeeze(1)
            indices, values = indices.index_select(1, kept), values.index_select(0, kept)
        return cls(torch.sparse_coo_tensor(indices, values, shape, is_coalesced=True,
                                           check_invariants=False))

    @classmethod
    def from_dense(cls, x: Any) -> "TorchSparse":
        return cls(x.to_sparse().coalesce())

    @staticmethod
    def coordinates(backend: Backend, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
                    ) -> tuple[Any, Any, Any]:
        device = backend.torch_device
        return (torch.as_tensor(np.asarray(rows, np.int64), device=device),
                torch.as_tensor(np.asarray(cols, np.int64), device=device),
                torch.as_tensor(np.asarray(values), dtype=backend.dtype, device=device))

    def parts(self) -> tuple[Any, Any, Any]:
        indices = self.tensor.indices()
        return indices[0], indices[1], self.tensor.values()

    def dense(self) -> Any:
        return self.tensor.to_dense()

    def matmul(self, other: Any, on_left: bool) -> Any:
        with warnings.catch_warnings():  # torch routes some products through beta CSR code
            warnings.simplefilter("ignore", UserWarning)
            if isinstance(other, TorchSparse):
                pair = (self.tensor, other.tensor) if on_left else (other.tensor, self.tensor)
                product = torch.sparse.mm(*pair).coalesce()  # coalesced once, not again
                return self._nonzero(product.indices(), product.values(),
                                     tuple(product.shape))
            if on_left:
                return torch.sparse.mm(self.tensor, other)
            # dense @ sparse, as (sparse^T @ dense^T)^T
            return torch.sparse.mm(self.tensor.t().coalesce(), other.t()).t()

    def multiply_sparse(self, other: FrameworkSparse) -> "TorchSparse":
        product = (self.tensor * other.tensor).coalesce()  # type: ignore[attr-defined]
        return self._nonzero(product.indices(), product.values(), self.shape)

    @staticmethod
    def concat(arrays: list) -> Any:
        return torch.cat(arrays)

    @staticmethod
    def indicator(mask: Any, like: Any) -> Any:
        return mask.to(like.dtype)

    @staticmethod
    def host(x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()

    @staticmethod
    def index_sum(size: int, index: Any, values: Any) -> Any:
        return torch.zeros(size, dtype=values.dtype, device=values.device).index_add_(
            0, index, values)
