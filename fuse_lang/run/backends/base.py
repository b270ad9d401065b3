"""What the evaluator and the engine ask of a backend, with the defaults that
the frameworks share, so that each backend states only what differs.

A backend is one small class per framework (numpy_backend, torch_backend,
jax_backend), made by `get_backend`.  Every array operation of a run goes
through it: the interpreter is the same code on every framework.  What a
backend may have or not (compiling, sparse tensors, a device mesh, ...) is
named here too, as a flag the engine reads (`compiles_segments`, `sparse`,
`sharded`, ...) and the methods that go with it, whose defaults here are those
of a backend without it: the engine never probes a backend for a method.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

if TYPE_CHECKING:
    from ...front import ir

# the elementwise functions every framework names alike (numpy's names)
ELEMENTWISE = ("exp", "log", "tanh", "sqrt", "abs", "sin", "cos", "maximum", "minimum", "power")


def elementwise_from(module: Any, wrap: Callable[[Callable], Any] = staticmethod,
                     renamed: Mapping[str, str] | None = None) -> Callable[[type], type]:
    """A class decorator: each function of ELEMENTWISE that the class does not
    define itself, taken from `module` (under its `renamed` name there) and made
    a method by `wrap`."""
    renamed = renamed or {}

    def decorate(cls: type) -> type:
        for name in ELEMENTWISE:
            if name not in vars(cls):
                setattr(cls, name, wrap(getattr(module, renamed.get(name, name))))
        return cls

    return decorate


class Backend:
    """The operations a run uses.  Methods without a body here are each
    framework's own; the rest are shared defaults."""

    name: str
    device: str  # "cpu", "cuda:0", ...
    precision: str  # "fp32", "fp64", "bf16", "fp16"
    dtype: Any  # the framework's float type for `precision`
    itemsize: int  # bytes per element, for the memory estimate
    compiles_by_default = False

    # ---- what a backend may have: each flag False here, with the methods that go with it
    # straight runs of equations as compiled graphs (compile_segment; integer,
    # any_positive and finite for a compiled fixpoint's state)
    compiles_segments = False
    exports_segments = False  # compile_segment keeps its graphs as files (`artifact`)
    compiles_loops = False  # a fixpoint inside one compiled graph (while_loop, fixed_loop)
    sparse = False  # keeps the 2-D tensors the plan says sparse as sparse values (run/sparse)
    sparse_relations = False  # and the relations of 3 axes or more (run/sparse/nd.py)
    sharded = False  # its tensors live on a device mesh, each put there by `place`
    # this process writes sinks (all but process 0 of a group only compute them)
    writes_files = True
    blocks_terms = False  # `blocked_term` (the block_size wrapper, run/interpret/blocked.py)

    def context(self) -> contextlib.AbstractContextManager:
        """Entered around a run (a default device, 64-bit mode)."""
        return contextlib.nullcontext()

    # ---- making arrays
    def asarray(self, x: Any) -> Any:
        raise NotImplementedError

    def zeros(self, shape: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def arange(self, n: int) -> Any:
        raise NotImplementedError

    int_arange = staticmethod(np.arange)  # positions are computed on the host, from shapes

    def to_numpy(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def concrete(self, x: Any) -> np.ndarray | None:
        """x's values where it has them now; None while a framework traces it
        (jax's tracers, torch's fake tensors in a capture): checks of values
        (cross_entropy's class ids) are made where they can be, skipped where not."""
        return self.to_numpy(x)

    # ---- shapes
    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(np.shape(x))

    def transpose(self, x: Any, order: Any) -> Any:
        raise NotImplementedError

    def reshape(self, x: Any, shape: Any) -> Any:
        raise NotImplementedError

    def broadcast_to(self, x: Any, shape: Any) -> Any:
        raise NotImplementedError

    def concatenate(self, parts: Any, axis: int) -> Any:
        raise NotImplementedError

    def copy(self, x: Any) -> Any:
        """New memory the caller may update in place."""
        raise NotImplementedError

    def take(self, x: Any, index: Any, axis: int) -> Any:
        raise NotImplementedError

    def windows(self, x: Any, axis: int, base: int, count: int, width: int) -> Any | None:
        """x's cells at base + i + j along `axis` (i < count, j < width), 0 outside
        the axis, as out[..., i, j, ...] (a convolution's `x+dx`); None where the
        backend has no such view (the caller gathers the cells instead)."""
        return None

    def basic_index(self, x: Any, where: tuple) -> Any:
        """x[where] for a tuple of whole slices and in-range positions (a row of a
        recurrence's input at one step, say)."""
        return x[where]

    def gather_rows(self, x: Any, ids: Any) -> Any:
        """out[s, i, ...] = x[s, ids[s, i], ...] for x of shape (S, V, ...) and ids of
        shape (S, I) holding whole numbers (as floats): `gather`'s lookup, which the
        frameworks differentiate with respect to x."""
        raise NotImplementedError

    def diagonal(self, x: Any, a: int, b: int) -> Any:
        """Merge axes a < b into one (the diagonal), kept at position a."""
        raise NotImplementedError

    # ---- arithmetic
    def reduce(self, op: str, x: Any, axes: tuple[int, ...]) -> Any:
        """Project `axes` away by op: sum, max, min or avg."""
        raise NotImplementedError

    def empty_projection(self, op: str, x: Any, axes: tuple[int, ...]) -> Any | None:
        """`max` or `min` over an axis with no positions: 0 in every cell, the value of
        a cell that nothing writes (docs/language.md, decision 22), as an empty sum is
        0; `avg`: the mean of nothing, NaN (PyTorch's and NumPy's, without NumPy's
        warning); None where every projected axis has positions (or op is sum)."""
        shape = tuple(self.shape(x))
        if op == "sum" or all(shape[a] for a in axes):
            return None
        gone = {a % len(shape) for a in axes}
        zeros = self.zeros(tuple(n for k, n in enumerate(shape) if k not in gone))
        return zeros * float("nan") if op == "avg" else zeros

    def einsum(self, spec: str, *arrays: Any) -> Any:
        """The contraction `spec` (from plan.contraction.einsum_spec); three or more
        operands follow plan.contraction.contraction_path.  Always new memory."""
        raise NotImplementedError

    def count_einsum(self, spec: str, *arrays: Any) -> Any:
        """The einsum of a Boolean join: it counts paths, in a type wide enough that
        a count never overflows (float32 at least; a half-precision backend widens,
        then saturates at its largest value: never infinity, whose product with 0
        would be NaN and lose a tuple).  Here: the einsum (fp32 and fp64 backends)."""
        return self.einsum(spec, *arrays)

    def scale_fresh(self, x: Any, factor: Any) -> Any:
        """x * factor; x was made for this result alone (a backend may reuse it)."""
        return x * factor

    def binary_fresh(self, fn: Any, x: Any, y: Any) -> Any:
        """fn(x, y) (an elementwise operator); x was made for this result alone (a
        backend may write the result into it)."""
        return fn(x, y)

    def add_fresh(self, x: Any, y: Any) -> Any:
        """x + y; x belongs to the caller alone (a backend may reuse it)."""
        return x + y

    def new_facts(self, found: Any, known: Any) -> Any | None:
        """0/1 where `found` holds a tuple that `known` does not; None if none is new."""
        raise NotImplementedError

    def softmax(self, x: Any, axis: int, fresh: bool = False) -> Any:
        raise NotImplementedError

    def log_softmax(self, x: Any, axis: int) -> Any:
        """log(softmax(x)) along `axis`, as x - max - log(sum(exp(x - max))): finite
        for any finite logits (log of a softmax that underflowed to 0 is -inf)."""
        raise NotImplementedError

    def lnorm(self, x: Any, axis: int, eps: float) -> Any:
        raise NotImplementedError

    def step(self, x: Any) -> Any:
        """1 where x > 0, else 0, in the backend's dtype."""
        raise NotImplementedError

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def erf(self, x: Any) -> Any:
        raise NotImplementedError

    def relu(self, x: Any) -> Any:
        """max(x, 0); the frameworks' own op where there is one (its backward is one
        masked multiply, where `maximum`'s splits ties and costs several kernels)."""
        return self.maximum(x, 0)

    def gelu(self, x: Any) -> Any:
        """The exact (erf) form."""
        raise NotImplementedError

    def gelu_tanh(self, x: Any) -> Any:
        """The tanh approximation of gelu (the seed DSL's `gelu`), one formula for all."""
        return 0.5 * x * (1 + self.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    def topk(self, x: Any, k: int) -> Any:
        """The k largest along the last axis, descending."""
        raise NotImplementedError

    def scatter(self, op: str, size: int, targets: np.ndarray, values: Any,
                init: float) -> Any:
        """A flat array of `size` cells, starting at `init`, with each value
        combined into its target cell by op (sum, max or min)."""
        raise NotImplementedError

    def max_abs_difference(self, a: Any, b: Any) -> Any:
        """The largest |a - b| (0 for empty arrays): how much a fixpoint round changed."""
        raise NotImplementedError

    def max_of(self, numbers: list) -> Any:
        raise NotImplementedError

    def complement(self, x: Any) -> Any:
        """`not x` for a sparse x: 1 - step(x) here; a backend that joins tuples keeps
        it as x's tuples, an anti-join in a join (run/sparse/join.py)."""
        return 1 - self.step(x)

    def tuple_filter(self, compare: Any, sides: list, shape: tuple[int, ...]) -> Any:
        """A comparison of indices (`compare`; `sides`: per side, the position of its
        index among `shape`'s axes, None for a number, and its values) kept as a
        filter on a join's tuples where the backend joins tuples; None here: the
        comparison is a dense Boolean factor."""
        return None

    # ---- the optional abilities' methods (see the flags above)
    def place(self, name: str, value: Any) -> Any:
        """`value` (tensor `name`) where its sharding puts it (`sharded`); else as it is."""
        return value

    def blocked_term(self, evaluator: Any, expr: ir.Product,
                     projected: dict[str, str]) -> Any:
        """A product projected by max/min, evaluated in blocks (`blocks_terms`): its
        LArray; None: the usual path."""
        return None

    def compile_segment(self, fn: Callable, on_capture: Callable[[], None],
                        artifact: Path | None = None) -> Callable:
        """`fn` as a compiled graph (`compiles_segments`); `on_capture` is called each
        time it is traced; `artifact`: where the graph is kept (`exports_segments`)."""
        raise NotImplementedError(f"the {self.name} backend runs eagerly only")

    def integer(self, n: int) -> Any:
        """n as a 32-bit integer tensor (a compiled fixpoint's round count)."""
        raise NotImplementedError

    def any_positive(self, arrays: list) -> Any:
        raise NotImplementedError

    def finite(self, x: Any) -> Any:
        raise NotImplementedError

    def while_loop(self, cond: Callable, body: Callable, state: Any) -> Any:
        """`body` applied to `state` while `cond` holds, inside a graph (`compiles_loops`)."""
        raise NotImplementedError(f"the {self.name} backend has no loop in a graph")

    def take_traced(self, x: Any, position: Any, axis: int) -> Any:
        """x at a traced position along axis (a step_loop's step), 0 outside it."""
        raise NotImplementedError(f"the {self.name} backend has no loop in a graph")

    def step_loop(self, body: Callable, state: Any, count: int) -> Any:
        """state = body(state, step) for step 0 .. count - 1, the step a traced value
        (`compiles_loops`)."""
        raise NotImplementedError(f"the {self.name} backend has no loop in a graph")

    def fixed_loop(self, cond: Callable, body: Callable, state: Any, count: int) -> Any:
        """`count` rounds of `body`, those where `cond` no longer holds keeping the
        state (`compiles_loops`)."""
        raise NotImplementedError(f"the {self.name} backend has no loop in a graph")

    # ELEMENTWISE (exp, log, ..., power) come from `elementwise_from` on each backend
    exp: Callable[..., Any]
    log: Callable[..., Any]
    tanh: Callable[..., Any]
    sqrt: Callable[..., Any]
    abs: Callable[..., Any]
    sin: Callable[..., Any]
    cos: Callable[..., Any]
    maximum: Callable[..., Any]
    minimum: Callable[..., Any]
    power: Callable[..., Any]
