"""The dataflow between a program's tensors, for the editor's call hierarchy: which
tensors an equation of `T` reads (outgoing) and which tensors' equations read `T`
(incoming), each with the places of those reads.  Plain data over an Analysis; the
language server converts."""
from __future__ import annotations

from dataclasses import dataclass

from ..check import Analysis
from ..front import ir
from ..front.let_blocks import user_name
from ..front.span import Span
from .query import symbol_at


@dataclass(frozen=True, slots=True)
class Node:
    name: str  # the tensor, as the analysis names it
    shown: str  # as the text writes it
    kind: str  # its TensorKind's value: "dense", "Boolean relation", "param", ...
    detail: str  # its axes, `[p:6, e:3]`, or "scalar"
    span: Span  # its first defining statement
    name_span: Span  # its name there


@dataclass(frozen=True, slots=True)
class Edge:
    node: Node  # the other end
    spans: tuple[Span, ...]  # the reads, in text order


def node_at(analysis: Analysis, offset: int) -> Node | None:
    """The tensor whose name covers `offset`, as a node of the dataflow."""
    found = symbol_at(analysis, offset)
    if found is None or found.kind != "tensor":
        return None
    return node(analysis, found.name)


def node(analysis: Analysis, name: str, places: dict[Span, Span] | None = None
         ) -> Node | None:
    """Tensor `name` as a node (None: no tensor of the program has that name, or it is
    defined in an imported file only).  `places`: `_definitions(analysis)`, when known."""
    info = analysis.tensors.get(name)
    if info is None:
        return None
    spans = [s for s in info.definitions if s.end <= len(analysis.text)]
    if not spans:
        return None
    name_span = min(spans)
    places = _definitions(analysis) if places is None else places
    statement = places.get(name_span, name_span)
    return Node(name, user_name(name), str(info.kind), info.axes_text if info.axes else "scalar",
                statement.cover(name_span), name_span)


def incoming(analysis: Analysis, name: str) -> tuple[Edge, ...]:
    """The tensors whose equations read `name`, with the places they read it."""
    return _edges(analysis, [(defined, spans) for defined, read, spans in _reads(analysis)
                             if read == name])


def outgoing(analysis: Analysis, name: str) -> tuple[Edge, ...]:
    """The tensors the equations of `name` read, with the places they read them."""
    return _edges(analysis, [(read, spans) for defined, read, spans in _reads(analysis, name)
                             if defined == name])


def _edges(analysis: Analysis, reads: list[tuple[str, list[Span]]]) -> tuple[Edge, ...]:
    grouped: dict[str, list[Span]] = {}
    for other, spans in reads:
        grouped.setdefault(other, []).extend(spans)
    out = []
    places = _definitions(analysis)
    for other, spans in grouped.items():
        found = node(analysis, other, places)
        if found is not None:
            out.append(Edge(found, tuple(sorted(set(spans)))))
    return tuple(sorted(out, key=lambda edge: edge.spans[0]))


def _statements(analysis: Analysis):
    """(number, statement as written) for the statements of the text itself: not the
    equations a `fn` call wrote out (their spans are the call's), nor imported ones."""
    inlined = analysis.inlined
    written = inlined.written if inlined is not None else {}
    end = len(analysis.text)
    for k, stmt in enumerate(analysis.program.statements):
        if (inlined is None or k not in inlined.origins) and stmt.span.end <= end:
            yield k, written.get(k, stmt)


def _definitions(analysis: Analysis) -> dict[Span, Span]:
    """Each defining name's span: the span of its statement."""
    return {ref.name_span: stmt.span for _, stmt in _statements(analysis)
            for ref in ir.defined_refs(stmt)}


def _reads(analysis: Analysis, defining: str | None = None
           ) -> list[tuple[str, str, list[Span]]]:
    """(tensor defined, tensor read, the reads' name spans) for each statement (that
    defines tensor `defining`, when given)."""
    out = []
    tensors = analysis.tensors
    for _, stmt in _statements(analysis):
        defined = [ref.name for ref in ir.defined_refs(stmt) if ref.name in tensors]
        if not defined or (defining is not None and defining not in defined):
            continue
        read: dict[str, list[Span]] = {}
        for expr in ir.used_exprs(stmt):
            for ref in ir.refs(expr):
                if ref.name in tensors:
                    read.setdefault(ref.name, []).append(ref.name_span)
        out += [(d, r, spans) for d in defined for r, spans in read.items()]
    return out
