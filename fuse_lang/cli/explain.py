"""`fuse explain [--format text|json] [--shard INDEX=AXIS]... [--mesh AXIS=N,...]
[--graph FILE.svg|FILE.png] [config flags] PATH`: the plan of a program, its
execution under the configuration flags, its sharding and its loss (nothing
is run)."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from ..check import Analysis, analyze
from ..front.diagnostics import Severity
from ..front.numbers import strict_json
from ..speed.fastinit import frozen_dataclass
from .options import ConfigFlags, config_of, shard_options
from .pictures import write_graph
from .reading import read_program
from .render import diagnostic_json, render_text
from .status import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    json_document,
    keep_until_exit,
    quiet_stdout,
)


@frozen_dataclass
class ExplainOptions:
    """`fuse explain`'s options, `--shard` and `--mesh` read into their maps."""
    path: str
    format: str
    graph: str | None
    config: ConfigFlags
    shard: dict[str, str]
    mesh: dict[str, int] | None
    representation: dict[str, str]  # --representation, by name

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> ExplainOptions:
        """The options of a parsed `fuse explain` command line; UsageError for a
        malformed `--shard` or `--mesh`."""
        from ..plan.representation import RepresentationError, representation_flags

        shard, mesh = shard_options(ns.shard, ns.mesh)
        try:
            representation = representation_flags(getattr(ns, "representation", None) or ())
        except RepresentationError as e:
            fail(f"fuse: {e}", EXIT_USAGE)
        return cls(path=ns.path, format=ns.format, graph=ns.graph,
                   config=ConfigFlags.from_args(ns), shard=shard, mesh=mesh,
                   representation=representation)


def cmd_explain(options: ExplainOptions) -> int:
    """Print the plan of `options.path`: 0, or 1 when the program has errors;
    CommandFailed after saying why there is no plan to show."""
    from ..check.loss import loss_of
    from ..plan.planner import plan_program
    from ..plan.sharding import plan_sharding

    text = read_program(options.path)
    analysis: Analysis = analyze(text, options.path)
    keep_until_exit(analysis)
    errors = [d for d in analysis.diagnostics if d.severity is Severity.ERROR]
    config = config_of(options.config)
    if options.representation and not errors:
        _check_representation(options.path, analysis, options.representation)
    run_plan = None if errors else _run_plan(options.path, text, analysis, config,
                                             options.representation)
    # the very plan a run executes where the program can run; else the analysis' own
    # (and in demand mode, whose run executes the rewritten text: the program's own
    # lines are explained, the rewrite under `Execution:`)
    plan = run_plan.contractions if run_plan is not None and run_plan.demand is None \
        else _as_configured(plan_program(analysis), analysis, config)
    sharding = (plan_sharding(analysis, options.shard, options.mesh)
                if options.shard or options.mesh else None)
    if sharding is not None and sharding.problems:
        # through fail, so that `--format json` still writes its one document
        fail("\n".join(f"fuse: --shard: {problem}" for problem in sharding.problems),
             EXIT_USAGE)
    if options.graph is not None:
        write_graph(options.graph, analysis, plan)
    # the run plan's fixpoint choices are those of this analysis and configuration
    # (but in demand mode, whose run plan is of the rewritten program)
    choices = run_plan.fixpoints if run_plan is not None and run_plan.analysis is analysis \
        and run_plan.config.fixpoint == config.fixpoint else None
    execution = _execution_plan(config, analysis, plan.equations, choices)
    loss = loss_of(analysis)
    try:  # (a reader that stops early, `fuse explain a.fuse | head`: the errors are
        # still said on stderr, and the status is still theirs)
        if options.format == "json":
            _dump_json(options.path, analysis, plan, execution, sharding, loss, run_plan)
        else:
            _print_plan(plan, sharding, execution, run_plan, loss)
    except BrokenPipeError:
        quiet_stdout()
    if options.format != "json":
        for d in errors:
            print(render_text(options.path, analysis.lines, d), file=sys.stderr)
    return EXIT_ERRORS if errors else EXIT_OK


def _as_configured(plan: Any, analysis: Analysis, config: Any) -> Any:
    """The analysis' own plan (no run plan: errors, demand mode), its evaluation order
    saying how each fixpoint would run under `config` (as a run plan's does)."""
    from ..plan.config import fixpoint_choice, recursion_as_run

    choices = {tuple(g): fixpoint_choice(analysis, g, config) for g in plan.recursive_groups}
    recursion = recursion_as_run(plan.recursion, choices)
    return plan if recursion == plan.recursion else dataclasses.replace(plan, recursion=recursion)


def _print_plan(plan: Any, sharding: Any, execution: Any, run_plan: Any, loss: Any) -> None:
    """`fuse explain`'s text: the plan, the run plan and the loss."""
    from ..plan.render import render_plan_text

    print(render_plan_text(plan, sharding, execution))
    if run_plan is not None:
        from ..ide.explain import run_plan_lines

        print("\n" + "\n".join(run_plan_lines(run_plan)))
        if sharding is not None:  # that plan is numpy's, not the sharded run's
            print("  (a run with --shard is on jax over the mesh: compiled unless "
                  "--no-compile, every tensor dense)")
    if loss is not None:
        print("\n" + loss.text().replace("**", "").replace("`", ""))


def _check_representation(path: str, analysis: Analysis, overrides: dict[str, str]) -> None:
    """CommandFailed (exit 1, as `fuse run`) for a `--representation` the program cannot keep
    (an unknown tensor, `sparse` on one axis), said as `fuse run` says it."""
    from ..plan.representation import RepresentationError, representations

    try:
        representations(analysis, overrides)
    except RepresentationError as e:
        fail(f"fuse: {path}: {e}", EXIT_ERRORS)


def _run_plan(path: str, text: str, analysis: Analysis, config: Any,
              representation: dict[str, str] | None = None) -> Any:
    """The RunPlan a run of the program without inputs executes (compiled with the
    same flags, from the analysis explain made: the object `fuse run` would
    execute), or None where the program cannot be compiled as it stands (a source
    missing, a refused configuration: explain still shows the planner's plan)."""
    from ..ide.explain import explain_program
    from ..run.interpret.evaluate import EvaluationError
    from ..run.program import FuseError, compile

    try:
        program = compile(text, base_dir=Path(path).parent, path=path, config=config,
                          analysis=analysis, representation=representation or None)
        return explain_program(program).run_plan
    except (FuseError, EvaluationError, ValueError):
        return None


def _execution_plan(config: Any, analysis: Analysis, plans: Any, choices: Any = None) -> Any:
    """What the configuration flags do to the program (`plans`: its equations'
    plans, made once; `choices`: the run plan's fixpoint choices, where it has
    them); CommandFailed (exit 2) for a configuration that is refused."""
    from ..plan.config import config_problems, plan_execution
    from ..run.config import checked_against
    from ..run.results import FuseError

    problems = config_problems(config)
    if problems:
        fail(f"fuse: the execution configuration is refused: {'; '.join(problems)}",
             EXIT_USAGE)
    try:  # what it names in the program (estimate, importance), as `fuse run` refuses it
        checked_against(config, analysis)
    except FuseError as err:
        fail(f"fuse: {err}", EXIT_USAGE)
    return plan_execution(analysis, config, plans, choices)


def _dump_json(path: str, analysis: Analysis, plan: Any, execution: Any, sharding: Any,
               loss: Any, run_plan: Any) -> None:
    """`fuse explain --format json`: the plan, its execution, sharding and loss,
    the run plan's own decisions ("run", where the program can run), and the
    program's diagnostics."""
    data = plan.to_json()
    data["execution"] = execution.to_json()
    from ..ide.explain import run_plan_json

    # (null, not missing, where the program cannot run: errors, a source not there)
    data["run"] = None if run_plan is None else run_plan_json(run_plan)
    if sharding is not None:
        data["sharding"] = sharding.to_json()
    if loss is not None:
        data["loss"] = loss.to_json()
    data["diagnostics"] = [diagnostic_json(path, analysis.lines, d) for d in analysis.diagnostics]
    # (one write: json.dump with an indent writes each of its millions of pieces)
    sys.stdout.write(json_document(strict_json(data)))

