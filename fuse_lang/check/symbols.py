"""Name resolution: tensors to their definitions and uses, index variables to
their occurrences, scopes and roles (LANGUAGE.md §3, §5).

Everything hover, go-to-definition, references, rename and the planner need
is a lookup in the tables built here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.ir import slice_name
from ..front.relocation import moved_span
from ..front.span import Span
from .kinds import TensorKind

SUM_OPS = ("=", "+=")


# Scope, Occurrence and IndexRole are named tuples, not dataclasses: the checker
# makes several per statement of a program (hundreds of thousands in a large one),
# and a tuple is made in C, about three times faster.  Immutable all the same.


class Scope(NamedTuple):
    """A projection scope: the RHS, a call argument, or a `reduce` body."""

    id: int
    parent: int | None
    kind: str  # "rhs" | "argument" | "reduce"
    op: str  # how it projects: "sum", "max", "min", "avg"
    span: Span
    explicit: tuple[str, ...] = ()  # reduce's named indices


class Occurrence(NamedTuple):
    name: str
    span: Span
    scope: int
    tensor: str | None  # the tensor whose reference holds it (None: index value, builtin arg)
    position: int | None  # its position in that reference
    form: str  # "var" | "shift" | "sum" | "div" | "virtual" | "slice" | "value" | "argument"
    lhs: bool


class IndexRole(NamedTuple):
    """What one index variable does in one statement."""

    name: str
    statement: int
    occurrences: tuple[Occurrence, ...]
    role: str  # "output" | "projected" | "free"
    op: str | None  # projection operator when projected
    scope: Scope | None  # where it is projected
    factors: tuple[str, ...]  # tensors whose references mention it (RHS)
    joined: bool  # shared by two or more factors of one product

    @property
    def spans(self) -> tuple[Span, ...]:
        return tuple(o.span for o in self.occurrences)


# The hottest places make them from a tuple of every field, in order, skipping
# even the named tuple's own __new__ (a Python function).
new_scope = partial(tuple.__new__, Scope)
new_occurrence = partial(tuple.__new__, Occurrence)
new_role = partial(tuple.__new__, IndexRole)


@dataclass(slots=True)
class TensorSymbol:
    name: str
    boolean: bool
    arity: int | None  # None until known (bare LHS with a source or const)
    first: ir.Ref  # the defining LHS that fixes axis order
    # how far `first`'s statement moved since its spans were found (front/relocation.py):
    # read its spans as first_span and first_name_span
    first_delta: int = 0
    definitions: list[Span] = field(default_factory=list)  # every defining LHS' name
    statements: list[int] = field(default_factory=list)
    uses: list[Span] = field(default_factory=list)  # every reading reference's name
    source: ir.Source | None = None
    is_param: bool = False
    has_facts: bool = False
    ops: list[str] = field(default_factory=list)

    @property
    def first_span(self) -> Span:
        return moved_span(self.first.span, self.first_delta)

    @property
    def first_name_span(self) -> Span:
        return moved_span(self.first.name_span, self.first_delta)

    @property
    def kind(self) -> TensorKind:
        if self.is_param:
            return TensorKind.PARAM
        if self.source is not None:
            return TensorKind.RELATION_SOURCE if self.boolean else TensorKind.SOURCE
        return TensorKind.BOOLEAN_RELATION if self.boolean else TensorKind.DENSE


def statement_scopes(stmt: ir.Statement) -> tuple[dict[int, Scope], list[tuple[ir.Expr, int]]]:
    """Scopes of a statement's RHS and each expression node's innermost scope."""
    scopes: dict[int, Scope] = {}
    placed: list[tuple[ir.Expr, int]] = []
    exprs = ir.used_exprs(stmt)
    if not exprs:
        return scopes, placed
    op = "sum"
    if isinstance(stmt, ir.Equation) and stmt.op not in SUM_OPS:
        op = stmt.op[:-1]
    root_span = exprs[0].span if len(exprs) == 1 else stmt.span
    scopes[0] = Scope(0, None, "rhs", op, root_span)
    stack: list[tuple[ir.Expr, int]] = [(e, 0) for e in reversed(exprs)]
    pop, place = stack.pop, placed.append
    Ref, Number, Call, Reduce = ir.Ref, ir.Number, ir.Call, ir.Reduce
    children = ir.children
    while stack:
        item = pop()
        place(item)
        node, scope = item
        kind = type(node)
        if kind is Ref or kind is Number:  # leaves: most nodes
            continue
        if kind is Call:
            for arg in reversed(children(node)):
                sid = len(scopes)
                scopes[sid] = new_scope((sid, scope, "argument", "sum", arg.span, ()))
                stack.append((arg, sid))
        elif kind is Reduce:
            sid = len(scopes)
            scopes[sid] = Scope(sid, scope, "reduce", node.op, node.span,
                                tuple(i.name for i in node.indices))
            stack.append((node.body, sid))
        else:
            stack += [(child, scope) for child in reversed(children(node))]
    return scopes, placed


def scope_openers(stmt: ir.Statement) -> dict[int, int]:
    """`id(expr)` of each expression that opens a scope (a call's argument, a
    `reduce` body) -> the scope that expression is placed in, numbered and placed
    as `statement_scopes` does (the same walk, without making its scopes: the
    planner asks this of every equation)."""
    exprs = ir.used_exprs(stmt)
    if not exprs:
        return {}
    placed_in: dict[int, int] = {}
    openers: list[ir.Expr] = []
    count = 1  # scope 0 is the right-hand side
    stack: list[tuple[ir.Expr, int]] = [(e, 0) for e in reversed(exprs)]
    pop = stack.pop
    Ref, Number, Call, Reduce = ir.Ref, ir.Number, ir.Call, ir.Reduce
    children = ir.children
    while stack:
        node, scope = pop()
        placed_in[id(node)] = scope
        kind = type(node)
        if kind is Ref or kind is Number:
            continue
        if kind is Call:
            for arg in reversed(children(node)):
                stack.append((arg, count))
                count += 1
            openers += node.args  # type: ignore[attr-defined]
            openers += [kw.value for kw in node.kwargs]  # type: ignore[attr-defined]
        elif kind is Reduce:
            stack.append((node.body, count))  # type: ignore[attr-defined]
            count += 1
            openers.append(node.body)  # type: ignore[attr-defined]
        else:
            stack += [(child, scope) for child in reversed(children(node))]
    return {id(e): placed_in[id(e)] for e in openers}


def _index_form(index: ir.Index) -> str:
    if isinstance(index, ir.IndexVar):
        return "var"
    if isinstance(index, ir.IndexShift):
        return "shift" if len(index.terms) == 1 else "sum"
    if isinstance(index, ir.IndexDiv):
        return "div"
    if isinstance(index, ir.IndexVirtual):
        return "virtual"
    return "const"


def occurrences(stmt: ir.Statement, tensors: dict[str, TensorSymbol],
                scopes_and_nodes: tuple[dict[int, Scope], list[tuple[ir.Expr, int]]]
                ) -> list[Occurrence]:
    """Every index-variable occurrence in a statement, LHS first."""
    out: list[Occurrence] = []
    for lhs in ir.defined_refs(stmt) if not isinstance(stmt, ir.Fact) else ():
        ref_occurrences(lhs, 0, True, out)
    lhs_count = len(out)
    _, nodes = scopes_and_nodes
    ref_vars: set[str] | None = None  # the variables of every reference: made if needed
    scope_of: dict[int, int] | None = None  # node -> its scope: made if needed
    Ref = ir.Ref
    for node, scope in nodes:
        kind = type(node)
        if kind is Ref:
            if node.indices is None:
                if node.name not in tensors:
                    if ref_vars is None:
                        ref_vars = _ref_vars(out[:lhs_count], nodes)
                    if node.name in ref_vars:
                        out.append(Occurrence(node.name, node.span, scope, None, None, "value",
                                              False))
                continue
            ref_occurrences(node, scope, False, out)
        elif kind is ir.Reduce:
            if scope_of is None:
                scope_of = {id(node): scope for node, scope in nodes}
            inner = scope_of.get(id(node.body), scope)  # the reduce's own scope
            for var in node.indices:
                out.append(Occurrence(var.name, var.span, inner, None, None, "argument", False))
        elif kind is ir.Call:
            for kw in node.kwargs:
                if kw.name == "axis" and isinstance(kw.value, ir.Ref) and kw.value.indices is None:
                    out.append(Occurrence(kw.value.name, kw.value.span, scope, None, None,
                                          "argument", False))
    return out


def _ref_vars(lhs: list[Occurrence], nodes: list[tuple[ir.Expr, int]]) -> set[str]:
    """The variables of the left-hand side, of every reference's indices and of every
    `reduce` (`k` in `W[j] k + reduce(max, k) W[j]`: a value outside the reduce,
    summed there; it was no occurrence, and the run left its axis over)."""
    names = {o.name for o in lhs}
    for node, _scope in nodes:
        if type(node) is ir.Ref and node.indices:
            for index in node.indices:
                names.update([v.name for v in ir.index_vars(index)])
        elif type(node) is ir.Reduce:
            names.update(v.name for v in node.indices)
    return names


def ref_occurrences(ref: ir.Ref, scope: int, lhs: bool, out: list[Occurrence]) -> None:
    slices = 0
    name = ref.name
    IndexVar = ir.IndexVar
    for pos, index in enumerate(ref.indices or ()):
        if type(index) is IndexVar:  # most indices: made without Occurrence's own __new__
            out.append(new_occurrence((index.name, index.span, scope, name, pos, "var", lhs)))
            continue
        if isinstance(index, ir.IndexSlice):
            out.append(Occurrence(slice_name(slices), index.span, scope, ref.name, pos, "slice",
                                  lhs))
            slices += 1
            continue
        form = _index_form(index)
        for var in ir.index_vars(index):
            out.append(Occurrence(var.name, var.span, scope, ref.name, pos, form, lhs))


def _ancestors(scopes: dict[int, Scope], sid: int) -> list[int]:
    chain = []
    cur: int | None = sid
    while cur is not None:
        chain.append(cur)
        cur = scopes[cur].parent
    return chain


def index_roles(statement: int, stmt: ir.Statement, occs: list[Occurrence],
                scopes: dict[int, Scope], nodes: list[tuple[ir.Expr, int]]) -> list[IndexRole]:
    """The role of each index variable (LANGUAGE.md §5's one rule), from its
    occurrences as `occurrences` lists them (the left-hand side's first)."""
    by_name: dict[str, list[Occurrence]] = {}
    for occ in occs:
        found = by_name.get(occ.name)
        if found is None:
            by_name[occ.name] = [occ]
        else:
            found.append(occ)
    joined_names = _joined_names(nodes)
    keeps_free = isinstance(stmt, (ir.Sink, ir.Query))
    # scope 0 is the right-hand side, never a reduce
    reduces = [scope for scope in scopes.values() if scope.kind == "reduce"] \
        if len(scopes) > 1 else ()
    roles = []
    for name, found in by_name.items():
        if len(found) == 1:  # many indices: no list to make
            first_occ = found[0]
            factors = (first_occ.tensor,) if first_occ.tensor and not first_occ.lhs else ()
        else:
            factors = tuple(dict.fromkeys([o.tensor for o in found if o.tensor and not o.lhs]))
        if found[0].lhs:
            roles.append(new_role((name, statement, tuple(found), "output", None, None,
                                          factors, name in joined_names)))
            continue
        if keeps_free or not scopes:
            roles.append(IndexRole(name, statement, tuple(found), "free", None, None, factors,
                                   name in joined_names))
            continue
        # `reduce(op, j)` binds j in its body: occurrences there are projected
        # by the reduce, any others form their own projection outside it
        groups: list[tuple[Scope, list[Occurrence]]] = []
        rest = found
        for scope in reduces:
            if name in scope.explicit:
                inside = [o for o in rest if scope.id in _ancestors(scopes, o.scope)]
                rest = [o for o in rest if o not in inside]
                groups.append((scope, inside))
        if rest:
            first = rest[0].scope
            one_scope = True
            for o in rest:  # a loop, not all(...): a generator costs more than a few items
                if o.scope != first:
                    one_scope = False
                    break
            if one_scope and scopes[first].kind != "reduce":
                home = scopes[first]  # all in one scope (most indices): that one
            else:
                home = common_scope(scopes, rest)
            if home.kind == "argument":
                home = _outside_comparisons(scopes, home, nodes)
            groups.append((home, rest))
        for scope, members in groups:
            roles.append(new_role((name, statement, tuple(members), "projected", scope.op,
                                          scope, factors, name in joined_names)))
    return roles


def _outside_comparisons(scopes: dict[int, Scope], home: Scope,
                         nodes: list[tuple[ir.Expr, int]]) -> Scope:
    """`home`, or the scope around it where it is a comparison's operand: a
    comparison is a Boolean factor of its indices (LANGUAGE.md §13), no scope that
    projects them (`C = reduce(max, k) A[k] + (k != 1)`: k outside the reduce is
    summed on the right-hand side, as in `... + k`; the run kept its axis)."""
    scope_of = {id(node): scope for node, scope in nodes}
    compared = {scope_of.get(id(arg)) for node, _ in nodes
                if type(node) is ir.Call and node.name in COMPARISONS for arg in node.args}
    while home.parent is not None and (home.kind == "reduce" or home.id in compared):
        home = scopes[home.parent]
    return home


def common_scope(scopes: dict[int, Scope], occs: list[Occurrence]) -> Scope:
    """The innermost scope that holds every one of `occs` and is no reduce's."""
    # a reduce projects only the indices it names: for any other index its
    # body is no scope of its own (LANGUAGE.md §5 lists the RHS and call
    # arguments); the innermost scope holding them all projects them
    chains = [[s for s in _ancestors(scopes, o.scope) if scopes[s].kind != "reduce"]
              for o in occs]
    common = set(chains[0]).intersection(*chains[1:])
    return scopes[next(s for s in chains[0] if s in common)]


def _joined_names(nodes: list[tuple[ir.Expr, int]]) -> set[str]:
    """Names shared by two or more reference factors of one product."""
    joined: set[str] = set()
    for node, _ in nodes:
        if type(node) is ir.Product:
            product_joins(node, joined)
    return joined


def product_joins(node: ir.Product, joined: set[str]) -> None:
    """Adds to `joined` the names shared by two or more reference factors of `node`."""
    seen: dict[str, int] = {}
    IndexVar = ir.IndexVar
    for k, factor in enumerate(node.factors):
        for ref in (factor,) if type(factor) is ir.Ref else ir.refs(factor):
            for index in ref.indices or ():
                if type(index) is IndexVar:  # most
                    if seen.setdefault(index.name, k) != k:
                        joined.add(index.name)
                    continue
                for var in ir.index_vars(index):
                    if seen.setdefault(var.name, k) != k:
                        joined.add(var.name)
