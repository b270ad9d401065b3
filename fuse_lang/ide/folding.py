"""Folding ranges: runs of two or more whole-line comments, and statements
over several lines, as spans (plain data; the language server converts)."""
from __future__ import annotations

from dataclasses import dataclass

from ..check import Analysis
from ..front.span import Span
from .semantic_tokens import comment_spans


@dataclass(frozen=True, slots=True)
class Fold:
    span: Span  # from the first line folded to the last
    kind: str  # "comment" | "region"


def folding_ranges(analysis: Analysis) -> tuple[Fold, ...]:
    """Runs of two or more whole-line comments, and statements over several lines."""
    lines = analysis.lines
    folds: list[Fold] = []
    run: list[Span] = []

    def close() -> None:
        if len(run) >= 2:
            folds.append(Fold(Span(run[0].start, run[-1].end), "comment"))
        run.clear()

    previous_line = -2
    for span in comment_spans(analysis.text):
        line, column = lines.position(span.start)
        whole_line = not lines.line_text(line)[:column].strip()
        if not whole_line or line != previous_line + 1:
            close()
        if whole_line:
            run.append(span)
            previous_line = line
        else:
            previous_line = -2
    close()
    inlined = analysis.inlined
    statements = [stmt for k, stmt in enumerate(analysis.program.statements)
                  if inlined is None or k not in inlined.origins]  # (spans: their calls')
    if inlined is not None:  # a `fn` definition over several lines folds too
        statements += inlined.functions.values()
    spans = [stmt.span for stmt in statements]
    if analysis.lowered is not None:  # a `{ }` block over several lines folds too
        spans += analysis.lowered.blocks
    for span in spans:
        if lines.position(span.start)[0] < lines.position(span.end)[0]:
            folds.append(Fold(span, "region"))
    return tuple(sorted(folds, key=lambda f: (f.span.start, -f.span.end)))
