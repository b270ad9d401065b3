"""Definitions: each tensor's symbol from the statements that define it (its
kind, brackets, arity, operators) and the declared axes, with the diagnostics
that a definition alone shows (kind, arity, operator and axis clashes, facts)."""
from __future__ import annotations

from ..front import ir
from ..front.diagnostics import Diagnostic, Related, make
from ..front.ir_text import index_text
from ..front.relocation import moved_span
from ..front.span import Span
from .literals import literal_shape
from .symbols import SUM_OPS, TensorSymbol

_tuple_new = tuple.__new__  # a Span without a Python frame (see span.shifted)


def arity_mismatch(ref: ir.Ref, sym: TensorSymbol, delta: int = 0) -> Diagnostic:
    """`ref` (of a statement moved by `delta`, see front/relocation.py) written with
    another number of axes than `sym`'s first definition."""
    n = sym.arity or 0
    axes = "axis" if n == 1 else "axes"
    # a bare `C = "c.npy"` has the axes its file gives, not those its definition writes
    origin = f"from its file `{sym.source.path.value}`" if sym.first.indices is None \
        and sym.source is not None and isinstance(sym.source.path, ir.String) \
        else "from its first definition"
    virtual = _left_out_virtual(ref, sym)
    if virtual is not None:  # (the one axis its shape does not show: the last value is read)
        position, name = virtual
        shown = ",".join([*_index_texts(ref)[:position], f"*{name}", *_index_texts(ref)[position:]])
        return make("arity-mismatch", f"`{ref.name}` has {n} {axes} ({origin}), one of them the "
                    f"virtual `*{name}`, but is written here with {ref.arity}: its last value "
                    f"is read with the virtual index, `{ref.name}[{shown}]`",
                    moved_span(ref.span, delta),
                    related=(Related(sym.first_span, "first defined here"),))
    return make("arity-mismatch", f"`{ref.name}` has {n} {axes} ({origin})"
                f" but is written here with {ref.arity}", moved_span(ref.span, delta),
                related=(Related(sym.first_span, "first defined here"),))


def _left_out_virtual(ref: ir.Ref, sym: TensorSymbol) -> tuple[int, str] | None:
    """(position, name) of the virtual index of `sym`'s first definition where `ref`
    has every other axis and no virtual one (`Al[s]` for `Al[s,*t]`), else None."""
    first = sym.first.indices or ()
    virtual = [(p, i.inner) for p, i in enumerate(first) if type(i) is ir.IndexVirtual]
    if len(virtual) != 1 or ref.indices is None or ref.arity != len(first) - 1 \
            or any(type(i) is ir.IndexVirtual for i in ref.indices):
        return None
    position, inner = virtual[0]
    name = inner.name if type(inner) is ir.IndexVar else (
        inner.terms[0].name if len(inner.terms) == 1 else None)
    return None if name is None else (position, name)


def _index_texts(ref: ir.Ref) -> list[str]:
    return [index_text(i) for i in ref.indices or ()]


def collect_definitions(statements: tuple[ir.Statement, ...], tensors: dict[str, TensorSymbol],
                        diags: list[Diagnostic], deltas: dict[int, int] | None = None
                        ) -> dict[str, ir.AxisDecl]:
    """Fills `tensors` with every tensor's symbol, in order of first definition, and
    returns each declared axis' first declaration; what is wrong with them goes to
    `diags`.  (`tensors` is filled in place: the statements' checks share it.)
    `deltas`: how far each reused equation moved (front/relocation.py)."""
    axis_decls: dict[str, ir.AxisDecl] = {}
    deltas = deltas or {}
    for k, stmt in enumerate(statements):
        if isinstance(stmt, ir.AxisDecl):
            _check_axis_name(stmt, diags)
            prior = axis_decls.get(stmt.name)
            if prior is not None and (prior.extent, prior.padding) != (stmt.extent, stmt.padding):
                diags.append(make(
                    "extent-conflict", f"axis `{stmt.name}` is declared {_declared(stmt)} here "
                    f"but {_declared(prior)} before", stmt.extent_span,
                    related=(Related(prior.extent_span, "declared here"),)))
            else:
                axis_decls.setdefault(stmt.name, stmt)
            continue
        if type(stmt) is ir.Equation:  # most statements
            _define(k, stmt, stmt.lhs, tensors, diags, deltas.get(id(stmt), 0))
            continue
        if isinstance(stmt, ir.Fact):
            _check_fact(stmt, diags)
        for ref in ir.defined_refs(stmt):
            _define(k, stmt, ref, tensors, diags)
    for sym in tensors.values():
        if sym.is_param and sym.ops:
            _param_with_equation(sym, statements, diags, deltas)
        if sym.is_param and sym.source is not None:
            _param_with_source(sym, diags)
    return axis_decls


def _check_axis_name(decl: ir.AxisDecl, diags: list[Diagnostic]) -> None:
    """`axis T = 3`: an uppercase name in an index is a symbol constant, never a
    variable, so the declaration would size nothing (`Y[T] = 1` has extent 1)."""
    if decl.name[:1].islower() or decl.name[:1] == "_":
        return
    diags.append(make(
        "invalid-statement", f"`{decl.name}` starts with an uppercase letter: in an index it "
        f"is a symbol constant, not a variable, so `axis {decl.name}` would size nothing; an "
        f"index variable starts with a lowercase letter or `_` (`axis "
        f"{decl.name[:1].lower()}{decl.name[1:]} = ...`)", decl.name_span))


def _second_source(sym: TensorSymbol, stmt: ir.Source, diags: list[Diagnostic]) -> None:
    """A tensor reads one file: a second source was left out of the run without a
    word (its rows, its values), where §6 would have combined it."""
    assert sym.source is not None
    diags.append(make(
        "invalid-statement", f"`{sym.name}` already reads `{sym.source.path.value}`; a tensor "
        f"reads one file: give this one its own name and combine the two in an equation "
        f"(`{sym.name}2{'(...)' if sym.boolean else '[...]'} = \"{stmt.path.value}\"`)",
        stmt.path.span, related=(Related(sym.source.path.span, "the first source"),)))


def _param_with_source(sym: TensorSymbol, diags: list[Diagnostic]) -> None:
    """`param W[i,j]` and `W[i,j] = "w.npy"`: a param's values come from its
    initialiser or a checkpoint; the run would leave the file unread."""
    assert sym.source is not None
    diags.append(make(
        "invalid-statement", f"`{sym.name}` is a param, so its values come from its "
        f"initialiser or from a checkpoint (`--weights`, docs/weights.md), not from "
        f"`{sym.source.path.value}`: give the file's tensor its own name, or drop `param`",
        sym.source.path.span))


def _param_with_equation(sym: TensorSymbol, statements: tuple[ir.Statement, ...],
                         diags: list[Diagnostic], deltas: dict[int, int]) -> None:
    """`param W[j]` and `W[j] = X[j]`: the equation adds to the learned array (as a
    source's does); written as a start, it is almost surely meant as one."""
    equation = next(statements[k] for k in sym.statements
                    if type(statements[k]) is ir.Equation)
    declared = next(statements[k] for k in sym.statements
                    if type(statements[k]) is ir.ParamDecl)
    assert isinstance(equation, ir.Equation)
    diags.append(make(
        "param-with-equation", f"`{sym.name}` is a param and also has an equation: its value "
        f"is the learned array combined with the equation's, and training learns only the "
        f"array: a param starts from its initialiser (`param {sym.name} = kaiming`) or a "
        f"checkpoint (docs/training.md), and a tensor computed from it needs its own name",
        moved_span(equation.lhs.name_span, deltas.get(id(equation), 0)),
        related=(Related(declared.span, "declared a param here"),)))


def _check_fact(stmt: ir.Fact, diags: list[Diagnostic]) -> None:
    atom = stmt.atom
    if not atom.paren:
        what = "a bare name" if atom.indices is None else "`[ ]`"
        diags.append(make("invalid-fact", f"a statement that is only {what} means nothing; a "
                          f"fact is a Boolean tuple like `{atom.name}(Alice, Bob)`, a query ends"
                          f" with `?`", atom.span))
        return
    for index in atom.indices or ():
        if not isinstance(index, ir.IndexConst):
            diags.append(make("invalid-fact", "a fact holds constants only (symbols like "
                              "`Alice` or `\"ann\"`, numbers like `0` or `-7`); to derive "
                              "tuples write a rule with `=`", index.span))
            return


def _define(k: int, stmt: ir.Statement, ref: ir.Ref, tensors: dict[str, TensorSymbol],
            diags: list[Diagnostic], delta: int = 0) -> None:
    kind = type(stmt)
    if kind is ir.Fact and not (ref.paren and all(
            isinstance(i, ir.IndexConst) for i in ref.indices or ())):
        return
    sym = tensors.get(ref.name)
    indices = ref.indices
    arity: int | None = len(indices) if indices is not None else 0
    if indices is None and _bare_takes_data_rank(stmt):
        arity = None
        if kind is ir.Equation:  # const: the literal's rank
            shape = literal_shape(stmt.rhs.args[0]) if stmt.rhs.args else None
            arity = len(shape) if shape is not None else None
    if sym is None:
        sym = TensorSymbol(ref.name, ref.paren, arity, ref, delta)
        tensors[ref.name] = sym
    else:
        if ref.paren != sym.boolean and kind is not ir.ParamDecl:
            first_kind = "Boolean `( )`" if sym.boolean else "numeric `[ ]`"
            diags.append(make("kind-conflict", f"`{ref.name}` is defined as {first_kind} "
                              f"first; use the same brackets in every definition",
                              moved_span(ref.span, delta),
                              related=(Related(sym.first_span, "first defined here"),)))
        expected = sym.arity
        if expected is None and arity is not None:
            sym.arity = arity
        elif expected is not None and arity is not None and arity != expected:
            diags.append(arity_mismatch(ref, sym, delta))
    span = ref.name_span
    sym.definitions.append(_tuple_new(Span, (span[0] + delta, span[1] + delta)) if delta
                           else span)  # (moved_span, inline: one per equation)
    sym.statements.append(k)
    if kind is ir.Equation:
        ops = sym.ops
        ops.append(stmt.op)
        if stmt.op != ops[0]:  # the same operator is the same family
            _check_mixed_ops(sym, stmt, diags, delta)
    elif kind is ir.Source:
        if sym.source is None:
            sym.source = stmt
        else:
            _second_source(sym, stmt, diags)
    elif kind is ir.ParamDecl:
        sym.is_param = True
        if ref.paren:
            diags.append(make(
                "invalid-statement", f"a param is a numeric tensor, learned by gradients: "
                f"`param {ref.name}[...]` (a Boolean `( )` tensor holds only 0 and 1)",
                ref.span))
    elif kind is ir.Fact:
        sym.has_facts = True
        sym.boolean = True


def _bare_takes_data_rank(stmt: ir.Statement) -> bool:
    """`W = "w.npy"` and `W = const([...])` take their rank from the data."""
    if isinstance(stmt, ir.Source):
        return True
    return (isinstance(stmt, ir.Equation) and isinstance(stmt.rhs, ir.Call)
            and stmt.rhs.name == "const")


def _op_family(op: str) -> str:
    """`=` and `+=` both sum: one tensor may mix them, not other operators."""
    return "=" if op in SUM_OPS else op


def _check_mixed_ops(sym: TensorSymbol, stmt: ir.Equation, diags: list[Diagnostic],
                     delta: int) -> None:
    first = sym.ops[0]
    if _op_family(stmt.op) != _op_family(first):
        diags.append(make("mixed-projection", f"`{sym.name}` combines its equations with "
                          f"`{_op_family(first)}` (first equation) but this one uses "
                          f"`{stmt.op}`; one tensor uses one projection operator",
                          moved_span(stmt.op_span, delta),
                          related=(Related(sym.first_span, "first equation"),)))


def _declared(decl: ir.AxisDecl) -> str:
    return decl.padding or str(decl.extent)
