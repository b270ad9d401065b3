"""An index summed inside one side of a comparison: `R[i] = (X[j] < X[i])`.

Each argument of a call is a scope (LANGUAGE.md §5), and a comparison is the
builtin call named by its operator (docs/language.md, "Comparisons and
arithmetic over values"), so an index that occurs only in one of its sides is
projected there, before the comparison: `(X[j] < X[i])` compares the sum of `X`
with each `X[i]`.  Comparing a sum is almost never what was meant (counting the
`j` where `X[j] < X[i]` is `reduce(sum, j) (X[j] < X[i])`): a `lone-index`
warning says so.  Rules (`( )` heads) and indices an explicit `reduce` names are
left alone.
"""
from __future__ import annotations

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, make


def check_compared_sum(call: ir.Call, stmt: ir.Statement, out: list[Diagnostic]) -> None:
    """The indices summed inside one side of the comparison `call` of `stmt`."""
    if call.name not in COMPARISONS or type(stmt) is not ir.Equation or stmt.lhs.paren:
        return
    kept = {v.name for index in stmt.lhs.indices or () for v in ir.index_vars(index)}
    everywhere = _occurrences(stmt.rhs)
    reduced = {v.name for node in ir.walk(stmt.rhs) if type(node) is ir.Reduce
               for v in node.indices}
    for side in call.args:
        here = _occurrences(side)
        for name, (count, span, indexed) in here.items():
            if not indexed or name in kept or name in reduced or name == "_" \
                    or everywhere[name][0] != count:
                continue
            out.append(make(
                "lone-index", f"`{name}` occurs only in this side of the comparison, so it is "
                f"summed there before comparing: the sum over `{name}` is what is compared; "
                f"to count where the comparison holds, write "
                f"`reduce(sum, {name}) (...)` around it", span))


def _occurrences(expr: ir.Expr) -> dict[str, tuple[int, object, bool]]:
    """Each index variable of the references in `expr`, and each bare name (which
    may read an index's value): how many times, its first place, and whether it
    indexes a reference there (a bare name alone is a value or a scalar)."""
    found: dict[str, tuple[int, object, bool]] = {}
    for node in ir.walk(expr):
        if type(node) is not ir.Ref:
            continue
        if node.indices is None:
            names = [(node.name, node.span, False)]
        else:
            names = [(v.name, v.span, True) for index in node.indices
                     for v in ir.index_vars(index)]
        for name, span, indexed in names:
            count, first, was = found.get(name, (0, span, False))
            found[name] = (count + 1, first, was or indexed)
    return found
