"""What an equation's left-hand-side index does beyond "output": the words
`fuse explain`'s role column and the index hover add (IndexPlan.detail).

- a **virtual** index (`H[i,*t+1]`): the recurrence's step, iterated with only
  the latest value kept: no axis of the tensor (its role is "step", not "output");
- the step of a recurrence over an offset (`L[k,j] = f(L[k-1,m])`): computed in
  order of that index, one pass per position;
- a **shifted** write (`Y[i+1] = X[i]`): a position past the axis is dropped;
- a **pooled** index (`P[x/2] = F[x]`): the positions that share `x/2` are
  combined by the equation's operator (LANGUAGE.md §3);
- a **broadcast** index: no term of the right-hand side reads it, so every value
  along it is the same (§5; not so where a builtin such as `const` or
  `causal_mask` binds the left-hand side's axes itself);
- an index on two axes (`T[i,i] = X[i]`): only the diagonal is written;
- the axis a `softmax` or `lnorm` **normalises** along: the dotted one, else the
  `axis=` keyword's, else the last (§10).
"""
from __future__ import annotations

from typing import Sequence

from ..check.symbols import IndexRole
from ..front import ir
from ..front.builtins import BUILTINS
from ..front.ir_text import index_text

# builtins whose result has axes of its own, bound to the left-hand side's
_SHAPING = frozenset({"concat", "topk"} | {n for n, b in BUILTINS.items() if not b.elementwise})
_NORMALISING = ("softmax", "lnorm")
_COMBINES = {"=": "sum", "+=": "sum", "max=": "max", "min=": "min", "avg=": "avg"}


def index_details(stmt: ir.Equation, roles: Sequence[IndexRole], step: str | None,
                  nodes: Sequence[ir.Expr] | None = None) -> dict[str, tuple[str, str]]:
    """Per left-hand-side index with more to say than "output": (role, detail).
    `step`: the index a recurrence computes in order (planner._step_by_step);
    `nodes`: the right-hand side's nodes, where the caller walked it already."""
    out: dict[str, tuple[str, str]] = {}
    lhs = stmt.lhs.indices or ()
    seen: set[str] = set()
    for index in lhs:
        if type(index) is ir.IndexVar:
            if index.name in seen:
                out[index.name] = ("output", "on several axes: this equation writes "
                                             "only their diagonal")
            seen.add(index.name)
            continue
        if isinstance(index, ir.IndexVirtual):
            for var in ir.index_vars(index):
                out[var.name] = ("step", f"virtual `*{index_text(index.inner)}`: iterated, only "
                                         f"the latest value kept, not an axis of "
                                         f"{stmt.lhs.name}")
        elif isinstance(index, ir.IndexShift):
            for var in index.terms:
                out.setdefault(var.name, ("output", f"written at `{index_text(index)}`: shifted, "
                                                    "a write outside the axis dropped"))
        elif isinstance(index, ir.IndexDiv):
            op = _COMBINES.get(stmt.op, stmt.op)
            out[index.var.name] = ("output", f"pooled as `{index_text(index)}`: the values that "
                                             f"share a position combined by {op}")
    if step is not None and step not in out:
        out[step] = ("output", f"the recurrence's step: computed in order of `{step}`, "
                               "one pass per position")
    calls = _calls(stmt.rhs) if nodes is None else [n for n in nodes if type(n) is ir.Call]
    if not any(c.name in _SHAPING for c in calls):
        for role in roles:  # (an output's occurrences are all of its name's, both sides)
            if role.role == "output" and role.name not in out \
                    and all(o.lhs and o.form == "var" for o in role.occurrences):
                out[role.name] = ("output", "broadcast: no term of the right-hand side "
                                            "reads it")
    for call in calls:
        if call.name in _NORMALISING:
            axis = _normalised_axis(stmt, call)
            if axis is not None:
                role, said = out.get(axis, ("output", ""))
                words = f"normalised by {call.name} along it"
                out[axis] = (role, f"{said}; {words}" if said else words)
    return out


def _calls(expr: ir.Expr) -> list[ir.Call]:
    if type(expr) is ir.Ref or (type(expr) is ir.Product and all(
            type(f) is ir.Ref for f in expr.factors)):  # most equations: no call to find
        return []
    return [node for node in ir.walk(expr) if isinstance(node, ir.Call)]


def _normalised_axis(stmt: ir.Equation, call: ir.Call) -> str | None:
    """The left-hand-side index a normalising call works along (LANGUAGE.md §10)."""
    names = [i for i in stmt.lhs.indices or () if isinstance(i, ir.IndexVar)]
    dotted = [i.name for i in names if i.dotted]
    if dotted:
        return dotted[0]
    for keyword in call.kwargs:
        if keyword.name == "axis" and isinstance(keyword.value, ir.Ref):
            return keyword.value.name
    lhs = stmt.lhs.indices or ()
    return lhs[-1].name if lhs and isinstance(lhs[-1], ir.IndexVar) else None
