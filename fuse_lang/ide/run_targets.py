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

from ..check import Analysis
from ..check.cone import TargetError, resolve_targets, squeeze_space  # noqa: F401 - re-exported
from ..front import ir
from ..front.span import Span


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
            out.append(RunTarget("query", (squeeze_space(text),), stmt.span, k))
    return out


def restrict(analysis: Analysis, names: list[str] | tuple[str, ...]) -> str:
    """The program's text computing only `names` (tensor names or query texts);
    its other equations stay (`check.cone.dependency_cone` cuts to the cone)."""
    keep, exports = resolve_targets(analysis, names)
    chars = list(analysis.text)
    for k, stmt in enumerate(analysis.program.statements):
        if isinstance(stmt, (ir.Export, ir.Query)) and k not in keep:
            for i in range(stmt.span.start, stmt.span.end):
                if chars[i] not in "\r\n":
                    chars[i] = " "
    tail = f"\nexport {', '.join(exports)}\n" if exports else ""
    return "".join(chars) + tail
