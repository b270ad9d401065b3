"""Which recursive groups are linear closures (docs/execution.md, "Fixpoints").

A Boolean relation whose one recursive rule is `R(x,z) = R(x,y) E(y,z)` or
`R(x,z) = E(x,y) R(y,z)` (E from a lower stratum, optionally guarded by 1-D
relations of the index passed through, as demand mode's magic sets write it) is
a transitive closure over E: an eager run finishes its deep recursion by one
graph search (run.fixpoint.closure), and `fuse explain` says so.  So is a 1-D
relation's reachability, `R(z) = R(y) E(y,z)` or `R(x) = E(x,y) R(y)` (a closure
of one row, or of one column; demand mode's magic relations of a left-linear
rule are such): without the search, a path of N edges took N rounds that each
read all of R's N cells.  Shapes and rules only.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from ..check import Analysis
from ..front import ir


class LinearRule(NamedTuple):
    """The recursive rule of a linear closure: its relation, the relation it
    steps over, whether the step comes first (`E(x,y) R(y,z)`), and the 1-D
    relations that guard the index passed through unchanged (demand mode's
    magic relations: `R(x,z) = M(x) R(x,y) E(y,z)`)."""

    relation: str
    edges: str
    left: bool
    guards: tuple[str, ...] = ()


def linear_rule(analysis: Analysis, group: Sequence[str]) -> LinearRule | None:
    """The group's linear closure rule, or None where it is not one: one Boolean
    2-D relation, one rule reading it, that rule a join of it with one other
    Boolean 2-D relation on plain index names chained x-y-z (and guards); or a
    Boolean 1-D relation and such a rule chained y-z (no guards)."""
    if len(group) != 1:
        return None
    name = group[0]
    tensors = analysis.tensors
    if not tensors[name].boolean or len(tensors[name].shape) not in (1, 2):
        return None
    statements = analysis.program.statements
    found = None
    for k in tensors[name].statements:
        stmt = statements[k]
        if not isinstance(stmt, ir.Equation):
            continue  # facts and sources: the relation's base
        if not any(ref.name == name for ref in ir.refs(stmt.rhs)):
            continue  # a base rule: it runs in the first round
        if found is not None:
            return None  # two recursive rules
        found = _linear(stmt, name)
        if found is None or not all(n in tensors and tensors[n].boolean
                                    for n in (found.edges, *found.guards)) \
                or len(tensors[found.edges].shape) != 2:
            return None
    return found


def _linear(stmt: ir.Equation, name: str) -> LinearRule | None:
    if stmt.op != "=" or not isinstance(stmt.rhs, ir.Product) \
            or not all(op in ("", " ") for op in stmt.rhs.ops):
        return None
    lhs = _names(stmt.lhs)
    factors = [(f.name, _names(f)) if isinstance(f, ir.Ref) else (None, None)
               for f in stmt.rhs.factors]
    if lhs is None or len(lhs) not in (1, 2) or len(set(lhs)) != len(lhs) \
            or any(names is None for _, names in factors):
        return None
    mine = [names for n, names in factors if n == name]
    pairs = [(n, names) for n, names in factors if n != name and len(names) == 2]  # type: ignore
    singles = [(n, names) for n, names in factors if n != name and len(names) == 1]  # type: ignore
    if len(mine) != 1 or len(pairs) != 1 or len(pairs) + len(singles) + 1 != len(factors):
        return None
    (own,), ((edges, step),) = mine, pairs
    if len(lhs) == 1:  # R(z) = R(y) E(y,z): one row; R(x) = E(x,y) R(y): one column
        (z,) = lhs
        if singles or step[0] == step[1] or z not in step or own != (step[step.index(z) ^ 1],):
            return None
        return LinearRule(name, edges, step[0] == z)
    x, z = lhs
    if own == (x, step[0]) and step[1] == z and step[0] not in (x, z):
        kept = x  # R(x,y) E(y,z)
    elif step[0] == x and own == (step[1], z) and step[1] not in (x, z):
        kept = z  # E(x,y) R(y,z)
    else:
        return None
    if any(names != (kept,) for _, names in singles):
        return None
    return LinearRule(name, edges, kept == z, tuple(n for n, _ in singles))  # type: ignore


def _names(ref: ir.Ref) -> tuple[str, ...] | None:
    """The index names of `ref` when each is a plain name, else None."""
    if ref.indices is None or not all(type(i) is ir.IndexVar and not i.dotted
                                       for i in ref.indices):
        return None
    return tuple(i.name for i in ref.indices)  # type: ignore[union-attr]
