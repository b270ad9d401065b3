"""Temperature schedules: `T = linear(1.0, 0.1, steps=10)` (docs/language.md).

A schedule is a scalar tensor whose only equation is a schedule call
(`linear`, `exponential`, `cosine`; a constant temperature is `const(x)`).
Its value at step s goes from `start` (s = 0) to `end` (s ≥ steps).  The step
is the program's run (`per=run`: the first run of a compiled program is step
0, the next step 1, ...) or the round of the fixpoint that reads it
(`per=iteration`, the default: round 0 first; outside a fixpoint it is step 0).

A run hands each schedule's value to the execution as a runtime input, so a
compiled graph takes it as an argument (never a constant baked into it) and no
memo keeps an old value; a fixpoint sets the per-iteration ones before each
round (run/fixpoint.py, `advance_schedules`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..check import Analysis
from ..front import ir
from ..front.builtins import SCHEDULE_BUILTINS


@dataclass(frozen=True)
class Schedule:
    kind: str  # linear | exponential | cosine
    start: float
    end: float
    steps: int
    per: str  # iteration | run

    def value(self, step: int) -> float:
        fraction = min(max(step, 0), self.steps) / self.steps
        if self.kind == "linear":
            return self.start + (self.end - self.start) * fraction
        if self.kind == "exponential":
            return self.start * (self.end / self.start) ** fraction
        return self.end + (self.start - self.end) * (1 + math.cos(math.pi * fraction)) / 2


def schedules_of(analysis: Analysis) -> dict[str, Schedule]:
    """The program's schedule tensors (the checker has made sure of their form)."""
    statements = analysis.program.statements
    out: dict[str, Schedule] = {}
    for name, info in analysis.tensors.items():
        if len(info.statements) != 1:
            continue
        stmt = statements[info.statements[0]]
        if not (isinstance(stmt, ir.Equation) and isinstance(stmt.rhs, ir.Call)
                and stmt.rhs.name in SCHEDULE_BUILTINS):
            continue
        call = stmt.rhs
        keywords = {kw.name: kw.value for kw in call.kwargs}
        steps, per = keywords.get("steps"), keywords.get("per")
        out[name] = Schedule(call.name, _number(call.args[0]), _number(call.args[1]),
                             int(steps.value) if isinstance(steps, ir.Number) else 1,
                             per.text if isinstance(per, ir.Number) else "iteration")
    return out


def _number(expr: ir.Expr) -> float:
    if isinstance(expr, ir.Neg):
        return -_number(expr.operand)
    return expr.value if isinstance(expr, ir.Number) else 0.0
