"""A term of a parenthesised sum counted once per position of a summed index
(LANGUAGE.md §5, docs/language.md "Projection": a product is one term).

`Y[b,f] = (W[f,d] X[b,d] + B[f]) G[f]` sums `d` over the whole product, so `B[f]`,
which does not mention `d`, is added |d| times: the bias-and-scale an ML user
wrote, `(X W^T + B) * G`, is `(X W^T + |d| B) * G`, without a word.  Where the
term reads an index of the left-hand side (a number or a scalar is a constant
per position, often meant to be counted) and no other factor of the product
mentions the summed index (one that does, `(A[i,j] + B[i]) C[j]`, spreads `B`
over `j` as meant), the term is told (`multiplied-term`), with
a fix that sums the index inside the parentheses, `(reduce(sum, d) W[f,d] X[b,d]
+ B[f])`, which adds it once and is clean."""
from __future__ import annotations

from typing import Sequence

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from ..front.ir_text import expr_text
from ..front.span import Span
from .symbols import IndexRole, Scope


def check_multiplied_terms(stmt: ir.Equation, roles: Sequence[IndexRole],
                           scopes: dict[int, Scope], calls: Sequence[ir.Call],
                           out: list[Diagnostic]) -> None:
    """`multiplied-term` for each term of a parenthesised sum that a summed index of
    the equation multiplies by its extent (the equation's roles and scopes)."""
    bodies: dict[int, tuple[ir.Expr, ...]] = {}  # scope id -> its terms with a sum factor
    outputs: list[Span] | None = None  # where the right-hand side reads the LHS's indices
    for role in roles:
        scope = role.scope
        if role.role != "projected" or role.op != "sum" or scope is None \
                or scope.kind == "reduce":
            continue
        terms = bodies.get(scope.id)
        if terms is None:
            body = stmt.rhs if scope.kind == "rhs" else _argument(calls, scope.span)
            terms = bodies[scope.id] = () if body is None else _with_sum_factor(body)
        if terms:  # (most equations have none: a matmul, a bias added at the top)
            if outputs is None:
                outputs = [o.span for r in roles if r.role == "output"
                           for o in r.occurrences if not o.lhs]
            spans = [o.span for o in role.occurrences if not o.lhs]
            for term in terms:
                _look_at(term, role.name, spans, outputs, out)


def _with_sum_factor(body: ir.Expr) -> tuple[ir.Expr, ...]:
    """The terms of a scope's expression that are products with a (negated) sum
    among their factors."""
    out = []
    for term in body.terms if type(body) is ir.Sum else (body,):
        while type(term) is ir.Neg:
            term = term.operand
        if type(term) is ir.Product and any(
                type(f) is ir.Sum or (type(f) is ir.Neg and type(f.operand) is ir.Sum)
                for f in term.factors):
            out.append(term)
    return tuple(out)


def _argument(calls: Sequence[ir.Call], span: Span) -> ir.Expr | None:
    for call in calls:
        for arg in call.args:
            if arg.span == span:
                return arg
    return None


def _mentions(expr: ir.Expr, spans: list[Span]) -> bool:
    start, end = expr.span
    return any(start <= s[0] and s[1] <= end for s in spans)


def _look_at(term: ir.Expr, name: str, spans: list[Span], outputs: list[Span],
             out: list[Diagnostic]) -> None:
    """Tell the terms of `term`'s one parenthesised-sum factor that lack `name` and
    read an index of the left-hand side (`B[f]`), where no other factor has `name`
    (a product summed over `name` as a whole).  A term that reads no such index, a
    number or a scalar, is a constant per position, whose count is meant as often
    as not: the `- 1` of a VAE's `0.5 (S[d] + M[d]^2 - 1 - log(S[d]))`."""
    while type(term) is ir.Neg:
        term = term.operand
    if type(term) is not ir.Product:
        return
    holding = [(factor, op) for factor, op in zip(term.factors, term.ops)
               if _mentions(factor, spans)]
    if len(holding) != 1:
        return
    factor, op = holding[0]
    while type(factor) is ir.Neg:
        factor = factor.operand
    if op == "/" or type(factor) is not ir.Sum:
        return
    with_index = [t for t in factor.terms if _mentions(t, spans)]
    without = [t for t in factor.terms if not _mentions(t, spans) and _mentions(t, outputs)]
    if not without:
        for inner in with_index:  # (a product inside: its own parentheses)
            _look_at(inner, name, spans, outputs, out)
        return
    fix = Fix(f"Sum `{name}` inside the parentheses (reduce)",
              tuple(TextEdit(Span(t.span[0], t.span[0]), f"reduce(sum, {name}) ")
                    for t in with_index))
    for lone in without:
        shown = expr_text(lone)
        out.append(make(
            "multiplied-term",
            f"`{shown}` does not mention `{name}`, but it is a term of a sum in parentheses "
            f"that is a factor of a product summed over `{name}` (a product is one term), so "
            f"it is counted once per position of `{name}`; to count it once, sum `{name}` "
            f"inside the parentheses: `reduce(sum, {name})` before the terms that have it",
            lone.span, related=(Related(factor.span, f"summed over `{name}` as a whole"),),
            fixes=(fix,)))
