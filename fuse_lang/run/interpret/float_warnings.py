"""NumPy's floating-point warnings (overflow in `exp`, 0/0) said about the
program, not about the engine's source: each kind once per statement, as a
`RuntimeWarning` located at the statement's line of the `.fuse` file.

NumPy would warn from inside the backend (`.../numpy_backend.py:57:
RuntimeWarning: overflow encountered in exp`).  During a run its error state
calls `FloatWarnings.note` instead (np.errstate is per thread and per context,
so concurrent runs do not mix), and the run's end reissues what was noted with
`warnings.warn_explicit`, whose file and line are the program's.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterator

import numpy as np

from ...check import Analysis


class FloatWarnings:
    """What one run's arithmetic met: (kind, tensor being computed) in order."""

    def __init__(self) -> None:
        # set by the execution as it goes: a tensor's name, or a sink's or query's
        # statement number
        self.computing: str | int | None = None
        self.noted: dict[tuple[str, str | int | None], None] = {}

    def note(self, kind: str, _flag: int) -> None:
        self.noted.setdefault((kind, self.computing), None)

    @contextlib.contextmanager
    def watching(self) -> Iterator["FloatWarnings"]:
        with np.errstate(over="call", divide="call", invalid="call", call=self.note):
            yield self

    def reissue(self, analysis: Analysis) -> None:
        path = analysis.path or "<program>"
        for kind, tensor in self.noted:
            line, text = _statement(analysis, tensor)
            where = f"line {line}: `{text}`: " if line else ""
            warnings.warn_explicit(f"{where}{kind} encountered in floating-point arithmetic",
                                   RuntimeWarning, str(path), line or 0)


def _statement(analysis: Analysis, computing: str | int | None) -> tuple[int, str]:
    if isinstance(computing, int):
        number = computing
    else:
        info = analysis.tensors.get(computing) if computing is not None else None
        if info is None or not info.statements:
            return 0, ""
        number = info.statements[0]
    stmt = analysis.program.statements[number]
    line = analysis.lines.position(stmt.span.start)[0] + 1
    return line, analysis.text[stmt.span.start:stmt.span.end]
