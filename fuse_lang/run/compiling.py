"""What `compile` decides before a program can run, each step refused in words
(FuseError) when it cannot be taken: the backend (and whether runs are compiled
graphs), a weights manifest checked against the program, the program cut to its
targets' cone, demand mode's rewrite of bound queries, the backend over a
device mesh.  `program.compile` takes the steps in order."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Sequence

from ..check import Analysis, analyze
from ..check.cone import NotRun, TargetError, dependency_cone, document_cone
from ..front.diagnostics import Diagnostic, Severity
from ..front.syntax import parse
from ..io.manifest import ManifestError, as_diagnostic, recoded
from ..plan.config import ExecutionConfig
from ..plan.demand import DemandPlan, plan_demand
from .backends import BackendError, get_backend
from .backends.base import Backend
from .results import FuseError
from .weights import Weights, open_weights


def backend_for(config: ExecutionConfig, backend: str, device: str, precision: str,
                compiled: bool | None, sharded: bool) -> tuple[Backend, bool, Any]:
    """The backend a compile runs on, whether its runs are compiled graphs, and the
    compiled-artifact cache's root (None without cache_dir); refusals as FuseError."""
    if compiled is not None and not isinstance(compiled, bool):
        raise FuseError(f"compiled is True, False or None (the backend's default), "
                        f"not {compiled!r}")
    if config.trace and compiled:
        raise FuseError("trace=True times each equation and runs eagerly; it cannot be "
                        "combined with compiled=True")
    if sharded and backend != "jax":
        raise FuseError(f"sharding over a device mesh (mesh=, shard=) needs the jax backend; "
                        f"the {backend} backend runs on one device")
    cache_root = None
    if config.cache_dir is not None and (backend == "jax" or compiled):
        from . import cache

        # before the backend is made: jax compiles even its eager operations (the
        # backend's own precision check among them), and those are cached too
        cache_root = cache.enable(config.cache_dir, backend)
    try:
        chosen = get_backend(backend, device, precision)
    except BackendError as err:
        said = str(err)
        if said.startswith("unknown backend"):  # (compile resolves "auto" before this)
            said += ', or "auto" (the best one installed for the device)'
        raise FuseError(said) from None
    if compiled is None:
        compiled = chosen.compiles_by_default and not config.trace
    if compiled and not chosen.compiles_segments:
        raise FuseError(f"the {backend} backend runs eagerly only; compiled runs need the "
                        f"jax or torch backend")
    return chosen, compiled, cache_root



def variant_backend(current: Backend, backend: Any, compiled: Any) -> Backend:
    """CompiledProgram.variant's backend (`current` when None), checked with its
    `compiled`: FuseError for a backend that is not a Backend object (a name:
    compile the program again) or a compiled run that backend cannot make."""
    if backend is not None and not isinstance(backend, Backend):
        raise FuseError(f"variant(backend=...) takes a backend object, not {backend!r}: to run "
                        f"on a backend named so, compile the program with backend=")
    chosen = current if backend is None else backend
    if compiled is not None and not isinstance(compiled, bool):
        raise FuseError(f"compiled is True, False or None (as it was), not {compiled!r}")
    if compiled and not chosen.compiles_segments:
        raise FuseError(f"the {chosen.name} backend runs eagerly only; compiled runs need the "
                        f"jax or torch backend")
    return chosen


def picked_backend(choice: dict | None, config: ExecutionConfig, *args: Any) -> Any:
    """backend_for(config, *args); a refusal of what backend="auto" picked
    (`choice`) says that it was the pick, and why."""
    try:
        return backend_for(config, *args)
    except FuseError as err:
        if choice is None:
            raise
        raise FuseError(f"backend=\"auto\" picked {choice['backend']} on {choice['device']} "
                        f"({choice['why']}); {err}") from None

def open_program_weights(weights: Any, adapters: Any, text: str,
                         base_dir: str | os.PathLike, slices: bool = False) -> Weights | None:
    """compile(weights=...): the manifest checked against the program and loaded;
    a problem is a FuseError with its diagnostic, at the tensor it concerns."""
    if weights is None:
        if adapters:
            raise FuseError("adapters= needs weights=: adapters are declared in a weights "
                            "manifest (docs/weights.md)")
        return None
    try:
        return open_weights(weights, text, base_dir, adapters, slices)
    except ManifestError as err:
        diagnostic = as_diagnostic(err, parse(text).program)
        raise FuseError(f"{err.message} [{err.code}]", (diagnostic,)) from None


def program_analysis(text: str, path: str | None, base_dir: str | os.PathLike,
                     made: Analysis | None, loaded: Weights | None) -> Analysis:
    """The program's analysis: the one made before (`made`) where it serves, that
    is without weights (the manifest's shapes are inputs of the analysis), else
    made now; a conflict with the manifest refused."""
    if made is not None and loaded is None:
        analysis = made
    else:
        analysis = analyze(text, path, base_dir,
                           input_shapes=loaded.shapes() if loaded is not None else None)
    raise_on_weights_errors(analysis, loaded)
    return analysis


def raise_on_weights_errors(analysis: Analysis, loaded: Weights | None) -> None:
    """A conflict between the manifest's shapes and the program, said so."""
    if loaded is not None:
        raise_on_errors(analysis, only=tuple(
            d for d in recoded(analysis.diagnostics, loaded.manifest, loaded.layout)
            if d.severity is Severity.ERROR and d.code != "missing-source"))


def demanded(analysis: Analysis, path: str | None, base_dir: str | os.PathLike
              ) -> tuple[Analysis, DemandPlan | None]:
    """mode="demand": the program with its bound queries rewritten (plan.demand);
    the scheduler then evaluates only what the exports, queries and sinks read."""
    plan = plan_demand(analysis)
    if not plan.rewritten:
        return analysis, None
    rewritten = analyze(plan.text, path, base_dir)
    if any(d.severity is Severity.ERROR and d.code != "missing-source"
           for d in rewritten.diagnostics):  # a fault of the rewrite, never the program's
        raise FuseError("demand mode could not rewrite this program's queries "
                        "(run it with mode='forward'): " + "; ".join(
                            d.message for d in rewritten.diagnostics
                            if d.severity is Severity.ERROR)[:500])
    return rewritten, dataclasses.replace(plan, source=analysis)


def cut_to_targets(analysis: Analysis, targets: Sequence[str], path: str | None,
                    base_dir: str | os.PathLike) -> tuple[Analysis, tuple[NotRun, ...]]:
    """The analysis of the program cut to the targets' cone; an error inside the
    cone refuses the run with that error."""
    listed = list(targets) if isinstance(targets, (list, tuple, set, frozenset)) else None
    if listed is None or not all(isinstance(t, str) for t in listed):
        raise FuseError(f"targets is a list of tensor names or query texts (['Y', "
                        f"'Anc(Alice, x)?']), not {targets!r}")
    try:
        cone = dependency_cone(analysis, listed)
    except TargetError as err:
        raise FuseError(str(err)) from None
    blocking = tuple(d for d in cone.blocking if d.code != "missing-source")
    if blocking:
        raise_on_errors(analysis, only=blocking)
    return _cut_analysis(analysis, cone.text, path, base_dir), cone.not_run


def cut_to_document(analysis: Analysis, path: str | None, base_dir: str | os.PathLike
                     ) -> tuple[Analysis, tuple[NotRun, ...]]:
    """The whole document past its errors (`fuse run`, the editor's run): with
    errors, the analysis of the program cut to the cones of its exports, queries,
    sinks and loss, what is left out for an error listed; an error inside those
    cones refuses the run with it first (and the others after).  Without errors,
    or without exports, queries, sinks or loss (the whole document is then every
    tensor), the analysis as it is."""
    errors = tuple(d for d in analysis.diagnostics
                   if d.severity is Severity.ERROR and d.code != "missing-source")
    cone = document_cone(analysis) if errors else None
    if cone is None:
        return analysis, ()
    blocking = tuple(d for d in cone.blocking if d.code != "missing-source")
    if blocking:
        raise_on_errors(analysis, only=blocking + tuple(d for d in errors if d not in blocking))
    return _cut_analysis(analysis, cone.text, path, base_dir), cone.not_run


def _cut_analysis(analysis: Analysis, text: str, path: str | None,
                  base_dir: str | os.PathLike) -> Analysis:
    """The analysis of the program cut to a cone (`text`).  Cutting only leaves
    statements out, so an error of the cut program that the whole one does not
    have comes from what was left out: a statement the checker dropped for its
    error (a line that does not parse, a call of a `fn` that cannot be inlined)
    defined a tensor the cone reads.  Then the run is refused with the program's
    own errors, the cause, never with the cut's (`T` is not defined)."""
    cut = analyze(text, path, base_dir)
    if any(d.severity is Severity.ERROR and d.code != "missing-source"
           for d in cut.diagnostics):
        errors = [d for d in analysis.diagnostics
                  if d.severity is Severity.ERROR and d.code != "missing-source"]
        spans = [s.span for s in analysis.program.statements]
        # the errors of statements left out (in none the checker kept): the cause
        dropped = [d for d in errors if not any(s.start <= d.span.start < s.end
                                                 for s in spans)]
        raise_on_errors(analysis, only=tuple(dropped or errors))
    return cut


def runnable_part(analysis: Analysis, targets: Sequence[str] | None, past_errors: bool,
                  path: str | None, base_dir: str | os.PathLike
                  ) -> tuple[Analysis, tuple[NotRun, ...]]:
    """What of the program runs: the targets' cone; with `past_errors`, the whole
    document's cone past the errors it does not need; else the whole program."""
    if targets:
        return cut_to_targets(analysis, targets, path, base_dir)
    if past_errors:
        return cut_to_document(analysis, path, base_dir)
    return analysis, ()


def join_process_group(backend: str, distributed: bool) -> bool:
    """compile(distributed=True): this process joins the JAX process group
    (run.distributed); FuseError on another backend or when it cannot.  Returns
    `distributed`."""
    if not distributed:
        return False
    if backend != "jax":
        raise FuseError(f"a distributed run (distributed=True, --distributed) needs the jax "
                        f"backend; the {backend} backend runs in one process")
    from .distributed import initialize

    initialize()
    return True


def sharded_backend(analysis: Analysis, mesh: Any, shard: Mapping[str, str] | None,
                    device: str, precision: str, whole: Analysis | None = None) -> Backend:
    """The jax backend over a mesh, each tensor split as the plan says; the shard
    map's index names and mesh axes are checked first, by the pure plan, against
    the `whole` program (as `fuse explain --shard` does): an index of a tensor that a
    --target run or demand mode leaves out is still a name of the program."""
    from ..plan.sharding import axis_specs, plan_sharding
    from .backends import jax_sharding

    shard = _shard_map(shard)
    if isinstance(mesh, Mapping):
        bad = [f"{n!r}: {s!r}" for n, s in mesh.items() if not isinstance(n, str) or not n
               or not isinstance(s, int) or isinstance(s, bool) or s < 1]
        if bad:
            raise FuseError(f"mesh= maps axis names to positive numbers of devices "
                            f"({{'data': 4}}), not {', '.join(bad)}")
    names = getattr(mesh, "axis_names", None)
    axes = dict.fromkeys(names) if names is not None else \
        dict(mesh) if isinstance(mesh, Mapping) else None
    problems = plan_sharding(whole or analysis, shard, axes).problems
    if problems:
        raise FuseError(f"shard: {problems[0]}")
    try:
        made = jax_sharding.make_mesh(mesh, shard, device)
        return jax_sharding.ShardedJaxBackend(made, axis_specs(analysis, shard), device,
                                              precision)
    except BackendError as err:
        raise FuseError(str(err)) from None


def _shard_map(shard: Any) -> dict[str, str]:
    """shard= as a dict of index names to mesh axis names; FuseError for anything else."""
    if shard is None:
        return {}
    if not isinstance(shard, Mapping):
        raise FuseError(f"shard= maps index names to mesh axes ({{'p': 'data'}}), not a "
                        f"{type(shard).__name__}")
    bad = [f"{i!r}: {m!r}" for i, m in shard.items()
           if not isinstance(i, str) or not isinstance(m, str) or not i or not m]
    if bad:
        raise FuseError(f"shard= maps index names to mesh axis names, both text "
                        f"({{'p': 'data'}}), not {', '.join(bad)}")
    return dict(shard)


def raise_on_errors(analysis: Analysis, deferred: tuple[str, ...] = (),
                     only: tuple[Diagnostic, ...] | None = None) -> None:
    errors = tuple(d for d in analysis.diagnostics if d.severity is Severity.ERROR) \
        if only is None else only
    if errors and not all(d.code in deferred for d in errors):
        first = errors[0]
        line, col = analysis.lines.position(first.span.start)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise FuseError(f"line {line + 1}, column {col + 1}: {first.message} [{first.code}]"
                        f"{more}", errors)
