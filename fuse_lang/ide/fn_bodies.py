"""Names inside a `fn`'s definition, for hover, go to definition, references and
rename (docs/language.md, Functions).

A function's definition is no statement of the checked program (its calls are
written out before checking: front/functions.py), so the lookups by statement
(ide/query.py) find nothing in it.  Here its names are resolved as the language
says: a parameter or the result is the function's own (its signature and every
mention in its body), so is a tensor its body defines (a local), an index is its
equation's own (or the signature's), and any other name is the program's tensor.
What the checker knows of them comes from the calls written out (`Origin`): a
local's shape at each call, an index's extent and role.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ..check import Analysis
from ..front import ir
from ..front.builtins import BUILTINS
from ..front.let_blocks import user_name
from ..front.span import Span
from ..front.wildcards import is_wildcard

MAX_CALLS_SHOWN = 4  # a hover lists the shapes at this many calls at most


@dataclass(frozen=True, slots=True)
class BodyName:
    """A name written in a function's definition."""

    kind: str  # "parameter" | "result" | "local" | "index" | "tensor" | "builtin"
    name: str
    fn: ir.FnDef
    span: Span  # the occurrence under the offset
    scope: int | None  # an index's equation (a body position); None: the signature
    definitions: tuple[Span, ...]
    references: tuple[Span, ...]  # every occurrence in the definition, in text order


def own_functions(analysis: Analysis) -> list[ir.FnDef]:
    """The functions this document defines (not those of the files it imports)."""
    inlined = analysis.inlined
    if inlined is None:
        return []
    size = len(analysis.text)
    return [fn for fn in inlined.functions.values() if fn.span.end <= size]


def function_around(analysis: Analysis, offset: int) -> ir.FnDef | None:
    for fn in own_functions(analysis):
        if fn.span.start <= offset <= fn.span.end:
            return fn
    return None


def index_name_spans(ref: ir.Ref) -> Iterator[tuple[str, Span]]:
    """Each index variable of `ref` with the span of its name (no prime, no dot)."""
    for index in ref.indices or ():
        for var in ir.index_vars(index):
            yield var.name, Span(var.span.start, var.span.start + len(var.name))


def _tensor_names(fn: ir.FnDef) -> tuple[set[str], set[str]]:
    """The parameters' names, and the names the function defines (result, locals)."""
    params = {p.name for p in fn.params}
    defined = {fn.result.name} | {eq.lhs.name for eq in fn.body}
    return params, defined - params


def _occurrences(fn: ir.FnDef) -> Iterator[tuple[str, str, Span, int | None]]:
    """("tensor" | "builtin" | "index", name, span, scope) for every name written."""
    params, defined = _tensor_names(fn)
    for ref in (*fn.params, fn.result):
        yield "tensor", ref.name, ref.name_span, None
        for name, span in index_name_spans(ref):
            yield "index", name, span, None
    for k, eq in enumerate(fn.body):
        yield "tensor", eq.lhs.name, eq.lhs.name_span, k
        for name, span in index_name_spans(eq.lhs):
            yield "index", name, span, k
        for node in ir.walk(eq.rhs):
            if type(node) is ir.Call:
                yield "builtin", node.name, node.name_span, k
            elif type(node) is ir.Ref:
                if node.indices is None and node.name not in params | defined and \
                        (node.name[0].islower() or node.name[0] == "_") and \
                        _is_index_of(eq, node.name):
                    yield "index", node.name, node.name_span, k  # an index used as a value
                    continue
                yield "tensor", node.name, node.name_span, k
                for name, span in index_name_spans(node):
                    yield "index", name, span, k


def _is_index_of(eq: ir.Equation, name: str) -> bool:
    refs = (eq.lhs, *ir.refs(eq.rhs))
    return any(var == name for ref in refs for var, _ in index_name_spans(ref))


def name_in_function(analysis: Analysis, offset: int) -> BodyName | None:
    """The name under `offset` inside one of the document's function definitions."""
    fn = function_around(analysis, offset)
    if fn is None:
        return None
    found = [occ for occ in _occurrences(fn) if occ[2].start <= offset <= occ[2].end]
    if not found:
        return None
    what, name, span, scope = found[0]
    params, defined = _tensor_names(fn)
    if what == "builtin":
        if name in BUILTINS:
            return BodyName("builtin", name, fn, span, scope, (), ())
        return None  # a call of a function: ide/query.py's _function_at
    occurrences = list(_occurrences(fn))
    if what == "index":
        refs = tuple(sorted(s for w, n, s, k in occurrences
                            if w == "index" and n == name and k == scope))
        lhs = _lhs_spans(fn, scope, name)
        return BodyName("index", name, fn, span, scope, lhs or refs[:1], refs)
    if name in params or name in defined:
        refs = tuple(sorted(s for w, n, s, _ in occurrences if w == "tensor" and n == name))
        kind = "parameter" if name in params else \
            "result" if name == fn.result.name else "local"
        definitions = tuple(p.name_span for p in fn.params if p.name == name) if \
            kind == "parameter" else tuple(eq.lhs.name_span for eq in fn.body
                                           if eq.lhs.name == name)
        return BodyName(kind, name, fn, span, scope, definitions or refs[:1], refs)
    if name in analysis.tensors:
        return BodyName("tensor", name, fn, span, scope, (), ())
    return None


def names_met(analysis: Analysis, fn: ir.FnDef, span: Span) -> tuple[set[str], set[str]]:
    """What the name at `span` of `fn`'s definition would meet if renamed: (the
    indices of its scope, when it is an index: the signature's or its equation's;
    the function's own tensors and the program's tensors its body reads)."""
    occurrences = list(_occurrences(fn))
    scope = next((k for w, _, s, k in occurrences if w == "index" and s == span), False)
    indices = set() if scope is False else \
        {n for w, n, _, k in occurrences if w == "index" and k == scope}
    return indices, own_names(fn) | {n for w, n, _, _ in occurrences
                                     if w == "tensor" and n in analysis.tensors}


def own_names(fn: ir.FnDef) -> set[str]:
    """The tensors a function names as its own: its parameters, result and locals."""
    params, defined = _tensor_names(fn)
    return params | defined


def readers(analysis: Analysis, name: str) -> list[ir.FnDef]:
    """The functions (this document's and its imports') whose body reads the
    program's tensor `name`."""
    inlined = analysis.inlined
    if inlined is None:
        return []
    return [fn for fn in inlined.functions.values() if name not in own_names(fn)
            and any(ref.name == name for eq in fn.body for ref in ir.refs(eq.rhs))]


def bare_index_names(fn: ir.FnDef) -> set[str]:
    """The names `fn`'s body reads bare as an index's value (`sin(p / L)`)."""
    return {n for w, n, s, k in _occurrences(fn) if w == "index" and k is not None
            and not any(n == m and s == t for m, t in _index_spans(fn.body[k]))}


def _index_spans(eq: ir.Equation) -> Iterator[tuple[str, Span]]:
    for ref in (eq.lhs, *ir.refs(eq.rhs)):
        yield from index_name_spans(ref)


def _lhs_spans(fn: ir.FnDef, scope: int | None, name: str) -> tuple[Span, ...]:
    refs = (*fn.params, fn.result) if scope is None else (fn.body[scope].lhs,)
    return tuple(s for ref in refs for n, s in index_name_spans(ref) if n == name)


def reads_in_bodies(analysis: Analysis, name: str) -> set[Span]:
    """The spans where function bodies (this document's and its imports') read the
    program's tensor `name` (a body's own names are not the program's)."""
    inlined = analysis.inlined
    if inlined is None:
        return set()
    out = set()
    for fn in inlined.functions.values():
        params, defined = _tensor_names(fn)
        if name in params or name in defined:
            continue
        for eq in fn.body:
            out.update(ref.name_span for ref in ir.refs(eq.rhs) if ref.name == name)
    return out


# ------------------------------------------------------------------ hover

_CALL_LOCAL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)@([A-Za-z_][A-Za-z0-9_:]*)\.\d+('*)\Z")


def shown_name(analysis: Analysis, name: str) -> str:
    """A tensor or index name as the user wrote it: a call's copy of a function's
    result (`o@lib::head.1`) is the call (`lib::head(…)`), a call's local (`q@head.2`)
    `q (in fn head)`, a block's local (`h@let.3`) `h`, a wildcard (`__1`) `_`."""
    if is_wildcard(name):
        return "_"
    if "@let." in name:
        return user_name(name)
    found = _CALL_LOCAL.match(name)
    if found is None:
        return name[:name.index("@")] if "@" in name else name
    local, fn, primes = found.groups()
    inlined = analysis.inlined
    definition = inlined.functions.get(fn) if inlined is not None else None
    if definition is not None and definition.result.name == local:
        return f"{fn}(…)"
    return f"{local}{primes} (in fn {fn})"


_OPS = {"=": "sum", "+=": "sum"}
_RENAMED = re.compile(r"@[A-Za-z_][A-Za-z0-9_:]*\.\d+")


def _calls_of(analysis: Analysis, fn: ir.FnDef, body: Span) -> list[tuple[int, Span]]:
    """(statement, call) for each written-out copy of the body equation at `body`."""
    inlined = analysis.inlined
    assert inlined is not None
    return [(k, origin.call) for k, origin in sorted(inlined.origins.items())
            if origin.fn == fn.name and origin.body == body]


def _line(analysis: Analysis, span: Span) -> int:
    return analysis.lines.position(span.start)[0] + 1


def body_markdown(analysis: Analysis, found: BodyName) -> str:
    fn = found.fn
    if found.kind == "index":
        return _index_markdown(analysis, found)
    if found.kind == "parameter":
        position = next(k for k, p in enumerate(fn.params) if p.name == found.name)
        param = fn.params[position]
        head = (f"**parameter** {position + 1} of `fn {fn.name}`: at each call, the "
                f"argument in its place" + (", its k-th variable this parameter's k-th index"
                                            if param.indices else ""))
        return f"```fuse\n{_ref_written(analysis, param)}\n```\n{head}."
    what = "the **result**" if found.kind == "result" else "a **local** tensor"
    lines = [f"```fuse\n{found.name}\n```",
             f"{what} of `fn {fn.name}`: each call has its own (inlined before checking)."]
    equations = [eq for eq in fn.body if eq.lhs.name == found.name]
    shown = 0
    for eq in equations[:1]:
        for k, call in _calls_of(analysis, fn, eq.span):
            renamed = analysis.program.statements[k]
            info = analysis.tensors.get(getattr(getattr(renamed, "lhs", None), "name", ""))
            if info is None or shown >= MAX_CALLS_SHOWN:
                continue
            shown += 1
            shape = ", ".join("?" if e is None else str(e) for e in info.shape)
            comma = "," if len(info.shape) == 1 else ""
            lines.append(f"At the call at line {_line(analysis, call)}: shape ({shape}{comma}).")
    if not shown:
        lines.append("No call of the function in this file gives it a shape yet.")
    return "\n\n".join(lines)


def _ref_written(analysis: Analysis, ref: ir.Ref) -> str:
    return analysis.text[ref.span.start:ref.span.end]


def _index_markdown(analysis: Analysis, found: BodyName) -> str:
    fn = found.fn
    head = f"```fuse\n{found.name}\n```"
    if found.scope is None:
        where = [f"`{p.name}`" for p in (*fn.params, fn.result)
                 if any(n == found.name for n, _ in index_name_spans(p))]
        return (f"{head}\n\n**index** of the signature of `fn {fn.name}` (in "
                f"{', '.join(where)}): a parameter's indices bind, by position, the "
                f"variables of the argument at each call.")
    eq = fn.body[found.scope]
    lines = [head]
    for k, call in _calls_of(analysis, fn, eq.span)[:1]:
        for role in analysis.roles.get(k, ()):
            if _RENAMED.sub("", role.name) != found.name and \
                    role.name.split("@")[0] != found.name:
                continue
            extent, domain = analysis.var_extents.get((k, role.name), (None, 0))
            lines.append(f"**index** · extent {'?' if extent is None else extent} · "
                         f"domain D{domain} (at the call at line {_line(analysis, call)})")
            lines.append(_role_text(role, index_detail(analysis, k, role.name)))
            return "\n\n".join(lines)
    on_lhs = any(n == found.name for n, _ in index_name_spans(eq.lhs))
    role = "an **output** axis (on the left-hand side)" if on_lhs else \
        f"**projected** by `{_OPS.get(eq.op, eq.op.rstrip('='))}`"
    lines.append(f"**index** of an equation of `fn {fn.name}`; {role}")
    return "\n\n".join(lines)


def index_detail(analysis: Analysis, statement: int, name: str) -> tuple[str, str]:
    """What `fuse explain` says of a left-hand-side index beyond "output": its role
    ("output" or "step") and its detail (plan.index_details), as the planner has it."""
    from ..plan import plan_equation

    if not isinstance(analysis.program.statements[statement], ir.Equation):
        return "output", ""
    for index in plan_equation(analysis, statement).indices:
        if index.name == name:
            return index.role, index.detail
    return "output", ""


def _role_text(role, detail: tuple[str, str] = ("output", "")) -> str:
    if role.role == "output" and detail[0] == "step":
        text = f"the **step** of a recurrence ({_RENAMED.sub('', detail[1])})"
    elif role.role == "output":
        text = "an **output** axis (on the left-hand side)"
        if detail[1]:
            text += f": {_RENAMED.sub('', detail[1])}"
    elif role.role == "projected":
        text = f"**projected** by `{role.op}`"
    else:
        text = "**free** (kept in the result)"
    factors = ", ".join(_RENAMED.sub("", f) for f in role.factors)  # (a body's own names)
    if role.joined:
        text += f"; **joins** {factors}"
    elif role.factors:
        text += f"; read from {factors}"
    return text
