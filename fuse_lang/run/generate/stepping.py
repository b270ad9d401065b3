"""The generation program run on a window of token ids (docs/generation.md).

`Window` runs it whole: the ids in the first positions of the window, the rest 0,
and the logits read at the last filled position: every token costs the whole
window.  `HeldWindow` runs it whole once (every value kept) and then, for each
new token, only the new position: each tensor that depends on the ids and has
the sequence axis is computed at that one row, the equation's index of that
axis fixed to the position (`Execution.contribution(k, row, {p: t})`, the way a
recurrence computes a row), and the row written into the tensor kept; factors
read along another index of that axis (the keys and values `K1[n,h,p',k]` of
attention) read the kept tensors whole.  Tensors that do not depend on the ids
(the weights, masks) are never computed again; a tensor that depends on them
without a row to write (no sequence axis, a recursion) is computed whole.  A row
at one position is its value only when no earlier position reads a later one
(the program is causal along the sequence): `causal_break` checks that."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...check import INPUT_KINDS
from ...check.generation import BATCH, SEQUENCE, GenerationRoles
from ...front import ir
from ..run_plan import EQUATION, TENSOR, GroupPlan

CompiledProgram = Any  # run.program.CompiledProgram (which imports this package)


class Window:
    """The generation program run on whole windows of ids."""

    def __init__(self, program: CompiledProgram, roles: GenerationRoles, window: int) -> None:
        self.program = program
        self.roles = roles
        self.window = window
        rank = len([a for a in program.analysis.tensors[roles.tokens].axes if not a.virtual])
        self.shape = roles.token_shape(rank, window)

    def ids(self, context: Sequence[int], padding: Sequence[int] | None = None) -> np.ndarray:
        """The token input: `context` in the first positions, then `padding` (0s)."""
        row = np.zeros(self.window, dtype=np.int64)
        if padding is not None:
            row[:] = np.asarray(padding, dtype=np.int64)[:self.window]
        row[:len(context)] = np.asarray(context, dtype=np.int64)
        return row.reshape(self.shape)

    def logits(self, context: Sequence[int]) -> np.ndarray:
        """The next token's logits after `context` (at most a window), run whole."""
        result = self.program.execute({self.roles.tokens: self.ids(context)},
                                      write_sinks=False, native=True)
        return self.row(result.outputs[self.roles.logits], len(context) - 1)

    def row(self, value: Any, position: int) -> np.ndarray:
        """The logits tensor's row at `position` (float64; a log for probabilities)."""
        array = self.program.backend.to_numpy(value)
        where = tuple(0 if role == BATCH else position if role == SEQUENCE else slice(None)
                      for role in self.roles.roles)
        row = np.asarray(array[where], dtype=np.float64)
        if self.roles.probabilities:
            with np.errstate(divide="ignore"):
                row = np.log(row)
        return row


@dataclass(frozen=True)
class RowPlan:
    """How one tensor is computed at one position: its axis along the sequence,
    each equation's index there, and the row's shape."""

    name: str
    axis: int
    indices: tuple[tuple[int, str], ...]  # (equation, its index at `axis`)
    row_shape: tuple[int, ...]


class HeldWindow(Window):
    """The window run whole once, then one position at a time over what it kept."""

    def __init__(self, program: CompiledProgram, roles: GenerationRoles, window: int) -> None:
        super().__init__(program, roles, window)
        self.run: Any = None  # the Execution whose values are kept
        self.filled = 0  # positions computed
        self.steps: list[tuple[GroupPlan, RowPlan | None]] | None = None

    def prefill(self, context: Sequence[int], padding: Sequence[int] | None = None
                ) -> np.ndarray:
        """Every value of the window holding `context`; the logits after it."""
        run = self.program.held_run({self.roles.tokens: self.ids(context, padding)})
        backend = self.program.backend
        with backend.context():
            values = run.every_value()
            if self.steps is None:
                self.steps = _row_plans(run, self.roles)
            for _, plan in self.steps:  # written in place from now on: their own copies
                if plan is not None:
                    values[plan.name] = backend.copy(values[plan.name])
            values[self.roles.tokens] = backend.copy(values[self.roles.tokens])
        self.run, self.filled = run, len(context)
        return self.row(values[self.roles.logits], len(context) - 1)

    def step(self, token: int) -> np.ndarray:
        """The token put at the next position and that position computed; the
        logits after it."""
        run, position = self.run, self.filled
        assert run is not None and self.steps is not None and position < self.window
        backend = self.program.backend
        values = run.values
        with backend.context():
            values[self.roles.tokens] = _put(backend, values[self.roles.tokens],
                                             backend.asarray(np.asarray(float(token))),
                                             self.roles.sequence, position)
            for group, plan in self.steps:
                if plan is None:
                    run.one(group)
                    continue
                parts = [run.contribution(k, plan.row_shape, {index: position}, skip=plan.axis)
                         for k, index in plan.indices]
                row = run.combine(plan.name, None, parts, row=True)
                values[plan.name] = _put(backend, values[plan.name], row, plan.axis, position)
        self.filled = position + 1
        return self.row(values[self.roles.logits], position)

    def causal_break(self, context: Sequence[int], vocabulary: int) -> str | None:
        """Whether the rows of the positions of `context` change when the positions
        after it hold other ids: None if none does (causal), else which tensor's.
        Compares this window's kept values with a second run's."""
        assert self.run is not None and self.steps is not None
        kept = self.run.values
        other = (np.arange(self.window) * 7 + 1) % max(vocabulary, 1)
        run = self.program.held_run({self.roles.tokens: self.ids(context, other)})
        backend = self.program.backend
        with backend.context():
            values = run.every_value()
        names = [p.name for _, p in self.steps if p is not None]
        for name in [*names, self.roles.logits]:
            axis = next((p.axis for _, p in self.steps if p is not None and p.name == name),
                        self.roles.roles.index(SEQUENCE))
            rows = np.arange(len(context))
            a = np.take(backend.to_numpy(kept[name]), rows, axis=axis)
            b = np.take(backend.to_numpy(values[name]), rows, axis=axis)
            if not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
                return (f"`{name}` at the first {len(context)} positions changes with the ids "
                        f"after them: the program is not causal along its sequence")
        return None


def _put(backend: Any, array: Any, row: Any, axis: int, position: int) -> Any:
    """`array` with its row `position` along `axis` set to `row` (in place but on jax)."""
    where = (slice(None),) * axis + (position,)
    if backend.name == "jax":
        return array.at[where].set(row)
    array[where] = row
    return array


def _row_plans(run: Any, roles: GenerationRoles) -> list[tuple[GroupPlan, RowPlan | None]]:
    """The groups that depend on the token input, in the run's order, each with how
    it is computed at one position (None: whole)."""
    analysis = run.analysis
    statements = analysis.program.statements
    sequence = [a for a in analysis.tensors[roles.tokens].axes if not a.virtual][
        roles.sequence].domain
    depends = {roles.tokens}
    out: list[tuple[GroupPlan, RowPlan | None]] = []
    for group in run.plan.schedule(True).groups:
        reads = {r.name for n in group.names for k in run.plan.equations.get(n, ())
                 for expr in ir.used_exprs(statements[k]) for r in ir.refs(expr)}
        if not reads & depends or roles.tokens in group.names:
            continue
        depends.update(group.names)
        out.append((group, _row_plan(run, group, sequence)))
    return out


def _row_plan(run: Any, group: GroupPlan, sequence: int) -> RowPlan | None:
    """How `group` is computed at one position of the sequence, or None (whole): a
    single computed tensor, and in each of its equations a plain variable at its
    first axis along the sequence."""
    if group.how not in (EQUATION, TENSOR) or len(group.names) != 1:
        return None
    name = group.names[0]
    info = run.analysis.tensors[name]
    if info.kind in INPUT_KINDS or any(a.virtual for a in info.axes) \
            or name in run.sparse_names():
        return None
    axis = next((k for k, a in enumerate(info.axes) if a.domain == sequence), None)
    if axis is None:
        return None
    indices = []
    for k in run.equations(name):
        lhs = run.analysis.program.statements[k].lhs.indices or ()
        index = lhs[axis] if axis < len(lhs) else None
        if not isinstance(index, ir.IndexVar) or sum(
                1 for i in lhs for v in ir.index_vars(i) if v.name == index.name) != 1:
            return None
        indices.append((k, index.name))
    shape = run.shape(name)
    return RowPlan(name, axis, tuple(indices), shape[:axis] + shape[axis + 1:])
