"""`&&`, `||` and `!` (docs/language.md, Conditions), lowered as they are parsed to
what the checker, the planner and every backend already evaluate.

A condition holds where its value is above 0 (as `select`'s).  Each operand is
first made a 0/1 factor: a comparison, a Boolean reference `R(x)`, `not`, `step`
and what these operators make are 0/1 already; anything else `c` becomes
`step(c)`.  Then, for 0/1 factors `a` and `b`:

- `a && b` is the product `a b` (juxtaposed Boolean factors, as a Datalog rule's body);
- `a || b` is `max(a, b)`;
- `!a` flips a comparison (`!(x < 3)` is `x >= 3`), is `not R(x)` for a Boolean
  reference `R(x)` (Datalog negation, with its safety and stratification), swaps
  `&&` and `||` by De Morgan's laws, undoes a `!`, and is `1 - a` otherwise.
"""
from __future__ import annotations

from typing import Any

from . import ir
from .indices import tok_span
from .span import Span

_FLIPPED = {"<": ">=", ">=": "<", "<=": ">", ">": "<=", "==": "!=", "!=": "=="}
_BOOLEAN_CALLS = frozenset(_FLIPPED) | {"not", "step"}


def _operands(c: list) -> list[Any]:
    return [item for item in c if not isinstance(item, tuple)]  # (tokens are tuples)


def is_condition(expr: Any) -> bool:
    """Whether `expr` is 0 or 1 everywhere by its form alone."""
    kind = type(expr)
    if kind is ir.Call:
        if expr.name in _BOOLEAN_CALLS:
            return True
        return expr.name in ("max", "min") and all(map(is_condition, expr.args))
    if kind is ir.Ref:
        return expr.paren
    if kind is ir.Number:
        return expr.value in (0.0, 1.0)
    if kind is ir.Product:
        return all(op in ("", " ", "*") for op in expr.ops) and all(map(is_condition, expr.factors))
    return _complement(expr) is not None


def _complement(expr: Any) -> Any:
    """`c` when `expr` is `1 - c` (as `!c` makes it) with `c` a condition, else None."""
    if type(expr) is ir.Sum and len(expr.terms) == 2 and expr.signs == ("+", "-") \
            and type(expr.terms[0]) is ir.Number and expr.terms[0].value == 1.0 \
            and is_condition(expr.terms[1]):
        return expr.terms[1]
    return None


def as_condition(expr: Any) -> Any:
    """`expr` as a 0/1 factor: itself, or `step(expr)`."""
    if is_condition(expr):
        return expr
    return ir.Call("step", Span(expr.span[0], expr.span[0]), (expr,), (), expr.span)


def _and(factors: list[Any], span: Span) -> ir.Product:
    flat = []
    for f in factors:  # (a && b) && c: one product
        if type(f) is ir.Product and is_condition(f):
            flat += f.factors
        else:
            flat.append(f)
    return ir.Product(tuple(flat), ("",) + (" ",) * (len(flat) - 1), span)


def _or(operands: list[Any], name_spans: list[Span], span: Span) -> ir.Call:
    out = operands[0]
    for operand, at in zip(operands[1:], name_spans, strict=True):
        out = ir.Call("max", at, (out, operand), (), Span(out.span[0], operand.span[1]))
    return ir.Call("max", out.name_span, out.args, (), span)


def conjunction(c: list) -> ir.Product:
    """`a && b && ...`: the product of their 0/1 factors."""
    return _and([as_condition(x) for x in _operands(c)], Span(c[0].span[0], c[-1].span[1]))


def disjunction(c: list) -> ir.Call:
    """`a || b || ...`: the maximum of their 0/1 factors."""
    ors = [tok_span(item) for item in c if isinstance(item, tuple)]
    return _or([as_condition(x) for x in _operands(c)], ors, Span(c[0].span[0], c[-1].span[1]))


def bang(c: list) -> Any:
    """`!c`: where `c` does not hold (see the module)."""
    word, operand = c
    return negated(operand, tok_span(word), Span(word[2], operand.span[1]))


def negated(expr: Any, at: Span, span: Span) -> Any:
    """`!expr`, its `!` at `at`, the whole `span`."""
    kind = type(expr)
    if kind is ir.Call and expr.name in _FLIPPED and not expr.kwargs:
        return ir.Call(_FLIPPED[expr.name], expr.name_span, expr.args, (), span)
    if kind is ir.Ref and expr.paren:
        return ir.Call("not", at, (expr,), (), span)
    if kind is ir.Product and is_condition(expr):  # !(a && b) = !a || !b
        nots = [negated(f, at, f.span) for f in expr.factors]
        return _or(nots, [at] * (len(nots) - 1), span)
    if kind is ir.Call and expr.name == "max" and is_condition(expr):  # !(a || b) = !a && !b
        return _and([negated(a, at, a.span) for a in expr.args], span)
    inner = _complement(expr)
    if inner is not None:  # !!a
        return inner
    one = ir.Number(1.0, "1", Span(at[0], at[0]))  # (an empty span: nothing in the text)
    return ir.Sum((one, as_condition(expr)), ("+", "-"), span)
