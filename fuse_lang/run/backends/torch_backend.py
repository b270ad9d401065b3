"""The Torch backend: the NumPy reference semantics on torch tensors, on any
device torch has.  Eager by default; `compile_segment` captures a straight
run of equations as one aten graph (make_fx: Python control flow is resolved
at capture, as jax.jit does) and hands it to `torch.compile`."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx

from ...plan import contraction  # the one planner: what explain prints runs
from ..sparse.framework import with_sparse
from ..sparse.torch_sparse import TorchSparse
from . import BackendError, check_precision
from .base import Backend, elementwise_from
from .pairwise import checked_matmul, pair_as_matmul

_DTYPES = {"fp32": torch.float32, "fp64": torch.float64, "bf16": torch.bfloat16,
           "fp16": torch.float16}


def _device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        found = torch.device(device)
    except RuntimeError:  # (torch's own message lists every device type it has a name for)
        raise BackendError(f"the torch backend runs on cpu, cuda[:N] or mps, "
                           f"not {device!r}") from None
    if found.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendError(f"the device {device!r} is not available: torch sees no CUDA GPU "
                               f"on this machine (use device=\"cpu\" or \"auto\")")
        index = found.index or 0
        if index >= torch.cuda.device_count():
            raise BackendError(f"the device {device!r} is not available: torch sees "
                               f"{torch.cuda.device_count()} CUDA GPU(s)")
        found = torch.device("cuda", index)
    elif found.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise BackendError(f"the device {device!r} is not available here")
    elif found.type != "cpu":
        raise BackendError(f"the torch backend runs on cpu, cuda[:N] or mps, not {device!r}")
    return found



_REDUCTIONS = {"sum": torch.sum, "max": torch.amax, "min": torch.amin, "avg": torch.mean}


def _elementwise(fn: Callable) -> Callable:
    """A backend method applying `fn` to its arguments, Python numbers made tensors."""
    def method(self: "TorchBackend", *args: Any) -> torch.Tensor:
        return fn(*map(self._t, args))
    return method


@with_sparse(TorchSparse)  # planned sparse tensors: torch.sparse COO (eager runs)
@elementwise_from(torch, wrap=_elementwise, renamed={"power": "pow"})
class TorchBackend(Backend):
    name = "torch"
    compiles_segments = True

    def __init__(self, device: str = "cpu", precision: str = "fp32") -> None:
        if precision not in _DTYPES:
            raise BackendError(f"the torch backend supports {', '.join(_DTYPES)}, "
                               f"not {precision!r}")
        self.torch_device = _device(device)
        self.device = str(self.torch_device)
        self.precision = precision
        self.dtype = _DTYPES[precision]
        self.itemsize = self.dtype.itemsize
        check_precision(self)

    # ---- making arrays
    def asarray(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x.to(device=self.torch_device, dtype=self.dtype)  # no copy when it fits
        if isinstance(x, np.ndarray) and x.dtype != bool and x.dtype.kind in "fiu":
            # straight from NumPy's memory (no float64 detour), converted on the way
            if not x.dtype.isnative:  # a big-endian file, say
                x = x.astype(x.dtype.newbyteorder("="))
            if not (x.flags.writeable and x.flags.c_contiguous):
                x = x.copy()  # torch shares memory only with arrays it may write
            return torch.from_numpy(x).to(device=self.torch_device, dtype=self.dtype)
        return torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=self.dtype,
                               device=self.torch_device)

    def zeros(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.zeros(shape, dtype=self.dtype, device=self.torch_device)

    def arange(self, n: int) -> torch.Tensor:
        return torch.arange(n, dtype=self.dtype, device=self.torch_device)

    def concrete(self, x: Any) -> np.ndarray | None:
        from torch._subclasses.fake_tensor import is_fake

        if isinstance(x, torch.Tensor) and (is_fake(x) or torch.compiler.is_compiling()):
            return None  # (a capture's fake tensor has a shape and no values)
        return self.to_numpy(x)

    def to_numpy(self, x: Any) -> np.ndarray:
        if not isinstance(x, torch.Tensor):
            return np.asarray(x)
        x = x.detach()
        if x.dtype == torch.bfloat16:  # numpy has no bfloat16: hand out float32
            x = x.float()
        return x.cpu().numpy()

    # ---- shapes
    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape) if isinstance(x, torch.Tensor) else np.shape(x)

    def transpose(self, x: torch.Tensor, order) -> torch.Tensor:
        return _permute(x, order)

    def reshape(self, x: torch.Tensor, shape) -> torch.Tensor:
        return x.reshape(tuple(shape))

    def broadcast_to(self, x: torch.Tensor, shape) -> torch.Tensor:
        return torch.broadcast_to(self._t(x), tuple(shape))

    def windows(self, x: torch.Tensor, axis: int, base: int, count: int, width: int
                ) -> torch.Tensor | None:
        # a strided view over the axis padded with zeros (im2col's), not a gather
        # through an index tensor and a mask: torch.compile made that gather a loop
        # about 5x slower than the copy of this view
        lo, hi = base, base + count + width - 1  # the cells read: [lo, hi)
        size = x.shape[axis]
        if count < 1 or width < 1 or hi <= 0 or lo >= size:
            return None
        inside = x.narrow(axis, max(lo, 0), min(hi, size) - max(lo, 0))
        before, after = max(0, -lo), max(0, hi - size)
        if before or after:
            pad = [0, 0] * (x.dim() - 1 - axis) + [before, after]
            inside = torch.nn.functional.pad(inside, pad)
        return inside.unfold(axis, width, 1).movedim(-1, axis + 1)

    def concatenate(self, parts, axis: int) -> torch.Tensor:
        return torch.cat(list(parts), dim=axis)

    def copy(self, x: torch.Tensor) -> torch.Tensor:
        return self._t(x).clone()

    def take(self, x: torch.Tensor, index: Any, axis: int) -> torch.Tensor:
        if isinstance(index, (int, np.integer)):
            return x.select(axis, int(index))
        index = np.asarray(index)
        flat = torch.as_tensor(index.reshape(-1), dtype=torch.long, device=x.device)
        taken = x.index_select(axis, flat)
        shape = tuple(x.shape[:axis]) + index.shape + tuple(x.shape[axis + 1:])
        return taken.reshape(shape)

    def gather_rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        ids = torch.as_tensor(ids, device=x.device)
        if ids.shape[0] == 1:  # one table (an embedding): index_select, ~4x faster
            return x[0].index_select(0, ids[0].long())[None]
        rows = torch.arange(ids.shape[0], device=x.device)[:, None]
        return x[rows, ids.long()]

    def diagonal(self, x: torch.Tensor, a: int, b: int) -> torch.Tensor:
        return torch.diagonal(x, 0, a, b).movedim(-1, a)

    # ---- arithmetic
    def reduce(self, op: str, x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
        empty = self.empty_projection(op, x, axes)
        return _REDUCTIONS[op](x, dim=axes) if empty is None else empty

    def einsum(self, spec: str, *arrays: torch.Tensor) -> torch.Tensor:
        if len(arrays) == 1:
            return torch.einsum(spec, *arrays)
        if len(arrays) == 2:  # a plain mm where it can be: torch.einsum always batches
            return pair_as_matmul(spec, arrays[0], arrays[1], total=_total,
                                  permute=_permute, matmul=_matmul)
        # the order `fuse explain` prints (plan.contraction), as every backend runs it
        expr = contraction.planned_contraction(spec, tuple(tuple(a.shape) for a in arrays))
        return expr(*arrays, backend="torch")

    def count_einsum(self, spec: str, *arrays: torch.Tensor) -> torch.Tensor:
        if self.dtype not in (torch.float16, torch.bfloat16) or not all(
                isinstance(a, torch.Tensor) and a.layout == torch.strided for a in arrays):
            return self.einsum(spec, *arrays)
        wide = self.einsum(spec, *(a.float() for a in arrays))  # counts in float32
        top = torch.finfo(self.dtype).max
        return wide.clamp(-top, top).to(self.dtype)

    def scale_fresh(self, x: torch.Tensor, factor) -> torch.Tensor:
        """x * factor, in x's memory when x is a result made for this value alone
        (not a view into another tensor): one allocation fewer per scaled product."""
        if (x.dtype == self.dtype and not x.requires_grad and not x._is_view()
                and (not isinstance(factor, torch.Tensor) or factor.dim() == 0)):
            return x.mul_(factor)
        return x * factor

    def new_facts(self, found: torch.Tensor, known: torch.Tensor) -> torch.Tensor | None:
        new = (found > 0) & (known <= 0)
        if not bool(new.any()):
            return None
        return new.to(self.dtype)

    def softmax(self, x: torch.Tensor, axis: int, fresh: bool = False) -> torch.Tensor:
        return torch.softmax(x, dim=axis)

    def log_softmax(self, x: torch.Tensor, axis: int) -> torch.Tensor:
        return torch.log_softmax(x, dim=axis)

    def lnorm(self, x: torch.Tensor, axis: int, eps: float) -> torch.Tensor:
        if axis in (-1, x.dim() - 1):
            return F.layer_norm(x, x.shape[-1:], eps=eps)
        centred = x - x.mean(dim=axis, keepdim=True)
        var = (centred * centred).mean(dim=axis, keepdim=True)
        return centred / torch.sqrt(var + eps)

    def relu(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self._t(x))

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return (self._t(x) > 0).to(self.dtype)

    def where(self, cond, a, b) -> torch.Tensor:
        return torch.where(self._t(cond), self._t(a), self._t(b)).to(self.dtype)

    erf = _elementwise(torch.erf)
    def gelu(self, x: Any) -> torch.Tensor:
        """The exact (erf) form; gelu(inf) is inf, as in NumPy and jax (F.gelu: NaN)."""
        x = self._t(x)
        return torch.where(x == math.inf, x, F.gelu(x))

    def topk(self, x: torch.Tensor, k: int) -> torch.Tensor:
        """The k largest along the last axis, descending (equal values are equal:
        which index a tie came from cannot show in the values); a NaN ranks below
        everything, as NumPy's sort and jax's top_k have it (torch.topk takes a NaN for
        the largest value)."""
        order = torch.sort(-x, dim=-1, stable=True).indices[..., :k]  # NaN sorts last
        return torch.take_along_dim(x, order, dim=-1)

    def scatter(self, op: str, size: int, targets: np.ndarray, values: torch.Tensor,
                init: float) -> torch.Tensor:
        """A flat array of `size` cells, starting at `init`, with each value combined
        into its target cell by op (sum, max or min)."""
        out = torch.full((size,), init, dtype=self.dtype, device=self.torch_device)
        index = torch.as_tensor(targets, dtype=torch.long, device=self.torch_device)
        reduce = {"sum": "sum", "max": "amax", "min": "amin"}[op]
        return out.scatter_reduce(0, index, values.to(self.dtype), reduce=reduce,
                                  include_self=True)

    # ---- the state of a fixpoint's rounds (the loop itself runs in Python)
    def integer(self, n: int) -> torch.Tensor:
        return torch.tensor(n, dtype=torch.int32, device=self.torch_device)

    def any_positive(self, arrays: list) -> torch.Tensor:
        flags = [torch.any(a > 0) for a in arrays]
        return torch.stack(flags).any() if len(flags) > 1 else flags[0]

    def max_abs_difference(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if a.numel() == 0:
            return torch.zeros((), dtype=self.dtype, device=self.torch_device)
        return torch.max(torch.abs(a - b)).to(self.dtype)

    def max_of(self, numbers: list) -> torch.Tensor:
        return torch.stack(numbers).max() if len(numbers) > 1 else numbers[0]

    def finite(self, x: torch.Tensor) -> torch.Tensor:
        return torch.isfinite(x)

    # ---- compiling a straight run of equations
    def compile_segment(self, fn: Callable, on_capture: Callable[[], None],
                        artifact: Path | None = None) -> Callable:
        """fn(values, bases) -> values, captured once as an aten graph (the
        Python interpreter runs once, at capture) and compiled by Inductor
        (`artifact` is never given: torch's graphs are not exported)."""
        compiled: list[Callable] = []

        def run(values: dict, bases: dict) -> dict:
            if not compiled:
                on_capture()
                graph = make_fx(fn)(*_unaliased((values, bases)))
                compiled.append(torch.compile(graph, dynamic=False))
            return compiled[0](values, bases)

        return run

    # ---- helpers
    def _t(self, x: Any) -> torch.Tensor:
        """A Python number as a tensor of this backend's dtype and device."""
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, np.ndarray) and x.dtype == bool:
            return torch.as_tensor(x, device=self.torch_device)
        return torch.as_tensor(x, dtype=self.dtype, device=self.torch_device)


def _unaliased(args: Any) -> Any:
    """The arguments with a tensor given twice (a fixpoint's state that starts as
    its source, which the graph also takes among the bases) cloned the second
    time: make_fx traces one tensor as one input, so the captured graph would read
    the state wherever it reads the source, in every later call too."""
    leaves, spec = pytree.tree_flatten(args)
    seen: set[int] = set()
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            if id(leaf) in seen:
                leaves[i] = leaf.clone()
            seen.add(id(leaf))
    return pytree.tree_unflatten(leaves, spec)


def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.matmul; on the cpu, in blocks where a bounded run multiplies a large
    product (on a GPU the kernels are queued at once: blocks would not help)."""
    if a.device.type != "cpu" or a.requires_grad or b.requires_grad:
        return torch.matmul(a, b)
    return checked_matmul(a, b, torch.matmul, lambda shape: torch.empty(
        shape, dtype=torch.result_type(a, b), device=a.device))


def _total(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    return x.sum(dim=axes)


def _permute(x: torch.Tensor, order) -> torch.Tensor:
    return torch.permute(x, tuple(order))
