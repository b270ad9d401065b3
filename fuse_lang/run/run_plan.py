"""The run's plan: everything a run decides from shapes, made once per input-shape
signature, typed and immutable.

`plan_run` builds a `RunPlan` from one analysis (the program's, or its analysis
with the given inputs' shapes), the configuration and what the backend can do
(`Abilities`).  The run (`execution.Execution`) executes it and decides nothing
else; `fuse explain` renders the same object (`CompiledProgram.run_plan()`), so
the plan that is printed is the plan that runs.

What a `RunPlan` holds:
- per tensor: its shape, its equations, its representation (dense or sparse,
  with the planner's reason; `sparse`: those kept sparse on this backend);
- what the program text alone fixes (`constants`), what each tensor reads
  (`dependencies`), the outputs and the statements that answer queries or
  write sinks;
- per setting of `write_sinks`, a `Schedule`: the tensors needed, the groups of
  the evaluation order with how each is computed (one equation, a tensor, a
  recurrence, a fixpoint and its strategy), when each intermediate is released,
  the straight segments of a compiled run with what each reads and hands back,
  and the memory estimate the guard compares with the limit;
- per equation, the planner's contractions (`contractions`: einsum spec, path
  and cost, plan.planner), the Monte Carlo sites, the temperature schedules, and
  the demand rewrite of bound queries;
- per param, how it starts (`param_starts`: initialiser, role and fans).

Parts that cost time and that a run may not need (the schedules, the planner's
contractions) are made on first read and then kept: the object never changes.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Collection, Mapping

from ..check import Analysis
from ..check.param_roles import ParamStart, param_starts
from ..check.recurrences import Recurrence
from ..front import ir
from ..plan.config import ExecutionConfig, FixpointChoice, fixpoint_choice, recursion_as_run
from ..plan.demand import DemandPlan
from ..plan.planner import ProgramPlan, plan_program
from ..plan.representation import Representation, representations
from ..plan.sampling import SampleSite, sample_sites
from . import scheduler
from .interpret.statement import StatementInfo, StatementInfos
from .schedules import Schedule as Temperature, schedules_of

if TYPE_CHECKING:
    from .backends.base import Backend

EQUATION, TENSOR, RECURRENCE, FIXPOINT = "equation", "tensor", "recurrence", "fixpoint"
# how a group runs to its fixpoint: only the new facts joined each round (exact for
# Boolean joins and unions), every rule every round, or semi-naive rounds that a
# graph search finishes when the run is eager (a deep linear closure)
SEMI_NAIVE, NAIVE, CLOSURE = "semi_naive", "naive", "closure"


@dataclass(frozen=True)
class Abilities:
    """What the run's backend can do, as far as the plan depends on it."""

    backend: str  # its name: "numpy", "torch", "jax"
    sparse: bool  # keeps 2-D relations sparse
    sparse_relations: bool  # and relations of 3 axes or more
    compiled: bool  # this program's runs are compiled graphs
    while_loop: bool  # a compiled graph can hold a loop (jax)
    sharded: bool  # placed over a device mesh
    exports_segments: bool  # its compiled graphs can be kept as files (run.cache)
    itemsize: int  # bytes per element of a dense tensor

    @classmethod
    def of(cls, backend: "Backend", compiled: bool) -> "Abilities":
        # half precision keeps every tensor dense: scipy.sparse and torch's sparse
        # kernels have no fp16/bf16 (docs/scale.md)
        sparse = backend.sparse and backend.itemsize >= 4
        return cls(backend.name, sparse, sparse and backend.sparse_relations, compiled,
                   backend.compiles_loops, backend.sharded, backend.exports_segments,
                   backend.itemsize)


@dataclass(frozen=True)
class GroupPlan:
    """One group of the evaluation order and how the run computes it."""

    names: tuple[str, ...]
    how: str  # EQUATION (its one equation is its value), TENSOR, RECURRENCE, FIXPOINT
    single: int | None  # EQUATION: the statement of that equation
    recurrence: Recurrence | None  # RECURRENCE: its steps (check.recurrences)
    strategy: str | None  # FIXPOINT: SEMI_NAIVE, NAIVE or CLOSURE (RunPlan.fixpoints)

    @property
    def looped(self) -> bool:
        """Runs to a fixpoint (not a recurrence in order, not one tensor)."""
        return self.how == FIXPOINT


# how a recursive group runs to its fixpoint (plan.config.fixpoint_choice)
Fixpoint = FixpointChoice


@dataclass(frozen=True)
class Segment:
    """A compiled run's piece: a straight run of non-recursive groups (one graph,
    reading `reads` from earlier pieces and handing back `keeps`), or one group."""

    straight: bool
    groups: tuple[GroupPlan, ...]
    reads: tuple[str, ...] = ()
    keeps: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryEstimate:
    """The needed tensors' bytes, the largest of them, and the largest intermediate
    of one equation (bytes, tensor): shapes only (run.memory)."""

    total: int
    largest: tuple[int, str]
    peak: tuple[int, str]
    # `total` split three ways (run.memory.bytes_by_role): the params, the other
    # inputs (sources, facts, given inputs), the activations (computed values)
    params: int = 0
    inputs: int = 0
    activations: int = 0


@dataclass(frozen=True)
class Schedule:
    """What a run computes and in which order, for one setting of `write_sinks`."""

    write_sinks: bool
    needed: frozenset[str]
    groups: tuple[GroupPlan, ...]
    releases: Mapping[int, tuple[str, ...]]  # after group number: tensors read no more
    segments: tuple[Segment, ...]  # the same groups cut for a compiled run
    memory: MemoryEstimate


@dataclass(frozen=True, eq=False)
class RunPlan:
    """Everything a run of one input-shape signature decides before it runs."""

    signature: tuple[tuple[str, tuple[int, ...]], ...]  # the given inputs' names, shapes
    analysis: Analysis
    config: ExecutionConfig
    abilities: Abilities
    overrides: Mapping[str, str]  # compile's representation= (per tensor dense/sparse)
    statements: Mapping[int, StatementInfo]  # per equation, sink and query
    dependencies: Mapping[str, frozenset[str]]
    constants: frozenset[str]  # fixed by the program text alone: computed once
    shapes: Mapping[str, tuple[int | None, ...]]
    equations: Mapping[str, tuple[int, ...]]
    representations: Mapping[str, Representation]
    sparse: frozenset[str]  # kept sparse in this run (the backend's abilities allowing)
    outputs: tuple[str, ...]
    answers: tuple[int, ...]  # the statements of queries and sinks, in order
    fixpoints: Mapping[tuple[str, ...], Fixpoint]  # per recursive group of the order
    temperatures: Mapping[str, Temperature]  # the program's schedule tensors
    sample_sites: Mapping[int, SampleSite]  # projection="monte_carlo"
    given: frozenset[str] = frozenset()  # the inputs given at run time, by name (and
    # the schedule tensors, whose values each run gives)
    demand: DemandPlan | None = None  # mode="demand": the magic-sets rewrite run

    @property
    def max_iterations(self) -> int | None:
        return self.config.max_iterations

    @property
    def tolerance(self) -> float:
        return self.config.tolerance

    @functools.cached_property
    def known_shapes(self) -> Mapping[str, tuple[int, ...] | None]:
        """Each tensor's shape, None where an extent is not known (read per equation)."""
        return MappingProxyType({n: None if any(e is None for e in s) else s
                                 for n, s in self.shapes.items()})

    @functools.cached_property
    def contractions(self) -> ProgramPlan:
        """The planner's plan of every equation (plan.planner): what `fuse explain`
        prints, and what the memory estimate reads."""
        plan = plan_program(self.analysis, self.overrides)
        # the evaluation order says how each fixpoint runs as this run's configuration
        # chose it (`--fixpoint naive`, a linear closure), not as the checker reads it
        recursion = recursion_as_run(plan.recursion, self.fixpoints)
        return plan if recursion == plan.recursion else dataclasses.replace(
            plan, recursion=recursion)

    @functools.cached_property
    def param_starts(self) -> Mapping[str, ParamStart]:
        """How each param starts: its initialiser, role and fans (check.param_roles)."""
        return MappingProxyType(param_starts(self.analysis))

    @functools.cached_property
    def with_sinks(self) -> Schedule:
        return _schedule(self, True)

    @functools.cached_property
    def without_sinks(self) -> Schedule:
        return _schedule(self, False)

    def schedule(self, write_sinks: bool) -> Schedule:
        """The schedule of a run that writes its sinks or not (made on first ask)."""
        return self.with_sinks if write_sinks else self.without_sinks

    def shape(self, name: str) -> tuple[int, ...] | None:
        """`name`'s shape, or None when an extent is not known (the run says so)."""
        return self.known_shapes[name]

    def to_json(self) -> dict:
        """The run-specific decisions as plain data (the contractions have their own)."""
        schedule = self.schedule(True)
        return {
            "signature": [[n, list(s)] for n, s in self.signature],
            "backend": self.abilities.backend,
            "compiled": self.abilities.compiled,
            "sparse": sorted(self.sparse),
            "constants": sorted(self.constants),
            "groups": [{"tensors": list(g.names), "how": g.how,
                        **({"strategy": g.strategy} if g.strategy else {}),
                        **({"index": g.recurrence.index, "virtual": g.recurrence.virtual,
                            "order": list(g.recurrence.order)} if g.recurrence else {})}
                       for g in schedule.groups],
            "memory": {"tensors": schedule.memory.total,
                       "largest intermediate": schedule.memory.peak[0],
                       "params": schedule.memory.params, "inputs": schedule.memory.inputs,
                       "activations": schedule.memory.activations},
        }


def plan_run(analysis: Analysis, config: ExecutionConfig, abilities: Abilities,
             given: Collection[str] = (), signature: tuple = (),
             overrides: Mapping[str, str] | None = None,
             demand: DemandPlan | None = None) -> RunPlan:
    """The run plan of `analysis` (errors already refused) with inputs `given`.
    The schedule tensors are inputs too: each run gives their values (run.schedules)."""
    temperatures = schedules_of(analysis)
    given = frozenset(given) | frozenset(temperatures)
    deps = scheduler.dependencies(analysis)
    statements = analysis.program.statements
    equations_of = scheduler.equations_by_tensor(analysis)
    overrides = dict(overrides or {})
    chosen = representations(analysis, overrides) if abilities.sparse else {}
    sparse = frozenset(
        n for n, r in chosen.items() if r.kind == "sparse"
        and not abilities.compiled and not abilities.sharded
        and (abilities.sparse_relations or len(analysis.tensors[n].shape) == 2))
    return RunPlan(
        signature=tuple(signature), analysis=analysis, config=config, abilities=abilities,
        overrides=MappingProxyType(overrides),
        statements=StatementInfos(analysis, tuple(
            k for k, s in enumerate(statements)
            if isinstance(s, (ir.Equation, ir.Sink, ir.Query)))),
        dependencies=MappingProxyType({n: frozenset(d) for n, d in deps.items()}),
        constants=frozenset(scheduler.constants(analysis, deps, given)),
        shapes=MappingProxyType({n: t.shape for n, t in analysis.tensors.items()}),
        equations=MappingProxyType(equations_of),
        representations=MappingProxyType(chosen), sparse=sparse,
        outputs=tuple(_outputs(analysis, deps)),
        answers=tuple(k for k, s in enumerate(statements)
                      if isinstance(s, (ir.Query, ir.Sink))),
        fixpoints=MappingProxyType({
            tuple(g): fixpoint_choice(analysis, g, config, eager=not abilities.compiled)
            for g in analysis.order if len(g) > 1 or g[0] in analysis.recursive}),
        temperatures=MappingProxyType(temperatures),
        sample_sites=MappingProxyType(
            {s.statement: s for s in sample_sites(analysis, config)}
            if config.projection == "monte_carlo" else {}),
        given=given, demand=demand)


def _outputs(analysis: Analysis, deps: Mapping[str, set[str]]) -> list[str]:
    from .outputs import output_names

    return output_names(analysis, deps)


def _group_plan(plan: RunPlan, group: list[str], given: Collection[str]) -> GroupPlan:
    analysis = plan.analysis
    name = group[0]
    equations = list(plan.equations[name])
    single = scheduler.single_equation(analysis, group, given, equations)
    if single is not None:
        return GroupPlan(tuple(group), EQUATION, single, None, None)
    if len(group) == 1 and name not in analysis.recursive:
        return GroupPlan(tuple(group), TENSOR, None, None, None)
    recurrence = scheduler.recurrence(analysis, group)
    if recurrence is not None:
        return GroupPlan(tuple(group), RECURRENCE, None, recurrence, None)
    return GroupPlan(tuple(group), FIXPOINT, None, None, plan.fixpoints[tuple(group)].strategy)


def _schedule(plan: RunPlan, write_sinks: bool) -> Schedule:
    from .memory import bytes_by_role, estimate, needed_bytes

    analysis = plan.analysis
    given = plan.given
    deps = {n: set(d) for n, d in plan.dependencies.items()}
    needed = scheduler.needed(analysis, deps, write_sinks)
    groups = tuple([_group_plan(plan, list(g), given)
                    for g in analysis.order if not needed.isdisjoint(g)])
    as_pairs = [(list(g.names), g.single) for g in groups]
    kept = set(scheduler.roots(analysis, sinks=True))
    releases = {number: tuple(names) for number, names
                in scheduler.releases(as_pairs, deps, kept).items()}
    segments = []
    number = 0
    readers = scheduler.readers_of(deps)  # (once: every straight segment asks)
    for straight, items in scheduler.segments(as_pairs, analysis.recursive):
        members = groups[number:number + len(items)]  # the same groups, in order
        number += len(items)
        reads: tuple[str, ...] = ()
        keeps: tuple[str, ...] = ()
        if straight:
            names = [g.names[0] for g in members]
            computed = {n for n in names if plan.equations[n] and n not in plan.constants}
            r, k = scheduler.segment_io(names, deps, kept, computed, readers)
            reads, keeps = tuple(r), tuple(k)
        segments.append(Segment(straight, members, reads, keeps))
    sparse = {n: plan.representations[n].nonzeros for n in plan.sparse}
    itemsize = plan.abilities.itemsize
    sizes = needed_bytes(analysis, needed, itemsize, sparse)  # (each tensor's once)
    # (a blocked run's intermediates by their blocks: the guard and explain count these)
    total, largest, peak = estimate(analysis, needed, itemsize, sparse, plan.contractions,
                                    sizes, plan.config.block_size)
    computed = {n for n, equations in plan.equations.items() if equations and n not in given}
    by_role = bytes_by_role(analysis, needed, itemsize, sparse, computed, sizes)
    return Schedule(write_sinks, frozenset(needed), groups, MappingProxyType(releases),
                    tuple(segments), MemoryEstimate(total, largest, peak, *by_role))
