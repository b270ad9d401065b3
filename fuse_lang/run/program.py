"""Compiling and running programs: `fuse_lang.compile(text).run(inputs)`.

`compile` checks a program and picks its backend; a `CompiledProgram` runs
it as often as asked, deriving what depends on input shapes alone (the
analysis, statement plans, the schedule) once per shape signature.  Each run
is an `Execution`.
"""
from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..check import INPUT_KINDS, Analysis, analyze
from ..check.cone import NotRun
from ..front.diagnostics import Severity
from ..io.file_reads import kept, reading_once
from ..io.manifest import ManifestError
from ..plan.config import DEFAULT_TOLERANCE, ExecutionConfig  # noqa: F401 - its old home
from ..plan.demand import DemandPlan, one_line
from ..plan.representation import RepresentationError, representations
from ..speed.gc_pause import gc_paused
from .backends.base import Backend
from .compiling import (
    demanded,
    join_process_group,
    open_program_weights,
    picked_backend,
    program_analysis,
    raise_on_errors,
    runnable_part,
    sharded_backend,
    variant_backend,
)
from .config import checked_against, choose_backend, merged
from .execution import Execution, RunCaches, RunCounters, RunSettings
from .inputs import given_inputs
from .interpret.evaluate import EvaluationError
from .interpret.float_warnings import FloatWarnings
from .limits import CheckedBackend, Checkpoint, checked_hook, checked_time_limit, watching
from .loading import base_folder, read_text, refuse_a_path
from .memory import failure_words
from .results import FuseError, QueryAnswer, RunResult
from .run_plan import Abilities, RunPlan, plan_run
from .weights import AdapterChoice, Weights
from .why.explainer import Explainer

__all__ = ["CompiledProgram", "ExecutionConfig", "FuseError", "QueryAnswer", "RunResult",
           "compile", "load"]


def _reading_files_once(compile_: Callable[..., "CompiledProgram"]
                        ) -> Callable[..., "CompiledProgram"]:
    """`compile` inside io.file_reads.reading_once: each source file is read and
    split once however often the program is analysed (demand mode's rewrite,
    a targeted run's cone); the program keeps the relation files' columns for its
    runs."""
    @functools.wraps(compile_)
    def compiling(*args: Any, **kwargs: Any) -> "CompiledProgram":
        started = time.perf_counter()
        with reading_once() as store:
            program = compile_(*args, **kwargs)
        # what `--trace` reports as the check phase: compile's analysis and choices
        object.__setattr__(program, "compile_seconds", time.perf_counter() - started)
        # made by compile itself, after the program (whose analyses read the files)
        object.__setattr__(program, "file_reads",
                           kept(store, lambda what: what[0] in ("relation", "relation info")))
        return program
    return compiling


@_reading_files_once
@gc_paused()  # (as analyze: a long program's plan is a large graph the collector rescans)
def compile(source_text: str, backend: str | None = None, device: str | None = None,
            base_dir: str | os.PathLike | None = None, *, precision: str | None = None,
            path: str | None = None, memory_limit: int | None = None,
            allow_outside_sinks: bool = False, max_iterations: int | None = None,
            tolerance: float | None = None, compiled: bool | None = None,
            mesh: Any = None, shard: Mapping[str, str] | None = None,
            representation: Mapping[str, str] | None = None,
            targets: Sequence[str] | None = None, past_errors: bool = False,
            config: ExecutionConfig | None = None,
            weights: str | os.PathLike | Mapping | None = None,
            adapters: Sequence[str] | Mapping[str, float] | None = None,
            analysis: Analysis | None = None,
            distributed: bool = False) -> "CompiledProgram":
    """Check a program's text (a file: `load`) and prepare it to run; raises FuseError on errors.
    base_dir: where relative paths resolve; None: the folder of `path`, else the current one.

    backend: "numpy" (the reference), "torch" or "jax"; device: "cpu", "cuda", "cuda:N" or
    "auto"; precision: "fp32", "fp64", "bf16" or "fp16" where the backend and device support it.
    compiled: run straight runs of equations as compiled graphs (jax.jit; torch.compile) - the
    default for jax, on request for torch, not available for numpy.  shard: index names to mesh
    axes ({"p": "data"}), each tensor split over the mesh along its axes of those names
    (docs/scale.md); mesh: a jax.sharding.Mesh, {axis name: size}, or None for one axis over all
    devices (jax backend only).  representation: per tensor "dense" or "sparse", overriding the
    planner's choice (docs/scale.md). max_iterations: the rounds a recursive group may take;
    None (the default) follows from the program (fixpoint.round_limit: a Boolean group's tuples,
    1000 for numeric recursion).  targets: tensor names or query texts to compute alone: only
    their dependency cone is compiled, so an error outside it does not stop them (the result's
    `not_run` says what was left out and why); an error inside it does. past_errors: with errors
    outside the cones of the exports, queries, sinks and loss, run those cones (as `fuse run`
    and the editor do, docs/cli.md "What runs"), `not_run` listing what is left out for an
    error; False (the default): any error refuses. config: an ExecutionConfig
    (docs/execution.md); backend, device, precision, max_iterations and tolerance may be given
    either way (None: not given; the defaults are "numpy", "cpu", "fp32", None and 1e-6), never
    contradicting. weights: a weights manifest (a JSON file's path, or the same as a mapping
    with paths relative to base_dir): its tensors replace the program's source files
    (docs/weights.md); adapters: the manifest's LoRA adapters to apply first (names, or {name:
    scale}; `CompiledProgram.set_adapters` switches them). analysis: the caller's analysis of
    this very text, path and base_dir (`fuse explain` has made it): used instead of analysing
    the text again.  distributed: join the JAX process group first (run.distributed,
    docs/scale.md) and run over the mesh of every process's devices (jax backend)."""
    refuse_a_path(source_text, path, base_dir, analysis)
    base_dir = base_folder(path, base_dir)
    auto_device = device is None and getattr(config, "device", "cpu") == "cpu"
    config = merged(config, {"backend": backend, "device": device, "precision": precision,
                             "max_iterations": max_iterations, "tolerance": tolerance})
    backend, device, precision = config.backend, config.device, config.precision
    choice = None
    # the program's analysis when made before (by the caller, or for backend="auto");
    # without weights (whose shapes are inputs of the analysis) it is the program's
    first = analysis
    if backend == "auto":
        if first is None:
            first = analyze(source_text, path, base_dir)
        runs = runnable_part(first, targets, past_errors, path, base_dir)[0]
        raise_on_errors(runs, deferred=("missing-source",))
        backend, device, why = choose_backend(runs, "auto" if auto_device else device)
        choice = {"backend": backend, "device": device, "why": why}
    grouped = join_process_group(backend, distributed)
    sharded = grouped or mesh is not None or bool(shard)
    chosen, compiled, cache_root = picked_backend(choice, config, backend, device,
                                                  precision, compiled, sharded)
    loaded = open_program_weights(weights, adapters, source_text, base_dir, slices=grouped)
    whole = analysis = program_analysis(source_text, path, base_dir, first, loaded)
    analysis, not_run = runnable_part(analysis, targets, past_errors, path, base_dir)
    # a missing source file may still be given at run time (runtime inputs override a
    # source's file, LANGUAGE.md §9): then `run` without that input reports it
    raise_on_errors(analysis, deferred=("missing-source",))
    representation = _kept_representation(analysis, representation)
    checked_against(config, analysis)
    demand = None
    if config.mode == "demand":
        analysis, demand = demanded(analysis, path, base_dir)
    if sharded:
        chosen = sharded_backend(analysis, mesh, shard, device, precision, whole)
    return CompiledProgram(
        analysis, chosen, Path(base_dir), memory_limit=memory_limit,
        allow_outside_sinks=allow_outside_sinks, compiled=compiled, config=config,
        representation=representation, weights=loaded, not_run=not_run,
        cache_root=cache_root if compiled else None,  # only compiled graphs are noted
        backend_choice=choice, demand=demand)


def load(path: str | os.PathLike, **options: Any) -> "CompiledProgram":
    """Read a `.fuse` file and compile it: `compile(text, path=path, base_dir=<the
    file's folder>, **options)`, so its relative source, sink and import paths
    are read beside the file whatever the current folder.  Options as `compile`'s
    (backend, device, targets, ...); FuseError for a file that cannot be read or
    a program with errors."""
    text = read_text(path)  # (first: a path of the wrong type is said in words)
    options.setdefault("base_dir", Path(path).parent)
    return compile(text, path=os.fspath(path), **options)


def _kept_representation(analysis: Analysis, representation: Mapping[str, str] | None
                         ) -> dict[str, str]:
    """compile's `representation` overrides; FuseError for one that cannot be kept."""
    if representation is not None and not isinstance(representation, Mapping):
        raise FuseError(f"representation= maps tensor names to 'dense' or 'sparse' "
                        f"({{'Edge': 'sparse'}}), not a {type(representation).__name__}")
    representation = dict(representation or {})
    try:
        representations(analysis, representation)
    except RepresentationError as err:
        raise FuseError(str(err)) from None
    return representation


# what a caller may set on a compiled program between runs: the run's hooks
RUN_HOOKS = frozenset({"interrupt", "progress", "memory_limit", "operation_check"})


class CompiledProgram:
    """A checked program ready to run, as often as asked (`run`, `execute`,
    `train`, `export`).  What it is never changes after `compile`: its analysis,
    configuration, backend and, per input-shape signature, its `RunPlan`
    (`run_plan`).  A caller may set its run hooks between runs: `interrupt`
    (called at every checkpoint of a run; raises to stop it), `progress` (told
    how far a run is: run.limits.RunProgress), `memory_limit` (bytes) and
    `operation_check` (called before every backend operation of a run; raises to
    stop it: ide.cancellation)."""

    def __init__(self, analysis: Analysis, backend: Backend, base_dir: Path, *,
                 memory_limit: int | None = None, allow_outside_sinks: bool = False,
                 compiled: bool = False, config: ExecutionConfig | None = None,
                 representation: Mapping[str, str] | None = None,
                 weights: Weights | None = None, not_run: tuple[NotRun, ...] = (),
                 cache_root: Path | None = None, backend_choice: dict | None = None,
                 demand: DemandPlan | None = None, counters: RunCounters | None = None
                 ) -> None:
        config = config if config is not None else ExecutionConfig()
        fields = {
            "analysis": analysis,
            # how to run (fixpoint strategy, projection, trace, ...)
            "config": config,
            "backend": backend,
            # backend="auto": {"backend", "device", "why"} of its choice; None otherwise
            "backend_choice": backend_choice,
            "base_dir": base_dir,
            "allow_outside_sinks": allow_outside_sinks,
            "compiled": compiled,
            # overrides of the plan's dense/sparse
            "representation": MappingProxyType(dict(representation or {})),
            # compile(weights=...): the manifest's tensors, given to every run as inputs
            "weights": weights,
            # compiled for some targets only: what their cone leaves out (check.cone)
            "not_run": not_run,
            # mode="demand" with bound queries: the magic-sets rewrite run (plan.demand)
            "demand": demand,
            # config.cache_dir made ready (compiled runs only; run.cache)
            "cache_root": cache_root,
            "_counters": counters if counters is not None else RunCounters(),
            # per input-shape signature: its RunPlan and what its runs keep (RunCaches)
            "_plans": {},
            "interrupt": None, "progress": None,
            "memory_limit": checked_hook("memory_limit", memory_limit),
            "operation_check": None,
            # the source files compile split (io.file_reads), for the runs to reuse
            "file_reads": {},
            # how long compile took (set by compile: the trace's check phase)
            "compile_seconds": 0.0,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in RUN_HOOKS:
            raise AttributeError(f"a compiled program does not change: `{name}` cannot be "
                                 f"set (compile again; the hooks that can: "
                                 f"{', '.join(sorted(RUN_HOOKS))})")
        object.__setattr__(self, name, checked_hook(name, value))

    def variant(self, *, analysis: Analysis | None = None, backend: Backend | None = None,
                compiled: bool | None = None) -> "CompiledProgram":
        """This program over another analysis (training's loss cone), on another
        backend or compiled otherwise: new plans; its settings, hooks and weights
        come along."""
        out = CompiledProgram(
            self.analysis if analysis is None else analysis,
            variant_backend(self.backend, backend, compiled), self.base_dir,
            memory_limit=self.memory_limit, config=self.config,
            allow_outside_sinks=self.allow_outside_sinks and analysis is None,
            compiled=self.compiled if compiled is None else compiled,
            representation=self.representation, weights=self.weights,
            cache_root=self.cache_root if compiled is None else None,
            demand=self.demand if analysis is None else None)
        object.__setattr__(out, "interrupt", self.interrupt)
        object.__setattr__(out, "operation_check", self.operation_check)
        return out

    @property
    def max_iterations(self) -> int | None:
        """The rounds a recursive group may take (the config's; None: the program's)."""
        return self.config.max_iterations

    @property
    def tolerance(self) -> float:
        """How close two rounds of numeric recursion count as converged (the config's)."""
        return self.config.tolerance

    @property
    def compilations(self) -> int:
        """How many times a straight run of equations was traced into a graph; a
        second run with inputs of the same shapes and dtypes adds none."""
        return self._counters.compilations

    @property
    def runs(self) -> int:
        """How many runs this program has started: the step of `per=run` schedules."""
        return self._counters.runs

    @property
    def cache_entries(self) -> dict[str, bool]:
        """Per cache key of what ran: whether the index knew it already (its graphs
        came from the cache; run.cache)."""
        return self._counters.cache_entries

    def run_plan(self, inputs: Mapping[str, Any] | None = None) -> RunPlan:
        """The RunPlan a run with these inputs executes (the same object: made once
        per input-shape signature); `fuse explain` renders it."""
        given = given_inputs(inputs, self.backend.name)
        with reading_once(dict(self.file_reads)):
            return self._prepared(given)[0]

    @property
    def exports(self) -> tuple[str, ...]:
        """The tensors the program exports (`export A, B`)."""
        return self.analysis.exports

    def run(self, inputs: Mapping[str, Any] | None = None, *, write_sinks: bool = True,
            time_limit: float | None = None) -> dict[str, np.ndarray]:
        """Run the program; returns each export (or, with none, each leaf tensor)
        as a NumPy array.  time_limit: seconds; past it the run stops with
        FuseError (run.limits; None: no limit)."""
        return self.execute(inputs, write_sinks=write_sinks, time_limit=time_limit).outputs

    def run_native(self, inputs: Mapping[str, Any] | None = None, *, write_sinks: bool = True,
                   time_limit: float | None = None) -> dict[str, Any]:
        """As `run`, but the outputs stay the backend's own tensors, on its device
        (no copy back).  Inputs may be NumPy arrays or the backend's tensors."""
        return self.execute(inputs, write_sinks=write_sinks, native=True,
                            time_limit=time_limit).outputs

    def execute(self, inputs: Mapping[str, Any] | None = None, *,
                write_sinks: bool = True, native: bool = False,
                time_limit: float | None = None,
                temperatures: Mapping[str, Any] | None = None,
                unrolled: Mapping[tuple[str, ...], int] | None = None) -> RunResult:
        """Run the program: its outputs, its queries' answers and the sinks written.
        temperatures: values for schedule tensors in place of this run's (training
        gives each step's, as inputs of a captured or jitted step); unrolled: the
        rounds to unroll each fixpoint (by its tensors) to, instead of stopping on
        values (training on jax)."""
        checkpoint = Checkpoint(checked_time_limit(time_limit), self.interrupt, self.progress)
        # a framework tensor stays as it is (moved to the device once, when read)
        given = given_inputs(inputs, self.backend.name)
        with self.backend.context():
            if self.weights is not None:  # inputs given by the caller win
                given = {**self.weights.inputs(self.backend, list(self.analysis.tensors)),
                         **given}
        # (a copy: what this run reads anew is not kept past it)
        started = time.perf_counter()
        with reading_once(dict(self.file_reads)):
            plan, caches = self._prepared(given)
        planned = time.perf_counter() - started
        explainer = Explainer(self, given)  # the inputs before the schedules' values
        schedules = plan.temperatures
        if schedules:  # this run's temperatures, as runtime inputs (run.schedules)
            runs = self._counters.runs
            given = {**{name: np.asarray(s.value(runs if s.per == "run" else 0))
                        for name, s in schedules.items()}, **(temperatures or {}), **given}
        self._counters.runs += 1
        if self.cache_root is not None and caches.cache_key is None:
            # before the run: the jax backend names its stored graphs by it
            caches.cache_key, caches.cache_made_of = self._cache_key(plan.analysis)
        floats = FloatWarnings()
        with self.backend.context(), watching(checkpoint), floats.watching():
            run = Execution(self._settings(), plan, caches, given, write_sinks, native,
                            checkpoint, floats,
                            {n: s for n, s in schedules.items() if s.per == "iteration"},
                            unrolled)
            try:
                with reading_once(dict(self.file_reads)):
                    result = run.go()
            except (EvaluationError, MemoryError) as err:  # one not located by a statement:
                raise FuseError(failure_words(err)) from None  # the program's, in its words
        floats.reissue(plan.analysis)
        if result.trace is not None:  # the phases before the run's own
            result.trace["phases"] = [{"phase": "check", "seconds": self.compile_seconds},
                                      {"phase": "plan", "seconds": planned},
                                      *result.trace.get("phases", ())]
        result.plan = plan
        result.not_run = list(self.not_run)
        if self.demand is not None:  # answers under the queries' own texts and tensors
            rewritten = {w: (q, t) for q, t, w in self.demand.queries}
            for answer in result.queries:
                key = one_line(answer.text)
                if key in rewritten:
                    answer.text, answer.tensor = rewritten[key]
        result.backend = self.backend_choice
        result.seconds = time.perf_counter() - started
        # what `result.why` reads on its first call (references only: no cost till then)
        result.explainer = explainer
        if self.cache_root is not None and not caches.cache_noted:
            from .cache import record as cache_record

            assert caches.cache_key is not None and caches.cache_made_of is not None
            self.cache_entries[caches.cache_key] = cache_record(
                self.cache_root, caches.cache_key, caches.cache_made_of)
            caches.cache_noted = True
        return result

    def every_value(self, inputs: Mapping[str, Any] | None = None) -> tuple[RunPlan, dict]:
        """Every tensor's value of a run with these inputs on the reference engine
        (NumPy, eager), none released and no sink written, with the plan it ran:
        what provenance reads (run.why)."""
        program = self
        if self.backend.name != "numpy" or self.compiled or self.backend.sharded:
            from .backends.numpy_backend import NumpyBackend

            precision = "fp64" if self.config.precision == "fp64" else "fp32"
            program = self.variant(backend=NumpyBackend("cpu", precision), compiled=False)
        given = {n: v if isinstance(v, np.ndarray) else np.asarray(self.backend.to_numpy(v))
                 for n, v in given_inputs(inputs, self.backend.name).items()}
        with reading_once(dict(self.file_reads)):
            plan, caches = program._prepared(given)
        runs = max(self._counters.runs - 1, 0)
        given = {**{name: np.asarray(s.value(runs if s.per == "run" else 0))
                    for name, s in plan.temperatures.items()}, **given}
        with program.backend.context(), np.errstate(all="ignore"):
            run = Execution(program._settings(), plan, caches, given, False)
            try:
                with reading_once(dict(self.file_reads)):
                    return plan, run.every_value()
            except (EvaluationError, MemoryError) as err:
                raise FuseError(failure_words(err)) from None

    def held_run(self, inputs: Mapping[str, Any]) -> Execution:
        """An eager run with these inputs (and the weights') that has not started:
        its `every_value()` keeps every value (nothing released, no sink written)
        on this backend, for a caller to go on from row by row (run.generate)."""
        given = given_inputs(inputs, self.backend.name)
        with self.backend.context():
            if self.weights is not None:
                given = {**self.weights.inputs(self.backend, list(self.analysis.tensors)),
                         **given}
        with reading_once(dict(self.file_reads)):
            plan, caches = self._prepared(given)
        given = {**{name: np.asarray(s.value(0)) for name, s in plan.temperatures.items()},
                 **given}
        return Execution(self._settings(), plan, caches, given, False, native=True)

    def generate(self, prompt: str | Sequence[int], steps: int, *,
                 temperature: float = 1.0, top_k: int | None = None, seed: int | None = 0,
                 tokens: str | None = None, target: str | None = None,
                 vocabulary: Sequence[str] | Mapping | None = None, reuse: bool = True) -> Any:
        """Generate `steps` tokens after `prompt` (text, or token ids) from a causal
        program, one at a time; returns a run.generate.generation.GenerationResult
        (docs/generation.md).  temperature 0 is greedy; top_k keeps the k likeliest;
        seed: the draws (the same seed, the same tokens).  tokens: the token input
        (default: the ids `gather` reads); target: the next token's logits or
        probabilities (default: the export over the vocabulary).  vocabulary: the
        tokens by id (default: the checkpoint's, `fuse train --vocab`).  reuse: a
        step computes only the new position's rows, over the rows kept (when the
        program is causal; else the window is computed whole, said in the result)."""
        from .generate.generation import GenerationOptions, generate

        options = GenerationOptions(steps, temperature, top_k, seed, tokens, target,
                                    _vocabulary_value(vocabulary), reuse)
        return generate(self, prompt, options)

    def _settings(self) -> RunSettings:
        backend = self.backend if self.operation_check is None \
            else CheckedBackend(self.backend, self.operation_check)
        return RunSettings(backend, self.base_dir, self.memory_limit,
                           self.allow_outside_sinks, self.compiled, self.cache_root,
                           self._counters)

    def train(self, data: Mapping[str, Any] | None = None, *, optimizer: str = "adam",
              learning_rate: float = 0.01, schedule: str = "constant", steps: int | None = None,
              seed: int | None = 0,
              weight_decay: float | None = None, batch: Mapping[str, int] | None = None,
              validation: Mapping[str, Any] | None = None, validate_every: int | None = None,
              checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
              resume: str | os.PathLike | None = None, epochs: int | None = None,
              init: Mapping[str, str] | None = None, init_default: str | None = None,
              progress: Callable[[Any], None] | None = None,
              vocabulary: Sequence[str] | Mapping | None = None) -> Any:
        """Learn the params against the program's loss (`train L`) on the torch or jax
        backend; returns a run.train.training.TrainResult (docs/training.md).

        optimizer: "sgd", "adam" or "adamw" (torch.optim / optax); schedule: "constant"
        or "cosine" (the learning rate decays to 0 at `steps`); steps: the step to
        end at, counting a resumed checkpoint's (default 100; epochs: instead, passes
        over the data, each of its batches once, not both); seed: the params' start
        and the batches' draws (None: the start every run has); data: the loss' sources,
        overriding their files; batch: {"n": 64} draws 64 positions of index `n` per
        step; validation: held-out data, its loss every `validate_every` steps;
        checkpoint: a .safetensors file written every `checkpoint_every` steps and
        at the end; resume: a checkpoint to continue from; init: initialisers as
        text per param (`{"W1": "normal(0.02)"}`), over the program's; init_default:
        the initialiser of the weights that have none written; progress: called after
        each step with a run.train.training.TrainProgress; vocabulary: the tokens by id,
        kept in the checkpoint for `generate` (docs/generation.md; None: the vocabulary
        of the program's token ids read from text, `"corpus.txt:vocab.json"`, if
        any).  program.interrupt stops it."""
        from .generate.vocabulary import text_vocabulary
        from .train.training import TrainOptions, train, vocabulary_fits

        if steps is not None and epochs is not None:
            raise FuseError("give steps= or epochs=, not both (an epoch is a number of "
                            "steps: every batch of the data once)")
        if vocabulary is None:  # the one a `.txt:VOCAB` token source reads with, if any
            vocabulary = text_vocabulary(self.analysis, self.base_dir)
        else:  # given: one generate would refuse is refused before the first step
            vocabulary_fits(self, vocabulary)
        options = TrainOptions(optimizer, learning_rate, 100 if steps is None else steps,
                               schedule, seed, weight_decay,
                               dict(batch) if batch else None, validate_every,
                               None if checkpoint is None else os.fspath(checkpoint),
                               checkpoint_every, None if resume is None else os.fspath(resume),
                               epochs, dict(init) if init else None, init_default,
                               _vocabulary_value(vocabulary))
        return train(self, options, data, validation, progress)

    def gradients(self, params: Mapping[str, Any], data: Mapping[str, Any] | None = None
                  ) -> tuple[float, dict[str, np.ndarray]]:
        """The loss (`train L`) at these param values and its gradient for each param,
        by torch autograd or jax.grad through the backend's evaluation."""
        from .train.training import loss_gradients

        return loss_gradients(self, params, data)

    def set_adapters(self, adapters: AdapterChoice) -> None:
        """The weights manifest's LoRA adapters applied from the next run on:
        names (each at its manifest scale), {name: scale}, or None for none.
        The compiled graphs are kept: an adapter changes the weights' values,
        never their shapes (docs/weights.md)."""
        if self.weights is None:
            raise FuseError("set_adapters needs a program compiled with weights= (adapters "
                            "are declared in a weights manifest)")
        try:
            self.weights.set_adapters(adapters)
        except ManifestError as err:
            raise FuseError(f"{err.message} [{err.code}]") from None

    def _cache_key(self, analysis: Analysis) -> tuple[str, dict]:
        """This shape signature's key in the compiled-artifact cache (run.cache)."""
        from . import cache

        settings = {k: v for k, v in self.config.to_json().items()
                    if k not in ("cache_dir", "trace", "backend", "device", "precision")}
        settings["representation"] = dict(sorted(self.representation.items()))
        return cache.cache_key(analysis, self.backend, settings)

    def export(self, format: str, inputs: Mapping[str, Any] | None = None, *,
               dynamic: Sequence[str] = ()) -> Any:
        """The program as one graph of a framework, outside Fuse: "torch" (a
        torch.export ExportedProgram: inputs by keyword, params as the module's
        state, exports as a dict) or "jax"/"stablehlo" (a jax.export artifact and
        its StableHLO text); `dynamic`: the indices whose size the graph leaves
        open.  See run.export and docs/backends.md."""
        from .export import export_program

        return export_program(self, format, inputs, dynamic)

    def memory_needed(self, write_sinks: bool = True) -> int:
        """The bytes a run without inputs needs by the memory guard's estimate
        (its tensors plus the largest intermediate; shapes only, nothing runs)."""
        memory = self.run_plan().schedule(write_sinks).memory
        return memory.total + memory.peak[0]

    def _shapes_known(self, given: Mapping[str, Any]) -> bool:
        """Whether every given input has the shape the program's analysis gave it
        already (a source file's, a manifest's, the declared axes'), and that
        analysis has no error (a missing source file, say, which an input may
        replace): then the analysis with these shapes is the program's own, and
        is not made again."""
        if any(d.severity is Severity.ERROR for d in self.analysis.diagnostics):
            return False
        tensors = self.analysis.tensors
        return all(tuple(tensors[name].shape) == tuple(value.shape)
                   for name, value in given.items())

    def _prepared(self, given: Mapping[str, Any]) -> tuple[RunPlan, RunCaches]:
        """The RunPlan of the given inputs' shape signature, and what its runs keep;
        made on the first run of that signature."""
        for name in given:
            info = self.analysis.tensors.get(name)
            if info is None or info.kind not in INPUT_KINDS:
                sources = [n for n, t in self.analysis.tensors.items() if t.kind in INPUT_KINDS]
                raise FuseError(f"the input `{name}` is not a source or param of this program "
                                f"(those are: {', '.join(sources) or 'none'})")
        key = tuple(sorted((n, tuple(value.shape)) for n, value in given.items()))
        prepared = self._plans.get(key)
        if prepared is None:
            analysis = self.analysis
            if not self._shapes_known(given):  # else the analysis of these shapes is its own
                analysis = analyze(self.analysis.text, self.analysis.path, self.base_dir,
                                   input_shapes={n: tuple(v.shape) for n, v in given.items()})
            raise_on_errors(analysis)
            plan = plan_run(analysis, self.config, Abilities.of(self.backend, self.compiled),
                            given=frozenset(given), signature=key,
                            overrides=self.representation, demand=self.demand)
            prepared = self._plans[key] = (plan, RunCaches())
        return prepared


def _vocabulary_value(vocabulary: Any) -> Any:
    """A vocabulary as the options keep it: entries as a tuple, a `tokenizers`
    tokenizer's JSON (a dict) as it is."""
    if vocabulary is None or isinstance(vocabulary, Mapping):
        return None if vocabulary is None else dict(vocabulary)
    return tuple(vocabulary)
