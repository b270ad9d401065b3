"""What a hover shows, as plain data: markdown and the span it covers.

Tensors: kind, shape with each axis' index, extent and domain, dtype, every
definition and where the data comes from.  Index variables: extent, domain and
role in their equation.  Equations and their operator: the projection
explanation from the planner.  Builtins: signature and meaning.  A word that
starts a statement: what it does.  A source's or a sink's path: the file it names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..check import Analysis, TensorInfo, TensorKind
from ..check.analysis import shown_index
from ..check.compared_constants import compared_symbol, constant_text, symbol_position
from ..check.initialisers import INITIALISERS
from ..check.loss import loss_of
from ..check.param_roles import param_starts
from ..front import ir
from ..front.builtins import BUILTINS, REDUCE_DOC, SELECT_SPELLINGS, STATEMENT_KEYWORDS
from ..front.ir_text import index_text, ref_text
from ..front.let_blocks import user_name
from ..front.lexer import tokenize
from ..front.span import Span
from ..io.cells import value_text
from ..plan import plan_equation
from ..plan.config import ExecutionConfig, fixpoint_choice, recursion_as_run
from ..plan.render import render_equation
from ..plan.representation import representations
from .file_links import path_hover
from .fn_bodies import body_markdown, index_detail, name_in_function, shown_name
from .imported import import_markdown
from .query import symbol_at


@dataclass(frozen=True, slots=True)
class Hover:
    markdown: str
    span: Span


def hover_at(analysis: Analysis, offset: int) -> Hover | None:
    """The hover for the position `offset` of the analysed text (None: nothing there)."""
    found = _hover(analysis, offset) or _keyword_at(analysis, offset)
    if found is None:
        path = path_hover(analysis, offset)
        found = Hover(*path) if path is not None else None
    return found


def _keyword_at(analysis: Analysis, offset: int) -> Hover | None:
    """A word that starts a statement (`export`, `axis`, `let`, ...): what it does."""
    line = analysis.lines.position(offset)[0]
    start = analysis.lines.line_starts[line]
    for tok in tokenize(analysis.lines.line_text(line)):
        if tok.type != "NAME" and tok.value in STATEMENT_KEYWORDS and \
                start + tok.start_pos <= offset <= start + tok.end_pos:
            example, doc = STATEMENT_KEYWORDS[tok.value]
            return Hover(f"```fuse\n{example}\n```\n**keyword** · {doc}",
                         Span(start + tok.start_pos, start + tok.end_pos))
    return None


def _hover(analysis: Analysis, offset: int) -> Hover | None:
    imported = import_markdown(analysis, offset)
    if imported is not None:
        return Hover(*imported)
    body = name_in_function(analysis, offset)
    if body is not None and body.kind not in ("tensor", "builtin"):
        return Hover(body_markdown(analysis, body), body.span)
    found = symbol_at(analysis, offset)
    if found is not None:
        if found.kind == "tensor":
            return Hover(tensor_markdown(analysis, analysis.tensors[found.name]), found.span)
        if found.kind == "index" and found.statement is not None:
            return Hover(index_markdown(analysis, found.statement, found.name), found.span)
        if found.kind == "builtin":
            written = analysis.text[found.span.start:found.span.end]
            if written in _CONDITION_OPERATORS:  # `||`, `!`, `case`, `when`: calls in the IR
                form, doc = _CONDITION_OPERATORS[written]
                return Hover(f"```fuse\n{form}\n```\n{doc}", found.span)
            # `where`, `masked_fill`: selects in the IR, shown as written
            shown = written if written in SELECT_SPELLINGS else found.name
            return Hover(builtin_markdown(shown), found.span)
        if found.kind == "function":
            return Hover(function_markdown(analysis, found.name, found.span), found.span)
    inlined = analysis.inlined.origins if analysis.inlined is not None else {}
    for k, stmt in enumerate(analysis.program.statements):
        if not stmt.span.start <= offset <= stmt.span.end or k in inlined:
            continue  # (an equation a `fn` call wrote out has the call's span)
        if isinstance(stmt, ir.Equation) and stmt.op_span.start <= offset <= stmt.op_span.end:
            return Hover(equation_markdown(analysis, k), stmt.op_span)
        if isinstance(stmt, ir.ParamDecl):
            for init in stmt.inits:
                if init is not None and init.name in INITIALISERS \
                        and init.name_span.start <= offset <= init.name_span.end:
                    spec = INITIALISERS[init.name]
                    return Hover(f"```fuse\n{spec.signature}\n```\n{spec.doc}", init.name_span)
        if isinstance(stmt, ir.AxisDecl) and stmt.name_span.start <= offset <= stmt.name_span.end:
            return Hover(_axis_markdown(analysis, stmt), stmt.name_span)
        constant = _constant_at(analysis, stmt, offset)
        if constant is not None:
            return constant
        for expr in ir.used_exprs(stmt):
            for node in ir.walk(expr):
                if isinstance(node, ir.Reduce) and node.span.start <= offset < node.op_span.start:
                    return Hover(f"```fuse\n{REDUCE_DOC[0]}\n```\n{REDUCE_DOC[1]}", node.span)
                if isinstance(node, ir.Call):
                    found_symbol = compared_symbol(node, analysis.tensors)
                    if found_symbol is not None and \
                            found_symbol[0].span.start <= offset <= found_symbol[0].span.end:
                        return Hover(symbol_markdown(analysis, k, node), found_symbol[0].span)
        return None
    return None


def _axis_markdown(analysis: Analysis, decl: ir.AxisDecl) -> str:
    """`axis d = 64`: the extent it gives the index name program-wide, and how
    many tensors' axes it sizes."""
    if decl.padding is not None:
        what = (f"windows over it stay inside their axis (`{decl.padding}`)"
                if decl.padding == "valid" else f"windows over it are centred (`{decl.padding}`)")
    else:
        what = f"extent **{decl.extent:,}** wherever an index is named `{decl.name}`"
    sized = sorted(info.name for info in analysis.tensors.values()
                   if any(axis.index == decl.name for axis in info.axes))
    lines = [f"```fuse\naxis {decl.name}\n```", f"**axis** · {what}"]
    if sized:
        shown = ", ".join(f"`{user_name(n)}`" for n in sized[:8])
        more = f" and {len(sized) - 8} more" if len(sized) > 8 else ""
        lines.append(f"\nsizes an axis of {shown}{more}")
    return "\n".join(lines)


# `a || b` and `!c` as the IR has them (front/conditions.py): a call at the operator
_CONDITION_OPERATORS = {
    "||": ("a || b", "Holds where `a` or `b` holds: `max(a, b)` of their 0/1 values "
           "(docs/language.md, Conditions)."),
    "!": ("!c", "Holds where `c` does not: a flipped comparison, `not R(x)` for a "
          "relation, else `1 - c` of its 0/1 value (docs/language.md, Conditions)."),
    "case": ("case { c1 -> a; c2 -> b; default -> d }",
             "The first arm whose condition holds, elementwise: `select(c1, a, select(c2, b, "
             "d))`; without `default` the rest is 0 (docs/language.md, Choices)."),
    "when": ("e when c", "`e` where the guard `c` holds, 0 (no term) where it does not: "
             "`select(c, e, 0)`. It binds loosest of all; an index in both `e` and `c` is "
             "projected outside it, so only the terms where `c` holds are summed "
             "(docs/language.md, Choices)."),
}


def tensor_markdown(analysis: Analysis, info: TensorInfo) -> str:
    dtype = "Boolean (0/1)" if info.boolean else "float32"
    lines = [f"```fuse\n{user_name(info.name)}{info.axes_text}\n```",
             f"**{info.kind}** · shape `{_shape(info.shape)}` · {dtype}"]
    scope = _local_scope(analysis, info.name)
    if scope:
        lines.append("")
        lines.append(scope)
    if info.axes:
        lines.append("")
        lines.append("| axis | index | extent | domain |")
        lines.append("|---|---|---|---|")
        for pos, axis in enumerate(info.axes):
            extent = "?" if axis.extent is None else str(axis.extent)
            note = " (virtual: only the latest value is kept)" if axis.virtual else ""
            values = analysis.domain_symbols.get(axis.domain)
            if values:
                shown = ", ".join(value_text(v) for v in values[:6]) + \
                    (", …" if len(values) > 6 else "")
                note += f" values: {shown}"
            index = shown_index(axis.index) if axis.index else "-"
            lines.append(f"| {pos} | `{index}` | {extent} | D{axis.domain}{note} |")
    if info.source_path:
        lines.append("")
        lines.append(f"Data from `{info.source_path}`.")
    stored = representations(analysis).get(info.name)
    if stored is not None:
        lines.append("")
        gap = ": " if stored.nonzeros is not None else " "
        lines.append(f"Stored **{stored.kind}**{gap}{stored.detail}.")
    if info.definitions:
        lines.append("")
        where = ", ".join(_line_of(analysis, s) for s in info.definitions[:8])
        more = f" and {len(info.definitions) - 8} more" if len(info.definitions) > 8 else ""
        op = f" (combined with `{info.op}`)" if info.op and len(info.definitions) > 1 else ""
        lines.append(f"Defined at {where}{more}{op}.")
    if info.kind == TensorKind.PARAM:
        start = param_starts(analysis).get(info.name)
        if start is not None:
            lines.append("")
            lines.append(f"Starts as {start.text(info.shape)}.")
    training = _training_line(analysis, info.name)
    if training:
        lines.append("")
        lines.append(training)
    if info.name in analysis.recursive:
        group = next((g for g in analysis.order if info.name in g), (info.name,))
        how = _recursion_words(analysis, tuple(group), info.name)
        lines.append(f"Recursive with {', '.join(map(user_name, group))}: {how}.")
    return "\n".join(lines)


def _recursion_words(analysis: Analysis, group: tuple[str, ...], name: str) -> str:
    """How a run with the default configuration takes `name`'s group to its
    fixpoint: `fuse explain`'s words (a linear closure's graph search included)."""
    words = analysis.recursion.get(name)
    if words is None:
        return "evaluated to a fixpoint"
    choice = fixpoint_choice(analysis, group, ExecutionConfig())
    return dict(recursion_as_run(((name, words),), {group: choice}))[name]


def _local_scope(analysis: Analysis, name: str) -> str:
    """Where a `let` tensor is visible ("" for a program tensor)."""
    lowered = analysis.lowered
    if lowered is None:
        return ""
    if name in lowered.file_locals:
        return "Local to this file (`let`): no output, not seen by importing files."
    for scope in lowered.scopes:
        if name in scope.names.values():
            line = analysis.lines.position(scope.span.start)[0] + 1
            return f"Local to the block at line {line} (`let`)."
    return ""


def _line_of(analysis: Analysis, span: Span) -> str:
    """`line 3`, or `lib/graph.fuse:8` for a definition in an imported file."""
    imported = analysis.imports.where(span) if analysis.imports is not None else None
    return imported or f"line {analysis.lines.position(span.start)[0] + 1}"


def _training_line(analysis: Analysis, name: str) -> str:
    """For the loss: the params and data it reaches; for a param it reaches: that."""
    loss = loss_of(analysis)
    if loss is None:
        return ""
    if name == loss.name:
        return loss.text()
    if name in loss.params:
        return f"Learned by `fuse train` against the loss `{loss.name}`."
    return ""


def _shape(shape) -> str:
    inner = ", ".join("?" if e is None else str(e) for e in shape)
    return f"({inner}{',' if len(shape) == 1 else ''})"


def symbol_markdown(analysis: Analysis, statement: int, call: ir.Call) -> str:
    """A comparison's symbol constant (`Ann` in `(x != Ann)`): where its column
    numbers it, or that the column does not hold it."""
    found = compared_symbol(call, analysis.tensors)
    assert found is not None
    constant, other = found
    name = constant_text(constant)
    shown = value_text(name)
    lines = [f"```fuse\n{shown}\n```"]
    if not isinstance(other, ir.Ref) or (statement, other.name) not in analysis.var_extents:
        return "\n\n".join(lines + ["**symbol** constant"])
    _, domain = analysis.var_extents[(statement, other.name)]
    position = symbol_position(name, analysis.domain_symbols.get(domain, ()))
    where = (f"position {position} of `{other.name}`'s column (domain D{domain})" if position >= 0
             else f"not a symbol of `{other.name}`'s column (domain D{domain}): "
                  f"`{other.name} {call.name} {shown}` is "
                  f"{'never' if call.name == '==' else 'always'} true")
    return "\n\n".join(lines + [f"**symbol** · {where}"])


def index_markdown(analysis: Analysis, statement: int, name: str) -> str:
    roles = [r for r in analysis.roles.get(statement, ()) if r.name == name]
    extent, domain = analysis.var_extents.get((statement, name), (None, 0))
    lines = [f"```fuse\n{shown_name(analysis, name)}\n```",
             f"**index** · extent {'?' if extent is None else extent} · domain D{domain}"]
    details = index_detail(analysis, statement, name) if any(r.role == "output" for r in roles) \
        else ("output", "")
    for role in roles:
        if role.role == "output" and details[0] == "step":
            text = f"the **step** of a recurrence ({details[1]})"
        elif role.role == "output":
            text = "an **output** axis (on the left-hand side)"
            if details[1]:
                text += f": {details[1]}"
        elif role.role == "projected":
            where = "the right-hand side"
            if role.scope is not None and role.scope.kind == "argument":
                where = "a call argument"
            elif role.scope is not None and role.scope.kind == "reduce":
                where = "the `reduce`"
            text = f"**projected** by `{role.op}` in {where}"
        else:
            text = "**free** (kept in the result)"
        factors = ", ".join(dict.fromkeys(shown_name(analysis, f) for f in role.factors))
        if role.joined:
            text += f"; **joins** {factors}"
        elif role.factors:
            text += f"; read from {factors}"
        lines.append(text)
    if not roles and analysis.inlined is not None and statement in analysis.inlined.written:
        extent, domain = _argument_axis(analysis, analysis.inlined.written[statement], name)
        lines[1] = (f"**index** · extent {'?' if extent is None else extent} · "
                    f"domain D{domain}")
        lines.append("an index of a function call's arguments: bound, by position, to the "
                     "indices of the function's parameters (projected inside the call "
                     "unless the left-hand side keeps it)")
    return "\n\n".join(lines)


def _constant_at(analysis: Analysis, stmt: ir.Statement, offset: int) -> Hover | None:
    """A constant index under `offset` (`"ann"`, `-4`, `Alice` in an atom or a
    fact): the value it names in its column, or the position it selects."""
    refs = list(ir.defined_refs(stmt))
    refs += [ref for expr in ir.used_exprs(stmt) for ref in ir.refs(expr)]
    for ref in refs:
        for pos, index in enumerate(ref.indices or ()):
            if type(index) is not ir.IndexConst or \
                    not index.span.start <= offset <= index.span.end:
                continue
            written = value_text(index.value)
            info = analysis.tensors.get(ref.name)
            head = f"```fuse\n{written}\n```\n**constant**"
            if info is None or pos >= len(info.axes):
                return Hover(head, index.span)
            axis = info.axes[pos]
            values = analysis.domain_symbols.get(axis.domain, ())
            where = f"column {pos} of `{shown_name(analysis, info.name)}` (domain D{axis.domain}"
            if values:
                found = [n for n, v in enumerate(values)
                         if v == index.value and type(v) is type(index.value)]
                what = (f"value {found[0]} of {len(values)} in" if found
                        else f"none of the {len(values)} values of")
                return Hover(f"{head} · {what} {where})", index.span)
            return Hover(f"{head} · position {index.value} of {where})", index.span)
    return None


def _argument_axis(analysis: Analysis, stmt: ir.Statement, name: str
                   ) -> tuple[int | None, int]:
    """The extent and domain of the first axis index `name` reads in `stmt`."""
    for expr in ir.used_exprs(stmt):
        for ref in ir.refs(expr):
            info = analysis.tensors.get(ref.name)
            for pos, index in enumerate(ref.indices or ()):
                if info is not None and pos < len(info.axes) and \
                        isinstance(index, ir.IndexVar) and index.name == name:
                    return info.axes[pos].extent, info.axes[pos].domain
    return None, 0


def equation_markdown(analysis: Analysis, statement: int) -> str:
    """The projection of the equation, as `fuse explain` says it; for one that calls
    a `fn`, first that of each equation the calls write out (where its indices are
    projected: the call's own line has only the left-hand side's)."""
    plan = plan_equation(analysis, statement)
    written = _written_out(analysis, statement)
    lines = [line for k in (*written[:_WRITTEN_SHOWN], statement)
             for line in render_equation(plan_equation(analysis, k))]
    if len(written) > _WRITTEN_SHOWN:
        lines.insert(-len(render_equation(plan)), f"... and {len(written) - _WRITTEN_SHOWN} "
                     f"more written-out equations that project (fuse explain lists them)")
    body = _LOWERED.sub(lambda m: shown_name(analysis, m.group(0)), "\n".join(lines))
    return (f"**Projection** of `{shown_name(analysis, plan.tensor)}` ({plan.op})\n\n"
            f"```\n{body}\n```")


def _written_out(analysis: Analysis, statement: int) -> list[int]:
    """The statements the `fn` calls of `statement` write out that project an
    index, in order."""
    if analysis.inlined is None:
        return []
    span = analysis.program.statements[statement].span
    return [k for k, origin in sorted(analysis.inlined.origins.items())
            if span.start <= origin.call.start and origin.call.end <= span.end
            and k != statement
            and any(role.role == "projected" for role in analysis.roles.get(k, ()))]


_WRITTEN_SHOWN = 6


# a name the lowering made (a block's or a call's local, an imported file's axis, a `_`)
_LOWERED = re.compile(r"(?<![A-Za-z0-9_'])(?:[A-Za-z_][A-Za-z0-9_]*@[A-Za-z_][A-Za-z0-9_:]*"
                      r"(?:\.\d+)?'*|__\d+(?![A-Za-z0-9_]))")


def function_markdown(analysis: Analysis, name: str, at: Span) -> str:
    """A `fn`'s signature, and at a call the shape of what the call gives."""
    assert analysis.inlined is not None
    fn = analysis.inlined.functions[name]
    params = ", ".join(ref_text(p) for p in fn.params)
    out = f"```fuse\nfn {name}({params}) -> {ref_text(fn.result)}\n```\n" \
          f"A function, inlined at each call (its body: {len(fn.body)} " \
          f"equation{'s' if len(fn.body) != 1 else ''})."
    for stmt in analysis.program.statements:  # the call's result: a Ref at its name
        if isinstance(stmt, (ir.Equation, ir.Sink)) and stmt.span.start <= at.start \
                and at.end <= stmt.span.end:
            for ref in ir.refs(stmt.rhs):
                info = analysis.tensors.get(ref.name)
                if ref.name_span == at and info is not None:
                    over = ",".join(index_text(i) for i in ref.indices or ())
                    return out + f"\n\nThis call gives a tensor over `[{over}]`, shape " \
                                 f"{_shape(info.shape)}."
    return out


def builtin_markdown(name: str) -> str:
    spec = BUILTINS[name]
    return f"```fuse\n{spec.signature}\n```\n{spec.doc}"
