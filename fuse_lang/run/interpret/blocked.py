"""Blocked contraction (`block_size`, docs/execution.md).

With `block_size` set, a run's backend is wrapped in `Blocking`: an einsum
whose largest intermediate (opt_einsum's count for its planned path) is over
`block_size` elements runs in blocks along one index, and a product projected
by max/min (joined elementwise before its projection, so the whole join is an
intermediate) is joined and projected block by block.  A kept index is split
first (the blocks' results are put side by side); where no kept index helps, a
projected one is (the blocks' partial results are summed, or maxed, or
minned).  The result is the unblocked one up to float rounding (sums in another
order).  Each block's intermediate stays within `block_size` elements where one
index can bring it there; the memory guard then counts the blocks' peak
(plan.blocking.blocked_split, made by the same rule) instead of the whole join.
"""
from __future__ import annotations

import math
import operator
from typing import Any

from ...front import ir
from ...plan.blocking import blocks_for
from ...plan.contraction import contraction_path
from ..backends.base import Backend
from ..sparse.value import is_sparse
from .labelled import LArray, combine


def _largest(spec: str, shapes: tuple[tuple[int, ...], ...]) -> int:
    inputs, _, output = spec.partition("->")
    sizes = {c: n for term, shape in zip(inputs.split(","), shapes) for c, n in zip(term, shape)}
    result = math.prod(sizes[c] for c in output)
    if len(shapes) < 2:
        return max(result, max(math.prod(s) for s in shapes))
    return max(result, contraction_path(spec, shapes).largest_intermediate)


def _sliced(x: Any, axis: int, lo: int, hi: int) -> Any:
    return x[(slice(None),) * axis + (slice(lo, hi),)]  # a view on numpy and torch


class Blocking:
    """A backend whose large contractions run in blocks of at most block_size elements
    (a wrapper: what it does not define is its backend's)."""

    blocks_terms = True  # blocked_term, below

    def __init__(self, backend: Backend, block_size: int) -> None:
        self._inner = backend
        self.block_size = block_size
        self.peak = 0  # the largest intermediate of a block, in elements
        self.blocked = 0  # contractions that ran in blocks

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def count_einsum(self, spec: str, *arrays: Any) -> Any:
        """A Boolean join: in blocks too, where the backend counts in its own type
        (a join of sparse relations is not blocked: it holds no dense intermediate)."""
        if self._inner.itemsize >= 4 and not any(is_sparse(a) for a in arrays):
            return self.einsum(spec, *arrays)
        return self._inner.count_einsum(spec, *arrays)

    def einsum(self, spec: str, *arrays: Any) -> Any:
        inner = self._inner
        if any(is_sparse(a) for a in arrays):  # sparse joins make no dense intermediate
            return inner.einsum(spec, *arrays)
        shapes = tuple(tuple(inner.shape(a)) for a in arrays)
        largest = _largest(spec, shapes)
        if largest <= self.block_size:
            self.peak = max(self.peak, largest)
            return inner.einsum(spec, *arrays)
        inputs, _, output = spec.partition("->")
        terms = inputs.split(",")
        sizes = {c: n for term, shape in zip(terms, shapes) for c, n in zip(term, shape)}
        # a kept index first (results side by side), the longest first
        order = sorted(sizes, key=lambda c: (c not in output, -sizes[c]))
        letter = order[0]
        blocks = min(sizes[letter], blocks_for(largest, self.block_size))
        step = -(-sizes[letter] // blocks)
        parts = []
        for lo in range(0, sizes[letter], step):
            hi = min(lo + step, sizes[letter])
            pieces = [_sliced(a, t.index(letter), lo, hi) if letter in t else a
                      for a, t in zip(arrays, terms)]
            piece_shapes = tuple(tuple(inner.shape(p)) for p in pieces)
            self.peak = max(self.peak, _largest(spec, piece_shapes))
            parts.append(inner.einsum(spec, *pieces))
        self.blocked += 1
        if letter in output:
            return inner.concatenate(parts, output.index(letter))
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        return total

    def blocked_term(self, evaluator: Any, expr: ir.Product,
                     projected: dict[str, str]) -> LArray | None:
        """A product projected by max/min, joined and projected in blocks; None
        where it is small enough (or not such a product): the usual path."""
        ops = set(projected.values())
        if not projected or not ops <= {"max", "min", "sum"} or "sum" in ops:
            return None
        factors = [(evaluator.eval(f), op) for f, op in zip(expr.factors, expr.ops)]
        if any(is_sparse(value.data) for value, _ in factors):
            return None  # (a sparse factor: the usual path's sparse join)
        extents: dict[str, int] = {}
        for value, _ in factors:
            extents.update(zip(value.axes, self._inner.shape(value.data)))
        joined = math.prod(extents.values())
        if joined <= self.block_size:
            return None  # (the factors are evaluated again there: small ones)
        kept = [a for a in extents if a not in projected]
        name = max(kept or list(extents), key=lambda a: extents[a])
        blocks = min(extents[name], blocks_for(joined, self.block_size))
        step = -(-extents[name] // blocks)
        parts = []
        for lo in range(0, extents[name], step):
            hi = min(lo + step, extents[name])
            value = None
            for factor, op in factors:
                if name in factor.axes:
                    factor = LArray(_sliced(factor.data, factor.axes.index(name), lo, hi),
                                    factor.axes)
                # (the first factor as shared: the next blocks read it again)
                value = LArray(factor.data, factor.axes) if value is None else combine(
                    self._inner, operator.truediv if op == "/" else operator.mul, value, factor)
            assert value is not None
            self.peak = max(self.peak, math.prod(self._inner.shape(value.data)))
            parts.append(evaluator.project_all(value, projected))
        self.blocked += 1
        if name in parts[0].axes:
            axis = parts[0].axes.index(name)
            return LArray(self._inner.concatenate([p.data for p in parts], axis), parts[0].axes)
        pick = self._inner.maximum if projected[name] == "max" else self._inner.minimum
        total = parts[0].data
        for part in parts[1:]:
            total = pick(total, part.data)
        return LArray(total, parts[0].axes)
