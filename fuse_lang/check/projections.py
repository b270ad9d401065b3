"""An equation's index roles that need a second look: left-hand-side indices no
term gives an extent (broadcast), and pairs of projected indices that look like
one slip of the keyboard (a join that was meant)."""
from __future__ import annotations

from bisect import bisect_right

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from ..front.span import Span
from ..front.wildcards import is_wildcard
from .statement_tables import statement_tables
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
        elif role.role == "projected" and len(occs) == 1 and occs[0].form != "slice" \
                and occs[0].tensor is not None and not is_wildcard(role.name):
            lonely.append(role)  # (a `_` is meant to be alone: front/wildcards.py)
    return broadcast, lonely


def check_typos(stmt: ir.Equation, lonely: list[IndexRole], out: list[Diagnostic]) -> None:
    """`lonely`: the equation's projected roles of one occurrence each, in a reference
    (no slice)."""
    factors: _FactorPlaces | None = None
    for a_pos, b_pos in _close_pairs([role.name for role in lonely]):
        a, b = lonely[a_pos], lonely[b_pos]
        if a.scope is not b.scope:
            continue
        if factors is None:  # one walk of the equation, only when a pair is close
            factors = _FactorPlaces(stmt.rhs)
        if not factors.in_two_factors(a.occurrences[0].span, b.occurrences[0].span):
            continue
        out.append(_typo((a.name, a.occurrences[0].span), (b.name, b.occurrences[0].span)))


def _typo(a: tuple[str, Span], b: tuple[str, Span]) -> Diagnostic:
    """`likely-typo-index` for two close names (name, span), each met once."""
    # the longer (or later) name is the likely slip
    (keep, kept_at), (slip, span) = (a, b) if len(a[0]) <= len(b[0]) else (b, a)
    return make(
        "likely-typo-index",
        f"`{a[0]}` and `{b[0]}` are each used once and both projected away;"
        f" did you mean `{keep}` in both places (a join)?", span,
        related=(Related(kept_at, f"`{keep}` is here"),),
        fixes=(Fix(f"Change `{slip}` to `{keep}`", (TextEdit(span, keep),)),))


def body_typos(eq: ir.Equation) -> list[Diagnostic]:
    """check_typos for an equation of a function's body, read from its text: the
    checker sees only its copies at the calls, whose indices all have the call's
    place.  Its roles are found as a program equation's are (its scopes included:
    two close indices each summed in its own `reduce` or call argument are no join),
    with no tensor known, so a bare name an index of the equation has is its value."""
    _, lonely = broadcast_and_lonely(statement_tables(0, eq, {}).roles)
    out: list[Diagnostic] = []
    if len(lonely) > 1:
        check_typos(eq, lonely, out)
    return out


def _close_pairs(names: list[str]) -> list[tuple[int, int]]:
    """The pairs (i < j, in order) of `names` one slip apart (_close_names).  Found
    through keys that close names share, not by comparing every pair: an equation
    of thousands of indices was quadratic (issue 19)."""
    by_key: dict[tuple, list[int]] = {}
    for pos, name in enumerate(names):
        for key in _slip_keys(name):
            by_key.setdefault(key, []).append(pos)
    pairs: set[tuple[int, int]] = set()
    for group in by_key.values():
        if len(group) > 1:
            pairs.update((i, j) for k, i in enumerate(group) for j in group[k + 1:]
                         if _close_names(names[i], names[j]))
    return sorted(pairs)


def _slip_keys(name: str) -> set[tuple]:
    """Keys two names one slip apart have in common: the name without its primes;
    the name and each of its one-letter deletions (one letter more or less); each
    letter replaced by a hole (one letter changed)."""
    keys: set[tuple] = {("stripped", name.rstrip("'")), ("deleted", name)}
    for i in range(len(name)):
        keys.add(("deleted", name[:i] + name[i + 1:]))
        keys.add(("changed", name[:i], name[i + 1:]))
    return keys


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


class _FactorPlaces:
    """Where each reference of an expression lies: in which factor of which of
    its enclosing products, found in one walk."""

    def __init__(self, expr: ir.Expr) -> None:
        places: list[tuple[Span, dict[int, int]]] = []  # per reference, by start
        stack: list[tuple[ir.Expr, dict[int, int]]] = [(expr, {})]
        while stack:
            node, where = stack.pop()
            if isinstance(node, ir.Ref):
                places.append((node.span, where))
            if isinstance(node, ir.Product):
                for k, factor in enumerate(node.factors):
                    stack.append((factor, {**where, id(node): k}))
            else:
                stack.extend((child, where) for child in ir.children(node))
        places.sort(key=lambda place: place[0].start)
        self._places = places
        self._starts = [span.start for span, _ in places]

    def _where(self, span: Span) -> dict[int, int]:
        """The enclosing products' factors of the reference holding `span` (references
        do not nest: the last one starting before `span`)."""
        pos = bisect_right(self._starts, span.start) - 1
        if pos >= 0:
            ref_span, where = self._places[pos]
            if span.end <= ref_span.end:
                return where
        return {}

    def in_two_factors(self, a: Span, b: Span) -> bool:
        """Whether spans `a` and `b` lie in different factors of one product (a join)."""
        in_b = self._where(b)
        return any(in_b.get(product, k) != k for product, k in self._where(a).items())
