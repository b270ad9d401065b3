"""The JAX backend: the NumPy reference semantics on jax arrays.  Straight runs
of equations are traced once per input-shape signature and compiled by XLA
(`jax.jit`), which fuses their elementwise chains; recursion runs as a loop
of such steps."""
from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...plan import contraction  # the one planner: what explain prints runs
from ..sparse.framework import with_sparse
from ..sparse.jax_sparse import JaxSparse
from . import BackendError, check_precision, jax_segments
from .base import Backend, elementwise_from

_REDUCTIONS = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "avg": jnp.mean}
_DTYPES = {"fp32": jnp.float32, "fp64": jnp.float64, "bf16": jnp.bfloat16,
           "fp16": jnp.float16}


def _platform_devices(platform: str) -> list:
    """This process's devices of `platform` (all of them, but in a process group:
    run.distributed; the mesh of a sharded run spans every process's)."""
    try:
        return list(jax.local_devices(backend=platform))
    except RuntimeError:  # no such platform here
        return []


def _device(device: str):
    if device == "auto":
        gpus = _platform_devices("gpu")
        return gpus[0] if gpus else jax.local_devices(backend="cpu")[0]
    kind, _, number = device.partition(":")
    if kind not in ("cpu", "cuda", "gpu", "tpu") or (number and not number.isdigit()):
        raise BackendError(f"the jax backend runs on cpu, cuda[:N] or tpu[:N], not {device!r}")
    platform = "gpu" if kind in ("cuda", "gpu") else kind
    found = _platform_devices(platform)
    index = int(number or 0)
    if index >= len(found):
        seen = f"{len(found)} {platform} device(s)" if found else f"no {platform} device"
        raise BackendError(f"the device {device!r} is not available: jax sees {seen} on this "
                           f"machine (use device=\"cpu\" or \"auto\")")
    return found[index]


@functools.lru_cache(maxsize=1024)
def _jitted_einsum(spec: str, path: tuple | None) -> Callable:
    """jnp.einsum of one spec (and contraction path) as a jitted function: called on
    concrete arrays (an eager run, a recurrence's steps) jnp.einsum plans its path
    and dispatches op by op, about 100 us a call; the jitted one is one dispatch
    (about 5 us).  Inside a trace (a compiled segment) it is inlined as before."""
    if path is None:
        return jax.jit(functools.partial(jnp.einsum, spec))
    return jax.jit(functools.partial(jnp.einsum, spec, optimize=[*path]))


@functools.lru_cache(maxsize=256)
def _jitted_rows(axes: tuple[int, ...]) -> Callable:
    """x at one position of each of `axes` (ascending), the positions traced: one
    compiled function whatever the positions (a recurrence's every step)."""
    def rows(x: jax.Array, *positions: Any) -> jax.Array:
        for axis, position in sorted(zip(axes, positions), reverse=True):
            x = jax.lax.dynamic_index_in_dim(x, position, axis, keepdims=False)
        return x
    return jax.jit(rows)


@with_sparse(JaxSparse)  # planned sparse tensors: BCOO (eager runs, compiled=False)
@elementwise_from(jnp)
class JaxBackend(Backend):
    name = "jax"
    compiles_by_default = True
    compiles_segments = True
    compiles_loops = True  # while_loop and fixed_loop

    def __init__(self, device: str = "cpu", precision: str = "fp32") -> None:
        if precision not in _DTYPES:
            raise BackendError(f"the jax backend supports {', '.join(_DTYPES)}, not "
                               f"{precision!r}")
        self.jax_device = _device(device)
        platform = "cuda" if self.jax_device.platform == "gpu" else self.jax_device.platform
        self.device = f"{platform}:{self.jax_device.id}" if platform != "cpu" else "cpu"
        self.precision = precision
        self.dtype = _DTYPES[precision]
        self.itemsize = np.dtype(self.dtype).itemsize
        with self.context():
            check_precision(self, jax.jit)

    def context(self) -> contextlib.AbstractContextManager:
        """Arrays made during a run go to this backend's device; fp64 needs jax's
        64-bit mode, switched on for the run only."""
        stack = contextlib.ExitStack()
        stack.enter_context(jax.default_device(self.jax_device))
        if self.precision == "fp64":
            stack.enter_context(jax.enable_x64(True))
        return stack

    # ---- making arrays
    def asarray(self, x: Any) -> jax.Array:
        if isinstance(x, jax.Array) and x.dtype == self.dtype:
            return x
        if isinstance(x, (np.ndarray, np.generic, list, tuple, float, int)):
            # converted on the host and copied over: jnp.asarray would compile a
            # conversion per shape, which a process with a warm cache still pays
            return jax.device_put(np.asarray(x, dtype=self.dtype))
        return jnp.asarray(x, dtype=self.dtype)

    def zeros(self, shape: tuple[int, ...]) -> jax.Array:
        return jnp.zeros(shape, dtype=self.dtype)

    def arange(self, n: int) -> jax.Array:
        return jnp.arange(n, dtype=self.dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        out = np.asarray(x)
        if out.dtype == jnp.bfloat16:  # numpy has no bfloat16 of its own: hand out float32
            out = out.astype(np.float32)
        return out

    def concrete(self, x: Any) -> np.ndarray | None:
        return None if isinstance(x, jax.core.Tracer) else self.to_numpy(x)

    # ---- shapes
    transpose = staticmethod(jnp.transpose)
    reshape = staticmethod(jnp.reshape)
    broadcast_to = staticmethod(jnp.broadcast_to)

    def concatenate(self, parts, axis: int) -> jax.Array:
        return jnp.concatenate(list(parts), axis=axis)

    def copy(self, x: Any) -> jax.Array:
        return jnp.asarray(x, dtype=self.dtype)  # jax arrays are immutable: nothing to copy

    def basic_index(self, x: jax.Array, where: tuple) -> jax.Array:
        if isinstance(x, jax.core.Tracer) or not all(
                isinstance(w, int) or w == slice(None) for w in where):
            return x[where]  # traced: a static index is the better graph
        # a concrete array (an eager run, a recurrence's steps): x[where] dispatches
        # its slicing op by op (about 60 us); one jitted call is about 10 us
        positions = tuple(w for w in where if isinstance(w, int))
        axes = tuple(a for a, w in enumerate(where) if isinstance(w, int))
        return _jitted_rows(axes)(x, *positions) if axes else x

    def take(self, x: jax.Array, index: Any, axis: int) -> jax.Array:
        if isinstance(index, (int, np.integer)):
            return jax.lax.index_in_dim(x, int(index), axis, keepdims=False)
        return jnp.take(x, np.asarray(index), axis=axis)

    def gather_rows(self, x: jax.Array, ids: jax.Array) -> jax.Array:
        rows = jnp.arange(jnp.shape(ids)[0])[:, None]
        # an id that is no position reads NaN: not the clamped edge row jax's indexing
        # gives, nor the row from the end a negative id picks, nor a fraction's or NaN's
        # truncation to a row (a traced run cannot stop on values: the run checks ids
        # where it has them, and runs a traced one again eagerly where it read NaN)
        ids = jnp.asarray(ids)
        count = jnp.shape(x)[1]
        good = (ids >= 0) & (ids < count) & (ids == jnp.floor(ids)) if jnp.issubdtype(
            ids.dtype, jnp.floating) else (ids >= 0) & (ids < count)
        picks = jnp.where(good, ids, count).astype(jnp.int32)  # `count`: outside, filled
        return x.at[rows, picks].get(mode="fill", fill_value=jnp.nan)

    def diagonal(self, x: jax.Array, a: int, b: int) -> jax.Array:
        return jnp.moveaxis(jnp.diagonal(x, axis1=a, axis2=b), -1, a)

    # ---- arithmetic
    def reduce(self, op: str, x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
        empty = self.empty_projection(op, x, axes)  # shapes are static under jax.jit
        return _REDUCTIONS[op](x, axis=axes) if empty is None else empty

    def einsum(self, spec: str, *arrays: jax.Array) -> jax.Array:
        if len(arrays) <= 2:
            return _jitted_einsum(spec, None)(*arrays)
        # the order `fuse explain` prints (plan.contraction), as every backend runs it
        path = contraction.contraction_path(spec, tuple(tuple(a.shape) for a in arrays)).path
        return _jitted_einsum(spec, tuple(path))(*arrays)

    def count_einsum(self, spec: str, *arrays: jax.Array) -> jax.Array:
        if self.dtype not in (jnp.float16, jnp.bfloat16) or not all(
                isinstance(a, jax.Array) for a in arrays):
            return self.einsum(spec, *arrays)
        wide = self.einsum(spec, *(a.astype(jnp.float32) for a in arrays))  # counts in float32
        top = float(jnp.finfo(self.dtype).max)
        return jnp.clip(wide, -top, top).astype(self.dtype)

    def new_facts(self, found: jax.Array, known: jax.Array) -> jax.Array | None:
        new = (found > 0) & (known <= 0)
        if not bool(jnp.any(new)):
            return None
        return new.astype(self.dtype)

    def softmax(self, x: jax.Array, axis: int, fresh: bool = False) -> jax.Array:
        return jax.nn.softmax(x, axis=axis)

    def log_softmax(self, x: jax.Array, axis: int) -> jax.Array:
        return jax.nn.log_softmax(x, axis=axis)

    def lnorm(self, x: jax.Array, axis: int, eps: float) -> jax.Array:
        centred = x - jnp.mean(x, axis=axis, keepdims=True)
        var = jnp.mean(centred * centred, axis=axis, keepdims=True)
        return centred / jnp.sqrt(var + eps)

    def step(self, x: Any) -> jax.Array:
        return (jnp.asarray(x) > 0).astype(self.dtype)

    def where(self, cond, a, b) -> jax.Array:
        return jnp.where(cond, a, b).astype(self.dtype)

    def erf(self, x: Any) -> jax.Array:
        return jax.scipy.special.erf(x)

    @staticmethod
    def abs(x: Any) -> jax.Array:
        """|x| with torch's gradient at 0, sign(0) = 0 (jnp.abs's is 1 there, so the two
        frameworks took different steps from a zero start: an L1 term on a bias)."""
        x = jnp.asarray(x)
        return x if x.dtype == jnp.bool_ else jnp.sign(x) * x

    def relu(self, x: Any) -> jax.Array:
        return jax.nn.relu(jnp.asarray(x))

    def gelu(self, x: Any) -> jax.Array:
        return jax.nn.gelu(x, approximate=False)

    def topk(self, x: jax.Array, k: int) -> jax.Array:
        """The k largest along the last axis, descending; a NaN ranks below every
        number, as in NumPy's sort (lax.top_k ranks by the sign bit: a NaN with it
        clear above inf, one with it set, as log(-1) makes, below -inf)."""
        order = jnp.argsort(-x, axis=-1, stable=True)[..., :k]  # NaN sorts last
        return jnp.take_along_axis(x, order, axis=-1)

    def scatter(self, op: str, size: int, targets: np.ndarray, values: jax.Array,
                init: float) -> jax.Array:
        """A flat array of `size` cells, starting at `init`, with each value combined
        into its target cell by op (sum, max or min)."""
        out = jnp.full((size,), init, dtype=self.dtype).at[targets]
        values = values.astype(self.dtype)
        if op == "sum":
            return out.add(values)
        return out.max(values) if op == "max" else out.min(values)

    # ---- a fixpoint inside a compiled graph
    def while_loop(self, cond: Callable, body: Callable, state: Any) -> Any:
        return jax.lax.while_loop(cond, body, state)

    def take_traced(self, x: jax.Array, position: Any, axis: int) -> jax.Array:
        size = x.shape[axis]
        row = jax.lax.dynamic_index_in_dim(x, jnp.clip(position, 0, max(size - 1, 0)), axis,
                                           keepdims=False)
        return jnp.where((position >= 0) & (position < size), row, jnp.zeros_like(row))

    def step_loop(self, body: Callable, state: Any, count: int) -> Any:
        def one(current: Any, step: Any) -> tuple[Any, None]:
            new = body(current, step)
            # each member keeps its dtype from step to step (a scan's carry must)
            return jax.tree_util.tree_map(lambda a, b: jnp.asarray(b, a.dtype), current,
                                          new), None

        state = jax.tree_util.tree_map(jnp.asarray, state)
        return jax.lax.scan(one, state, jnp.arange(count))[0]

    def fixed_loop(self, cond: Callable, body: Callable, state: Any, count: int) -> Any:
        """`count` rounds, those where `cond` no longer holds keeping the state as it
        is: a loop of known length, which reverse-mode differentiation can go back
        through (a while-loop it cannot)."""
        def one(current: Any, _: Any) -> tuple[Any, None]:
            goes_on, new = cond(current), body(current)
            return jax.tree_util.tree_map(lambda a, b: jnp.where(goes_on, b, a),
                                          current, new), None

        return jax.lax.scan(one, state, None, length=count)[0]

    def integer(self, n: int) -> jax.Array:
        return jnp.asarray(n, dtype=jnp.int32)

    def any_positive(self, arrays: list) -> jax.Array:
        return functools.reduce(jnp.logical_or, [jnp.any(a > 0) for a in arrays])

    def max_abs_difference(self, a: jax.Array, b: jax.Array) -> jax.Array:
        if a.size == 0:
            return jnp.zeros((), dtype=self.dtype)
        return jnp.max(jnp.abs(a - b)).astype(self.dtype)

    def max_of(self, numbers: list) -> jax.Array:
        return functools.reduce(jnp.maximum, numbers)

    def finite(self, x: jax.Array) -> jax.Array:
        return jnp.isfinite(x)

    # ---- compiling a straight run of equations
    # with cache_dir, a compiled graph is kept as a jax.export artifact (jax_segments)
    exports_segments = True

    def compile_segment(self, fn: Callable, on_capture: Callable[[], None],
                        artifact: Path | None = None) -> Callable:
        """fn(values, bases) -> values as one XLA computation; jax traces it once
        per shape signature (on_capture counts the traces).  artifact: where the
        traced graph is kept, serialized, for later processes (run.cache)."""
        def traced(values: dict, bases: dict) -> dict:
            on_capture()
            return fn(values, bases)

        jitted = jax.jit(traced)
        if artifact is None or not jax_segments.serializable():
            return jitted
        platform = "cuda" if self.jax_device.platform == "gpu" else self.jax_device.platform
        return jax_segments.exported_segment(jitted, platform, artifact)

