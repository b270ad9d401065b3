"""What running one target needs: its dependency cone (docs/execution.md); and
what running the whole document past its errors runs (`document_cone`).

A target is a tensor name or a query's text.  `dependency_cone(analysis,
targets)` follows the analysis' definitions and uses backwards from the
targets: the statements that define the tensors they read, transitively.
Axis declarations and facts (symbol domains) are kept as they are.  An error
inside the cone blocks the target (`blocking`); an error outside it does not:
its statement is left out, with a `NotRun` entry saying why, as is every
other statement the targets do not need.  `text` is the program with what is
left out blanked by spaces (offsets and line numbers stay those of the file)
and, for tensors that are not exported, an `export` line at the end.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..front import ir
from ..front.diagnostics import Diagnostic, Severity
from .analysis import Analysis

NOT_NEEDED = "not needed by the target"  # the reason of a statement left out without error


class TargetError(ValueError):
    """A target that names no export, query or tensor of the program."""


@dataclass(frozen=True, slots=True)
class NotRun:
    """A statement a targeted run leaves out: what it computes, where, and why."""

    what: str  # a tensor's name, a query's text or a sink's file
    line: int  # 1-based
    reason: str  # NOT_NEEDED, or the error that stops it

    def to_json(self) -> dict[str, object]:
        return {"what": self.what, "line": self.line, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.what} (line {self.line}): not run: {self.reason}"


@dataclass(frozen=True, slots=True)
class Cone:
    statements: frozenset[int]  # the statements kept (the cone, axis declarations, facts)
    tensors: frozenset[str]  # the tensors the targets read, transitively
    blocking: tuple[Diagnostic, ...]  # the errors inside the cone
    not_run: tuple[NotRun, ...]
    text: str


def squeeze_space(text: str, joiner: str = " ") -> str:
    """`text` with each run of white space outside strings made `joiner` (none at
    either end); a string keeps its own (`"x<TAB>y"` and `"a  b"` are other constants
    than `"x y"` and `"a b"`)."""
    out: list[str] = []
    quoted = space = False
    chars = iter(text)
    for char in chars:
        if quoted:
            out.append(char)
            if char == "\\":
                out.append(next(chars, ""))
            quoted = char != '"'
        elif char.isspace():
            space = bool(out)
        else:
            if space:
                out.append(joiner)
            space = False
            out.append(char)
            quoted = char == '"'
    return "".join(out)


def _key(text: str) -> str:
    return squeeze_space(text, "").rstrip("?")


def resolve_targets(analysis: Analysis, names: Iterable[str]) -> tuple[set[int], list[str]]:
    """The query statements and the tensors that `names` name (query texts match
    whatever their spacing); TargetError for a name that is neither."""
    text = analysis.text
    statements = analysis.program.statements
    queries = {k: _key(text[s.span.start:s.span.end]) for k, s in enumerate(statements)
               if isinstance(s, ir.Query)}
    chosen: set[int] = set()
    tensors: list[str] = []
    for name in names:
        matched = {k for k, q in queries.items() if q == _key(name)}
        if matched:
            chosen |= matched
        elif name.strip() in analysis.tensors:
            tensors.append(name.strip())
        else:
            choices = list(dict.fromkeys([*analysis.exports, *(
                squeeze_space(text[statements[k].span.start:statements[k].span.end])
                for k in queries)]))
            raise TargetError(f"`{name}` is not an export, query or tensor of this program"
                              + (f" (try {', '.join(choices)})" if choices else ""))
    return chosen, list(dict.fromkeys(tensors))


def tensor_cone(analysis: Analysis, roots: Iterable[str], leaves: Iterable[str] = ()
                ) -> tuple[set[str], set[int]]:
    """The tensors `roots` read, transitively, and the statements defining them;
    `leaves` are read but not followed (given at run time: generation's token input)."""
    statements = analysis.program.statements
    tensors: set[str] = set()
    kept: set[int] = set()
    stack = [r for r in roots if r in analysis.tensors]
    stop = frozenset(leaves)
    while stack:
        name = stack.pop()
        if name in tensors:
            continue
        tensors.add(name)
        if name in stop:
            continue
        for k in analysis.tensors[name].statements:
            kept.add(k)
            for expr in ir.used_exprs(statements[k]):
                stack.extend(r.name for r in ir.refs(expr) if r.name in analysis.tensors)
    return tensors, kept


def dependency_cone(analysis: Analysis, targets: Iterable[str], leaves: Iterable[str] = ()
                    ) -> Cone:
    """The cone of `targets` (tensor names or query texts) and the program cut to it;
    the statements of `leaves` and of what only they read are left out."""
    statements = analysis.program.statements
    queries, names = resolve_targets(analysis, targets)
    roots = names + [statements[k].atom.name for k in queries]  # type: ignore[union-attr]
    return _cut(analysis, roots, queries, names, tuple(leaves))


def document_cone(analysis: Analysis) -> Cone | None:
    """What running the whole document computes past its errors: the cones of its
    exports, queries and sinks (and of its `train` loss), those statements kept as
    written; `not_run` holds only what is left out for an error (docs/cli.md, "What
    runs").  None when the document has none of them: then the whole document is
    every tensor, and nothing can be left out."""
    roots: list[str] = []
    chosen: set[int] = set()
    for k, stmt in enumerate(analysis.program.statements):
        if isinstance(stmt, ir.Export):
            roots += [r.name for r in stmt.names]
        elif isinstance(stmt, ir.Query):
            roots.append(stmt.atom.name)
        elif isinstance(stmt, ir.Sink):
            roots += [r.name for r in ir.refs(stmt.rhs)]
        elif isinstance(stmt, ir.TrainDecl):
            roots.append(stmt.loss.name)
        else:
            continue
        chosen.add(k)
    if not chosen:
        return None
    cone = _cut(analysis, roots, chosen, [])
    return Cone(cone.statements, cone.tensors, cone.blocking,
                tuple(n for n in cone.not_run if n.reason != NOT_NEEDED), cone.text)


def _cut(analysis: Analysis, roots: list[str], chosen: set[int], names: list[str],
         leaves: tuple[str, ...] = ()) -> Cone:
    """The cone of the tensors `roots` and the statements `chosen`, the program cut
    to it (with an `export` line for `names`)."""
    statements = analysis.program.statements
    tensors, cone = tensor_cone(analysis, roots, leaves)
    cone |= chosen
    errors = [d for d in analysis.diagnostics if d.severity is Severity.ERROR]
    context = {k for k, s in enumerate(statements)
               if isinstance(s, ir.AxisDecl) or (isinstance(s, ir.Fact) and k not in cone
                                                 and not _errors_in(s.span, errors))}
    kept = cone | context
    # an import statement stays (the names read through it need it), so an error
    # at one (its file unreadable, or with errors) is in every cone
    imports = [decl.span for decl, _ in analysis.imports.decls] \
        if analysis.imports is not None else []
    blocking = tuple(d for d in errors
                     if any(_overlaps(d.span, statements[k].span) for k in kept)
                     or any(_overlaps(d.span, span) for span in imports))
    not_run: list[NotRun] = []
    blank: list[tuple[int, int]] = []
    for k, stmt in enumerate(statements):
        if k in kept:
            continue
        blank.append((_with_let(analysis.text, stmt.span.start), stmt.span.end))
        if isinstance(stmt, (ir.Export, ir.AxisDecl)):
            continue
        found = _errors_in(stmt.span, errors)
        reason = _reason(found[0]) if found else NOT_NEEDED
        not_run.append(NotRun(_what(analysis, stmt), _line(analysis, stmt.span.start), reason))
    for d in errors:  # errors in no statement (a line that does not parse)
        if d not in blocking and not any(_overlaps(d.span, s.span) for s in statements):
            start, end = _whole_lines(analysis.text, d.span.start, d.span.end)
            blank.append((start, end))
            not_run.append(NotRun(" ".join(analysis.text[start:end].split())[:60],
                                  _line(analysis, start), _reason(d)))
    return Cone(frozenset(kept), frozenset(tensors), blocking, _merged(not_run),
                _blanked(analysis.text, blank) + (f"\nexport {', '.join(names)}\n"
                                                  if names else ""))


_LET_BEFORE = re.compile(r"\blet[ \t]+\Z")


def _with_let(text: str, start: int) -> int:
    """Where a statement starts with its `let` (a local's equation, lowered, starts
    at its name): a `let` left alone in the cut text would not parse."""
    line = text.rfind("\n", 0, start) + 1
    found = _LET_BEFORE.search(text, line, start)
    return found.start() if found else start


def _errors_in(span: object, errors: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in errors if _overlaps(d.span, span)]


def _overlaps(a: object, b: object) -> bool:
    return a.start < b.end and b.start < max(a.end, a.start + 1)  # type: ignore[attr-defined]


def _reason(d: Diagnostic) -> str:
    return f"{d.message} [{d.code}]"


def _line(analysis: Analysis, offset: int) -> int:
    return analysis.lines.position(offset)[0] + 1


def _what(analysis: Analysis, stmt: ir.Statement) -> str:
    defined = ir.defined_refs(stmt)
    if defined:
        return ", ".join(dict.fromkeys(r.name for r in defined))
    if isinstance(stmt, ir.Sink):
        return f'"{stmt.path.value}"'
    return " ".join(analysis.text[stmt.span.start:stmt.span.end].split())


def _merged(entries: list[NotRun]) -> tuple[NotRun, ...]:
    """One entry per tensor: its first error, else its first statement."""
    out: dict[str, NotRun] = {}
    for entry in entries:
        known = out.get(entry.what)
        if known is None or (known.reason == NOT_NEEDED
                             and entry.reason != known.reason):
            out[entry.what] = entry
    return tuple(sorted(out.values(), key=lambda e: e.line))


def _whole_lines(text: str, start: int, end: int) -> tuple[int, int]:
    begin = text.rfind("\n", 0, start) + 1
    stop = text.find("\n", max(end, start + 1) - 1)
    return begin, len(text) if stop < 0 else stop


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        for i in range(start, min(end, len(chars))):
            if chars[i] not in "\r\n":
                chars[i] = " "
    return "".join(chars)
