"""Sparse 2-D tensors on the torch and jax backends: what they share.

`FrameworkSparse` is a sparse relation held as the framework's own sparse
tensor (torch.sparse COO in torch_sparse.py, jax.experimental.sparse BCOO in
jax_sparse.py), always canonical (sorted, no duplicates).  The operations are
written here once on a few primitives each framework states (build from
coordinates, the coordinates, a matrix product, a product of two sparse
tensors); `with_sparse(kind)` makes a backend class keep the planned tensors
sparse: the methods the engine calls look for a sparse operand first, and any
method not written for one reads it dense (slower, never wrong), as the NumPy
backend does (csr.py; value.py's `pair_plan` decides the products for both).

Eager runs only: a compiled run (jax.jit, torch.compile) keeps every tensor
dense, since a relation's non-zeros change every round (docs/scale.md).
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from ..backends.base import Backend
from .csr import SparseTensor
from .value import SparseValue, is_sparse, pair_plan


class FrameworkSparse(SparseValue):
    """A canonical sparse 2-D tensor of one framework.  Subclasses give the primitives."""

    __slots__ = ("tensor",)
    ndim = 2

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor

    # ---- the primitives each framework gives
    @classmethod
    def build(cls, rows: Any, cols: Any, values: Any, shape: tuple[int, int]
              ) -> "FrameworkSparse":
        """From coordinates (repeats summed), sorted row by row; zeros are dropped."""
        raise NotImplementedError

    @classmethod
    def from_dense(cls, x: Any) -> "FrameworkSparse":
        raise NotImplementedError

    def parts(self) -> tuple[Any, Any, Any]:
        """(rows, cols, values) as framework arrays."""
        raise NotImplementedError

    def dense(self) -> Any:
        raise NotImplementedError

    def matmul(self, other: Any, on_left: bool) -> Any:
        """self @ other (on_left) or other @ self; other sparse or a dense matrix."""
        raise NotImplementedError

    def multiply_sparse(self, other: "FrameworkSparse") -> "FrameworkSparse":
        raise NotImplementedError

    @staticmethod
    def concat(arrays: list) -> Any:
        raise NotImplementedError

    @staticmethod
    def coordinates(backend: Backend, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
                    ) -> tuple[Any, Any, Any]:
        """Host coordinates and values as the framework's arrays (the backend's dtype)."""
        raise NotImplementedError

    @staticmethod
    def indicator(mask: Any, like: Any) -> Any:
        """A Boolean mask as 0/1 values of `like`'s type."""
        raise NotImplementedError

    @staticmethod
    def gather(dense: Any, rows: Any, cols: Any) -> Any:
        """dense[rows, cols]."""
        return dense[rows, cols]

    @staticmethod
    def host(x: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def index_sum(size: int, index: Any, values: Any) -> Any:
        """A dense vector of `size`: each value added at its index."""
        raise NotImplementedError

    # ---- what an array answers
    @property
    def shape(self) -> tuple[int, int]:
        return tuple(int(n) for n in self.tensor.shape)  # type: ignore[return-value]

    @property
    def dtype(self) -> Any:
        return self.tensor.dtype

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nnz(self) -> int:
        return int(self.parts()[2].shape[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"

    def native(self) -> Any:
        return self.tensor

    def on_numpy(self) -> SparseTensor:
        rows, cols, values = (self.host(x) for x in self.parts())
        import scipy.sparse as sp

        values = np.asarray(values, dtype=np.float64 if values.dtype == np.float64
                            else np.float32)
        return SparseTensor(sp.csr_array((values, (rows, cols)), shape=self.shape))

    def copy(self) -> "FrameworkSparse":
        return self  # immutable: every operation here makes a new tensor

    @property
    def T(self) -> "FrameworkSparse":  # noqa: N802 (numpy's name)
        rows, cols, values = self.parts()
        return self.build(cols, rows, values, (self.shape[1], self.shape[0]))

    # ---- arithmetic that stays sparse
    def __add__(self, other: Any) -> Any:
        if isinstance(other, FrameworkSparse):
            return self._union(other, 1)
        if np.ndim(other) == 0 and other == 0:
            return self
        return self.dense() + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, FrameworkSparse):
            return self._union(other, -1)
        return self.dense() - other

    def __rsub__(self, other: Any) -> Any:
        return other - self.dense()

    def __neg__(self) -> "FrameworkSparse":
        return type(self)._with_values(self, -self.parts()[2])

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, FrameworkSparse):
            return self.multiply_sparse(other)
        if np.ndim(other) == 0:
            return self._with_values(self, self.parts()[2] * other)
        if tuple(other.shape) == self.shape:  # a dense operand: read at the non-zeros
            rows, cols, values = self.parts()  # the same pattern: no sort again
            return self._with_values(self, values * self.gather(other, rows, cols))
        if len(other.shape) == 2 and tuple(other.shape) in ((self.shape[0], 1),
                                                            (1, self.shape[1])) \
                and 1 not in self.shape:  # a broadcast mask (plan.demand): rows or columns
            rows, cols, values = self.parts()
            at = (rows, cols * 0) if other.shape[1] == 1 else (rows * 0, cols)
            return self._with_values(self, values * self.gather(other, *at))
        return self.dense() * other

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if np.ndim(other) == 0:
            return self._with_values(self, self.parts()[2] / other)
        return self.dense() / other

    def __rtruediv__(self, other: Any) -> Any:
        return other / self.dense()

    def __gt__(self, other: Any) -> Any:
        return self.dense() > other

    def __ge__(self, other: Any) -> Any:
        return self.dense() >= other

    def __lt__(self, other: Any) -> Any:
        return self.dense() < other

    def __le__(self, other: Any) -> Any:
        return self.dense() <= other

    def step(self) -> "FrameworkSparse":
        """1 where > 0 (the Boolean semiring: a product's counts clamped to 1)."""
        values = self.parts()[2]
        if bool(((values == 1) | (values == 0)).all()):  # 0: jax_sparse's padding
            return self
        return self._with_values(self, self.indicator(values > 0, values))

    def new_facts(self, known: Any) -> "FrameworkSparse | None":
        """1 where self > 0 and `known` is not; None when nothing is new."""
        found = self.step()
        if isinstance(known, FrameworkSparse):  # found - known: 1 - 0 is new, 1 - 1 is not
            new = found._union(known.step(), -1)
            values = new.parts()[2]
            new = new._with_values(new, self.indicator(values > 0, values))
        else:
            rows, cols, values = found.parts()
            new = found._with_values(found, self.indicator(
                self.gather(known, rows, cols) <= 0, values))
        return new if new.nnz else None

    def reduce(self, op: str, axes: tuple[int, ...]) -> Any:
        """Project axes away by sum / avg (a dense result); max and min read it dense."""
        if op not in ("sum", "avg"):
            return None
        rows, cols, values = self.parts()
        if len(axes) == 2:
            out = values.sum()
            return out / self.size if op == "avg" else out
        axis = axes[0]
        kept = cols if axis == 0 else rows
        out = self.index_sum(self.shape[1 - axis], kept, values)
        return out / self.shape[axis] if op == "avg" else out

    def max_abs(self) -> Any:
        values = self.parts()[2]
        return abs(values).max() if values.shape[0] else None

    def tuples(self) -> tuple[np.ndarray, np.ndarray]:
        rows, cols, _ = self.parts()
        return self.host(rows), self.host(cols)

    # ---- helpers
    def _union(self, other: "FrameworkSparse", sign: int) -> "FrameworkSparse":
        rows, cols, values = self.parts()
        o_rows, o_cols, o_values = other.parts()
        return self.build(self.concat([rows, o_rows]), self.concat([cols, o_cols]),
                          self.concat([values, o_values * sign]), self.shape)

    @classmethod
    def _with_values(cls, like: "FrameworkSparse", values: Any) -> "FrameworkSparse":
        rows, cols, _ = like.parts()
        return cls.build(rows, cols, values, like.shape)


# ------------------------------------------------------------------ products
def einsum(spec: str, arrays: tuple, backend: Backend, dense_einsum: Callable) -> Any:
    """The contraction `spec` with a sparse operand: sparse where `pair_plan` says
    it fits, else `dense_einsum` on dense copies."""
    inputs, out = spec.split("->")
    terms = inputs.split(",")
    if len(terms) > 2:
        terms, arrays = _masks_folded(terms, list(arrays), backend)
        spec = f"{','.join(terms)}->{out}"  # the operands it folded in are gone
    if len(terms) == 3:  # a pair and a dense mask over the result (`(x != y)`, `not R`)
        masked = _masked_pair(terms, arrays, out, backend)
        if masked is not None:
            return masked
    ndims = [2 if is_sparse(a) else len(backend.shape(a)) for a in arrays]
    if len(terms) == 2:
        plan = pair_plan(terms[0], terms[1], out, ndims[0], ndims[1])
        if plan is not None:
            return _run_pair(plan, terms, out, arrays, backend)
    if len(terms) == 1 and is_sparse(arrays[0]) and len(out) == 2 and set(out) == set(terms[0]):
        return arrays[0] if out == terms[0] else arrays[0].T
    return dense_einsum(spec, *[_dense(a) for a in arrays])


def _masked_pair(terms: list[str], arrays: tuple, out: str, backend: Backend) -> Any:
    """A join of two operands, one sparse, times a dense 2-D factor over exactly the
    result's axes (a comparison `(x != y)` or a `not R(x,y)`, which NumPy applies as
    filters on tuples, run/sparse/join.py): the pair's sparse product, then the
    factor read at its non-zeros; None when the product is not of that form."""
    if len(out) != 2:
        return None
    for k, (term, mask) in enumerate(zip(terms, arrays)):
        if is_sparse(mask) or len(backend.shape(mask)) != 2 or set(term) != set(out) \
                or len(set(term)) != 2:
            continue
        rest = [j for j in range(3) if j != k]
        pair = [arrays[j] for j in rest]
        if not any(is_sparse(a) for a in pair):
            return None
        ndims = [2 if is_sparse(a) else len(backend.shape(a)) for a in pair]
        plan = pair_plan(terms[rest[0]], terms[rest[1]], out, ndims[0], ndims[1])
        if plan is None:
            return None
        product = _run_pair(plan, [terms[j] for j in rest], out, tuple(pair), backend)
        if not is_sparse(product):
            return None
        return product * (mask if term == out else backend.transpose(mask, (1, 0)))
    return None


def _masks_folded(terms: list[str], arrays: list, backend: Backend) -> tuple[list[str], tuple]:
    """A dense 1-D operand whose index a sparse operand has, multiplied into it (a
    magic set guarding a rule, plan.demand; run.sparse does the same on NumPy)."""
    terms = list(terms)
    k = 0
    while k < len(terms) and len(terms) > 2:
        host = next((j for j, (t, a) in enumerate(zip(terms, arrays)) if j != k
                     and is_sparse(a) and len(t) == 2 and t[0] != t[1]
                     and len(terms[k]) == 1 and terms[k] in t), None)
        if host is None or is_sparse(arrays[k]) or len(backend.shape(arrays[k])) != 1:
            k += 1
            continue
        n = backend.shape(arrays[k])[0]
        shape = (n, 1) if terms[host][0] == terms[k] else (1, n)
        arrays[host] = arrays[host] * backend.reshape(arrays[k], shape)
        del terms[k], arrays[k]
        k = 0
    return terms, tuple(arrays)


def _run_pair(plan: tuple, terms: list[str], out: str, arrays: tuple, backend: Backend) -> Any:
    a, b = arrays
    ta, tb = terms
    if plan[0] == "multiply":
        _, transpose_b, transpose_out = plan
        b = _transposed(b, backend) if transpose_b else b
        product = a * b if is_sparse(a) else b * a
        return _transposed(product, backend) if transpose_out else product
    _, kept_a, kept_b, c, transpose_out = plan
    left = _matrix(a, ta, kept_a, c, True, backend)
    right = _matrix(b, tb, kept_b, c, False, backend)
    product = left.matmul(right, True) if is_sparse(left) else right.matmul(left, False)
    if len(out) == 2:
        return _transposed(product, backend) if transpose_out else product
    shape = tuple(backend.shape(a)[ta.index(x)] if x in ta else backend.shape(b)[tb.index(x)]
                  for x in out)
    return backend.reshape(_dense(product), shape)


def _dense(x: Any) -> Any:
    return x.dense() if isinstance(x, FrameworkSparse) else x


def _transposed(x: Any, backend: Backend) -> Any:
    return x.T if is_sparse(x) else backend.transpose(x, (1, 0))


def _matrix(x: Any, term: str, kept: list[str], contracted: str, rows_first: bool,
            backend: Backend) -> Any:
    """x as (kept, contracted) when `rows_first`, else (contracted, kept); a
    missing kept axis (a dense vector) is a size-1 one."""
    if not kept:
        return backend.reshape(x, (1, -1) if rows_first else (-1, 1))
    in_order = term == (kept[0] + contracted if rows_first else contracted + kept[0])
    return x if in_order else _transposed(x, backend)


# ------------------------------------------------------------------ the backend side
def _densify(method: Callable) -> Callable:
    @functools.wraps(method)
    def dense_args(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, *[[_dense(x) for x in a] if isinstance(a, (list, tuple))
                              else _dense(a) for a in args],
                      **{k: _dense(v) for k, v in kwargs.items()})
    return dense_args


# methods that read a sparse operand dense (what a relation rarely meets)
_DENSE_ONLY = ("concatenate", "take", "diagonal", "softmax", "lnorm", "where", "erf", "gelu",
               "topk", "scatter", "any_positive", "finite", "exp", "log", "tanh", "sqrt", "abs",
               "sin", "cos", "maximum", "minimum", "power", "relu")


def with_sparse(kind: type) -> Callable[[type], type]:
    """A class decorator: the backend keeps planned tensors sparse as `kind`."""
    def decorate(cls: type) -> type:
        cls.dense_einsum = _as_method(cls, "einsum")
        for name in _DENSE_ONLY:
            if hasattr(cls, name):
                setattr(cls, name, _densify(_as_method(cls, name)))
        for name, method in _sparse_methods(kind).items():
            original = _as_method(cls, name) if hasattr(cls, name) else None
            setattr(cls, name, _first_sparse(method, original) if original else method)
        cls.sparse = True
        return cls
    return decorate


def _as_method(cls: type, name: str) -> Callable:
    """cls's `name` as a function taking the backend first (a staticmethod too)."""
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod):
        function = raw.__func__
        return functools.wraps(function)(lambda self, *args, **kwargs: function(*args, **kwargs))
    return getattr(cls, name)


def _first_sparse(sparse_method: Callable, original: Callable) -> Callable:
    """`sparse_method` when an argument is sparse, else the backend's own."""
    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if any(is_sparse(a) for a in args) or any(is_sparse(a) for a in kwargs.values()):
            return sparse_method(self, *args, **kwargs)
        return original(self, *args, **kwargs)
    return method


def _sparse_methods(kind: type) -> dict[str, Callable]:
    def sparse_from(self: Any, x: Any) -> FrameworkSparse:
        """A dense matrix, a scipy.sparse one or a sparse tensor, kept sparse (as `kind`)."""
        if isinstance(x, kind):
            return x
        if isinstance(x, SparseValue) or hasattr(x, "tocoo"):
            coo = (x.on_numpy().matrix if isinstance(x, SparseValue) else x).tocoo()
            return kind.build(*kind.coordinates(self, coo.row, coo.col, coo.data),
                              tuple(coo.shape))
        return kind.from_dense(self.asarray(x))

    def sparse_zeros(self: Any, shape: tuple[int, int]) -> FrameworkSparse:
        empty = np.zeros(0, dtype=np.int64)
        return kind.build(*kind.coordinates(self, empty, empty, empty.astype(np.float64)),
                          tuple(shape))

    def einsum_(self: Any, spec: str, *arrays: Any) -> Any:
        return einsum(spec, arrays, self, self.dense_einsum)

    def shape(self: Any, x: Any) -> tuple[int, ...]:
        return x.shape

    def transpose(self: Any, x: Any, order: Any) -> Any:
        return x if tuple(order) == (0, 1) else x.T

    def reshape(self: Any, x: Any, shape: Any) -> Any:
        return x if tuple(shape) == x.shape else self.reshape(x.dense(), shape)

    def broadcast_to(self: Any, x: Any, shape: Any) -> Any:
        return x if tuple(shape) == x.shape else self.broadcast_to(x.dense(), shape)

    def reduce(self: Any, op: str, x: Any, axes: tuple[int, ...]) -> Any:
        out = x.reduce(op, tuple(axes))
        return self.reduce(op, x.dense(), axes) if out is None else out

    def new_facts(self: Any, found: Any, known: Any) -> Any:
        if is_sparse(found):
            return found.new_facts(known)
        return self.sparse_from(found).new_facts(known)

    def max_abs_difference(self: Any, a: Any, b: Any) -> Any:
        if is_sparse(a) and is_sparse(b):
            out = (a - b).max_abs()
            return self.zeros(()) if out is None else out
        return self.max_abs_difference(_dense(a), _dense(b))

    methods = {
        "sparse_from": sparse_from, "sparse_zeros": sparse_zeros, "shape": shape,
        "transpose": transpose, "reshape": reshape, "broadcast_to": broadcast_to,
        "reduce": reduce, "new_facts": new_facts,
        "max_abs_difference": max_abs_difference,
        "asarray": lambda self, x: x, "copy": lambda self, x: x.copy(),
        "to_numpy": lambda self, x: x.on_numpy().toarray(),
        "step": lambda self, x: x.step(),
        "scale_fresh": lambda self, x, factor: x * factor,
        "add_fresh": lambda self, x, y: x + y,
        "einsum": einsum_,
    }

    return methods
