"""A recurrence's group computed in order: one pass per step, never to a fixpoint
(check/recurrences.py reads the group; docs/language.md says what runs).

Over a virtual index the states start from their sources, inputs and start
equations (`X[i,*t] = X0[i]`); at each step the tensors computed at the step
are evaluated in order from the current states, then every state's next value
from its `*t+1` equations; the last states are the values.  Over an offset
index each member is written position by position: at each position, the
members in order, each the sum of the equations that give that position (a
start, `Z[0,d] = X0[d]`) and its equations over the index (LANGUAGE.md §6).  Plain backend
arithmetic throughout, so a compiled graph or an export unrolls the steps
(torch and jax put rows in with `where`, so that gradients flow; NumPy writes
them in place).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..check.recurrences import Recurrence
from .interpret.evaluate import EvaluationError
from .interpret.lhs import put_row
from .sparse.value import is_sparse

# the run.execution.Execution computing the group, named by its use only: that
# module imports this one (no import circle)
Run = Any


def run_recurrence(run: Run, recurrence: Recurrence) -> int:
    """Compute the recurrence's members into `run.values`; the number of steps."""
    steps = _steps(run, recurrence)
    if recurrence.virtual:
        _virtual(run, recurrence, steps)
    else:
        _offset(run, recurrence, steps)
    return steps


def _steps(run: Run, recurrence: Recurrence) -> int:
    """The extent of the step index, as an equation that steps knows it."""
    for k, var in recurrence.step_vars.items():
        extent = run.infos[k].extents.get(var)
        if extent is not None:
            return int(extent)
    raise EvaluationError(f"the number of steps (the extent of `{recurrence.index}`) is not "
                          f"known")


def _next_step(run: Run, step: int) -> None:
    if run.check is not None:
        run.check.next_round()
    if run.tracer is not None:
        run.tracer.step(step)


def _virtual(run: Run, recurrence: Recurrence, steps: int) -> None:
    states = recurrence.states
    per_step = [n for n in recurrence.order if n not in states]
    by_member = {n: run.equations(n) for n in recurrence.order}
    current = {}
    for name in states:  # the start: source or input, and the start equations
        base, _ = run.base(name)
        starts = [k for k in by_member[name] if k in recurrence.starts]
        parts = [run.contribution(k, run.shape(name)) for k in starts]
        current[name] = run.combine(name, base, parts, equations=starts)
    for name in per_step:
        run.values[name] = run.zeros_of(name)  # (no step: nothing computed)
    for step in range(steps):
        _next_step(run, step)
        run.values.update(current)
        for name in per_step:
            base, _ = run.base(name)
            run.values[name] = run.combine(name, base, _at_step(run, recurrence, name, step))
        current = {name: run.combine(name, None, _at_step(run, recurrence, name, step))
                   for name in states}
    run.values.update(current)


def virtual_in_graph(run: Run, recurrence: Recurrence) -> dict[str, Any]:
    """The steps over a virtual index as one loop of the backend's (inside a
    compiled graph: jax's scan), the step a traced value; the members' last values.
    Raises where an equation needs the step as a number (the caller then runs the
    steps here, one by one)."""
    steps = _steps(run, recurrence)
    states = recurrence.states
    per_step = [n for n in recurrence.order if n not in states]
    carry = {}
    for name in states:
        base, _ = run.base(name)
        starts = [k for k in run.equations(name) if k in recurrence.starts]
        parts = [run.contribution(k, run.shape(name)) for k in starts]
        carry[name] = run.combine(name, base, parts, equations=starts)
    for name in per_step:
        carry[name] = run.zeros_of(name)

    def one(current: dict, step: Any) -> dict:
        run.values.update({name: current[name] for name in states})
        for name in per_step:
            base, _ = run.base(name)
            run.values[name] = run.combine(name, base, _at_step(run, recurrence, name, step))
        new = {name: run.combine(name, None, _at_step(run, recurrence, name, step))
               for name in states}
        new.update({name: run.values[name] for name in per_step})
        return new

    return run.backend.step_loop(one, carry, steps)


def _at_step(run: Run, recurrence: Recurrence, name: str, step: int) -> list[Any]:
    shape = run.shape(name)
    return [run.contribution(k, shape, {recurrence.step_vars[k]: step})
            for k in run.equations(name) if k in recurrence.step_vars]


def _offset(run: Run, recurrence: Recurrence, steps: int) -> None:
    backend = run.backend
    functional = backend.name != "numpy"
    held: dict[str, Any] = {}  # each member's value so far
    bases: dict[str, Any] = {}  # its facts, source or input: added to each row
    for name in recurrence.order:
        base, _ = run.base(name)
        if base is not None:
            bases[name] = base = backend.asarray(base) if is_sparse(base) else base
        shape = run.shape(name)
        if shape[recurrence.positions[name]] != steps:
            raise EvaluationError(f"`{name}`'s axis of `{recurrence.index}` has "
                                  f"{shape[recurrence.positions[name]]} positions, not {steps}")
        if functional:
            held[name] = base if base is not None else backend.zeros(shape)
        else:
            held[name] = backend.to_numpy(base).astype(np.float64) if base is not None \
                else np.zeros(shape)
        run.values[name] = held[name] if functional else backend.asarray(held[name])
    for step in range(steps):
        _next_step(run, step)
        for name in recurrence.order:
            row = _row(run, recurrence, name, step, bases.get(name))
            if row is None:
                continue
            position = recurrence.positions[name]
            if functional:
                held[name] = put_row(backend, held[name], row, run.shape(name), position, step)
                run.values[name] = held[name]
            else:
                held[name][(slice(None),) * position + (step,)] = backend.to_numpy(row)
                run.values[name] = backend.asarray(held[name])


def _row(run: Run, recurrence: Recurrence, name: str, step: int, base: Any) -> Any:
    """`name`'s row at `step`: its base's row (facts, a source) and the equations
    that give that position, else its equations over the index; None when
    nothing applies (the row stays as it is)."""
    shape = run.shape(name)
    position = recurrence.positions[name]
    row_shape = shape[:position] + shape[position + 1:]
    equations = run.equations(name)
    # the equations that give this position (a start, `Z[0,d] = S[d]`) and those over
    # the index add, as every equation of one tensor does (LANGUAGE.md §6)
    parts = [run.contribution(k, row_shape, None, skip=position)
             for k in equations if recurrence.starts.get(k, -1) == step]
    parts += [run.contribution(k, row_shape, {recurrence.step_vars[k]: step}, skip=position)
              for k in equations if k in recurrence.step_vars]
    if not parts:
        return None
    base_row = run.backend.take(base, step, position) if base is not None else None
    return run.combine(name, base_row, parts, row=True)
