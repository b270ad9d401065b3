"""What a contraction's line leaves unsaid, as notes under it (`fuse explain`):
an operand read with fewer axes than its tensor (a constant index selects, a
repeated index takes the diagonal), an operand kept sparse (the counts printed
are the dense einsum's), and what the run does to an einsum's result after it
(a scaling by the product's factors that have no axes, a negation).  No tensor
is named: plan.relabel gives every equation of one form the same notes."""
from __future__ import annotations

from typing import Collection, Mapping, Sequence

from ..front import ir
from .joins import Join
from .operands import Operand

SPARSE_NOTE = ("an operand is kept sparse: an eager run reads its stored entries, so its "
               "work follows their non-zeros, not these dense counts")


def read_notes(factors: Sequence[ir.Expr], read: Mapping[int, Operand],
               sparse: Collection[str]) -> list[str]:
    """What the einsum line's letters leave unsaid of its operands: a reference read
    with fewer axes than its tensor has (a constant index, a diagonal), and one of a
    tensor kept sparse, whose join does not cost what the dense einsum's counts say.
    (No tensor is named: plan.relabel gives an equation of this form the same notes.)"""
    ops = [read.get(id(f)) for f in factors]
    notes = []
    if any(op is not None and op.selected for op in ops):
        notes.append("a constant index selects before the join (that operand has only "
                     "the axes it keeps)")
    if any(op is not None and op.diagonal for op in ops):
        notes.append("an index named twice in one reference reads its diagonal before "
                     "the join (one letter for it)")
    if sparse and any(type(f) is ir.Ref and f.name in sparse for f in factors):
        notes.append(SPARSE_NOTE)
    return notes


def after_notes(join: Join) -> list[str]:
    """What the run does to the einsum's result that its letters do not say."""
    notes = []
    if join.scaled:
        notes.append("then scaled by the product's factors that have no axes (no letters)")
    if join.negated:
        notes.append("then negated")
    return notes
