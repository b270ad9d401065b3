"""`axis=0`, the seed DSL's spelling of an axis: named when its statement is built.

`concat(A[e,o], B[e,o], axis=0)` means `axis=e`: a numbered axis is the index at
that position of the left-hand side, or, in a sink, among the variables of the
call's first argument (docs/language.md).  The builder's `_call` notes such a
keyword in NUMERIC_AXES, and `equation`/`sink` then rewrite their right-hand side
here, so every later room sees a name; statements without one are never walked.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import ir

# Set by _call when a call has `axis=<number>`; the statement built next names
# those axes (so statements without one are never walked for them).
NUMERIC_AXES: list[bool] = []


def numbered_axes_named(rhs: Any, lhs: ir.Ref | None) -> Any:
    """`concat(A[e,o], B[e,o], axis=0)`, the seed DSL's spelling: a numbered axis is
    the index at that position of the left-hand side (`axis=e`), or, in a sink, the
    index at that position among the first argument's variables.  A number with
    no index at its position stays a number (the checker says what is wrong)."""
    NUMERIC_AXES.clear()
    lhs_names = _position_names(lhs.indices or ()) if lhs is not None else None
    return _named(rhs, lhs_names)


def _position_names(indices: tuple) -> list[str]:
    """The index at each LHS position that has one: a variable, or a slice's
    anonymous name (`Y[:,j] = softmax(A[:,j], axis=0)` is along the slice)."""
    names = []
    slices = 0
    for index in indices:
        if isinstance(index, ir.IndexSlice):
            names.append(ir.slice_name(slices))
            slices += 1
        elif ir.index_vars(index):
            names.append(ir.index_vars(index)[0].name)
    return names


def _named(expr: Any, lhs_names: list[str] | None) -> Any:
    if type(expr) is ir.Call:
        args = tuple(_named(a, lhs_names) for a in expr.args)
        kwargs = tuple(_named_keyword(kw, args, lhs_names) for kw in expr.kwargs)
        return replace(expr, args=args, kwargs=kwargs)
    if type(expr) is ir.Neg:
        return replace(expr, operand=_named(expr.operand, lhs_names))
    if type(expr) is ir.Sum:
        return replace(expr, terms=tuple(_named(t, lhs_names) for t in expr.terms))
    if type(expr) is ir.Product:
        return replace(expr, factors=tuple(_named(f, lhs_names) for f in expr.factors))
    if type(expr) is ir.Power:
        return replace(expr, base=_named(expr.base, lhs_names),
                       exponent=_named(expr.exponent, lhs_names))
    if type(expr) is ir.Reduce:
        return replace(expr, body=_named(expr.body, lhs_names))
    return expr


def _named_keyword(kw: ir.Keyword, args: tuple, lhs_names: list[str] | None) -> ir.Keyword:
    value = kw.value
    if kw.name != "axis" or type(value) is not ir.Number or not value.text.isdigit():
        return kw
    if lhs_names is not None:
        names = lhs_names
    else:  # a sink: the first argument's variables, in order of appearance
        names = list(dict.fromkeys(name for r in (ir.refs(args[0]) if args else ())
                                   for name in ir.lhs_axis_names(r.indices or ())))
    position = int(value.text)
    if position >= len(names):
        return kw
    return replace(kw, value=ir.Ref(names[position], value.span, None, False, value.span))
