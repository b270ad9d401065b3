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
from ..front.span import Span, shifted
from ..io.sources import split_member

# (qualified name, its span) -> the name of the tensor or function it means
Qualify = Callable[[str, Span], str]
_set = object.__setattr__  # (on a node copied here: frozen for everyone else)


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


def renamed_statement(stmt: ir.Statement, scope: Scope, delta: int = 0) -> ir.Statement:
    """A copy of `stmt` moved by `delta` characters, with its names as the program
    knows them.  (The copy is this function's own, so its names are set in place:
    a 10,000-line file's statements are renamed at the cost of one walk.)"""
    stmt = shifted(stmt, delta)
    kind = type(stmt)
    if kind is ir.FnDef:
        _function(stmt, scope)
        return stmt
    renamer = _Renamer(scope, _variables(stmt), frozenset())
    if kind is ir.Equation:
        renamer.ref(stmt.lhs)
        renamer.expr(stmt.rhs)
    elif kind is ir.Source:
        renamer.ref(stmt.lhs)
        if scope.folder is not None:
            _set(stmt.path, "value", _rebased(stmt.path.value, scope))
    elif kind is ir.Fact or kind is ir.Query:
        renamer.ref(stmt.atom)
    elif kind is ir.ParamDecl or kind is ir.Export:
        for ref in stmt.refs if kind is ir.ParamDecl else stmt.names:
            renamer.ref(ref)
    elif kind is ir.AxisDecl:
        if stmt.name in scope.axes:
            _set(stmt, "name", stmt.name + scope.axis_tag)
    elif kind is ir.Sink:
        renamer.expr(stmt.rhs)
    elif kind is ir.TrainDecl:
        renamer.ref(stmt.loss)
    elif kind is ir.Let or kind is ir.Block:  # (the program's: a file's are written out)
        _block(stmt, scope)
    return stmt


def _block(stmt: ir.Let | ir.Block, scope: Scope) -> None:
    """A block's equations and `let`s (nested blocks too), or one `let`, renamed as
    equations are: `{ Y[i] = g::h::W[i] }` reads what `Y[i] = g::h::W[i]` reads."""
    for item in stmt.items if type(stmt) is ir.Block else (stmt,):
        if type(item) is ir.Block:
            _block(item, scope)
            continue
        eq = item.equation if type(item) is ir.Let else item
        renamer = _Renamer(scope, _variables(eq), frozenset())
        renamer.ref(eq.lhs)
        renamer.expr(eq.rhs)


def _function(fn: ir.FnDef, scope: Scope) -> None:
    """A function: its name the program's; its body's own names (parameters,
    locals, result) kept, the file's tensors it reads renamed."""
    own = frozenset([p.name for p in fn.params] + [eq.lhs.name for eq in fn.body]
                    + [fn.result.name])
    body_scope = dataclasses.replace(scope, axes=frozenset())  # (the inliner's to rename)
    for eq in fn.body:
        _Renamer(body_scope, _variables(eq), own).expr(eq.rhs)
    if "::" in fn.name:
        _set(fn, "name", scope.qualify(fn.name, fn.name_span))
    elif scope.prefix:
        _set(fn, "name", scope.prefix + fn.name)


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
    """Sets the names of one statement's copy (see renamed_statement)."""

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
            # an index's value, named as the index is (`j@m` where the file declares `j`)
            return name + scope.axis_tag if name in scope.axes else name
        return scope.prefix + name

    def ref(self, ref: ir.Ref) -> None:
        name = self.name(ref.name, ref.name_span, ref.indices is None)
        if name is not ref.name:
            _set(ref, "name", name)
        if ref.indices is not None and self.scope.axes:
            for index in ref.indices:
                self.index(index)

    def index(self, index: ir.Index) -> None:
        kind = type(index)
        if kind is ir.IndexVar:
            if index.name in self.scope.axes:  # type: ignore[union-attr]
                _set(index, "name", index.name + self.scope.axis_tag)  # type: ignore
        elif kind is ir.IndexShift:
            for term in index.terms:  # type: ignore[union-attr]
                self.index(term)
        elif kind is ir.IndexDiv:
            self.index(index.var)  # type: ignore[union-attr]
        elif kind is ir.IndexVirtual:
            self.index(index.inner)  # type: ignore[union-attr]

    def expr(self, expr: ir.Expr) -> None:
        for node in ir.walk(expr):
            kind = type(node)
            if kind is ir.Ref:
                self.ref(node)  # type: ignore[arg-type]
            elif kind is ir.Call:
                name = node.name  # type: ignore[union-attr]
                if name not in BUILTINS and name[:1].isidentifier():
                    renamed = self.name(name, node.name_span, False)  # type: ignore[union-attr]
                    if renamed is not name:
                        _set(node, "name", renamed)
            elif kind is ir.Reduce and self.scope.axes:
                for index in node.indices:  # type: ignore[union-attr]
                    self.index(index)


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
