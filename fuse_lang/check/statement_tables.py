"""A statement's tables in one walk: its scopes, index roles, references, bare
names, calls and the nodes the checker looks at (check.statements), for an
equation from a single walk of it (the common case, and the checker's hottest
path), else from check.symbols' statement_scopes, occurrences and index_roles."""
from __future__ import annotations

from collections import defaultdict
from functools import partial
from typing import NamedTuple

from ..front import ir
from .literals import INFINITE
from .symbols import (
    SUM_OPS,
    IndexRole,
    Occurrence,
    Scope,
    TensorSymbol,
    common_scope,
    index_roles,
    new_occurrence,
    new_role,
    new_scope,
    occurrences,
    product_joins,
    ref_occurrences,
    statement_scopes,
)


class StatementTables(NamedTuple):
    """One statement's scopes and index roles (statement_scopes, index_roles) and
    its nodes the checker looks at, each list in the order of statement_scopes'."""

    scopes: dict[int, Scope]
    roles: list[IndexRole]
    refs: list[ir.Ref]
    bare: dict[str, None]  # the names of its bare references, each once
    calls: list[ir.Call]
    checked: list[tuple[int, ir.Expr]]  # its calls and reduces, each with how many refs
    #                                     come before it


_new_tables = partial(tuple.__new__, StatementTables)


def statement_tables(statement: int, stmt: ir.Statement, tensors: dict[str, TensorSymbol]
                     ) -> StatementTables:
    """What statement_scopes, occurrences and index_roles give for statement number
    `statement`, and its references, bare names, calls and reduces.

    An equation without a reduce (a scope that projects only some indices) or a bare
    name that is no tensor (maybe an index's value) has all that from one walk here,
    the three functions' work done at once; the rarer statements, from them."""
    if type(stmt) is not ir.Equation:
        return _tables_of(statement, stmt, tensors)
    walked = _walk_equation(stmt, tensors)
    if walked is None:
        return _tables_of(statement, stmt, tensors)
    by_name, joined, scopes, refs, bare, calls, checked = walked
    roles = _equation_roles(statement, by_name, scopes, joined)
    return _new_tables((scopes, roles, refs, bare, calls, checked))


def _walk_equation(stmt: ir.Equation, tensors: dict[str, TensorSymbol]
                   ) -> tuple | None:
    """One walk of an equation, in statement_scopes' order: its occurrences by name
    (the left-hand side's first, then each node's, as `occurrences` lists them), the
    names two factors of a product share, and its tables but the roles (scopes, refs,
    bare, calls, checked); None for an equation the walk leaves to the functions."""
    by_name: defaultdict[str, list[Occurrence]] = defaultdict(list)
    Ref, Number, Call, Product, Sum = ir.Ref, ir.Number, ir.Call, ir.Product, ir.Sum
    IndexVar = ir.IndexVar
    scopes: dict[int, Scope] = {}
    refs: list[ir.Ref] = []
    bare: dict[str, None] = {}
    calls: list[ir.Call] = []
    checked: list[tuple[int, ir.Expr]] = []
    literals: set[int] = set()  # const's arguments
    joined: set[str] = set()
    rhs = stmt.rhs
    op = stmt.op
    scopes[0] = new_scope((0, None, "rhs", "sum" if op in SUM_OPS else op[:-1], rhs.span, ()))
    # an int on the stack is a scope entered (a call's argument) or gone back to
    # (after its last one): no (node, scope) pairs
    stack: list = [rhs]
    pop = stack.pop
    children = ir.children
    _add_occurrences(stmt.lhs, 0, True, by_name)  # the left-hand side first
    scope = 0
    while stack:
        node = pop()
        kind = type(node)
        if kind is Ref:
            refs.append(node)
            if node.indices is None:
                if node.name not in tensors:
                    return None  # maybe an index's value
                bare[node.name] = None
            else:  # its occurrences to their names' lists (most: plain variables, here)
                name = node.name
                for pos, index in enumerate(node.indices):
                    if type(index) is not IndexVar:
                        _add_rest(node, scope, False, pos, by_name)
                        break
                    by_name[index.name].append(new_occurrence(
                        (index.name, index.span, scope, name, pos, "var", False)))
        elif kind is Number:
            if node.value in INFINITE:  # (`1e400`: number-overflow)
                checked.append((len(refs), node))
        elif kind is int:
            scope = node
        elif kind is Product:
            product_joins(node, joined)
            stack += reversed(node.factors)
        elif kind is Call:
            calls.append(node)
            checked.append((len(refs), node))
            if node.name == "const":  # its literal is its value
                literals.update(id(arg) for arg in node.args)
            for kw in node.kwargs:
                if kw.name == "axis" and isinstance(kw.value, Ref) and kw.value.indices is None:
                    return None  # a bare name's value
            stack.append(scope)
            for arg in reversed(children(node) if node.kwargs else node.args):
                sid = len(scopes)
                scopes[sid] = new_scope((sid, scope, "argument", "sum", arg.span, ()))
                stack += (arg, sid)
        elif kind is Sum:
            stack += reversed(node.terms)
        elif kind is ir.Reduce:
            return None  # a scope that projects only some indices
        elif kind is ir.ListLit:
            if id(node) not in literals:  # (a list outside const: misplaced-list)
                checked.append((len(refs), node))
            literals.update(id(item) for item in node.items)  # (said once, at the top)
            stack += reversed(children(node))
        else:
            stack += reversed(children(node))
    return by_name, joined, scopes, refs, bare, calls, checked


def _add_occurrences(ref: ir.Ref, scope: int, lhs: bool,
                     by_name: defaultdict[str, list[Occurrence]]) -> None:
    """Each occurrence in `ref`'s indices to its name's list."""
    indices = ref.indices
    if indices is None:
        return
    name = ref.name
    IndexVar = ir.IndexVar
    for pos, index in enumerate(indices):
        if type(index) is not IndexVar:
            break
        by_name[index.name].append(new_occurrence(
            (index.name, index.span, scope, name, pos, "var", lhs)))
    else:
        return
    _add_rest(ref, scope, lhs, pos, by_name)


def _add_rest(ref: ir.Ref, scope: int, lhs: bool, start: int,
              by_name: defaultdict[str, list[Occurrence]]) -> None:
    """The occurrences of `ref`'s indices from position `start` on (an index of
    another form than a plain variable) to their names' lists."""
    occs: list[Occurrence] = []  # all its occurrences anew: one per index before `start`
    ref_occurrences(ref, scope, lhs, occs)
    for occ in occs[start:]:
        by_name[occ.name].append(occ)


def _equation_roles(statement: int, by_name: dict[str, list[Occurrence]],
                    scopes: dict[int, Scope], joined: set[str]) -> list[IndexRole]:
    """index_roles for an equation without a reduce, from its occurrences by name."""
    roles: list[IndexRole] = []
    for name, found in by_name.items():
        # the tensors of its right-hand side's occurrences (here each has one, and
        # those of the left-hand side come first): most names have one or two
        first_occ = found[0]
        count = len(found)
        if count == 1:
            factors = () if first_occ.lhs else (first_occ.tensor,)
        elif count == 2:
            second = found[1]
            if second.lhs:
                factors = ()
            elif first_occ.lhs or first_occ.tensor == second.tensor:
                factors = (second.tensor,)
            else:
                factors = (first_occ.tensor, second.tensor)
        else:
            tensors_of: dict[str, None] = {}  # a loop, not a list comprehension: faster
            for o in found:
                if not o.lhs:
                    tensors_of[o.tensor] = None
            factors = tuple(tensors_of)
        if first_occ.lhs:
            roles.append(new_role((name, statement, tuple(found), "output", None, None,
                                    factors, name in joined)))
            continue
        first = first_occ.scope
        for o in found:
            if o.scope != first:
                home = common_scope(scopes, found)
                break
        else:
            home = scopes[first]
        roles.append(new_role((name, statement, tuple(found), "projected", home.op, home,
                                factors, name in joined)))
    return roles


def _tables_of(statement: int, stmt: ir.Statement, tensors: dict[str, TensorSymbol]
               ) -> StatementTables:
    """statement_tables by the functions it stands for, for any statement."""
    scopes, placed = statement_scopes(stmt)
    roles = index_roles(statement, stmt, occurrences(stmt, tensors, (scopes, placed)), scopes,
                        placed)
    refs: list[ir.Ref] = []
    bare: dict[str, None] = {}
    calls: list[ir.Call] = []
    checked: list[tuple[int, ir.Expr]] = []
    Ref, Call = ir.Ref, ir.Call
    literals = {id(arg) for node, _ in placed if type(node) is Call and node.name == "const"
                for arg in node.args}
    for node, _ in placed:
        kind = type(node)
        if kind is Ref:
            if node.indices is None:
                bare[node.name] = None
            refs.append(node)
        elif kind is Call:
            calls.append(node)
            checked.append((len(refs), node))
        elif kind is ir.Reduce or (kind is ir.ListLit and id(node) not in literals) \
                or (kind is ir.Number and node.value in INFINITE):
            checked.append((len(refs), node))
        if kind is ir.ListLit:  # (its own lists are said with it, at the top; placed
            literals.update(id(item) for item in node.items)  # lists a node first)
    return _new_tables((scopes, roles, refs, bare, calls, checked))
