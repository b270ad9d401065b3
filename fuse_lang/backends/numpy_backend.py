"""The NumPy backend: the reference semantics run on these few operations."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import opt_einsum

from . import BackendError

_DTYPES = {"fp32": np.float32, "fp64": np.float64}


class NumpyBackend:
    name = "numpy"

    def __init__(self, device: str = "cpu", precision: str = "fp32") -> None:
        if device not in ("cpu", "auto"):
            raise BackendError(f"the numpy backend runs on the cpu only, not {device!r}")
        if precision not in _DTYPES:
            raise BackendError(f"the numpy backend supports fp32 and fp64, not {precision!r}")
        self.device = "cpu"
        self.precision = precision
        self.dtype = _DTYPES[precision]

    # ---- making arrays
    def asarray(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=self.dtype)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape, dtype=self.dtype)

    def arange(self, n: int) -> np.ndarray:
        return np.arange(n, dtype=self.dtype)

    def int_arange(self, n: int) -> np.ndarray:
        return np.arange(n)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    # ---- shapes
    shape = staticmethod(np.shape)
    transpose = staticmethod(np.transpose)
    reshape = staticmethod(np.reshape)
    broadcast_to = staticmethod(np.broadcast_to)
    concatenate = staticmethod(np.concatenate)

    def copy(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=self.dtype)

    def take(self, x: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
        return np.take(x, index, axis=axis)

    def diagonal(self, x: np.ndarray, a: int, b: int) -> np.ndarray:
        """Merge axes a < b into one (the diagonal), kept at position a."""
        return np.moveaxis(np.diagonal(x, axis1=a, axis2=b), -1, a)

    # ---- arithmetic
    def reduce(self, op: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        if op == "sum":
            return np.sum(x, axis=axes, dtype=self.dtype)
        if op == "max":
            return np.max(x, axis=axes)
        if op == "min":
            return np.min(x, axis=axes)
        if op == "avg":
            return np.mean(x, axis=axes, dtype=self.dtype)
        raise ValueError(op)

    def einsum(self, spec: str, *arrays: np.ndarray) -> np.ndarray:
        expr = _contract_expression(spec, tuple(a.shape for a in arrays))
        return np.asarray(expr(*arrays), dtype=self.dtype)

    def step(self, x: np.ndarray) -> np.ndarray:
        return (x > 0).astype(self.dtype)

    def where(self, cond, a, b):
        return np.where(cond, a, b).astype(self.dtype)

    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    tanh = staticmethod(np.tanh)
    sqrt = staticmethod(np.sqrt)
    abs = staticmethod(np.abs)
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    power = staticmethod(np.power)

    def erf(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        return erf(x).astype(self.dtype)

    def topk(self, x: np.ndarray, k: int) -> np.ndarray:
        """The k largest along the last axis, descending; ties to the lower index."""
        order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        return np.take_along_axis(x, order, axis=-1)

    def max_change(self, a: np.ndarray, b: np.ndarray) -> float:
        if a.shape != b.shape:
            return float("inf")
        if a.size == 0:
            return 0.0
        return float(np.max(np.abs(a - b)))


@functools.lru_cache(maxsize=1024)
def _contract_expression(spec: str, shapes: tuple[tuple[int, ...], ...]):
    # planning (the contraction path) is done once per signature and shapes
    return opt_einsum.contract_expression(spec, *shapes, optimize="auto")
