"""Recurrences: a recursive group that a run computes in order, one pass per step,
never to a fixpoint (docs/language.md, "Recurrences over layers and time").

`recurrence_of_group` is the one reading of a group as a recurrence: the checker's
`recursion` diagnostic says what it finds, the run plan (run/run_plan.py) runs
it, `fuse explain` prints it and `fuse export` unrolls it.  A group is a
recurrence

- over a **virtual index** when every equation of every member writes one `*t`:
  the members written at `*t+1` are the *states*, carried from one step to the
  next; the others are computed at each step from the current states (a layer's
  intermediate tensors).  A state's equations that write `*t` are its *start*,
  read once before the first step (with the state's source or input), never
  added at a step;
- over an **offset index** when its members read each other one step back along
  an index their left-hand sides write (`Z[l,d] = f(W[l,d,e] Z[l-1,e])`), and
  at the same step only in an order without a circle (`H[l] = ... Z[l-1]`,
  `Z[l] = f(H[l])`).  An equation that writes a constant position there
  (`Z[0,d] = X0[d]`) adds to what the equations over the index give at that
  position, as the equations of one tensor always add (LANGUAGE.md §6).

Plain IR only (statements and each member's equations), so that the checker,
which has no analysis yet, and the run read a group the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from ..front import ir

if TYPE_CHECKING:
    from .analysis import Analysis

Equations = Mapping[str, Sequence[int]]  # each member -> its equations' statement numbers
# each member's reads of members: (member, statement number, its equation, the reference)
MemberReads = list[tuple[str, int, ir.Equation, ir.Ref]]


@dataclass(frozen=True)
class Recurrence:
    """How a recurrence's group is computed, step by step."""

    index: str  # the step index, as the first equation that steps names it
    virtual: bool
    order: tuple[str, ...]  # the members in the order of one step (virtual: the states last)
    positions: Mapping[str, int]  # each member's LHS position of the step index
    step_vars: Mapping[int, str]  # each equation run at every step: its name of the index
    starts: Mapping[int, int | None]  # start equations: the position they give (virtual: None)
    states: tuple[str, ...]  # virtual: the members carried to the next step (`*t+1`)
    offset: int = -1  # offset: the first read one step back (`l-1`)

    def describe(self) -> str:
        """How it runs, in the words of `fuse check` and `fuse explain`."""
        index = self.index
        order = f" ({', then '.join(f'`{n}`' for n in self.order)})" \
            if len(self.order) > 1 else ""
        if self.virtual:
            return (f"a recurrence over the virtual index `{index}`, in order: one pass per "
                    f"step{order}, the state{'s' if len(self.states) > 1 else ''} "
                    f"{_names(self.states)} carried to the next step")
        return (f"a recurrence over `{index}` (offset {self.offset}), computed in order of "
                f"`{index}`: one pass per position{order}")


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def stored_positions(ref: ir.Ref) -> list[int]:
    """The positions of a tensor's axes that hold data: all but the virtual ones
    (a virtual axis is iterated, not stored; a source or an input has the others)."""
    return [pos for pos, index in enumerate(ref.indices or ())
            if type(index) is not ir.IndexVirtual]


# The statements last asked about and the answer for each group of them: the checker
# reads a group twice (its `recursion` note, its run refusals) and `fuse explain`
# twice more (the run plan, the execution plan), 11,000 groups on a long program.
_answers: tuple[Sequence[ir.Statement] | None, dict] = (None, {})


def recurrence_of_group(statements: Sequence[ir.Statement],
                        equations: Equations) -> Recurrence | None:
    """The group of `equations`' members as a recurrence, or None: it runs to a
    fixpoint (see the module).  A pure function of the two, so the answers for one
    tuple of statements (the latest asked about) are kept."""
    global _answers
    if type(statements) is not tuple:  # (a sequence that might change: not kept)
        return _recurrence(statements, equations)
    key = tuple([(name, tuple(ks)) for name, ks in equations.items()])
    kept, answers = _answers
    if kept is not statements:  # (a new program: the last one's answers let go)
        answers = {}
        _answers = (statements, answers)
    found = answers.get(key, answers)  # (the dict itself: not known yet)
    if found is answers:
        found = answers[key] = _recurrence(statements, equations)
    return found


def _recurrence(statements: Sequence[ir.Statement], equations: Equations
                ) -> Recurrence | None:
    if any(_virtual_of(statements[k]) is not None for ks in equations.values() for k in ks):
        return _virtual_recurrence(statements, equations)
    return _offset_recurrence(statements, equations)


def group_recurrence(analysis: "Analysis", group: Sequence[str]) -> Recurrence | None:
    """A group of the analysis' evaluation order as a recurrence (None: a tensor
    that is not recursive, or a group run to a fixpoint)."""
    if len(group) == 1 and group[0] not in analysis.recursive:
        return None
    statements = analysis.program.statements
    return recurrence_of_group(statements, {
        n: [k for k in analysis.tensors[n].statements if type(statements[k]) is ir.Equation]
        for n in group})


def _virtual_of(stmt: ir.Statement) -> tuple[int, ir.IndexVirtual] | None:
    assert isinstance(stmt, ir.Equation)
    for pos, index in enumerate(stmt.lhs.indices or ()):
        if type(index) is ir.IndexVirtual:
            return pos, index
    return None


def _step_var(stmt: ir.Statement) -> str:
    """The name of the virtual index an equation writes (`t` of `*t+1`)."""
    found = _virtual_of(stmt)
    return ir.index_vars(found[1])[0].name if found is not None else ""


def mentions(stmt: ir.Equation, var: str) -> bool:
    """Whether the right-hand side reads the step `var`: in an index (`W[t,i]`), or
    its value (`+ t`); a virtual index (`Y[i,*t]`) reads a tensor's last value."""
    for ref in ir.refs(stmt.rhs):
        if ref.indices is None:
            if ref.name == var:
                return True
        elif any(v.name == var for index in ref.indices if type(index) is not ir.IndexVirtual
                 for v in ir.index_vars(index)):
            return True
    return False


def bad_starts(statements: Sequence[ir.Statement], equations: Equations,
               recurrence: Recurrence) -> list[int]:
    """A virtual recurrence's start equations that read the step: a member, or the
    step index itself (`X[i,*t] = X[i,*t] + t`); the checker refuses them
    (`virtual-step`, check.runnable)."""
    out = []
    for k in recurrence.starts:
        stmt = statements[k]
        assert isinstance(stmt, ir.Equation)
        if mentions(stmt, _step_var(stmt)) or any(r.name in equations for r in ir.refs(stmt.rhs)):
            out.append(k)
    return out


def _virtual_recurrence(statements: Sequence[ir.Statement],
                        equations: Equations) -> Recurrence | None:
    positions: dict[str, int] = {}
    step_vars: dict[int, str] = {}
    starts: dict[int, int | None] = {}
    states: list[str] = []
    index = ""
    for name, ks in equations.items():
        for k in ks:
            found = _virtual_of(statements[k])
            if found is None or positions.setdefault(name, found[0]) != found[0]:
                return None  # a member without a virtual axis, or with it elsewhere
            shift = ir.virtual_shift(found[1])
            if shift < 0:
                return None
            if shift > 0:  # `X[i,*t+1] = ...`: the next step of a state
                step_vars[k] = _step_var(statements[k])
                index = index or step_vars[k]
                if name not in states:
                    states.append(name)
    if not states:
        return None
    for name, ks in equations.items():
        for k in ks:
            if k in step_vars:
                continue
            if name in states:
                starts[k] = None  # `X[i,*t] = X0[i]`: the state before the first step
            else:
                step_vars[k] = _step_var(statements[k])
    per_step = [n for n in equations if n not in states]
    per_step_equations = {n: equations[n] for n in per_step}
    ordered = _step_order(per_step_equations, _member_reads(statements, per_step_equations),
                          None)
    if ordered is None:
        return None
    return Recurrence(index, True, tuple(ordered + states), positions, step_vars, starts,
                      tuple(states))


def _offset_recurrence(statements: Sequence[ir.Statement],
                       equations: Equations) -> Recurrence | None:
    reads = _member_reads(statements, equations)  # (read three times below: made once)
    found = _positions(equations, reads)
    if found is None:
        return None
    positions, index, offset = found
    step_vars: dict[int, str] = {}
    starts: dict[int, int | None] = {}
    for name, ks in equations.items():
        for k in ks:
            stmt = statements[k]
            assert isinstance(stmt, ir.Equation)
            lhs = stmt.lhs.indices or ()
            at = lhs[positions[name]] if positions[name] < len(lhs) else None
            if type(at) is ir.IndexVar:
                step_vars[k] = at.name
            elif type(at) is ir.IndexConst and type(at.value) is int:
                starts[k] = at.value
            else:
                return None  # writes elsewhere: `recurrence-write` (check.runnable)
            if not _reads_in_order(stmt, equations, positions, step_vars.get(k),
                                   starts.get(k)):
                return None
    ordered = _step_order(equations, reads, (positions, step_vars))
    if ordered is None:
        return None
    return Recurrence(index, False, tuple(ordered), positions, step_vars, starts,
                      tuple(ordered), offset)


def _positions(equations: Equations, reads: MemberReads
               ) -> tuple[dict[str, int], str, int] | None:
    """Each member's position of the step index, from a read one step back
    (`Z[l-1,e]` in `Z[l,d]`'s or `H[l,d]`'s equation) and spread along the reads
    of members by the same index; None when a member has none."""
    positions: dict[str, int] = {}
    index, offset = "", 0
    for name, _, stmt, ref in reads:
        for p, at in enumerate(ref.indices or ()):
            if type(at) is ir.IndexShift and len(at.terms) == 1 and at.offset < 0:
                q = _lhs_position(stmt, at.terms[0].name)
                if q is not None:
                    positions.update({ref.name: p, name: q})
                    index, offset = at.terms[0].name, at.offset
                    break
        if index:
            break
    if not index:
        return None
    changed = True
    while changed:  # spread: a read by the step index ties the reader and the read
        changed = False
        for name, _, stmt, ref in reads:
            mine = positions.get(name)
            var = _lhs_var(stmt, mine) if mine is not None else None
            for p, at in enumerate(ref.indices or ()):
                name_at = _step_name(at)
                if name_at is None:
                    continue
                if var is not None and name_at == var and ref.name not in positions:
                    positions[ref.name] = p
                    changed = True
                elif mine is None and positions.get(ref.name) == p:
                    q = _lhs_position(stmt, name_at)
                    if q is not None:
                        positions[name] = q
                        changed = True
                        break
    if len(positions) < len(equations):
        return None
    return positions, index, offset


def _member_reads(statements: Sequence[ir.Statement], equations: Equations) -> MemberReads:
    """Each member's reads of members: (member, statement number, its equation, the
    reference), in the members' and their equations' order."""
    out = []
    for name, ks in equations.items():
        for k in ks:
            stmt = statements[k]
            assert isinstance(stmt, ir.Equation)
            for ref in ir.statement_refs((stmt.rhs,)):
                if ref.name in equations:
                    out.append((name, k, stmt, ref))
    return out


def _step_name(index: ir.Index) -> str | None:
    """`l` of `l` or `l-1` (a read at the step or one before it)."""
    if type(index) is ir.IndexVar:
        return index.name
    if type(index) is ir.IndexShift and len(index.terms) == 1 and index.offset < 0:
        return index.terms[0].name
    return None


def _lhs_position(stmt: ir.Equation, var: str) -> int | None:
    for q, at in enumerate(stmt.lhs.indices or ()):
        if type(at) is ir.IndexVar and at.name == var:
            return q
    return None


def _lhs_var(stmt: ir.Equation, position: int) -> str | None:
    lhs = stmt.lhs.indices or ()
    at = lhs[position] if position < len(lhs) else None
    return at.name if type(at) is ir.IndexVar else None


def _reads_in_order(stmt: ir.Equation, equations: Equations, positions: Mapping[str, int],
                    var: str | None, start: int | None) -> bool:
    """Whether the equation reads the members at the step (`var`) or before it, or,
    a start at position `start`, at constant positions before it."""
    for ref in ir.refs(stmt.rhs):
        if ref.name not in equations:
            continue
        indices = ref.indices or ()
        at = indices[positions[ref.name]] if positions[ref.name] < len(indices) else None
        if var is not None:
            if _step_name(at) != var:
                return False
        elif not (type(at) is ir.IndexConst and type(at.value) is int
                  and start is not None and at.value < start):
            return False
    return True


def _step_order(equations: Equations, member_reads: MemberReads,
                offset: tuple[Mapping[str, int], Mapping[int, str]] | None) -> list[str] | None:
    """The members in an order where each comes after those it reads at the same
    step (virtual: any read of a member here; offset: a read at the step index
    itself); None when those reads go round in a circle."""
    reads: dict[str, set[str]] = {name: set() for name in equations}
    for name, k, _, ref in member_reads:
        if offset is None:
            reads[name].add(ref.name)
            continue
        positions, step_vars = offset
        var = step_vars.get(k)
        at = (ref.indices or ())[positions[ref.name]]
        if var is not None and type(at) is ir.IndexVar and at.name == var:
            reads[name].add(ref.name)
    ordered: list[str] = []
    while len(ordered) < len(reads):
        ready = [n for n in reads if n not in ordered and reads[n] <= set(ordered)]
        if not ready:
            return None
        ordered += ready
    return ordered
