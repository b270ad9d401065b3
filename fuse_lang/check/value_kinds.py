"""Kinds of values: symbols have no order and no arithmetic (docs/language.md,
"Datalog in Fuse"; check.values runs this on the statements with a comparison
or a computed head).

A comparison, a computed head or a read at an offset over a column of symbols is
an error (`not-a-number`): `==`/`!=` between two variables compare values and
are fine, and so do they with a symbol constant, `(x != Ann)` (see
symbol_constant; one the column does not hold is `unknown-symbol`).  A number
past the largest float in a comparison is `number-overflow`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from ..front.span import shifted
from ..io.cells import value_text
from .compared_constants import compared_symbol, constant_text, symbol_constant
from .domains import Domains
from .symbols import TensorSymbol


def check_kinds(stmt: ir.Equation, k: int, tensors: dict[str, TensorSymbol], domains: Domains,
                diags: list[Diagnostic]) -> None:
    """The kind problems of statement `k` (a statement with a comparison or a
    computed head) into `diags`."""
    _check_kinds(stmt, k, tensors, domains, diags)
    _check_float_bindings(stmt, k, tensors, domains, diags)
    _check_divisions(stmt, k, domains, diags)


def check_constant_comparisons(locals_: Iterable[Any], deltas: Mapping[int, int],
                               tensors: dict[str, TensorSymbol], domains: Domains,
                               diags: list[Diagnostic]) -> None:
    """The kind problems of the equations without variables (check.statements'
    Locals), which have no stamp, so check_values does not see them: `X = (Ann ==
    1)`, `X = ("a" == "a")`.  `deltas`: how far a reused statement moved."""
    for local in locals_:
        stmt = local.stmt
        if local.var_keys or type(stmt) is not ir.Equation or not any(
                type(n) is ir.Call and n.name in COMPARISONS for n in ir.walk(stmt.rhs)):
            continue
        if id(stmt) in deltas:
            stmt = shifted(stmt, deltas[id(stmt)])
        _check_kinds(stmt, -1, tensors, domains, diags)  # (no key holds the stamp -1)


def _variable_name(name: str) -> bool:
    return name[:1].islower() or name[:1] == "_"  # (front/builder.py's rule)


def is_var(expr: ir.Expr, tensors: dict[str, TensorSymbol]) -> bool:
    """A bare lowercase name that is not a tensor: a variable in a comparison."""
    return isinstance(expr, ir.Ref) and expr.indices is None and expr.name not in tensors \
        and _variable_name(expr.name)


def _vars_of(expr: ir.Expr, tensors: dict[str, TensorSymbol]) -> list[ir.Ref]:
    return [n for n in ir.walk(expr) if isinstance(n, ir.Ref) and is_var(n, tensors)]


def _check_kinds(stmt: ir.Equation, k: int, tensors: dict[str, TensorSymbol], domains: Domains,
                 diags: list[Diagnostic]) -> None:
    def symbols(name: str) -> tuple[str, ...]:
        """The symbols and strings of the variable's column (numbers compare)."""
        key = ("var", k, name)
        if not (domains.known(key) and domains.holds_strings(key)):
            return ()
        return tuple(v for v in domains.symbols(key) if type(v) is str)

    for node in ir.walk(stmt.rhs):
        if not (isinstance(node, ir.Call) and node.name in COMPARISONS and len(node.args) == 2):
            continue
        left, right = node.args
        constant = compared_symbol(node, tensors)
        if constant is not None:
            _check_symbol(node, *constant, symbols, tensors, diags)
            continue
        if symbol_constant(left, tensors) and symbol_constant(right, tensors):
            diags.append(make(
                "not-a-number", f"`{value_text(constant_text(left))}` and "
                f"`{value_text(constant_text(right))}` are both symbol constants: "
                f"a symbol is compared with a variable of its column", node.span))
            continue
        if node.name in ("==", "!=") and is_var(left, tensors) and is_var(right, tensors):
            continue  # two variables: their values compare as themselves (in one domain or
            # two: run.interpret numbers both domains' values in one table)
        for var in _vars_of(left, tensors) + _vars_of(right, tensors):
            held = symbols(var.name)
            if held:
                diags.append(make(
                    "not-a-number", f"`{var.name}` holds symbols ({_some(held)}), which have no "
                    f"order and no arithmetic: `{node.name}` compares numbers (or, with `==` and "
                    f"`!=`, two variables){_hidden(node, held, tensors)}",
                    var.span))
                break
    _check_read_offsets(stmt, symbols, diags)
    for index in stmt.lhs.indices or ():
        if isinstance(index, ir.IndexShift):
            for var in index.terms:
                held = symbols(var.name)
                floats = () if held else _floats(("var", k, var.name), domains)
                if held or floats:
                    what = f"symbols ({_some(held)})" if held else f"floats ({_some(floats)})"
                    diags.append(make(
                        "not-a-number", f"`{var.name}` holds {what}: a head "
                        f"can compute only with integer columns", var.span))
                    break


def _check_read_offsets(stmt: ir.Equation, symbols: Callable[[str], tuple[str, ...]],
                        diags: list[Diagnostic]) -> None:
    """`E(x + 1, y)` where `x` holds symbols: a symbol has no successor, and the
    read found no cell (it read 0, silently)."""
    for ref in ir.refs(stmt.rhs):
        for index in ref.indices or ():
            if not isinstance(index, ir.IndexShift):
                continue
            for var in index.terms:
                held = symbols(var.name)
                if held:
                    diags.append(make(
                        "not-a-number", f"`{var.name}` holds symbols ({_some(held)}), which "
                        f"have no arithmetic: `{ref.name}` cannot be read at an offset of "
                        f"`{var.name}`", var.span))
                    return


def _check_float_bindings(stmt: ir.Equation, k: int, tensors: dict[str, TensorSymbol],
                          domains: Domains, diags: list[Diagnostic]) -> None:
    """`(w == v + 1)` that binds `w` (no atom does) makes a computed column, which
    holds integers: over a column of floats it is `not-a-number`, as `A(v + 1)` is."""
    if not stmt.lhs.paren:
        return
    bound = {index.name for ref in ir.refs(stmt.rhs) for index in ref.indices or ()
             if isinstance(index, ir.IndexVar)}  # (an atom's arithmetic binds nothing)
    for node in ir.walk(stmt.rhs):
        if not (isinstance(node, ir.Call) and node.name == "==" and len(node.args) == 2):
            continue
        for var, other in (node.args, node.args[::-1]):
            if not is_var(var, tensors) or var.name in bound:
                continue
            for used in _vars_of(other, tensors):
                floats = _floats(("var", k, used.name), domains)
                if floats:
                    diags.append(make(
                        "not-a-number", f"`{used.name}` holds floats "
                        f"({_some(floats)}): `{var.name} == ...` computes a "
                        f"column, which holds integers only", used.span))
                    return


def _check_divisions(stmt: ir.Equation, k: int, domains: Domains,
                     diags: list[Diagnostic]) -> None:
    """`x / 2` in a relation's atom divides a position (pooling, LANGUAGE.md §3),
    never a value: over a column of values (`V(4)`, `V(6)`, `H(x / 2) = V(x)`) it
    answered positions' halves silently.  And `y == x / 2` computes no column
    (a computed column holds `+`, `-` and `*` of integers: check.values)."""
    refs = ([stmt.lhs] if stmt.lhs.paren else []) + [r for r in ir.refs(stmt.rhs) if r.paren]
    for ref in refs:
        for index in ref.indices or ():
            key = ("var", k, index.var.name) if isinstance(index, ir.IndexDiv) else None
            if key is not None and domains.known(key) and domains.holds_symbols(key):
                diags.append(make(
                    "not-a-number", f"`{index.var.name}` holds values ("
                    f"{_some(tuple(domains.symbols(key)))}): `{index.var.name} / "
                    f"{index.divisor}` in an atom divides a position (pooling), not a value; "
                    f"a relation's arithmetic is `+` and `-`", index.span))
                return
    if not stmt.lhs.paren:
        return
    bound = {index.name for ref in ir.refs(stmt.rhs) for index in ref.indices or ()
             if isinstance(index, ir.IndexVar)}
    head = {index.name for index in stmt.lhs.indices or () if isinstance(index, ir.IndexVar)}
    for node in ir.walk(stmt.rhs):
        if not (isinstance(node, ir.Call) and node.name == "==" and len(node.args) == 2):
            continue
        for var, other in (node.args, node.args[::-1]):
            what = _uncomputed(other) if isinstance(var, ir.Ref) and var.indices is None \
                and var.name not in bound and var.name in head else None
            if what is not None:
                diags.append(make(
                    "not-a-number", f"`{var.name} == ...` computes a column with `+`, `-` "
                    f"and `*` of integers and numbers: {what} computes none of its values, so "
                    f"the rule would hold for no `{var.name}`; bind `{var.name}` in an atom "
                    f"and compare instead (`({var.name} * 2 == x)`)", node.span))
                return


def _uncomputed(expr: ir.Expr) -> str | None:
    """What of an `==`'s side the interval analysis of computed columns
    (check.values) does not compute: a division, a power or a call."""
    for node in ir.walk(expr):
        if isinstance(node, ir.Product) and "/" in node.ops:
            return "a division (`/`)"
        if isinstance(node, ir.Power):
            return "a power"
        if isinstance(node, ir.Call):
            return f"a call (`{node.name}`)"
    return None


def _floats(key: tuple, domains: Domains) -> tuple:
    """The floats of a variable's column: a computed column holds integers only."""
    if not (domains.known(key) and domains.holds_symbols(key)):
        return ()
    return tuple(v for v in domains.symbols(key) if type(v) is float)


def _check_symbol(call: ir.Call, constant: ir.Expr, other: ir.Expr, symbols, tensors,
                  diags: list[Diagnostic]) -> None:
    """`(x != Ann)`, `(x != "ann")`: `==`/`!=` with a variable; a constant its
    column does not hold is `unknown-symbol` (information: the comparison is constant)."""
    name = constant_text(constant)
    shown = value_text(name)
    if call.name not in ("==", "!="):
        diags.append(make(
            "not-a-number", f"`{shown}` is a symbol: symbols have no order, so they "
            f"compare with `==` and `!=` only", constant.span))
        return
    if not is_var(other, tensors):
        diags.append(make(
            "not-a-number", f"`{shown}` is a symbol: it compares with a variable of a "
            f"column of symbols, not with a number or an arithmetic term", constant.span))
        return
    held = symbols(other.name)  # type: ignore[union-attr]
    if name in held:
        return
    always = "never holds" if call.name == "==" else "always holds"
    import difflib  # (a rare path: kept out of `fuse check`'s start-up)
    close = [value_text(c) for c in difflib.get_close_matches(name, held, n=3)] if held else []
    what = f"({_some(held)})" if held else "(it holds no symbols)"
    hint = f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
    diags.append(make(
        "unknown-symbol", f"`{shown}` is not a symbol of `{other.name}`'s column "  # type: ignore[union-attr]
        f"{what}: `{other.name} {call.name} {shown}` {always}{hint}",  # type: ignore[union-attr]
        constant.span,
        fixes=tuple(Fix(f"Change to `{c}`", (TextEdit(constant.span, c),)) for c in close)))


def _hidden(call: ir.Call, held: tuple[str, ...], tensors) -> str:
    """A note when an operand is a tensor named like a symbol of the column: the
    tensor hides the symbol (docs/language.md)."""
    for arg in call.args:
        if isinstance(arg, ir.Ref) and arg.indices is None and arg.name in tensors \
                and arg.name in held:
            return (f"; `{arg.name}` here is the tensor `{arg.name}`, which hides the symbol "
                    f"`{arg.name}`: rename the tensor to compare with the symbol")
    return ""


def _some(values: tuple) -> str:
    """The first values of a column as a program writes them (`Alice`, `"1"`, `0.5`)."""
    shown = ", ".join(value_text(v) for v in values[:3])
    return shown + (", …" if len(values) > 3 else "")
