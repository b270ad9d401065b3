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
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from ..check import Analysis
from ..front import ir
from . import outputs, scheduler
from .fixpoint.closure import rounds_for_run
from .interpret.evaluate import (ConstantFolding, EvaluationError, Evaluator, StatementInfo,
    equation_op, write_lhs)
from ..io.files import FileProblem
from .fixpoint.loop import Eager, Iteration, SemiNaive, Traced, repeat
from .inputs import load_base
from .interpret.lhs import put_row
from .limits import Checkpoint
from .memory import guard_memory
from ..plan.representation import representations
from .interpret.blocked import Blocking
from .cache import EXPORT_FOLDER
from .interpret.monte_carlo import Sampler
from .results import FuseError, RunResult
from .sparse.csr import is_sparse
from .trace import Tracer


class RunSettings(Protocol):
    """What a run reads of its compiled program (`program.CompiledProgram`, which
    imports this module: named by its shape here, so there is no import circle)."""
    backend: Any
    base_dir: Path
    memory_limit: int | None
    allow_outside_sinks: bool
    max_iterations: int | None
    tolerance: float
    compiled: bool
    compilations: int
    representation: dict[str, str]  # per-tensor overrides of the plan's dense/sparse

# What fails a run at one statement (located, not a traceback).  RuntimeError:
# what torch and XLA raise for a failure on the device (out of memory, say).
RUN_FAILURES = (EvaluationError, FileProblem, FloatingPointError, ValueError, RuntimeError)


class Execution:
    def __init__(self, program: RunSettings, analysis: Analysis,
                 infos: dict[int, StatementInfo], given: dict[str, Any],
                 write_sinks: bool, memo: dict | None = None, native: bool = False,
                 checkpoint: Checkpoint | None = None) -> None:
        # the time limit and the caller's interrupt, checked between statements,
        # rounds and steps (None: unbounded, as inside a traced graph)
        self.check = checkpoint if checkpoint is not None and checkpoint.bounded else None
        self.memo = memo if memo is not None else {}
        self.program = program
        self.backend = program.backend
        self.analysis = analysis
        self.infos = infos
        self.given = given
        self.write_sinks = write_sinks
        self.native = native
        self.values: dict[str, Any] = {}
        self.statements = analysis.program.statements
        self.bases: dict[str, Any] | None = None  # inside a compiled graph: its bases
        self.floats: Any = None  # run.float_warnings.FloatWarnings, set by the program
        # `per=iteration` temperature schedules (run.schedules), set by the program:
        # a fixpoint sets them before each round, so it runs round by round eagerly
        self.schedules: dict[str, Any] = {}
        # over a device mesh: puts a tensor's value where its sharding says
        self.place: Callable[[str, Any], Any] | None = getattr(self.backend, "place", None)
        config = getattr(program, "config", None)
        # trace=True: what each group and fixpoint round did (run.trace)
        self.tracer = Tracer(self.backend) if config is not None and config.trace \
            and not program.compiled else None
        # block_size: large contractions run in blocks (run.blocked)
        self.block_size = config.block_size if config is not None else None
        if self.block_size is not None and not isinstance(self.backend, Blocking):
            self.backend = Blocking(self.backend, self.block_size)
        # projection="monte_carlo": the run's draws and estimates (run.monte_carlo)
        self.sampler = Sampler(analysis, config) if config is not None and \
            config.projection == "monte_carlo" else None

    # ------------------------------------------------------------ driver
    def go(self) -> RunResult:
        sinks = self.write_sinks
        needed = self.memo_of(("needed", sinks), lambda: scheduler.needed(
            self.analysis, self._dependencies(), sinks))
        self.memo_of(("guard", sinks), lambda: guard_memory(
            self.analysis, needed, getattr(self.backend, "itemsize", 4),
            self.program.memory_limit, self._sparse_estimates(), self.block_size) or True)
        if sinks:  # every sink's path, before anything runs or is written (not memoised:
            # the folder may change between runs)
            outputs.check_sinks(self.analysis, self.program.base_dir,
                                self.program.allow_outside_sinks)
        groups = self.memo_of(("groups", sinks), lambda: [
            (list(g), scheduler.single_equation(self.analysis, list(g), self.given,
                                                self.equations(g[0])))
            for g in self.analysis.order if any(n in needed for n in g)])
        if self.program.compiled and self.sampler is None:  # draws run eagerly
            self._run_compiled(groups)
        else:
            self._run_eagerly(groups)
        names = self.memo_of("outputs", lambda: outputs.output_names(
            self.analysis, self._dependencies()))
        result = RunResult(outputs.outputs(self.backend, self.values, names, self._constants(),
                                           self.native))
        if self.tracer is not None:
            result.trace = self.tracer.to_data()
        if self.sampler is not None:
            result.estimates = self.sampler.estimates
        answers = self.memo_of("answers", lambda: [
            (k, s) for k, s in enumerate(self.statements) if isinstance(s, (ir.Query, ir.Sink))])
        for k, stmt in answers:
            if self.floats is not None:
                self.floats.computing = k
            if isinstance(stmt, ir.Query):
                result.queries.append(outputs.answer(self.analysis, self.backend, self.infos[k],
                                                     self.values, stmt))
            elif self.write_sinks:
                result.sinks.append(outputs.write(
                    self.analysis, self.backend, self.infos[k], self.values, stmt,
                    self.program.base_dir, self.program.allow_outside_sinks))
        return result

    def _run_eagerly(self, groups: list[scheduler.Group]) -> None:
        release = self.memo_of(("release", self.write_sinks), lambda: scheduler.releases(
            groups, self._dependencies(), set(scheduler.roots(self.analysis, sinks=True))))
        check = self.check
        tracer = self.tracer
        for number, (group, single) in enumerate(groups):
            if check is not None:
                check.at_group(number, len(groups), group)
            if tracer is None:
                self._one(group, single)
            else:
                tracer.timed_group(self.analysis, group, lambda: self._one(group, single),
                                   self.values)
            for name in release.get(number, ()):
                del self.values[name]  # read by nothing later: its memory goes back now

    def _run_compiled(self, groups: list[scheduler.Group]) -> None:
        segments = self.memo_of(("segments", self.write_sinks), lambda: scheduler.segments(
            groups, self.analysis.recursive))
        for number, (straight, items) in enumerate(segments):
            if self.check is not None:
                self.check.at_group(number, len(segments), [n for g, _ in items for n in g])
            if straight:
                self._compiled_segment(("segment", self.write_sinks, number), items)
                continue
            for group, single in items:
                if (self.schedules or self._unrolled(group)) and self._looped(group):
                    self._one(group, single)  # rounds with their own temperatures, unrolled
                elif hasattr(self.backend, "while_loop") and self._looped(group):
                    self._compiled_loop(("loop", self.write_sinks, number), group)
                elif self._looped(group):
                    self._compiled_rounds(("round", self.write_sinks, number), group)
                else:
                    self._one(group, single)

    def memo_of(self, key: Any, compute: Callable[[], Any]) -> Any:
        """What depends on shapes only is derived once per input-shape signature."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def _dependencies(self) -> dict[str, set[str]]:
        return self.memo_of("dependencies", lambda: scheduler.dependencies(self.analysis))

    def _constants(self) -> set[str]:
        return self.memo_of("constants", lambda: scheduler.constants(
            self.analysis, self._dependencies(), self.given))

    def _one(self, group: list[str], single: int | None) -> None:
        """Compute one group of the evaluation order (a tensor, or a recursive group).
        A tensor that the program text alone fixes (constants, masks, what is
        computed from them only) is computed once per shape signature."""
        if self.floats is not None:
            self.floats.computing = group[0]  # whose line a NumPy warning names
        constant = self.bases is None and group[0] in self._constants()
        if constant and ("value", group[0]) in self.memo:
            self.values[group[0]] = self.memo["value", group[0]]
            return
        try:  # as _locating does, without a context manager on this hot path
            if single is not None:
                # one equation, nothing else: its contribution is the value
                self.values[group[0]] = self.contribution(single, self.shape(group[0]))
            else:
                self._group(group)
        except FuseError:
            raise
        except RUN_FAILURES as err:
            raise self._located(group, err) from None
        if self.place is not None:
            self._placed(group)
        if constant:
            self.memo["value", group[0]] = self.values[group[0]]

    @contextlib.contextmanager
    def _locating(self, group: list[str]) -> Iterator[None]:
        """A failure while computing `group` says which statement it was."""
        try:
            yield
        except FuseError:
            raise
        except RUN_FAILURES as err:
            raise self._located(group, err) from None

    def _located(self, group: list[str], err: Exception) -> FuseError:
        info = self.analysis.tensors[group[0]]
        stmt = self.statements[info.statements[0] if info.statements else 0]
        line = self.analysis.lines.position(stmt.span.start)[0] + 1
        text = self.analysis.text[stmt.span.start:stmt.span.end]
        return FuseError(f"line {line}: `{text}`: {err}")

    # ------------------------------------------------------- compiled graphs
    def _compiled_segment(self, key: tuple, items: list[scheduler.Group]) -> None:
        """A straight run of non-recursive tensors as one compiled graph."""
        def io() -> tuple[list[str], list[str]]:
            constants = self._constants()
            names = [group[0] for group, _ in items]
            computed = {n for n in names if self.equations(n) and n not in constants}
            return scheduler.segment_io(names, self._dependencies(),
                                        set(scheduler.roots(self.analysis, sinks=True)), computed)

        reads, keeps = self.memo_of(("segment io",) + key, io)

        def segment(run: Execution, extra: dict) -> dict:
            for group, single in items:
                run._one(group, single)
            return {name: run.values[name] for name in keeps}

        graph = self._graph(key, segment)
        bases = self._bases_of([group for group, _ in items])
        self.values.update(graph({n: self.values[n] for n in reads if n in self.values},
                                 {"bases": bases}))

    def _graph(self, key: tuple, body: Callable[["Execution", dict], Any]) -> Callable:
        """`body(run, extra)` compiled by the backend, once per shape signature.
        Whatever comes from outside the program text (inputs, source files,
        params) is an argument of the graph (`extra["bases"]`), never a constant
        in it: a second run with new values reuses the graph and computes with the
        new values.  The graph's own run reads only its arguments."""
        program, analysis, infos, given, memo = (self.program, self.analysis, self.infos,
                                                 self.given, self.memo)

        def traced(values: dict, extra: dict) -> Any:
            run = Execution(program, analysis, infos, given, False, memo)
            run.values = dict(values)
            run.bases = extra["bases"]
            return body(run, extra)

        def count() -> None:
            program.compilations += 1

        def compiled() -> Callable:
            artifact = self._artifact(key)
            if artifact is None:
                return self.backend.compile_segment(traced, count)
            return self.backend.compile_segment(traced, count, artifact=artifact)

        return self.memo_of(key, compiled)

    def _artifact(self, key: tuple) -> Path | None:
        """Where a graph is kept for later processes (cache_dir on a backend that
        stores its graphs: jax), named by the program's cache key and the graph's
        place in the run; None: not kept (no cache_dir, a mesh, another backend)."""
        root = getattr(self.program, "cache_root", None)
        program_key = self.memo.get("cache key")
        if root is None or program_key is None or self.place is not None \
                or not getattr(self.backend, "exports_segments", False):
            return None
        return root / EXPORT_FOLDER / f"{program_key}-{'-'.join(map(str, key))}"

    def _bases_of(self, groups: list[list[str]]) -> dict[str, Any]:
        """The inputs, sources, params and facts of the groups' tensors (those that
        have any), read now; a failure names the group."""
        bases = {}
        for group in groups:
            with self._locating(group):
                for name in group:
                    base, _ = self.base(name)
                    if base is not None:
                        bases[name] = base
        return bases

    def _looped(self, group: list[str]) -> bool:
        """A recursive group that runs to a fixpoint (not a recurrence in order)."""
        return self.memo_of(("looped", tuple(group)), lambda: len(group) > 1 or (
            group[0] in self.analysis.recursive and self._sequential_var(group[0]) is None))

    def _rounds(self, group: list[str], traced: bool, bases: dict[str, Any]) -> Iteration:
        arithmetic = (Traced if traced else Eager)(self.backend)
        config = getattr(self.program, "config", None)
        return rounds_for_run(self, group, arithmetic, bases, self.program.max_iterations,
                          self.program.tolerance,
                          config.fixpoint if config is not None else "semi_naive")

    def _unrolled(self, group: list[str]) -> int | None:
        """The rounds to unroll a fixpoint to (program.unrolled_rounds, set by training
        on jax, which cannot differentiate a loop that stops on values)."""
        unrolled = getattr(self.program, "unrolled_rounds", None)
        return unrolled.get(tuple(group)) if unrolled else None

    def _unrolled_loop(self, group: list[str]) -> None:
        """A fixpoint taken to its fixed number of rounds; a round after it converged
        changes nothing."""
        with self._locating(group):
            rounds = self._rounds(group, True, {n: self.base(n)[0] for n in group})
            state = self.backend.fixed_loop(rounds.goes_on, rounds.round, rounds.start(),
                                            self._unrolled(group))
        self.values.update(rounds.end(state)[0])

    def _fixpoint(self, group: list[str]) -> None:
        """A recursive group to its fixpoint, round by round in Python."""
        if self._unrolled(group):
            return self._unrolled_loop(group)
        rounds = self._rounds(group, False, {n: self.base(n)[0] for n in group})
        # overflow is detected by the rounds (values no longer finite), not warned about
        with np.errstate(over="ignore", invalid="ignore"):
            body = rounds.round if self.tracer is None else self.tracer.rounds(
                group, isinstance(rounds, SemiNaive), rounds.round,
                getattr(rounds, "searched", None))
            state = repeat(rounds.goes_on, body, rounds.start(),
                           self.check.next_round if self.check is not None else None)
        members, outcome = rounds.end(state)
        rounds.judge(outcome)
        self._took(group, outcome)
        self.values.update(members)

    def _compiled_loop(self, key: tuple, group: list[str]) -> None:
        """A fixpoint as one compiled graph with the loop inside it (a framework
        while-loop: no round trip to Python between rounds)."""
        bases = self._bases_of([group])
        with self._locating(group):
            for name in group:
                self.shape(name)  # an unknown extent is reported here, located

        def loop(run: Execution, extra: dict) -> tuple[dict, dict]:
            with run._locating(group):
                rounds = run._rounds(group, True, {n: run.base(n)[0] for n in group})
                state = run.backend.while_loop(rounds.goes_on, rounds.round, rounds.start())
                return rounds.end(state)

        members, outcome = self._graph(key, loop)(dict(self.values), {"bases": bases})
        self._finish_loop(self._rounds(group, True, bases), members, outcome)

    def _compiled_rounds(self, key: tuple, group: list[str]) -> None:
        """A fixpoint on a backend that compiles graphs but not loops (torch): one
        round is the compiled graph, the loop runs here and reads one flag a round."""
        bases = self._bases_of([group])
        with self._locating(group):
            rounds = self._rounds(group, True, bases)
            state = rounds.start()
        outside = {n: v for n, v in self.values.items() if n not in group}

        def one_round(run: Execution, extra: dict) -> tuple:
            inner = run._rounds(group, True, {n: run.base(n)[0] for n in group})
            return inner.round(extra["state"])

        graph = self._graph(key, one_round)
        with self._locating(group):
            state = repeat(lambda st: bool(rounds.goes_on(st)),
                           lambda st: graph(outside, {"bases": bases, "state": st}), state,
                           self.check.next_round if self.check is not None else None)
        self._finish_loop(rounds, *rounds.end(state))

    def _finish_loop(self, rounds: Iteration, members: dict, outcome: dict) -> None:
        with self._locating(rounds.group):
            rounds.judge({k: float(v) for k, v in outcome.items()})
        self._took(rounds.group, outcome)
        self.values.update(members)
        if self.place is not None:
            self._placed(rounds.group)

    def _took(self, group: list[str], outcome: dict) -> None:  # for training on jax
        taken = getattr(self.program, "rounds_taken", None)
        if taken is not None:
            taken[tuple(group)] = int(outcome.get("iteration", outcome.get("rounds", 0)))

    def _placed(self, group: list[str]) -> None:
        """The group's values put where their sharding over the mesh says."""
        assert self.place is not None
        with self._locating(group):
            for name in group:
                if name in self.values:
                    self.values[name] = self.place(name, self.values[name])

    # ------------------------------------------------------------ tensors
    def _group(self, group: list[str]) -> None:
        name = group[0]
        if len(group) == 1 and name not in self.analysis.recursive:
            self.values[name] = self._tensor(name)
            return
        if len(group) == 1:
            recurrence = self._sequential_var(name)
            if recurrence is not None:
                self.values[name] = self._recurrence(name, *recurrence)
                return
        self._fixpoint(group)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.memo_of(("shape", name), lambda: self._shape_of(name))

    def _shape_of(self, name: str) -> tuple[int, ...]:
        tensor = self.analysis.tensors[name]
        if any(e is None for e in tensor.shape):
            missing = [axis.index or str(k) for k, axis in enumerate(tensor.axes)
                       if axis.extent is None and not axis.virtual]
            raise EvaluationError(f"the extent of `{name}`'s axis {', '.join(missing)} is not "
                                  f"known")
        return tuple(int(e) for e in tensor.shape)  # type: ignore[arg-type]

    def base(self, name: str) -> tuple[Any, bool]:
        """Sources, inputs, params and facts of a tensor; and whether it has any."""
        if self.bases is not None:  # inside a compiled graph: they are its arguments
            return self.bases.get(name), name in self.bases
        base, has = load_base(self.analysis, self.backend, self.program.base_dir, self.given,
                              name, self.shape(name), name in self.sparse_names())
        if has and self.place is not None:
            base = self.place(name, base)
        return base, has

    def sparse_names(self) -> frozenset[str]:
        """The tensors the plan keeps sparse (none on a backend without sparse support,
        nor in a compiled run: a jit graph wants fixed shapes, and a relation's
        non-zeros change every round; docs/scale.md)."""
        def decide() -> frozenset[str]:
            if not getattr(self.backend, "sparse", False) or self.bases is not None \
                    or self.program.compiled or self.place is not None:  # or sharded
                return frozenset()
            relations = getattr(self.backend, "sparse_relations", False)  # 3 axes or more
            return frozenset(n for n, r in self._representations().items()
                             if r.kind == "sparse" and (relations or len(self.shape(n)) == 2))

        return self.memo_of("sparse names", decide)

    def _representations(self) -> dict:
        return self.memo_of("representations", lambda: representations(
            self.analysis, self.program.representation))

    def _sparse_estimates(self) -> dict[str, int | None]:
        """The sparse tensors' estimated non-zeros (for the memory guard)."""
        names = self.sparse_names()
        if not names:
            return {}
        chosen = self._representations()
        return {n: chosen[n].nonzeros for n in names}

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

    def equations(self, name: str) -> list[int]:
        return self.memo_of(("equations", name),
                            lambda: scheduler.equations_of(self.analysis, name))

    def _sequential_var(self, name: str) -> tuple[str, int, bool] | None:
        return scheduler.sequential_var(self.analysis, name, self.equations(name))

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
            folded = self.memo_of("folded", lambda: ConstantFolding(self._constants()))
        ev = Evaluator(self.backend, self.analysis, info, self.values, fixed, overrides, folded)
        value = ev.scope(stmt.rhs, 0)
        return write_lhs(self.backend, self.analysis, info, value, shape, equation_op(stmt),
                         fixed, skip)

    def combine(self, name: str, base: Any, parts: list[Any]) -> Any:
        """A tensor's base and its equations' contributions, by its operator."""
        backend = self.backend
        info = self.analysis.tensors[name]
        op = info.op or "="
        total = base
        for part in parts:
            if total is None:
                total = part
            elif op == "max=":
                total = backend.maximum(total, part)
            elif op == "min=":
                total = backend.minimum(total, part)
            else:
                total = total + part
        if op == "avg=" and len(parts) > 1:
            total = total / len(parts)
        if total is None:
            total = self.zeros_of(name)
        if info.boolean:
            total = backend.step(total)
        if self.sparse_names():
            total = self._represented(name, total)
        return total

    def _tensor(self, name: str) -> Any:
        shape = self.shape(name)
        base, _ = self.base(name)
        if name in self.given:
            return base
        parts = [self.contribution(k, shape) for k in self.equations(name)]
        return self.combine(name, base, parts)

    def _recurrence(self, name: str, var: str, position: int, virtual: bool) -> Any:
        """A recurrence over `var`, step by step: over a virtual index the whole
        tensor is the state; over an offset index, row by row, in order."""
        backend = self.backend
        shape = self.shape(name)
        equations = self.equations(name)
        base, _ = self.base(name)
        extent = next((self.infos[k].extents[var] for k in equations
                       if self.infos[k].extents.get(var) is not None), None)
        if extent is None:
            raise EvaluationError(f"the number of steps (the extent of `{var}`) is not known")
        if virtual:
            state = base if base is not None else backend.zeros(shape)
            check = self.check
            for step in range(extent):
                if check is not None:
                    check.next_round()
                self.values[name] = state
                parts = [self.contribution(k, shape, {var: step}) for k in equations]
                state = self.combine(name, None, parts)
            return state
        # an equation writing `var`'s position applies at every step; one writing a
        # constant there (`A[0,s] = Init[s]`) applies at that step only
        current = backend.to_numpy(base).copy() if base is not None else np.zeros(shape)
        row_shape = shape[:position] + shape[position + 1:]
        at_step: list[tuple[int, int | None]] = []
        for k in equations:
            stmt = self.statements[k]
            assert isinstance(stmt, ir.Equation)
            index = (stmt.lhs.indices or ())[position]
            if isinstance(index, ir.IndexVar) and index.name == var:
                at_step.append((k, None))
            elif isinstance(index, ir.IndexConst) and isinstance(index.value, int):
                at_step.append((k, index.value))
            else:
                raise EvaluationError(f"in a recurrence over `{var}`, each equation of "
                                      f"`{name}` writes `{var}` or a constant position there")
        check = self.check
        # torch and jax: rows are put in by arithmetic on their tensors, so that a
        # gradient flows through the recurrence (training); NumPy writes in place
        functional = backend.name != "numpy"
        value = backend.asarray(current)
        for step in range(extent):
            if check is not None:
                check.next_round()
            self.values[name] = value if functional else backend.asarray(current)
            parts = [self.contribution(k, row_shape, {var: step} if only is None else None,
                                       skip=position)
                     for k, only in at_step if only is None or only == step]
            if not parts:
                continue
            row = self.combine(name, None, parts)
            if functional:
                value = put_row(backend, value, row, shape, position, step)
            else:
                current[(slice(None),) * position + (step,)] = backend.to_numpy(row)
        return value if functional else backend.asarray(current)

