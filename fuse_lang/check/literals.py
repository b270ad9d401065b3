"""What a literal argument holds: a number, a whole number, a rectangular list;
a number past the largest float."""
from __future__ import annotations

import math

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make


def is_number(expr: ir.Expr) -> bool:
    if isinstance(expr, ir.Neg):
        expr = expr.operand
    return isinstance(expr, ir.Number)


def is_whole(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Number) and expr.is_integer


def literal_shape(expr: ir.Expr) -> tuple[int, ...] | None:
    """Shape of a number or a rectangular nested list of numbers, else None."""
    if is_number(expr):
        return ()
    if not isinstance(expr, ir.ListLit) or not expr.items:
        return None
    shapes = {literal_shape(item) for item in expr.items}
    if len(shapes) != 1 or None in shapes:
        return None
    inner = shapes.pop()
    assert inner is not None
    return (len(expr.items),) + inner


def misplaced_list(literal: ir.ListLit, calls: list[ir.Call]) -> Diagnostic:
    """A list literal anywhere but as `const`'s argument: it has no value there
    (`Z = [1, 2]`; `X[i] [i == 0]` for the Boolean factor `(i == 0)`; NumPy's
    `const([1, 2])[i]`, indices after a call, among `calls`, the statement's):
    checked, not left to the run to refuse."""
    items = literal.items
    if len(items) == 1 and isinstance(items[0], ir.Call) and items[0].name in COMPARISONS:
        return make("misplaced-list", "square brackets make a list, which has no value here: "
                    "write the condition in parentheses, as a Boolean factor", literal.span)
    called = next((c for c in calls if c.span.end == literal.span.start), None)
    if called is not None:  # (written right after the call's `)`: meant as its indices)
        said = ("its axes take the left-hand side's indices in order (`A[i] = const([1, 2])`)"
                if called.name == "const" else "its result has its arguments' indices")
        return make("misplaced-list", f"`{called.name}(...)` takes no indices after it: {said}",
                    literal.span, fixes=(Fix("Remove the indices", (TextEdit(literal.span, ""),)),))
    return make("misplaced-list", "a list of numbers is a value only as `const`'s argument: "
                "write `const([...])`", literal.span)


def bound_shape(lhs_indices: tuple, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A literal's shape as a `const` inside a right-hand side binds it to the LHS's
    axes, in order: the positions the LHS fixes (`W[0,h] = 2 const([[...]])`) drop
    out where the literal is 1 along them."""
    fixed = [p for p, index in enumerate(lhs_indices)
             if isinstance(index, ir.IndexConst) and p < len(shape)]
    if fixed and all(shape[p] == 1 for p in fixed):
        return tuple(n for p, n in enumerate(shape) if p not in fixed)
    return shape


# the value of a number literal past the largest float (`1e400`, 310 digits)
INFINITE = frozenset({math.inf, -math.inf})


def number_overflow(number: ir.Number, calls: list[ir.Call]) -> Diagnostic:
    """`number-overflow`: a number literal past the largest float is infinity; in a
    comparison (one of `calls`, the statement's), that comparison is constant (or,
    with `inf - inf`, NaN: never true) whatever the values."""
    text = number.text
    shown = text if len(text) <= 12 else f"{text[:6]}…({len(text)} characters)"
    said = f"`{shown}` is past the largest float (about 1.8e308): it is read as infinity"
    compared = next((call for call in calls if call.name in COMPARISONS
                     and any(node is number for node in ir.walk(call))), None)
    if compared is not None:
        said += (f", so `{compared.name}` gives the same answer for every value (a column "
                 f"holds 64-bit integers, up to 2^63-1)")
    return make("number-overflow", said, number.span)
