"""Arrays whose axes carry index names, and the operations the evaluator
needs on them: broadcasting and projection by name, never by position
(LANGUAGE.md §4-5).  Backend-neutral: every array operation goes through
the backend object (backends/base.py: numpy, torch or jax in the same shape).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..backends.base import Backend


class LArray(NamedTuple):
    """An array and the index name of each of its axes (a named tuple: the
    evaluator makes many, and tuples are built fast)."""

    data: Any
    axes: tuple[str, ...]
    fresh: bool = False  # data was made for this value alone: it may be updated in place


def align(backend: Backend, x: LArray, axes: tuple[str, ...]) -> Any:
    """x's data with its axes in the order `axes` (missing ones as size 1)."""
    if x.axes == axes:
        return x.data
    order = [x.axes.index(a) for a in axes if a in x.axes]
    data = backend.transpose(x.data, order) if order != list(range(len(order))) else x.data
    shape = list(backend.shape(data))
    full = []
    k = 0
    for a in axes:
        if a in x.axes:
            full.append(shape[k])
            k += 1
        else:
            full.append(1)
    return backend.reshape(data, tuple(full))


def union_axes(*xs: LArray) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for x in xs:
        for a in x.axes:
            seen.setdefault(a)
    return tuple(seen)


def combine(backend: Backend, fn, *xs: LArray) -> LArray:
    """An elementwise function of several arrays, broadcast by index name."""
    first = xs[0].axes
    if len(xs) == 2 and xs[0].fresh:
        # the left operand was made for this value alone: a chain of arithmetic
        # (X*G + B - ...) may reuse its memory, as NumPy's own temporaries do
        fn = functools.partial(backend.binary_fresh, fn)
    if all(x.axes == first for x in xs):
        return LArray(fn(*(x.data for x in xs)), first, True)
    if len(xs) == 2 and not (xs[0].axes and xs[1].axes):  # a scalar broadcasts as it is
        return LArray(fn(xs[0].data, xs[1].data), first or xs[1].axes, True)
    axes = union_axes(*xs)
    return LArray(fn(*(align(backend, x, axes) for x in xs)), axes, True)


def project(backend: Backend, x: LArray, names, op: str) -> LArray:
    """Project away `names` (those x has) with sum / max / min / avg."""
    drop = [i for i, a in enumerate(x.axes) if a in names]
    if not drop:
        return x
    # (a max or min over an axis of extent 0 is the backends' reduce's: no value, 0,
    # which another equation of the same tensor does not combine with: run.interpret.lhs)
    data = backend.reduce(op, x.data, tuple(drop))
    return LArray(data, tuple(a for a in x.axes if a not in names))


def expand_to(backend: Backend, x: LArray, axes: tuple[str, ...], extents: dict[str, int]) -> Any:
    """x's data laid out as `axes`, broadcast to full extents where it lacks an axis."""
    data = align(backend, x, axes)
    return backend.broadcast_to(data, tuple(extents[a] for a in axes))
