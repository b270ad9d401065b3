"""Blocked contraction, planned: how many blocks bring an equation's largest
intermediate under `block_size` elements (docs/execution.md)."""
from __future__ import annotations

from dataclasses import dataclass


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


def blocked_equations(plans: list, block_size: int) -> list[BlockedEquation]:
    out = []
    for plan in plans:
        size = plan.largest_intermediate
        if size is not None and size > block_size:
            blocks = blocks_for(size, block_size)
            out.append(BlockedEquation(plan.line, plan.tensor, size, blocks,
                                       -(-size // blocks)))
    return out
