"""`gather(x, ids, axis=v)` (front/builtins.py): x at the positions `ids` along
its axis v, broadcast by index name.  An embedding lookup is `E[t,d] =
gather(Emb[v,d], Tok[t], axis=v)`; picking one value per row is `P[n] =
gather(LP[n,v], T[n], axis=v)` (an index of both is matched, not crossed).
The backend's `gather_rows` reads the rows (no one-hot product: the work is that
of the rows read), and the frameworks differentiate it with respect to x."""
from __future__ import annotations

import math

from ..backends.base import Backend
from .labelled import LArray, align
from .losses import check_ids
from .statement import EvaluationError


def gather_axes(x_axes: tuple[str, ...], ids_axes: tuple[str, ...], axis: str
                ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The indices of x and ids both have, those of ids alone, those of x alone
    (without `axis`): the result's axes are the three in that order."""
    shared = tuple(a for a in x_axes if a != axis and a in ids_axes)
    own = tuple(a for a in ids_axes if a not in x_axes)
    rest = tuple(a for a in x_axes if a != axis and a not in ids_axes)
    return shared, own, rest


def gather(backend: Backend, x: LArray, ids: LArray, axis: str) -> LArray:
    if axis not in x.axes:
        raise EvaluationError(f"gather's first argument has no axis `{axis}` to read along")
    if axis in ids.axes:
        raise EvaluationError(f"gather's positions are indexed by `{axis}`, the axis they "
                              f"pick along")
    shared, own, rest = gather_axes(x.axes, ids.axes, axis)
    sizes = dict(zip(x.axes, backend.shape(x.data)))
    sizes.update(zip(ids.axes, backend.shape(ids.data)))
    values = backend.concrete(ids.data)
    if values is not None:
        check_ids(values, sizes[axis], "gather's positions", "positions")
    count = math.prod(sizes[a] for a in shared)
    rows = backend.reshape(align(backend, x, shared + (axis,) + rest),
                           (count, sizes[axis], math.prod(sizes[a] for a in rest)))
    picks = backend.reshape(align(backend, ids, shared + own),
                            (count, math.prod(sizes[a] for a in own)))
    out = backend.gather_rows(rows, picks)
    axes = shared + own + rest
    return LArray(backend.reshape(out, tuple(sizes[a] for a in axes)), axes)
