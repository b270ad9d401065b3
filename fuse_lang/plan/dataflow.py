"""The program as a graph (plain data): tensors as nodes, equations as edges
labelled with what they project away, recursive groups, sources and sinks.

`fuse explain --graph` draws it (ide/graph_picture.py); an editor may draw it
its own way.  Built from the analysis and the plan, nothing is run.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..check import SOURCE_KINDS, Analysis, TensorKind
from ..front import ir
from .planner import ProgramPlan

OPERATOR_SIGNS = {"sum": "Σ", "max": "max", "min": "min", "avg": "avg"}


@dataclass(frozen=True)
class GraphNode:
    name: str  # a tensor's name, or a sink's file
    kind: str  # "source" | "param" | "facts" | "computed" | "sink"
    shape: tuple[int | None, ...]
    exported: bool
    group: int | None  # the recursive group it belongs to (index into Dataflow.groups)
    layer: int  # 0 for what reads nothing; else one more than the deepest it reads

    @property
    def shape_text(self) -> str:
        return "[" + ", ".join("?" if n is None else str(n) for n in self.shape) + "]"


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    lines: tuple[int, ...]  # the equations (1-based lines) that read source into target
    projection: str  # what those equations sum (or max, ...) away of source: "Σ y"; "" if none


@dataclass(frozen=True)
class Dataflow:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    groups: tuple[tuple[str, ...], ...]  # the recursive groups, each run to a fixpoint

    def to_json(self) -> dict:
        import dataclasses

        return dataclasses.asdict(self)


def dataflow(analysis: Analysis, plan: ProgramPlan) -> Dataflow:
    """The dataflow graph of a program (with or without errors: what is known)."""
    tensors = analysis.tensors
    labels: dict[tuple[str, str], dict[str, None]] = {}
    lines: dict[tuple[str, str], dict[int, None]] = {}
    for eq in plan.equations:
        stmt = analysis.program.statements[eq.statement]
        assert isinstance(stmt, ir.Equation)
        for ref in ir.refs(stmt.rhs):
            if ref.name not in tensors:
                continue  # an index used as a value, a constant's name
            key = (ref.name, eq.tensor)
            lines.setdefault(key, {})[eq.line] = None
            found = labels.setdefault(key, {})
            for ix in eq.indices:
                if ix.role == "projected" and ref.name in ix.factors:
                    found[f"{OPERATOR_SIGNS.get(ix.op or 'sum', ix.op)} {ix.name}"] = None
    sinks: list[tuple[str, str]] = []
    for stmt in analysis.program.statements:
        if isinstance(stmt, ir.Sink):
            for ref in ir.refs(stmt.rhs):
                if ref.name in tensors:
                    sinks.append((ref.name, stmt.path.value))
                    line = analysis.lines.position(stmt.span.start)[0] + 1
                    lines.setdefault((ref.name, stmt.path.value), {})[line] = None
    reads: dict[str, set[str]] = {}
    for (source, target) in lines:
        reads.setdefault(target, set()).add(source)
    layers = _layers(analysis.order, reads)
    groups = tuple(plan.recursive_groups)
    group_of = {name: k for k, group in enumerate(groups) for name in group}
    exported = set(analysis.exports)
    nodes = [GraphNode(name, _kind(info.kind, name, analysis), info.shape, name in exported,
                       group_of.get(name), layers.get(name, 0))
             for name, info in tensors.items()]
    for tensor, path in dict.fromkeys(sinks):
        if path not in tensors:
            nodes.append(GraphNode(path, "sink", tensors[tensor].shape, False, None,
                                   max(layers.get(tensor, 0) + 1,
                                       layers.get(path, 0))))
            layers[path] = nodes[-1].layer
    edges = tuple(GraphEdge(s, t, tuple(lines[(s, t)]), "; ".join(labels.get((s, t), {})))
                  for (s, t) in lines)
    return Dataflow(tuple(nodes), edges, groups)


def _kind(kind: TensorKind, name: str, analysis: Analysis) -> str:
    """The node kind of a tensor of TensorInfo kind `kind`."""
    if kind in SOURCE_KINDS:
        return "source"
    if kind == TensorKind.PARAM:
        return "param"
    if not analysis.tensors[name].statements:
        return "facts"
    # a relation defined by facts only is given, not computed
    statements = analysis.program.statements
    if all(isinstance(statements[k], ir.Fact) for k in analysis.tensors[name].statements):
        return "facts"
    return "computed"


def _layers(order: tuple[tuple[str, ...], ...], reads: dict[str, set[str]]) -> dict[str, int]:
    """Each tensor's layer: the longest path to it from what reads nothing, a
    recursive group's members sharing one (the order is of groups, sources first);
    what reads nothing just before its first reader."""
    layer: dict[str, int] = {}
    for group in order:
        members = set(group)
        deepest = -1
        for name in group:
            for source in reads.get(name, ()):
                if source not in members:
                    deepest = max(deepest, layer.get(source, 0))
        for name in group:
            layer[name] = deepest + 1
    # what reads nothing (a source, a param) sits just before its first reader
    readers: dict[str, list[str]] = {}
    for target, sources in reads.items():
        for source in sources:
            if source != target:
                readers.setdefault(source, []).append(target)
    for name in layer:
        # (a sink's file is a reader with no layer yet: read by sinks only, it stays put)
        placed = [layer[r] for r in readers.get(name, ()) if r in layer]
        if not reads.get(name) and placed:
            layer[name] = max(0, min(placed) - 1)
    return layer
