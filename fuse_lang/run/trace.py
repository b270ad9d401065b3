"""A run's trace (`ExecutionConfig(trace=True)`, `fuse run --trace`), as plain data.

Per phase of the run (check, plan, load, rules, write: `PHASES`) its time.
Per group of the evaluation order (an equation's tensor, a recurrence, a
recursive group): its time and output size (shape; non-zeros for a Boolean
tensor).  Per round of a fixpoint: the round's number, the facts it added
(semi-naive) or the largest change (naive), and its time.  A traced run is
eager (each equation timed on its own); times are wall-clock seconds as the
host sees them (a GPU framework's asynchronous work is counted where its value
is next read).
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Callable

import numpy as np

from .backends.base import Backend
from .sparse import products
from .sparse.value import is_sparse

# where a run's time goes, in order: compile's checking (and choices), this run's
# plan, loading sources/inputs/facts, the rules (equations, fixpoints) and writing
# sinks and answering queries
PHASES = ("check", "plan", "load", "rules", "write")


class Tracer:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.equations: list[dict] = []
        self.fixpoints: list[dict] = []
        self.recurrences: list[dict] = []
        self._stepped: float | None = None  # when the running recurrence's step started
        # seconds per phase of the run: load (sources, inputs, facts), rules, write
        self.phases: dict[str, float] = {}

    def phase(self, name: str, seconds: float) -> None:
        """Add `seconds` to the run's phase `name`."""
        self.phases[name] = self.phases.get(name, 0.0) + seconds

    def phase_list(self) -> list[dict]:
        """The phases as the trace's data holds them, in the order they run."""
        return [{"phase": name, "seconds": self.phases[name]}
                for name in PHASES if name in self.phases]

    def timed_group(self, analysis: Any, group: list[str], run: Callable[[], None],
                    values: dict[str, Any]) -> None:
        """Run one group of the evaluation order and record its time and sizes."""
        started = time.perf_counter()
        run()
        self._close_step()
        seconds = time.perf_counter() - started
        for name in group:
            value = values.get(name)
            if value is None:
                continue
            entry: dict[str, Any] = {"tensor": name, "seconds": seconds,
                                     "shape": list(self.backend.shape(value))}
            if analysis.tensors[name].boolean:
                entry["nonzeros"] = _nonzeros(self.backend, value)
            if len(group) > 1 or name in analysis.recursive:
                entry["recursive"] = True
            self.equations.append(entry)

    def rounds(self, group: list[str], semi_naive: bool, body: Callable[[Any], Any],
               searched: Callable[[], list[int] | None] | None = None,
               watched: tuple[Any, dict[int, tuple[int, str | None]]] | None = None
               ) -> Callable[[Any], Any]:
        """`body` (one fixpoint round) recording each round it runs.  searched: after
        a call of `body` that found the rest of a linear closure by one search
        (run.fixpoint.closure), the facts each of the rounds it stands for added: one
        entry each, marked `searched`, sharing the search's time.  watched: the
        semi-naive rounds (fixpoint.loop.SemiNaive) and their equations' lines:
        each rule of a round is recorded too (`rules`)."""
        record: dict[str, Any] = {"group": list(group),
                                  "strategy": "semi_naive" if semi_naive else "naive",
                                  "rounds": []}
        self.fixpoints.append(record)
        rules: list[dict] = []
        if watched is not None:
            watched[0].watch = self._rule_watch(rules, watched[1])

        def traced(state: Any) -> Any:
            started = time.perf_counter()
            rules.clear()
            state = body(state)
            added = searched() if searched is not None else None
            if added is not None:
                share = (time.perf_counter() - started) / len(added)
                first = len(record["rounds"]) + 1
                record["rounds"].extend(
                    {"iteration": first + k, "facts_added": count, "seconds": share,
                     "searched": True} for k, count in enumerate(added))
                return state
            entry: dict[str, Any] = {"iteration": len(record["rounds"]) + 1}
            if semi_naive:
                entry["facts_added"] = sum(_nonzeros(self.backend, d)
                                           for d in state[3].values() if d is not None)
                # how each relation is held after the round: a sparse one that filled
                # in goes on dense (run/sparse/products.py)
                entry["held"] = {n: "sparse" if is_sparse(v) else "dense"
                                 for n, v in state[2].items()}
            else:
                entry["change"] = float(state[1])
            entry["seconds"] = time.perf_counter() - started
            if watched is not None:
                entry["rules"] = list(rules)
            record["rounds"].append(entry)
            return state

        return traced

    def _rule_watch(self, rules: list[dict], lines: dict[int, tuple[int, str | None]]
                    ) -> Callable[[int, str, Any, Callable[[], Any]], Any]:
        """What records one rule of a semi-naive round: its line, whose new facts it
        joined and how many, the tuples it produced, its time and its products."""
        def watch(k: int, joined: str, delta: Any, rule: Callable[[], Any]) -> Any:
            with products.tallied() as kinds:
                started = time.perf_counter()
                part = rule()
                seconds = time.perf_counter() - started
            line, file = lines.get(k, (None, None))
            rules.append({"statement": k, "line": line, **({"file": file} if file else {}),
                          "delta_of": joined,
                          "delta_tuples": _nonzeros(self.backend, delta),
                          "tuples": 0 if part is None else _nonzeros(self.backend, part),
                          "seconds": seconds, "products": dict(Counter(kinds))})
            return part

        return watch

    def recurrence(self, group: list[str], recurrence: Any) -> None:
        """A recurrence (check.recurrences.Recurrence) starts: its steps follow."""
        self.recurrences.append({"group": list(group), "index": recurrence.index,
                                 "virtual": recurrence.virtual,
                                 "order": list(recurrence.order), "steps": []})
        self._stepped = None

    def step(self, step: int) -> None:
        """Step `step` of the running recurrence starts (the last one
        ends with its group: `timed_group`)."""
        self._close_step()
        self.recurrences[-1]["steps"].append({"step": step, "seconds": 0.0})
        self._stepped = time.perf_counter()

    def _close_step(self) -> None:
        if self._stepped is not None:
            self.recurrences[-1]["steps"][-1]["seconds"] = time.perf_counter() - self._stepped
            self._stepped = None

    def to_data(self) -> dict:
        return {"equations": self.equations, "fixpoints": self.fixpoints,
                "recurrences": self.recurrences}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(c) for c in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()] + \
        [fmt.format(*row).rstrip() for row in rows]


def report_lines(result: Any) -> list[str]:
    """What `fuse run` prints after the outputs: the backend picked, the Monte
    Carlo estimates' standard errors, and the trace as tables."""
    out = []
    if result.backend is not None:
        out.append(f"backend: {result.backend['backend']} on {result.backend['device']} "
                   f"({result.backend['why']})")
    for name, e in result.estimates.items():
        out.append(f"{name}  Monte Carlo over `{e['index']}`: {e['samples']} of {e['extent']} "
                   f"values, standard error {e['max_standard_error']:.4g} (largest)")
    if result.trace is not None:
        out += trace_lines(result.trace)
    return out


def trace_lines(trace: dict) -> list[str]:
    """A trace (Tracer.to_data) as tables: the phases, per equation, then per
    fixpoint round."""
    out: list[str] = []
    if trace.get("phases"):
        out += ["", "trace: phases"] + _table(
            ["phase", "ms"], [[p["phase"], f"{p['seconds'] * 1e3:.3f}"]
                              for p in trace["phases"]])
    rows = [[e["tensor"], f"{e['seconds'] * 1e3:.3f}", str(tuple(e["shape"])),
             str(e.get("nonzeros", "")), "yes" if e.get("recursive") else ""]
            for e in trace["equations"]]
    out += ["", "trace: equations"] + _table(
        ["tensor", "ms", "shape", "non-zeros", "recursive"], rows)
    for fixpoint in trace["fixpoints"]:
        out += _fixpoint_lines(fixpoint)
    for recurrence in trace.get("recurrences", ()):
        steps = recurrence["steps"]
        over = "the virtual index " if recurrence["virtual"] else ""
        out += ["", f"trace: recurrence of {', '.join(recurrence['group'])} over {over}"
                    f"`{recurrence['index']}`: in order, {len(steps)} steps, one pass each "
                    f"({', then '.join(recurrence['order'])})"]
        out += _table(["step", "ms"], [[str(s["step"]), f"{s['seconds'] * 1e3:.3f}"]
                                       for s in steps])
    return out


def _fixpoint_lines(fixpoint: dict) -> list[str]:
    """A fixpoint's rounds as a table; a `held` column where a relation of the
    group was held sparse (and says from which round it went on dense)."""
    added = fixpoint["strategy"] == "semi_naive"
    rounds = fixpoint["rounds"]
    sparse = any("sparse" in r.get("held", {}).values() for r in rounds)
    rows = [[str(r["iteration"]), str(r["facts_added"]) if added else f"{r['change']:.4g}",
             f"{r['seconds'] * 1e3:.3f}"] + ([_held(r.get("held", {}))] if sparse else [])
            for r in rounds if not r.get("searched")]
    searched = [r for r in rounds if r.get("searched")]
    if searched:  # the rounds one graph search stood for (run.fixpoint.closure), as one row
        rows.append([f"{searched[0]['iteration']}-{searched[-1]['iteration']} (searched)",
                     str(sum(r["facts_added"] for r in searched)),
                     f"{sum(r['seconds'] for r in searched) * 1e3:.3f}"] + [""] * sparse)
    return ["", f"trace: fixpoint of {', '.join(fixpoint['group'])} ({fixpoint['strategy']})"] \
        + _table(["iteration", "facts added" if added else "change", "ms"]
                 + ["held"] * sparse, rows) + _rule_lines(fixpoint)


def _rule_lines(fixpoint: dict) -> list[str]:
    """Each rule of a semi-naive fixpoint over all its rounds: the new facts it
    joined, the tuples it produced, its time and the products it ran."""
    totals: dict[tuple, dict] = {}
    for entry in fixpoint["rounds"]:
        for rule in entry.get("rules", ()):
            line = f"{rule['file']}:{rule['line']}" if rule.get("file") else rule["line"]
            total = totals.setdefault((line, rule["delta_of"]), {
                "rounds": 0, "delta": 0, "tuples": 0, "seconds": 0.0, "products": Counter()})
            total["rounds"] += 1
            total["delta"] += rule["delta_tuples"]
            total["tuples"] += rule["tuples"]
            total["seconds"] += rule["seconds"]
            total["products"].update(rule["products"])
    if not totals:
        return []
    rows = [[str(line), of, str(t["rounds"]), str(t["delta"]), str(t["tuples"]),
             f"{t['seconds'] * 1e3:.3f}",
             ", ".join(f"{n} {kind}" for kind, n in sorted(t["products"].items())) or "-"]
            for (line, of), t in sorted(totals.items(), key=lambda item: -item[1]["seconds"])]
    return ["", f"trace: rules of {', '.join(fixpoint['group'])} (all rounds, slowest first)"] \
        + _table(["line", "new facts of", "runs", "joined", "produced", "ms", "products"],
                 rows)


def _held(held: dict[str, str]) -> str:
    """`sparse`, or per relation `Name sparse, Other dense` when a group's differ."""
    if len(set(held.values())) <= 1:
        return next(iter(held.values()), "")
    return ", ".join(f"{n} {form}" for n, form in held.items())


def _nonzeros(backend: Backend, value: Any) -> int:
    """A relation's tuples, counted where it lies (a sparse one is never densified)."""
    if is_sparse(value):
        return int(value.on_numpy().matrix.count_nonzero())
    return int(np.count_nonzero(backend.to_numpy(value)))
