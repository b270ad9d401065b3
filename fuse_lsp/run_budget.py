"""One memory budget and a number of slots for all the runs of a server.

Every `fuse.run` asks the budget before it computes: its memory estimate
(the engine's guard, from shapes only) must fit what the runs going on leave
of the budget, and fewer than `maxConcurrentRuns` may be going.  A run that
does not fit now waits, in the order the runs were asked, and says so; one
that could never fit (more than the whole budget) is refused at once.  A run
holds its share until its computation has really ended, even after a cancel
was answered (docs/running-from-the-editor.md).
"""
from __future__ import annotations

import asyncio
import itertools
from typing import Callable

from fuse_lang.front.numbers import format_bytes
from fuse_lang.ide.cancellation import Cancelled, CancelToken
from fuse_lang.run.memory import default_limit

POLL_S = 0.25  # a waiting run looks at its cancel token this often


class RunRefused(Exception):
    """The run needs more than the whole budget: it could never start."""


class RunBudget:
    def __init__(self) -> None:
        self.running: dict[int, int] = {}  # ticket -> bytes held
        self.waiting: list[int] = []  # tickets in the order they asked
        self._tickets = itertools.count()
        self._changed = asyncio.Event()
        self._measured: int | None = None  # the default budget, measured when idle

    def total(self, setting: int | None) -> int:
        """The budget: the memoryLimit setting, else half the memory free when no
        run is going (measured again each time the server is idle)."""
        if setting is not None:
            return setting
        if not self.running or self._measured is None:
            self._measured = default_limit()
        return self._measured

    async def admit(self, need: int, setting: int | None, slots: int, cancel: CancelToken,
                    waiting: Callable[[str], None]) -> int:
        """A ticket once the run fits; `waiting(message)` is told once if it must wait.
        Raises RunRefused (never fits) or Cancelled (cancelled while waiting)."""
        total = self.total(setting)
        if need > total:
            raise RunRefused(f"this run needs about {format_bytes(need)}, more than the "
                             f"server's memory budget for runs ({format_bytes(total)}, the "
                             f"memoryLimit setting); nothing was run")
        ticket = next(self._tickets)
        self.waiting.append(ticket)
        told = False
        try:
            while not (self.waiting[0] == ticket and len(self.running) < slots
                       and sum(self.running.values()) + need <= self.total(setting)):
                if cancel.cancelled:
                    raise Cancelled("the run was cancelled while it waited")
                if not told:
                    told = True
                    waiting(f"waiting: {len(self.running)} run(s) going hold "
                            f"{format_bytes(sum(self.running.values()))} of the "
                            f"{format_bytes(total)} budget; this run needs about "
                            f"{format_bytes(need)}")
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), POLL_S)
                except asyncio.TimeoutError:
                    pass
        finally:
            self.waiting.remove(ticket)
            self._changed.set()  # the next in line may fit now
        self.running[ticket] = need
        return ticket

    def release(self, ticket: int) -> None:
        """The run has ended: its share goes back, and the next in line may start."""
        self.running.pop(ticket, None)
        self._changed.set()
