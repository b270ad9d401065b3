"""What a literal argument holds: a number, a whole number, a rectangular list."""
from __future__ import annotations

from ..front import ir


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
