"""Blocked contraction, planned: how many blocks bring an equation's largest
intermediate under `block_size` elements (docs/execution.md), split as the run
splits it (run.interpret.blocked): along one index, a kept one first, the
longest, never into more blocks than that index has values."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def blocks_for(intermediate: int, block_size: int) -> int:
    """Blocks of a split that keep each block's intermediate within block_size."""
    return max(1, -(-intermediate // block_size))


@dataclass(frozen=True, slots=True)
class BlockedEquation:
    """An equation whose largest intermediate is over `block_size`."""
    line: int
    tensor: str
    intermediate: int  # elements of its largest intermediate, unblocked
    blocks: int
    peak: int  # elements of the largest intermediate, blocked


def blocked_split(plan: Any, block_size: int) -> tuple[int, int]:
    """(blocks, peak elements) of an equation's plan (plan.planner.EquationPlan)
    whose largest intermediate is over `block_size`: split along the longest kept
    index (else the longest), into at most as many blocks as it has values, so
    that the peak is over `block_size` where one index cannot split finer."""
    size = plan.largest_intermediate
    extents = [(i.extent, i.role == "output") for i in plan.indices if i.extent]
    kept = [e for e, output in extents if output]
    extent = max(kept or [e for e, _ in extents] or [0])
    blocks = blocks_for(size, block_size)
    if extent < 1:
        return blocks, -(-size // blocks)
    blocks = min(blocks, extent)
    step = -(-extent // blocks)
    if size % extent:  # not an axis of that intermediate: the split leaves it whole
        return blocks, size
    return blocks, size // extent * step


def blocked_equations(plans: list, block_size: int) -> list[BlockedEquation]:
    out = []
    for plan in plans:
        size = plan.largest_intermediate
        if size is not None and size > block_size:
            blocks, peak = blocked_split(plan, block_size)
            out.append(BlockedEquation(plan.line, plan.tensor, size, blocks, peak))
    return out
