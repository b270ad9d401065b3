"""Training a program's params against its loss (`train L`; docs/training.md).

The loss is computed by the engine itself, on the torch or jax backend, from the
program cut to the loss's dependency cone; the params are given to each run as
inputs (the framework's tensors), so the framework differentiates the very
evaluation `fuse run` does (run.train.learners).  The data (the sources the loss reads)
are read once; with `batch={"n": 64}` each step sees 64 positions of index `n`,
drawn without replacement per epoch from the seed and the step, so a resumed
run draws what an uninterrupted one would.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ...check import analyze
from ...check.analysis import TensorKind
from ...check.cone import dependency_cone
from ...check.initialisers import read_initialiser
from ...check.loss import LossInfo, loss_of
from ...check.param_roles import ParamStart, param_starts
from ...front import ir
from ..param_init import initial_param
from ..results import FuseError
from .batches import Batches, annealed_temperatures, loss_data, numbers
from .checkpoints import load_checkpoint, save_checkpoint, writable_checkpoint
from .learners import Rate, make_learner
from .optimizers import OPTIMIZERS, SCHEDULES

# A program here is a run.program.CompiledProgram (which imports this module)
CompiledProgram = Any

TRAINING_BACKENDS = ("torch", "jax")


@dataclass(frozen=True, slots=True)
class TrainProgress:
    """How far training is: told to `progress` after every step."""
    done: int  # steps finished (counting those of a resumed checkpoint)
    total: int
    loss: float  # the last step's training loss
    elapsed_s: float
    validation: float | None = None  # the latest validation loss, if any

    def message(self) -> str:
        held = f", validation {self.validation:.4g}" if self.validation is not None else ""
        return f"step {self.done}/{self.total}: loss {self.loss:.4g}{held}"


@dataclass
class TrainResult:
    loss: str  # the loss tensor's name
    params: dict[str, np.ndarray]  # the learned values
    losses: list[float] = field(default_factory=list)  # per step of this run, before its update
    validation: list[tuple[int, float]] = field(default_factory=list)  # (step, loss)
    first_step: int = 0  # the step this run started at (a resumed checkpoint's)
    steps: int = 0  # the step it ended at
    checkpoint: str | None = None  # the last checkpoint written
    warnings: list[str] = field(default_factory=list)  # what the training did not as asked
    # the first step's seconds: the loss captured as a graph (torch) or the step
    # traced and compiled (jax), and the step itself; then the median of the others
    first_step_seconds: float | None = None
    step_seconds: float | None = None

    def to_json(self) -> dict:
        return {"loss": self.loss, "first_step": self.first_step, "steps": self.steps,
                "warnings": list(self.warnings),
                "first_step_seconds": self.first_step_seconds,
                "step_seconds": self.step_seconds,
                "losses": self.losses, "final_loss": self.losses[-1] if self.losses else None,
                "validation": [list(v) for v in self.validation],
                "checkpoint": self.checkpoint,
                "params": {n: list(v.shape) for n, v in self.params.items()}}


@dataclass(frozen=True)
class TrainOptions:
    optimizer: str = "adam"
    learning_rate: float = 0.01
    steps: int = 100
    schedule: str = "constant"  # or "cosine": decay to 0 over `steps`
    seed: int | None = 0
    weight_decay: float | None = None
    batch: Mapping[str, int] | None = None
    validate_every: int | None = None
    checkpoint: str | None = None
    checkpoint_every: int | None = None
    resume: str | None = None
    epochs: int | None = None  # instead of steps: passes over the data
    # initialisers as text, overriding the program's: {"W1": "normal(0.02)"}; and
    # the one for the weights that neither the program nor `init` gives one
    init: Mapping[str, str] | None = None
    init_default: str | None = None
    # the tokens by id, kept in the checkpoint's metadata for `fuse generate`
    # (run.generate.vocabulary)
    vocabulary: tuple[str, ...] | dict | None = None  # or a tokenizer's JSON


def train(program: CompiledProgram, options: TrainOptions,
          data: Mapping[str, Any] | None = None,
          validation: Mapping[str, Any] | None = None,
          progress: Callable[[TrainProgress], None] | None = None) -> TrainResult:
    """Train `program`'s params against its loss; see CompiledProgram.train."""
    _check_options(program, options)
    loss = loss_of(program.analysis)
    if loss is None:
        raise FuseError("the program names no loss: add `train L` for a scalar tensor `L` "
                        "that its params influence (docs/training.md)")
    if options.vocabulary is None and options.resume is not None:
        # kept from the checkpoint resumed (its next checkpoint lost it, and `fuse
        # generate` of that one had no vocabulary, unless --vocab was given again)
        from ..generate.vocabulary import checkpoint_vocabulary

        kept = checkpoint_vocabulary(options.resume)
        options = replace(options, vocabulary=None if kept is None else
                          (kept if isinstance(kept, dict) else tuple(kept)))
    starts = _param_starts(program, options)
    cut = _loss_program(program, loss)
    backend = program.backend
    with backend.context():
        host = loss_data(cut, loss, dict(data or {}))
        held_out = loss_data(cut, loss, dict(validation)) if validation else None
        batches = Batches(cut, host, options.batch, options.seed)
        if options.epochs is not None:  # an epoch: every batch of the data once
            options = replace(options, steps=options.epochs * batches.per_epoch)
        start, params, state, resumed = _starting_point(_param_shapes(cut, loss, host, data), loss,
                                               options, starts, backend.name)
        if held_out is not None:
            _validation_fits(cut, held_out, {**params, **batches.temperatures(start)},
                             sorted(set(held_out) - set(validation or {})))

        unrolled = _unrolled_rounds(cut, {**batches.whole, **params})
        rate = Rate(options.learning_rate, options.schedule, options.steps)
        learner = make_learner(backend, _loss_function(cut, loss, unrolled), params,
                               options.optimizer,
                               rate, options.weight_decay, fresh=_fresh_loss(program, loss),
                               stored=_stored_capture(cut))
        if state is not None:
            learner.load_optimizer_state(state)
        untrained, said = _untrained(program, loss, options, starts)
        # `fuse check`'s gradient-blocked, said by the training that it concerns too
        said += [d.message for d in program.analysis.diagnostics
                 if d.code == "gradient-blocked"]
        # (the params the loss does not reach, at their start: in every checkpoint)
        result = TrainResult(loss.name, untrained, first_step=start, steps=start,
                             warnings=list(batches.warnings) + resumed + said)
        if start > options.steps:  # steps is the step to end at, not a number to take
            result.warnings.append(f"the checkpoint is at step {start}, past the steps to "
                                   f"end at ({options.steps}): no step taken (steps counts "
                                   f"the checkpoint's)")
        _loop(program, cut, learner, batches, held_out, options, result, progress)
        result.params = {**untrained, **learner.params()}
    return result


def loss_gradients(program: CompiledProgram, params: Mapping[str, Any],
                   data: Mapping[str, Any] | None = None
                   ) -> tuple[float, dict[str, np.ndarray]]:
    """The loss at `params` (every param the loss reaches) and its gradient for
    each, by the backend's framework; see CompiledProgram.gradients."""
    _check_options(program, TrainOptions())
    loss = loss_of(program.analysis)
    if loss is None:
        raise FuseError("the program names no loss: add `train L` (docs/training.md)")
    missing = [n for n in loss.params if n not in params]
    if missing:
        raise FuseError(f"no value given for the param `{missing[0]}`")
    declared = sorted(n for n, t in program.analysis.tensors.items()
                      if t.kind == TensorKind.PARAM)
    unknown = sorted(set(params) - set(declared))
    if unknown:  # (a misspelt name was dropped without a word)
        raise FuseError(f"`{unknown[0]}` is not a param of the program (its params: "
                        f"{', '.join(declared) or 'none'})")
    cut = _loss_program(program, loss)
    with program.backend.context():
        batches = Batches(cut, loss_data(cut, loss, dict(data or {})), None, 0)
        inputs = {**batches.whole, **batches.temperatures(0)}

        start = {n: numbers(params[n], f"the param `{n}`") for n in loss.params}
        unrolled = _unrolled_rounds(cut, {**batches.whole, **start})
        learner = make_learner(program.backend, _loss_function(cut, loss, unrolled), start, "sgd",
                               Rate(1.0), None, fresh=_fresh_loss(program, loss))
        value, grads = learner.evaluate(inputs), learner.gradients(inputs)
    # a param given that the loss does not depend on: its gradient is zero (it was
    # left out of the answer, a KeyError for whoever asked for it)
    grads.update({n: np.zeros(np.shape(params[n])) for n in params if n not in grads})
    return value, grads


def _check_options(program: CompiledProgram, options: TrainOptions) -> None:
    name = program.backend.name
    if name not in TRAINING_BACKENDS:
        raise FuseError(f"training needs gradients, which the {name} backend does not "
                        f"compute: train on the torch or jax backend (backend='torch' or "
                        f"'jax'; `fuse train --backend torch|jax`)")
    if options.optimizer not in OPTIMIZERS:
        raise FuseError(f"unknown optimizer `{options.optimizer}`: use one of "
                        f"{', '.join(OPTIMIZERS)}")
    if options.schedule not in SCHEDULES:
        raise FuseError(f"unknown schedule `{options.schedule}`: use one of "
                        f"{', '.join(SCHEDULES)}")
    # whole numbers and finite rates, said in words (a float, a string or a negative
    # seed was a TypeError or NumPy's ValueError; an infinite rate "became nan")
    _whole(options.steps, "steps", 0)
    for what, least in (("epochs", 0), ("seed", 0), ("validate_every", 1),
                        ("checkpoint_every", 1)):
        if getattr(options, what) is not None:
            _whole(getattr(options, what), what, least)
    for index, size in (options.batch or {}).items():
        _whole(size, f"the batch size of `{index}`", 1)
    if not _real(options.learning_rate) or not 0 < options.learning_rate < math.inf:
        raise FuseError(f"the learning rate is a finite number above 0, not "
                        f"{options.learning_rate!r}")
    if options.weight_decay is not None and not (
            _real(options.weight_decay) and 0 <= options.weight_decay < math.inf):
        raise FuseError(f"the weight decay must be 0 or more, not {options.weight_decay}")
    for name, text in (options.init or {}).items():
        if not isinstance(text, str):  # (an AttributeError from .strip())
            raise FuseError(f"the initialiser of `{name}` is given as text "
                            f"(\"normal(0.02)\"), not {text!r}")
    if options.checkpoint is not None:  # (as the editor's: `fuse run --params` reads it)
        writable_checkpoint(options.checkpoint)


def _real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) \
        and not isinstance(value, bool)


def _whole(value: Any, what: str, least: int) -> None:
    """FuseError unless `value` is a whole number (an int, not a bool) of at least `least`."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
        raise FuseError(f"{what} must be a whole number of at least {least}, not {value!r}")


def vocabulary_fits(program: CompiledProgram, vocabulary: Any) -> None:
    """FuseError before the first step for a vocabulary to keep in the checkpoint
    whose length is not the extent of the program's vocabulary axis (the one
    `gather` reads token ids along): it was kept, and `generate` refused it after."""
    if vocabulary is None:
        return
    from ...check.generation import GenerationProblem, generation_roles
    from ..generate.vocabulary import Vocabulary

    try:
        size = generation_roles(program.analysis).vocabulary
    except GenerationProblem:  # a program that does not generate: kept as given
        return
    held = len(Vocabulary(vocabulary))
    if size is not None and held != size:
        raise FuseError(f"the vocabulary holds {held} tokens but the program's vocabulary "
                        f"axis has {size}: was it written for another model?")


def _loss_program(program: CompiledProgram, loss: LossInfo) -> CompiledProgram:
    """The program cut to the loss's cone, on the same backend, the loss its output."""
    analysis = program.analysis
    cone = dependency_cone(analysis, [loss.name])
    cut = analyze(cone.text, analysis.path, program.base_dir)
    return program.variant(analysis=cut)


def _loss_function(cut: CompiledProgram, loss: LossInfo,
                   unrolled: Mapping[tuple[str, ...], int] | None = None
                   ) -> Callable[[Mapping[str, Any]], Any]:
    """The loss as a function of the run's inputs (data and params), computed by the
    engine as the framework's scalar tensor."""
    annealed = annealed_temperatures(cut)

    def run_loss(inputs: Mapping[str, Any]) -> Any:
        temperatures = {n: v for n, v in inputs.items() if n in annealed}
        given = {n: v for n, v in inputs.items() if n not in annealed}
        return cut.execute(given, write_sinks=False, native=True,
                           temperatures=temperatures, unrolled=unrolled).outputs[loss.name]
    return run_loss


def _fresh_loss(program: CompiledProgram, loss: LossInfo
                ) -> Callable[[], Callable[[Mapping[str, Any]], Any]]:
    """How to make the loss of a fresh copy of the program, for torch to capture it
    as a graph (run.train.captured_loss)."""
    return lambda: _loss_function(_loss_program(program, loss), loss)


def _stored_capture(cut: CompiledProgram) -> Path | None:
    """Where torch's captured loss is kept with a compile cache (`cache_dir`):
    `DIR/torch/fuse-train/<the loss program's cache key>` (run.cache: its
    definition, shapes, settings, precision and torch's version)."""
    folder = cut.config.cache_dir
    if folder is None or cut.backend.name != "torch":
        return None
    key, _ = cut._cache_key(cut.analysis)
    return Path(folder).expanduser() / "torch" / "fuse-train" / key


def _unrolled_rounds(cut: CompiledProgram, inputs: Mapping[str, Any]
                     ) -> dict[tuple[str, ...], int] | None:
    """On jax, each fixpoint of the loss is unrolled to twice the rounds it takes
    at the start (one concrete run counts them), plus one: jax cannot trace a loop
    that stops on values, nor differentiate a while-loop; the rounds after it
    converged change nothing (docs/training.md)."""
    if cut.backend.name != "jax" or not cut.analysis.recursive:
        return None
    taken = cut.execute(inputs, write_sinks=False, native=True).rounds
    return {group: 2 * n + 1 for group, n in taken.items()} or None


def _param_shapes(cut: CompiledProgram, loss: LossInfo, host: dict[str, np.ndarray],
                  given: Mapping[str, Any] | None) -> dict[str, tuple[int | None, ...]]:
    """Each param's shape, the data given included (its file may not exist)."""
    analysis = cut.analysis
    if given:
        analysis = analyze(analysis.text, analysis.path, cut.base_dir,
                           input_shapes={n: tuple(host[n].shape) for n in given})
    return {n: analysis.tensors[n].shape for n in loss.params}


def _validation_fits(cut: CompiledProgram, held_out: Mapping[str, np.ndarray],
                     others: Mapping[str, Any], from_files: list[str]) -> None:
    """FuseError, before the first step, when the held-out data do not fit the loss
    (it came at the first validation, in words of inputs given for data that was
    read from its file)."""
    try:
        cut.run_plan({**held_out, **others})
    except FuseError as err:
        files = f" ({', '.join(from_files)} not given: read from the program's files)" \
            if from_files else ""
        raise FuseError(f"the validation data{files} do not fit the loss: {err}") from None


def _param_starts(program: CompiledProgram, options: TrainOptions) -> dict[str, ParamStart]:
    """How each param starts: `options.init`'s initialiser, else the program's, else
    `options.init_default` for a weight, else its role's default.  The roles are read
    from the whole program, as a run's are (not from the loss' cone)."""
    analysis = program.analysis
    params = sorted(n for n, t in analysis.tensors.items() if t.kind == TensorKind.PARAM)
    given = {}
    for name, text in (options.init or {}).items():
        if name not in params:
            raise FuseError(f"an initialiser is given for `{name}`, which is not a param of "
                            f"the program (its params: {', '.join(params) or 'none'})")
        given[name] = _initialiser(text, f"the initialiser of `{name}`")
    default = None if options.init_default is None else \
        _initialiser(options.init_default, "the default initialiser")
    return param_starts(analysis, given, default)


def _initialiser(text: str, what: str) -> ir.Initialiser:
    try:
        return read_initialiser(text)
    except ValueError as err:
        raise FuseError(f"{what}: {err}") from None


def _untrained(program: CompiledProgram, loss: LossInfo, options: TrainOptions,
               starts: Mapping[str, ParamStart]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The params of the program that the loss does not reach, as they start (a
    resumed checkpoint's values where it holds them), and the warning that says
    so: they were left out of the checkpoint, which `fuse run --params` then
    refused for the program ("gives no value for the param")."""
    analysis = program.analysis
    names = sorted(n for n, t in analysis.tensors.items()
                   if t.kind == TensorKind.PARAM and n not in loss.params)
    if not names:
        return {}, []
    saved = load_checkpoint(options.resume).params if options.resume else {}
    out = {}
    for name in names:
        shape = analysis.tensors[name].shape
        if name in saved and tuple(saved[name].shape) == tuple(shape):
            out[name] = saved[name]
        elif all(extent is not None for extent in shape):
            out[name] = initial_param(name, shape, options.seed, starts.get(name))
    listed = ", ".join(f"`{n}`" for n in names)
    which, left = ("params", "them as they start") if len(names) > 1 else \
        ("param", "it as it starts")
    kept = " (the checkpoint keeps that start)" if options.checkpoint else ""
    return out, [f"the loss `{loss.name}` does not depend on the {which} {listed}: "
                 f"training leaves {left}{kept}"]


def _starting_point(shapes: Mapping[str, tuple[int | None, ...]], loss: LossInfo,
                    options: TrainOptions, starts: Mapping[str, ParamStart], framework: str
                    ) -> tuple[int, dict[str, np.ndarray], dict[str, np.ndarray] | None,
                               list[str]]:
    """The step, params and optimizer state to start from: a checkpoint's, or fresh
    (FuseError for a checkpoint whose optimizer state this run cannot take up), and
    the warnings of a resume whose settings differ from the checkpoint's run."""
    if options.resume is None:
        return 0, {n: initial_param(n, shapes[n], options.seed, starts.get(n))
                   for n in loss.params}, None, []
    saved = load_checkpoint(options.resume)
    missing = [n for n in loss.params if n not in saved.params]
    if missing:
        raise FuseError(f"the checkpoint {options.resume} has no `{missing[0]}`")
    for name in loss.params:
        if tuple(saved.params[name].shape) != tuple(shapes[name]):
            raise FuseError(f"the checkpoint's `{name}` has shape "
                            f"{tuple(saved.params[name].shape)}; the program's is "
                            f"{tuple(shapes[name])}")
    if saved.optimizer_state is not None:  # (without one, nothing to take up)
        _same_optimizer(options, saved.metadata, framework)
    return saved.step, {n: saved.params[n] for n in loss.params}, saved.optimizer_state, \
        _resumed_otherwise(options, saved.metadata)


def _resumed_otherwise(options: TrainOptions, metadata: Mapping[str, str]) -> list[str]:
    """A warning for each setting that this run sets otherwise than the checkpoint's
    run did (its metadata): the steps after the checkpoint then differ from an
    uninterrupted run's, which a resume is otherwise (the same batches, the same
    rates).  A checkpoint written before a setting was recorded says nothing of it."""
    said = []
    where = f"the checkpoint {options.resume}"
    for key, what, now in (("fuse.learning_rate", "learning rate", repr(options.learning_rate)),
                           ("fuse.schedule", "schedule", options.schedule),
                           ("fuse.seed", "seed", repr(options.seed))):
        before = metadata.get(key)
        if before is not None and before != now:
            why = " (the batches are drawn from the seed)" if what == "seed" else ""
            said.append(f"{where} was trained with the {what} {before}, this run with {now}: "
                        f"the steps from here on are not an uninterrupted run's{why}")
    before = metadata.get("fuse.steps")
    if options.schedule != "constant" and before is not None and before != str(options.steps):
        said.append(f"{where} was trained towards {before} steps, this run towards "
                     f"{options.steps}: the {options.schedule} schedule's rates from here on "
                     f"are not an uninterrupted run's")
    return said


def _same_optimizer(options: TrainOptions, metadata: Mapping[str, str], framework: str
                    ) -> None:
    """FuseError unless the checkpoint's optimizer state is this run's optimizer's, in
    its framework's layout (torch.optim's per param, optax's leaves): another one's
    state was taken silently (torch) or refused as "another optimizer?" (jax)."""
    where = f"the checkpoint {options.resume}"
    saved = metadata.get("fuse.optimizer")
    if saved is not None and saved != options.optimizer:
        raise FuseError(f"{where} was trained with the optimizer `{saved}`, whose state "
                        f"it holds: resume it with optimizer {saved} (`--optimizer "
                        f"{saved}`), not {options.optimizer}")
    written_by = metadata.get("fuse.backend")
    if written_by is not None and written_by != framework:
        raise FuseError(f"{where} holds {written_by}'s optimizer state: resume it on the "
                        f"{written_by} backend (`--backend {written_by}`); its params run "
                        f"on any backend (`fuse run --params`)")


def _loop(program: CompiledProgram, cut: CompiledProgram, learner: Any, batches: Batches,
          held_out: dict[str, np.ndarray] | None, options: TrainOptions,
          result: TrainResult, progress: Callable[[TrainProgress], None] | None) -> None:
    started = time.perf_counter()
    every = options.validate_every or max(1, options.steps // 10)
    held = {n: batches.backend.asarray(v) for n, v in held_out.items()} \
        if held_out is not None else None
    latest = None
    saved_at = None
    times: list[float] = []
    for step in range(result.first_step, options.steps):
        if program.interrupt is not None:
            program.interrupt()
        before = time.perf_counter()
        inputs = {**batches.at(step), **batches.temperatures(step)}
        try:
            value = learner.step(inputs, step)
        except FuseError:
            raise
        except Exception as err:  # noqa: BLE001 - the framework's, in a captured step
            raise FuseError(_data_error(cut, inputs, learner) or
                            f"step {step + 1} failed in {program.backend.name}: "
                            f"{type(err).__name__}: {err}") from None
        times.append(time.perf_counter() - before)
        result.first_step_seconds = times[0]
        result.step_seconds = float(np.median(times[1:])) if len(times) > 1 else None
        if not np.isfinite(value) and step == result.first_step:  # before any update
            raise FuseError(_data_error(cut, inputs, learner) or
                            f"the loss `{result.loss}` is {value} at the start (step "
                            f"{step + 1}, before any update): the program gives it for the "
                            f"starting params and data, whatever the learning rate (a log "
                            f"or sqrt of a negative number, a division by 0?)")
        if not np.isfinite(value):
            raise FuseError(_data_error(cut, inputs, learner) or
                            f"the loss `{result.loss}` became {value} at step {step + 1}"
                            f"{_not_finite(learner.params())}: too high a learning rate (lower "
                            f"it), or a gradient that is not finite (a sqrt, a log or a "
                            f"power below 1 of 0: keep its argument off 0, `sqrt(x + 1e-12)`)")
        result.losses.append(value)
        result.steps = step + 1
        if held is not None and (result.steps % every == 0 or result.steps == options.steps):
            latest = learner.evaluate({**held, **batches.temperatures(step)})
            result.validation.append((result.steps, latest))
        if options.checkpoint and options.checkpoint_every \
                and result.steps % options.checkpoint_every == 0:
            result.checkpoint = _save(learner, options, result, program.backend.name)
            saved_at = result.steps
        if progress is not None:
            progress(TrainProgress(result.steps, options.steps, value,
                                   time.perf_counter() - started, latest))
    if options.checkpoint and saved_at != result.steps:
        result.checkpoint = _save(learner, options, result, program.backend.name)


def _data_error(cut: CompiledProgram, inputs: Mapping[str, Any], learner: Any
                ) -> str | None:
    """What an eager run of the program says of a step's data (token ids or class
    ids outside the vocabulary, which a captured or traced step cannot stop on: an
    IndexError of the framework, or NaN), or None where it runs."""
    empty = [n for n, v in sorted(inputs.items()) if 0 in tuple(getattr(v, "shape", ()))]
    if empty:
        return (f"the data `{empty[0]}` of a step is empty (shape "
                f"{tuple(inputs[empty[0]].shape)}): the loss has no examples to average")
    try:  # `cut`: the loss' cone only, what the step computes
        cut.variant(compiled=False).run({**inputs, **learner.params()}, write_sinks=False)
    except FuseError as err:
        return f"the data of a step: {err}"
    except Exception:  # noqa: BLE001 - the caller says what the step itself raised
        return None
    return None


def _not_finite(params: Mapping[str, np.ndarray]) -> str:
    """Which params the updates made NaN or infinite, said after the loss' step."""
    broken = [n for n, v in sorted(params.items()) if not np.isfinite(v).all()]
    if not broken:
        return ""
    shown = ", ".join(f"`{n}`" for n in broken[:3]) + (" ..." if len(broken) > 3 else "")
    return f" (the updates before it left {shown} not finite)"


def _save(learner: Any, options: TrainOptions, result: TrainResult, framework: str) -> str:
    metadata = {"fuse.step": str(result.steps), "fuse.loss": result.loss,
                "fuse.optimizer": options.optimizer, "fuse.backend": framework,
                "fuse.learning_rate": repr(options.learning_rate),
                "fuse.schedule": options.schedule, "fuse.steps": str(options.steps),
                "fuse.seed": repr(options.seed)}
    if options.vocabulary is not None:
        vocabulary = options.vocabulary  # entries, or a tokenizer's JSON object
        metadata["fuse.vocabulary"] = json.dumps(
            vocabulary if isinstance(vocabulary, dict) else list(vocabulary), ensure_ascii=False)
    assert options.checkpoint is not None
    params = {**result.params, **learner.params()}  # (result.params: the untrained)
    return str(save_checkpoint(Path(options.checkpoint), params,
                               learner.optimizer_state(), metadata))
