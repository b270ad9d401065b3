"""Constants that a rule body or a query reads (LANGUAGE.md §14; docs/language.md,
"Values in relations").

A constant a body or a query writes (`Ancestor(Anne, x)?`) is looked up among its
column's values; it adds none (only facts, relation files and heads do).  One
that no fact, file or head of its column holds matches nothing: that is
`unknown-constant`, with the close values of the column as fixes.  A lowercase
name in a query is a variable, even where the column holds a symbol spelled so
(`Ancestor(ann, x)?`): `lowercase-constant` offers the quoted constant.  A
negative integer on an axis whose domain holds no values is no position.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from ..front.span import shifted
from ..io.cells import value_text
from .domains import Domains, Key
from .symbols import TensorSymbol


def check_constants(statements: Iterable[ir.Statement], tensors: dict[str, TensorSymbol],
                    domains: Domains, diags: list[Diagnostic],
                    refs_of: Callable[[int, ir.Statement], Sequence[ir.Ref] | None] | None = None,
                    deltas: Mapping[int, int] | None = None) -> None:
    """unknown-constant, lowercase-constant and negative positions of the
    constants bodies and queries read (statements as their spans are).
    `refs_of(k, stmt)`: statement k's references as the checker found them, when
    it has them (None: they are walked again here).  `deltas`: id of a statement
    reused where it was -> how far it moved; only a statement that reads a constant
    (or is a query) is copied to where it is now (an edit at the top moves every
    statement, and copying them all cost a quarter of the re-check)."""
    held: dict[Key, frozenset] = {}  # per domain root: the values it holds

    def values(key: Key) -> frozenset:
        root = domains.find(key)
        if root not in held:
            held[root] = frozenset(domains.symbols(root)) if domains.holds_symbols(root) \
                else frozenset()
        return held[root]

    for k, stmt in enumerate(statements):
        if type(stmt) is ir.Equation and stmt.lhs.indices \
                and any(type(i) is ir.IndexConst and _negative(i.value) for i in stmt.lhs.indices):
            at = shifted(stmt, deltas[id(stmt)]) if deltas and id(stmt) in deltas else stmt
            _negative_positions(at.lhs, tensors, domains, values, diags)
        read = list(_read_refs(stmt, refs_of(k, stmt) if refs_of is not None else None))
        if read and deltas and id(stmt) in deltas:
            stmt = shifted(stmt, deltas[id(stmt)])
            read = list(_read_refs(stmt, None))
        like_variables = _like_variables(stmt) if read and not read[0][1] else {}
        for ref, query in read:
            sym = tensors.get(ref.name)
            if sym is None or sym.arity != len(ref.indices or ()):
                continue
            for pos, index in enumerate(ref.indices or ()):
                key = ("axis", ref.name, pos)
                if not domains.known(key):
                    continue
                if isinstance(index, ir.IndexConst):
                    _constant(ref, pos, index, key, values, domains, diags,
                              sym.boolean and domains.extent(key) is None)
                    if diags and diags[-1].span == index.span and \
                            diags[-1].code == "unknown-constant" and \
                            not index.quoted and index.value in like_variables:
                        diags[-1] = _as_variable(diags[-1], index.value, like_variables)
                elif query and isinstance(index, ir.IndexVar) and index.name in values(key):
                    diags.append(make(
                        "lowercase-constant", f"`{index.name}` is a variable (a lowercase "
                        f"name), and column {pos + 1} of `{ref.name}` also holds the symbol "
                        f"`{index.name}`; to ask about that symbol, quote it: "
                        f"{value_text(index.name)}", index.span,
                        fixes=(Fix(f"Change to the constant `{value_text(index.name)}`",
                                   (TextEdit(index.span, value_text(index.name)),)),)))
                elif query and isinstance(index, ir.IndexVar) and len(index.name) >= 3:
                    _capitalised(ref, pos, index, values(key), diags)


def _negative(value: object) -> bool:
    return type(value) is int and value < 0


def _negative_positions(lhs: ir.Ref, tensors: dict[str, TensorSymbol], domains: Domains,
                        values: Callable[[Key], frozenset], diags: list[Diagnostic]) -> None:
    """`X[-1] = 5` on an axis that holds no values: a position cannot be negative,
    on the left as on the right (the write fell outside the axis and was dropped)."""
    sym = tensors.get(lhs.name)
    if sym is None or sym.arity != len(lhs.indices or ()):
        return
    for pos, index in enumerate(lhs.indices or ()):
        key = ("axis", lhs.name, pos)
        if type(index) is ir.IndexConst and _negative(index.value) and domains.known(key) \
                and not values(key):
            diags.append(make(
                "invalid-index", f"{index.value} is not a position: axis {pos} of `{lhs.name}` "
                f"holds no values, so its constants are positions from 0 (the last is "
                f"its extent - 1)", index.span))


def _like_variables(stmt: ir.Statement) -> dict[str, list]:
    """A rule's bare capitalised constants written more than once (`Path(X, Z) =
    Path(X, Y) Edge(Y, Z)`: Soufflé's variables), each with its spans, where its
    lowercase name is no variable of the rule already."""
    if not isinstance(stmt, ir.Equation) or not stmt.lhs.paren:
        return {}
    seen: dict[str, list] = {}
    names: set[str] = set()
    for ref in (stmt.lhs, *ir.refs(stmt.rhs)):
        for index in ref.indices or ():
            if isinstance(index, ir.IndexConst) and not index.quoted and \
                    type(index.value) is str:
                seen.setdefault(index.value, []).append(index.span)
            names.update(v.name for v in ir.index_vars(index))
    return {name: spans for name, spans in seen.items()
            if len(spans) > 1 and name.lower() not in names}


def _as_variable(diag: Diagnostic, name: str, like: dict[str, list]) -> Diagnostic:
    """unknown-constant of a constant the rule uses as Soufflé uses a variable: say
    that a Fuse variable is lowercase, with the fix that writes every such name of
    the rule so (`like`: _like_variables)."""
    from dataclasses import replace

    names = ", ".join(f"`{n}`" for n in like)
    lowers = ", ".join(f"`{n.lower()}`" for n in like)
    return replace(diag, message=(
        f"{diag.message}; if `{name}` is meant as a variable (Soufflé writes `{name}`), "
        f"write it in lowercase, `{name.lower()}`: a Fuse variable starts with a lowercase "
        f"letter, a name starting with an uppercase one is a constant"),
        fixes=(Fix(f"Make {names} the variable{'s' * (len(like) > 1)} {lowers} in this rule",
                   tuple(TextEdit(span, n.lower()) for n, spans in like.items()
                         for span in sorted(spans))), *diag.fixes))


def _capitalised(ref: ir.Ref, pos: int, index: ir.IndexVar, held: frozenset,
                 diags: list[Diagnostic]) -> None:
    """`Parent(ann, x)?` where the column holds `Ann`: the variable `ann` (a
    lowercase name) asks for every value, where the symbol was likely meant."""
    name = index.name
    if not name[0].islower() or name.capitalize() not in held:
        return
    symbol = name.capitalize()
    diags.append(make(
        "lowercase-constant", f"`{name}` is a variable (a lowercase name), so this query "
        f"asks for every value of column {pos + 1} of `{ref.name}`, which holds the symbol "
        f"`{symbol}`; did you mean `{symbol}`?", index.span,
        fixes=(Fix(f"Change to the constant `{symbol}`", (TextEdit(index.span, symbol),)),)))


def _read_refs(stmt: ir.Statement, refs: Sequence[ir.Ref] | None
               ) -> Iterable[tuple[ir.Ref, bool]]:
    """The references a statement reads that may hold a constant to look up (a
    query's atom, or a reference with a constant index), each with whether it is a
    query's atom.  `refs`: the references of its right-hand side, if known."""
    if isinstance(stmt, ir.Query):
        yield stmt.atom, True
        return
    rhs = stmt.rhs if isinstance(stmt, (ir.Equation, ir.Sink)) else None
    if rhs is None:
        return
    IndexConst = ir.IndexConst
    for ref in ir.refs(rhs) if refs is None else refs:
        # (a body's reference matters only with a constant in it)
        if ref.indices and IndexConst in map(type, ref.indices):
            yield ref, False


def _constant(ref: ir.Ref, pos: int, index: ir.IndexConst, key: Key, values,
              domains: Domains, diags: list[Diagnostic], empty_column: bool) -> None:
    """`empty_column`: the axis is a relation's column that nothing gives a value
    or an extent (check.datalog closes it empty): any constant there matches nothing."""
    value = index.value
    holds = values(key)
    if holds:
        if value in holds:
            return
        diags.append(_unknown(ref, pos, index, holds))
    elif type(value) is str or empty_column:
        diags.append(make(
            "unknown-constant", f"`{value_text(value)}` is not a value of column {pos + 1} "
            f"of `{ref.name}`: no fact, file or head gives that column any value, so this "
            f"{'atom' if ref.paren else 'reference'} matches nothing", index.span))
    elif value < 0:
        diags.append(make(
            "invalid-index", f"{value} is not a position: axis {pos} of `{ref.name}` holds "
            f"no values, so its constants are positions from 0; use an offset like `t-1`",
            index.span))


def _unknown(ref: ir.Ref, pos: int, index: ir.IndexConst, holds: frozenset) -> Diagnostic:
    import difflib  # (a rare path: kept out of `fuse check`'s start-up)

    value = index.value
    texts = {str(v): v for v in holds}
    close = [texts[c] for c in difflib.get_close_matches(str(value), list(texts), n=3)]
    if type(value) is str:  # a quoted "1" for the number 1, and the other way round
        close += [v for v in holds if type(v) is not str and str(v) == value]
    elif str(value) in holds:
        close.append(str(value))
    close = list(dict.fromkeys(close))
    shown = ", ".join(value_text(v) for v in sorted(holds, key=_order)[:4])
    more = ", …" if len(holds) > 4 else ""
    hint = f"; did you mean {' or '.join(f'`{value_text(c)}`' for c in close)}?" \
        if close else ""
    return make(
        "unknown-constant", f"`{value_text(value)}` is not a value of column {pos + 1} of "
        f"`{ref.name}` (it holds {shown}{more}): no fact, file or head puts it there, so this "
        f"{'atom' if ref.paren else 'reference'} matches nothing{hint}", index.span,
        fixes=tuple(Fix(f"Change to `{value_text(c)}`",
                        (TextEdit(index.span, value_text(c)),)) for c in close))


def _order(value: object) -> tuple:
    return (type(value) is str, value if type(value) is not str else 0, str(value))
