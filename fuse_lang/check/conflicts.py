"""Where an extent conflict is (LANGUAGE.md §8): at the equation where the two
uses meet, not at the files the extents came from.

Two extents clash when unification puts them in one domain.  The unions that did
it are the statements' references (an index variable meeting a tensor's axis), so
a path of unions from the key one extent was given at to the key of the other
passes through the reference where the mistake is: a weight transposed at its
use, `W1[d,f] X[b,d]`, links the file of `W1` to that of `X` through `W1[d,f]`.
One mistake often gives several clashes (both axes of a transposed weight, every
file a wrong `axis h = 8` meets); each clash's path and its two extents vote,
and the place that explains the most clashes gets one error, with the others as
related information.  A use (a reference) wins a tie over a file or a
declaration: it is where the data of both meet.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, NamedTuple

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from ..front.numbers import short_number
from ..front.relocation import moved_span
from ..front.span import Span
from .domains import Conflict, Domains, Evidence, Key

# At most this many clashes are traced (each a search of its domain); the rest are
# reported where their extents came from, as before.
MAX_TRACED = 200


class Meeting(NamedTuple):
    """A union on a clash's path: in the statement stamped `stamp`, variable `var`
    indexes axis `pos` of `tensor`; `axis_first`: the axis lies on the side of the
    clash's first extent."""

    stamp: int
    tensor: str
    pos: int
    var: str
    axis_first: bool


class Placed(NamedTuple):
    """A statement as the text has it now: the statement and how far its spans are
    from there."""

    stmt: ir.Statement
    delta: int
    number: int  # its place in the program (a tie goes to the later statement)


class _Traced(NamedTuple):
    conflict: Conflict
    meetings: tuple[Meeting, ...]


def report_conflicts(conflicts: Iterable[Conflict], domains: Domains,
                     links: Callable[[], Iterable[tuple[Key, Key]]],
                     placed: Callable[[int], Placed | None],
                     declared: dict[int, tuple[str, Evidence]],
                     out: list[Diagnostic], size: int | None = None) -> None:
    """One `extent-conflict` per root cause of `conflicts` (each clash once) into
    `out`; `links()`: the unions the statements asked for, each (axis key, variable
    key); `placed`: a statement by the stamp in its variables' keys; `declared`:
    the id of an `axis` declaration's extent -> the variable name it is given to,
    and the extent; `size`: the program text's length (a use in an imported file,
    past it, checks clean in its own file: a use in the program wins a tie)."""
    unique: dict[tuple, Conflict] = {}
    for conflict in conflicts:
        a, b = conflict.first, conflict.second
        unique.setdefault((a.span, a.extent, b.span, b.extent), conflict)
    clashes = list(unique.values())
    traced: list[_Traced] = []
    if clashes:
        graph = _union_graph(links(), domains, {domains.find(c.first_key)
                                                     for c in clashes[:MAX_TRACED]
                                                     if c.first_key is not None})
        for conflict in clashes:
            path = _path(graph, conflict, declared) if len(traced) < MAX_TRACED else None
            if path:
                traced.append(_Traced(conflict, path))
            else:
                out.append(_at_source(conflict))
    given_at: dict[Key, Evidence] = {}
    for item, group in _causes(traced, placed, _support(domains, traced), size):
        if item[0] == "use":
            if not given_at:
                for key, evidence in domains.given:
                    if key in graph:
                        given_at.setdefault(key, evidence)
            out.append(_at_use(item[1], item[2], group, placed,
                               lambda key, skip: _nearest(graph, given_at, key, skip)))
        else:
            out.append(_at_evidence(group))


def _nearest(graph: dict, given_at: dict[Key, Evidence], key: Key, skip: tuple[int, str],
             hops: int = 4) -> Evidence | None:
    """The extent given nearest to `key` (within `hops` unions), not through the
    unions of the reference `skip` (its statement's stamp and tensor): what the
    variable or the axis has apart from the use that clashes."""
    frontier, seen = [key], {key}
    for _ in range(hops + 1):
        found = [given_at[k] for k in frontier if k in given_at]
        if found:
            return found[0]
        step = []
        for node in frontier:
            for other, label in graph.get(node, ()):
                if other not in seen and not (label is not None and label[:2] == skip):
                    seen.add(other)
                    step.append(other)
        frontier = step
    return None


def _at_source(conflict: Conflict) -> Diagnostic:
    """A clash no path explains: where the later extent came from."""
    a, b = sorted((conflict.first, conflict.second), key=lambda e: e.span.start)
    return make("extent-conflict", f"extent {short_number(b.extent)} from {b.what} conflicts "
                f"with extent {short_number(a.extent)} from {a.what}; these positions share "
                f"one domain", b.span, related=(_because(a),))


def _because(evidence: Evidence) -> Related:
    return Related(evidence.span, f"extent {short_number(evidence.extent)} from {evidence.what}")


# ------------------------------------------------------------------ the paths
def _union_graph(links: Iterable[tuple[Key, Key]], domains: Domains, roots: set[Key]
                 ) -> dict[Key, list[tuple[Key, tuple | None]]]:
    """The unions within the domains `roots`, as edges labelled (stamp, tensor,
    position, variable) where an axis meets a variable."""
    graph: dict[Key, list[tuple[Key, tuple | None]]] = {}
    find = domains.find
    for axis, var in links:
        root = find(axis)
        if root not in roots or find(var) != root:
            continue
        label = (var[1], axis[1], axis[2], var[2]) \
            if var[0] == "var" and axis[0] == "axis" else None
        graph.setdefault(axis, []).append((var, label))
        graph.setdefault(var, []).append((axis, label))
    return graph


def _path(graph: dict, conflict: Conflict, declared: dict[int, tuple[str, Evidence]]
          ) -> tuple[Meeting, ...] | None:
    """The unions on a shortest path between the keys the two extents were given
    at.  A declaration's extent is given to every variable of its name: the path
    from the other extent ends at the nearest of them."""
    start, goal = conflict.first_key, conflict.second_key
    if start is None or goal is None:
        return None
    name = _declared_name(declared, conflict.second)
    if name is None:
        meetings = _search(graph, start, goal, _declared_name(declared, conflict.first))
    else:  # searched from the first extent's side, oriented as if from it
        meetings = _search(graph, goal, start, name)
        meetings = None if meetings is None else [
            m._replace(axis_first=not m.axis_first) for m in reversed(meetings)]
    return tuple(meetings) if meetings else None


def _declared_name(declared: dict[int, tuple[str, Evidence]], evidence: Evidence
                   ) -> str | None:
    entry = declared.get(id(evidence))
    return entry[0] if entry is not None and entry[1] is evidence else None


def _search(graph: dict, start: Key, goal: Key, start_name: str | None
            ) -> list[Meeting] | None:
    """Breadth first from `start` (or, with `start_name`, from every variable of that
    name) to `goal`: the meetings on the way, in order."""
    if goal not in graph:
        return None
    starts = [key for key in graph if key[0] == "var" and key[2] == start_name] \
        if start_name is not None else [start]
    came: dict[Key, tuple[Key, tuple | None] | None] = dict.fromkeys(starts)
    queue = deque(k for k in starts if k in graph)
    while queue and goal not in came:
        node = queue.popleft()
        for other, label in graph[node]:
            if other not in came:
                came[other] = (node, label)
                queue.append(other)
    if goal not in came:
        return None
    meetings: list[Meeting] = []
    node = goal
    while came[node] is not None:
        before, label = came[node]  # type: ignore[misc]
        if label is not None:
            # the edge goes before -> node; the axis is on the start's side when it
            # is `before`
            meetings.append(Meeting(*label, axis_first=before == ("axis",) + label[1:3]))
        node = before
    meetings.reverse()
    return meetings


# ------------------------------------------------------------------ the causes
def _support(domains: Domains, traced: list[_Traced]) -> Callable[[Conflict, int], int]:
    """How many places (distinct spans) give an extent to the domain of a clash:
    `support(conflict, extent)`."""
    roots = {domains.find(item.conflict.first_key) for item in traced}
    spans: dict[tuple[Key, int], set[Span]] = {}
    for key, evidence in domains.given if roots else ():
        root = domains.find(key)
        if root in roots:
            spans.setdefault((root, evidence.extent), set()).add(evidence.span)

    def support(conflict: Conflict, extent: int) -> int:
        return len(spans.get((domains.find(conflict.first_key), extent), ()))
    return support


def _causes(traced: list[_Traced], placed: Callable[[int], Placed | None],
            support: Callable[[Conflict, int], int], size: int | None = None
            ) -> list[tuple[tuple, list[tuple[_Traced, Meeting | None]]]]:
    """The clashes grouped by the place that explains most of them (greedy): a use
    (`("use", stamp, tensor)`) or an extent's origin (`("evidence", span)`).  Of two
    uses in one statement, the one whose axis has the extent fewer places give is
    the slip (`B1[d]` of 64 beside `W1[f,d] X[b,t,d]` of 32)."""
    members: dict[tuple, list[tuple[int, Meeting | None]]] = {}
    for n, item in enumerate(traced):
        for evidence in (item.conflict.first, item.conflict.second):
            members.setdefault(("evidence", evidence.span), []).append((n, None))
        for meeting in item.meetings:
            if placed(meeting.stamp) is not None:
                members.setdefault(("use", meeting.stamp, meeting.tensor), []).append(
                    (n, meeting))

    def rank(entry: tuple[tuple, list]) -> tuple:
        item, found = entry
        count = len({n for n, _ in found})  # (a clash of one literal's two axes: once)
        if item[0] == "evidence":
            return (count, 0, 0, 0, 0, 0)
        at = placed(item[1])
        lhs = at is not None and isinstance(at.stmt, ir.Equation) and at.stmt.lhs.name == item[2]
        odd = 0
        for n, meeting in found:
            conflict = traced[n].conflict
            axis_side, var_side = (conflict.first, conflict.second) if meeting.axis_first \
                else (conflict.second, conflict.first)
            odd += support(conflict, var_side.extent) - support(conflict, axis_side.extent)
        mine = at is not None and (size is None or at.stmt.span.start + at.delta < size)
        return (count, 1, mine, at.number if at is not None else -1, odd, 0 if lhs else 1)

    left = set(range(len(traced)))
    groups = []
    while left:
        candidates = [(item, [(n, m) for n, m in found if n in left])
                      for item, found in members.items()]
        item, found = max(candidates, key=rank)
        if not found:
            break
        first_meeting: dict[int, Meeting | None] = {}
        for n, meeting in found:
            first_meeting.setdefault(n, meeting)
        groups.append((item, [(traced[n], m) for n, m in first_meeting.items()]))
        left -= first_meeting.keys()
    return groups


# ------------------------------------------------------------------ the errors
def _at_use(stamp: int, tensor: str, group: list[tuple[_Traced, Meeting | None]],
            placed: Callable[[int], Placed | None],
            nearest: Callable[[Key, tuple[int, str]], Evidence | None]) -> Diagnostic:
    """One error at the reference where the clashes' uses meet.  Its other indices
    that clash too are named as well (`nearest`: the extent a key has apart from
    this use): a transposed `W1[d,f]` of two declared axes merges both domains in
    one union, which records one clash."""
    at = placed(stamp)
    assert at is not None
    parts: list[str] = []
    related: list[Related] = []
    swaps: dict[int, tuple[str, int, int]] = {}  # position -> (variable, axis, variable extent)
    ref = None
    for item, meeting in group:
        assert meeting is not None
        conflict = item.conflict
        axis_side, var_side = (conflict.first, conflict.second) if meeting.axis_first \
            else (conflict.second, conflict.first)
        ref = ref or _reference(at.stmt, tensor, meeting.pos, meeting.var)
        if meeting.pos in swaps:
            continue
        swaps[meeting.pos] = (meeting.var, axis_side.extent, var_side.extent)
        parts.append(_indexes_axis(meeting.var, var_side, meeting.pos, tensor, axis_side))
        related += [_because(var_side), _because(axis_side)]
    for q, index in enumerate(ref.indices or () if ref is not None else ()):
        if q in swaps or type(index) is not ir.IndexVar:
            continue
        var_side = nearest(("var", stamp, index.name), (stamp, tensor))
        axis_side = nearest(("axis", tensor, q), (stamp, tensor))
        if var_side is None or axis_side is None or var_side.extent == axis_side.extent:
            continue
        swaps[q] = (index.name, axis_side.extent, var_side.extent)
        parts.append(_indexes_axis(index.name, var_side, q, tensor, axis_side))
        related += [_because(var_side), _because(axis_side)]
    span = moved_span(ref.span if ref is not None else at.stmt.span, at.delta)
    text = "; ".join(parts)
    return make("extent-conflict", f"extents conflict where `{tensor}` is used: {text}", span,
                related=tuple(dict.fromkeys(related)),
                fixes=_swap_fix(ref, swaps, at.delta) if ref is not None else ())



def _indexes_axis(var: str, var_side: Evidence, pos: int, tensor: str, axis_side: Evidence
                  ) -> str:
    """One index of a use that meets an axis of another extent (axes counted from 0,
    as NumPy and PyTorch count them)."""
    return (f"`{var}` has extent {short_number(var_side.extent)} in this equation (from "
            f"{var_side.what}) but indexes axis {pos} of `{tensor}`, of extent "
            f"{short_number(axis_side.extent)} (from {axis_side.what})")

def _at_evidence(group: list[tuple[_Traced, Meeting | None]]) -> Diagnostic:
    """One error at the extent's origin (a declaration, a file, a literal) that
    clashes with every other extent in the group."""
    counts: dict[Span, int] = {}
    for item, _ in group:
        for evidence in (item.conflict.first, item.conflict.second):
            counts[evidence.span] = counts.get(evidence.span, 0) + 1
    span = max(counts, key=lambda s: (counts[s], -s.start))
    own = None
    others: list[Evidence] = []
    for item, _ in group:
        a, b = item.conflict.first, item.conflict.second
        mine, other = (a, b) if a.span == span else (b, a)
        own = own or mine
        others.append(other)
    assert own is not None
    others = list({(o.span, o.extent): o for o in others}.values())
    first = others[0]
    more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
    return make("extent-conflict", f"extent {short_number(own.extent)} from {own.what} conflicts "
                f"with extent {short_number(first.extent)} from {first.what}{more}; these "
                f"positions share one domain", own.span,
                related=tuple(_because(o) for o in others))


def _reference(stmt: ir.Statement, tensor: str, pos: int, var: str) -> ir.Ref | None:
    """The reference of `tensor` in `stmt` whose index at `pos` mentions `var`."""
    for ref in (*ir.defined_refs(stmt), *ir.statement_refs(ir.used_exprs(stmt))):
        indices = ref.indices or ()
        if ref.name == tensor and pos < len(indices) and any(
                v.name == var for v in ir.index_vars(indices[pos])):
            return ref
    return None


def _swap_fix(ref: ir.Ref, swaps: dict[int, tuple[str, int, int]], delta: int
              ) -> tuple[Fix, ...]:
    """Two plain indices each with the other's extent: swapping them is the fix."""
    if len(swaps) != 2:
        return ()
    (p, (a, a_axis, a_var)), (q, (b, b_axis, b_var)) = sorted(swaps.items())
    indices = ref.indices or ()
    if a == b:  # (`B[k,k]`: a swap changes nothing)
        return ()
    if not (a_axis == b_var and b_axis == a_var and type(indices[p]) is ir.IndexVar
            and type(indices[q]) is ir.IndexVar):
        return ()
    names = [i.name if type(i) is ir.IndexVar else "" for i in indices]
    names[p], names[q] = b, a
    if not all(names):
        return ()
    return (Fix(f"Swap to `{ref.name}[{','.join(names)}]`",
                (TextEdit(moved_span(indices[p].span, delta), b),
                 TextEdit(moved_span(indices[q].span, delta), a))),)
