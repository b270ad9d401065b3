"""An imported file's statements renamed into the importing program (docs/language.md,
Imports).

A file imported as `g` joins the program with every name it defines or reads
written `g::Name` (its tensors, relations, params and functions), every index an
`axis` declaration of it names written `d@g` (a declaration is program-wide: the
file's `d` is its own), and its source paths made relative to the importing
program's folder.  A name that the file qualifies itself (`h::T`, through its own
import `as h`) becomes the name of that file's tensor in the program, so that a
file imported along two ways is one set of tensors.  What a function's body
names as its own (its parameters, its locals and result) stays as it is: the
inliner renames those apart at each call.  A name is left alone where it means
an index's value (`Y[i] = i`) or a builtin.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable

from ..front import ir
from ..front.builtins import BUILTINS
from ..front.span import Span
from ..io.sources import split_member

# (qualified name, its span) -> the name of the tensor or function it means
Qualify = Callable[[str, Span], str]


@dataclasses.dataclass
class Scope:
    """How one file's names become the program's: `prefix` before its own names
    ("" for the importing program itself, whose own names stay), `axis_tag` after
    its axis-declared indices, `defined` the names it defines, `folder` where its
    relative paths start (None: they stay as written)."""

    prefix: str
    qualify: Qualify
    axes: frozenset[str] = frozenset()
    axis_tag: str = ""
    defined: frozenset[str] = frozenset()
    folder: str | None = None
    base_dir: str = "."


def renamed_statement(stmt: ir.Statement, scope: Scope) -> ir.Statement:
    """`stmt` with its names as the program knows them (the same object when none changes)."""
    kind = type(stmt)
    if kind is ir.FnDef:
        return _function(stmt, scope)
    renamer = _Renamer(scope, _variables(stmt), frozenset())
    if kind is ir.Equation:
        lhs, rhs = renamer.ref(stmt.lhs), renamer.expr(stmt.rhs)
        if lhs is stmt.lhs and rhs is stmt.rhs:
            return stmt
        return dataclasses.replace(stmt, lhs=lhs, rhs=rhs)
    if kind is ir.Source:
        path = stmt.path
        if scope.folder is not None:
            path = dataclasses.replace(path, value=_rebased(path.value, scope))
        return dataclasses.replace(stmt, lhs=renamer.ref(stmt.lhs), path=path)
    if kind is ir.Fact or kind is ir.Query:
        atom = renamer.ref(stmt.atom)
        return stmt if atom is stmt.atom else dataclasses.replace(stmt, atom=atom)
    if kind is ir.ParamDecl:
        refs = tuple(renamer.ref(ref) for ref in stmt.refs)
        return dataclasses.replace(stmt, refs=refs)
    if kind is ir.AxisDecl:
        if stmt.name in scope.axes:
            return dataclasses.replace(stmt, name=stmt.name + scope.axis_tag)
        return stmt
    if kind is ir.Sink:
        rhs = renamer.expr(stmt.rhs)
        return stmt if rhs is stmt.rhs else dataclasses.replace(stmt, rhs=rhs)
    if kind is ir.Export:
        return dataclasses.replace(stmt, names=tuple(renamer.ref(r) for r in stmt.names))
    if kind is ir.TrainDecl:
        return dataclasses.replace(stmt, loss=renamer.ref(stmt.loss))
    return stmt


def _function(fn: ir.FnDef, scope: Scope) -> ir.FnDef:
    """A function: its name the program's; its body's own names (parameters,
    locals, result) kept, the file's tensors it reads renamed."""
    own = frozenset([p.name for p in fn.params] + [eq.lhs.name for eq in fn.body]
                    + [fn.result.name])
    body_scope = dataclasses.replace(scope, axes=frozenset())  # (the inliner's to rename)
    body = []
    for eq in fn.body:
        renamer = _Renamer(body_scope, _variables(eq), own)
        body.append(dataclasses.replace(eq, rhs=renamer.expr(eq.rhs)))
    name = fn.name
    if "::" in name:
        name = scope.qualify(name, fn.name_span)
    elif scope.prefix:
        name = scope.prefix + name
    return dataclasses.replace(fn, name=name, body=tuple(body))


def _variables(stmt: ir.Statement) -> frozenset[str]:
    """The index variables' names of a statement (a bare name among them may be a value)."""
    names: set[str] = set()
    for ref in ir.defined_refs(stmt) + ir.statement_refs(ir.used_exprs(stmt)):
        for index in ref.indices or ():
            names.update(var.name for var in ir.index_vars(index))
    return frozenset(names)


def _rebased(value: str, scope: Scope) -> str:
    """A source path of an imported file, from the importing program's folder."""
    file, key = split_member(value)
    assert scope.folder is not None
    full = os.path.normpath(os.path.join(scope.folder, file))
    try:
        shown = os.path.relpath(full, scope.base_dir)
    except ValueError:  # (another drive)
        shown = full
    return shown + (":" + key if key is not None else "")


class _Renamer:
    def __init__(self, scope: Scope, variables: frozenset[str], own: frozenset[str]) -> None:
        self.scope = scope
        self.variables = variables
        self.own = own

    def name(self, name: str, span: Span, bare: bool) -> str:
        if "::" in name:
            return self.scope.qualify(name, span)
        scope = self.scope
        if not scope.prefix or name in self.own:
            return name
        if bare and name in self.variables and name not in scope.defined:
            return name  # an index's value
        return scope.prefix + name

    def ref(self, ref: ir.Ref) -> ir.Ref:
        name = self.name(ref.name, ref.name_span, ref.indices is None)
        indices = ref.indices
        if indices is not None and self.scope.axes:
            indices = tuple(self.index(index) for index in indices)
            if all(a is b for a, b in zip(indices, ref.indices)):  # type: ignore[arg-type]
                indices = ref.indices
        if name == ref.name and indices is ref.indices:
            return ref
        return dataclasses.replace(ref, name=name, indices=indices)

    def index(self, index: ir.Index) -> ir.Index:
        kind = type(index)
        axes = self.scope.axes
        if kind is ir.IndexVar:
            if index.name in axes:  # type: ignore[union-attr]
                return dataclasses.replace(index, name=index.name + self.scope.axis_tag)
            return index
        if kind is ir.IndexShift:
            terms = tuple(self.index(t) for t in index.terms)  # type: ignore[union-attr]
            return dataclasses.replace(index, terms=terms)
        if kind is ir.IndexDiv:
            return dataclasses.replace(index, var=self.index(index.var))  # type: ignore
        if kind is ir.IndexVirtual:
            return dataclasses.replace(index, inner=self.index(index.inner))  # type: ignore
        return index

    def expr(self, expr: ir.Expr) -> ir.Expr:
        kind = type(expr)
        if kind is ir.Ref:
            return self.ref(expr)  # type: ignore[arg-type]
        if kind is ir.Call:
            name = expr.name  # type: ignore[union-attr]
            if name not in BUILTINS and name[:1].isidentifier():
                name = self.name(name, expr.name_span, False)  # type: ignore[union-attr]
            args = tuple(self.expr(a) for a in expr.args)  # type: ignore[union-attr]
            kwargs = tuple(dataclasses.replace(k, value=self.expr(k.value))
                           for k in expr.kwargs)  # type: ignore[union-attr]
            return dataclasses.replace(expr, name=name, args=args, kwargs=kwargs)
        if kind is ir.Reduce:
            indices = tuple(self.index(i) for i in expr.indices)  # type: ignore[union-attr]
            return dataclasses.replace(expr, indices=indices,
                                       body=self.expr(expr.body))  # type: ignore[union-attr]
        if kind is ir.Neg:
            return dataclasses.replace(expr, operand=self.expr(expr.operand))  # type: ignore
        if kind is ir.Sum:
            return dataclasses.replace(expr, terms=tuple(map(self.expr, expr.terms)))  # type: ignore
        if kind is ir.Product:
            return dataclasses.replace(expr, factors=tuple(map(self.expr,
                                                               expr.factors)))  # type: ignore
        if kind is ir.Power:
            return dataclasses.replace(expr, base=self.expr(expr.base),  # type: ignore
                                       exponent=self.expr(expr.exponent))  # type: ignore
        if kind is ir.ListLit:
            return dataclasses.replace(expr, items=tuple(map(self.expr, expr.items)))  # type: ignore
        return expr


def defined_names(statements: tuple[ir.Statement, ...]) -> frozenset[str]:
    """The names a file gives others: its tensors, relations, params and functions
    (what its sinks, queries and exports name is not among them)."""
    names = set()
    for stmt in statements:
        if type(stmt) is ir.FnDef:
            names.add(stmt.name)
        else:
            names.update(ref.name for ref in ir.defined_refs(stmt))
    return frozenset(names)
