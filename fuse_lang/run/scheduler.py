"""What a run computes and in which order: pure functions of the analysis.

The evaluation order of the analysis (dependencies first) is kept to the
groups that the exports, queries and sinks need (backward chaining at the
level of tensors); each intermediate is released after its last reader; for
compiled runs the order is cut into straight segments and recursive groups.
All of it depends on shapes only, so a run derives it once per input-shape
signature (`Execution.memo`).
"""
from __future__ import annotations

from typing import Collection, Mapping

from ..check import INPUT_KINDS, Analysis, TensorKind
from ..check.recurrences import Recurrence, group_recurrence
from ..front import ir

# (the tensors of one group of the evaluation order, the statement of its
# single equation when it is exactly one equation, else None)
Group = tuple[list[str], "int | None"]


def dependencies(analysis: Analysis) -> dict[str, set[str]]:
    """Each tensor and the tensors its equations read."""
    deps: dict[str, set[str]] = {}
    tensors = analysis.tensors  # (read once: a deferred field's descriptor)
    Equation, refs = ir.Equation, ir.statement_refs  # (a loop: no generator per statement)
    for stmt in analysis.program.statements:
        if type(stmt) is Equation:
            deps.setdefault(stmt.lhs.name, set()).update(
                [r.name for r in refs((stmt.rhs,)) if r.name in tensors])
    return deps


def equations_of(analysis: Analysis, name: str) -> list[int]:
    statements = analysis.program.statements
    return [k for k in analysis.tensors[name].statements if isinstance(statements[k], ir.Equation)]


def equations_by_tensor(analysis: Analysis) -> dict[str, tuple[int, ...]]:
    """`equations_of` every tensor, at once (a call per tensor costs on a long program)."""
    statements = analysis.program.statements
    Equation = ir.Equation
    return {name: tuple([k for k in info.statements if type(statements[k]) is Equation])
            for name, info in analysis.tensors.items()}


def roots(analysis: Analysis, sinks: bool) -> list[str]:
    """What a run hands back: exports, queried tensors, and (with `sinks`) what
    the sinks read."""
    out: list[str] = list(analysis.exports)
    for stmt in analysis.program.statements:
        if isinstance(stmt, ir.Query):
            out.append(stmt.atom.name)
        elif isinstance(stmt, ir.Sink) and sinks:
            out.extend(r.name for r in ir.refs(stmt.rhs) if r.name in analysis.tensors)
    return out


def needed(analysis: Analysis, deps: Mapping[str, set[str]], write_sinks: bool) -> set[str]:
    """The tensors the roots read, directly or not (all of them when nothing is a root)."""
    wanted = roots(analysis, write_sinks)
    if not wanted:
        return set(analysis.tensors)
    out: set[str] = set()
    stack = [r for r in wanted if r in analysis.tensors]
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out.add(name)
        stack.extend(deps.get(name, ()))
    return out


def constants(analysis: Analysis, deps: Mapping[str, set[str]],
              given: Collection[str]) -> set[str]:
    """Tensors that depend on no input, source file or param: not recursive, not
    read from outside, and reading only such tensors."""
    out: set[str] = set()
    for group in analysis.order:
        for name in group:
            info = analysis.tensors[name]
            if (len(group) == 1 and name not in analysis.recursive and name not in given
                    and info.kind not in INPUT_KINDS
                    and all(d in out for d in deps.get(name, ()))):
                out.add(name)
    return out


def single_equation(analysis: Analysis, group: list[str], given: Collection[str],
                    equations: list[int]) -> int | None:
    """The statement of a tensor that is exactly one equation (nothing to combine)."""
    name = group[0]
    info = analysis.tensors[name]
    if (len(group) == 1 and name not in analysis.recursive and name not in given
            and info.kind == TensorKind.DENSE and not info.boolean and len(info.statements) == 1
            and len(equations) == 1):
        return equations[0]
    return None


def releases(groups: list[Group], deps: Mapping[str, set[str]],
             kept: Collection[str]) -> dict[int, list[str]]:
    """After which group each intermediate tensor is read for the last time
    (outputs, queried tensors, what sinks read and leaves are `kept`)."""
    last: dict[str, int] = {}
    for number, (group, _) in enumerate(groups):
        for name in group:
            for read in deps.get(name, ()):
                if read not in group:
                    last[read] = number
    out: dict[int, list[str]] = {}
    for name, number in last.items():
        if name not in kept:
            out.setdefault(number, []).append(name)
    return out


def segments(groups: list[Group], recursive: Collection[str]) -> list[tuple[bool, list[Group]]]:
    """The evaluation order cut into straight runs of non-recursive tensors (each
    compiled as one graph) and the recursive groups between them (loops)."""
    out: list[tuple[bool, list[Group]]] = []
    for group, single in groups:
        straight = len(group) == 1 and group[0] not in recursive
        if straight and out and out[-1][0]:
            out[-1][1].append((group, single))
        else:
            out.append((straight, [(group, single)]))
    return out


def readers_of(deps: Mapping[str, set[str]]) -> dict[str, list[str]]:
    """Each tensor that something reads, and the tensors whose equations read it."""
    out: dict[str, list[str]] = {}
    for name, reads in deps.items():
        for read in reads:
            found = out.get(read)
            if found is None:
                out[read] = [name]
            else:
                found.append(name)
    return out


def segment_io(names: list[str], deps: Mapping[str, set[str]], kept: Collection[str],
               computed: Collection[str], readers: Mapping[str, list[str]] | None = None
               ) -> tuple[list[str], list[str]]:
    """What a straight segment reads from earlier ones, and which of its tensors
    it hands back: every tensor its equations compute (`computed`: those with an
    equation, constants aside), and an input or source it only passes through,
    or a constant (a mask, say) that it folds in, when something after it reads
    that or the run returns it (`kept`).  Handing back the computed
    intermediates is measured to be faster on XLA's CPU backend
    (benchmarks/attention_backends.py): without them it fuses the projections,
    the scores and the softmax into one slow kernel; passing inputs through
    would only copy them.  `readers`: `readers_of(deps)`, where the caller asks
    for many segments (made here otherwise): each segment then looks only at
    its own tensors' readers, not at every tensor's reads (which made a program
    of thousands of segments cost their number times its size)."""
    inside = set(names)
    reads = sorted({d for n in names for d in deps.get(n, ()) if d not in inside})
    if readers is None:
        readers = readers_of(deps)
    keeps = []
    for n in names:
        found = readers.get(n)
        # (read by nothing at all, or by a tensor outside the segment)
        if n in computed or n in kept or found is None \
                or any(r not in inside for r in found):
            keeps.append(n)
    return reads, keeps


def recurrence(analysis: Analysis, group: list[str]) -> Recurrence | None:
    """The recursive group as a recurrence computed in order, one pass per step, or
    None (a fixpoint): the checker's own reading (check.recurrences), which its
    `recursion` diagnostic says."""
    return group_recurrence(analysis, group)
