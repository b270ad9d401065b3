"""A two-operand einsum as one batched matmul (BLAS): the step every backend
takes for a product of two tensors (the contraction path of two operands is
the pair itself, plan.contraction), planned once per spec and shapes."""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple

from ..limits import bounded, checkpoint_now

# a bounded run (a time limit, a cancel) multiplies a larger product in blocks of
# about this many multiply-adds (tens of ms each), checking its bounds between them
BLOCK_MACS = 1 << 28
MIN_ROWS = 256


def pair_as_matmul(spec: str, a: Any, b: Any, *, total: Callable, permute: Callable,
                   matmul: Callable) -> Any:
    """A two-operand einsum as one batched matmul (BLAS), with the operands'
    roles chosen so that the result comes out in the requested order (a plain
    matrix product when nothing is batched).  `total(x, axes)` sums axes away,
    `permute(x, order)` transposes, `matmul` multiplies: the framework's own.
    The plan is made once per spec and shapes, so a run pays only for the calls."""
    shape_a, shape_b = tuple(a.shape), tuple(b.shape)
    if all(type(n) is int for n in shape_a + shape_b):
        plan = _matmul_plan(spec, shape_a, shape_b)
    else:  # symbolic sizes (an export with dynamic axes): unhashable, planned each time
        plan = _matmul_plan.__wrapped__(spec, shape_a, shape_b)
    if plan.swap:
        a, b = b, a
    if plan.total_a:
        a = total(a, plan.total_a)
    if plan.total_b:
        b = total(b, plan.total_b)
    if plan.order_a is not None:
        a = permute(a, plan.order_a)
    if plan.order_b is not None:
        b = permute(b, plan.order_b)
    if plan.reshape:
        out = matmul(a.reshape(plan.shape_a), b.reshape(plan.shape_b)).reshape(plan.produced)
    else:
        out = matmul(a, b)
    return out if plan.order_out is None else permute(out, plan.order_out)


def checked_matmul(a: Any, b: Any, matmul: Callable, empty: Callable[[tuple], Any]) -> Any:
    """matmul(a, b); in a bounded run (run.limits) a large product goes in blocks
    of a's rows, written into `empty(shape)` with the run's checkpoint between
    them, so a cancel or the time limit stops it within a block, not after the
    whole.  A block has about BLOCK_MACS multiply-adds but at least MIN_ROWS
    rows (a block of a few rows would read all of b for them; measured in
    benchmarks/cancel_latency.py).  a and b are as the plan makes them:
    (batch?, rows, k) and (batch?, k, n)."""
    if not bounded():
        return matmul(a, b)
    batch = tuple(a.shape[:-2])
    rows = a.shape[-2]
    macs = math.prod(batch) * rows * a.shape[-1] * b.shape[-1]
    step = max(MIN_ROWS, -(-rows * BLOCK_MACS // max(1, macs)))
    if step >= rows:
        return matmul(a, b)
    out = empty(batch + (rows, b.shape[-1]))
    for start in range(0, rows, step):
        checkpoint_now()
        matmul(a[..., start:start + step, :], b, out=out[..., start:start + step, :])
    return out


class _MatmulPlan(NamedTuple):
    swap: bool  # multiply b @ a (the first of the output's free indices is b's)
    total_a: tuple[int, ...]  # axes summed away first (in one operand only, not kept)
    total_b: tuple[int, ...]
    order_a: tuple[int, ...] | None  # to (batch, free, contracted); None: already so
    order_b: tuple[int, ...] | None  # to (batch, contracted, free)
    shape_a: tuple[int, ...]  # (batch?, free, contracted)
    shape_b: tuple[int, ...]  # (batch?, contracted, free)
    produced: tuple[int, ...]  # the product's shape, axis by axis
    order_out: tuple[int, ...] | None  # produced -> requested order; None: already so
    reshape: bool  # whether any operand or the product needs reshaping (not a plain mm)


@functools.lru_cache(maxsize=4096)
def _matmul_plan(spec: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> _MatmulPlan:
    inputs, output = spec.split("->")
    sa, sb = inputs.split(",")
    sizes = dict(zip(sa, shape_a))
    sizes.update(zip(sb, shape_b))
    # put first whichever operand's free indices come first in the output
    first_free = next((c for c in output if (c in sa) != (c in sb)), None)
    swap = first_free is not None and first_free in sb
    if swap:
        sa, sb = sb, sa
    # an index in one operand only and not kept is summed first
    total_a = tuple(i for i, c in enumerate(sa) if c not in sb and c not in output)
    total_b = tuple(i for i, c in enumerate(sb) if c not in sa and c not in output)
    sa = "".join(c for i, c in enumerate(sa) if i not in total_a)
    sb = "".join(c for i, c in enumerate(sb) if i not in total_b)
    batch = [c for c in output if c in sa and c in sb]
    contracted = [c for c in sa if c in sb and c not in output]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]

    def prod(cs: list[str]) -> int:
        return math.prod(sizes[c] for c in cs)

    def order(of: str, to: list[str]) -> tuple[int, ...] | None:
        positions = tuple(of.index(c) for c in to)
        return None if positions == tuple(range(len(positions))) else positions

    lead = (prod(batch),) if batch else ()
    produced = batch + free_a + free_b
    plain = len(batch) <= 1 and len(free_a) == len(free_b) == len(contracted) == 1
    return _MatmulPlan(
        swap, total_a, total_b,
        order(sa, batch + free_a + contracted), order(sb, batch + contracted + free_b),
        lead + (prod(free_a), prod(contracted)), lead + (prod(contracted), prod(free_b)),
        tuple(sizes[c] for c in produced), order("".join(produced), list(output)),
        not plain)
