"""A compiled run: the RunPlan's segments as the backend's graphs.

A straight segment of non-recursive groups is traced into one graph; a
fixpoint is one graph with the loop inside it where the backend compiles loops
(jax's while-loop), else one compiled round that a loop here repeats (torch).
Graphs are made once per shape signature (kept in the plan's `RunCaches`) and
take whatever comes from outside the program text (inputs, source files,
params) as arguments, never as constants: a second run with new values reuses
them.  Rounds with per-iteration temperatures, and fixpoints unrolled for
training, run eagerly through the execution itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..front import ir
from .cache import EXPORT_FOLDER
from .fixpoint.loop import Iteration, repeat
from .recurrence import virtual_in_graph
from .results import FuseError
from .run_plan import Segment

# `run` below is a run.execution.Execution, named by its use only: that module
# imports this one (no import circle)
Run = Any


class CompiledRun:
    """One execution's compiled pieces, in the order of its schedule's segments."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def go(self, segments: tuple[Segment, ...]) -> None:
        run = self.run
        sinks = run.write_sinks
        # a time limit or an interrupt is checked between rounds: a loop inside one
        # graph (jax's while-loop) would run to its round limit past either
        watched = run.check is not None and (run.check.time_limit is not None
                                             or run.check.interrupt is not None)
        for number, segment in enumerate(segments):
            if run.check is not None:
                run.check.at_group(number, len(segments),
                                   [n for g in segment.groups for n in g.names])
            if segment.straight:
                self.segment(("segment", sinks, number), segment)
                continue
            for group in segment.groups:
                names = list(group.names)
                if (run.schedules or run.unrolled_rounds(names)) and group.looped:
                    run.one(group)  # rounds with their own temperatures, unrolled
                elif run.plan.abilities.while_loop and group.looped and not watched:
                    try:
                        self.loop(("loop", sinks, number), names)
                    except FuseError:
                        # (a graph's id reader reads NaN: "no longer finite"); eagerly,
                        # bad ids stop the run with the message NumPy gives
                        if not _reading_ids(run, names):
                            raise
                        run.one(group)
                elif group.looped:
                    self.rounds(("round", sinks, number), names)
                elif (run.plan.abilities.while_loop and not watched and group.recurrence
                      is not None and group.recurrence.virtual):
                    self.steps(("steps", sinks, number), group)
                else:
                    run.one(group)

    def segment(self, key: tuple, segment: Segment) -> None:
        """A straight run of non-recursive tensors as one compiled graph."""
        run = self.run
        keeps = segment.keeps

        def body(inner: Run, extra: dict) -> dict:
            for group in segment.groups:
                inner.one(group)
            return {name: inner.values[name] for name in keeps}

        graph = self.graph(key, body)
        bases = run.bases_of([list(group.names) for group in segment.groups])
        run.values.update(graph({n: run.values[n] for n in segment.reads
                                 if n in run.values}, {"bases": bases}))
        self.recheck_ids(segment)

    def recheck_ids(self, segment: Segment) -> None:
        """A graph cannot stop on values: a `gather` or `cross_entropy` traced there
        reads NaN where an id is no position of its axis (jax; the eager run and NumPy
        stop with a message naming the id).  Where such a tensor came out with a value
        that is not finite, its groups run again eagerly: bad ids stop the run as the
        reference does; good ones (a NaN of the data) give the same values."""
        run = self.run
        names = [name for name in _reading_ids(run, [n for g in segment.groups for n in g.names])
                 if name in run.values]
        if not names:
            return
        backend = run.backend
        finite = [backend.concrete(backend.finite(run.values[name]).all()) for name in names]
        if any(flag is None for flag in finite) or all(bool(flag) for flag in finite):
            return  # (traced itself, as inside a gradient: the training step checks)
        for group in segment.groups:
            run.one(group)

    def graph(self, key: tuple, body: Callable[[Run, dict], Any]) -> Callable:
        """`body(run, extra)` compiled by the backend, once per shape signature.
        Whatever comes from outside the program text is an argument of the graph
        (`extra["bases"]`); the graph's own run reads only its arguments."""
        run = self.run
        graph = run.caches.graphs.get(key)
        if graph is not None:
            return graph
        settings, plan, caches, given = run.settings, run.plan, run.caches, run.given
        unrolled = run.unrolled

        def traced(values: dict, extra: dict) -> Any:
            inner = type(run)(settings, plan, caches, given, False, unrolled=unrolled)
            inner.values = dict(values)
            inner.bases = extra["bases"]
            return body(inner, extra)

        def count() -> None:
            settings.counters.compilations += 1

        artifact = self.artifact(key)
        if artifact is None:
            graph = run.backend.compile_segment(traced, count)
        else:
            graph = run.backend.compile_segment(traced, count, artifact=artifact)
        caches.graphs[key] = graph
        return graph

    def artifact(self, key: tuple) -> Path | None:
        """Where a graph is kept for later processes (cache_dir on a backend that
        stores its graphs: jax), named by the program's cache key and the graph's
        place in the run; None: not kept (no cache_dir, a mesh, another backend)."""
        run = self.run
        root = run.settings.cache_root
        program_key = run.caches.cache_key
        if root is None or program_key is None or run.place is not None \
                or not run.plan.abilities.exports_segments:
            return None
        return root / EXPORT_FOLDER / f"{program_key}-{'-'.join(map(str, key))}"

    def loop(self, key: tuple, group: list[str]) -> None:
        """A fixpoint as one compiled graph with the loop inside it (a framework
        while-loop: no round trip to Python between rounds)."""
        run = self.run
        bases = run.bases_of([group])
        with run.locating(group):
            for name in group:
                run.shape(name)  # an unknown extent is reported here, located

        def looped(inner: Run, extra: dict) -> tuple[dict, dict]:
            with inner.locating(group):
                rounds = inner.rounds_of(group, True, {n: inner.base(n)[0] for n in group})
                state = inner.backend.while_loop(rounds.goes_on, rounds.round, rounds.start())
                return rounds.end(state)

        members, outcome = self.graph(key, looped)(dict(run.values), {"bases": bases})
        self.finish(run.rounds_of(group, True, bases), members, outcome)

    def steps(self, key: tuple, group: Any) -> None:
        """A recurrence over a virtual index as one graph with the steps' loop
        inside it (jax's scan), not a graph call per operation of every step; where
        an equation needs the step as a number (the graph cannot be made), the
        steps run one by one, as in an eager run, from then on."""
        run = self.run
        names = list(group.names)
        if run.caches.graphs.get(("eager",) + key):
            return run.one(group)
        bases = run.bases_of([names])
        recurrence = group.recurrence

        def looped(inner: Run, extra: dict) -> dict:
            with inner.locating(names):
                return virtual_in_graph(inner, recurrence)

        try:
            values = self.graph(key, looped)(dict(run.values), {"bases": bases})
        except Exception:  # noqa: BLE001 - the eager steps say what is wrong, if anything
            run.caches.graphs.pop(key, None)
            run.caches.graphs[("eager",) + key] = True
            return run.one(group)
        run.values.update(values)

    def rounds(self, key: tuple, group: list[str]) -> None:
        """A fixpoint on a backend that compiles graphs but not loops (torch): one
        round is the compiled graph, the loop runs here and reads one flag a round."""
        run = self.run
        bases = run.bases_of([group])
        with run.locating(group):
            rounds = run.rounds_of(group, True, bases)
            state = rounds.start()
        outside = {n: v for n, v in run.values.items() if n not in group}

        def one_round(inner: Run, extra: dict) -> tuple:
            planned = inner.rounds_of(group, True, {n: inner.base(n)[0] for n in group})
            return planned.round(extra["state"])

        graph = self.graph(key, one_round)
        with run.locating(group):
            state = repeat(lambda st: bool(rounds.goes_on(st)),
                           lambda st: graph(outside, {"bases": bases, "state": st}), state,
                           run.check.next_round if run.check is not None else None)
        self.finish(rounds, *rounds.end(state))

    def finish(self, rounds: Iteration, members: dict, outcome: dict) -> None:
        run = self.run
        with run.locating(rounds.group):
            rounds.judge({k: float(v) for k, v in outcome.items()})
        run.took(rounds.group, outcome)
        run.values.update(members)
        if run.place is not None:
            run.placed(rounds.group)


IDS_READERS = frozenset({"gather", "cross_entropy"})


def _reading_ids(run: Run, names: list[str]) -> list[str]:
    """Those of `names` whose equations call a builtin that reads ids."""
    found = []
    statements = run.statements
    for name in names:
        info = run.analysis.tensors.get(name)
        for number in (info.statements if info is not None else ()):
            rhs = getattr(statements[number], "rhs", None)
            if rhs is not None and any(type(node) is ir.Call and node.name in IDS_READERS
                                       for node in ir.walk(rhs)):
                found.append(name)
                break
    return found
