"""Matrix products of relations, sparse or dense by their cost (docs/scale.md,
"Dense products of sparse relations").

A join shaped as a matrix product (`R(x,y) S(y,z)`) runs as scipy.sparse's
product while the relations are sparse; once they fill in (Andersen's points-to
sets reach more than half of all pairs) scipy pays some nanoseconds per
multiply-add and per tuple, where a BLAS product of the dense blocks pays a
hundredth of one per cell.  `matmul` counts the multiply-adds the sparse
product would do (exactly: per contracted key, the column's entries times the
row's) and compares the two costs; the dense product runs over the rows,
columns and keys that hold an entry only (a semi-naive delta's few rows make a
small block), in float32 when both sides are 0/1 (counts up to 2^24 are exact)
and within a cap on its cells.  A dense result comes back dense when it is
dense enough to keep so, else as CSR.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

import numpy as np

from .threads import sparse_product, threads_for
from .value import sp

# the cost model, in nanoseconds on one core (measured on this project's 2-core
# machines with benchmarks/datalog_peers.py's Andersen and random products)
SPARSE_NS_PER_FLOP = 8.0  # scipy's csr_matmat, per multiply-add
SPARSE_NS_PER_ENTRY = 40.0  # per entry of a sparse result (its row sort, its copy)
DENSE_NS_PER_MAC = 0.03  # BLAS float32, per multiply-add
SPARSE_DENSE_NS_PER_MAC = 1.0  # scipy's sparse times dense, per multiply-add
DENSE_NS_PER_CELL = 12.0  # filling a dense block and reading its non-zeros, per cell
# the dense blocks of one product hold at most this many cells (268 MB in float32)
DENSE_CELLS_CAP = 1 << 26
# a dense result this full (or fuller) stays a dense array; a sparser one becomes CSR
KEEP_DENSE_ABOVE = 0.25
# the new facts of a semi-naive round of a dense 2-D relation this large (cells) are
# held sparse while they are few: the next round's products then read a few lines
SPARSE_DELTA_CELLS = 1 << 18
EXACT_FLOAT32 = 1 << 24  # a float32 counts exactly up to here
# what choosing between the direct and the dense-block product costs: a few passes
# over each side's lines (rows, columns) and over b's entries
MODEL_NS_PER_LINE = 20.0
MODEL_NS_PER_ENTRY = 20.0


def matmul(a: Any, b: Any) -> Any:
    """a @ b for 2-D scipy sparse arrays or NumPy arrays, by the cheapest of the
    direct product (scipy's, or BLAS when both are dense) and a BLAS product of
    the blocks that hold entries: a scipy sparse array, or a NumPy array (when
    the direct product gives one, or the result is dense enough to keep so)."""
    a = sp.csr_array(a) if sp.issparse(a) else np.asarray(a)
    b = sp.csr_array(b) if sp.issparse(b) else np.asarray(b)
    flops = direct = None  # (sparse x sparse: the product's multiply-adds, its cost)
    if sp.issparse(a) and sp.issparse(b):
        # the model below reads every line of both sides: where the product itself
        # costs less than that reading, dense blocks cannot save what it costs.
        # (Counted without BLAS: a dot wakes its threads, which a run of many small
        # products paid for more than for the products: CSPA 2x.)
        flops = float(np.diff(b.indptr)[a.indices].sum()) if a.nnz else 0.0
        direct = flops * SPARSE_NS_PER_FLOP + \
            min(flops, a.shape[0] * b.shape[1]) * SPARSE_NS_PER_ENTRY
        if direct <= MODEL_NS_PER_LINE * (a.shape[0] + a.shape[1] + b.shape[1]) + \
                MODEL_NS_PER_ENTRY * b.nnz:
            return _sparse_product(a, b, flops)
    # the keys a sparse side holds bound what a dense side's counts must read
    keys = np.arange(a.shape[1])
    if sp.issparse(b) and not sp.issparse(a):
        keys = np.flatnonzero(np.diff(b.indptr))
    elif sp.issparse(a) and not sp.issparse(b):
        keys = np.flatnonzero(np.bincount(a.indices, minlength=a.shape[1]))
    a_keys = a if keys.size == a.shape[1] or sp.issparse(a) else a[:, keys]
    b_keys = b if keys.size == b.shape[0] or sp.issparse(b) else b[keys]
    col_counts = _counts(a, axis=0)[keys] if sp.issparse(a) else _counts(a_keys, axis=0)
    row_counts = _counts(b, axis=1)[keys] if sp.issparse(b) else _counts(b_keys, axis=1)
    rows = np.flatnonzero(_counts(a_keys, axis=1))  # a's rows that meet a key
    cols = np.flatnonzero(_counts(b_keys, axis=0))  # b's columns that do
    keys = keys[(col_counts > 0) & (row_counts > 0)]
    cells = rows.size * keys.size + keys.size * cols.size + rows.size * cols.size
    blocks = rows.size * keys.size * cols.size * DENSE_NS_PER_MAC + cells * DENSE_NS_PER_CELL
    if direct is None:
        direct = _direct_cost(a, b)
    if cells > DENSE_CELLS_CAP or direct <= blocks:
        if flops is not None:
            return _sparse_product(a, b, flops)
        _tally("dense" if not sp.issparse(a) and not sp.issparse(b) else "sparse x dense")
        return a @ b
    _tally("dense blocks")
    return _dense_product(a, b, rows, keys, cols)


def _sparse_product(a: Any, b: Any, flops: float) -> Any:
    """scipy's product of two CSR matrices of `flops` multiply-adds, on the
    threads the run allows a product that large (run.sparse.threads)."""
    threads = threads_for(a.shape[0], flops)
    _tally("sparse" if threads == 1 else f"sparse on {threads} threads")
    return sparse_product(a, b, threads)


# the kinds of products run while a trace tallies them (`tallied`); a context
# variable, so a run in another thread (the language server's) is not counted
_TALLY: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "fuse_product_tally", default=None)


@contextlib.contextmanager
def tallied() -> Iterator[list[str]]:
    """The kinds of the products run inside (`sparse`, `sparse x dense`, `dense`,
    `dense blocks`), one entry each: what `--trace` says each rule ran."""
    kinds: list[str] = []
    token = _TALLY.set(kinds)
    try:
        yield kinds
    finally:
        _TALLY.reset(token)


def _tally(kind: str) -> None:
    kinds = _TALLY.get()
    if kinds is not None:
        kinds.append(kind)


def _counts(x: Any, axis: int) -> np.ndarray:
    """Entries per column (axis 0) or per row (axis 1)."""
    if not sp.issparse(x):
        return np.count_nonzero(x, axis=axis)
    if axis == 1:
        return np.diff(x.indptr)
    return np.bincount(x.indices, minlength=x.shape[1])


def _direct_cost(a: Any, b: Any) -> float:
    """What `a @ b` costs as it is, in nanoseconds, where one side at least is
    dense (matmul counts a product of two sparse sides itself)."""
    if not sp.issparse(a) and not sp.issparse(b):
        return a.shape[0] * a.shape[1] * b.shape[1] * DENSE_NS_PER_MAC
    # scipy's sparse-dense product: each entry of the sparse side meets a whole
    # line, into a dense result of every cell
    line = b.shape[1] if sp.issparse(a) else a.shape[0]
    entries = a.nnz if sp.issparse(a) else b.nnz
    return entries * line * SPARSE_DENSE_NS_PER_MAC + \
        a.shape[0] * b.shape[1] * DENSE_NS_PER_CELL


def _block(x: Any, rows: np.ndarray, cols: np.ndarray, dtype: Any) -> np.ndarray:
    """x's cells at these rows and columns, dense (a sparse x's entries outside
    them are dropped: they meet nothing on the other side)."""
    if not sp.issparse(x):
        return np.asarray(x)[np.ix_(rows, cols)].astype(dtype, copy=False)
    if rows.size < x.shape[0]:
        x = x[rows]  # scipy's row and column selections, in C
    if cols.size < x.shape[1]:
        x = x[:, cols]
    x = sp.csr_array((x.data.astype(dtype, copy=False), x.indices, x.indptr), shape=x.shape)
    return x.toarray()


def _is_zero_one(x: Any) -> bool:
    data = x.data if sp.issparse(x) else np.asarray(x)
    return bool(((data == 0) | (data == 1)).all())


def _dense_product(a: Any, b: Any, rows: np.ndarray, keys: np.ndarray,
                   cols: np.ndarray) -> Any:
    """The product over the blocks of a's rows and b's columns that hold entries,
    scattered back to the whole shape."""
    result_type = np.result_type(a.dtype, b.dtype)
    exact32 = keys.size < EXACT_FLOAT32 and _is_zero_one(a) and _is_zero_one(b)
    work = np.float32 if exact32 else result_type
    block = _block(a, rows, keys, work) @ _block(b, keys, cols, work)
    shape = (a.shape[0], b.shape[1])
    if worth_dense(np.count_nonzero(block), shape):
        out = np.zeros(shape, dtype=result_type)
        out[np.ix_(rows, cols)] = block
        return out
    at_row, at_col = np.nonzero(block)
    return sp.csr_array((block[at_row, at_col].astype(result_type), (rows[at_row], cols[at_col])),
                        shape=shape)


def worth_dense(entries: int, shape: tuple[int, ...]) -> bool:
    """Whether a 2-D relation of this many entries is better held dense: it fills
    at least KEEP_DENSE_ABOVE of its cells, and they are within the cap."""
    cells = shape[0] * shape[1]
    return cells <= DENSE_CELLS_CAP and entries >= KEEP_DENSE_ABOVE * cells


def sparse_delta(entries: int, shape: tuple[int, ...]) -> bool:
    """Whether a semi-naive round's new facts of a dense relation are better held
    sparse: a 2-D relation of at least SPARSE_DELTA_CELLS cells, of which they
    fill less than KEEP_DENSE_ABOVE."""
    return len(shape) == 2 and shape[0] * shape[1] >= SPARSE_DELTA_CELLS and \
        entries < KEEP_DENSE_ABOVE * shape[0] * shape[1]
