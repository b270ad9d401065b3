"""`cross_entropy(z, t, axis=v, smoothing=ε)` (front/builtins.py): the loss of
logits against class ids or target distributions, from the backend's stable
`log_softmax`, so extreme logits give finite values and gradients.

Class ids become a one-hot mask by comparison with the class positions: the
logits' size, which the log-softmax has anyway, in the same few framework
operations on NumPy, torch and jax (a captured torch step and a jitted jax step
alike); the gradient flows to the logits through `log_softmax`.  Only the id's
class is read, so a logit masked to -inf elsewhere in its row gives PyTorch's
finite loss (not the NaN of 0·-inf)."""
from __future__ import annotations

import operator

import numpy as np

from ..backends.base import Backend
from .labelled import LArray, align, combine, project
from .statement import EvaluationError


def cross_entropy(backend: Backend, z: LArray, t: LArray, axis: str, smoothing: float
                  ) -> LArray:
    """The cross-entropy of `z` along `axis` against `t`: over z's other axes."""
    if axis not in z.axes:
        raise EvaluationError(f"cross_entropy's logits have no axis `{axis}` to take "
                              f"the classes along")
    k = z.axes.index(axis)
    classes = backend.shape(z.data)[k]
    logp = LArray(backend.log_softmax(z.data, k), z.axes)
    if axis in t.axes:  # one-hot or probabilities, over the classes too
        terms = combine(backend, operator.mul, logp, t)
    else:  # the id's class only: a masked logit (-inf) of another class is not 0·-inf
        hot = _one_hot(backend, z, t, axis, classes)  # 1, 0, or NaN for no class (traced)
        terms = LArray(backend.where(hot != 0, logp.data, 0.0) * hot, z.axes)
    picked = project(backend, terms, (axis,), "sum")
    loss = LArray(-picked.data, picked.axes)
    if smoothing:  # (1-ε)·t + ε/C: the uniform part is the mean of -log p over the classes
        uniform = project(backend, logp, (axis,), "avg")
        loss = combine(backend, lambda a, b: (1 - smoothing) * a - smoothing * b,
                       loss, uniform)
    return loss


def _one_hot(backend: Backend, z: LArray, ids: LArray, axis: str, classes: int):
    """1 at each id's class along `axis`, laid out as z's axes."""
    extra = [a for a in ids.axes if a not in z.axes]
    if extra:
        raise EvaluationError(f"cross_entropy's class ids have the axis `{extra[0]}` that "
                              f"its logits lack")
    values = backend.concrete(ids.data)
    if values is not None:
        check_ids(values, classes, "cross_entropy's targets", "class ids")
    data = align(backend, ids, z.axes)  # the class axis as size 1
    shape = [1] * len(z.axes)
    k = z.axes.index(axis)
    shape[k] = classes
    positions = backend.reshape(backend.arange(classes), tuple(shape))
    hot = backend.where(data == positions, 1.0, 0.0)
    if values is None:  # traced: an id that matches no class makes the row NaN, not 0
        matched = backend.reduce("sum", hot, (k,))
        hot = hot * backend.reshape(backend.where(matched > 0, 1.0, float("nan")),
                                    tuple(backend.shape(matched)[:k]) + (1,)
                                    + tuple(backend.shape(matched)[k:]))
    return hot


def check_ids(values: np.ndarray, count: int, what: str, kind: str) -> None:
    """EvaluationError unless `values` are whole numbers from 0 to count - 1."""
    values = np.asarray(values, dtype=np.float64)
    whole = np.isfinite(values) & (values == np.round(values))
    if not whole.all():
        bad = values[~whole].flat[0]
        raise EvaluationError(f"{what} hold {bad:g}, which is no {kind[:-1]}: give whole "
                              f"numbers from 0 to {count - 1}" + (
                                  ", or one-hot or probability targets indexed like the "
                                  "logits" if kind == "class ids" else ""))
    outside = (values < 0) | (values >= count)
    if outside.any():
        bad = values[outside].flat[0]
        raise EvaluationError(f"{what} hold the {kind[:-1]} {bad:g}, outside the {count} "
                              f"of its axis (0 to {count - 1})")
