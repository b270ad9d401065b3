"""`_`, the wildcard (LANGUAGE.md §13): each `_` is a variable of its own.

`Root(x) = Parent(x, _) not Parent(_, x)` has two `_`, which match any value
each, independently: two variables no other index names.  The builder notes a
`_` in WILDCARDS as it makes the index (front/indices.py), and the statement
then names each `_` apart (`__1`, `__2`, ...: a name the user would not write;
`is_wildcard` tells them), so every later room sees distinct variables and a
statement without one is never walked.  Their spans still point at the `_`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import ir

# Set when an index `_` is made; the statement built next names them apart.
WILDCARDS: list[bool] = []
_PREFIX = "__"


def is_wildcard(name: str) -> bool:
    """Whether an index variable is a `_` of the program (named apart or not)."""
    return name == "_" or (name.startswith(_PREFIX) and name[len(_PREFIX):].isdigit())


def wildcards_named(expr: Any) -> Any:
    """`expr` (a statement's right-hand side or a query's atom) with each `_`
    index named apart, in the order they are written."""
    WILDCARDS.clear()
    counter = [0]
    return _named(expr, counter)


def _named(expr: Any, counter: list[int]) -> Any:
    kind = type(expr)
    if kind is ir.Ref:
        if not expr.indices:
            return expr
        return replace(expr, indices=tuple(_index(i, counter) for i in expr.indices))
    if kind is ir.Call:
        return replace(expr, args=tuple(_named(a, counter) for a in expr.args))
    if kind is ir.Neg:
        return replace(expr, operand=_named(expr.operand, counter))
    if kind is ir.Sum:
        return replace(expr, terms=tuple(_named(t, counter) for t in expr.terms))
    if kind is ir.Product:
        return replace(expr, factors=tuple(_named(f, counter) for f in expr.factors))
    if kind is ir.Power:
        return replace(expr, base=_named(expr.base, counter),
                       exponent=_named(expr.exponent, counter))
    if kind is ir.Reduce:
        return replace(expr, body=_named(expr.body, counter))
    return expr


def _index(index: Any, counter: list[int]) -> Any:
    if type(index) is ir.IndexVar and index.name == "_":
        counter[0] += 1
        return replace(index, name=f"{_PREFIX}{counter[0]}")
    if type(index) is ir.IndexVirtual:
        return replace(index, inner=_index(index.inner, counter))
    return index
