"""How a program runs: `ExecutionConfig` and its effect on a program, as data.

`ExecutionConfig` is the one object that says how to run (docs/execution.md);
`config_problems` lists what is wrong with one on its own (unknown values,
contradictions), `plan_execution` says what it does to a checked program
(which fixpoint strategy each recursive group gets, what Monte Carlo
projection samples and saves, what blocked contraction splits).  Both are pure:
`fuse explain` renders the plan (plan.render), `fuse_lang.compile` refuses a
configuration with problems before anything runs (run.config).
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..check import Analysis
from ..check.datalog import monotone_rules
from ..check.order import SEMI_NAIVE_WORDS
from ..check.recurrences import group_recurrence
from ..front import ir
from .blocking import BlockedEquation, blocked_equations
from .demand import DemandPlan, plan_demand
from .linear_closure import linear_rule
from .sampling import SampledEquation, sampled_equations

MODES = ("forward", "demand")
FIXPOINTS = ("semi_naive", "naive")
PROJECTIONS = ("exact", "monte_carlo")
DEFAULT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ExecutionConfig:
    """How to run a program (every field is also a `fuse run` flag; docs/execution.md).

    mode: "forward" (every needed tensor, in order) or "demand" (only what the
    exports, queries and sinks need; queries with constants through the
    magic-sets rewrite of plan.demand).  fixpoint: "semi_naive" (new facts only,
    where that is exact; naive elsewhere) or "naive" (every rule every round).
    max_iterations: rounds a recursive group may take (None: from its extents).
    tolerance: numeric recursion stops when no value changes more.  block_size:
    the most elements an intermediate of a contraction may hold (None: no bound).
    projection: "exact" or "monte_carlo" (a summed index estimated from `samples`
    draws of its values, with `seed`; `importance` names per tensor a 1-D
    tensor of weights to draw by, {"Y": "P"}; `estimate` the tensors to estimate,
    None: every one that can be).  trace: record per equation and
    per fixpoint round what ran and how long it took.  backend: "numpy",
    "torch", "jax" or "auto" (run.config.choose_backend).  cache_dir: a folder
    for the compiled graphs of jax and compiled torch runs, reused by later
    processes (run.cache; None: no persistent cache).  threads: how many threads a
    run's sparse products may use (run.sparse.threads; None: OMP_NUM_THREADS
    where set, else every core the process may run on)."""

    mode: str = "forward"
    fixpoint: str = "semi_naive"
    max_iterations: int | None = None
    tolerance: float = DEFAULT_TOLERANCE
    block_size: int | None = None
    projection: str = "exact"
    samples: int | None = None
    seed: int | None = None
    importance: Mapping[str, str] = field(default_factory=dict, hash=False)
    estimate: tuple[str, ...] | None = None
    trace: bool = False
    backend: str = "numpy"
    device: str = "cpu"
    precision: str = "fp32"
    cache_dir: str | None = None
    threads: int | None = None

    def changed(self) -> dict[str, Any]:
        """The fields set to something other than their default."""
        default = ExecutionConfig()
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    def to_json(self) -> dict:
        """The fields as JSON-ready data (lists for tuples, a path as a string): the
        object `%%fuse --config FILE` reads back."""
        data = dataclasses.asdict(self)
        data["importance"] = dict(self.importance)
        data["estimate"] = None if self.estimate is None else list(self.estimate)
        data["cache_dir"] = None if self.cache_dir is None else os.fspath(self.cache_dir)
        return data


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> list[str]:
    if value in allowed:
        return []
    return [f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}"]


def _count(name: str, value: Any, least: int) -> list[str]:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        return [f"{name} must be a whole number of at least {least}, not {value!r}"]
    return []


def config_problems(config: ExecutionConfig) -> list[str]:
    """What is wrong with a configuration on its own (empty: nothing).  The
    backend, device and precision are the backends' to check (run.backends), with
    their own messages."""
    problems = _choice("mode", config.mode, MODES) + \
        _choice("fixpoint", config.fixpoint, FIXPOINTS) + \
        _choice("projection", config.projection, PROJECTIONS) + \
        _count("max_iterations", config.max_iterations, 1) + \
        _count("block_size", config.block_size, 1) + \
        _count("samples", config.samples, 1) + _count("seed", config.seed, 0) + \
        _count("threads", config.threads, 1)
    tolerance = config.tolerance
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or \
            not math.isfinite(tolerance) or tolerance < 0:
        problems.append(f"tolerance must be a finite number of at least 0, not {tolerance!r}")
    if not isinstance(config.trace, bool):
        problems.append(f"trace must be True or False, not {config.trace!r}")
    # (a number given for it, as a config file may, is refused, not iterated)
    if config.estimate is not None and (isinstance(config.estimate, (str, bytes)) or not
                                        isinstance(config.estimate, Iterable) or not all(
            isinstance(n, str) for n in config.estimate)):
        problems.append("estimate is a tuple of tensor names (('Y',))")
    if not isinstance(config.importance, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in config.importance.items()):
        problems.append("importance maps tensor names to tensor names ({'Y': 'P'})")
    if config.cache_dir is not None and (not isinstance(config.cache_dir, (str, os.PathLike))
                                         or not os.fspath(config.cache_dir)):
        problems.append(f"cache_dir must be a folder's path, not {config.cache_dir!r}")
    if config.projection != "monte_carlo":
        for name in ("samples", "seed"):
            if getattr(config, name) is not None:
                problems.append(f"{name} is for projection='monte_carlo' (the projection is "
                                f"{config.projection!r})")
        if config.estimate is not None:
            problems.append(f"estimate is for projection='monte_carlo' (the projection is "
                            f"{config.projection!r})")
        if config.importance:
            problems.append(f"importance is for projection='monte_carlo' (the projection is "
                            f"{config.projection!r})")
    elif config.samples is None:
        problems.append("projection='monte_carlo' needs samples (how many values of each "
                        "summed index to draw)")
    return problems


@dataclass(frozen=True, slots=True)
class ExecutionPlan:
    settings: tuple[tuple[str, str], ...]  # (field, value) of the fields set
    fixpoints: tuple[tuple[str, str], ...]  # (recursive group, strategy and why)
    sampled: tuple[SampledEquation, ...] = ()
    blocked: tuple[BlockedEquation, ...] = ()
    notes: tuple[str, ...] = ()
    demand: DemandPlan | None = None  # mode="demand": the magic-sets rewrite

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["demand"] = None if self.demand is None else self.demand.to_json()
        return data


@dataclass(frozen=True)
class FixpointChoice:
    """How a recursive group runs to its fixpoint, and why: `fuse explain` says it,
    the RunPlan keeps it and the run follows it (run.fixpoint)."""

    strategy: str  # "semi_naive", "naive", or "closure" (semi-naive rounds, then a search)
    closure: Any  # "closure": the group's plan.linear_closure.LinearRule
    how: str  # in words


def fixpoint_choice(analysis: Analysis, group: Sequence[str],
                    config: ExecutionConfig, eager: bool = True) -> FixpointChoice:
    """Semi-naive only where it is exact (Boolean rules that only join and union:
    the checker's own test, check.datalog.monotone_rules) and the config asks for
    it; a linear closure's rounds finished by one graph search where the run is
    eager (`eager=False`: a compiled run, whose rounds stay in the graph)."""
    statements = analysis.program.statements
    rules = [statements[k] for n in group for k in analysis.tensors[n].statements
             if isinstance(statements[k], ir.Equation)]
    exact = all(analysis.tensors[n].boolean for n in group) \
        and monotone_rules(set(group), rules)
    if config.fixpoint == "naive":
        return FixpointChoice("naive", None, "naive (every rule every round), as asked")
    if not exact:
        return FixpointChoice("naive", None, "naive: semi-naive was asked but is exact only "
                              "for Boolean joins and unions, so this group falls back to naive")
    how = "semi-naive (only new facts are joined; exact: Boolean joins and unions)"
    rule = linear_rule(analysis, group)
    if rule is None:
        return FixpointChoice("semi_naive", None, how)
    if not eager:
        return FixpointChoice("semi_naive", None, how + "; a linear closure, but a compiled "
                              "run keeps its rounds (the graph search runs eagerly only)")
    return FixpointChoice("closure", rule, how + "; a linear closure: past a tree's depth "
                          "in rounds, an eager run finds the rest by one graph search")


def recursion_as_run(recursion: Sequence[tuple[str, str]],
                     choices: Mapping[tuple[str, ...], FixpointChoice]
                     ) -> tuple[tuple[str, str], ...]:
    """The evaluation order's words for each recursive tensor (Analysis.recursion's),
    with the strategy a run's fixpoint `choices` took where the checker's reading,
    semi-naive, is not what runs (`--fixpoint naive`, a linear closure's search)."""
    strategy = {name: choice.strategy for group, choice in choices.items() for name in group}
    head = SEMI_NAIVE_WORDS[:-len("(semi-naive)")]
    out = []
    for name, words in recursion:
        if words == SEMI_NAIVE_WORDS and strategy.get(name) == "naive":
            words = head + "(naive: every rule every round, as asked)"
        elif words == SEMI_NAIVE_WORDS and strategy.get(name) == "closure":
            words = head + "(semi-naive rounds, then one graph search: a linear closure)"
        out.append((name, words))
    return tuple(out)


def plan_execution(analysis: Analysis, config: ExecutionConfig,
                   plans: Sequence[Any] | None = None,
                   choices: Mapping[tuple[str, ...], FixpointChoice] | None = None
                   ) -> ExecutionPlan:
    """What `config` does to the checked program (shapes only, nothing runs).
    `plans`: the equations' plans where the caller has them (`ProgramPlan.equations`);
    made here only when the config samples or blocks (planning every equation
    again doubled `fuse explain`'s time on a long program).  `choices`: the
    fixpoint choices a run plan of this analysis and `config.fixpoint` made
    (RunPlan.fixpoints), per group of the order; made here where missing."""
    settings = tuple((k, str(v)) for k, v in config.changed().items())
    known = choices or {}
    # (a recurrence runs in order, one pass per step: no fixpoint to choose for it)
    fixpoints = [(", ".join(group), (known.get(tuple(group))
                                     or fixpoint_choice(analysis, group, config)).how)
                 for group in analysis.order if set(group) & analysis.recursive
                 and group_recurrence(analysis, group) is None]
    if plans is None and (config.projection == "monte_carlo" or config.block_size):
        from .planner import plan_equation

        plans = [plan_equation(analysis, k) for k, s in enumerate(analysis.program.statements)
                 if type(s).__name__ == "Equation"]
    notes = []
    demand = plan_demand(analysis) if config.mode == "demand" else None
    if demand is not None:
        notes.append("demand mode: only the tensors the exports, queries and sinks read "
                     "are evaluated" + ("; bound queries through the magic-sets rewrite "
                                        "below" if demand.rewritten else
                                        " (no query with constants to rewrite)"))
    sampled = sampled_equations(analysis, list(plans or ()), config) \
        if config.projection == "monte_carlo" else ()
    blocked = blocked_equations(list(plans or ()), config.block_size) \
        if config.block_size else ()
    return ExecutionPlan(settings, tuple(fixpoints), tuple(sampled), tuple(blocked),
                         tuple(notes), demand)
