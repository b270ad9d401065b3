"""Sparse 2-D tensors on the NumPy backend: scipy.sparse CSR behind a small
array-like, so the reference interpreter runs on them unchanged.

`SparseTensor` holds a canonical `scipy.sparse.csr_array` (sorted indices, no
duplicates, the backend's float type; a Boolean relation holds 1.0 where
true).  What stays sparse: joins of two operands shaped as a matrix product
(`R(x,y) S(y,z)`, `R(x,y) E[x,d]`: scipy's matmul, then `step` for a
Boolean result), elementwise products and sums of sparse operands, transposes,
`step`, the semi-naive `new_facts` and unions.  Anything else reads the
tensor as a dense array (`__array__`, `__array_ufunc__`): slower, never
wrong.  The planner (`plan.representation`) decides which tensors are sparse.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import products
from .value import SparseValue, is_sparse, pair_plan, sp


class SparseTensor(SparseValue):
    """A 2-D array stored as CSR.  Behaves as an array for the interpreter.

    The semi-naive rounds grow the known facts by a small delta each round
    (`grow`): the deltas wait in `parts`, CSR levels whose sizes halve (a binary
    counter: two levels of about one size are summed into one, so each fact is
    summed O(log n) times), and join the matrix when someone reads it.
    `new_facts` looks its entries up in the levels row by row rather than
    subtracting every fact known, so a round costs about its delta; the
    lookups read the CSR arrays themselves and hold no copy of the facts."""

    __slots__ = ("_matrix", "_parts", "_signed", "_transpose")
    __array_priority__ = 1000  # `ndarray + SparseTensor` asks this class first
    ndim = 2

    def __init__(self, matrix: Any) -> None:
        self._matrix = matrix
        self._parts: list[Any] = []  # canonical 0/1 CSR deltas, not merged yet
        self._signed: bool | None = None  # whether the matrix holds a value < 0, once asked
        self._transpose: tuple[Any, Any] | None = None  # (the matrix, its transpose as CSR)

    @property
    def matrix(self) -> Any:
        """The CSR matrix, with the grown deltas merged in (once, on first read)."""
        while self._parts:
            self._sum_last_level()
        return self._matrix

    @matrix.setter
    def matrix(self, value: Any) -> None:
        self._matrix, self._parts, self._signed, self._transpose = value, [], None, None

    def transposed(self) -> Any:
        """The matrix transposed, as CSR, made once per matrix: a relation a rule
        joins on its first column (`Assign(y, w)` joined on `w`) is read transposed
        in every round, and a fact set that does not change is transposed once."""
        matrix = self.matrix
        if self._transpose is None or self._transpose[0] is not matrix:
            self._transpose = (matrix, sp.csr_array(matrix.T))
        return self._transpose[1]

    def grow(self, delta: "SparseTensor") -> "SparseTensor":
        """self + delta in place, for Boolean facts (both >= 0): the delta's CSR
        waits as the newest level until the matrix is read."""
        part = delta.matrix
        if part.dtype != self._matrix.dtype:
            part = part.astype(self._matrix.dtype)
        if (part.data < 0).any():  # a sign change: the levels' lookups would lie
            self.matrix = self.matrix + part
            return self
        self._parts.append(part)
        while self._parts and self._before_newest().nnz <= 2 * self._parts[-1].nnz:
            self._sum_last_level()  # sizes halve from the matrix to the newest level
        return self

    def settled(self) -> "SparseTensor | np.ndarray":
        """Itself, or a dense array once it has filled in (products.worth_dense): the
        semi-naive rounds' products then read it as it is, not as a dense block
        filled from millions of entries each round."""
        held = self._matrix.nnz + sum(part.nnz for part in self._parts)  # at most this many
        if products.worth_dense(held, self.shape) and products.worth_dense(self.nnz, self.shape):
            return np.asarray(self)
        return self

    def _before_newest(self) -> Any:
        return self._parts[-2] if len(self._parts) > 1 else self._matrix

    def _has_negatives(self) -> bool:
        if self._signed is None:
            self._signed = bool((self._matrix.data < 0).any())
        return self._signed

    def _sum_last_level(self) -> None:
        """The newest level summed into the one before (parts are >= 0: the
        matrix's `_signed` stays true)."""
        last = self._parts.pop()
        if self._parts:
            self._parts[-1] = self._parts[-1] + last
        else:
            self._matrix = self._matrix + last

    @classmethod
    def from_positions(cls, shape: tuple[int, int], rows: Any, cols: Any,
                       dtype: Any) -> "SparseTensor":
        """A 0/1 tensor, 1 at each (row, col) (repeats count once)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        data = np.ones(rows.shape[0], dtype=dtype)
        matrix = sp.csr_array((data, (rows, cols)), shape=shape)
        matrix.sum_duplicates()
        matrix.data[:] = 1
        return cls(matrix)

    @classmethod
    def from_any(cls, value: Any, dtype: Any) -> "SparseTensor":
        """A scipy sparse matrix or array, a SparseTensor or a dense 2-D array."""
        if isinstance(value, SparseTensor):
            return value.astype(dtype)
        matrix = sp.csr_array(value, dtype=dtype)
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        return cls(matrix)

    # ---- what an array answers
    @property
    def shape(self) -> tuple[int, int]:
        return self._matrix.shape

    @property
    def dtype(self) -> Any:
        return self._matrix.dtype

    @property
    def size(self) -> int:
        return int(np.prod(self.matrix.shape))

    @property
    def nnz(self) -> int:
        return int(self.matrix.nnz)

    def __repr__(self) -> str:
        return f"SparseTensor(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        dense = self.matrix.toarray()
        return dense if dtype is None else dense.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Any NumPy function not written for sparse operands reads them dense; a
        product with a broadcast vector (a dense (n,1) or (1,m) array) stays sparse."""
        if ufunc is np.multiply and method == "__call__" and len(inputs) == 2 and not kwargs:
            other = inputs[0] if inputs[1] is self else inputs[1]
            if _broadcast_vector(other, self.shape):
                return self * other
        dense = [np.asarray(x) if isinstance(x, SparseTensor) else x for x in inputs]
        return getattr(ufunc, method)(*dense, **kwargs)

    def toarray(self) -> np.ndarray:
        return self.matrix.toarray()

    def on_numpy(self) -> "SparseTensor":
        return self

    def native(self) -> Any:
        return self.matrix.copy()

    def astype(self, dtype: Any) -> "SparseTensor":
        if self.matrix.dtype == dtype:
            return self
        return SparseTensor(self.matrix.astype(dtype))

    def copy(self) -> "SparseTensor":
        return SparseTensor(self.matrix.copy())

    def transpose(self, *order: Any) -> "SparseTensor":
        if len(order) == 1 and not isinstance(order[0], int):
            order = tuple(order[0]) if order[0] is not None else (1, 0)
        if tuple(order) in ((0, 1),):
            return self
        return SparseTensor(self.matrix.T.tocsr())

    @property
    def T(self) -> "SparseTensor":  # noqa: N802 (numpy's name)
        return self.transpose(1, 0)

    # ---- arithmetic that stays sparse
    def __add__(self, other: Any) -> Any:
        if isinstance(other, SparseTensor):
            return SparseTensor(self.matrix + other.matrix)
        if np.ndim(other) == 0 and other == 0:
            return self
        return np.asarray(self) + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, SparseTensor):
            return SparseTensor(self.matrix - other.matrix)
        return np.asarray(self) - other

    def __rsub__(self, other: Any) -> Any:
        return other - np.asarray(self)

    def __neg__(self) -> "SparseTensor":
        return SparseTensor(-self.matrix)

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, SparseTensor):
            return SparseTensor(sp.csr_array(self.matrix.multiply(other.matrix)))
        if np.ndim(other) == 0:
            return SparseTensor(self.matrix * other)
        if np.shape(other) == self.shape:
            return SparseTensor(sp.csr_array(self.matrix.multiply(np.asarray(other))))
        if _broadcast_vector(other, self.shape):  # rows or columns scaled (a mask)
            vector = sp.diags_array(np.asarray(other).reshape(-1))
            scaled = sp.csr_array(vector @ self.matrix if np.shape(other)[1] == 1
                                  else self.matrix @ vector)
            scaled.eliminate_zeros()
            return SparseTensor(scaled)
        return np.asarray(self) * other

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if np.ndim(other) == 0:
            return SparseTensor(self.matrix / other)
        return np.asarray(self) / other

    def __rtruediv__(self, other: Any) -> Any:
        return other / np.asarray(self)

    # comparisons read the tensor dense (the engine's own use is `step`)
    def __gt__(self, other: Any) -> Any:
        return np.asarray(self) > other

    def __ge__(self, other: Any) -> Any:
        return np.asarray(self) >= other

    def __lt__(self, other: Any) -> Any:
        return np.asarray(self) < other

    def __le__(self, other: Any) -> Any:
        return np.asarray(self) <= other

    def step(self, dtype: Any) -> "SparseTensor":
        """1 where > 0 (the implicit zeros stay 0)."""
        return SparseTensor(_ones(self.matrix, dtype))

    def new_facts(self, known: "SparseTensor | np.ndarray", dtype: Any
                  ) -> "SparseTensor | None":
        """1 where self > 0 and `known` is not; None when nothing is new.  While
        the known facts are few next to self's (or may be negative), one
        subtraction; else self's entries are looked up in known's levels
        (`_in_levels`), a cost that follows self's size, not known's."""
        found = _ones(self.matrix, dtype)
        if isinstance(known, SparseTensor) and (
                known._matrix.nnz + sum(p.nnz for p in known._parts)
                <= max(8 * found.nnz, SUBTRACT_BELOW) or known._has_negatives()):
            # known is small: one merge of both, row by row.  `found > known` keeps
            # found's entries where known is not (> 0): unlike `found - known`, none
            # of known's entries is copied into a result that is then filtered
            new = found > _ones(known.matrix, dtype)
            if not new.nnz:
                return None
            new = _pattern(new, dtype)
            new.sum_duplicates()  # canonical, as the levels' lookups read them
            return SparseTensor(new)
        if isinstance(known, SparseTensor):
            rows = np.repeat(np.arange(found.shape[0], dtype=found.indptr.dtype),
                             np.diff(found.indptr))
            fresh = ~_in_levels([known._matrix, *known._parts], rows, found.indices)
            if not fresh.any():
                return None
            # found's entries, row by row, have no repeats: the kept ones neither
            indptr = np.zeros(found.shape[0] + 1, dtype=found.indptr.dtype)
            np.cumsum(np.bincount(rows[fresh], minlength=found.shape[0]), out=indptr[1:])
            new = sp.csr_array((np.ones(int(fresh.sum()), dtype=dtype), found.indices[fresh],
                                indptr), shape=found.shape)
            new.sum_duplicates()  # sorts the columns where found's were not (a matmul's)
            return SparseTensor(new)
        # dense known facts: self's entries looked up in them
        rows = np.repeat(np.arange(found.shape[0], dtype=found.indptr.dtype),
                         np.diff(found.indptr))
        fresh = np.asarray(known)[rows, found.indices] <= 0
        if not fresh.any():
            return None
        new = sp.csr_array((np.ones(int(fresh.sum()), dtype=dtype),
                            (rows[fresh], found.indices[fresh])), shape=found.shape)
        new.sum_duplicates()
        return SparseTensor(new)

    def select(self, axis: int, position: int, dtype: Any) -> np.ndarray:
        """One row (axis 0) or column (axis 1), dense (`R(A, y)`)."""
        line = self.matrix[[position], :] if axis == 0 else self.matrix[:, [position]]
        return np.asarray(line.toarray().reshape(-1), dtype=dtype)

    def diagonal(self, a: int, b: int, dtype: Any) -> np.ndarray:
        """The diagonal (`R(x, x)`), dense: as long as the shorter axis, never the
        dense matrix numpy's diagonal would make first."""
        return np.asarray(self.matrix.diagonal(), dtype=dtype)

    def reduce(self, op: str, axes: tuple[int, ...], dtype: Any) -> Any:
        """Project axes away by sum / max / min / avg (a dense result)."""
        axis = None if len(axes) == 2 else axes[0]
        if op in ("sum", "avg"):
            out = self.matrix.sum(axis=axis)
            if op == "avg":
                out = out / (self.size if axis is None else self.shape[axis])
        elif op in ("max", "min"):
            out = getattr(self.matrix, op)(axis=axis)
            out = out.toarray() if hasattr(out, "toarray") else out
        else:
            raise ValueError(op)
        return np.asarray(out, dtype=dtype).reshape(-1) if axis is not None \
            else np.asarray(out, dtype=dtype)

    def tuples(self) -> tuple[np.ndarray, np.ndarray]:
        """The (rows, cols) of the non-zeros, row by row."""
        coo = self.matrix.tocoo()
        order = np.lexsort((coo.col, coo.row))
        return coo.row[order], coo.col[order]


# below this many known facts a round subtracts them whole (one C pass, cheaper than
# the lookups' fixed costs; measured on benchmarks/closure_sparse.py and chain_closure.py)
SUBTRACT_BELOW = 1 << 17


def _in_levels(levels: list[Any], rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """For each cell (rows[i], cols[i]): whether one of the canonical CSR
    `levels` holds a value > 0 there (the levels are >= 0, so their sum is > 0
    exactly there)."""
    held = np.zeros(rows.shape, dtype=bool)
    for level in levels:
        ask = np.flatnonzero(~held)
        if ask.size == 0 or level.nnz == 0:
            continue
        held[ask] = _in_csr(level, rows[ask], cols[ask])
    return held


def _in_csr(matrix: Any, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Whether a canonical CSR matrix is > 0 at each (row, col): a binary search
    of every cell's row at once (its columns are sorted), in as many vectorized
    steps as the longest row asked has bits, without copying the matrix."""
    if not matrix.has_canonical_format:  # sorted, unique columns (a C check, cached)
        matrix.sum_duplicates()
    lo = matrix.indptr[rows].astype(np.int64)
    end = matrix.indptr[rows + 1].astype(np.int64)
    hi = end.copy()
    last = matrix.nnz - 1
    for _ in range(int((end - lo).max(initial=0)).bit_length()):
        mid = (lo + hi) >> 1
        right = (lo < hi) & (matrix.indices[np.minimum(mid, last)] < cols)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    at = np.minimum(lo, last)
    return (lo < end) & (matrix.indices[at] == cols) & (matrix.data[at] > 0)


def _ones(matrix: Any, dtype: Any) -> Any:
    """`matrix > 0` as a 0/1 matrix of `dtype` (itself when it is one already)."""
    if matrix.dtype == dtype and bool((matrix.data == 1).all()):
        return matrix
    if bool((matrix.data > 0).all()):  # (a product's counts): its pattern, as it is
        return _pattern(matrix, dtype)
    ones = matrix.astype(dtype)  # a copy: the pattern, then 0/1 values on it
    ones.data = (ones.data > 0).astype(dtype)
    ones.eliminate_zeros()
    return ones


def _pattern(matrix: Any, dtype: Any) -> Any:
    """1 at each stored entry of a CSR matrix, as a copy.  (`astype` would first
    sort a matrix whose columns are unsorted, as a product's are, to sum repeated
    entries: a SparseTensor's matrix has none, every way one is made sums them.)"""
    return sp.csr_array((np.ones(matrix.nnz, dtype=dtype), matrix.indices.copy(),
                         matrix.indptr.copy()), shape=matrix.shape)


def einsum(spec: str, arrays: Sequence[Any], dtype: Any) -> Any:
    """The contraction `spec` with at least one sparse operand, when it is a matrix
    product, an elementwise product or a transpose of 2-D operands (see the
    module's docstring); None for any other (join.py joins those)."""
    inputs, out = spec.split("->")
    terms = inputs.split(",")
    # `not R(...)` (an anti-join) or a comparison (a filter): join.py's tuples
    negated = any(getattr(a, "anti_join", False) or getattr(a, "tuple_filter", False)
                  for a in arrays)
    if len(terms) == 2 and np.ndim(arrays[0]) <= 2 and np.ndim(arrays[1]) <= 2 and not negated:
        result = _pair(terms[0], terms[1], out, arrays[0], arrays[1])
        if result is not None:
            return _as_result(result, dtype)
    if len(terms) > 2 and not negated:  # a magic set's mask folded into its relation
        terms, arrays = _masks_folded(terms, list(arrays))
        if len(terms) > 2:
            terms, arrays = _chained(terms, arrays, out, dtype)
        if len(terms) == 2 and np.ndim(arrays[0]) <= 2 and np.ndim(arrays[1]) <= 2:
            result = _pair(terms[0], terms[1], out, arrays[0], arrays[1])
            if result is not None:
                return _as_result(result, dtype)
    if len(terms) == 1 and is_sparse(arrays[0]) and len(out) == len(terms[0]) \
            and set(out) == set(terms[0]):
        if out == terms[0]:
            return arrays[0].copy()
        return arrays[0].transpose([terms[0].index(x) for x in out])
    return None  # any other join: of tuples, of any arity (join.py)


def _chained(terms: list[str], arrays: list[Any], out: str, dtype: Any
             ) -> tuple[list[str], list[Any]]:
    """Matrix operands joined two at a time while a pair shares one index that
    nothing else reads (`Load(y,x) P(x,z) P(z,w)`: a chain of matrix products,
    each sparse or dense by its cost), the pair with the fewest estimated
    entries first (the join order from sizes); what is left, for `_pair` or
    join.py's tuples."""
    terms, arrays = list(terms), list(arrays)
    while len(terms) > 2:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                step = _chain_step(terms, arrays, out, i, j)
                if step is not None and (best is None or step[0] < best[0]):
                    best = step
        if best is None:
            break
        _, i, j, joined = best
        result = _pair(terms[i], terms[j], joined, arrays[i], arrays[j])
        if result is None:
            break
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [joined]
        arrays = [a for k, a in enumerate(arrays) if k not in (i, j)] + [_as_result(result,
                                                                                   dtype)]
    return terms, arrays


def _chain_step(terms: list[str], arrays: list[Any], out: str, i: int, j: int
                ) -> tuple[float, int, int, str] | None:
    """(estimated entries, i, j, the joined term) when terms i and j are two-axis
    operands sharing one index that no other term and not the result has."""
    a, b = terms[i], terms[j]
    if len(a) != 2 or len(b) != 2 or a[0] == a[1] or b[0] == b[1] \
            or np.ndim(arrays[i]) != 2 or np.ndim(arrays[j]) != 2:
        return None
    shared = set(a) & set(b)
    others = {x for k, t in enumerate(terms) if k not in (i, j) for x in t} | set(out)
    if len(shared) != 1 or shared & others:
        return None
    (c,) = shared
    joined = "".join(x for x in a + b if x != c)
    extent = np.shape(arrays[i])[a.index(c)]
    return _count(arrays[i]) * _count(arrays[j]) / max(extent, 1), i, j, joined


def _count(x: Any) -> int:
    """A sparse or dense operand's entries (its non-zeros)."""
    return x.nnz if is_sparse(x) else int(np.count_nonzero(x))


def _broadcast_vector(x: Any, shape: tuple[int, int]) -> bool:
    """A dense (n,1) or (1,m) array that broadcasts along one axis of `shape`."""
    if is_sparse(x) or np.ndim(x) != 2:
        return False
    rows, cols = np.shape(x)
    return (rows, cols) in ((shape[0], 1), (1, shape[1])) and shape[0] != 1 and shape[1] != 1


def _masks_folded(terms: list[str], arrays: list[Any]) -> tuple[list[str], list[Any]]:
    """Each dense 1-D operand whose index a sparse 2-D operand has, multiplied into
    that operand (its rows or columns scaled), so the product stays sparse: a magic
    set guarding a rule (`M(x) A(x,y) B(y,z)`, plan.demand) is such a mask."""
    terms = list(terms)
    k = 0
    while k < len(terms) and len(terms) > 1:
        vector = arrays[k]
        host = next((j for j, (t, a) in enumerate(zip(terms, arrays))
                     if j != k and type(a) is SparseTensor and len(t) == 2 and t[0] != t[1]
                     and len(terms[k]) == 1 and terms[k] in t), None)
        if host is None or is_sparse(vector) or np.ndim(vector) != 1:
            k += 1
            continue
        scale = sp.diags_array(np.asarray(vector).reshape(-1))
        matrix = arrays[host].matrix
        scaled = scale @ matrix if terms[host][0] == terms[k] else matrix @ scale
        scaled = sp.csr_array(scaled)
        scaled.eliminate_zeros()
        arrays[host] = SparseTensor(scaled)
        del terms[k], arrays[k]
        k = 0
    return terms, arrays


def _as_result(x: Any, dtype: Any) -> Any:
    if isinstance(x, SparseTensor):
        return x.astype(dtype)
    if sp.issparse(x):
        return SparseTensor(sp.csr_array(x, dtype=dtype))
    return np.asarray(x, dtype=dtype)


def _pair(ta: str, tb: str, out: str, a: Any, b: Any) -> Any:
    """Two operands of at most two axes: an elementwise product or a matrix product."""
    plan = pair_plan(ta, tb, out, np.ndim(a), np.ndim(b))
    if plan is None:
        return None
    if plan[0] == "multiply":
        _, transpose_b, transpose_out = plan
        product = _multiply(a, _transposed(b) if transpose_b else b)
        return _transposed(product) if transpose_out else product
    _, kept_a, kept_b, c, transpose_out = plan
    left = _matrix(a, ta, kept_a, c, rows_first=True)
    right = _matrix(b, tb, kept_b, c, rows_first=False)
    product = products.matmul(left, right)  # (kept_a or 1) x (kept_b or 1)
    if len(out) == 2:
        return product.T if transpose_out else product
    if sp.issparse(product):
        product = product.toarray()
    return np.asarray(product).reshape(tuple(np.shape(a)[ta.index(x)] if x in ta
                                             else np.shape(b)[tb.index(x)] for x in out))


def _multiply(a: Any, b: Any) -> Any:
    if is_sparse(a):
        return a * b
    if is_sparse(b):
        return b * a
    return a * b


def _transposed(x: Any) -> Any:
    return x.T if is_sparse(x) else np.transpose(x)


def _matrix(x: Any, term: str, kept: list[str], contracted: str, rows_first: bool) -> Any:
    """x as a 2-D matrix: (kept, contracted) when `rows_first`, else (contracted, kept);
    a missing kept axis is a size-1 one."""
    matrix = x.matrix if is_sparse(x) else np.asarray(x)
    if not kept:
        vector = np.asarray(matrix).reshape(-1) if not sp.issparse(matrix) else matrix
        return vector.reshape(1, -1) if rows_first else vector.reshape(-1, 1)
    in_order = term == (kept[0] + contracted if rows_first else contracted + kept[0])
    if in_order:
        return matrix
    return x.transposed() if type(x) is SparseTensor else matrix.T


def from_rows(shape: tuple[int, int], rows: Any, dtype: Any) -> SparseTensor:
    """A 0/1 tensor from positions (an n x 2 array or a list of pairs); positions
    outside the shape are dropped."""
    positions = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    inside = (positions >= 0).all(axis=1) & (positions[:, 0] < shape[0]) & \
        (positions[:, 1] < shape[1])
    positions = positions[inside]
    return SparseTensor.from_positions(shape, positions[:, 0], positions[:, 1], dtype)
