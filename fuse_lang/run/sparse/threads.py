"""Sparse products over several threads (`threads` of ExecutionConfig,
`fuse run --threads`; docs/execution.md "Threads").

scipy's sparse product runs in C without the GIL, so a large product `a @ b`
is split into blocks of a's rows of about equal work (per row, the entries of
b's rows its entries meet: the multiply-adds scipy will do), each block's
product runs in a thread of its own, and the blocks' rows are stacked back in
order: the result is the one product, entry for entry.  A product under
PARALLEL_FLOPS multiply-adds runs whole (a thread's start-up and the stacking
would cost more than they save).

The run sets how many threads it may use (`using_threads`) for what it runs;
None is what the environment says: OMP_NUM_THREADS where set (as BLAS reads
it), else the cores this process may run on.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from .value import sp

if TYPE_CHECKING:  # (imported when a product is first split: most runs never do)
    from concurrent.futures import ThreadPoolExecutor

# from this many multiply-adds (a few ms of scipy's product) a product is split
PARALLEL_FLOPS = 1 << 19

_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("fuse_threads", default=1)
# the process' pools, by process and size (a forked child has none of its parent's
# threads: it makes its own)
_POOL: dict[tuple[int, int], ThreadPoolExecutor] = {}


def default_threads() -> int:
    """The threads a run uses when its configuration says None: OMP_NUM_THREADS
    where it holds a whole number of at least 1, else the cores this process may
    run on."""
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and int(given) >= 1:
        return int(given)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # (not on every OS)
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def using_threads(threads: int | None) -> Iterator[int]:
    """Products run inside may use `threads` threads (None: `default_threads`)."""
    count = default_threads() if threads is None else max(1, int(threads))
    token = _THREADS.set(count)
    try:
        yield count
    finally:
        _THREADS.reset(token)


def threads_for(rows: int, flops: float) -> int:
    """The threads a sparse product of `rows` rows and `flops` multiply-adds
    will run on: 1 where the run allows one or the product is small."""
    threads = _THREADS.get()
    if threads <= 1 or rows < 2 or flops < PARALLEL_FLOPS:
        return 1
    return min(threads, rows)


def sparse_product(a: Any, b: Any, threads: int) -> Any:
    """`a @ b` (CSR both) over `threads` blocks of a's rows, one thread each."""
    if threads <= 1:
        return a @ b
    work = np.concatenate(([0], np.cumsum(np.diff(b.indptr)[a.indices])))[a.indptr]
    targets = work[-1] * np.arange(1, threads) / threads
    cuts = [0, *np.searchsorted(work, targets).tolist(), a.shape[0]]
    blocks = [_rows(a, lo, hi) for lo, hi in zip(cuts, cuts[1:]) if hi > lo]
    parts = list(_pool(threads).map(lambda block: block @ b, blocks))
    return sp.vstack(parts, format="csr") if len(parts) > 1 else parts[0]


def _rows(a: Any, lo: int, hi: int) -> Any:
    """Rows lo..hi of a CSR matrix, as views of its arrays (no copy)."""
    start, stop = int(a.indptr[lo]), int(a.indptr[hi])
    return sp.csr_array((a.data[start:stop], a.indices[start:stop],
                         a.indptr[lo:hi + 1] - start), shape=(hi - lo, a.shape[1]))


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process' pool of `threads` threads (made once per size asked)."""
    key = (os.getpid(), threads)
    if key not in _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL[key] = ThreadPoolExecutor(threads, thread_name_prefix="fuse-product")
    return _POOL[key]
