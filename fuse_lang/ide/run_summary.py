"""A run's result as plain, JSON-able data: what an editor shows after `run`.

Per export and per query: shape, dtype, statistics over the finite values
(min, max, mean, std), how many values are not zero (NaN counts as not zero)
and how many are not finite, and a preview of the
first values; Boolean queries also list their matching tuples as values, and a
relation among the outputs (when the analysis is given) its tuple count and first
`RESULT_TUPLES` tuples, sorted by value (io.relation_tuples), each also as a
program writes it (`tuple_texts`: `(Alice, "ann", 7)`, for an editor to show).
`RunSummary.message()` is the one-line report ("Ran a.fuse on cpu (numpy):
Attn (6, 4), Comp (6, 6) in 12 ms").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ..check import Analysis
from ..check.cone import NOT_NEEDED, NotRun
from ..front.numbers import strict_json
from ..io.relation_tuples import AxisValues, relation_tuples, tuple_text
from ..run.outputs import relation_axes
from ..run.results import QueryAnswer, RunResult
from ..run.trace import trace_lines

PREVIEW = 8  # values shown per array
RESULT_TUPLES = 100  # a relation's tuples sent to the editor (its count says how many in all)
MESSAGE_ITEMS = 4  # results named in the one-line message


@dataclass(frozen=True, slots=True)
class ArraySummary:
    shape: tuple[int, ...]
    dtype: str
    size: int
    min: float | None  # over the finite values; None when there are none
    max: float | None
    mean: float | None
    std: float | None
    nonfinite: int  # how many values are NaN or infinite
    preview: tuple[float, ...]  # the first values, in C order
    truncated: bool  # whether the array has more values than the preview
    nonzeros: int = 0  # how many values are not zero (a relation's facts)
    # a relation: its tuples as values, sorted by value (the first RESULT_TUPLES), and
    # how many it has; None for another tensor
    tuples: tuple[tuple[Any, ...], ...] | None = None
    count: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"shape": list(self.shape), "dtype": self.dtype, "size": self.size,
               "min": self.min, "max": self.max, "mean": self.mean, "std": self.std,
               "nonfinite": self.nonfinite, "nonzeros": self.nonzeros,
               "preview": [json_float(v) for v in self.preview], "truncated": self.truncated}
        if self.tuples is not None:
            out.update(relation=True, count=self.count, tuples=[list(t) for t in self.tuples],
                       tuple_texts=[tuple_text(t) for t in self.tuples])
        return out

    @property
    def what(self) -> str:
        """Its size in words: a relation's tuple count, another tensor's shape."""
        if self.tuples is None:
            return shape_text(self.shape)
        if not self.shape:
            return "yes" if self.count else "no"
        return f"{self.count} tuple{'' if self.count == 1 else 's'}"


@dataclass(frozen=True, slots=True)
class QuerySummary:
    text: str  # the query as written: "Ancestor(Alice, x)?"
    tensor: str
    free: tuple[str, ...]  # its variables, one per axis of the value
    boolean: bool
    tuples: tuple[tuple[Any, ...], ...] | None  # Boolean queries: matching tuples, by name
    value: ArraySummary

    @property
    def answer(self) -> str:
        """A short answer: "yes"/"no", the number of tuples, or the shape."""
        if self.tuples is None:
            return shape_text(self.value.shape)
        if not self.free:
            return "yes" if self.tuples else "no"
        n = len(self.tuples)
        return f"{n} answer{'' if n == 1 else 's'}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "tensor": self.tensor, "free": list(self.free),
                               "boolean": self.boolean, "answer": self.answer,
                               **self.value.to_json()}
        if self.tuples is not None:
            out["tuples"] = [list(t) for t in self.tuples]
        return out


@dataclass(frozen=True, slots=True)
class RunSummary:
    program: str  # the file name (or "program")
    backend: str
    device: str
    elapsed_ms: float
    outputs: tuple[tuple[str, ArraySummary], ...]
    queries: tuple[QuerySummary, ...]
    sinks: tuple[str, ...]  # files written
    target: str | None = None  # what was asked for, when not the whole program
    not_run: tuple[NotRun, ...] = ()  # what a targeted run left out, and why
    # trace=True: the run's trace as the engine gives it (plain data, docs/execution.md)
    trace: dict | None = None
    # projection="monte_carlo": per estimated tensor its index, samples, extent and
    # standard errors (`standard_error` summarised as an array)
    estimates: tuple[tuple[str, dict], ...] = ()

    def to_json(self) -> dict[str, Any]:
        # strict JSON for the editor: a NaN of the trace or the estimates is null
        # (the previews' own are the strings of json_float)
        return strict_json({"program": self.program, "backend": self.backend, "device": self.device,
                "elapsed_ms": round(self.elapsed_ms, 3), "target": self.target,
                "outputs": {name: s.to_json() for name, s in self.outputs},
                "queries": [q.to_json() for q in self.queries], "sinks": list(self.sinks),
                "not_run": [n.to_json() for n in self.not_run], "message": self.message(),
                "trace": self.trace, "estimates": dict(self.estimates),
                "report": self.report()})  # type: ignore[return-value]

    def report(self) -> list[str]:
        """The trace and the standard errors as `fuse run` prints them: lines of
        tables, for an editor to show as they are (empty: neither was asked for)."""
        lines = [f"{name}  Monte Carlo over `{e['index']}`: {e['samples']} of {e['extent']} "
                 f"values, standard error {e['max_standard_error']:.4g} (largest)"
                 for name, e in self.estimates]
        if self.trace is not None:
            lines += trace_lines(self.trace)
        return lines

    def message(self) -> str:
        items = [f"{name} {s.what}" for name, s in self.outputs]
        items += [f"{q.text} {q.answer}" for q in self.queries]
        if len(items) > MESSAGE_ITEMS:
            items = items[:MESSAGE_ITEMS] + [f"and {len(items) - MESSAGE_ITEMS} more"]
        what = ", ".join(items) or "nothing to show"
        wrote = f"; wrote {len(self.sinks)} file{'' if len(self.sinks) == 1 else 's'}" \
            if self.sinks else ""
        return (f"Ran {self.program} on {self.device} ({self.backend}): {what} "
                f"in {duration_text(self.elapsed_ms)}{wrote}{self._left_out()}")

    def _left_out(self) -> str:
        """What a targeted run did not run because of an error (the rest was not needed)."""
        broken = [n for n in self.not_run if n.reason != NOT_NEEDED]
        if not broken:
            return ""
        first = broken[0]
        more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
        return f"; not run: {first.what} (line {first.line}: {first.reason}){more}"


def summarize_array(array: Any, preview: int = PREVIEW) -> ArraySummary:
    if hasattr(array, "tocoo"):  # scipy.sparse: read off its non-zeros, never densified
        return _summarize_sparse(array, preview)
    a = np.asarray(array)
    flat = a.ravel()
    numeric = a.dtype.kind in "biuf"
    # floats as they are (a copy of a tensor of 16M values, and of its finite ones,
    # took seconds of a notebook's display), summed in float64; ints and bools as floats
    values = (flat if a.dtype.kind == "f" else flat.astype(np.float64)) if numeric \
        else np.zeros(0)
    finite = values
    if numeric and a.dtype.kind == "f":
        ok = np.isfinite(values)
        finite = values if ok.all() else values[ok]
    stats: tuple[float | None, ...] = (None, None, None, None)
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        stats = (low, high, *_mean_and_std(finite, max(abs(low), abs(high))))
    shown = tuple(float(v) for v in values[:preview]) if numeric else ()
    return ArraySummary(tuple(int(n) for n in a.shape), str(a.dtype), int(a.size), *stats,
                        int(values.size - finite.size), shown, int(a.size) > preview,
                        int(np.count_nonzero(values)))


def _overflow_scale(largest: float) -> float:
    """What values up to `largest` are divided by before their sum or squares are
    taken: the largest itself past 1e150 (where those overflow float64), else 1."""
    return largest if largest > 1e150 else 1.0


def _mean_and_std(finite: Any, largest: float) -> tuple[float, float]:
    """The mean and standard deviation of finite values in float64; values past
    1e150 are scaled first, since their sum or squares would overflow to inf."""
    scale = _overflow_scale(largest)
    scaled = finite if scale == 1.0 else finite / scale
    return (float(scaled.mean(dtype=np.float64)) * scale,
            float(scaled.std(dtype=np.float64)) * scale)


def _summarize_sparse(matrix: Any, preview: int) -> ArraySummary:
    """The same figures as a dense array's, computed from the stored values and the
    count of implicit zeros (a matrix of a million symbols squared is never made)."""
    coo = matrix.tocoo()
    size = int(np.prod(matrix.shape, dtype=object))
    values = coo.data.astype(np.float64)
    finite = values[np.isfinite(values)]
    zeros = size - values.size  # the cells not stored, all 0
    count = finite.size + zeros
    stats: tuple[float | None, ...] = (None, None, None, None)
    if count:
        low = min(finite.min(initial=np.inf), 0.0 if zeros else np.inf)
        high = max(finite.max(initial=-np.inf), 0.0 if zeros else -np.inf)
        scale = _overflow_scale(max(abs(float(low)), abs(float(high))))
        scaled = finite if scale == 1.0 else finite / scale
        mean = float(scaled.sum()) / count
        variance = max(float(np.square(scaled).sum()) / count - mean * mean, 0.0)
        stats = (float(low), float(high), mean * scale, math.sqrt(variance) * scale)
    shown = np.zeros(min(preview, size))  # the first cells in C order
    flat = np.zeros(values.size, dtype=np.int64)  # C-order cell numbers (any number of axes)
    for at, extent in zip(coo.coords, matrix.shape):
        flat = flat * int(extent) + at
    first = flat < shown.size
    np.add.at(shown, flat[first], values[first])
    return ArraySummary(tuple(int(n) for n in matrix.shape), str(matrix.dtype), size, *stats,
                        int(values.size - finite.size), tuple(float(v) for v in shown),
                        size > preview, int(np.count_nonzero(values)))


def summarize_relation(array: Any, axes: Sequence[AxisValues],
                       shown: int = RESULT_TUPLES) -> ArraySummary:
    """A relation's summary: its array's figures, and its first `shown` tuples as
    values, sorted by value, with their count (read off a sparse one's entries)."""
    tuples = relation_tuples(array, axes)
    base = summarize_array(array)
    return replace(base, tuples=tuple(tuples.rows(0, shown)), count=tuples.count)


def summarize_output(array: Any, axes: Sequence[AxisValues] | None) -> ArraySummary:
    """An output's summary: a relation's (`axes`: its axes' values,
    run.outputs.relation_axes) or another array's."""
    if axes is not None and len(axes) == len(array.shape):
        return summarize_relation(array, axes)
    return summarize_array(array)


def summarize_query(answer: QueryAnswer) -> QuerySummary:
    """A Boolean query (the engine gives it tuples, sorted by value) keeps them."""
    tuples = None if answer.tuples is None else tuple(
        tuple(_plain(v) for v in t) for t in answer.tuples)
    return QuerySummary(answer.text, answer.tensor, tuple(answer.free), tuples is not None,
                        tuples, summarize_array(answer.value))


def summarize_run(result: RunResult, *, program: str = "program", backend: str = "numpy",
                  device: str = "cpu", elapsed_s: float = 0.0,
                  target: str | None = None, analysis: Analysis | None = None) -> RunSummary:
    """The run's result as an editor shows it; `analysis` (the program's) says
    which outputs are relations, summarised with their tuples as values."""
    def axes(name: str) -> list[AxisValues] | None:
        return relation_axes(analysis, name) if analysis is not None else None

    return RunSummary(program, backend, device, elapsed_s * 1000.0,
                      tuple((name, summarize_output(a, axes(name)))
                            for name, a in result.outputs.items()),
                      tuple(summarize_query(q) for q in result.queries),
                      tuple(str(s) for s in result.sinks), target,
                      tuple(getattr(result, "not_run", ())), getattr(result, "trace", None),
                      tuple((name, _estimate(e))
                            for name, e in (getattr(result, "estimates", None) or {}).items()))


def _estimate(entry: dict) -> dict[str, Any]:
    """A Monte Carlo estimate as JSON data: its standard errors summarised."""
    out = {k: v for k, v in entry.items() if k != "standard_error"}
    out["standard_error"] = summarize_array(entry["standard_error"]).to_json()
    return out


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def duration_text(ms: float) -> str:
    if ms >= 10_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms" if ms >= 1 else f"{ms:.2f} ms"


def json_float(v: float) -> float | str:
    """JSON has no NaN or infinity: those become the strings "nan", "inf", "-inf"."""
    if math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _plain(v: Any) -> Any:
    """A tuple element as JSON data: a symbol's name or an integer position."""
    if isinstance(v, np.generic):
        return v.item()
    return v
