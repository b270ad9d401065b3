"""A reference's arguments as indices (LANGUAGE.md §3, §14): variables, constants
(`0`, `-7`, `Alice`, `"ann"`), offsets, sums, divisions, slices, `*t`, dotted
indices; and the error a statement that is not valid Fuse raises while it is
built (front/builder.py, which calls these for every `T[...]` and `R(...)`).
"""
from __future__ import annotations

from typing import Any

from ..speed.fastinit import frozen_dataclass
from . import ir
from .diagnostics import Diagnostic, make
from .numbers import short_number
from .span import Span
from .wildcards import WILDCARDS

# (front/builder.py's way of making a Span without a Python frame)
_tuple_new = tuple.__new__


class StatementError(Exception):
    """Raised inside the IR builder: the statement is reported and dropped."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def tok_span(tok: tuple) -> Span:
    return _tuple_new(Span, (tok[2], tok[3]))


def name_ref(tok: tuple) -> ir.Ref:
    """The bare reference a NAME token makes."""
    span = _tuple_new(Span, (tok[2], tok[3]))  # one Span for both: the commonest node
    return ir.Ref(tok[1], span, None, False, span)


@frozen_dataclass
class Arg:
    """A reference/call argument before we know which of the two it belongs to."""

    kind: str  # "kwarg" | "slice" | "virtual" | "dotted" (an expression is itself)
    value: Any
    span: Span
    name: ir.Ref | None = None  # kwarg name


def fail(code: str, message: str, span: Span) -> None:
    raise StatementError(make(code, message, span))


# ----------------------------------------------------------- expr -> index


def as_var(expr: Any) -> ir.IndexVar | None:
    if isinstance(expr, ir.Ref) and expr.indices is None and is_variable_name(expr.name):
        return ir.IndexVar(expr.name, expr.span)
    return None


def is_variable_name(name: str) -> bool:
    return name[0].islower() or name[0] == "_"


def as_int(expr: Any) -> int | None:
    if isinstance(expr, ir.Number) and expr.is_integer:
        return int(expr.text)
    return None


def index_from(arg: Any) -> ir.Index:
    """Read an argument of `T[...]` / `R(...)` (an expression or an `Arg`) as an
    index (LANGUAGE.md §3)."""
    if isinstance(arg, tuple):  # a bare name's token
        return plain_index(name_ref(arg))
    if type(arg) is not Arg:
        return plain_index(arg)
    if arg.kind == "slice":
        return arg.value
    if arg.kind == "kwarg":
        fail("invalid-index", "a keyword argument is not an index", arg.span)
    if arg.kind == "dotted":
        var = as_var(arg.value)
        if var is None:
            fail("invalid-index", "only an index variable can be dotted (as in `p'.`)", arg.span)
        return ir.IndexVar(var.name, arg.span, dotted=True)
    if arg.kind == "virtual":
        inner = plain_index(arg.value)
        if isinstance(inner, ir.IndexConst):  # `X[i,*0]`: a start, written another way
            fail("invalid-index", "a virtual index is a variable (`*t`, `*t+1`), not a "
                 "position: the start of a recurrence is written `X[i,*t] = X0[i]` beside "
                 "`X[i,*t+1] = ...`", arg.span)
        if not (isinstance(inner, ir.IndexVar)
                or (isinstance(inner, ir.IndexShift) and len(inner.terms) == 1)):
            fail("invalid-index", "a virtual index is `*t` or `*t` plus or minus a number",
                  arg.span)
        return ir.IndexVirtual(inner, arg.span)
    raise AssertionError(arg.kind)  # a keyword argument: reported above


def indices(args: list[Any]) -> tuple[ir.Index, ...]:
    """The arguments of `T[...]` / `R(...)` as indices (see index_from); a bare
    name may be its NAME token (see IRBuilder.TOKEN_STAND_INS)."""
    # index_from's first case (and is_variable_name's rule) written out in place for
    # a bare reference: most indices are plain variables, and this saves two calls each
    return tuple([name_index(a) if isinstance(a, tuple)
                  else ir.IndexVar(a.name, a.span, False)
                  if type(a) is ir.Ref and a.indices is None
                  and (a.name[0].islower() or (a.name[0] == "_" and a.name != "_"))
                  else index_from(a)
                  for a in args])


def plain_index(expr: Any) -> ir.Index:
    span = expr.span
    if isinstance(expr, ir.Ref) and expr.indices is None:
        if is_variable_name(expr.name):
            if expr.name == "_":
                WILDCARDS.append(True)  # named apart with its statement (front/wildcards.py)
            return ir.IndexVar(expr.name, span)
        return ir.IndexConst(expr.name, span)
    if isinstance(expr, ir.Number):
        value = as_int(expr)
        if value is None:  # `R(x, 0.5)`: a float value (a bracket's index refuses it)
            return ir.IndexConst(_float(expr, expr.text, span), span)
        return ir.IndexConst(int64(value, span), span)
    if isinstance(expr, ir.String):  # `R("ann", x)`: exactly that symbol
        return ir.IndexConst(expr.value, span, True)
    if isinstance(expr, ir.Neg) and isinstance(expr.operand, ir.Number):  # `R(-7, x)`: a value
        value = as_int(expr.operand)
        if value is None:
            return ir.IndexConst(-_float(expr.operand, f"-{expr.operand.text}", span), span)
        return ir.IndexConst(int64(-value, span), span)
    if isinstance(expr, ir.Sum):
        terms: list[ir.IndexVar] = []
        offset = 0
        for sign, term in zip(expr.signs, expr.terms):
            var = as_var(term)
            number = _signed_int(term)
            if var is not None and sign == "+":
                terms.append(var)
            elif number is not None:  # `t+1`, `1 + t`, `t + -1`: one offset
                offset += number if sign == "+" else -number
            else:
                break
        else:
            if terms:
                return ir.IndexShift(tuple(terms), int64(offset, span, offset=True), span)
    if isinstance(expr, ir.Product) and len(expr.factors) == 2 and expr.ops[1] == "/":
        var = as_var(expr.factors[0])
        divisor = as_int(expr.factors[1])
        if var is not None and divisor is not None:
            if divisor == 0:
                fail("invalid-index", "an index cannot be divided by 0", span)
            return ir.IndexDiv(var, divisor, span)
    if isinstance(expr, ir.Product) and all(op in ("", " ") for op in expr.ops):
        fail("invalid-index", "missing ',' between indices", span)
    fail("invalid-index",
          "not an index: an index is a variable (`i`), a constant (`0`, `-7`, `Alice`, "
          "`\"ann\"`), an offset "
          "(`t+1`), a sum of variables (`x+dx`), a division (`x/2`), a slice (`2:5`) or `*t`"
          + (_COMPUTE_HINT if _arithmetic_of_variables(expr) else ""), span)
    raise AssertionError  # unreachable


# Soufflé computes any arithmetic in a head (`d(X, Y, X - Y) :- a(X), a(Y).`); Fuse
# computes a relation's column other than `x + y + 1` with `==` (docs/language.md)
_COMPUTE_HINT = ("; in a relation's atom, compute any other value with a comparison "
                 "that binds a new variable: `D(x, y, z) = A(x) A(y) (z == x - y)`")


def _signed_int(expr: Any) -> int | None:
    """An integer, or a negated one (`-1` in `t + -1`)."""
    if isinstance(expr, ir.Neg):
        value = as_int(expr.operand)
        return None if value is None else -value
    return as_int(expr)


def _arithmetic_of_variables(expr: Any) -> bool:
    """Whether `expr` is `+ - * ^` or a unary minus over a variable (`x - y`, `2 * x`)."""
    if isinstance(expr, ir.Ref):
        return expr.indices is None and is_variable_name(expr.name) and expr.name != "_"
    parts = (expr.terms if isinstance(expr, ir.Sum) else expr.factors
             if isinstance(expr, ir.Product) else (expr.operand,)
             if isinstance(expr, ir.Neg) else (expr.base, expr.exponent)
             if isinstance(expr, ir.Power) else ())
    return any(_arithmetic_of_variables(part) for part in parts)


def _float(number: ir.Number, text: str, span: Span) -> float:
    """A float constant of a relation's column (LANGUAGE.md §14), finite."""
    value = float(number.value)
    if value != value or value in (float("inf"), float("-inf")):
        fail("invalid-index", f"`{text}` is past the largest float: a column holds finite "
             f"numbers", span)
    return value


def positions_only(indices: tuple[ir.Index, ...]) -> tuple[ir.Index, ...]:
    """A bracket reference's indices (`X[0.5]`): a float constant is no position."""
    for index in indices:
        if type(index) is ir.IndexConst and type(index.value) is float:
            fail("invalid-index", f"`{index.value!r}` is not a position: positions are whole "
                 f"numbers (a float is a value of a relation's column, `R(x, 0.5)`)",
                 index.span)
    return indices


def int64(value: int, span: Span, offset: bool = False) -> int:
    """An integer constant (or an offset), which a column holds as a 64-bit value."""
    if not -(2**63) <= value < 2**63:
        shown = str(value) if len(str(value)) <= 24 else short_number(value)
        hint = "" if offset else f" (quote it, `\"{value}\"`, for a symbol)"
        fail("invalid-index", f"{shown} does not fit in 64 bits: a column holds integers "
             f"from -2^63 to 2^63-1{hint}", span)
    return value


def name_index(tok: tuple) -> ir.Index:
    """The index a bare name's token is (see indices)."""
    if tok[1][0].islower() or (tok[1][0] == "_" and tok[1] != "_"):
        return ir.IndexVar(tok[1], _tuple_new(Span, (tok[2], tok[3])), False)
    return index_from(tok)  # (`_` too: see plain_index)
