"""Bounds on a run while it runs: its time limit, and a stop asked from outside.

A run checks its `Checkpoint` between statements, before each round of a
fixpoint, at each step of a recurrence, and between the blocks of a large
contraction (`backends.numpy_backend`); past its time limit the check raises
`TimeLimitExceeded`, a FuseError like any other failed run.  A caller that
stops runs from another thread (the editor's cancel) gives `interrupt`, a
function that raises when the run is to stop, and it is called at the same
places.  What runs inside one compiled graph (a jax loop) is checked before
and after the graph, not inside it.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import time
from typing import Callable, Iterator

from .results import FuseError

# the checkpoint of the run going on in this thread (None: no bound)
_CURRENT: contextvars.ContextVar["Checkpoint | None"] = contextvars.ContextVar(
    "fuse_run_checkpoint", default=None)


class TimeLimitExceeded(FuseError):
    """The run went past its time limit and was stopped."""


def checked_time_limit(seconds: float | None) -> float | None:
    """A time limit as a run takes it: None (no limit) or a positive number of seconds."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
            not math.isfinite(seconds) or seconds <= 0:
        raise FuseError(f"the time limit must be a positive number of seconds, not {seconds!r}")
    return float(seconds)


class Checkpoint:
    """The run's time limit (None: none) and the caller's interrupt, checked together."""

    def __init__(self, time_limit: float | None,
                 interrupt: Callable[[], None] | None = None) -> None:
        self.time_limit = time_limit
        self.interrupt = interrupt
        self.started = time.monotonic()
        self.deadline = math.inf if time_limit is None else self.started + time_limit

    def __call__(self) -> None:
        if self.interrupt is not None:
            self.interrupt()
        if time.monotonic() > self.deadline:
            raise TimeLimitExceeded(
                f"the run was stopped at its time limit of {self.time_limit:g} s (after "
                f"{time.monotonic() - self.started:.1f} s); raise the limit (fuse run "
                f"--time-limit SECONDS, run(time_limit=...), or the editor's runTimeLimit "
                f"setting) or make the run smaller")

    @property
    def bounded(self) -> bool:
        return self.interrupt is not None or self.time_limit is not None


@contextlib.contextmanager
def watching(checkpoint: Checkpoint) -> Iterator[None]:
    """Make `checkpoint` the one `checkpoint_now` calls in this thread while the run goes."""
    token = _CURRENT.set(checkpoint if checkpoint.bounded else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def checkpoint_now() -> None:
    """Check the current run's bounds (nothing when it has none): for work split
    into blocks, between the blocks."""
    current = _CURRENT.get()
    if current is not None:
        current()


def bounded() -> bool:
    """Whether the run going on in this thread has a bound to check."""
    return _CURRENT.get() is not None
