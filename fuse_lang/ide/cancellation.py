"""Stopping a run from another thread.

`cancellable(program, token)` puts a checking layer in front of a compiled
program's backend: every backend operation first looks at the token, so a
cancelled run stops at its next operation (within an equation, or between
two steps of a fixpoint or a recurrence) by raising `Cancelled`.  The token is
also the program's `interrupt`, checked at the run's checkpoints
(fuse_lang.run.limits), among them between the blocks of a large product: a
cancelled contraction stops within a block, not after the whole product.
Sinks are written at the end of a run, so a cancelled run writes none.
"""
from __future__ import annotations

import threading
from typing import Any

from ..run.backends.base import Backend
from ..run.program import CompiledProgram


class Cancelled(Exception):
    """The run was cancelled before it finished."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()
        self.operations = 0  # backend operations started so far (progress)

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled("the run was cancelled")
        self.operations += 1


class _CheckedBackend:
    """Delegates to a backend; every method call checks the token first."""

    def __init__(self, inner: Backend, token: CancelToken) -> None:
        self._inner = inner
        self._token = token

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value) or isinstance(value, type):
            return value  # data: a shape, a dtype (a class is callable too)
        token = self._token

        def checked(*args: Any, **kwargs: Any) -> Any:
            token.check()
            return value(*args, **kwargs)

        return checked


def cancellable(program: CompiledProgram, token: CancelToken) -> CompiledProgram:
    """The same program (its plans shared), stopping with `Cancelled` once the token
    is cancelled: use the program this returns."""
    if not isinstance(program.backend, _CheckedBackend):
        program = program.with_backend(_CheckedBackend(program.backend, token))
    program.interrupt = token.check
    return program
