"""A Boolean relation's equations read as Datalog rules, for provenance.

Each equation of a Boolean tensor is one rule per additive term of its right-hand
side; a term is a product of atoms (`Parent(x, y)`), negated atoms (`not
Banned(x, _)`) and comparisons (`(a > 18)`).  Arguments are variables (a `_` is one
of its own), constants (held as positions of their axis' domain) and, in a head,
sums of variables plus an offset (`N(n + 1)`).  A term of another form (a numeric
factor, a call, a shifted read in the body) is kept with `unsupported` saying why:
the why of a tuple names it instead of explaining it.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ...check import Analysis
from ...check.value_tables import constant_position
from ...front import ir
from ...front.builtins import COMPARISONS
from ...front.ir_text import equation_text, ref_text
from ...front.wildcards import is_wildcard
from .data import show_value

COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne}


class Unsupported(Exception):
    """A form of rule that provenance does not explain (its words say which)."""


@dataclass(frozen=True)
class Arg:
    """An argument of an atom: a variable (`var`), or a constant at `position`
    (-1: a value its axis does not hold); `shift` for a head's `n + 1`."""

    var: str | None
    position: int
    text: str
    shift: tuple[tuple[str, ...], int] | None = None  # (variables, offset)


@dataclass(frozen=True)
class Atom:
    relation: str
    args: tuple[Arg, ...]
    negated: bool
    text: str

    def variables(self) -> set[str]:
        return {a.var for a in self.args if a.var is not None}

    def named(self) -> set[str]:
        """Its variables that are not `_` (a negated atom's must be bound)."""
        return {v for v in self.variables() if not is_wildcard(v)}


@dataclass(frozen=True)
class Compare:
    op: str
    left: ir.Expr
    right: ir.Expr
    text: str
    variables: frozenset[str]

    def variables_in(self, bound: Mapping[str, int]) -> dict[str, int]:
        return {v: bound[v] for v in self.variables if v in bound}


@dataclass(frozen=True)
class Rule:
    """One term of one equation of a relation."""

    statement: int
    line: int
    text: str  # the equation as written
    head: tuple[Arg, ...]
    body: tuple[Atom | Compare, ...]  # in written order
    unsupported: str | None = None
    file: str | None = None  # an imported file's path; None: the program's

    @property
    def atoms(self) -> tuple[Atom, ...]:
        return tuple(g for g in self.body if isinstance(g, Atom) and not g.negated)


def statement_place(analysis: Analysis, k: int) -> tuple[str | None, int, str]:
    """Where statement k is written: (an imported file's path, None for the program's;
    the line there; its text).  A statement of an imported file, or one a `fn` call
    wrote out (which has no text of its own: its span is the call's), reads as IR
    text, its names as the program has them, as `fuse explain` shows it."""
    stmt = analysis.program.statements[k]
    imports = analysis.imports
    file = imports.file_at(stmt.span.start) if imports is not None else None
    origin = analysis.inlined.origins.get(k) if analysis.inlined is not None else None
    ir_text = equation_text(stmt) if isinstance(stmt, ir.Equation) else \
        ref_text(stmt.atom) if isinstance(stmt, ir.Fact) else ""
    if file is None:
        line = analysis.lines.position(stmt.span.start)[0] + 1
        # (an equation written over several lines reads as one: each answer is a line)
        path, text = None, re.sub(r"\s*\n\s*", " ", analysis.text[stmt.span.start:stmt.span.end])
    else:
        line = file.parsed.lines.position(stmt.span.start - file.base)[0] + 1
        folder = Path(analysis.path).parent if analysis.path else Path()
        path, text = str(folder / file.shown), f"{ir_text}   (from {file.shown}:{line})"
    if origin is not None:
        inside = "".join(f" in fn {name}" for name in reversed(origin.outer))
        text = f"{ir_text}   (from fn {origin.fn}{inside}, called at line {line})"
    elif file is None:
        # (a block's `let` local is renamed apart, `h@let.3`: the tuples read carry that
        # name, so the equation as written shows it too)
        for local in set(re.findall(r"[\w:]+@let\.\d+", ir_text)):
            text = re.sub(rf"(?<![\w:@.]){re.escape(local.split('@')[0])}(?=\s*[(\[])",
                          local, text)
    return path, line, text


def rules_of(analysis: Analysis, name: str) -> list[Rule]:
    """The rules of relation `name`, one per term of each of its equations."""
    out = []
    statements = analysis.program.statements
    for k in analysis.tensors[name].statements:
        stmt = statements[k]
        if not isinstance(stmt, ir.Equation):
            continue
        file, line, text = statement_place(analysis, k)
        terms = stmt.rhs.terms if isinstance(stmt.rhs, ir.Sum) else (stmt.rhs,)
        signs = stmt.rhs.signs if isinstance(stmt.rhs, ir.Sum) else ("+",)
        for sign, term in zip(signs, terms):
            try:
                if sign == "-" or stmt.op not in ("=", "+="):
                    raise Unsupported("a subtraction or a projection other than a sum")
                head = _args(analysis, name, stmt.lhs, head=True)
                body = tuple(_goal(analysis, f) for f in _factors(term))
                out.append(Rule(k, line, text, head, tuple(g for g in body if g is not None),
                                file=file))
            except Unsupported as err:
                out.append(Rule(k, line, text, (), (), str(err), file))
    return out


def _factors(term: ir.Expr) -> tuple[ir.Expr, ...]:
    if isinstance(term, ir.Product):
        if any(op == "/" for op in term.ops):
            raise Unsupported("a division")
        return term.factors
    return (term,)


def _goal(analysis: Analysis, factor: ir.Expr) -> Atom | Compare | None:
    text = analysis.text[factor.span.start:factor.span.end]
    if isinstance(factor, ir.Number) and factor.value > 0:
        return None  # a positive weight changes no tuple of a Boolean relation
    if isinstance(factor, ir.Ref) and factor.indices is not None:
        return _atom(analysis, factor, False, text)
    if isinstance(factor, ir.Call) and factor.name == "not" and len(factor.args) == 1 \
            and isinstance(factor.args[0], ir.Ref) and factor.args[0].indices is not None:
        return _atom(analysis, factor.args[0], True, text)
    if isinstance(factor, ir.Call) and factor.name in COMPARISONS and len(factor.args) == 2:
        names = {r.name for r in ir.refs(factor) if r.indices is None}
        variables = frozenset(n for n in names if n[:1].islower() or n[:1] == "_")
        return Compare(factor.name, factor.args[0], factor.args[1], text.strip("()"
                                                                              ).strip(),
                       variables)
    raise Unsupported(f"the factor `{text}` is neither an atom, a `not` nor a comparison")


def _atom(analysis: Analysis, ref: ir.Ref, negated: bool, text: str) -> Atom:
    tensor = analysis.tensors.get(ref.name)
    if tensor is None or not tensor.boolean:
        raise Unsupported(f"`{ref.name}` is not a Boolean relation")
    return Atom(ref.name, _args(analysis, ref.name, ref, head=False), negated, text)


def _args(analysis: Analysis, name: str, ref: ir.Ref, head: bool) -> tuple[Arg, ...]:
    axes = analysis.tensors[name].axes
    out = []
    for pos, ix in enumerate(ref.indices or ()):
        text = analysis.text[ix.span.start:ix.span.end]
        if isinstance(ix, ir.IndexVar):
            out.append(Arg(ix.name, -1, "_" if is_wildcard(ix.name) else text))
        elif isinstance(ix, ir.IndexConst):
            out.append(Arg(None, constant_position(analysis, axes[pos].domain, ix.value), text))
        elif head and isinstance(ix, ir.IndexShift):
            out.append(Arg(None, -1, text, (tuple(t.name for t in ix.terms), ix.offset)))
        else:
            raise Unsupported(f"the index `{text}` of `{ref.name}`")
    return tuple(out)


def evaluate(expr: ir.Expr, bound: Mapping[str, Any]) -> Any:
    """An expression of a comparison on values: variables, numbers, constants."""
    if isinstance(expr, ir.Number):
        return int(expr.value) if float(expr.value).is_integer() and "." not in expr.text \
            and "e" not in expr.text.lower() else expr.value
    if isinstance(expr, ir.String):
        return expr.value
    if isinstance(expr, ir.Ref) and expr.indices is None:
        return bound[expr.name] if expr.name in bound else expr.name
    if isinstance(expr, ir.Neg):
        return -evaluate(expr.operand, bound)
    if isinstance(expr, ir.Sum):
        total = 0
        for sign, term in zip(expr.signs, expr.terms):
            value = evaluate(term, bound)
            total = total - value if sign == "-" else total + value
        return total
    if isinstance(expr, ir.Product) and all(op in ("", " ", "*") for op in expr.ops):
        product = 1
        for factor in expr.factors:
            product = product * evaluate(factor, bound)
        return product
    raise Unsupported("a comparison of an expression other than sums and products")


def compare_holds(goal: Compare, bound: Mapping[str, Any]) -> bool:
    try:
        return bool(COMPARE[goal.op](evaluate(goal.left, bound), evaluate(goal.right, bound)))
    except TypeError:  # a symbol against a number: never equal, never ordered
        return goal.op == "!="


def compare_text(goal: Compare, bound: Mapping[str, Any]) -> str:
    """`30 > 18`, `4 == 2 + 2`: a comparison with its variables' values put in."""
    return f"{_with_values(goal.left, bound)} {goal.op} {_with_values(goal.right, bound)}"


def _with_values(expr: ir.Expr, bound: Mapping[str, Any]) -> str:
    if isinstance(expr, ir.Ref) and expr.indices is None and expr.name in bound:
        return show_value(bound[expr.name])
    if isinstance(expr, ir.Number):
        return expr.text
    if isinstance(expr, ir.Sum):
        text = _with_values(expr.terms[0], bound)
        if expr.signs[0] == "-":
            text = f"-{text}"
        for sign, term in zip(expr.signs[1:], expr.terms[1:]):
            text += f" {sign} {_with_values(term, bound)}"
        return text
    if isinstance(expr, ir.Product) and all(op in ("", " ", "*") for op in expr.ops):
        return " * ".join(_with_values(f, bound) for f in expr.factors)
    try:
        return show_value(evaluate(expr, bound))
    except (Unsupported, KeyError, TypeError):
        return "?"
