"""Constants in comparisons (docs/language.md, "Symbol constants"): `Ann` in
`(x != Ann)`, or a quoted string, `(x != "New York")` (LANGUAGE.md §14: any
constant can be written), compared with a variable's column.  The checker
(check.values), the planner's and the hover's words and the run
(run.interpret) read them through these functions."""
from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.span import Span
from .value_tables import position_table


def symbol_constant(expr: ir.Expr, tensors: Container[str]) -> bool:
    """Whether a comparison's operand is a symbol constant: a quoted string, or a
    bare name spelled as a constant of an atom is (capitalised: the builder's rule
    for `R(Ann, x)`) that is no tensor of the program.  A tensor of that name
    keeps meaning the tensor."""
    if type(expr) is ir.String:
        return True
    return type(expr) is ir.Ref and expr.indices is None and not _variable_name(expr.name) \
        and expr.name not in tensors


def constant_text(expr: ir.Expr) -> str:
    """The symbol a symbol constant names (`Ann`, or the text of `"New York"`)."""
    return expr.value if type(expr) is ir.String else expr.name  # type: ignore[union-attr]


def compared_symbol(call: ir.Call, tensors: Container[str]) -> tuple[ir.Expr, ir.Expr] | None:
    """A comparison's symbol constant and its other operand, or None (none, or two)."""
    if call.name not in COMPARISONS or len(call.args) != 2:
        return None
    left, right = call.args
    if symbol_constant(right, tensors) and not symbol_constant(left, tensors):
        return right, left
    if symbol_constant(left, tensors) and not symbol_constant(right, tensors):
        return left, right
    return None


def symbol_position(name: str, symbols: Sequence) -> int:
    """The constant's position in its column's values; -1 (no position) when the
    column does not hold it: `==` is then never true and `!=` always."""
    return position_table(tuple(symbols)).get(name, -1)  # (made once per domain)


def bound_symbols(stmt: ir.Equation, calls: Iterable[ir.Call]
                  ) -> list[tuple[str, str, Span, bool]]:
    """The head variables a rule's `v == Ann` (or `v == "New York"`) binds, as
    Soufflé's `v = "Ann"` grounds v, where no atom of the body binds v: (v, the
    symbol, the constant's span, whether it is a bare name, which the caller
    drops where a tensor has that name: a statement's own operations do not know
    the program's tensors).  `calls`: the rule's calls."""
    bound = _atom_variables(stmt.rhs)
    head = {var.name for index in stmt.lhs.indices or () for var in ir.index_vars(index)}
    out = []
    for call in calls:
        if call.name != "==" or len(call.args) != 2:
            continue
        for var, constant in (call.args, call.args[::-1]):
            if type(var) is ir.Ref and var.indices is None and var.name in head \
                    and var.name not in bound and symbol_constant(constant, ()):
                bare = type(constant) is ir.Ref
                out.append((var.name, constant_text(constant), constant.span, bare))
    return out


def _atom_variables(expr: ir.Expr) -> set[str]:
    """The index variables of an expression's references outside `not`."""
    out: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if type(node) is ir.Ref:
            for index in node.indices or ():
                out.update(var.name for var in ir.index_vars(index))
        elif not (type(node) is ir.Call and node.name == "not"):
            stack.extend(ir.children(node))
    return out


def _variable_name(name: str) -> bool:
    return name[:1].islower() or name[:1] == "_"  # (front/builder.py's rule)
