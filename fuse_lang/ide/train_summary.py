"""A training's result as plain, JSON-able data: what an editor shows after
`fuse.train` (docs/running-from-the-editor.md, "Training").

`TrainRecorder` is the training's progress callback: it keeps each step's
loss, the time since the start and the latest validation loss, and passes
each report on (the server's progress reads the latest).  `summarize_training`
puts that together with the engine's run.train.training.TrainResult: the loss curve
(HISTORY_POINTS points evenly spread at most, the last step always in, and
every validated step), the
validation losses, the first and final loss, per param its array summary and
the checkpoint written, if any.
"""
from __future__ import annotations

import math
import threading
from array import array
from dataclasses import dataclass
from typing import Any, Callable

from ..front.numbers import strict_json
from ..run.train.training import TrainProgress, TrainResult
from .run_summary import ArraySummary, duration_text, json_float, shape_text, summarize_array

HISTORY_POINTS = 1000  # points of the loss curve sent to the editor


class TrainRecorder:
    """The progress callback of one training, called in its thread: it keeps the
    latest report and, per step, the seconds since the start (compactly: a long
    training reports millions of steps)."""

    def __init__(self, listener: Callable[[TrainProgress], None] | None = None) -> None:
        self.steps = array("q")  # the step each report finished
        self.seconds = array("d")  # and the seconds since the start then
        self.listener = listener
        self._latest: TrainProgress | None = None
        self._lock = threading.Lock()

    def __call__(self, report: TrainProgress) -> None:
        with self._lock:
            self.steps.append(report.done)
            self.seconds.append(report.elapsed_s)
            self._latest = report
        if self.listener is not None:
            self.listener(report)

    @property
    def latest(self) -> TrainProgress | None:
        with self._lock:
            return self._latest


@dataclass(frozen=True, slots=True)
class TrainPoint:
    step: int  # the step finished (counted from 1, a resumed checkpoint's included)
    loss: float  # the training loss of that step (before its update)
    seconds: float  # since the training started
    validation: float | None = None  # the validation loss measured after this step

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "loss": json_float(self.loss),
                               "seconds": round(self.seconds, 6)}
        if self.validation is not None:
            out["validation"] = json_float(self.validation)
        return out


@dataclass(frozen=True, slots=True)
class TrainSummary:
    program: str
    backend: str
    device: str
    loss: str  # the loss tensor's name
    elapsed_ms: float  # compiling and training, as the editor waited
    first_step: int
    steps: int
    history: tuple[TrainPoint, ...]
    validation: tuple[tuple[int, float], ...]
    params: tuple[tuple[str, ArraySummary], ...]
    checkpoint: str | None
    options: dict  # the optimizer, learning rate, ... that trained

    @property
    def final_loss(self) -> float | None:
        return self.history[-1].loss if self.history else None

    def to_json(self) -> dict[str, Any]:
        final = self.final_loss
        return strict_json({"program": self.program, "backend": self.backend, "device": self.device,
                "loss": self.loss, "elapsed_ms": round(self.elapsed_ms, 3),
                "first_step": self.first_step, "steps": self.steps,
                "initial_loss": json_float(self.history[0].loss) if self.history else None,
                "final_loss": None if final is None else json_float(final),
                "history": [p.to_json() for p in self.history],
                "validation": [{"step": s, "loss": json_float(v)} for s, v in self.validation],
                "params": {n: s.to_json() for n, s in self.params},
                "checkpoint": self.checkpoint, "options": self.options,
                "message": self.message(), "report": self.table()})  # type: ignore[return-value]

    def message(self) -> str:
        where = f"{self.device} ({self.backend})"
        if not self.history:
            return (f"Trained {self.program} on {where}: no steps to take (already at step "
                    f"{self.steps})")
        first, last = self.history[0], self.history[-1]
        held = f", validation {self.validation[-1][1]:.4g}" if self.validation else ""
        saved = f"; checkpoint {self.checkpoint}" if self.checkpoint else ""
        return (f"Trained {self.program} on {where}: {self.loss} {first.loss:.4g} -> "
                f"{last.loss:.4g}{held} in {self.steps - self.first_step} steps, "
                f"{duration_text(self.elapsed_ms)}{saved}")

    def table(self) -> list[str]:
        """The loss curve as text for an editor without pictures (Neovim's result
        buffer): a line of block characters, then a fixed-width table of about 20
        rows, then the params."""
        rows = _spread(list(self.history), 20)
        lines = [f"loss {sparkline([p.loss for p in self.history])}", ""] if self.history else []
        lines.append(f"{'step':>8}  {'loss':>12}  {'validation':>12}  {'time':>9}")
        for p in rows:
            held = f"{p.validation:.6g}" if p.validation is not None else ""
            lines.append(f"{p.step:>8}  {p.loss:>12.6g}  {held:>12}  {p.seconds:>8.2f}s")
        lines += [""] + [f"param {n} {shape_text(s.shape)}: mean {_g(s.mean)}, std {_g(s.std)}"
                         for n, s in self.params]
        return lines


def summarize_training(result: TrainResult, recorder: TrainRecorder, *,
                       program: str = "program", backend: str = "torch", device: str = "cpu",
                       elapsed_s: float = 0.0, options: dict | None = None) -> TrainSummary:
    """The plain-data summary of a finished training."""
    seconds = dict(zip(recorder.steps, recorder.seconds))
    validated = dict(result.validation)
    first = result.first_step + 1  # the step of losses[0]
    kept = _spread_indices(len(result.losses), HISTORY_POINTS,
                           {step - first for step in validated})
    points = [TrainPoint(first + k, float(result.losses[k]), seconds.get(first + k, 0.0),
                         validated.get(first + k)) for k in kept]
    return TrainSummary(program, backend, device, result.loss, elapsed_s * 1000,
                        result.first_step, result.steps, tuple(points),
                        tuple((int(s), float(v)) for s, v in result.validation),
                        tuple((n, summarize_array(v)) for n, v in sorted(result.params.items())),
                        result.checkpoint, dict(options or {}))


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 60) -> str:
    """`values` as one line of block characters, high to low (at most `width`,
    each the mean of its share of the values; a non-finite value is a space)."""
    if not values:
        return ""
    count = min(width, len(values))
    cells = []
    for k in range(count):
        share = [v for v in values[k * len(values) // count:(k + 1) * len(values) // count]
                 if math.isfinite(v)]
        cells.append(sum(share) / len(share) if share else math.nan)
    finite = [c for c in cells if math.isfinite(c)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 0.0)
    span = (high - low) or 1.0
    return "".join(" " if not math.isfinite(c) else
                   BLOCKS[min(len(BLOCKS) - 1, int((c - low) / span * len(BLOCKS)))]
                   for c in cells)


def _spread_indices(count: int, most: int, also: set[int] = frozenset()) -> list[int]:
    """At most about `most` of the positions 0..count-1, evenly spread, the first
    and the last kept, and those in `also` (the validated steps)."""
    if count <= most:
        return list(range(count))
    stride = (count - 1) / (most - 1)
    keep = {round(k * stride) for k in range(most)} | {k for k in also if 0 <= k < count}
    return sorted(keep)


def _spread(points: list, most: int) -> list:
    """At most about `most` of `points` (see _spread_indices)."""
    also = {k for k, p in enumerate(points) if getattr(p, "validation", None) is not None}
    return [points[k] for k in _spread_indices(len(points), most, also)]
