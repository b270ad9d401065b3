"""Blocks `{ ... }` and `let` written out as plain equations before checking
(docs/language.md, Local tensors).

`lower_blocks` takes a parsed program's statements and gives them back with every
block flattened into its equations and every `let` tensor of a block renamed apart
(`h@let.3`: the block's number, in the order blocks open in the text; a `@` is in
no name a program can write, so a local never meets a program tensor, and two
blocks' locals never meet), in the block and the blocks inside it.  A block's
other equations define program tensors, which may read its locals.  The renamed
references keep their spans: a diagnostic, a hover or a rename lands on the
text the user wrote (`user_name` gives the name back).

A top-level `let` is local to its file: its equation stays as written (its
tensor is visible in the whole file), but the tensor is no output (`export` or a
query of it is `local-export`) and `file_locals` lists it for importers, who do
not see it.  A read of a block's local outside the block is `local-out-of-scope`;
a `let` of a name the program (or an enclosing block) already defines is
`let-redefined`.  Several equations of one local combine as any tensor's (§6).
Statements with such a mistake are left out, with their diagnostic.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable

from ..speed.fastinit import frozen_dataclass
from . import ir
from .diagnostics import Diagnostic, Related, make
from .span import Span, shifted

_RENAMED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)@let\.\d+('*)")


@frozen_dataclass
class LocalScope:
    """A block that has `let`s: its span and its locals (as written -> renamed)."""

    span: Span
    names: dict[str, str]


@frozen_dataclass
class Lowered:
    """The program's statements with its blocks written out (see the module)."""

    statements: tuple[ir.Statement, ...]
    diagnostics: tuple[Diagnostic, ...]
    scopes: tuple[LocalScope, ...]
    file_locals: frozenset[str]
    blocks: tuple[Span, ...] = ()  # every block's span, in the order they open


def has_blocks(statements: Iterable[ir.Statement]) -> bool:
    return any(type(stmt) is ir.Block or type(stmt) is ir.Let for stmt in statements)


def file_locals(statements: Iterable[ir.Statement]) -> frozenset[str]:
    """The tensors a file's top-level `let`s define: not visible to its importers."""
    return frozenset(stmt.equation.lhs.name for stmt in statements if type(stmt) is ir.Let)


def user_name(name: str) -> str:
    """A renamed local (`h@let.3'`) as the user wrote it (`h'`); other names as they are."""
    return _RENAMED.sub(r"\1\2", name) if "@let." in name else name


def marked_name(name: str) -> str:
    """A tensor's name in a listing of tensors: a block's `let` as written, marked
    `(local)` (two blocks may each have an `h`); other names as they are."""
    return f"{user_name(name)} (local)" if "@let." in name else name


def is_block_local(name: str) -> bool:
    return "@let." in name


def plain_messages(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """`diags` with each renamed local in a message written as the user wrote it (and
    fixes that would write a renamed local dropped)."""
    out = []
    for diag in diags:
        if "@let." in diag.message:
            fixes = tuple(f for f in diag.fixes if "@let." not in repr(f))
            diag = dataclasses.replace(diag, message=user_name(diag.message), fixes=fixes)
        out.append(diag)
    return out


def lower_blocks(statements: tuple[ir.Statement, ...], text: str,
                 deltas: dict[int, int] | None = None) -> Lowered:
    """`statements` with blocks flattened and `let`s lowered (see the module).  `deltas`:
    how far each equation reused where it was has moved (front/relocation.py)."""
    return _Lowering(statements, text, deltas or {}).run()


def _line(text: str, span: Span) -> int:
    return text.count("\n", 0, span[0]) + 1


class _Lowering:
    def __init__(self, statements: tuple[ir.Statement, ...], text: str,
                 deltas: dict[int, int]) -> None:
        self.statements = statements
        self.text = text
        self.deltas = deltas
        self.scopes: list[LocalScope] = []
        self.blocks: list[Span] = []
        self.count = 0
        self.diags: list[Diagnostic] = []
        self.refused: set[int] = set()  # top-level `let`s left out (let-redefined)
        self.file_lets = self._file_lets()
        self.program = self._program_names()
        self.local_at: dict[str, Span] = {}  # a local's name -> the first block defining it

    def _file_lets(self) -> frozenset[str]:
        """The names of the top-level `let`s, each refused (`let-redefined`, left out)
        where a plain statement of the file defines its name or it names an imported
        file's tensor (`let m::W`): a `let` would take the name over silently."""
        plain = self._plain_names()
        lets: set[str] = set()
        for stmt in self.statements:
            if type(stmt) is not ir.Let:
                continue
            name = stmt.equation.lhs.name
            problem = _qualified(name) or (
                f"`{name}` is a tensor of the program already: a `let` needs a name of its "
                f"own (a plain equation adds to `{name}`)" if name in plain else None)
            if problem is None:
                lets.add(name)
                continue
            at, delta = stmt.equation.lhs.name_span, self.deltas.get(id(stmt))
            at = Span(at[0] + delta, at[1] + delta) if delta else at
            self.diags.append(make("let-redefined", problem, at))
            self.refused.add(id(stmt))
        return frozenset(lets)

    def _plain_names(self) -> set[str]:
        """The tensors the file defines with plain statements (top level and blocks)."""
        names = {ref.name for stmt in self.statements if type(stmt) is not ir.Let
                 for ref in ir.defined_refs(stmt)}

        def visit(block: ir.Block) -> None:
            for item in block.items:
                if type(item) is ir.Equation:
                    names.add(item.lhs.name)
                elif type(item) is ir.Block:
                    visit(item)
        for stmt in self.statements:
            if type(stmt) is ir.Block:
                visit(stmt)
        return names

    def _program_names(self) -> set[str]:
        """Every tensor the program defines outside a `let` of a block (plain equations
        inside blocks included: they define program tensors)."""
        names = {ref.name for stmt in self.statements for ref in ir.defined_refs(stmt)}
        names |= self.file_lets

        def visit(block: ir.Block, env: frozenset[str]) -> None:
            own = env | {item.equation.lhs.name for item in block.items if type(item) is ir.Let}
            for item in block.items:
                if type(item) is ir.Equation and item.lhs.name not in own:
                    names.add(item.lhs.name)
                elif type(item) is ir.Block:
                    visit(item, own)
        for stmt in self.statements:
            if type(stmt) is ir.Block:
                visit(stmt, frozenset())
        return names

    def run(self) -> Lowered:
        out: list[ir.Statement] = []
        blocks = []
        for stmt in self.statements:
            if type(stmt) is ir.Block:
                blocks.append((len(out), stmt))
                out.append(stmt)  # (a place held: its equations go there)
            elif type(stmt) is ir.Let:
                if id(stmt) not in self.refused:
                    out.append(stmt.equation)
            else:
                out.append(stmt)
        flat: dict[int, list[ir.Equation]] = {}
        for k, block in blocks:
            flat[k] = []
            self._block(block, {}, flat[k])
        final: list[ir.Statement] = []
        for k, stmt in enumerate(out):
            for item in flat.get(k, [stmt]):
                kept = self._in_scope(item)
                if kept is not None:
                    final.append(kept)
        return Lowered(tuple(final), tuple(self.diags), tuple(self.scopes), self.file_lets,
                       tuple(self.blocks))

    # ---- blocks

    def _block(self, block: ir.Block, outer: dict[str, str], out: list[ir.Equation]) -> None:
        self.count += 1
        self.blocks.append(block.span)
        env = dict(outer)
        own: dict[str, str] = {}
        refused: set[int] = set()
        for item in block.items:
            if type(item) is not ir.Let:
                continue
            name = item.equation.lhs.name
            if name in own:
                continue  # several equations of one local combine (§6)
            problem = self._redefined(name, outer)
            if problem is not None:
                self.diags.append(make("let-redefined", problem, item.equation.lhs.name_span))
                refused.add(id(item))
                continue
            own[name] = env[name] = _renamed(name, self.count)
            self.local_at.setdefault(name, block.span)
        if own:
            self.scopes.append(LocalScope(block.span, own))
        for item in block.items:
            if type(item) is ir.Block:
                self._block(item, env, out)
                continue
            if id(item) in refused:
                continue  # let-redefined: left out
            eq = item.equation if type(item) is ir.Let else item
            out.append(_renamed_equation(eq, env) if env else eq)

    def _redefined(self, name: str, outer: dict[str, str]) -> str | None:
        if _qualified(name):
            return _qualified(name)
        if name in self.file_lets:
            return f"`{name}` is a `let` of the whole file already: a block's local needs " \
                   f"a name of its own"
        if name in self.program:
            return f"`{name}` is a tensor of the program already: a local needs a name of " \
                   f"its own (a plain equation adds to `{name}`)"
        if name in outer:
            return f"`{name}` is a local of an enclosing block already: a local needs a " \
                   f"name of its own"
        return None

    # ---- reads outside a block

    def _in_scope(self, stmt: ir.Statement) -> ir.Statement | None:
        """`stmt` if it reads no local out of its scope (an export loses such names;
        an export or query of a file's `let` is refused), else None with a diagnostic."""
        kind = type(stmt)
        if kind is ir.Export or kind is ir.Query:
            delta = self.deltas.get(id(stmt))
            stmt = shifted(stmt, delta) if delta else stmt
            refs = stmt.names if kind is ir.Export else (stmt.atom,)
            kept = [ref for ref in refs if self._output_ok(ref)]
            if len(kept) == len(refs):
                return stmt
            if kind is ir.Query or not kept:
                return None
            return dataclasses.replace(stmt, names=tuple(kept))
        if kind is ir.TrainDecl and stmt.loss.name in self.file_lets:
            # (`fuse check` passed it, and training's cut of the program to the loss
            # refused it at a line past the file's end)
            delta = self.deltas.get(id(stmt))
            stmt = shifted(stmt, delta) if delta else stmt
            self.diags.append(make("local-export", f"`{stmt.loss.name}` is a `let`, local "
                                   f"to this file: a loss is what training reads out of "
                                   f"the program; define it without `let`",
                                   stmt.loss.name_span))
            return None
        if not self.local_at:
            return stmt
        exprs = ir.used_exprs(stmt)
        defined = ir.defined_refs(stmt)
        refs = ir.statement_refs(exprs + defined)
        for ref in refs:
            if ref.name in self.local_at and ref.name not in self.program:
                if ref.indices is None and ref.name in _variables(refs):
                    continue  # an index of the statement used as a value (`sin(p / L)`)
                delta = self.deltas.get(id(stmt))
                at = ref.name_span if not delta else Span(ref.name_span[0] + delta,
                                                          ref.name_span[1] + delta)
                self.diags.append(self._out_of_scope(ref.name, at))
                return None
        return stmt

    def _out_of_scope(self, name: str, at: Span) -> Diagnostic:
        block = self.local_at[name]
        return make("local-out-of-scope", f"`{name}` is local to the block at line "
                    f"{_line(self.text, block)}: it is visible only inside that block",
                    at, related=(Related(block, f"the block that defines `{name}`"),))

    def _output_ok(self, ref: ir.Ref) -> bool:
        name = ref.name
        if name in self.file_lets:
            self.diags.append(make("local-export", f"`{name}` is a `let`, local to this "
                                   f"file: it is no output; export or query a tensor that "
                                   f"reads it", ref.name_span))
            return False
        if name in self.local_at and name not in self.program:
            diag = self._out_of_scope(name, ref.name_span)
            self.diags.append(dataclasses.replace(diag, message=diag.message +
                                                  "; export or query a tensor that reads it"))
            return False
        return True


def _qualified(name: str) -> str | None:
    """Why a `let` of `name` is refused when it names an imported file's tensor."""
    if "::" not in name:
        return None
    return f"`{name}` is an imported file's name: a `let` defines a name of this file's " \
           f"own (a plain equation adds to a tensor the imported file defines)"


def _renamed(name: str, block: int) -> str:
    stem = name.rstrip("'")
    return f"{stem}@let.{block}{name[len(stem):]}"  # primes stay last: `p'` -> `p@let.1'`


def _variables(refs: Iterable[ir.Ref]) -> set[str]:
    """The index variables of `refs`."""
    return {v.name for ref in refs for index in ref.indices or () for v in ir.index_vars(index)}


def _renamed_equation(eq: ir.Equation, env: dict[str, str]) -> ir.Equation:
    """`eq` with every reference to a local in `env` renamed (spans kept)."""
    refs = (eq.lhs, *ir.refs(eq.rhs))
    if not any(ref.name in env for ref in refs):
        return eq
    variables = _variables(refs)
    lhs = _renamed_ref(eq.lhs, env, variables)
    rhs = _renamed_expr(eq.rhs, env, variables)
    return ir.Equation(lhs, eq.op, eq.op_span, rhs, eq.span)


def _renamed_ref(ref: ir.Ref, env: dict[str, str], variables: set[str]) -> ir.Ref:
    new = env.get(ref.name)
    if new is None or (ref.indices is None and ref.name in variables):
        return ref  # (a bare name that is an index of the equation: its value)
    return ir.Ref(new, ref.name_span, ref.indices, ref.paren, ref.span)


def _renamed_expr(expr: Any, env: dict[str, str], variables: set[str]) -> Any:
    if type(expr) is ir.Ref:
        return _renamed_ref(expr, env, variables)
    return ir.map_children(expr, lambda child: _renamed_expr(child, env, variables))
