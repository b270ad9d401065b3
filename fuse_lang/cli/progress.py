"""`fuse run`'s progress bar: on stderr, only when stderr is a terminal, and
only for a run that has gone on for SHOW_AFTER_S (docs/execution.md).

The engine reports how far it is at its checkpoints (run.limits.RunProgress:
groups of the evaluation order done, the iteration of a fixpoint or
recurrence); the bar is tqdm's, imported only when a bar is drawn.  Ctrl-C
stops the run at its next operation; sinks are written at the very end of a
run (each atomically), so a stopped run leaves no sink file.
"""
from __future__ import annotations

import os
from typing import Any, TextIO

from ..run.limits import RunProgress

SHOW_AFTER_S = 1.0  # shorter runs show nothing


class ProgressBar:
    """A callback for `CompiledProgram.progress` drawing a bar on `stream`."""

    def __init__(self, stream: TextIO, unit: str = "group", desc: str = "fuse run") -> None:
        self.stream = stream
        self.unit, self.desc = unit, desc  # `fuse train`: steps (cli/train.py)
        self.bar: Any = None

    def __call__(self, now: RunProgress) -> None:
        if self.bar is None:
            if now.elapsed_s < SHOW_AFTER_S:
                return
            from tqdm import tqdm  # lazily: most runs never draw a bar

            self.bar = tqdm(total=now.total, file=self.stream, unit=self.unit, leave=False,
                            desc=self.desc, **_size(self.stream))
        self.bar.n = now.done
        self.bar.set_postfix_str(now.message(), refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _size(stream: TextIO) -> dict[str, int]:
    """The terminal's size, 80 x 24 where it says 0 (a fresh pseudo-terminal, on
    which tqdm would otherwise hide its bar: no rows to draw it on)."""
    try:
        size = os.get_terminal_size(stream.fileno())
        return {"ncols": size.columns or 80, "nrows": size.lines or 24}
    except (OSError, ValueError, AttributeError):
        return {"ncols": 80, "nrows": 24}


def progress_bar(stream: TextIO, unit: str = "group",
                 desc: str = "fuse run") -> ProgressBar | None:
    """A bar for a run when `stream` is a terminal; None otherwise (pipes, tests)."""
    isatty = getattr(stream, "isatty", None)
    return ProgressBar(stream, unit, desc) if isatty is not None and isatty() else None
