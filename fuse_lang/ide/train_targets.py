"""What an editor can ask to train: the `train L` statement, and the training's
options as an editor gives them (docs/running-from-the-editor.md, "Training").

`train_targets(analysis)` lists the `train` statements with their spans (the
"Train" code lens sits there); `train_options(given)` turns the options of a
`fuse.train` request (plain JSON data: optimizer, lr, steps, batch, seed, ...)
into the engine's run.train.training.TrainOptions, or says clearly what is wrong
with one.  Nothing here runs anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..check import Analysis
from ..check.loss import train_declarations
from ..front.span import Span
from ..run.train.optimizers import OPTIMIZERS, SCHEDULES
from ..run.train.training import TRAINING_BACKENDS, TrainOptions

# the options a fuse.train request may carry, besides backend, device and precision
# (camelCase as editors send them; each also accepted in snake_case)
OPTION_KEYS = ("optimizer", "lr", "learningRate", "steps", "epochs", "batch", "seed",
               "schedule", "weightDecay", "validateEvery", "checkpoint", "resume", "data",
               "validation")
DEFAULT_STEPS = 100


class TrainOptionError(ValueError):
    """An option of a training request that cannot be used, in words."""


@dataclass(frozen=True, slots=True)
class TrainTarget:
    loss: str  # the loss tensor's name
    span: Span  # the `train L` statement
    statement: int  # its position among the program's statements


def train_targets(analysis: Analysis) -> list[TrainTarget]:
    """The program's `train` statements (the first is the one trained; a second
    is the `loss-twice` error)."""
    statements = analysis.program.statements
    return [TrainTarget(decl.loss.name, decl.span, statements.index(decl))
            for decl in train_declarations(statements)]


def training_backend(configured: str, targets: tuple[tuple[str, str], ...]) -> str:
    """The backend a training request that names none runs on: the configured one
    when it can train, else the first framework installed here that can (a
    "Train" lens works with the default `numpy` setting), else the configured
    one, which the engine then refuses with the names of those that can."""
    if configured in TRAINING_BACKENDS:
        return configured
    return next((b for b, _ in targets if b in TRAINING_BACKENDS), configured)


def train_options(given: Mapping[str, Any], base_dir: Path | None = None) -> TrainOptions:
    """The engine's options from a request's (unknown keys are ignored: backend,
    device and the like are the caller's).  A checkpoint is a path relative to
    the program's folder (`base_dir`), and must stay inside it."""
    def get(*names: str) -> Any:
        for name in names:
            if given.get(name) is not None:
                return given[name]
        return None

    optimizer = _choice(get("optimizer"), "optimizer", OPTIMIZERS, "adam")
    schedule = _choice(get("schedule"), "schedule", SCHEDULES, "constant")
    rate = _number(get("lr", "learningRate", "learning_rate"), "lr", 0.01)
    if not rate > 0:
        raise TrainOptionError(f"lr must be above 0, not {rate}")
    if get("steps") is not None and get("epochs") is not None:  # (epochs won silently)
        raise TrainOptionError("give steps or epochs, not both (an epoch is a number of "
                               "steps: every batch of the data once)")
    steps = _whole(get("steps"), "steps", DEFAULT_STEPS, low=0)
    epochs = _whole(get("epochs"), "epochs", None, low=0)
    seed = _whole(get("seed"), "seed", 0, low=0)
    decay = get("weightDecay", "weight_decay")
    every = _whole(get("validateEvery", "validate_every"), "validateEvery", None, low=1)
    return TrainOptions(optimizer=optimizer, learning_rate=rate, steps=steps,
                        schedule=schedule, seed=seed,
                        weight_decay=None if decay is None else _number(decay, "weightDecay",
                                                                        0.0),
                        batch=_batch(get("batch")), validate_every=every,
                        checkpoint=_checkpoint(get("checkpoint"), base_dir),
                        resume=_checkpoint(get("resume"), base_dir, "resume"), epochs=epochs)


def data_files(given: Mapping[str, Any], key: str, base_dir: Path | None = None
               ) -> dict[str, Path]:
    """A request's `data` or `validation`: `{NAME: "file.npy"}`, each file in the
    program's folder (as `fuse train --data/--validation NAME=FILE.npy`)."""
    value = given.get(key)
    if value is None or value == {}:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in value.items()):
        raise TrainOptionError(f'{key} takes {{NAME: "file.npy"}}, not {value!r}')
    return {name: _inside(file, base_dir, key) for name, file in value.items()}


def read_data_files(files: Mapping[str, Path]) -> dict[str, Any]:
    """The arrays of data_files, read as `fuse train` reads them (.npy, or an .npz
    holding NAME or one array)."""
    from ..io.source_data import load_array_file
    from ..io.source_files import SourceError

    out = {}
    for name, path in files.items():
        try:
            out[name] = load_array_file(path, name)
        except (OSError, ValueError, TypeError, SourceError, MemoryError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else err
            raise TrainOptionError(f"cannot read {path.name} for `{name}`: {reason}") from None
    return out


def _inside(value: str, base_dir: Path | None, what: str) -> Path:
    """`value` as a path in the program's folder, or why not."""
    folder = (base_dir or Path.cwd()).resolve()
    path = (folder / value).resolve()
    if path != folder and folder not in path.parents:
        raise TrainOptionError(f"the {what} file {value} is outside the program's folder "
                               f"{folder}: an editor reads and writes only there")
    return path


def _choice(value: Any, name: str, choices: tuple[str, ...], default: str) -> str:
    if value is None:
        return default
    if value not in choices:
        raise TrainOptionError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _number(value: Any, name: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TrainOptionError(f"{name} must be a number, not {value!r}")
    return float(value)


def _whole(value: Any, name: str, default: int | None, low: int) -> int | None:
    if value is None:
        return default
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < low:
        raise TrainOptionError(f"{name} must be a whole number of at least {low}, "
                               f"not {value!r}")
    return int(value)


def _batch(value: Any) -> dict[str, int] | None:
    """`"n=64"` (as `fuse train --batch`) or `{"n": 64}`."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, str):
        index, sep, size = value.partition("=")
        if sep and index.strip().isidentifier() and size.strip().isdigit():
            value = {index.strip(): int(size)}
    if isinstance(value, dict) and len(value) == 1:
        (index, size), = value.items()
        if isinstance(index, str) and isinstance(size, int) and not isinstance(size, bool) \
                and size >= 1:
            return {index: size}
    raise TrainOptionError(f"batch takes INDEX=N (\"n=64\" or {{\"n\": 64}}), not {value!r}")


def _checkpoint(value: Any, base_dir: Path | None, what: str = "checkpoint") -> str | None:
    """A checkpoint to write (or, `resume`, to read) in the program's folder."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise TrainOptionError(f"{what} must be a file name, not {value!r}")
    path = _inside(value, base_dir, what)
    if path.suffix != ".safetensors":
        raise TrainOptionError(f"{what}: a checkpoint is a .safetensors file, not {value}")
    return str(path)
