"""Bounds on a run while it runs: its time limit, and a stop asked from outside.

A run checks its `Checkpoint` between statements, before each round of a
fixpoint, at each step of a recurrence, and between the blocks of a large
contraction (`backends.numpy_backend`); past its time limit the check raises
`TimeLimitExceeded`, a FuseError like any other failed run.  A caller that
stops runs from another thread (the editor's cancel) gives `interrupt`, a
function that raises when the run is to stop, and it is called at the same
places.  What runs inside one compiled graph (a jax loop) is checked before
and after the graph, not inside it.

The same checkpoints tell a caller how far the run is (`progress`, a function
given a `RunProgress`): the engine says when a group of the evaluation order
starts (`at_group`) and when a fixpoint round or recurrence step starts
(`next_round`); reports are sent at most every REPORT_EVERY_S, and at each
group's start (the CLI's progress bar, the editor's work-done progress).
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

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


def checked_memory_limit(limit: Any) -> Any:
    """A memory limit as a run takes it: None (the default) or a positive number of
    bytes; anything else (0, negative, NaN, a string) is refused before running, never
    left to switch the guard off or fail inside it."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not limit > 0:
        raise FuseError(f"the memory limit must be a positive number of bytes, not {limit!r}")
    return limit


def checked_hook(name: str, value: Any) -> Any:
    """A run hook of a compiled program as it is set: `memory_limit` a memory limit,
    the others a function or None; refused when set, not mid-run."""
    if name == "memory_limit":
        return checked_memory_limit(value)
    if value is not None and not callable(value):
        raise FuseError(f"`{name}` is a function (or None), not {value!r}")
    return value


REPORT_EVERY_S = 0.1  # the most often progress is reported within a group


@dataclass(frozen=True, slots=True)
class RunProgress:
    """How far a run is: plain data for a progress bar."""

    done: int  # groups of the evaluation order finished
    total: int  # groups the run computes
    tensors: tuple[str, ...]  # the group going on
    iteration: int  # its fixpoint round or recurrence step (0: none yet)
    elapsed_s: float

    def message(self) -> str:
        """ "group 3/5 (`Ancestor`): iteration 12" """
        names = ", ".join(f"`{n}`" for n in self.tensors[:3]) + \
            (", ..." if len(self.tensors) > 3 else "")
        rounds = f": iteration {self.iteration}" if self.iteration else ""
        return f"group {min(self.done + 1, self.total)}/{self.total} ({names}){rounds}"


class Checkpoint:
    """The run's time limit (None: none) and the caller's interrupt, checked together,
    and the caller's progress report."""

    def __init__(self, time_limit: float | None,
                 interrupt: Callable[[], None] | None = None,
                 progress: Callable[[RunProgress], None] | None = None) -> None:
        self.time_limit = time_limit
        self.interrupt = interrupt
        self.progress = progress
        self.started = time.monotonic()
        self.deadline = math.inf if time_limit is None else self.started + time_limit
        self._where: tuple[int, int, tuple[str, ...]] = (0, 0, ())
        self._iteration = 0
        self._reported = -math.inf

    def at_group(self, number: int, total: int, tensors: list[str] | tuple[str, ...]) -> None:
        """A group of the evaluation order starts: check, and report it."""
        self._where, self._iteration = (number, total, tuple(tensors)), 0
        self._report(force=True)
        self()

    def next_round(self) -> None:
        """A fixpoint round or a recurrence step starts: check, and count it."""
        self._iteration += 1
        self()

    def _report(self, force: bool = False) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if force or now - self._reported >= REPORT_EVERY_S:
            self._reported = now
            number, total, tensors = self._where
            self.progress(RunProgress(number, total, tensors, self._iteration,
                                      now - self.started))

    def __call__(self) -> None:
        if self.interrupt is not None:
            self.interrupt()
        if self.progress is not None:
            self._report()
        if time.monotonic() > self.deadline:
            raise TimeLimitExceeded(
                f"the run was stopped at its time limit of {self.time_limit:g} s (after "
                f"{time.monotonic() - self.started:.1f} s); raise the limit (fuse run "
                f"--time-limit SECONDS, run(time_limit=...), or the editor's runTimeLimit "
                f"setting) or make the run smaller")

    @property
    def bounded(self) -> bool:
        return self.interrupt is not None or self.time_limit is not None or \
            self.progress is not None


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


class CheckedBackend:
    """Delegates to a backend; every method call first calls `check` (which raises
    to stop the run): a run with `CompiledProgram.operation_check` set stops at its
    next backend operation, within an equation or between two rounds."""

    def __init__(self, inner: Any, check: Callable[[], None]) -> None:
        self._inner = inner
        self._check = check

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value) or isinstance(value, type):
            return value  # data: a shape, a dtype (a class is callable too)
        check = self._check

        def checked(*args: Any, **kwargs: Any) -> Any:
            check()
            return value(*args, **kwargs)

        return checked
