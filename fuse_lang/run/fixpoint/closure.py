"""A deep linear recursion finished by one graph search (docs/execution.md).

A Boolean relation whose one recursive rule is linear, `R(x,z) = R(x,y) E(y,z)`
(or `R(x,z) = E(x,y) R(y,z)`) with E from a lower stratum, is a transitive
closure: after any semi-naive round, the facts still to come are exactly those
reachable over E from the facts that round added, row by row.  A chain of N
edges takes N rounds, and each round pays a join's fixed cost (milliseconds on
scipy.sparse, whatever the delta's size): 100,000 rounds would take minutes.  So
once a group has taken SEARCH_AFTER rounds, the rest is found by a
breadth-first search in `scipy.sparse.csgraph` (compiled), from each row's new
facts at once, where the rows still growing are few enough (SEARCH_CELLS).  It
finds the same facts and counts the same rounds (a fact d edges past the delta
is the one round r+d would find), so round limits, their messages and traces
say what the rounds would have said.  Eager runs, on any
backend (the search runs on the host, the facts go back to the backend's
device); shallow recursion (most programs) never gets here.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...plan.linear_closure import LinearRule
from ..backends.base import Backend
from ..run_plan import Fixpoint
from ..sparse.value import SparseValue, sp
from .loop import Arithmetic, Eager, Host, Iteration, SemiNaive, rounds_for

# semi-naive rounds before the rest may be searched: past a tree's depth (the
# logarithm of its size), so that a shallow recursion never pays for the search's
# first import of scipy.sparse.csgraph (about 0.3 s) to save a round or two
SEARCH_AFTER = 32
# A search computes a distance per row still growing and node (about 20 ns each
# here); a round costs a few ms whatever its delta.  The search is taken once it
# costs less than ROUND_CELLS distances per round taken so far (so a shallow
# recursion, a closure with thousands of rows still growing, ends by its
# remaining rounds), and never beyond SEARCH_CELLS
# (128 MB of float64).  Both are counts, not times: which rounds are searched does
# not depend on the machine's load.
ROUND_CELLS = 1 << 16
SEARCH_CELLS = 1 << 24


class SearchedSemiNaive(SemiNaive):
    """Semi-naive rounds, then (past SEARCH_AFTER rounds) the rest in one search.
    `searched()` gives the facts each round of the last search added (for the
    trace), once."""

    def __init__(self, host: Host, group: list[str], arithmetic: Arithmetic,
                 bases: dict[str, Any], max_iterations: int | None, tolerance: float,
                 rule: LinearRule) -> None:
        super().__init__(host, group, arithmetic, bases, max_iterations, tolerance)
        self.rule = rule
        self._added: list[int] | None = None

    def searched(self) -> list[int] | None:
        added, self._added = self._added, None
        return added

    def round(self, state: tuple) -> tuple:
        rounds, _, known, delta = state
        if rounds < SEARCH_AFTER:
            return super().round(state)
        name, left = self.rule.relation, self.rule.left
        values, backend = self.host.values, self.host.backend
        # a 1-D relation is searched as one row (R(z) = R(y) E(y,z)) or one column
        shape = _matrix_shape(self.shapes[name], left)
        # the rows (for E(x,y) R(y,z): the columns) that go on
        guard = np.ones(shape[1 if left else 0], dtype=bool)
        for other in self.rule.guards:
            guard &= backend.to_numpy(values[other]).reshape(-1) > 0
        new = _csr(delta[name], backend, shape)
        growing = np.unique(new.indices) if left else np.flatnonzero(np.diff(new.indptr))
        cells = np.count_nonzero(guard[growing]) * shape[0 if left else 1]
        if cells > min(SEARCH_CELLS, rounds * ROUND_CELLS):
            return super().round(state)
        found = _search(_csr(known[name], backend, shape), new,
                        _csr(values[self.rule.edges], backend), left, self.limit - rounds, guard)
        self._added = found.added
        taken = rounds + len(found.added)
        if found.facts is None:
            return taken, found.pending, known, {name: None}
        # back in the representation the known facts have (the plan's), on the backend
        def native(facts: Any) -> Any:
            return backend.sparse_from(facts) if isinstance(known[name], SparseValue) else \
                backend.asarray(facts.toarray().reshape(self.shapes[name]))

        grown = {name: self.arithmetic.grow(known[name], native(found.facts))}
        # as the rounds leave it: the last round's facts, None when it found none
        return taken, found.pending, grown, {name: native(found.last) if found.pending else None}


def _matrix_shape(shape: tuple[int, ...], left: bool) -> tuple[int, int]:
    """The shape a relation is searched as: its own (2-D), or a 1-D relation's as
    one row (R(z) = R(y) E(y,z)) or one column (R(x) = E(x,y) R(y), `left`)."""
    if len(shape) == 2:
        return shape  # type: ignore[return-value]
    return (shape[0], 1) if left else (1, shape[0])


def _csr(value: Any, backend: Backend, shape: tuple[int, int] | None = None) -> Any:
    """A relation's value as a scipy CSR matrix on the host (of `shape`: a 1-D
    relation's as _matrix_shape makes it)."""
    if isinstance(value, SparseValue):
        return value.on_numpy().matrix
    array = backend.to_numpy(value)
    return sp.csr_array(array if shape is None else array.reshape(shape))


class Found(NamedTuple):
    """What a search found: every new fact (0/1 CSR, None if none), the last
    round's, the facts each round added (one entry per round taken, a last
    round that finds nothing included), and whether facts were still coming
    when the round limit ran out."""

    facts: Any
    last: Any
    added: list[int]
    pending: bool


def _search(known: Any, delta: Any, edges: Any, left: bool, allowed: int,
            guard: np.ndarray) -> Found:
    """The facts the rounds after one that added `delta` would add, at most
    `allowed` rounds of them.  Only the rows `guard` keeps go on."""
    if left:  # E(x,y) R(y,z) is R'(z,x) = R'(z,y) E'(y,x) on the transposes
        found = _search(known.T.tocsr(), delta.T.tocsr(), edges.T.tocsr(), False, allowed,
                        guard)
        return found._replace(**{k: None if v is None else v.T.tocsr() for k, v in
                                  (("facts", found.facts), ("last", found.last))})
    nodes = edges.shape[1]
    edges = sp.csr_array(edges != 0, dtype=np.int8)
    rows = np.flatnonzero(np.diff(delta.indptr))
    rows = rows[guard[rows]]
    chunk = max(1, SEARCH_CELLS // (nodes + 1))
    parts = [_search_rows(known, delta, edges, rows[begin:begin + chunk], allowed)
             for begin in range(0, len(rows), chunk)]
    row_of, col_of, step_of = (np.concatenate([p[k] for p in parts]) if parts
                               else np.zeros(0, np.int64) for k in range(3))
    if not len(step_of):
        return Found(None, None, [0], False)
    added = np.bincount(step_of)[1:].tolist()
    if len(added) < allowed:  # every fact found, and the round after finds nothing
        return Found(_facts(known.shape, row_of, col_of), None, added + [0], False)
    last = step_of == allowed  # the limit ran out while facts still came
    return Found(_facts(known.shape, row_of, col_of),
                 _facts(known.shape, row_of[last], col_of[last]), added, True)


def _search_rows(known: Any, delta: Any, edges: Any, rows: np.ndarray, allowed: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, rounds after now) of each new fact of `rows`: a search from one
    extra node per row, whose edges lead to the row's delta."""
    from scipy.sparse.csgraph import dijkstra

    nodes, count = edges.shape[0], len(rows)
    seeds = sp.csr_array(delta[rows] != 0, dtype=np.int8)
    graph = sp.vstack([sp.hstack([edges, sp.csr_array((nodes, count), dtype=np.int8)]),
                       sp.hstack([seeds, sp.csr_array((count, count), dtype=np.int8)])],
                      format="csr")
    # distance 1: the delta itself; d > 1: found d-1 rounds from now
    distance = dijkstra(graph, directed=True, unweighted=True,
                        indices=np.arange(nodes, nodes + count), limit=allowed + 1)[:, :nodes]
    reached = np.isfinite(distance) & (distance >= 2)
    reached &= known[rows].toarray() == 0
    local, cols = np.nonzero(reached)
    return rows[local], cols, distance[local, cols].astype(np.int64) - 1


def _facts(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray) -> Any:
    facts = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=shape)
    facts.sum_duplicates()
    return facts


def rounds_for_run(host: Host, group: list[str], arithmetic: Arithmetic,
                   bases: dict[str, Any], max_iterations: int | None, tolerance: float,
                   fixpoint: Fixpoint) -> Iteration:
    """The rounds the plan chose for the group (fixpoint.rounds_for); a linear
    closure's semi-naive rounds finished by the search when they run eagerly (on
    any backend: the search runs on the host)."""
    if fixpoint.closure is None or not isinstance(arithmetic, Eager):
        return rounds_for(host, group, arithmetic, bases, max_iterations, tolerance,
                          fixpoint.strategy)
    return SearchedSemiNaive(host, group, arithmetic, {n: bases.get(n) for n in group},
                             max_iterations, tolerance, fixpoint.closure)
