"""One run of a compiled program: groups in order, each evaluated or compiled.

The run walks the groups of the evaluation order that it needs (`scheduler`)
and evaluates each tensor from its base (`inputs`) and its equations
(`evaluate`); a recursive group runs to a fixpoint (`fixpoint`), a recurrence
over an offset or a virtual index step by step, in order.  A compiled run
traces straight segments and loops into the backend's graphs, once per shape
signature.  The run ends with the outputs, the queries' answers and the sinks
(`outputs`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..check import INPUT_KINDS
from ..front import ir
from ..front.let_blocks import user_name
from ..io.atomic_files import all_or_none
from ..io.source_files import FileProblem
from . import outputs
from .backends.base import Backend
from .combining import combined, combined_by_cell
from .compiled_run import CompiledRun
from .fixpoint.closure import rounds_for_run
from .fixpoint.loop import Eager, Iteration, SemiNaive, Traced, repeat
from .inputs import fact_cover, load_base
from .interpret.blocked import Blocking
from .interpret.evaluate import ConstantFolding, EvaluationError, Evaluator, equation_op, write_lhs
from .interpret.lhs import head_coverage, takes_no_value
from .interpret.monte_carlo import Sampler
from .limits import Checkpoint
from .memory import failure_words, guard_memory, kept_dense_words
from .recurrence import run_recurrence
from .results import FuseError, RunResult
from .run_plan import RECURRENCE, TENSOR, GroupPlan, RunPlan, Schedule
from .sparse.threads import using_threads
from .sparse.value import is_sparse
from .trace import Tracer


@dataclass
class RunCounters:
    """What a compiled program counts over its runs (read through CompiledProgram)."""

    # how many times a straight run of equations was traced into a graph; a
    # second run with inputs of the same shapes and dtypes adds none
    compilations: int = 0
    # how many runs the program has started: the step of `per=run` schedules
    runs: int = 0
    # per cache key of what ran: whether the cache's index knew it (run.cache)
    cache_entries: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSettings:
    """What a run reads of its compiled program besides the plan."""

    backend: Backend
    base_dir: Path
    memory_limit: int | None
    allow_outside_sinks: bool
    compiled: bool  # straight runs of equations and loops as the backend's graphs
    cache_root: Path | None  # the compiled-artifact cache (compiled runs; run.cache)
    counters: RunCounters


class RunCaches:
    """What the runs of one shape signature keep for the next: not decisions (those
    are the RunPlan's) but things made: compiled graphs, the values the program
    text alone fixes, folded constant subexpressions, the artifact cache's key."""

    def __init__(self) -> None:
        self.graphs: dict[tuple, Callable] = {}
        self.values: dict[str, Any] = {}  # RunPlan.constants, once computed
        self.folded: ConstantFolding | None = None
        self.cache_key: str | None = None  # run.cache: this signature's key
        self.cache_made_of: dict | None = None
        self.cache_noted = False
        # equation -> the cells its head writes; (tensor, given) -> its facts' cells
        self.coverage: dict[Any, Any] = {}


# What fails a run at one statement (located, not a traceback).  RuntimeError:
# what torch and XLA raise for a failure on the device (out of memory, say);
# MemoryError: an allocation the memory guard's estimate did not foresee.
RUN_FAILURES = (EvaluationError, FileProblem, FloatingPointError, ValueError, RuntimeError,
                MemoryError)



class Execution:
    def __init__(self, settings: RunSettings, plan: RunPlan, caches: RunCaches,
                 given: dict[str, Any], write_sinks: bool, native: bool = False,
                 checkpoint: Checkpoint | None = None, floats: Any = None,
                 temperatures: Mapping[str, Any] | None = None,
                 unrolled: Mapping[tuple[str, ...], int] | None = None) -> None:
        # the time limit and the caller's interrupt, checked between statements,
        # rounds and steps (None: unbounded, as inside a traced graph)
        self.check = checkpoint if checkpoint is not None and checkpoint.bounded else None
        self.settings = settings
        self.plan = plan
        self.caches = caches
        self.backend = settings.backend
        self.analysis = plan.analysis
        self.infos = plan.statements
        self.given = given
        self.write_sinks = write_sinks
        self.native = native
        self.values: dict[str, Any] = {}
        self.statements = plan.analysis.program.statements
        self.bases: dict[str, Any] | None = None  # inside a compiled graph: its bases
        self.floats = floats  # run.interpret.float_warnings.FloatWarnings, or None
        # `per=iteration` temperature schedules (run.schedules): a fixpoint sets
        # them before each round, so it runs round by round eagerly
        self.schedules: Mapping[str, Any] = temperatures or {}
        # rounds to unroll each fixpoint to instead of stopping on values (training
        # on jax, run.train.training); the rounds each fixpoint took (RunResult.rounds)
        self.unrolled = unrolled
        self.rounds: dict[tuple[str, ...], int] = {}
        # over a device mesh: puts a tensor's value where its sharding says
        self.place = self.backend.place if self.backend.sharded else None
        config = plan.config
        # trace=True: what each group and fixpoint round did (run.trace)
        self.tracer = Tracer(self.backend) if config.trace and not settings.compiled else None
        # block_size: large contractions run in blocks (run.interpret.blocked)
        self.block_size = config.block_size
        if self.block_size is not None and not isinstance(self.backend, Blocking):
            self.backend = Blocking(self.backend, self.block_size)
        # projection="monte_carlo": the run's draws and estimates (run.interpret.monte_carlo)
        self.sampler = Sampler(plan.sample_sites, config) \
            if config.projection == "monte_carlo" else None

    # ------------------------------------------------------------ driver
    def go(self) -> RunResult:
        schedule = self.plan.schedule(self.write_sinks)
        memory = schedule.memory
        try:
            guard_memory((memory.total, memory.largest, memory.peak), self.settings.memory_limit)
        except FuseError as err:
            raise FuseError(f"{err}{kept_dense_words(self.plan, schedule.needed)}") from None
        if self.write_sinks:  # every sink's path, before anything runs or is written
            outputs.check_sinks(self.analysis, self.settings.base_dir,
                                self.settings.allow_outside_sinks)
        started = time.perf_counter()
        with using_threads(self.plan.config.threads):
            if self.settings.compiled and self.sampler is None:  # draws run eagerly
                CompiledRun(self).go(schedule.segments)
            else:
                self._run_eagerly(schedule)
        if self.tracer is not None:  # the groups' time less the sources' loading in them
            self.tracer.phase("rules", time.perf_counter() - started
                              - self.tracer.phases.get("load", 0.0))
            started = time.perf_counter()
        result = RunResult(outputs.outputs(self.backend, self.values, self.plan.outputs,
                                           self.plan.constants, self.native))
        result.rounds = self.rounds
        if self.tracer is not None:
            result.trace = self.tracer.to_data()
        if self.sampler is not None:
            result.estimates = self.sampler.estimates
        with all_or_none():  # a sink that fails leaves every sink file as it was
            for k in self.plan.answers:
                stmt = self.statements[k]
                if self.floats is not None:
                    self.floats.computing = k
                if isinstance(stmt, ir.Query):
                    result.queries.append(outputs.answer(self.analysis, self.backend,
                                                         self.infos[k], self.values, stmt))
                elif self.write_sinks:
                    result.sinks.append(outputs.write(
                        self.analysis, self.backend, self.infos[k], self.values, stmt,
                        self.settings.base_dir, self.settings.allow_outside_sinks))
        if self.tracer is not None:  # (the trace as data was taken before: add the last)
            self.tracer.phase("write", time.perf_counter() - started)
            result.trace["phases"] = self.tracer.phase_list()
        return result

    def every_value(self) -> dict[str, Any]:
        """The groups of the run with sinks computed eagerly with nothing released
        and nothing written: every value, for provenance (run.why)."""
        schedule = self.plan.schedule(True)
        with using_threads(self.plan.config.threads):
            self._run_eagerly(dataclasses.replace(schedule, releases=MappingProxyType({})))
        return self.values

    def _run_eagerly(self, schedule: Schedule) -> None:
        release = schedule.releases
        groups = schedule.groups
        check = self.check
        tracer = self.tracer
        for number, group in enumerate(groups):
            if check is not None:
                check.at_group(number, len(groups), list(group.names))
            if tracer is None:
                self.one(group)
            else:
                tracer.timed_group(self.analysis, list(group.names),
                                   lambda group=group: self.one(group),
                                   self.values)
            for name in release.get(number, ()):
                del self.values[name]  # read by nothing later: its memory goes back now

    def one(self, group: GroupPlan) -> None:
        """Compute one group of the evaluation order (a tensor, or a recursive group).
        A tensor that the program text alone fixes (constants, masks, what is
        computed from them only) is computed once per shape signature."""
        name = group.names[0]
        if self.floats is not None:
            self.floats.computing = name  # whose line a NumPy warning names
        constant = self.bases is None and name in self.plan.constants
        if constant and name in self.caches.values:
            self.values[name] = self.caches.values[name]
            return
        try:  # as locating does, without a context manager on this hot path
            if group.single is not None:
                # one equation, nothing else: its contribution is the value (kept sparse
                # where the plan says so, as `combine` keeps it: `--representation C=sparse`)
                value = self.contribution(group.single, self.shape(name))
                if name in self.sparse_names() and not is_sparse(value):
                    value = self.backend.sparse_from(value)
                self.values[name] = value
            else:
                self._group(group)
        except FuseError:
            raise
        except RUN_FAILURES as err:
            raise self._located(group.names, err) from None
        if self.place is not None:
            self.placed(group.names)
        if constant:
            self.caches.values[name] = self.values[name]

    @contextlib.contextmanager
    def locating(self, group: Sequence[str]) -> Iterator[None]:
        """A failure while computing `group` says which statement it was."""
        try:
            yield
        except FuseError:
            raise
        except RUN_FAILURES as err:
            raise self._located(group, err) from None

    def _located(self, group: Sequence[str], err: Exception) -> FuseError:
        info = self.analysis.tensors[group[0]]
        stmt = self.statements[info.statements[0] if info.statements else 0]
        line, file, text = self._written_at(stmt)
        # (a block's local is named as written: `h`, not the run's `h@let.1`)
        words, demand = user_name(failure_words(err)), self.plan.demand
        if demand is not None:  # an adorned or magic relation: what it stands for
            asked = demand.asked_as(group[0])
            words += f" ({asked})" if asked else ""
        where = f"{file}, line {line}" if file else f"line {line}"
        return FuseError(f"{where}: `{text}`: {words}")

    def bases_of(self, groups: list[list[str]]) -> dict[str, Any]:
        """The inputs, sources, params and facts of the groups' tensors (those that
        have any), read now; a failure names the group."""
        bases = {}
        for group in groups:
            with self.locating(group):
                for name in group:
                    base, _ = self.base(name)
                    if base is not None:
                        bases[name] = base
        return bases

    def rounds_of(self, group: list[str], traced: bool, bases: dict[str, Any]) -> Iteration:
        arithmetic = (Traced if traced else Eager)(self.backend)
        plan = self.plan
        return rounds_for_run(self, group, arithmetic, bases, plan.max_iterations,
                              plan.tolerance, plan.fixpoints[tuple(group)])

    def unrolled_rounds(self, group: list[str]) -> int | None:
        """The rounds to unroll a fixpoint to (training on jax, which cannot
        differentiate a loop that stops on values)."""
        return self.unrolled.get(tuple(group)) if self.unrolled else None

    def _unrolled_loop(self, group: list[str]) -> None:
        """A fixpoint taken to its fixed number of rounds; a round after it converged
        changes nothing."""
        with self.locating(group):
            rounds = self.rounds_of(group, True, {n: self.base(n)[0] for n in group})
            state = self.backend.fixed_loop(rounds.goes_on, rounds.round, rounds.start(),
                                            self.unrolled_rounds(group))
        self.values.update(rounds.end(state)[0])

    def _fixpoint(self, group: list[str]) -> None:
        """A recursive group to its fixpoint, round by round in Python."""
        if self.unrolled_rounds(group):
            return self._unrolled_loop(group)
        rounds = self.rounds_of(group, False, {n: self.base(n)[0] for n in group})
        # overflow is detected by the rounds (values no longer finite), not warned about
        with np.errstate(over="ignore", invalid="ignore"):
            body = rounds.round if self.tracer is None else self.tracer.rounds(
                group, isinstance(rounds, SemiNaive), rounds.round,
                getattr(rounds, "searched", None),
                watched=(rounds, self._rule_lines(group)) if isinstance(rounds, SemiNaive)
                else None)
            state = repeat(rounds.goes_on, body, rounds.start(),
                           self.check.next_round if self.check is not None else None)
        members, outcome = rounds.end(state)
        rounds.judge(outcome)
        self.took(group, outcome)
        # a sparse relation that filled in ran its last rounds dense (run/sparse/products.py)
        self.values.update({n: self._represented(n, v) for n, v in members.items()})

    def _rule_lines(self, group: list[str]) -> dict[int, tuple[int, str | None]]:
        """The line of each equation of the group, and the imported file it is
        written in (None: the program's): a trace names rules by line."""
        out = {}
        for n in group:
            for k in self.equations(n):
                line, file, _ = self._written_at(self.analysis.program.statements[k])
                out[k] = (line, file)
        return out

    def _written_at(self, stmt: ir.Statement) -> tuple[int, str | None, str]:
        """Where a statement is written: its line, the imported file that holds it
        (None: the program's), its text; a rule demand mode added, where the user
        wrote the rule it comes from."""
        span, imports = stmt.span, self.analysis.imports
        file = imports.file_at(span.start) if imports is not None else None
        text = self.analysis.text[span.start:span.end]
        if file is not None:
            return file.parsed.lines.position(span.start - file.base)[0] + 1, file.shown, text
        line = self.analysis.lines.position(span.start)[0] + 1
        if self.plan.demand is not None:
            line, text = self.plan.demand.user_place(line, text)
        return line, None, text

    def took(self, group: list[str], outcome: dict) -> None:  # RunResult.rounds
        self.rounds[tuple(group)] = int(outcome.get("iteration", outcome.get("rounds", 0)))

    def placed(self, group: Sequence[str]) -> None:
        """The group's values put where their sharding over the mesh says."""
        assert self.place is not None
        with self.locating(group):
            for name in group:
                if name in self.values:
                    self.values[name] = self.place(name, self.values[name])

    # ------------------------------------------------------------ tensors
    def _group(self, group: GroupPlan) -> None:
        name = group.names[0]
        if group.how == TENSOR:
            self.values[name] = self.tensor(name)
        elif group.how == RECURRENCE:
            assert group.recurrence is not None
            if self.tracer is not None:
                self.tracer.recurrence(list(group.names), group.recurrence)
            run_recurrence(self, group.recurrence)
        else:
            self._fixpoint(list(group.names))

    def shape(self, name: str) -> tuple[int, ...]:
        shape = self.plan.shape(name)
        if shape is None:
            missing = [axis.index or str(k) for k, axis
                       in enumerate(self.analysis.tensors[name].axes)
                       if axis.extent is None and not axis.virtual]
            kind = self.analysis.tensors[name].kind
            give = (f"give `{name}` its value (fuse run --input {name}=FILE.npy, "
                    f"run(inputs={{...}})) or " if kind in INPUT_KINDS else "")
            declare = (f"declare it (`axis {missing[0]} = N`)" if not missing[0].isdigit()
                       else "give the program an equation or source that sizes it")
            which = (f"extent of `{name}`'s axis {missing[0]} is" if len(missing) == 1 else
                     f"extents of `{name}`'s axes {', '.join(missing)} are")
            raise EvaluationError(f"the {which} not known; {give}{declare}")
        return shape

    def base(self, name: str) -> tuple[Any, bool]:
        """Sources, inputs, params and facts of a tensor; and whether it has any."""
        if self.bases is not None:  # inside a compiled graph: they are its arguments
            return self.bases.get(name), name in self.bases
        started = time.perf_counter()
        base, has = load_base(self.analysis, self.backend, self.settings.base_dir, self.given,
                              name, self.shape(name), name in self.sparse_names(),
                              self.plan.param_starts.get(name))
        if self.tracer is not None:
            self.tracer.phase("load", time.perf_counter() - started)
        if has and self.place is not None:
            base = self.place(name, base)
        return base, has

    def sparse_names(self) -> frozenset[str]:
        """The tensors the plan keeps sparse (none inside a compiled graph: a jit
        graph wants fixed shapes, and a relation's non-zeros change every round;
        docs/scale.md)."""
        if self.bases is not None or self.settings.compiled:
            return frozenset()
        return self.plan.sparse

    def zeros_of(self, name: str) -> Any:
        """An all-zero value of `name`, in its planned representation."""
        if name in self.sparse_names():
            return self.backend.sparse_zeros(self.shape(name))
        return self.backend.zeros(self.shape(name))

    def _represented(self, name: str, value: Any) -> Any:
        """`value` in the plan's representation of `name` (a join of a sparse relation
        with a dense one is dense; a planned sparse tensor stays sparse)."""
        if name in self.sparse_names():
            return value if is_sparse(value) else self.backend.sparse_from(value)
        return self.backend.asarray(value) if is_sparse(value) else value

    def advance_schedules(self, iteration: int) -> None:
        """Before fixpoint round `iteration`: the `per=iteration` temperatures of it."""
        for name, schedule in self.schedules.items():
            self.values[name] = self.backend.asarray(schedule.value(int(iteration)))

    def equations(self, name: str) -> tuple[int, ...]:
        return self.plan.equations[name]

    def contribution(self, k: int, shape: tuple[int, ...], fixed: dict[str, int] | None = None,
                     overrides: dict[int, Any] | None = None, skip: int | None = None) -> Any:
        """What equation `k` adds to its tensor (`fixed`: at one step of a recurrence;
        `overrides`: with some reads replaced, a semi-naive delta say)."""
        if self.sampler is not None and k in self.sampler.sites and not fixed \
                and not overrides:
            return self.sampler.estimate(self, k, shape)
        info = self.infos[k]
        stmt = info.stmt
        assert isinstance(stmt, ir.Equation)
        folded = None
        if self.bases is None and not fixed and not overrides:  # eager, not a row or a delta
            folded = self.caches.folded
            if folded is None:
                folded = self.caches.folded = ConstantFolding(self.plan.constants)
        ev = Evaluator(self.backend, self.analysis, info, self.values, fixed, overrides, folded)
        value = ev.scope(stmt.rhs, 0)
        return write_lhs(self.backend, self.analysis, info, value, shape, equation_op(stmt),
                         fixed, skip, sparse=stmt.lhs.name in self.sparse_names())

    def combine(self, name: str, base: Any, parts: list[Any], row: bool = False,
                equations: Sequence[int] | None = None) -> Any:
        """A tensor's base and its equations' contributions, by its operator.  `row`:
        one step's row of it (a recurrence), which is not the tensor: dense.
        `equations`: the statements `parts` come from, where they are whole
        tensors: `max=`, `min=` and `avg=` then combine each cell over the
        equations whose heads write it (head_coverage)."""
        info = self.analysis.tensors[name]
        op = info.op or "="
        # (one equation alone writes 0 where its head does not: nothing to combine)
        covers = [self.coverage(k, name) for k in equations] \
            if equations is not None and not row and op in ("max=", "min=", "avg=") \
            and len(parts) + (base is not None) > 1 else []
        base_cover = self.coverage(None, name) if covers and base is not None else None
        if base_cover is not None or any(c is not None for c in covers):
            total = combined_by_cell(self.backend, op, base, parts, covers, base_cover)
        else:
            total = combined(self.backend, op, base, parts)
        if total is None:
            total = self.zeros_of(name)
        if info.boolean:
            total = self.backend.step(total)
        if row:
            return self.backend.asarray(total) if is_sparse(total) else total
        if self.sparse_names():
            total = self._represented(name, total)
        return total

    def coverage(self, k: int | None, name: str) -> Any:
        """The cells of `name` equation `k` writes (head_coverage), or for None its
        facts (fact_cover, as its base): None for all.  Made once per shapes, not
        in every round of a fixpoint."""
        cache = self.caches.coverage
        key = k if k is not None else (name, name in self.given)
        if key not in cache:
            if k is not None and takes_no_value(self.infos[k]):  # max= over no positions
                cache[key] = np.zeros(self.shape(name), dtype=bool)
            else:
                cache[key] = head_coverage(self.analysis, self.infos[k], self.shape(name)) \
                    if k is not None else fact_cover(self.analysis, self.given, name,
                                                     self.shape(name))
        return cache[key]

    def tensor(self, name: str) -> Any:
        shape = self.shape(name)
        base, _ = self.base(name)
        if name in self.given:
            return base
        equations = self.equations(name)
        parts = [self.contribution(k, shape) for k in equations]
        return self.combine(name, base, parts, equations=equations)
