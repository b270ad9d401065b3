"""IR back to Fuse text: the equations `fn` calls write out (front/functions.py),
shown by `fuse explain` and hover, which have no text of their own.

`equation_text(eq)` reads as Fuse (a local renamed apart, `s@head.1`, aside) and
parses back to the same IR; parentheses are written where precedence needs them
(LANGUAGE.md §4), and only there.
"""
from __future__ import annotations

from typing import Any

from . import ir
from .builtins import COMPARISONS

# binding strength of each node kind: a child binding less than its parent needs ( )
_SUM, _PRODUCT, _UNARY, _POWER, _ATOM = 1, 2, 3, 4, 5


def equation_text(eq: ir.Equation) -> str:
    return f"{ref_text(eq.lhs)} {eq.op} {expr_text(eq.rhs)}"


def index_text(index: Any) -> str:
    kind = type(index)
    if kind is ir.IndexVar:
        return index.name + ("." if index.dotted else "")
    if kind is ir.IndexConst:
        return f'"{index.value}"' if index.quoted else str(index.value)
    if kind is ir.IndexShift:
        terms = "+".join(v.name for v in index.terms)
        return terms + (f"{index.offset:+d}" if index.offset else "")
    if kind is ir.IndexDiv:
        return f"{index.var.name}/{index.divisor}"
    if kind is ir.IndexSlice:
        return f"{'' if index.start is None else index.start}:" \
               f"{'' if index.stop is None else index.stop}"
    if kind is ir.IndexVirtual:
        return "*" + index_text(index.inner)
    return "?"


def ref_text(ref: ir.Ref) -> str:
    if ref.indices is None:
        return ref.name
    inside = ",".join(index_text(i) for i in ref.indices)
    return f"{ref.name}({inside})" if ref.paren else f"{ref.name}[{inside}]"


def expr_text(expr: Any) -> str:
    return _text(expr)[0]


def _wrapped(expr: Any, least: int) -> str:
    text, strength = _text(expr)
    return f"({text})" if strength < least else text


def _text(expr: Any) -> tuple[str, int]:
    """The text of `expr` and how strongly it binds."""
    kind = type(expr)
    if kind is ir.Ref:
        return ref_text(expr), _ATOM
    if kind is ir.Number:
        return expr.text, _ATOM
    if kind is ir.String:
        return '"' + expr.value.replace("\\", "\\\\").replace('"', '\\"') + '"', _ATOM
    if kind is ir.Sum:
        parts = [_wrapped(expr.terms[0], _SUM)]
        for sign, term in zip(expr.signs[1:], expr.terms[1:], strict=True):
            parts.append(f"{sign} {_wrapped(term, _PRODUCT)}")
        return " ".join(parts), _SUM
    if kind is ir.Product:
        last = len(expr.factors) - 1
        # a factor that ends in a `reduce` takes the rest of the product as its body:
        # before another factor it is written in parentheses
        texts = [f"({expr_text(f)})" if k < last and _open_right(f) else _wrapped(f, _UNARY)
                 for k, f in enumerate(expr.factors)]
        parts = [texts[0]]
        for op, text in zip(expr.ops[1:], texts[1:], strict=True):
            parts.append(f"{op} {text}" if op.strip() else text)
        return " ".join(parts), _PRODUCT
    if kind is ir.Neg:
        return "-" + _wrapped(expr.operand, _UNARY), _UNARY
    if kind is ir.Power:
        return f"{_wrapped(expr.base, _ATOM)}^{_wrapped(expr.exponent, _UNARY)}", _POWER
    if kind is ir.Call:
        return _call_text(expr)
    if kind is ir.Reduce:
        names = ", ".join(v.name for v in expr.indices)
        return f"reduce({expr.op}, {names}) {_wrapped(expr.body, _PRODUCT)}", _UNARY
    if kind is ir.ListLit:
        return "[" + ", ".join(expr_text(item) for item in expr.items) + "]", _ATOM
    return "?", _ATOM


def _open_right(expr: Any) -> bool:
    """Whether the text of `expr` ends in a `reduce`'s body (`reduce(max, t) X[t]`,
    `-reduce(...) ...`, `A^reduce(...) ...`), which a factor after it would join."""
    while True:
        kind = type(expr)
        if kind is ir.Reduce:
            return True
        if kind is ir.Neg:
            expr = expr.operand
        elif kind is ir.Power:
            expr = expr.exponent
        elif kind is ir.Call and expr.name == "not":
            expr = expr.args[0]
        else:
            return False


def _call_text(call: ir.Call) -> tuple[str, int]:
    if call.name in COMPARISONS:
        left, right = call.args
        return f"({expr_text(left)} {call.name} {expr_text(right)})", _ATOM
    if call.name == "not":
        return "not " + _wrapped(call.args[0], _UNARY), _UNARY
    args = [expr_text(a) for a in call.args]
    args += [f"{k.name}={expr_text(k.value)}" for k in call.kwargs]
    return f"{call.name}({', '.join(args)})", _ATOM
