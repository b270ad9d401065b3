"""Training a document's params from the editor (`fuse.train`): only on request,
off the event loop, with work-done progress (the step and the loss), and
cancellable, like `fuse.run` (fuse_lsp.running).

The options come from the request's arguments, else from the server's train
settings (fuse_lang.ide.train_targets.train_options checks them); backend,
device and precision as for runs.  A training is bounded as a run is: it
stops at `runTimeLimit` seconds of computing, and it starts only once its
memory estimate fits the runs' shared budget.  A checkpoint, when asked for,
is written once, at the end: a cancelled or stopped training leaves none.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types

from fuse_lang.ide.cancellation import Cancelled, CancelToken, cancellable
from fuse_lang.ide.train_summary import TrainRecorder, summarize_training
from fuse_lang.ide.train_targets import (
    TrainOptionError,
    data_files,
    read_data_files,
    train_options,
    training_backend,
)
from fuse_lang.run.program import CompiledProgram, FuseError, compile
from fuse_lang.run.train.training import TrainOptions

from .run_budget import RunRefused
from .running import Progress, cancelled, document_name, follow, watch_request
from .state import DocumentTooLarge, DocumentUnavailable, FuseServer, file_path

TRAIN = "fuse.train"
# autograd keeps the forward evaluation's intermediates for the backward pass, and
# the optimizer its moments: a training is taken to need twice a run's estimate
TRAIN_MEMORY_FACTOR = 2


@dataclass(frozen=True)
class TrainRequest:
    uri: str
    name: str
    base_dir: Path
    backend: str
    device: str
    precision: str
    given: dict  # the request's own options (over the settings')


def parse_train_request(ls: FuseServer, args: tuple[Any, ...],
                        targets: tuple[tuple[str, str], ...] = ()) -> TrainRequest:
    """`[uri, {backend?, device?, precision?, optimizer?, lr?, steps?, batch?, seed?,
    schedule?, epochs?, weightDecay?, validateEvery?, checkpoint?, resume?, data?,
    validation?}]` (data, validation: `{NAME: "file.npy"}` in the program's folder)."""
    if not args or not isinstance(args[0], str):
        raise ValueError("fuse.train takes [uri, {backend?, device?, precision?, optimizer?, "
                         "lr?, steps?, batch?, seed?, ...}]")
    uri = args[0]
    extra = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    path = file_path(uri)
    return TrainRequest(uri, document_name(uri), Path(path).parent if path else Path.cwd(),
                        str(extra.get("backend")
                            or training_backend(ls.options.backend, targets)),
                        str(extra.get("device") or ls.options.device),
                        str(extra.get("precision") or ls.options.precision), dict(extra))


def request_options(ls: FuseServer, request: TrainRequest) -> TrainOptions:
    """The settings' train options, the request's over them."""
    o = ls.options
    settings = {"optimizer": o.train_optimizer, "lr": o.train_learning_rate,
                "steps": o.train_steps, "batch": o.train_batch or None, "seed": o.train_seed}
    given = {k: v for k, v in request.given.items() if v is not None}
    if "learningRate" in given or "learning_rate" in given:
        settings.pop("lr")
    if "epochs" in given:  # instead of the settings' steps
        settings.pop("steps")
    return train_options({**settings, **given}, request.base_dir)


def _compile(request: TrainRequest, text: str) -> CompiledProgram:
    path = str(request.base_dir / request.name) if request.uri.startswith("file:") else None
    return compile(text, backend=request.backend, device=request.device,
                   base_dir=request.base_dir, path=path, precision=request.precision)


async def train_document(ls: FuseServer, request: TrainRequest) -> dict[str, Any]:
    """Train the document's params; the summary as JSON data (`ok` false with
    `error` on failure, `cancelled` true when cancelled)."""
    cancel = CancelToken()
    watch_request(ls, cancel)
    where = f"{request.device} ({request.backend})"
    progress = await Progress.start(ls, f"Training {request.name} on {where}", cancel, TRAIN)
    started = time.perf_counter()
    recorder = TrainRecorder()
    try:
        options = request_options(ls, request)
        files = {key: data_files(request.given, key, request.base_dir)
                 for key in ("data", "validation")}
        analysis, _ = ls.analysis(request.uri)
        ls.note_open_texts()  # (the files it imports as the editor has them)
        program = await asyncio.to_thread(_compile, request, analysis.text)
        if cancel.cancelled:
            raise Cancelled("the training was cancelled")
        arrays = {key: await asyncio.to_thread(read_data_files, found)
                  for key, found in files.items()}
        job = await _start(ls, program, options, arrays, cancel, progress, recorder)
        progress.report(f"training on {where}")
        result = await follow(job, cancel, progress, lambda: _train_report(recorder))
    except (Cancelled, asyncio.CancelledError) as stop:
        cancel.cancel()  # (a task cancelled as the server ends: see running.run_document)
        return cancelled(ls, f"fuse.train: the training of {request.name}", progress, started,
                         getattr(stop, "stopped", True), step="step",
                         dropped="its params are discarded and no checkpoint was written")
    except (FuseError, TrainOptionError, DocumentTooLarge, DocumentUnavailable,
            RunRefused) as error:
        return _failed(ls, progress, f"{request.name}: {error}")
    except Exception as error:  # noqa: BLE001 - an engine bug is still one message
        ls.log_error("fuse.train", error)
        return _failed(ls, progress,
                       f"{request.name}: internal error: {type(error).__name__}: {error}")
    summary = summarize_training(result, recorder, program=request.name,
                                 backend=request.backend, device=request.device,
                                 elapsed_s=time.perf_counter() - started,
                                 options=_shown(options))
    final = summary.final_loss
    progress.end(f"done: loss {final:.4g}" if final is not None else "done")
    message = summary.message()
    ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info,
                                                 message=f"fuse.train: {message}"))
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info,
                                                   message=message))
    return {"ok": True, **summary.to_json()}


def _shown(options: TrainOptions) -> dict[str, Any]:
    return {"optimizer": options.optimizer, "lr": options.learning_rate,
            "schedule": options.schedule, "steps": options.steps, "epochs": options.epochs,
            "seed": options.seed, "batch": dict(options.batch) if options.batch else None}


def _deadline(cancel: CancelToken, seconds: int) -> Callable[[], None]:
    """The training's interrupt: the cancel, and the time limit from now."""
    ends = time.monotonic() + seconds

    def check() -> None:
        cancel.check()
        if time.monotonic() > ends:
            raise FuseError(f"the training was stopped at its time limit of {seconds} s; "
                            f"raise the editor's runTimeLimit setting, or train fewer steps "
                            f"(no checkpoint was written)")
    return check


async def _start(ls: FuseServer, program: CompiledProgram, options: TrainOptions,
                 arrays: dict[str, dict], cancel: CancelToken, progress: Progress,
                 recorder: TrainRecorder) -> asyncio.Future:
    """The training going off the event loop, once the runs' budget has room."""
    def waiting(message: str) -> None:
        progress.report(message)
        ls.window_log_message(types.LogMessageParams(
            type=types.MessageType.Info, message=f"fuse.train: {message}"))

    need = TRAIN_MEMORY_FACTOR * await asyncio.to_thread(program.memory_needed, False)
    settings = ls.options
    ticket = await ls.run_budget.admit(need, settings.memory_limit,
                                       settings.max_concurrent_runs, cancel, waiting)
    program.memory_limit = ls.run_budget.total(settings.memory_limit)
    program = cancellable(program, cancel)
    program.interrupt = _deadline(cancel, settings.run_time_limit)
    # written once at the end (never every N steps): a cancelled training leaves none
    options = replace(options, checkpoint_every=None)
    job = asyncio.ensure_future(asyncio.to_thread(
        program.train, arrays["data"] or None, optimizer=options.optimizer,
        learning_rate=options.learning_rate, schedule=options.schedule, steps=options.steps,
        seed=options.seed, weight_decay=options.weight_decay, batch=options.batch,
        validation=arrays["validation"] or None, validate_every=options.validate_every,
        checkpoint=options.checkpoint, resume=options.resume,
        epochs=options.epochs, progress=recorder))
    job.add_done_callback(lambda _: ls.run_budget.release(ticket))
    return job


def _train_report(recorder: TrainRecorder) -> tuple[str, int | None] | None:
    """A training's progress: its step and loss."""
    now = recorder.latest
    if now is None:
        return None
    return (f"{now.message()} ({now.elapsed_s:.1f} s)",
            int(100 * now.done / now.total) if now.total else None)


def _failed(ls: FuseServer, progress: Progress, message: str) -> dict[str, Any]:
    progress.end("failed")
    ls.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                 message=f"fuse.train: {message}"))
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))
    return {"ok": False, "error": message}
