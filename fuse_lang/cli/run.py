"""`fuse run PATH [options]`: a program compiled and run, its exports and query
answers printed (cli.run_output), written with `--out`, drawn with `--plot`."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..check import INPUT_KINDS, Analysis, analyze
from ..check.cone import NOT_NEEDED
from ..front import ir
from ..speed.fastinit import frozen_dataclass
from .options import ConfigFlags, UsageError, config_of, shard_options
from .pictures import check_plot_folder, check_slice_along, write_pictures_of
from .reading import read_inputs, read_program
from .render import diagnostic_json, fail_with_diagnostics
from .run_output import failure_json, show_result, write_json
from .status import (
    EXIT_ERRORS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    fail,
    quiet_stdout,
)
from .weights import weights_problem
from .why import parsed_targets, whys_answered


@frozen_dataclass
class RunOptions:
    """`fuse run`'s options: `--shard` and `--mesh` read into their maps;
    `--input` and `--representation` items as given (read when the run needs
    them); `cache_dir` as `--cache-dir` gave it (cache.cache_dir_of)."""
    path: str
    backend: str
    device: str | None
    compiled: bool | None
    precision: str
    inputs: tuple[str, ...]
    representation: tuple[str, ...]
    weights: str | None
    params: str | None  # `--params CKPT.safetensors`: a checkpoint read as weights by name
    adapters: tuple[str, ...]
    out: str | None
    format: str
    targets: tuple[str, ...]
    time_limit: float | None
    shard: dict[str, str]
    mesh: dict[str, int] | None
    config: ConfigFlags
    cache_dir: str | None
    trace: bool
    plot: str | None
    plot_format: str
    slice_along: str | None
    whys: tuple[str, ...] = ()  # --why: targets explained after the results (cli.why)
    distributed: bool = False  # --distributed: one process of a JAX process group
    allow_outside_sinks: bool = False  # --allow-outside-sinks (LANGUAGE.md §9)
    plot_flags: tuple[str, ...] = ()  # --plot-format, --slice-along as given (need --plot)

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> RunOptions:
        """The options of a parsed `fuse run` command line; UsageError for a
        malformed `--shard` or `--mesh`."""
        try:
            shard, mesh = shard_options(ns.shard, ns.mesh)
        except UsageError as err:  # said before cmd_run: its one JSON document here
            if ns.format == "json":
                write_json(failure_json(f"fuse: {err.args[0]}", ()))
            raise
        return cls(path=ns.path, backend=ns.backend, device=ns.device, compiled=ns.compiled,
                   precision=ns.precision, inputs=tuple(ns.input),
                   representation=tuple(ns.representation), weights=ns.weights,
                   params=ns.params,
                   adapters=tuple(ns.adapter), out=ns.out, format=ns.format,
                   targets=tuple(ns.target), time_limit=ns.time_limit, shard=shard, mesh=mesh,
                   config=ConfigFlags.from_args(ns), cache_dir=ns.cache_dir, trace=ns.trace,
                   plot=ns.plot, plot_format=ns.plot_format or "svg",
                   slice_along=ns.slice_along,
                   plot_flags=tuple(flag for flag, value in (("--plot-format", ns.plot_format),
                                                             ("--slice-along", ns.slice_along))
                                    if value is not None),
                   whys=tuple(getattr(ns, "why", ()) or ()),
                   distributed=bool(getattr(ns, "distributed", False)),
                   allow_outside_sinks=bool(getattr(ns, "allow_outside_sinks", False)))


def cmd_run(options: RunOptions) -> int:
    """Run `options.path` and show its results: 0; CommandFailed after saying
    why the run did not happen or its results could not be written (with
    `--format json` also as the one JSON document on standard output)."""
    try:
        return _run_and_show(options)
    except (CommandFailed, UsageError) as failed:
        if options.format == "json":
            message = (f"fuse: {failed.args[0]}" if isinstance(failed, UsageError)
                       else failed.message)
            write_json(failure_json(message, getattr(failed, "diagnostics", ()),
                                    getattr(failed, "sinks", ())))
        raise


def _run_and_show(options: RunOptions) -> int:
    problem = weights_problem(options.weights, options.params)
    if problem:
        raise UsageError(problem)
    if options.adapters and not options.weights:
        raise UsageError("--adapter NAME needs --weights MANIFEST.json: adapters are declared "
                         "in a weights manifest (docs/weights.md)")
    if options.plot_flags and options.plot is None:
        raise UsageError(f"{' and '.join(options.plot_flags)} need"
                         f"{'s' if len(options.plot_flags) == 1 else ''} --plot DIR "
                         f"(how its pictures are drawn)")
    if (options.shard or options.mesh or options.distributed) and options.backend != "jax":
        flags = "--distributed needs" if options.distributed else "--shard and --mesh need"
        why = "--backend auto picks its backend by cost alone" if options.backend == "auto" \
            else f"the {options.backend} backend runs on one device"
        raise UsageError(f"{flags} --backend jax ({why})")
    text = read_program(options.path)
    if options.out is not None:
        _check_out(options.out)
    if options.plot is not None:
        check_plot_folder(options.plot)
    inputs = read_inputs(options.inputs)
    targets = parsed_targets(options.whys, "--why")  # malformed: said before running
    with _native_output_to_stderr(options.distributed):
        analysis, result = _run(options, text, inputs)
    if not _prints(options):  # another process of the group: process 0 says and writes all
        return EXIT_ERRORS if result.not_run and not options.targets and any(
            e.reason != NOT_NEEDED for e in result.not_run) else EXIT_OK
    if options.out:
        _write_out_of(options, analysis, result)
    # what a --target run's cone, or a whole run past its errors, left out for an error
    for entry in result.not_run:
        if entry.reason != NOT_NEEDED:
            print(f"fuse: {options.path}:{entry.line}: {entry.what} was not run: "
                  f"{entry.reason}", file=sys.stderr)
    broken = [] if options.targets else [e.what for e in result.not_run
                                         if e.reason != NOT_NEEDED]
    if broken:  # the document ran past its errors: said, and the exit status is 1
        print(f"fuse: {options.path}: not run (errors): {', '.join(broken)}", file=sys.stderr)
    pictures, undrawn = None, None
    if options.plot:  # (pictures that cannot be drawn are said; the results still show)
        try:
            pictures = write_pictures_of(options.plot, options.plot_format,
                                         options.slice_along, result.outputs, analysis,
                                         result.queries)
        except CommandFailed as err:
            undrawn = err
    # (a target that cannot be answered is said after the results, which still show)
    whys, unanswered = whys_answered(options.path, result, targets) if targets else (None, [])
    # (a run in demand mode ran its rewrite: the diagnostics are of the program as written)
    demand = result.plan.demand if result.plan is not None else None
    written = demand.source if demand is not None and demand.source is not None else analysis
    if broken and demand is None and not (options.weights or options.params):
        written = analyze(text, options.path, Path(options.path).parent)  # (the whole
        # document's, as `fuse check` gives them: the run's own analysis is of what ran)
    try:  # (a reader that stops early: what is said on stderr, and the status, remain)
        show_result(result, options.format, bool(options.targets or result.not_run),
                    options.out, pictures,
                    analysis, [diagnostic_json(options.path, written.lines, d)
                               for d in written.diagnostics], whys, unanswered)
    except BrokenPipeError:
        quiet_stdout()
    for line in unanswered:
        print(line, file=sys.stderr)
    if undrawn is not None:
        return undrawn.status
    return EXIT_ERRORS if broken or unanswered else EXIT_OK


@contextlib.contextmanager
def _native_output_to_stderr(active: bool) -> Iterator[None]:
    """In a distributed run, what native libraries print while it runs (gloo's
    "[Gloo] Rank 1 is connected to 1 peer ranks") goes to standard error: standard
    output carries Fuse's results only (`--format json` stays one document)."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None).fflush(None)  # C stdio's buffer, before fd 1 is stdout again
        os.dup2(saved, 1)
        os.close(saved)


def _prints(options: RunOptions) -> bool:
    """Whether this process shows the results and writes --out and --plot: always,
    but in a distributed run only process 0."""
    if not options.distributed:
        return True
    from ..run.distributed import is_lead

    return is_lead()


def _write_out_of(options: RunOptions, analysis: Analysis, result: Any) -> None:
    """`--out` of a run that happened; CommandFailed (exit 2) when it is refused or
    cannot be written, which still says the sinks the run wrote (as `wrote PATH`
    lines, or the JSON document's `sinks`): they are on disk."""
    try:
        _out_reads_nothing(options, analysis, result.outputs)
        # (the analysis of the run's own input shapes: what its positions mean)
        _write_out(options.out, result.outputs,
                   result.plan.analysis if result.plan is not None else analysis)
    except CommandFailed as failed:
        failed.sinks = [str(path) for path in result.sinks]
        if options.format != "json":
            for path in failed.sinks:
                print(f"wrote {path}")
        raise


def _write_out(out: str, outputs: dict[str, Any], analysis: Analysis) -> None:
    """`--out`: the exports written (sparse ones stay sparse, an axis of values
    laid out by value: docs/cli.md); CommandFailed (exit 2) when they cannot be."""
    from ..io.sinks import write_results
    from ..io.source_files import FileProblem
    from ..run.outputs import tensor_axes

    try:
        write_results(out, outputs, {name: tensor_axes(analysis, name) for name in outputs})
    except (OSError, FileProblem) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        named = isinstance(err, OSError) and (err.filename2 or err.filename)  # (a rename's target)
        if named and os.fspath(named) != out:
            reason = f"{os.fspath(named)}: {reason}"  # (which file of a folder's)
        fail(f"fuse: --out {out}: cannot be written: {reason}", EXIT_USAGE)


def _out_is_folder(out: str) -> bool:
    """Whether `--out` names a folder (one that exists, or a path ending in /)."""
    return Path(out).is_dir() or out.endswith(("/", os.sep))


def _out_reads_nothing(options: RunOptions, analysis: Analysis, outputs: dict,
                       sinks: bool = True) -> None:
    """CommandFailed (exit 2, nothing written) for an `--out` that would replace a
    file the run read: the program, a source's file, an --input, the weights; with
    `sinks`, after the run, also one of its sinks' files (which the run wrote)."""
    from .reading import files_read, overwritten

    out = options.out or ""
    if _out_is_folder(out):
        targets = [Path(out) / f"{name}{suffix}" for name in outputs
                   for suffix in (".npy", ".npz")]
    else:
        targets = [Path(out)]
    read = files_read(options.path, analysis, options.inputs,
                      options.weights or options.params)
    what = overwritten(targets, read)
    if what:
        fail(f"fuse: --out {out} would replace {what}, which the run read; nothing was "
             f"written: give --out another file or folder", EXIT_USAGE)
    if not sinks:
        return
    base = Path(options.path).parent
    written = {base / stmt.path.value: "" for stmt in analysis.program.statements
               if type(stmt) is ir.Sink}
    if overwritten(targets, written) is not None:  # (the sink's file, written: kept)
        fail(f"fuse: --out {out} would replace the file of one of the program's sinks, "
             f"which the run wrote; --out was not written: give it another file or folder",
             EXIT_USAGE)


def _check_out(out: str) -> None:
    """UsageError (exit 2, before the run) for an `--out` that is neither a folder
    nor an `.npz` or `.npy` file: another name would get an `.npz` archive it
    does not promise; or whose folder lies under a file or is not writable (said
    before the run, as for --plot, not as 'File exists' after it)."""
    from ..ide.picture_files import check_folder

    if not out:
        raise UsageError("--out: give a file (FILE.npz, FILE.npy) or a folder DIR/ (an empty "
                         "name names none)")
    folder = Path(out) if Path(out).is_dir() or out.endswith(("/", os.sep)) else None
    if folder is None and Path(out).suffix.lower() not in (".npz", ".npy"):
        raise UsageError(f"--out takes FILE.npz, FILE.npy or a folder DIR/ (one file per "
                         f"output), not {out!r}")
    problem = check_folder(folder if folder is not None else Path(out).parent)
    if problem is not None:
        raise UsageError(f"--out {out}: {problem}")


def _representations(items: Sequence[str]) -> dict[str, str]:
    """`--representation NAME=dense|sparse` by name; CommandFailed (exit 2) for
    a malformed one or another kind."""
    from ..plan.representation import RepresentationError, representation_flags

    try:
        return representation_flags(items)
    except RepresentationError as e:
        fail(f"fuse: {e}", EXIT_USAGE)


def _run(options: RunOptions, text: str, inputs: dict[str, Any]) -> tuple[Analysis, Any]:
    """The program's analysis and its run's result; CommandFailed after the
    run's error was printed (never a traceback)."""
    from ..run.interpret.evaluate import EvaluationError
    from ..run.program import FuseError, compile
    from ..speed.lazy_numpy import defer_numpy_tools

    defer_numpy_tools()  # before scipy's import, where the run reads a relation
    representation = _representations(options.representation)
    # a malformed flag is a usage error (exit 2), said before anything is compiled
    config = config_of(options.config, options.trace, options.cache_dir)
    try:
        program = compile(text, backend=options.backend, device=options.device,
                          base_dir=Path(options.path).parent, path=options.path,
                          precision=options.precision, compiled=options.compiled,
                          shard=options.shard or None, mesh=options.mesh,
                          representation=representation,
                          targets=list(options.targets) or None, past_errors=True,
                          config=config, weights=options.weights or options.params,
                          adapters=list(options.adapters) or None,
                          distributed=options.distributed,
                          allow_outside_sinks=options.allow_outside_sinks)
        _accept_inputs(options.path, program.analysis, inputs)
        if options.out and not _out_is_folder(options.out):  # (before the run: nothing
            _out_reads_nothing(options, program.analysis, {}, sinks=False)  # is written)
        if options.plot:
            check_slice_along(program.analysis, options.slice_along)
        if options.params:
            _all_params_given(options, program.analysis, inputs)
        return program.analysis, _execute(options, program, inputs)
    except CommandFailed:
        raise
    except FuseError as err:
        fail_with_diagnostics(options.path, text, err)
    except EvaluationError as err:  # a problem of the program, said in its words
        fail(f"fuse: {options.path}: {err}", EXIT_ERRORS)
    except Exception as err:  # never a traceback: an engine bug is still one paragraph
        fail(f"fuse: {options.path}: internal error while running: {type(err).__name__}: "
             f"{err}", EXIT_ERRORS)


def _accept_inputs(path: str, analysis: Analysis, inputs: dict[str, Any]) -> None:
    """CommandFailed (exit 2) for an `--input` that names no source or param."""
    accepted = [n for n, t in analysis.tensors.items() if t.kind in INPUT_KINDS]
    for name in inputs:
        if name not in accepted:
            fail(f"fuse: --input {name}=...: `{name}` is not a source or param of {path} "
                 f"(those are: {', '.join(accepted) or 'none'})", EXIT_USAGE)


def _all_params_given(options: RunOptions, analysis: Analysis, inputs: dict[str, Any]) -> None:
    """CommandFailed (exit 1) for a param that neither the checkpoint of `--params`
    nor an `--input` gives: it would run with its initialiser's random start."""
    from ..io.safetensors_header import tensor_keys

    held = tensor_keys(Path(options.params))
    given = set(held) | set(inputs)
    missing = [n for n, t in analysis.tensors.items() if t.kind == "param" and n not in given]
    if missing:
        fail(f"fuse: --params {options.params} gives no value for the param"
             f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {options.path} (it "
             f"holds: {', '.join(held) or 'nothing'}); was it written for another "
             f"program?", EXIT_ERRORS)


def _execute(options: RunOptions, program: Any, inputs: dict[str, Any]) -> Any:
    """The run's result, with a progress bar on a terminal; CommandFailed
    (exit 130) when Ctrl-C stopped it."""
    from .progress import progress_bar

    bar = progress_bar(sys.stderr)
    program.progress = bar
    try:
        return program.execute(inputs, time_limit=options.time_limit)
    except KeyboardInterrupt:  # Ctrl-C: sinks are written last, so none was
        fail(f"fuse: {options.path}: the run was stopped (Ctrl-C); no sink file was "
             f"written", EXIT_INTERRUPTED)
    finally:
        if bar is not None:
            bar.close()
