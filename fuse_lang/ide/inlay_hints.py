"""Inlay hints: the inferred shape after the left-hand side of each equation
and source, at a character offset (plain data; the language server converts)."""
from __future__ import annotations

from dataclasses import dataclass

from ..check import Analysis, TensorInfo
from ..front import ir
from ..front.let_blocks import user_name
from ..front.span import Span
from .outline import shape_detail


@dataclass(frozen=True, slots=True)
class ShapeHint:
    offset: int  # just after the left-hand side reference
    label: str  # ": (6, 4)"
    tensor: str
    tooltip: str  # "Attn: dense [p:6, dv:4]"


def shape_label(info: TensorInfo) -> str:
    extents = ["?" if extent is None else str(extent) for extent in info.shape]
    inner = ", ".join(extents) + ("," if len(extents) == 1 else "")
    return f": ({inner})"


def shape_hints(analysis: Analysis, within: Span | None = None) -> tuple[ShapeHint, ...]:
    """The inferred shape after the LHS of each equation and source (within `within`)."""
    hints = []
    inlined = analysis.inlined.origins if analysis.inlined is not None else {}
    for k, stmt in enumerate(analysis.program.statements):
        if not isinstance(stmt, (ir.Equation, ir.Source)) or k in inlined:
            continue
        offset = stmt.lhs.span.end
        if offset > len(analysis.text):
            break  # an imported file's statements (after the program's: check/imports.py)
        if within is not None and not within.start <= offset <= within.end:
            continue
        info = analysis.tensors.get(stmt.lhs.name)
        if info is None:
            continue
        hints.append(ShapeHint(offset, shape_label(info), info.name,
                               f"{user_name(info.name)}: {info.kind} {shape_detail(info)}"))
    return tuple(hints)
