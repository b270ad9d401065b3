"""An equation's index roles that need a second look: left-hand-side indices no
term gives an extent (broadcast), and pairs of projected indices that look like
one slip of the keyboard (a join that was meant)."""
from __future__ import annotations

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from ..front.span import Span
from .symbols import IndexRole


def broadcast_and_lonely(roles: list[IndexRole]) -> tuple[list[IndexRole], list[IndexRole]]:
    """An equation's roles that need a look beyond it, in one loop: its left-hand
    side's indices no right-hand term mentions (their extent must come from
    elsewhere), and its projected indices met once, in a reference (check_typos)."""
    broadcast: list[IndexRole] = []
    lonely: list[IndexRole] = []
    for role in roles:
        occs = role.occurrences
        if role.role == "output":
            # an output role holds all its name's occurrences, the LHS ones first:
            # the last is on the LHS if the RHS has none
            if occs[-1].lhs and occs[0].form != "slice":
                broadcast.append(role)
        elif role.role == "projected" and len(occs) == 1 \
                and occs[0].form != "slice" and occs[0].tensor is not None:
            lonely.append(role)
    return broadcast, lonely


def check_typos(stmt: ir.Equation, lonely: list[IndexRole], out: list[Diagnostic]) -> None:
    """`lonely`: the equation's projected roles of one occurrence each, in a reference
    (no slice)."""
    for a_pos, a in enumerate(lonely):
        for b in lonely[a_pos + 1:]:
            if a.scope is b.scope and _close_names(a.name, b.name) and _in_two_factors(
                    stmt.rhs, a.occurrences[0].span, b.occurrences[0].span):
                # the longer (or later) name is the likely slip
                keep, slip = (a, b) if len(a.name) <= len(b.name) else (b, a)
                span = slip.occurrences[0].span
                out.append(make(
                    "likely-typo-index",
                    f"`{a.name}` and `{b.name}` are each used once and both projected away;"
                    f" did you mean `{keep.name}` in both places (a join)?", span,
                    related=(Related(keep.occurrences[0].span, f"`{keep.name}` is here"),),
                    fixes=(Fix(f"Change `{slip.name}` to `{keep.name}`",
                               (TextEdit(span, keep.name),)),)))


def _close_names(a: str, b: str) -> bool:
    """Names one slip apart: `d`/`dd`, `dk`/`dv`, `x`/`x'`, `k1`/`k2`."""
    if a == b:
        return False
    if a.rstrip("'") == b.rstrip("'"):
        return True
    if abs(len(a) - len(b)) == 1:
        short, long_ = sorted((a, b), key=len)
        return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
    if len(a) == len(b) >= 2:
        return sum(x != y for x, y in zip(a, b)) == 1
    return False


def _in_two_factors(expr: ir.Expr, a: Span, b: Span) -> bool:
    """Whether spans `a` and `b` lie in different factors of one product (a join)."""
    def inside(span: Span, outer: Span) -> bool:
        return outer.start <= span.start and span.end <= outer.end
    for node in ir.walk(expr):
        if isinstance(node, ir.Product):
            fa = next((k for k, f in enumerate(node.factors) if inside(a, f.span)), None)
            fb = next((k for k, f in enumerate(node.factors) if inside(b, f.span)), None)
            if fa is not None and fb is not None and fa != fb:
                return True
    return False
