"""Reading a large source file once per compile (docs/execution.md, "Demand mode").

`compile` may analyse a program more than once (demand mode analyses the
magic-sets rewrite too; a targeted run, the cut program) and then runs it,
and each of these reads and splits the same relation files.  Inside
`reading_once()` a file's costly readings (its split columns, what the
checker learns of it) are kept per file version: the file's resolved path,
size, modification time and inode, so that a file changed in between is read
again.  Outside such a block nothing is kept (`fuse check`, the language
server: every analysis reads the files as they are).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Hashable, Iterator, TypeVar

T = TypeVar("T")

# the store of the `reading_once` block this context is in (None: outside any)
_STORE: ContextVar[dict | None] = ContextVar("fuse_file_reads", default=None)


@contextmanager
def reading_once(store: dict | None = None) -> Iterator[dict]:
    """Within the block, `remembered` keeps what it reads in `store` (a new one
    when None; give a kept one to go on with what it holds)."""
    store = {} if store is None else store
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


def remembered(path: Path, what: Hashable, read: Callable[[], T]) -> T:
    """`read()`, or what it gave for this version of `path` earlier in the
    current `reading_once` block.  Errors are not kept (the next call reads again)."""
    store = _STORE.get()
    if store is None:
        return read()
    try:
        status = os.stat(path)
        where = os.path.realpath(path)
    except (OSError, ValueError):
        return read()
    key = (where, status.st_size, status.st_mtime_ns, status.st_ino, what)
    if key in store:
        return store[key]
    value = store[key] = read()
    return value


def kept(store: dict, keep: Callable[[Hashable], bool]) -> dict:
    """The entries of `store` whose `what` passes `keep` (what a compiled program
    holds on to for its runs)."""
    return {key: value for key, value in store.items() if keep(key[-1])}

