"""What an editor can ask to run: each export statement and each query.

`run_targets(analysis)` lists them with their spans (code lenses sit there);
`restrict(analysis, names)` gives the program text that computes only the
named exports and queries: the other export and query statements are blanked
with spaces (offsets and line numbers stay those of the file, so errors point
at the right place) and a tensor that is not exported gets an `export` line
at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..front import ir
from ..check import Analysis
from ..front.span import Span


class TargetError(ValueError):
    """A target that names no export, query or tensor of the program."""


@dataclass(frozen=True, slots=True)
class RunTarget:
    kind: str  # "export" | "query"
    names: tuple[str, ...]  # the exported tensors, or the query's text
    span: Span  # the statement
    statement: int

    @property
    def label(self) -> str:
        return ", ".join(self.names)


def run_targets(analysis: Analysis) -> list[RunTarget]:
    out = []
    for k, stmt in enumerate(analysis.program.statements):
        if isinstance(stmt, ir.Export) and stmt.names:
            out.append(RunTarget("export", tuple(r.name for r in stmt.names), stmt.span, k))
        elif isinstance(stmt, ir.Query):
            text = analysis.text[stmt.span.start:stmt.span.end]
            out.append(RunTarget("query", (" ".join(text.split()),), stmt.span, k))
    return out


def _key(text: str) -> str:
    return "".join(text.split()).rstrip("?")


def restrict(analysis: Analysis, names: list[str] | tuple[str, ...]) -> str:
    """The program's text computing only `names` (tensor names or query texts)."""
    text = analysis.text
    statements = analysis.program.statements
    queries = {k: _key(text[s.span.start:s.span.end]) for k, s in enumerate(statements)
               if isinstance(s, ir.Query)}
    keep: set[int] = set()
    exports: list[str] = []
    for name in names:
        matched = {k for k, q in queries.items() if q == _key(name)}
        if matched:
            keep |= matched
        elif name.strip() in analysis.tensors:
            exports.append(name.strip())
        else:
            choices = list(dict.fromkeys([*analysis.exports, *(
                " ".join(text[statements[k].span.start:statements[k].span.end].split())
                for k in queries)]))
            raise TargetError(f"`{name}` is not an export, query or tensor of this program"
                              + (f" (try {', '.join(choices)})" if choices else ""))
    chars = list(text)
    for k, stmt in enumerate(statements):
        if isinstance(stmt, (ir.Export, ir.Query)) and k not in keep:
            for i in range(stmt.span.start, stmt.span.end):
                if chars[i] not in "\r\n":
                    chars[i] = " "
    tail = f"\nexport {', '.join(dict.fromkeys(exports))}\n" if exports else ""
    return "".join(chars) + tail
