"""`fuse train PROG`: learn a program's params against its loss (docs/training.md).

    fuse train [--backend torch|jax] [--optimizer sgd|adam|adamw] [--lr X]
               [--schedule constant|cosine] [--steps N] [--seed N] [--batch INDEX=N]
               [--data NAME=FILE.npy]... [--validation NAME=FILE.npy]... [--checkpoint FILE.safetensors]
               [--checkpoint-every N] [--resume FILE.safetensors] [--init NAME=INIT]...
               [--init-default INIT] [--vocab FILE.json] [--format text|json]
               [--cache-dir [DIR]] PATH

The loss is printed about ten times along the way (and drawn in a progress bar
on a terminal), then the first step's seconds (capture or compile) apart from
the others'; the learned params go to the checkpoint file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..front.numbers import strict_json
from ..speed.fastinit import frozen_dataclass
from .render import fail_with_diagnostics
from .status import EXIT_INTERRUPTED, EXIT_OK, CommandFailed, UsageError, fail, file_name


def add_train_parser(sub: Any) -> None:
    """`fuse train`'s options on the subcommand parsers `sub`."""
    from ..run.train.optimizers import OPTIMIZERS, SCHEDULES

    p = sub.add_parser("train", help="learn a program's params against its loss (`train L`)")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--backend", default="torch", choices=("torch", "jax", "numpy"),
                   help="the framework whose gradients train (default torch; numpy has none)")
    p.add_argument("--device", default=None, help="cpu (the default), cuda, cuda:N or auto")
    p.add_argument("--precision", default="fp32", choices=("fp32", "fp64", "bf16", "fp16"))
    p.add_argument("--optimizer", default="adam", choices=OPTIMIZERS)
    p.add_argument("--lr", type=_positive_float, default=0.01, dest="learning_rate",
                   metavar="X", help="the learning rate (default 0.01)")
    p.add_argument("--schedule", default="constant", choices=SCHEDULES,
                   help="the learning rate: constant, or cosine decay to 0 at --steps")
    p.add_argument("--weight-decay", type=float, default=None, metavar="X")
    p.add_argument("--steps", type=_at_least(0), default=None, metavar="N",
                   help="the step to end at, counting a resumed checkpoint's (default 100)")
    p.add_argument("--epochs", type=_at_least(0), default=None, metavar="N",
                   help="instead of --steps: N passes over the data (each batch once)")
    p.add_argument("--seed", type=_at_least(0), default=0, metavar="N",
                   help="the params' start and the batches' draws (default 0)")
    p.add_argument("--batch", metavar="INDEX=N",
                   help="draw N positions of the data's index INDEX per step")
    p.add_argument("--data", action="append", default=[], metavar="NAME=FILE.npy",
                   help="give a data source of the loss from a file (repeatable)")
    p.add_argument("--validation", action="append", default=[], metavar="NAME=FILE.npy",
                   help="held-out data: the loss on it is shown along the way (repeatable)")
    p.add_argument("--validate-every", type=_at_least(1), default=None, metavar="N")
    p.add_argument("--checkpoint", type=file_name, metavar="FILE.safetensors",
                   help="write the params here (and the optimizer's state beside)")
    p.add_argument("--checkpoint-every", type=_at_least(1), default=None, metavar="N")
    p.add_argument("--resume", type=file_name, metavar="FILE.safetensors",
                   help="continue from a checkpoint written by fuse train")
    p.add_argument("--init", action="append", default=[], metavar="NAME=INIT",
                   help="start the param NAME with INIT (normal(0.02), kaiming, zeros...) "
                        "instead of the program's initialiser (repeatable)")
    p.add_argument("--init-default", default=None, metavar="INIT",
                   help="the initialiser of the weights that have none (default glorot)")
    p.add_argument("--vocab", type=file_name, metavar="FILE.json",
                   help="the tokens by id (a JSON list), kept in the checkpoint for "
                        "`fuse generate`")
    p.add_argument("--format", choices=("text", "json"), default="text")
    from .cache import add_cache_dir_option

    add_cache_dir_option(p, "jax's compiled step; torch's captured graph")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return value


def _at_least(least: int) -> Any:
    """An argparse type: a whole number of at least `least` (a negative --seed was
    NumPy's traceback, a negative --steps exit 1 where --batch n=0 is exit 2)."""
    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, "
                                             f"not {text!r}")
        return value
    return whole


def _cache_dir(value: str | None) -> str | None:
    from .cache import cache_dir_of

    return cache_dir_of(value)


def _batch(text: str | None) -> dict[str, int] | None:
    if text is None:
        return None
    index, sep, size = text.partition("=")
    if not sep or not index.strip() or not size.strip().isdigit() or int(size) < 1:
        raise UsageError(f"--batch takes INDEX=N (n=64), not {text!r}")
    return {index.strip(): int(size)}


def _inits(items: list[str]) -> dict[str, str]:
    """`--init NAME=INIT`s (the initialiser itself is checked by training)."""
    out = {}
    for text in items:
        name, sep, init = text.partition("=")
        if not sep or not name.strip() or not init.strip():
            raise UsageError(f"--init takes NAME=INIT (W1=normal(0.02)), not {text!r}")
        out[name.strip()] = init.strip()
    return out


@frozen_dataclass
class TrainOptions:
    """`fuse train`'s options; `batch` read from `--batch INDEX=N`."""
    path: str
    backend: str
    device: str | None
    precision: str
    optimizer: str
    learning_rate: float
    schedule: str
    weight_decay: float | None
    steps: int | None  # None: the default (100), or --epochs
    epochs: int | None
    seed: int
    batch: dict[str, int] | None
    data: tuple[str, ...]
    validation: tuple[str, ...]
    validate_every: int | None
    checkpoint: str | None
    checkpoint_every: int | None
    resume: str | None
    init: dict[str, str]
    init_default: str | None
    format: str
    vocab: str | None = None
    cache_dir: str | None = None

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> TrainOptions:
        """The options of a parsed `fuse train` command line; UsageError for a
        malformed `--batch` or `--init`, or both `--steps` and `--epochs`."""
        if ns.steps is not None and ns.epochs is not None:
            raise UsageError("give --steps N or --epochs N, not both (an epoch is a number "
                             "of steps: every batch of the data once)")
        return cls(path=ns.path, backend=ns.backend, device=ns.device, precision=ns.precision,
                   optimizer=ns.optimizer, learning_rate=ns.learning_rate,
                   schedule=ns.schedule, weight_decay=ns.weight_decay, steps=ns.steps,
                   epochs=ns.epochs, seed=ns.seed, batch=_batch(ns.batch),
                   data=tuple(ns.data), validation=tuple(ns.validation),
                   validate_every=ns.validate_every, checkpoint=ns.checkpoint,
                   checkpoint_every=ns.checkpoint_every, resume=ns.resume,
                   init=_inits(ns.init), init_default=ns.init_default, format=ns.format,
                   vocab=ns.vocab, cache_dir=_cache_dir(ns.cache_dir))


def cmd_train(options: TrainOptions) -> int:
    """`fuse train`: the params learned and the loss shown; CommandFailed after
    saying why not."""
    from ..plan.config import ExecutionConfig
    from ..run.generate.vocabulary import read_vocabulary_file
    from ..run.program import FuseError, compile
    from .progress import progress_bar  # the engine is imported only to train
    from .reading import read_program

    text = read_program(options.path)
    data, held = _read_data(options)
    bar = progress_bar(sys.stderr, unit="step", desc="fuse train")
    shown = _Shown(bar, options.format == "text")
    try:
        vocabulary = read_vocabulary_file(options.vocab) if options.vocab else None
        program = compile(text, backend=options.backend, device=options.device,
                          base_dir=Path(options.path).parent, path=options.path,
                          precision=options.precision,
                          config=ExecutionConfig(cache_dir=options.cache_dir))
        result = program.train(data, optimizer=options.optimizer,
                               learning_rate=options.learning_rate, schedule=options.schedule,
                               steps=options.steps, seed=options.seed,
                               weight_decay=options.weight_decay, batch=options.batch,
                               validation=held or None, validate_every=options.validate_every,
                               checkpoint=options.checkpoint,
                               checkpoint_every=options.checkpoint_every,
                               resume=options.resume, epochs=options.epochs,
                               init=options.init or None, init_default=options.init_default,
                               progress=shown, vocabulary=vocabulary)
    except KeyboardInterrupt:
        fail(f"fuse: {options.path}: training was stopped (Ctrl-C); the last checkpoint "
             f"written stays", EXIT_INTERRUPTED)
    except FuseError as err:
        fail_with_diagnostics(options.path, text, err)
    finally:
        if bar is not None:
            bar.close()
    _print_trained(result, options.format)
    return EXIT_OK


def _read_data(options: TrainOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """`--data` and `--validation` read, both (and the problems of both said)
    before CommandFailed for either."""
    from .reading import read_inputs

    read: list[dict[str, Any]] = []
    failed: CommandFailed | None = None
    for flag, items in (("--data", options.data), ("--validation", options.validation)):
        try:
            read.append(read_inputs(items, flag))
        except CommandFailed as err:
            failed = failed or err
            read.append({})
    if failed is not None:
        raise failed
    return read[0], read[1]


def _print_trained(result: Any, fmt: str) -> None:
    """The training's outcome on stdout: its JSON, or a few lines of text (its
    warnings on stderr)."""
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if fmt == "json":
        # strict JSON: a NaN or infinite loss is null (docs/cli.md)
        json.dump(strict_json(result.to_json()), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
        return
    final = f"{result.losses[-1]:.6g}" if result.losses else "(no step taken)"
    print(f"trained `{result.loss}`: steps {result.first_step}-{result.steps}, "
          f"final loss {final}")
    if result.validation:
        print(f"validation loss {result.validation[-1][1]:.6g} at step "
              f"{result.validation[-1][0]}")
    if result.first_step_seconds is not None:
        then = f", then {result.step_seconds * 1e3:.3g} ms a step (median)" \
            if result.step_seconds is not None else ""
        print(f"first step {result.first_step_seconds:.3g} s (the step captured or "
              f"compiled){then}")
    if result.checkpoint:
        print(f"wrote {result.checkpoint}")


class _Shown:
    """The progress callback: the bar on a terminal, and a line about every tenth
    of the steps on stdout (text format)."""

    def __init__(self, bar: Any, lines: bool) -> None:
        self.bar = bar
        self.lines = lines

    def __call__(self, now: Any) -> None:
        if self.bar is not None:
            self.bar(now)
        every = max(1, now.total // 10)
        if self.lines and (now.done % every == 0 or now.done == now.total):
            print(now.message(), flush=True)
