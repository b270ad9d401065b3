"""The memory guard: a run that would not fit is refused before anything runs."""
from __future__ import annotations

import math
import os
from typing import Any, Collection, Mapping

from ..check import Analysis
from ..check.kinds import TensorKind
from ..front.numbers import format_bytes
from ..plan.blocking import blocked_split
from .results import FuseError

DEFAULT_MEMORY_FRACTION = 0.5


SPARSE_BYTES_PER_NONZERO = 12  # CSR: a value and a column index (4 + 8 at worst);
# a relation of 3 axes or more: a value and an 8-byte key, 4 more per non-zero


def guard_memory(estimated: tuple[int, tuple[int, str], tuple[int, str]],
                 limit: int | None) -> None:
    """Raise FuseError when the needed tensors, plus the largest intermediate of
    one equation (`estimate`'s three figures, a blocked run's blocks counted),
    need more than `limit` bytes (by default half the free memory)."""
    total, largest, peak = estimated
    limit = limit if limit is not None else default_limit()
    if total + peak[0] > limit:
        during = (f" plus {format_bytes(peak[0])} while computing {peak[1]}" if peak[0] else "")
        raise FuseError(f"this run needs about {format_bytes(total)} for its tensors (the "
                        f"largest, {largest[1]}, {format_bytes(largest[0])}){during}, over the "
                        f"limit of {format_bytes(limit)}; nothing was run")


def kept_dense_words(plan: Any, needed: Collection[str]) -> str:
    """What a refused compiled run could do (`plan`: its run.run_plan.RunPlan;
    `needed`: the tensors the run needs): those planned sparse that it keeps dense,
    which an eager run keeps sparse (docs/scale.md, "Torch and JAX"); "" where there
    are none."""
    abilities = plan.abilities
    if not abilities.compiled or abilities.sharded or not abilities.sparse:
        return ""
    names = [n for n, r in plan.representations.items() if r.kind == "sparse"
             and n in needed  # (a compiled run holds none sparse)
             and (abilities.sparse_relations or len(plan.analysis.tensors[n].shape) == 2)]
    if not names:
        return ""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (f" ({shown} planned sparse, kept dense by a compiled run: run eagerly, "
            f"--no-compile or compiled=False, to keep them sparse)")


def estimate(analysis: Analysis, needed: Collection[str], itemsize: int,
             sparse: Mapping[str, int | None] | None = None, planned: Any = None,
             sizes: Mapping[str, int | None] | None = None, block_size: int | None = None
             ) -> tuple[int, tuple[int, str], tuple[int, str]]:
    """The needed tensors' bytes in all, the largest of them, and the plan's
    largest intermediate (bytes, tensor): exact integers, from shapes only
    (sparse tensors by their estimated non-zeros).  planned: the program's
    plan (plan.planner), when the caller has it; sizes: `needed_bytes`, when
    the caller has it; block_size: a blocked run's, whose intermediates over it
    are counted by their blocks (plan.blocking.blocked_split)."""
    sparse = sparse or {}
    if sizes is None:
        sizes = needed_bytes(analysis, needed, itemsize, sparse)
    total = 0
    largest = (0, "")
    for name in needed:
        size = sizes[name]
        if size is None:
            continue
        total += size
        largest = max(largest, (size, name))
    # the plan's largest intermediate (a join before its projection) also lives
    # in memory while its equation runs
    if planned is None:
        from ..plan import plan_program

        planned = plan_program(analysis)
    peak = (0, "")
    for eq in planned.equations:
        if eq.tensor in needed and eq.tensor not in sparse:
            # a contraction's gathered operands (shifted, pooled reads) live beside it
            held = max([eq.largest_intermediate or 0] + [
                (c.largest_intermediate or 0) + c.gathered for c in eq.contractions])
            if block_size is not None and (eq.largest_intermediate or 0) > block_size:
                held = min(held, blocked_split(eq, block_size)[1] + max(
                    [c.gathered for c in eq.contractions], default=0))
            if held:
                peak = max(peak, (held * itemsize, eq.tensor))
    return total, largest, peak


def tensor_bytes(analysis: Analysis, name: str, itemsize: int,
                 sparse: Mapping[str, int | None]) -> int | None:
    """The bytes of tensor `name`'s value: dense, `itemsize` per element; sparse
    (in `sparse`, with its estimated non-zeros), per non-zero; None when an extent
    is unknown."""
    shape = analysis.tensors[name].shape
    if any(e is None for e in shape):
        return None
    if name in sparse:
        size = (sparse[name] or 0) * SPARSE_BYTES_PER_NONZERO
        return size + ((shape[0] + 1) * 8 if len(shape) == 2 else (sparse[name] or 0) * 4)
    return math.prod(shape) * itemsize  # type: ignore[arg-type]  # exact (int64 would wrap)


def needed_bytes(analysis: Analysis, needed: Collection[str], itemsize: int,
                 sparse: Mapping[str, int | None]) -> dict[str, int | None]:
    """`tensor_bytes` of each needed tensor (made once for `estimate` and
    `bytes_by_role`: a long program has tens of thousands)."""
    return {name: tensor_bytes(analysis, name, itemsize, sparse) for name in needed}


def bytes_by_role(analysis: Analysis, needed: Collection[str], itemsize: int,
                  sparse: Mapping[str, int | None], computed: Collection[str],
                  sizes: Mapping[str, int | None] | None = None) -> tuple[int, int, int]:
    """The needed tensors' bytes (as `estimate` counts them) split three ways: the
    params, the other inputs (sources, facts, what a run is given), and the
    activations (the values the run computes: `computed`, the tensors with an
    equation).  sizes: `needed_bytes`, when the caller has it."""
    if sizes is None:
        sizes = needed_bytes(analysis, needed, itemsize, sparse)
    tensors = analysis.tensors  # (read once: a deferred field's descriptor)
    params = inputs = activations = 0
    for name in needed:
        size = sizes[name] or 0
        if tensors[name].kind == TensorKind.PARAM:
            params += size
        elif name in computed:
            activations += size
        else:
            inputs += size
    return params, inputs, activations


def failure_words(err: Exception) -> str:
    """A run's failure in words: running out of memory said as such (NumPy's
    MemoryError names the array it could not allocate), as the guard says it."""
    if isinstance(err, MemoryError):
        return (f"the run ran out of memory ({err or 'an allocation failed'}), past what "
                f"the memory guard estimated before it started")
    return str(err)


def default_limit() -> int:
    """Half the memory free now (8 GB assumed where the system does not say)."""
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pages = 8 * 1024**3
    return int(pages * DEFAULT_MEMORY_FRACTION)
