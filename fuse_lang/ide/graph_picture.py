"""The program's dataflow graph (plan/dataflow.py) drawn as SVG or PNG.

Layered left to right: a tensor's column is its layer (the longest path to it
from what reads nothing, from the checker's own evaluation order), and within
a column tensors are placed near the tensors they read (one barycentre sweep).
Why not graphviz: see docs/pictures.md.
"""
from __future__ import annotations

from typing import Sequence

from ..plan.dataflow import Dataflow, GraphNode
from .plots import FORMATS, PictureError, figure_bytes, new_figure

COLUMN_WIDTH = 2.8  # inches per layer
ROW_HEIGHT = 1.1  # inches per tensor of the fullest layer
STYLES = {  # kind -> (box style, face colour, edge colour)
    "source": ("round,pad=0.35", "#d9f0d3", "#3b8a3b"),
    "param": ("round,pad=0.35", "#fff2c6", "#b08a1a"),
    "facts": ("round,pad=0.35", "#d9f0d3", "#3b8a3b"),
    "computed": ("square,pad=0.35", "#dbe9f6", "#3b6ea5"),
    "sink": ("rarrow,pad=0.35", "#fde0c5", "#c0692b"),
}


def render_graph(graph: Dataflow, title: str = "", fmt: str = "svg") -> bytes:
    """The picture of a dataflow graph as SVG or PNG bytes."""
    if fmt not in FORMATS:
        raise PictureError(f"unknown picture format {fmt!r} (svg or png)")
    places = layout(graph)
    columns = max((n.layer for n in graph.nodes), default=0) + 1
    rows = max((sum(1 for n in graph.nodes if n.layer == c) for c in range(columns)), default=1)
    fig = new_figure((max(4.6, COLUMN_WIDTH * columns + 0.8),
                      max(2.8, ROW_HEIGHT * rows + 1.6)))
    ax = fig.subplots()
    _draw_groups(ax, graph, places)
    for edge in graph.edges:
        if edge.source in places and edge.target in places:
            _draw_edge(ax, places[edge.source], places[edge.target], edge.projection)
    for node in graph.nodes:
        _draw_node(ax, node, places[node.name])
    ax.set_xlim(-0.6, columns - 0.4)
    ax.set_ylim(-rows / 2 - 0.3, rows / 2 + 0.5)
    ax.axis("off")
    legend = "green: sources and facts   yellow: params   blue: computed   orange: sinks\n" \
             "thick border: exported   dashed box: recursive group (run to a fixpoint)"
    fig.text(0.5, 0.01, legend, ha="center", va="bottom", fontsize=7, color="0.35")
    if title:
        ax.set_title(title, fontsize=11)
    return figure_bytes(fig, fmt)


def layout(graph: Dataflow) -> dict[str, tuple[float, float]]:
    """(column, row) of each node: its layer, and a row near those it reads."""
    reads: dict[str, list[str]] = {}
    for edge in graph.edges:
        if edge.source != edge.target:
            reads.setdefault(edge.target, []).append(edge.source)
    readers: dict[str, list[str]] = {}
    for target, sources in reads.items():
        for source in sources:
            readers.setdefault(source, []).append(target)
    columns: dict[int, list[GraphNode]] = {}
    for node in graph.nodes:
        columns.setdefault(node.layer, []).append(node)
    places: dict[str, tuple[float, float]] = {}
    # two sweeps: each tensor near the rows of what it reads (placed before it), then
    # what reads nothing near the rows of its readers
    for sweep in (0, 1):
        known = dict(places)  # the first sweep's rows, for the second

        def centre(node: GraphNode, sweep: int = sweep, known: dict = known
                   ) -> tuple[float, int, str]:
            if sweep == 0:
                rows = [places[s][1] for s in reads.get(node.name, ()) if s in places]
            else:
                near = reads.get(node.name) or readers.get(node.name, ())
                rows = [known[s][1] for s in near if s in known]
            group = node.group if node.group is not None else -1
            return (-sum(rows) / len(rows) if rows else 0.0, group, node.name)
        for layer in sorted(columns):
            ordered = sorted(columns[layer], key=centre)
            top = (len(ordered) - 1) / 2
            for k, node in enumerate(ordered):
                places[node.name] = (float(layer), top - k)
    return places


def _draw_node(ax, node: GraphNode, place: tuple[float, float]) -> None:
    style, face, edge = STYLES.get(node.kind, STYLES["computed"])
    text = node.name if node.kind == "sink" else f"{node.name}\n{node.shape_text}"
    ax.text(*place, text, ha="center", va="center", fontsize=9, zorder=3,
            fontweight="bold" if node.exported else "normal",
            bbox=dict(boxstyle=style, fc=face, ec=edge, lw=2.6 if node.exported else 1.0))


def _draw_edge(ax, start: tuple[float, float], end: tuple[float, float], label: str) -> None:
    from matplotlib.patches import FancyArrowPatch

    if start == end:  # a recursive equation: a loop above the tensor
        x, y = start
        ax.add_patch(FancyArrowPatch((x - 0.12, y + 0.22), (x + 0.12, y + 0.22),
                                     connectionstyle="arc3,rad=-1.6", arrowstyle="-|>",
                                     mutation_scale=10, color="0.35", zorder=2))
        where = (x, y + 0.48)
    else:
        bend = 0.25 if start[0] == end[0] else 0.0  # same column: curve past the others
        ax.annotate("", xy=end, xytext=start, zorder=1,
                    arrowprops=dict(arrowstyle="-|>", color="0.4", shrinkA=22, shrinkB=22,
                                    connectionstyle=f"arc3,rad={bend}"))
        where = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
    if label:
        ax.text(*where, label, ha="center", va="center", fontsize=8, style="italic",
                color="#7a2a2a", zorder=2,
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))


def _draw_groups(ax, graph: Dataflow, places: dict[str, tuple[float, float]]) -> None:
    from matplotlib.patches import FancyBboxPatch

    for group in graph.groups:
        points: Sequence[tuple[float, float]] = [places[n] for n in group if n in places]
        if not points:
            continue
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        x0, y0 = min(xs) - 0.42, min(ys) - 0.38
        ax.add_patch(FancyBboxPatch((x0, y0), max(xs) - min(xs) + 0.84,
                                    max(ys) - min(ys) + 1.0, boxstyle="round,pad=0.02",
                                    fill=False, ls="--", ec="#8a4fb0", lw=1.2, zorder=0))
        ax.text(x0 + 0.03, y0 + 0.05, "recursive: fixpoint", fontsize=7, color="#8a4fb0",
                ha="left", va="bottom")
