"""The NumPy backend: the reference semantics run on these few operations."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...plan import contraction  # the one planner: what explain prints runs
from ..sparse import join as sparse_join, products
from ..sparse.csr import SparseTensor
from ..sparse.join import Complement, TupleFilter
from ..sparse.nd import SparseRelation
from . import BackendError
from .base import Backend, elementwise_from
from .pairwise import checked_matmul, pair_as_matmul

_DTYPES = {"fp32": np.float32, "fp64": np.float64}
_SMALL = 4096  # two operands this small (elements, together) skip the matmul plan


# the operators combine applies (run.interpret.labelled) that NumPy can do in place
_IN_PLACE = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
             operator.truediv: np.true_divide}


@elementwise_from(np)
class NumpyBackend(Backend):
    """Dense arrays are ndarrays; a tensor the plan keeps sparse is a
    `run.sparse.SparseTensor` (scipy.sparse CSR), handled first where it occurs; one of three
    axes or more a `run.sparse.nd.SparseRelation` (sorted cell keys)."""

    name = "numpy"
    sparse = True  # keeps 2-D tensors sparse when the plan says so (run/sparse/csr.py)
    sparse_relations = True  # and those of 3 axes or more (run/sparse/nd.py)

    def __init__(self, device: str = "cpu", precision: str = "fp32") -> None:
        if device not in ("cpu", "auto"):
            raise BackendError(f"the numpy backend runs on the cpu only, not {device!r}")
        if precision not in _DTYPES:
            raise BackendError(f"the numpy backend supports fp32 and fp64, not {precision!r}")
        self.device = "cpu"
        self.precision = precision
        self.dtype = _DTYPES[precision]
        self.itemsize = np.dtype(self.dtype).itemsize

    # ---- making arrays
    def asarray(self, x: Any) -> np.ndarray:
        if type(x) in _SPARSE:
            return x.astype(self.dtype)
        return np.asarray(x, dtype=self.dtype)

    def sparse_from(self, x: Any) -> SparseTensor | SparseRelation:
        """A scipy sparse array, a sparse tensor or a dense array, kept sparse: CSR
        for two axes, a SparseRelation (run/sparse/nd.py) for more."""
        if np.ndim(x) != 2:
            return SparseRelation.from_any(x, self.dtype)
        return SparseTensor.from_any(x, self.dtype)

    def sparse_zeros(self, shape: tuple[int, ...]) -> SparseTensor | SparseRelation:
        if len(shape) != 2:
            return SparseRelation.from_positions(shape, np.zeros((0, len(shape))), self.dtype)
        return SparseTensor.from_positions(shape, [], [], self.dtype)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape, dtype=self.dtype)

    def arange(self, n: int) -> np.ndarray:
        return np.arange(n, dtype=self.dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)  # a SparseTensor reads dense here (outputs keep it sparse)

    # ---- shapes
    shape = staticmethod(np.shape)
    transpose = staticmethod(np.transpose)
    reshape = staticmethod(np.reshape)
    concatenate = staticmethod(np.concatenate)

    def broadcast_to(self, x: Any, shape: Any) -> Any:
        if type(x) in _SPARSE and tuple(shape) == x.shape:
            return x
        return np.broadcast_to(x, shape)

    def copy(self, x: np.ndarray) -> np.ndarray:
        if type(x) in _SPARSE:
            return x.copy().astype(self.dtype)
        return np.array(x, dtype=self.dtype)

    def take(self, x: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
        if type(x) in _SPARSE and np.ndim(index) == 0:  # R(x, A, y): the tuples with A
            return x.select(axis, int(index), self.dtype)
        return np.take(x, index, axis=axis)

    def gather_rows(self, x: np.ndarray, ids: np.ndarray) -> np.ndarray:
        rows = np.arange(ids.shape[0])[:, None]
        return x[rows, np.asarray(ids).astype(np.intp)]

    def diagonal(self, x: np.ndarray, a: int, b: int) -> np.ndarray:
        """Merge axes a < b into one (the diagonal), kept at position a."""
        if type(x) in _SPARSE:  # kept sparse: no dense copy of a huge relation
            return x.diagonal(a, b, self.dtype)
        return np.moveaxis(np.diagonal(x, axis1=a, axis2=b), -1, a)

    # ---- arithmetic
    def reduce(self, op: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        empty = self.empty_projection(op, x, axes)
        if empty is not None:
            return empty
        if type(x) in _SPARSE:
            return x.reduce(op, axes, self.dtype)
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
        if any(type(a) in _JOINED for a in arrays):
            return sparse_join.einsum(spec, arrays, self.dtype)
        if len(arrays) <= 2:  # a pair is its own contraction path
            if len(arrays) == 1 or arrays[0].size + arrays[1].size <= _SMALL:
                # numpy's C einsum: no planning overhead
                out = np.einsum(spec, *arrays, dtype=self.dtype, casting="unsafe")
                if any(np.may_share_memory(out, a) for a in arrays):
                    out = out.copy()  # a result is always new memory (callers may update it)
                return out
            out = pair_as_matmul(spec, arrays[0], arrays[1], total=_total,
                                 permute=np.transpose, matmul=_matmul)
            return np.asarray(out, dtype=self.dtype)
        shapes = tuple(a.shape for a in arrays)
        if sum(a.size for a in arrays) <= _SMALL:  # the planned path, each step in C einsum
            return self._along_path(spec, shapes, arrays)
        expr = contraction.planned_contraction(spec, shapes)
        return np.asarray(expr(*arrays), dtype=self.dtype)

    def _along_path(self, spec: str, shapes: tuple, arrays: tuple) -> np.ndarray:
        """The contraction_path's steps, as opt_einsum takes them: each step's
        operands leave the list (highest position first), its result joins the end."""
        planned = contraction.contraction_path(spec, shapes)
        operands = list(arrays)
        for positions, step in zip(planned.path, planned.steps):
            picked = [operands.pop(k) for k in sorted(positions, reverse=True)]
            operands.append(np.einsum(step, *picked, dtype=self.dtype, casting="unsafe"))
        out = operands[0]
        if any(np.may_share_memory(out, a) for a in arrays):
            out = out.copy()  # a result is always new memory (callers may update it)
        return out

    def scale_fresh(self, x: np.ndarray, factor) -> np.ndarray:
        """x * factor, reusing x's memory (x was made for this result alone)."""
        if type(x) in _SPARSE:
            return x * factor
        if x.dtype == self.dtype and x.flags.writeable and np.ndim(factor) == 0:
            x *= factor
            return x
        return np.asarray(x * factor, dtype=self.dtype)

    def new_facts(self, found: np.ndarray, known: np.ndarray) -> np.ndarray | None:
        """0/1 where `found` holds a tuple that `known` does not; None if none is new."""
        if type(known) in _SPARSE:  # the known facts' representation is the plan's
            return self.sparse_from(found).new_facts(known, self.dtype)
        if type(found) in _SPARSE:
            return found.new_facts(known, self.dtype)
        new = np.greater(found, 0)
        new &= np.less_equal(known, 0)
        count = int(np.count_nonzero(new))
        if not count:
            return None
        if products.sparse_delta(count, new.shape):  # few new facts of a large relation
            return SparseTensor.from_positions(new.shape, *np.nonzero(new), self.dtype)
        return new.astype(self.dtype)

    def binary_fresh(self, fn: Any, x: np.ndarray, y: Any) -> Any:
        """fn(x, y) written into x when that is the same value: x is an array of its
        own of the run's dtype and of the result's shape, y of the same dtype (or a
        Python number), fn one of + - * /.  Saves an allocation (and its page
        faults) per operation of an elementwise chain."""
        ufunc = _IN_PLACE.get(fn)
        if (ufunc is None or type(x) is not np.ndarray or x.dtype != self.dtype
                or not x.flags.owndata or not x.flags.writeable):
            return fn(x, y)
        if type(y) is np.ndarray:
            if y.dtype != x.dtype or np.broadcast_shapes(x.shape, y.shape) != x.shape:
                return fn(x, y)
        elif type(y) not in (int, float):
            return fn(x, y)
        return ufunc(x, y, out=x)

    def add_fresh(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """x + y, reusing x's memory (x belongs to the caller alone)."""
        if type(x) in _SPARSE and type(y) in _SPARSE:
            # the semi-naive union: merged when read (run/sparse/csr.py); a relation
            # that fills in goes on dense (run/sparse/products.py)
            grown = x.grow(y)
            return grown.settled() if type(grown) is SparseTensor else grown
        if type(y) is SparseTensor and isinstance(x, np.ndarray) and x.shape == y.shape:
            entries = y.matrix.tocoo()
            entries.sum_duplicates()  # each cell once: the in-place add below adds once
            x[entries.row, entries.col] += entries.data
            return x
        if type(x) in _SPARSE or type(y) in _SPARSE:
            return x + y
        x += y
        return x

    def softmax(self, x: np.ndarray, axis: int, fresh: bool = False) -> np.ndarray:
        if not np.size(x):  # no positions: nothing to normalise (np.max has no identity)
            return np.zeros(np.shape(x), self.dtype)
        if fresh and x.dtype == self.dtype and x.flags.writeable:
            out = x
            out -= np.max(x, axis=axis, keepdims=True)
        else:
            out = x - np.max(x, axis=axis, keepdims=True)  # new: the rest is in place
        np.exp(out, out=out)
        out /= np.sum(out, axis=axis, keepdims=True)
        return out

    def log_softmax(self, x: np.ndarray, axis: int) -> np.ndarray:
        if not np.size(x):  # no positions: nothing to normalise (np.max has no identity)
            return np.zeros(np.shape(x), self.dtype)
        shifted = x - np.max(x, axis=axis, keepdims=True)  # new: the rest is in place
        shifted -= np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
        return shifted

    def lnorm(self, x: np.ndarray, axis: int, eps: float) -> np.ndarray:
        if not np.size(x):  # no positions: no mean to take (np.mean of none warns)
            return np.zeros(np.shape(x), self.dtype)
        out = x - np.mean(x, axis=axis, keepdims=True)
        var = np.mean(out * out, axis=axis, keepdims=True)
        var += eps
        np.sqrt(var, out=var)
        out /= var
        return out

    def complement(self, x: Any) -> Any:
        """`not x` for a sparse x: kept as x's tuples, an anti-join in a join."""
        return Complement(x.step(self.dtype))

    def tuple_filter(self, compare: Any, sides: list, shape: tuple[int, ...]) -> Any:
        """A comparison of indices in a join of sparse relations: a filter on the
        join's tuples (run/sparse/join.py)."""
        return TupleFilter(compare, sides, shape, self.dtype)

    def step(self, x: np.ndarray) -> np.ndarray:
        if type(x) in _SPARSE:
            return x.step(self.dtype)
        return (x > 0).astype(self.dtype)

    def where(self, cond, a, b):
        return np.where(cond, a, b).astype(self.dtype)

    def erf(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        return erf(x).astype(self.dtype)

    def gelu(self, x: np.ndarray) -> np.ndarray:
        """The exact (erf) form."""
        return x * 0.5 * (1 + self.erf(x / np.sqrt(2.0)))

    def topk(self, x: np.ndarray, k: int) -> np.ndarray:
        """The k largest along the last axis, descending; ties to the lower index."""
        if type(x) in _SPARSE:  # a row's k largest are dense (its zeros among them)
            x = np.asarray(x)
        order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        return np.take_along_axis(x, order, axis=-1)

    def max_abs_difference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The largest |a - b| (0 for empty arrays): how much a fixpoint round changed."""
        if type(a) is SparseRelation and type(b) is SparseRelation:
            difference = (a - b).data
            return np.max(np.abs(difference)) if difference.size else self.dtype(0)
        if type(a) is SparseTensor and type(b) is SparseTensor:
            difference = (a.matrix - b.matrix).data
            return np.max(np.abs(difference)) if difference.size else self.dtype(0)
        return np.max(np.abs(a - b)) if np.size(a) else self.dtype(0)

    def max_of(self, numbers: list) -> np.ndarray:
        return np.max(np.stack(numbers))  # a nan stays nan

    def scatter(self, op: str, size: int, targets: np.ndarray, values: np.ndarray,
                init: float) -> np.ndarray:
        """A flat array of `size` cells, starting at `init`, with each value combined
        into its target cell by op (sum, max or min); accumulated in float64."""
        out = np.full(size, init)
        {"sum": np.add, "max": np.maximum, "min": np.minimum}[op].at(out, targets, values)
        return out


_SPARSE = (SparseTensor, SparseRelation)
_JOINED = (SparseTensor, SparseRelation, Complement, TupleFilter)  # joined as tuples


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul, in blocks where a bounded run multiplies a large product."""
    return checked_matmul(a, b, np.matmul, lambda shape: np.empty(shape, np.result_type(a, b)))


def _total(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return x.sum(axis=axes)

