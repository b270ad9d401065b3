"""Running a document from the editor (`fuse.run`): only on request, off the
event loop, with work-done progress, and cancellable.

Cancellation comes from `$/cancelRequest` for the command's request or from
`window/workDoneProgress/cancel` for its progress token.  Either sets a
CancelToken that the run checks before every backend operation
(fuse_lang.ide.cancellation), so the run stops there; whatever it would have
returned is discarded.  Sinks are written at the very end of a run, so a
run cancelled while it computes writes none.

Every run is bounded: it stops at the `runTimeLimit` setting (seconds of
computing), and it starts only when its memory estimate fits the one budget
that all the server's runs share (`memoryLimit`) and fewer than
`maxConcurrentRuns` are computing; until then it waits, in order, and says
so (fuse_lsp.run_budget).
"""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types

from fuse_lang.check.cone import NOT_NEEDED
from fuse_lang.ide.cancellation import Cancelled, CancelToken, cancellable
from fuse_lang.ide.run_summary import summarize_run
from fuse_lang.ide.run_targets import TargetError
from fuse_lang.run.limits import RunProgress
from fuse_lang.run.program import CompiledProgram, ExecutionConfig, FuseError, compile

from .last_run import LastRun, remember as remember_run
from .run_budget import RunRefused
from .state import DocumentTooLarge, DocumentUnavailable, FuseServer, file_path

REPORT_EVERY_S = 0.25  # progress reports while a run is going
STOP_WAIT_S = 5.0  # after a cancel: how long to wait for the run to reach its next check


@dataclass(frozen=True)
class RunRequest:
    uri: str
    name: str  # the file name, for messages
    path: str | None
    base_dir: Path
    backend: str
    device: str
    targets: tuple[str, ...]  # exports or query texts; empty: the whole program
    precision: str = "fp32"
    compiled: bool | None = None  # None: the backend's default (jax compiles, torch not)


def parse_request(ls: FuseServer, args: tuple[Any, ...]) -> RunRequest:
    """`[uri, {backend?, device?, precision?, compiled?, target?}]`; target: a name, a
    query, or a list of them."""
    if not args or not isinstance(args[0], str):
        raise ValueError("fuse.run takes [uri, {backend?, device?, precision?, compiled?, "
                         "target?}]")
    uri = args[0]
    extra = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    target = extra.get("target")
    targets = tuple(target) if isinstance(target, (list, tuple)) else \
        ((target,) if isinstance(target, str) and target.strip() else ())
    path = file_path(uri)
    return RunRequest(uri, document_name(uri), path, Path(path).parent if path else Path.cwd(),
                      str(extra.get("backend") or ls.options.backend),
                      str(extra.get("device") or ls.options.device),
                      tuple(str(t) for t in targets),
                      str(extra.get("precision") or ls.options.precision),
                      extra.get("compiled") if isinstance(extra.get("compiled"), bool) else None)


def document_name(uri: str) -> str:
    """The file name of a document, for messages."""
    path = file_path(uri)
    return Path(path).name if path else uri.rstrip("/").rsplit("/", 1)[-1]


class Progress:
    """Work-done progress for one run, when the client supports it (else silent)."""

    def __init__(self, ls: FuseServer, token: str | None) -> None:
        self.ls = ls
        self.token = token

    @classmethod
    async def start(cls, ls: FuseServer, title: str, cancel: CancelToken,
                    command: str = "fuse.run") -> "Progress":
        window = ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return cls(ls, None)
        token = f"{command}/{uuid.uuid4()}"
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as error:  # noqa: BLE001 - the client refused: run without
            ls.refused("window/workDoneProgress/create", error)
            return cls(ls, None)
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=title, cancellable=True, message="checking", percentage=0))
        # the client's cancel button cancels this future (pygls keeps one per token)
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: cancel.cancel() if f.cancelled() else None)
        return cls(ls, token)

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.token is not None:
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=message, percentage=percentage))

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)


def watch_request(ls: FuseServer, cancel: CancelToken) -> None:
    """Cancel the run when the client cancels the request it came in.

    pygls answers `$/cancelRequest` by cancelling the request's future, but keeps
    no public handle on it: it is looked up by the request's id."""
    futures = getattr(ls.protocol, "_request_futures", None)
    msg_id = ls.protocol.msg_id
    future = futures.get(msg_id) if isinstance(futures, dict) and msg_id is not None else None
    if future is not None:
        future.add_done_callback(lambda f: cancel.cancel() if f.cancelled() else None)


def _compile(request: RunRequest, text: str, ls: FuseServer) -> CompiledProgram:
    """The whole document, or with targets only their dependency cone: an error
    outside what runs (the targets' cone, or the cones of the document's exports,
    queries, sinks and loss) is reported in the result's `not_run`, not a refusal."""
    # runTrace: a traced run is eager (each equation timed), unless compiled was asked
    trace = ls.options.run_trace and not request.compiled
    return compile(text, backend=request.backend, device=request.device,
                   base_dir=request.base_dir, path=request.path,
                   precision=request.precision, compiled=request.compiled,
                   targets=request.targets or None, past_errors=True,
                   config=ExecutionConfig(trace=True) if trace else None)


async def run_document(ls: FuseServer, request: RunRequest) -> dict[str, Any] | None:
    """Run the document; the result as JSON data (`ok` false with `error` on failure)."""
    cancel = CancelToken()
    watch_request(ls, cancel)
    where = f"{request.device} ({request.backend})"
    progress = await Progress.start(ls, f"Running {request.name} on {where}", cancel)
    started = time.perf_counter()
    try:
        analysis, _ = ls.analysis(request.uri)
        ls.note_open_texts()  # (the files it imports as the editor has them)
        version = ls.workspace.get_text_document(request.uri).version
        program = await asyncio.to_thread(_compile, request, analysis.text, ls)
        if cancel.cancelled:
            raise Cancelled("the run was cancelled")
        program = cancellable(program, cancel)
        where_now: list[RunProgress | None] = [None]  # the engine's latest report

        def note_progress(now: RunProgress) -> None:  # in the run's thread; _follow reads it
            where_now[0] = now
        program.progress = note_progress
        write = ls.options.allow_sink_writes and not request.targets
        job = await _start(ls, program, write, cancel, progress)
        progress.report(f"running on {where}")
        result = await follow(job, cancel, progress,
                              lambda: _run_report(cancel, started, where_now))
    except (Cancelled, asyncio.CancelledError) as stop:
        # (the token too: a task cancelled as the server ends, at `exit` or the end of
        # its input, left the computation going, and the process waiting for it)
        cancel.cancel()
        return cancelled(ls, f"fuse.run: the run of {request.name}", progress, started,
                         getattr(stop, "stopped", True))
    except (FuseError, TargetError, DocumentTooLarge, DocumentUnavailable,
            RunRefused) as error:
        return _failed(ls, request, progress, f"{request.name}: {error}")
    except Exception as error:  # noqa: BLE001 - an engine bug is still one message
        ls.log_error("fuse.run", error)
        return _failed(ls, request, progress,
                       f"{request.name}: internal error: {type(error).__name__}: {error}")
    summary = summarize_run(result, program=request.name, backend=request.backend,
                            device=request.device, elapsed_s=time.perf_counter() - started,
                            target=", ".join(request.targets) or None,
                            analysis=program.analysis)
    remember_run(ls, request.uri, LastRun(dict(result.outputs), tuple(result.queries),
                                      program.analysis, version,
                                      explainer=result.explainer,
                                      seconds=summary.elapsed_ms / 1000))
    progress.end(f"done in {summary.elapsed_ms:.0f} ms")
    # the whole document run past errors: a warning (its message says what was not run)
    left_out = not request.targets and any(n.reason != NOT_NEEDED for n in summary.not_run)
    ls.window_show_message(types.ShowMessageParams(
        type=types.MessageType.Warning if left_out else types.MessageType.Info,
        message=summary.message()))
    return {"ok": True, **summary.to_json()}


async def _start(ls: FuseServer, program: CompiledProgram, write: bool, cancel: CancelToken,
                 progress: Progress) -> asyncio.Future:
    """The run computing off the event loop, once the server's budget has room for
    it; its share of the budget goes back when the computation has ended."""
    def waiting(message: str) -> None:
        progress.report(message)
        ls.window_log_message(types.LogMessageParams(
            type=types.MessageType.Info, message=f"fuse.run: {message}"))

    need = await asyncio.to_thread(program.memory_needed, write)
    options = ls.options
    ticket = await ls.run_budget.admit(need, options.memory_limit, options.max_concurrent_runs,
                                       cancel, waiting)
    # each run's own guard: the whole budget (what a run alone may use)
    program.memory_limit = ls.run_budget.total(options.memory_limit)
    job = asyncio.ensure_future(asyncio.to_thread(
        program.execute, None, write_sinks=write, time_limit=options.run_time_limit))
    job.add_done_callback(lambda _: ls.run_budget.release(ticket))
    return job


async def follow(job: asyncio.Future, cancel: CancelToken, progress: Progress,
                 report: Callable[[], tuple[str, int | None] | None]) -> Any:
    """Wait for a run or training, reporting `report()` (its words and percent, or
    None) as progress; on a cancel, wait (a while) for it to stop."""
    while not job.done():
        await asyncio.wait({job}, timeout=REPORT_EVERY_S)
        if cancel.cancelled:
            await asyncio.wait({job}, timeout=STOP_WAIT_S)
            if job.done():
                job.exception()  # retrieved: the result is discarded either way
            raise Stopped(job.done())
        said = report() if not job.done() else None
        if said is not None:
            progress.report(*said)
    return job.result()


def _run_report(cancel: CancelToken, started: float, where_now: list[RunProgress | None]
                ) -> tuple[str, int | None]:
    """A run's progress: its time, its operations, the group going on and its iteration."""
    now = where_now[0]
    return (f"running: {time.perf_counter() - started:.1f} s, {cancel.operations} operations"
            + (f", {now.message()}" if now else ""),
            int(100 * now.done / now.total) if now and now.total else None)


class Stopped(Cancelled):
    """Cancelled; `stopped`: whether the computation itself has ended."""

    def __init__(self, stopped: bool) -> None:
        super().__init__("the run was cancelled")
        self.stopped = stopped  # whether the run itself has ended


def cancelled(ls: FuseServer, what: str, progress: Progress, started: float,
              stopped: bool, step: str = "operation", dropped: str = "its result is discarded"
              ) -> dict[str, Any]:
    """Report a cancelled run or training (`what`: "fuse.run: the run of a.fuse")."""
    ms = (time.perf_counter() - started) * 1000
    progress.end("cancelled")
    state = (f"stopped after {ms:.0f} ms" if stopped else
             f"is still in one {step} after {ms:.0f} ms and stops at the next")
    ls.window_log_message(types.LogMessageParams(
        type=types.MessageType.Info, message=f"{what} was cancelled and {state}; {dropped}"))
    return {"ok": False, "cancelled": True, "error": "cancelled"}


def _failed(ls: FuseServer, request: RunRequest, progress: Progress,
            message: str) -> dict[str, Any]:
    progress.end("failed")
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))
    return {"ok": False, "error": message}
