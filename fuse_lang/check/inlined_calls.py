"""Diagnostics of a program with `fn` functions, told where the user wrote things.

Every node of an inlined equation carries the span of its call (front/functions.py),
so a diagnostic about one lands at the call; here it gets the body equation it came
from as related information (the one that mentions the renamed tensor or index the
message names, else the function's name).  A call of a name that is neither a
builtin nor a function is `unknown-function`, with the functions among the choices.
"""
from __future__ import annotations

import re
from dataclasses import replace

from ..front import ir
from ..front.builtins import BUILTINS, NAMED_BUILTINS
from ..front.diagnostics import Diagnostic, Fix, Related, Severity, TextEdit, make
from ..front.functions import Inlined, Origin
from ..front.span import Span
from .projections import body_typos
from .reference_checks import check_lhs
from .suggestions import NameSuggester, did_you_mean_text

# a renamed local or index in a message: `s@attention.2`, `p@attention.1'`
_RENAMED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)@([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_]"
                      r"[A-Za-z0-9_]*)*)\.\d+'*")
_QUOTED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*'*)`")


def placed_in_calls(diags: list[Diagnostic], inlined: Inlined) -> list[Diagnostic]:
    """`diags` with each one at a call given the body line it came from."""
    at_call: dict[Span, list[Origin]] = {}
    for origin in inlined.origins.values():
        at_call.setdefault(origin.call, []).append(origin)
    own = set(map(id, inlined.diagnostics))
    out = []
    for diag in diags:
        if diag.code == "likely-typo-index" and (at_call.get(diag.span) or
                                                 _within(at_call, diag.span)):
            continue  # (said at the body's equation: body_diagnostics)
        if diag.code == "dotted-axis" and diag.span in at_call:  # a body's dot
            if diag.severity is not Severity.ERROR:
                continue  # (said at the body's equation, once, with its fix: body_dots)
            diag = replace(diag, fixes=())  # (its fix would edit the call's last character)
        if diag.code == "unknown-builtin" and inlined.functions:
            diag = _unknown_function(diag, inlined)
        origins = at_call.get(diag.span) or _within(at_call, diag.span)
        if origins and id(diag) not in own:
            diag = replace(diag, related=(_body_line(diag, origins, inlined),) + diag.related)
            if diag.span in at_call:
                diag = _without_call_edits(diag)
        out.append(_as_written(diag))
    return out


def _without_call_edits(diag: Diagnostic) -> Diagnostic:
    """`diag`, about a body's equation and placed at its call, less the fixes that
    edit the call: their edits were made on the written-out equation, whose every
    node has the call's span, so they would overwrite the call (`g(X[i])` replaced
    by `sig` for a `sigmoid` in `g`'s body; its `)` deleted as a dot)."""
    call = diag.span
    fixes = tuple(f for f in diag.fixes if not any(
        call.start <= e.span.start and e.span.end <= call.end for e in f.edits))
    return diag if len(fixes) == len(diag.fixes) else replace(diag, fixes=fixes)


def _as_written(diag: Diagnostic) -> Diagnostic:
    """`diag` with a call's renamed local or index (`u@f.1`, `d@head.2`) in its message
    as the body writes it (`u`: the related information names the function), and
    the fixes that would write a renamed name dropped."""
    if "@" not in diag.message:
        return diag
    message = _RENAMED.sub(lambda m: m.group(1) + m.group(0)[len(m.group(0).rstrip("'")):],
                           diag.message)
    fixes = tuple(f for f in diag.fixes if not _RENAMED.search(repr(f)))
    return replace(diag, message=message, fixes=fixes)


def body_diagnostics(inlined: Inlined, size: int) -> list[Diagnostic]:
    """What a function's definition says of itself, once, where it is written: its
    likely typos of an index (projections.body_typos: functions of this text only,
    `size` its length; an imported file's warnings are its own), its dots
    (body_dots), and the names nothing defines in a function no line calls
    (uncalled_bodies)."""
    out = uncalled_bodies(inlined, size)
    for fn in inlined.functions.values():
        if fn.span.end <= size:
            for eq in fn.body:
                out += body_typos(eq)
                out += body_dots(eq)
    return out


def body_dots(eq: ir.Equation) -> list[Diagnostic]:
    """The warning `dotted-axis` (a dot with no softmax or lnorm) of a body's
    equation, where the body has the dot: a written-out copy's indices all have the
    call's place, where the fix would delete the call's last character.  (A dot that
    is an error is one at the call, as every error of a written-out equation.)"""
    out: list[Diagnostic] = []
    check_lhs(eq, [node for node in ir.walk(eq.rhs) if type(node) is ir.Call], out)
    return [diag for diag in out if diag.code == "dotted-axis"
            and diag.severity is not Severity.ERROR]


def uncalled_bodies(inlined: Inlined, size: int) -> list[Diagnostic]:
    """`undefined-tensor` for a name that the body of a function no line calls reads
    and nothing defines, and `unknown-function` for a call of a name that is neither
    a builtin nor a function: a call would report it (at the call), but a library's
    function may have no call in its own file, which is checked alone as the files
    importing it will be.  The functions of this text (`size`: its length), and
    those of the files it imports: an error there is the importer's `import-error`
    (check/imports.py), as the file checked alone has it."""
    called = {origin.fn for origin in inlined.origins.values()}
    defined = set(inlined.functions) | set(NAMED_BUILTINS)
    for stmt in inlined.statements:
        defined.update(ref.name for ref in ir.defined_refs(stmt))
    out = []
    for name, fn in inlined.functions.items():
        if name in called:
            continue
        # an imported file's function reads its file's names as `ns::Name`
        prefix = name.rpartition("::")[0] + "::" if fn.span.end > size else ""
        shown = name[len(prefix):]
        own = {p.name for p in fn.params} | {eq.lhs.name for eq in fn.body} | {fn.result.name}
        for eq in fn.body:
            variables = {v.name for ref in (eq.lhs, *ir.refs(eq.rhs))
                         for index in ref.indices or () for v in ir.index_vars(index)}
            for ref in ir.refs(eq.rhs):
                if ref.name in own or ref.name in defined or not _its_own(ref.name, prefix) \
                        or (ref.indices is None and ref.name in variables):
                    continue
                close = NameSuggester(tuple(sorted(n for n in defined | own if n in own or (
                    _its_own(n, prefix) and n not in NAMED_BUILTINS)))).close(ref.name)
                out.append(make("undefined-tensor", f"`{ref.name}` is not defined (in `fn "
                                f"{shown}`, which no line of this file calls)"
                                f"{did_you_mean_text(close)}", ref.name_span))
            out += _unknown_calls(eq, inlined, prefix)
    return out


def _its_own(name: str, prefix: str) -> bool:
    """Whether `name`, read in a body of the file whose names are `prefix`Name, is
    one of that file's own names (another file's, `h::T`, the resolver checks)."""
    return name.startswith(prefix) and "::" not in name[len(prefix):]


def _unknown_calls(eq: ir.Equation, inlined: Inlined, prefix: str) -> list[Diagnostic]:
    """`unknown-function` for each call in a body's equation of a name that is
    neither a builtin nor a function."""
    out = []
    for node in ir.walk(eq.rhs):
        if type(node) is ir.Call and node.name not in BUILTINS and \
                node.name not in inlined.functions and _its_own(node.name, prefix):
            written = node.name[len(prefix):]
            choices = sorted(n[len(prefix):] for n in inlined.functions if _its_own(n, prefix))
            close = NameSuggester(tuple(choices) + NAMED_BUILTINS).close(written)
            fixes = tuple(Fix(f"Change to `{c}`", (TextEdit(node.name_span, c),))
                          for c in close)
            out.append(make("unknown-function", f"`{written}` is neither a builtin nor a "
                            f"function of this program{did_you_mean_text(close)} (functions: "
                            f"{', '.join(choices)})", node.name_span, fixes=fixes))
    return out


def _within(at_call: dict[Span, list[Origin]], span: Span) -> list[Origin] | None:
    """The origins of the innermost call holding `span` (an argument of it)."""
    best = None
    for call, origins in at_call.items():
        if call.start <= span.start and span.end <= call.end and \
                (best is None or call.end - call.start < best[0].end - best[0].start):
            best = (call, origins)
    return best[1] if best is not None else None


def _body_line(diag: Diagnostic, origins: list[Origin], inlined: Inlined) -> Related:
    """The body equation `diag` is about, among those inlined at one call."""
    # the names the message gives: a renamed local (`s@head.1`) first, then any in `...`
    wanted = [(m.group(1), m.group(2)) for m in _RENAMED.finditer(diag.message)]
    wanted += [(name, None) for name in _QUOTED.findall(diag.message)]
    for name, fn in wanted:
        for origin in origins:
            if fn in (None, origin.fn) and _mentions(inlined, origin, name):
                return Related(origin.body, f"in `fn {origin.fn}`, inlined at this call")
    fn = origins[-1].fn  # the call's own function (its result's equation comes last)
    definition = inlined.functions.get(fn)
    where = definition.name_span if definition is not None else origins[-1].body
    return Related(where, f"in `fn {fn}`, inlined at this call")


def _mentions(inlined: Inlined, origin: Origin, name: str) -> bool:
    """Whether the body equation of `origin` mentions `name` (a tensor or an index)."""
    fn = inlined.functions.get(origin.fn)
    if fn is None:
        return False
    for eq in fn.body:
        if eq.span == origin.body:
            return re.search(rf"(?<![A-Za-z0-9_']){re.escape(name)}(?![A-Za-z0-9_])",
                             _equation_names(eq)) is not None
    return False


def _equation_names(eq: ir.Equation) -> str:
    """The names of an equation's tensors, indices and calls, as text."""
    names = []
    for ref in [eq.lhs, *ir.refs(eq.rhs)]:
        names.append(ref.name)
        for index in ref.indices or ():
            names += [v.name for v in ir.index_vars(index)]
    names += [node.name for node in ir.walk(eq.rhs) if type(node) is ir.Call]
    return " ".join(names)


def _unknown_function(diag: Diagnostic, inlined: Inlined) -> Diagnostic:
    """`unknown-builtin` in a program with functions: the functions are choices too."""
    name = diag.message.split("`")[1] if diag.message.count("`") >= 2 else ""
    choices = sorted(inlined.functions)
    close = NameSuggester(tuple(choices) + NAMED_BUILTINS).close(name)
    fixes = tuple(Fix(f"Change to `{c}`", (TextEdit(diag.span, c),)) for c in close)
    return make("unknown-function", f"`{name}` is neither a builtin nor a function of this "
                f"program{did_you_mean_text(close)} (functions: {', '.join(choices)})",
                diag.span, fixes=fixes)
