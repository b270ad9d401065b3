"""Lookups over an Analysis by position: what is at an offset, where it is
defined, where it is used.  Plain data for hover, go-to-definition,
references and rename (the language server only converts positions).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..check import Analysis
from ..check.symbols import Occurrence
from ..front import ir
from ..front.builtins import BUILTINS, KEYWORDS
from ..front.let_blocks import is_block_local, user_name
from ..front.span import Span
from ..front.wildcards import is_wildcard
from .fn_bodies import (
    bare_index_names,
    function_around,
    index_name_spans,
    name_in_function,
    names_met,
    own_functions,
    own_names,
    readers,
    reads_in_bodies,
)


@dataclass(frozen=True, slots=True)
class SymbolAt:
    # "tensor" | "index" | "builtin" | "function" (a `fn` of the program) | "local" (a
    # parameter, the result or a local tensor of a `fn`, named in its definition) |
    # "axis" (the name an `axis` declaration gives an extent)
    kind: str
    name: str
    span: Span  # the occurrence under the offset
    statement: int | None  # the statement holding it (indices are local to it)
    definitions: tuple[Span, ...]  # tensors: every defining LHS name; indices: LHS occurrences
    references: tuple[Span, ...]  # every occurrence, definitions included, in text order


def _statement_at(analysis: Analysis, offset: int) -> int | None:
    inlined = analysis.inlined.origins if analysis.inlined is not None else {}
    for k, stmt in enumerate(analysis.program.statements):
        # (an equation a `fn` call wrote out has the call's span, but no text there)
        if stmt.span.start <= offset <= stmt.span.end and k not in inlined:
            return k
    return None


def _as_written(analysis: Analysis, k: int) -> ir.Statement:
    """Statement `k` as its text has it: with its `fn` calls, not their results."""
    written = analysis.inlined.written if analysis.inlined is not None else {}
    return written.get(k) or analysis.program.statements[k]


def _function_spans(analysis: Analysis) -> dict[str, list[Span]]:
    """Each `fn`'s name spans: its definition's first, then every call of it."""
    inlined = analysis.inlined
    if inlined is None:
        return {}
    spans: dict[str, list[Span]] = {name: [fn.name_span] for name, fn in
                                    inlined.functions.items()}
    exprs = [e for stmt in inlined.written.values() for e in ir.used_exprs(stmt)]
    exprs += [eq.rhs for fn in inlined.functions.values() for eq in fn.body]
    for expr in exprs:
        for node in ir.walk(expr):
            if type(node) in (ir.Call, ir.Ref) and node.name in spans \
                    and (type(node) is ir.Call or node.paren):
                spans[node.name].append(node.name_span)
    return spans


def function_references(analysis: Analysis, name: str) -> tuple[Span, ...]:
    """Every occurrence of function `name` (its definition and its calls), in text order."""
    return tuple(sorted(_function_spans(analysis).get(name, ())))


def _function_at(analysis: Analysis, offset: int) -> SymbolAt | None:
    """A `fn` under `offset`: its name in its definition or in a call."""
    inlined = analysis.inlined
    for name, found in _function_spans(analysis).items():
        for span in found:
            if span.start <= offset <= span.end:
                assert inlined is not None
                fn = inlined.functions[name]
                return SymbolAt("function", name, span, None, (fn.name_span,),
                                tuple(sorted(found)))
    return None


def symbol_at(analysis: Analysis, offset: int) -> SymbolAt | None:
    """The tensor, index variable, builtin or function whose name covers `offset`."""
    function = _function_at(analysis, offset)
    if function is not None:
        return function
    body = name_in_function(analysis, offset)
    if body is not None:
        if body.kind == "tensor":
            info = analysis.tensors[body.name]
            return SymbolAt("tensor", body.name, body.span, None, info.definitions,
                            tensor_references(analysis, body.name))
        kind = body.kind if body.kind in ("index", "builtin") else "local"
        return SymbolAt(kind, body.name, body.span, None, body.definitions, body.references)
    k = _statement_at(analysis, offset)
    if k is None:
        return None
    stmt = _as_written(analysis, k)
    if type(stmt) is ir.AxisDecl and stmt.name_span.start <= offset <= stmt.name_span.end:
        return _axis_symbol(analysis, k, stmt)
    # (first: a statement calling a `fn` has the roles of its written-out result, whose
    # places miss the arguments' other occurrences)
    argument_index = _call_index_at(analysis, k, stmt, offset)
    if argument_index is not None:
        return argument_index
    for role in analysis.roles.get(k, ()):
        for occ in role.occurrences:
            if occ.span.start <= offset <= occ.span.end and occ.form != "slice":
                # (a keyword argument's index, `axis=c`, is listed twice: once here)
                spans = tuple(sorted({_name_span(o) for o in role.occurrences}))
                lhs = tuple(sorted({_name_span(o) for o in role.occurrences if o.lhs}))
                return SymbolAt("index", role.name, _name_span(occ), k, lhs or spans[:1],
                                spans)
    for node in _names_in(stmt):
        name, span = node
        if not (span.start <= offset <= span.end):
            continue
        if name in analysis.tensors:
            info = analysis.tensors[name]
            return SymbolAt("tensor", name, span, k, info.definitions,
                            tensor_references(analysis, name))
        if name in BUILTINS:
            return SymbolAt("builtin", name, span, k, (), ())
    return None


def _axis_symbol(analysis: Analysis, k: int, decl: ir.AxisDecl) -> SymbolAt:
    """An `axis` declaration's name: its places are every index of that name in the
    program's equations (the extent it gives them), and its declarations."""
    decls = tuple(s.name_span for s in analysis.program.statements
                  if type(s) is ir.AxisDecl and s.name == decl.name)
    spans = set(decls)
    inlined = analysis.inlined.origins if analysis.inlined is not None else {}
    for j, roles in analysis.roles.items():
        if j not in inlined:  # (an equation a `fn` call wrote out has the call's spans)
            spans.update(_name_span(occ) for role in roles if role.name == decl.name
                         for occ in role.occurrences if occ.form != "slice")
    end = len(analysis.text)
    return SymbolAt("axis", decl.name, decl.name_span, k, decls,
                    tuple(sorted(s for s in spans if s.end <= end)))


def _name_span(occ: Occurrence) -> Span:
    """An index's occurrence as its name alone: a dotted one (`p'.`, the axis
    softmax normalises) without its dot, which is no part of the name."""
    return Span(occ.span.start, min(occ.span.end, occ.span.start + len(occ.name)))


def _call_index_at(analysis: Analysis, k: int, stmt: ir.Statement, offset: int
                   ) -> SymbolAt | None:
    """An index in the arguments of a `fn` call (its roles are the written-out
    equations'): every occurrence of it in the statement as written."""
    if analysis.inlined is None or k not in analysis.inlined.written:
        return None
    spans: dict[str, list[Span]] = {}
    at = None
    lhs: dict[str, list[Span]] = {}
    defined = ir.defined_refs(stmt)
    read = [r for e in ir.used_exprs(stmt) for r in ir.refs(e)]
    for on_lhs, refs in ((True, defined), (False, read)):
        for ref in refs:
            for name, span in index_name_spans(ref):
                spans.setdefault(name, []).append(span)
                if on_lhs:
                    lhs.setdefault(name, []).append(span)
                if span.start <= offset <= span.end:
                    at = (name, span)
    if at is None:
        return None
    name, span = at
    found = tuple(sorted(set(spans[name])))
    return SymbolAt("index", name, span, k, tuple(lhs.get(name, ())) or found[:1], found)


def tensor_references(analysis: Analysis, name: str) -> tuple[Span, ...]:
    """Every occurrence of tensor `name` (its definitions, reads, exports and queries),
    in text order (those of imported files after the program's: check/imports.py)."""
    info = analysis.tensors[name]
    refs = set(info.definitions) | set(info.uses) | _exported(analysis, name) \
        | reads_in_bodies(analysis, name)
    return tuple(sorted(_in_text(analysis, name, refs)))


def _names_in(stmt: ir.Statement):
    for ref in ir.defined_refs(stmt):
        yield ref.name, ref.name_span
    for expr in ir.used_exprs(stmt):
        for node in ir.walk(expr):
            if isinstance(node, ir.Ref):
                yield node.name, node.name_span
            elif isinstance(node, ir.Call):
                yield node.name, node.name_span


def _in_text(analysis: Analysis, name: str, spans: set[Span]) -> set[Span]:
    """`spans` of tensor `name` where the text has them: less the calls of `fn`s (the
    span of every node a call wrote out), plus its reads in those calls' arguments."""
    inlined = analysis.inlined
    if inlined is None:
        return spans
    spans = spans - {origin.call for origin in inlined.origins.values()}
    for stmt in inlined.written.values():
        for expr in ir.used_exprs(stmt):
            spans.update(ref.name_span for ref in ir.refs(expr) if ref.name == name)
    return spans


def _exported(analysis: Analysis, name: str) -> set[Span]:
    spans = set()
    for stmt in analysis.program.statements:
        if isinstance(stmt, (ir.Export, ir.Query, ir.TrainDecl)):
            for ref in (stmt.names if isinstance(stmt, ir.Export) else
                        (stmt.loss,) if isinstance(stmt, ir.TrainDecl) else (stmt.atom,)):
                if ref.name == name:
                    spans.add(ref.name_span)
    return spans


def definition_at(analysis: Analysis, offset: int) -> tuple[Span, ...]:
    """Where the thing under `offset` is defined (empty when nothing is)."""
    found = symbol_at(analysis, offset)
    return found.definitions if found else ()


def references_at(analysis: Analysis, offset: int) -> tuple[Span, ...]:
    """Every occurrence of the thing under `offset`: what a rename would edit."""
    found = symbol_at(analysis, offset)
    return found.references if found else ()


def renamable(found: SymbolAt) -> bool:
    """Whether a rename may start at `found`: not a builtin, nor the wildcard `_`
    (any value, no name: a name there would be a variable, bound or unsafe), nor an
    `axis` declaration's name (each equation's index of that name is its own)."""
    return found.kind not in ("builtin", "axis") and \
        not (found.kind == "index" and is_wildcard(found.name))


def rename_refusal(found: SymbolAt) -> str | None:
    """Why no rename starts at `found`, in words (None: one may, or nothing needs
    saying: the wildcard `_` is no name)."""
    if found.kind == "builtin":
        return f"`{found.name}` is a builtin: it cannot be renamed"
    if found.kind == "axis":
        return (f"`axis {found.name}` gives its extent to every index named `{found.name}`: "
                f"each is its equation's own; rename one there")
    return None


_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*'*\Z")


def rename_problem(analysis: Analysis, found: SymbolAt, new: str) -> str | None:
    """Why `found` cannot be renamed `new` (None: it can).  A new name that is
    already another tensor, function, builtin or keyword would silently change
    what the program means (two tensors merged, a call read as a builtin), as
    would an index renamed to another index of its statement, a tensor renamed
    to a name read bare as an index's value (`Y[i] = i + A[i]`: `i` would read
    the tensor), and, in a `fn`'s definition, a name renamed to another of its
    parameters, result, locals or the program's tensors its body reads."""
    if not _NAME.match(new):
        return f"`{new}` is not a name"
    last = new.rpartition("::")[2]
    if "::" in new and found.kind not in ("tensor", "function"):
        return f"`{new}`: only an imported file's tensor or function is named with `::`"
    if "::" in new:  # (a rename edits the name's last part: its file stays its file)
        written = analysis.text[found.span.start:found.span.end]
        prefixes = {found.name.rpartition("::")[0], written.rpartition("::")[0]}
        if new.rpartition("::")[0] not in prefixes:
            here = found.name.rpartition("::")[0]
            return (f"`{new}`: a rename keeps the namespace ({f'`{here}::`' if here else 'none'}): "
                    f"write the new name alone, `{last}`")
    if last == user_name(found.name.rpartition("::")[2]):
        return None
    if last in KEYWORDS:
        return f"`{last}` is a keyword"
    if is_wildcard(last):
        return "`_` is the wildcard (any value), not a name: each `_` would be one of its own"
    if found.kind == "index":
        return _index_problem(analysis, found, last)
    if found.kind == "local":
        fn = function_around(analysis, found.span.start)
        if fn is not None and last in names_met(analysis, fn, found.span)[1]:
            whose = f"of `fn {fn.name}`" if last in own_names(fn) else "its body reads"
            return f"`{last}` is already a tensor {whose}: the two would be one"
        return None
    if found.kind in ("tensor", "function"):
        return _tensor_problem(analysis, found, last)
    return None


def _index_problem(analysis: Analysis, found: SymbolAt, last: str) -> str | None:
    if not (last[0].islower() or last[0] == "_"):
        return "an index variable starts with a lowercase letter or _"
    taken: set[str] = set()
    tensors: set[str] = set()
    if found.statement is not None:
        taken = _statement_indices(analysis, found.statement)
    else:  # in a `fn`'s definition: its signature's or its equation's indices
        fn = function_around(analysis, found.span.start)
        if fn is not None:
            taken, tensors = names_met(analysis, fn, found.span)
    if last in taken:
        return f"`{last}` is already an index of this equation: the two would be one"
    if last in analysis.tensors or last in tensors:
        return f"`{last}` is a tensor: the equation would read its value"
    return None


def _statement_indices(analysis: Analysis, k: int) -> set[str]:
    """The index names of statement `k` as written (a `fn` call's arguments' too)."""
    taken = {role.name for role in analysis.roles.get(k, ())}
    if analysis.inlined is not None and k in analysis.inlined.written:
        stmt = analysis.inlined.written[k]
        refs = [*ir.defined_refs(stmt), *(r for e in ir.used_exprs(stmt) for r in ir.refs(e))]
        taken |= {name for ref in refs for name, _ in index_name_spans(ref)}
    return taken


def _tensor_problem(analysis: Analysis, found: SymbolAt, last: str) -> str | None:
    """A tensor or a function renamed `last`: what it would merge with, or be read as.
    An imported file's name (`ns::T`) meets the names of its file (`ns::S`)."""
    namespace = found.name.rpartition("::")[0]
    home = f"{namespace}::{last}" if namespace else last
    if home in analysis.tensors or last in BUILTINS or \
            (analysis.inlined is not None and home in analysis.inlined.functions):
        what = "a builtin" if last in BUILTINS else "already defined"
        return (f"`{last}` is {what}: renaming `{user_name(found.name)}` to it would "
                f"merge the two")
    if found.kind == "function":
        return None
    local = next((name for name in analysis.tensors if is_block_local(name) and
                  name != found.name and user_name(name) == last), None)
    if local is not None:
        return f"`{last}` is already a local tensor (`let`): the two would be one"
    for fn in readers(analysis, found.name):
        if last in own_names(fn):
            return (f"`fn {fn.name}` reads `{found.name}` and has a tensor of its own "
                    f"named `{last}`: the body would read that one")
    bare = any(role.name == last and any(o.form in ("value", "argument")
                                         for o in role.occurrences)
               for roles in analysis.roles.values() for role in roles) or \
        any(last in bare_index_names(fn) for fn in own_functions(analysis))
    if bare:
        return f"`{last}` is read as an index's value: it would read the tensor instead"
    return None
