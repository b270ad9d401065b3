"""Selection ranges ("expand selection"): from the word under an offset out to the
whole text, each span holding the one before — a name, its reference, the
factor or call around it, the right-hand side, the statement, its `{ }` block or
`fn` definition, the text.  Plain data; the language server converts."""
from __future__ import annotations

import dataclasses
from typing import Any, Iterator

from ..check import Analysis
from ..front.span import Span
from .semantic_tokens import comment_spans


def selection_chain(analysis: Analysis, offset: int) -> tuple[Span, ...]:
    """The spans around `offset`, innermost first, each holding the one before it;
    the last is the whole text."""
    text_end = len(analysis.text)
    found = {span for span in _spans_around(analysis, offset)
             if span.start <= offset <= span.end <= text_end and span.start < span.end}
    chain: list[Span] = []
    for span in sorted(found, key=lambda s: (s.end - s.start, -s.start)):
        if not chain or (span.start <= chain[-1].start and chain[-1].end <= span.end):
            chain.append(span)
    whole = Span(0, text_end)
    if not chain or chain[-1] != whole:
        chain.append(whole)
    return tuple(chain)


def _spans_around(analysis: Analysis, offset: int) -> Iterator[Span]:
    line = analysis.lines.position(offset)[0]
    start = analysis.lines.line_starts[line]  # (a comment ends its line: look at that one)
    yield from (Span(start + s.start, start + s.end)
                for s in comment_spans(analysis.lines.line_text(line))
                if start + s.start <= offset <= start + s.end)
    inlined = analysis.inlined
    written = inlined.written if inlined is not None else {}
    for k, stmt in enumerate(analysis.program.statements):
        if inlined is not None and k in inlined.origins:
            continue  # an equation a `fn` call wrote out: its span is the call's
        if stmt.span.start <= offset <= stmt.span.end:
            yield from _node_spans(written.get(k, stmt), offset)
    if inlined is not None:
        for fn in inlined.functions.values():
            if fn.span.start <= offset <= fn.span.end:
                yield from _node_spans(fn, offset)
    if analysis.lowered is not None:
        yield from analysis.lowered.blocks
    if analysis.imports is not None:  # (the imports are not among the statements checked)
        for decl, _ in analysis.imports.decls:
            yield from _node_spans(decl, offset)


def _node_spans(node: Any, offset: int) -> Iterator[Span]:
    """Every span of `node` and of the nodes under it that holds `offset`."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Span):
            if item.start <= offset <= item.end:
                yield item
        elif isinstance(item, tuple):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            span = getattr(item, "span", None)
            if isinstance(span, Span) and not span.start <= offset <= span.end:
                continue  # (nothing under a node lies outside its span)
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
