"""A manifest tensor stored as shard files, read slice by slice (docs/scale.md,
"Several hosts").

In a group of processes (`compile(distributed=True)`) each process holds only
its slices of a sharded tensor.  A manifest tensor joined from shard files
along an axis (`"shards": [...]`, docs/weights.md) is handed to the placement
as `JoinedShards`: `value[index]` opens only the shard files that the slices
cross (each memory-mapped where its format allows: `.npy`, `.safetensors`) and
verifies a file's sha256 when it is first opened.  Anything that needs the
whole tensor reads it through `__array__`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

Loader = Callable[[], np.ndarray]


class JoinedShards:
    """A tensor joined from shards along `axis`, read where it is sliced."""

    host_slices = True  # the placement may read it slice by slice (run/backends)

    def __init__(self, parts: Sequence[tuple[int, Loader]], axis: int,
                 shape: tuple[int, ...], dtype: Any) -> None:
        self.parts = list(parts)  # (extent along axis, how to open the shard)
        self.axis = axis
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.opened: list[int] = []  # the shards read so far, in order

    def _part(self, k: int) -> np.ndarray:
        if k not in self.opened:
            self.opened.append(k)
        return self.parts[k][1]()

    def __getitem__(self, index: Any) -> np.ndarray:
        """The slices `index` (a tuple of slices, as jax's placement asks), opening
        only the shards they cross; any other index reads the whole tensor."""
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) != self.ndim or not all(isinstance(i, slice) for i in index):
            return np.asarray(self)[index]
        lo, hi, step = index[self.axis].indices(self.shape[self.axis])
        if step != 1:
            return np.asarray(self)[index]
        pieces, start = [], 0
        for k, (extent, _) in enumerate(self.parts):
            end = start + extent
            if start < hi and lo < end:  # this shard holds some of [lo, hi)
                local = [slice(None)] * self.ndim
                local[self.axis] = slice(max(lo, start) - start, min(hi, end) - start)
                pieces.append(np.asarray(self._part(k)[tuple(local)], dtype=self.dtype))
            start = end
        if not pieces:
            empty = list(self.shape)
            empty[self.axis] = 0
            pieces = [np.zeros(empty, dtype=self.dtype)]
        joined = pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=self.axis)
        rest = tuple(slice(None) if a == self.axis else i for a, i in enumerate(index))
        return joined[rest]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = np.concatenate([np.asarray(self._part(k)) for k in range(len(self.parts))],
                               axis=self.axis).astype(self.dtype, copy=False)
        return whole if dtype is None else whole.astype(dtype, copy=False)
