"""What `fuse explain` shows of a program that can run: the very `RunPlan` its run
executes (run.run_plan), rendered.

`explain_program(program)` takes a compiled program's plan for a run without
inputs (`CompiledProgram.run_plan()`, made once and kept) and returns it with
the planner's part that `plan.render` prints; `run_plan_lines` and
`run_plan_json` say what the run decided beyond the contractions: how each
group is computed, what stays sparse, what the run needs in memory.  A
program with errors has no RunPlan: `fuse explain` prints the planner's plan of
its analysis alone (plan.planner), as before.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from ..check.kinds import TensorKind
from ..front import ir
from ..front.let_blocks import marked_name
from ..front.numbers import format_bytes
from ..plan.planner import ProgramPlan
from ..run.program import CompiledProgram
from ..run.run_plan import (
    CLOSURE,
    EQUATION,
    FIXPOINT,
    NAIVE,
    RECURRENCE,
    SEMI_NAIVE,
    MemoryEstimate,
    RunPlan,
)
from ..speed.gc_pause import gc_paused

STRATEGIES = {SEMI_NAIVE: "semi-naive rounds", NAIVE: "naive rounds",
              CLOSURE: "semi-naive rounds, then one graph search (a linear closure)"}


@dataclass(frozen=True, repr=False)
class Explained:
    """The plan a run executes (`fuse_lang.explain(program)`): as text it is what
    `fuse explain` prints; a notebook shows it as Markdown (the planner's tables)
    or preformatted HTML."""
    run_plan: RunPlan  # what a run executes
    plan: ProgramPlan  # its contractions: what plan.render prints

    def text(self) -> str:
        """`fuse explain`'s text: the planner's tables, then the run's decisions."""
        from ..plan.render import render_plan_text

        return render_plan_text(self.plan) + "\n\n" + "\n".join(run_plan_lines(self.run_plan))

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:  # a notebook's plain text: the text, not the dataclass
        return self.text()

    def _repr_markdown_(self) -> str:
        from ..plan.render import render_plan_markdown

        return render_plan_markdown(self.plan) + "\n\n```\n" + \
            "\n".join(run_plan_lines(self.run_plan)) + "\n```\n"

    def _repr_html_(self) -> str:
        return f'<pre class="fuse-explain">{html.escape(self.text())}</pre>'


@gc_paused()  # (as analyze and compile: the plan of a long program is a large graph)
def explain_program(program: CompiledProgram) -> Explained:
    """The plan a run of `program` without inputs executes, to be printed."""
    run_plan = program.run_plan()
    return Explained(run_plan, run_plan.contractions)


def _how(group_how: str, strategy: str | None, recurrence: tuple | None,
         equations: int, made: tuple[int, bool] = (0, False)) -> str:
    """How a group is computed; `made`: its first tensor's facts, whether it is a
    param (_made_of)."""
    if group_how == EQUATION:
        return "its one equation"
    if group_how == RECURRENCE and recurrence is not None:
        return recurrence.describe()
    if group_how == FIXPOINT:
        return "to a fixpoint, " + STRATEGIES.get(strategy or "", "")
    facts, param = made
    if not equations:
        if param:
            return "a param: its initial value, or the value a run is given"
        return "read (its facts, source file or input)"
    what = "its one equation" if equations == 1 else f"its {equations} equations"
    if facts:
        return f"{what} and its {'fact' if facts == 1 else 'facts'}, combined"
    return what + ("" if equations == 1 else " combined")


def _made_of(run_plan: RunPlan, name: str) -> tuple[int, bool]:
    """Tensor `name`'s facts (how many), and whether it is a param."""
    info = run_plan.analysis.tensors.get(name)
    if info is None:
        return 0, False
    statements = run_plan.analysis.program.statements
    facts = sum(isinstance(statements[k], ir.Fact) for k in info.statements)
    return facts, info.kind == TensorKind.PARAM


def run_plan_lines(run_plan: RunPlan) -> list[str]:
    """The run's own decisions, as `fuse explain` prints them under the plan."""
    schedule = run_plan.schedule(True)
    abilities = run_plan.abilities
    lines = [f"run plan ({abilities.backend}{', compiled' if abilities.compiled else ''}):"]
    for number, group in enumerate(schedule.groups, 1):
        names = ", ".join(map(marked_name, group.names))
        first = group.names[0]
        how = _how(group.how, group.strategy, group.recurrence,
                   len(run_plan.equations[first]), _made_of(run_plan, first))
        lines.append(f"  {number}. {names}: {how}")
    if run_plan.sparse:
        lines.append(f"  kept sparse: {', '.join(map(marked_name, sorted(run_plan.sparse)))}")
    memory = schedule.memory
    peak = f", plus {format_bytes(memory.peak[0])} while computing " \
        f"{marked_name(memory.peak[1])}" if memory.peak[0] else ""
    unknown = sorted(n for n in schedule.needed if run_plan.known_shapes.get(n, ()) is None)
    about = f"at least {format_bytes(memory.total)} for its tensors (not counting " \
        f"{', '.join(map(marked_name, unknown))}, whose extents only the run knows)" if unknown \
        else f"about {format_bytes(memory.total)} for its tensors"
    lines.append(f"  memory: {about}{peak}")
    lines.append("    " + _memory_split(run_plan.contractions.parameters, memory))
    return lines


def _memory_split(parameters: int | None, memory: MemoryEstimate) -> str:
    """`params: 12,345 (48.2 kB); other inputs: 1.1 kB; activations: 1.1 MB`: the
    memory line's tensors by role, with the number of learnable scalars."""
    if parameters == 0:
        params = "params: none"
    else:
        if parameters is None:  # an extent only the run knows: no byte count to give
            params = "params: ? (? B)"
        else:
            params = f"params: {parameters:,} ({format_bytes(memory.params)})"
    return (f"{params}; other inputs: {format_bytes(memory.inputs)}; "
            f"activations: {format_bytes(memory.activations)}")


def run_plan_json(run_plan: RunPlan) -> dict:
    """The same as plain data (`fuse explain --format json`'s "run")."""
    return run_plan.to_json()
