"""Stopping a run from another thread.

`cancellable(program, token)` sets the program's run hooks: every backend
operation of its runs first looks at the token (run.limits.CheckedBackend), so a
cancelled run stops at its next operation (within an equation, or between
two steps of a fixpoint or a recurrence) by raising `Cancelled`.  The token is
also the program's `interrupt`, checked at the run's checkpoints
(fuse_lang.run.limits), among them between the blocks of a large product: a
cancelled contraction stops within a block, not after the whole product.
Sinks are written at the end of a run, so a cancelled run writes none.
"""
from __future__ import annotations

import threading

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


def cancellable(program: CompiledProgram, token: CancelToken) -> CompiledProgram:
    """The program, stopping with `Cancelled` once the token is cancelled: the
    token checks every backend operation of its runs (`operation_check`) and
    every checkpoint (`interrupt`).  Returns the program, for chaining."""
    program.operation_check = token.check
    program.interrupt = token.check
    return program
