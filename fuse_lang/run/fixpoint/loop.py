"""Recursive groups run to a fixpoint (LANGUAGE.md §7): one loop, written once.

A group's rounds are of one of two kinds.  `Iteration` evaluates every
equation of the group again until the largest change is within the tolerance
(exactly 0 for Boolean tensors).  `SemiNaive`, for Boolean rules that only
join and union (then it is exact), joins only the facts that are new since
the last round.  Each kind is a loop state with `start`, `goes_on`, `round`
and `end`; what ended the loop comes back as numbers that `judge` turns into
the error (a traced loop cannot raise), so each message is written once.

How many rounds a group may take (`round_limit`) follows from the program
unless the caller set a limit: a Boolean group gains at least one tuple each
round that goes on, so it cannot take more rounds than it has tuples (the
product of its extents, summed over its tensors; a chain of N edges needs N
rounds); numeric recursion converges to a tolerance, and gets 1000 rounds.

The rounds run on concrete values (`Eager`: Python control flow; a delta
with nothing new is None and its joins are skipped; the known facts grow in
place) or traced into a graph (`Traced`: every value is a tensor, the loop
a backend while-loop or a Python loop around one compiled round); see
`Execution` for the drivers.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Protocol, Sequence, Union

from ...check import Analysis
from ...check.order import multiplied_members
from ...front import ir
from ..backends.base import Backend
from ..interpret.evaluate import EvaluationError
from ..sparse.value import SparseValue, is_sparse

# numeric recursion (not Boolean): rounds before "did not converge"
NUMERIC_ROUND_LIMIT = 1000
# what a group that ran out of rounds says to do, in the words of each way to run
RAISE_LIMIT = ("raise the limit (fuse run --max-iterations N, ExecutionConfig(max_iterations=N)) "
               "or check the recursion")
# a traced loop counts rounds in a 32-bit integer
TRACED_ROUND_LIMIT = 2**31 - 1


class Host(Protocol):
    """What the rounds read from the run they belong to."""

    analysis: Analysis
    backend: Backend
    values: dict[str, Any]

    def shape(self, name: str) -> tuple[int, ...]: ...

    def equations(self, name: str) -> list[int]: ...

    def contribution(self, k: int, shape: tuple[int, ...], fixed: dict[str, int] | None = None,
                     overrides: dict[int, Any] | None = None) -> Any: ...

    def combine(self, name: str, base: Any, parts: list[Any],
                equations: Sequence[int] | None = None) -> Any: ...

    def zeros_of(self, name: str) -> Any: ...


class Eager:
    """The rounds on concrete values, at the cost of one number a round read back."""

    skips_empty = True  # an empty delta is None: a semi-naive round skips what it reaches

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def nothing(self, shape: tuple[int, ...]) -> None:
        return None

    def add(self, total: Any, part: Any) -> Any:
        return part if total is None else total + part

    def empty(self, delta: Any) -> bool:
        return delta is None

    def new_facts(self, found: Any, known: Any) -> Any:
        return None if found is None else self.backend.new_facts(found, known)

    def owned(self, full: Any) -> Any:
        return self.backend.copy(full)  # later rounds add to it in place

    def grow(self, known: Any, new: Any) -> Any:
        return known if new is None else self.backend.add_fresh(known, new)

    def pending(self, deltas: Iterable[Any]) -> bool:
        return any(d is not None for d in deltas)

    def number(self, x: Any) -> float:
        # a torch tensor in a gradient's graph (training) is read without it
        return float(x.detach() if hasattr(x, "detach") else x)

    def finite(self, x: float) -> bool:
        return math.isfinite(x)

    def counter(self) -> int:
        return 0

    def infinite(self) -> float:
        return float("inf")


class Traced:
    """The rounds as tensor operations only, for a graph: no value is None and
    nothing is tested in Python."""

    skips_empty = False

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def nothing(self, shape: tuple[int, ...]) -> Any:
        return self.backend.zeros(shape)

    def add(self, total: Any, part: Any) -> Any:
        return total + part

    def empty(self, delta: Any) -> bool:
        return False

    def new_facts(self, found: Any, known: Any) -> Any:
        return self.backend.step(self.backend.where(known > 0, 0.0, found))

    def owned(self, full: Any) -> Any:
        return full

    def grow(self, known: Any, new: Any) -> Any:
        return known + new

    def pending(self, deltas: Iterable[Any]) -> Any:
        return self.backend.any_positive(list(deltas))

    def number(self, x: Any) -> Any:
        return x

    def finite(self, x: Any) -> Any:
        return self.backend.finite(x)

    def counter(self) -> Any:
        return self.backend.integer(0)

    def infinite(self) -> Any:
        return self.backend.asarray(float("inf"))


Arithmetic = Union[Eager, Traced]


class Iteration:
    """Every equation again each round.  State: (iteration, change, the change
    before it, the group's values)."""

    def __init__(self, host: Host, group: list[str], arithmetic: Arithmetic,
                 bases: dict[str, Any], max_iterations: int | None, tolerance: float) -> None:
        self.host = host
        self.group = group
        self.arithmetic = arithmetic
        self.bases = bases
        self.boolean = all(host.analysis.tensors[n].boolean for n in group)
        self.tolerance = 0.0 if self.boolean else tolerance
        self.shapes = {n: host.shape(n) for n in group}
        self.limit = round_limit(self.shapes, self.boolean, max_iterations)
        if isinstance(arithmetic, Traced):
            self.limit = min(self.limit, TRACED_ROUND_LIMIT)

    def start(self) -> tuple:
        start_values(self.host, self.group, self.bases)
        # two arrays, not one twice: a graph captured from a round (torch's) takes the
        # state's arrays as its inputs, and one array given twice became one input, so
        # each round's "change before" was the first round's inf
        return (self.arithmetic.counter(), self.arithmetic.infinite(),
                self.arithmetic.infinite(), {n: self.host.values[n] for n in self.group})

    def goes_on(self, state: tuple) -> Any:
        iteration, change = state[0], state[1]
        return (iteration < self.limit) & ((iteration == 0) | (
            (change > self.tolerance) & self.arithmetic.finite(change)))

    def round(self, state: tuple) -> tuple:
        """One round, reading the group from the state and the rest from the run."""
        host, backend = self.host, self.host.backend
        iteration, change, _, current = state
        host.values.update(current)
        if getattr(host, "schedules", None):  # `per=iteration` temperatures (run.schedules)
            host.advance_schedules(iteration)
        new = {n: host.combine(n, self.bases[n], [host.contribution(k, self.shapes[n])
                                                  for k in host.equations(n)],
                               equations=host.equations(n))
               for n in self.group}
        # one number per round: a value no longer finite makes it inf or nan
        step = self.arithmetic.number(backend.max_of(
            [round_change(host, n, new[n], current[n]) for n in self.group]))
        return iteration + 1, step, change, new

    @staticmethod
    def end(state: tuple) -> tuple[dict, dict]:
        iteration, change, before, current = state
        return current, {"iteration": iteration, "change": change, "before": before}

    def judge(self, outcome: dict[str, float]) -> None:
        names = ", ".join(self.group)
        iteration, change, before = outcome["iteration"], outcome["change"], outcome["before"]
        if iteration and not math.isfinite(change):
            rounds = int(iteration)
            last = (f" (the last change was {before:.3g} before that)"
                    if math.isfinite(before) else "")  # the first round has none before it
            raise EvaluationError(
                f"{names} did not converge: after {rounds} iteration{'' if rounds == 1 else 's'}"
                f" the values are no longer finite{last}; check the recursion"
                f"{self._started_infinite(rounds, change)}")
        if change > self.tolerance and self.boolean:  # (semi-naive's words)
            raise EvaluationError(f"{names} did not reach a fixpoint in {self.limit} round"
                                  f"{'' if self.limit == 1 else 's'} (the round limit; the "
                                  f"last round still changed it); {RAISE_LIMIT}")
        if change > self.tolerance:
            raise EvaluationError(f"{names} did not converge in {self.limit} iteration"
                                  f"{'' if self.limit == 1 else 's'} (the "
                                  f"last change was {change:.3g}); {RAISE_LIMIT}")


    def _started_infinite(self, rounds: int, change: float) -> str:
        """Why the first round of a group with `max=`/`min=` members can end
        non-finite: their infinite start (a max-product's -inf * 0, a sum member
        reading the start)."""
        tensors = self.host.analysis.tensors
        started = infinite_starts(self.host.analysis, self.group)
        if rounds != 1 or not started:
            return ""
        op = tensors[started[0]].op
        return (f" ({started[0]} starts from {START_OF[op]} for `{op}`, nothing derived yet: "
                f"{START_OF[op]} * 0 is NaN, and a sum member holds it as an infinity; "
                f"docs/language.md, \"Recursion\", says how to write these)")


class SemiNaive(Iteration):
    """Only the facts new since the last round are joined.  State: (round, whether
    new facts are pending, the known facts, the new facts)."""

    # set by a tracer (run.trace): watch(statement, the member whose delta it joins,
    # that delta, compute) runs each rule of a round and may record it
    watch: Callable[[int, str, Any, Callable[[], Any]], Any] | None = None

    def __init__(self, host: Host, group: list[str], arithmetic: Arithmetic,
                 bases: dict[str, Any], max_iterations: int | None, tolerance: float) -> None:
        super().__init__(host, group, arithmetic, bases, max_iterations, tolerance)
        members = set(group)
        statements = host.analysis.program.statements
        # per tensor: its rules and their reads of a group member
        self.recursive_refs = {
            n: [(k, ref) for k in host.equations(n)
                for ref in ir.refs(statements[k].rhs)  # type: ignore[union-attr]
                if ref.name in members] for n in group}
        # per member: the members with a rule that reads it (a round joins the new
        # facts of a few members of a large group: it visits their readers only)
        self.readers: dict[str, set[str]] = {n: set() for n in group}
        self.order = {n: i for i, n in enumerate(group)}  # (the rules run in the group's order)
        for n, refs in self.recursive_refs.items():
            for _k, ref in refs:
                self.readers[ref.name].add(n)

    def start(self) -> tuple:
        """Round 0: everything derivable from the bases."""
        host, arithmetic = self.host, self.arithmetic
        start_values(host, self.group, self.bases)
        full = {n: host.combine(n, self.bases[n], [host.contribution(k, self.shapes[n])
                                                   for k in self._first_round(n)],
                                equations=self._first_round(n))
                for n in self.group}
        delta = {n: arithmetic.new_facts(full[n], host.values[n]) for n in self.group}
        known = {n: arithmetic.owned(full[n]) for n in self.group}
        return arithmetic.counter(), arithmetic.pending(delta.values()), known, delta

    def goes_on(self, state: tuple) -> Any:
        return state[1] & (state[0] < self.limit)

    def round(self, state: tuple) -> tuple:
        host, arithmetic = self.host, self.arithmetic
        rounds, _, known, delta = state
        host.values.update(known)
        if arithmetic.skips_empty:  # eager: only the members new facts reach
            return self._eager_round(state)
        found = {}
        for n in self.group:
            total = arithmetic.nothing(self.shapes[n])
            for k, ref in self.recursive_refs[n]:
                if not arithmetic.empty(delta[ref.name]):
                    def rule(k: int = k, ref: ir.Ref = ref, shape: tuple = self.shapes[n]) -> Any:
                        return host.contribution(k, shape, overrides={id(ref): delta[ref.name]})
                    part = rule() if self.watch is None else \
                        self.watch(k, ref.name, delta[ref.name], rule)
                    total = arithmetic.add(total, part)
            found[n] = arithmetic.new_facts(total, known[n])
        grown = {n: arithmetic.grow(known[n], found[n]) for n in self.group}
        return rounds + 1, arithmetic.pending(found.values()), grown, found

    def _eager_round(self, state: tuple) -> tuple:
        """`round` where an empty delta is None: the rules that read new facts run,
        and only the members they derive are visited (a group of N relations in a
        cycle takes O(N) rounds that each add a few members' facts: visiting every
        member every round cost O(N^2) steps)."""
        host, arithmetic = self.host, self.arithmetic
        rounds, _, known, delta = state
        readers = self.readers
        touched = {n for m, new in delta.items() if new is not None for n in readers[m]}
        found = dict.fromkeys(self.group)  # None: nothing new
        grown = dict(known)
        for n in sorted(touched, key=self.order.__getitem__):  # (in the group's order)
            total = None
            for k, ref in self.recursive_refs[n]:
                if delta[ref.name] is not None:
                    def rule(k: int = k, ref: ir.Ref = ref, shape: tuple = self.shapes[n]) -> Any:
                        return host.contribution(k, shape, overrides={id(ref): delta[ref.name]})
                    part = rule() if self.watch is None else \
                        self.watch(k, ref.name, delta[ref.name], rule)
                    total = arithmetic.add(total, part)
            found[n] = new = arithmetic.new_facts(total, known[n])
            grown[n] = arithmetic.grow(known[n], new)
        return rounds + 1, any(found[n] is not None for n in touched), grown, found

    @staticmethod
    def end(state: tuple) -> tuple[dict, dict]:
        rounds, pending, known, delta = state
        # the facts the last round added (what the message names)
        added = sum((d.nnz if isinstance(d, SparseValue) else d.sum()
                     for d in delta.values() if d is not None), 0.0)
        return known, {"rounds": rounds, "pending": pending, "added": added}

    def judge(self, outcome: dict[str, float]) -> None:
        if outcome["pending"]:
            added = outcome.get("added", 0)
            raise EvaluationError(f"{', '.join(self.group)} did not reach a fixpoint in "
                                  f"{self.limit} round{'' if self.limit == 1 else 's'} (the "
                                  f"round limit; the last round added {int(added)} "
                                  f"fact{'' if added == 1 else 's'}); {RAISE_LIMIT}")

    def _first_round(self, name: str) -> list[int]:
        """The join rules of `name` that can derive anything in the first round: a
        rule joining a group member that starts empty derives nothing yet (its
        facts arrive as that member's delta in later rounds)."""
        empty = {n for n, base in self.bases.items() if base is None}
        statements = self.host.analysis.program.statements
        out = []
        for k in self.host.equations(name):
            rhs = statements[k].rhs  # type: ignore[union-attr]
            factors = rhs.factors if isinstance(rhs, ir.Product) else (rhs,)
            if not any(isinstance(f, ir.Ref) and f.name in empty for f in factors):
                out.append(k)
        return out


def rounds_for(host: Host, group: list[str], arithmetic: Arithmetic, bases: dict[str, Any],
               max_iterations: int | None, tolerance: float,
               strategy: str) -> Iteration:
    """The rounds of a group as its RunPlan decided (run.run_plan.Fixpoint): semi-naive
    (also a linear closure's rounds before its search), else naive.
    run.fixpoint.closure.rounds_for_run adds the graph search of a deep linear closure."""
    kind = SemiNaive if strategy in ("semi_naive", "closure") else Iteration
    return kind(host, group, arithmetic, {n: bases.get(n) for n in group},
                max_iterations, tolerance)


def round_limit(shapes: dict[str, tuple[int, ...]], boolean: bool,
                explicit: int | None) -> int:
    """The most rounds a group may take: the caller's limit when set; for a
    Boolean group one more than the tuples it can hold (exact integers: each
    round that goes on adds one at least, the last finds nothing new); for
    numeric recursion NUMERIC_ROUND_LIMIT."""
    if explicit is not None:
        return explicit
    if boolean:
        return sum(math.prod(shape) for shape in shapes.values()) + 1
    return NUMERIC_ROUND_LIMIT


def repeat(goes_on: Callable[[Any], Any], body: Callable[[Any], Any], state: Any,
           between: Callable[[], None] | None = None) -> Any:
    """The loop in Python (what a backend's `while_loop` is in a graph);
    `between` runs before each round (the run's time limit, a cancel)."""
    while goes_on(state):
        if between is not None:
            between()
        state = body(state)
    return state


# where a `max=`/`min=` group starts (docs/language.md, "Recursion"): nothing
# derived yet is the identity of its combine, as 0 is that of a sum and a union
START_OF = {"max=": -math.inf, "min=": math.inf}

# what a round changed in a cell that left its start (an infinity): a change that
# is never within the tolerance, and not the divergence an infinite change means
LEFT_ITS_START = 1e4  # (a finite number in every precision, fp16 too)


def infinite_starts(analysis: Analysis, group: Sequence[str]) -> list[str]:
    """The members of a group that start from their operator's infinity (-inf for
    `max=`, +inf for `min=`), in the group's order: not a `max=` member the group
    multiplies by another tensor (check.order.multiplied_members), which starts
    from 0."""
    tensors, statements = analysis.tensors, analysis.program.statements
    zero = multiplied_members(
        {n for n in group if tensors[n].op == "max=" and not tensors[n].boolean},
        [statements[k] for n in group for k in tensors[n].statements
         if isinstance(statements[k], ir.Equation)])
    return [n for n in group if tensors[n].op in START_OF and not tensors[n].boolean
            and n not in zero]


def start_values(host: Host, group: list[str], bases: dict[str, Any]) -> None:
    """A recursive group starts from its bases (or nothing derived: zeros, and
    -inf/+inf for `max=`/`min=`, but 0 for a `max=` member the group multiplies:
    check.order.multiplied_members), as 0/1 when Boolean."""
    backend = host.backend
    infinite = infinite_starts(host.analysis, group)
    for n in group:
        base = bases[n]
        info = host.analysis.tensors[n]
        if base is not None:
            host.values[n] = base
        elif n in infinite:
            host.values[n] = backend.zeros(host.shape(n)) + START_OF[info.op]
        else:
            host.values[n] = host.zeros_of(n)
        if info.boolean:
            host.values[n] = backend.step(host.values[n])


def round_change(host: Host, name: str, new: Any, old: Any) -> Any:
    """The largest |new - old| of a round; in a `max=`/`min=` tensor a cell still at
    its infinite start has not changed, and one that left it changed by
    LEFT_ITS_START, but a finite cell that reached the other infinity (`D max= 2 *
    D + 1` past the largest float) changed infinitely: the values are no longer
    finite, as in a sum (NaN stays NaN: a failure).  A cell that goes from its start
    straight to the other infinity (`-0.5 * D` of D's -inf) only left its start."""
    backend = host.backend
    info = host.analysis.tensors[name]
    if info.op not in START_OF or info.boolean:
        return backend.max_abs_difference(new, old)
    new, old = (backend.asarray(v) if is_sparse(v) else v for v in (new, old))
    gap = backend.where(new == old, 0.0, abs(new - old))
    gap = backend.where(gap == math.inf, LEFT_ITS_START, gap)
    overflow = (new == -START_OF[info.op]) & (abs(old) != math.inf)
    gap = backend.where(overflow, math.inf, gap)
    return backend.max_abs_difference(gap, backend.zeros(host.shape(name)))
