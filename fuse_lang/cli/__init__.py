"""`fuse`: check and explain Fuse programs from the command line.

    fuse check [--format text|json] PATH...
    fuse explain [--format text|json] [--shard INDEX=AXIS]... [--mesh AXIS=N,...] [--graph FILE.svg|FILE.png] PATH
    fuse run PATH [--backend numpy|torch|jax] [--device cpu|cuda[:N]|auto] [--precision fp32|fp64|bf16|fp16]
             [--compile|--no-compile] [--input NAME=FILE.npy]... [--out FILE.npz|DIR/] [--format text|json]
             [--shard INDEX=AXIS]... [--mesh AXIS=N,...] [--time-limit SECONDS] [--target NAME]...
             [--plot DIR [--plot-format svg|png] [--slice-along INDEX]]
    fuse train PATH [--backend torch|jax] [--optimizer sgd|adam|adamw] [--lr X] [--steps N] [--seed N]
               [--batch INDEX=N] [--checkpoint FILE.safetensors] [--resume FILE.safetensors] (cli_train.py)
    fuse plot RESULT.npz [--out DIR] [--format svg|png] [--program PATH] [--slice-along INDEX]
    fuse cache info|clear [--cache-dir DIR]      (cli_cache.py; and fuse run --cache-dir [DIR])
    fuse export PATH --format torch|stablehlo --out FILE

Exit status: 0 when no errors, 1 when any error, 2 for usage or I/O errors.
"""
from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from ..check import Analysis, analyze
from ..check.cone import NOT_NEEDED
from ..io.sources import SourceError, open_regular
from .train import add_train_parser, cmd_train
from . import cache as cli_cache
from .pictures import check_plot_folder, write_graph, write_pictures_of
from .options import (UsageError, add_config_options, add_shard_options, config_of, seconds,
    shard_options)
from ..speed.gc_pause import gc_paused
from ..front.diagnostics import Diagnostic, Severity
from ..front.span import LineIndex
from ..front.program_size import MAX_PROGRAM_BYTES
from ..front.syntax import decode

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
MAX_FILE_BYTES = MAX_PROGRAM_BYTES  # the language server applies the same limit


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message, self.format_usage().rstrip())


def load(path: str) -> tuple[str, Diagnostic | None]:
    """Read a program file: its text, or a diagnostic for a file that is not text."""
    p = Path(path)
    if p.is_dir():
        raise OSError(f"{path} is a folder, not a .fuse file")
    try:  # a regular file only, read no further than the limit (a FIFO would block)
        with open_regular(p) as fp:
            data = fp.read(MAX_FILE_BYTES + 1)
            size = max(len(data), os.fstat(fp.fileno()).st_size)
    except SourceError as err:
        raise OSError(f"{path}: {err}") from None
    if size > MAX_FILE_BYTES:
        raise OSError(f"{path} is {size / 1e6:.1f} MB; Fuse reads programs up to "
                      f"{MAX_FILE_BYTES // (1024 * 1024)} MB (keep large fact sets and weights "
                      f"in source files such as .tsv or .npy)")
    return decode(data)


def check_paths(paths: Sequence[str], weights: str | None = None
                ) -> tuple[list[tuple[str, LineIndex, list[Diagnostic]]], list[str]]:
    """Analyse each path: (path, lines, diagnostics) per file, and I/O problems.
    weights: a weights manifest whose tensors stand in for the programs' sources."""
    results, problems = [], []
    for path in paths:
        try:
            text, bad = load(path)
        except FileNotFoundError:
            problems.append(f"fuse: {path}: no such file")
            continue
        except OSError as err:
            problems.append(f"fuse: {err.strerror + ': ' + path if err.strerror else err}")
            continue
        if bad is not None:
            results.append((path, LineIndex(text), [bad]))
            continue
        if weights is not None:
            from .weights import check_with_weights

            analysis, diagnostics = check_with_weights(text, path, weights)
        else:
            analysis = analyze(text, path)
            diagnostics = list(analysis.diagnostics)
        results.append((path, analysis.lines, diagnostics))
        if _left_to_exit is not None:
            _left_to_exit.append(analysis)
    return results, problems


def render_text(path: str, lines: LineIndex, diag: Diagnostic) -> str:
    line, col = lines.position(diag.span.start)
    end_line, end_col = lines.position(diag.span.end)
    source = lines.line_text(line)
    width = max(1, (end_col if end_line == line else len(source)) - col)
    gutter = f"{line + 1} | "
    out = [f"{path}:{line + 1}:{col + 1}: {diag.severity.value}[{diag.code}]: {diag.message}",
           f"{gutter}{source}",
           " " * len(gutter) + _caret_indent(source[:col]) + "^" * min(width, 200)]
    for rel in diag.related:
        r_line, r_col = lines.position(rel.span.start)
        out.append(f"  {path}:{r_line + 1}:{r_col + 1}: note: {rel.message}")
    for fix in diag.fixes[:1]:
        out.append(f"  fix: {fix.title}")
    return "\n".join(out)


def _caret_indent(prefix: str) -> str:
    """Blanks under `prefix`, keeping its tabs so the caret lines up in a terminal."""
    return "".join("\t" if ch == "\t" else " " for ch in prefix)


def cmd_check(args: argparse.Namespace, prog: str = "fuse") -> int:
    # The analyses are millions of acyclic objects: with the cycle collector on,
    # its first pass after `analyze` would scan them all (a tenth of the run on a
    # 10,000-line file).  They are freed when _check returns, before it is back on.
    with gc_paused():
        return _check(args, prog)


def _check(args: argparse.Namespace, prog: str) -> int:
    results, problems = check_paths(args.paths, getattr(args, "weights", None))
    for message in problems:
        print(message.replace("fuse:", f"{prog}:", 1), file=sys.stderr)
    errors = any(d.severity is Severity.ERROR for _, _, ds in results for d in ds)
    if args.format == "json":
        out = [d.to_json(lines, path) for path, lines, ds in results for d in ds]
        json.dump({"diagnostics": out}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        counts = {s: 0 for s in Severity}
        for path, lines, ds in results:
            for d in ds:
                counts[d.severity] += 1
                print(render_text(path, lines, d))
        if results:
            summary = ", ".join(f"{n} {s.value}{'s' if n != 1 and s.value != 'information' else ''}"
                                for s, n in counts.items() if n)
            files = f"{len(results)} file{'s' if len(results) != 1 else ''}"
            print(f"{files} checked: {summary or 'no problems'}")
    if problems:
        return EXIT_USAGE
    return EXIT_ERRORS if errors else EXIT_OK


def _read_program(path: str) -> tuple[str, int | None]:
    """The text of one program, or the exit status after saying why there is none."""
    try:
        text, bad = load(path)
    except FileNotFoundError:
        print(f"fuse: {path}: no such file", file=sys.stderr)
        return "", EXIT_USAGE
    except OSError as err:
        print(f"fuse: {err.strerror + ': ' + path if err.strerror else err}", file=sys.stderr)
        return "", EXIT_USAGE
    if bad is not None:
        print(render_text(path, LineIndex(text), bad), file=sys.stderr)
        return text, EXIT_ERRORS
    return text, None


def cmd_explain(args: argparse.Namespace) -> int:
    from ..plan.render import render_plan_text
    from ..plan.planner import plan_program
    from ..plan.sharding import plan_sharding
    from ..check.loss import loss_of

    shard, mesh = shard_options(args)
    text, failed = _read_program(args.path)
    if failed is not None:
        return failed
    analysis: Analysis = analyze(text, args.path)
    if _left_to_exit is not None:
        _left_to_exit.append(analysis)
    plan = plan_program(analysis)
    sharding = plan_sharding(analysis, shard, mesh) if shard or mesh else None
    if sharding is not None and sharding.problems:
        for problem in sharding.problems:
            print(f"fuse: --shard: {problem}", file=sys.stderr)
        return EXIT_USAGE
    errors = [d for d in analysis.diagnostics if d.severity is Severity.ERROR]
    if args.graph and (failed := write_graph(args.graph, analysis, plan)) is not None:
        return failed
    execution = _execution_plan(args, analysis)
    if isinstance(execution, int):
        return execution
    loss = loss_of(analysis)
    if args.format == "json":
        data = plan.to_json()
        data["execution"] = execution.to_json()
        if sharding is not None:
            data["sharding"] = sharding.to_json()
        if loss is not None:
            data["loss"] = loss.to_json()
        data["diagnostics"] = [d.to_json(analysis.lines, args.path) for d in analysis.diagnostics]
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_plan_text(plan, sharding, execution))
        if loss is not None:
            print("\n" + loss.text().replace("**", "").replace("`", ""))
        for d in errors:
            print(render_text(args.path, analysis.lines, d), file=sys.stderr)
    return EXIT_ERRORS if errors else EXIT_OK


def _execution_plan(args: argparse.Namespace, analysis: Analysis) -> Any:
    """What the configuration flags do to the program; the exit status when refused."""
    from ..plan.config import config_problems, plan_execution

    config = config_of(args)
    problems = config_problems(config)
    if problems:
        print(f"fuse: the execution configuration is refused: {'; '.join(problems)}",
              file=sys.stderr)
        return EXIT_USAGE
    return plan_execution(analysis, config)


def _preview(array, width: int = 8) -> str:
    import numpy as np

    if hasattr(array, "tocoo"):  # scipy.sparse: its first non-zeros, never densified
        coo = array.tocoo()
        shown = ", ".join(f"({', '.join(map(str, at))}): {v:.4g}" for *at, v in
                          list(zip(*coo.coords, coo.data))[:width])  # any number of axes
        return f"sparse, {coo.nnz} non-zeros [{shown}{', ...' if coo.nnz > width else ''}]"
    flat = np.asarray(array).ravel()
    shown = ", ".join(f"{v:.4g}" for v in flat[:width])
    return f"[{shown}{', ...' if flat.size > width else ''}]"


def cmd_run(args: argparse.Namespace) -> int:
    shard, mesh = shard_options(args)
    if (shard or mesh) and args.backend != "jax":
        raise UsageError(f"--shard and --mesh need --backend jax (the {args.backend} backend "
                          f"runs on one device)")
    args.shard_map, args.mesh_shape = shard, mesh
    text, failed = _read_program(args.path)
    if failed is not None:
        return failed
    if args.plot and (failed := check_plot_folder(args.plot)) is not None:
        return failed
    inputs = _read_inputs(args.input)
    if isinstance(inputs, int):
        return inputs
    result = _run(args, text, inputs)
    if isinstance(result, int):
        return result
    if args.out:
        from ..io.sinks import write_results
        from ..io.sources import FileProblem

        try:  # sparse outputs stay sparse (docs/cli.md)
            write_results(args.out, result.outputs)
        except (OSError, FileProblem) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else err
            print(f"fuse: --out {args.out}: cannot be written: {reason}", file=sys.stderr)
            return EXIT_USAGE
    for entry in result.not_run:  # a --target run: what its cone left out for an error
        if entry.reason != NOT_NEEDED:
            print(f"fuse: {args.path}:{entry.line}: {entry.what} was not run: {entry.reason}",
                  file=sys.stderr)
    pictures: list[str] = []
    if args.plot:
        written = write_pictures_of(args, result.outputs, getattr(args, "analysis", None),
                                  result.queries)
        if isinstance(written, int):
            return written
        pictures = written
    if args.format == "json":
        data = _result_json(result, bool(args.target))
        if args.plot:
            data["pictures"] = pictures
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        _print_result(result, args.out)
        for path in pictures:
            print(f"wrote {path}")
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    """`fuse plot RESULT.npz`: the pictures of saved results, labelled from the
    program (`--program`) when given."""
    from ..ide.picture_files import read_results
    from ..ide.plots import PictureError

    try:
        outputs = read_results(Path(args.result))
    except PictureError as err:
        print(f"fuse: {err}", file=sys.stderr)
        return EXIT_USAGE
    analysis = None
    if args.program:
        text, failed = _read_program(args.program)
        if failed is not None:
            return failed
        analysis = analyze(text, args.program)
    args.plot = args.out or str(Path(args.result).with_suffix("")) + "-pictures"
    args.plot_format = args.format
    if (failed := check_plot_folder(args.plot)) is not None:
        return failed
    written = write_pictures_of(args, outputs, analysis)
    if isinstance(written, int):
        return written
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


def _read_inputs(items: list[str]) -> dict | int:
    """`--input NAME=FILE.npy` (or an .npz holding NAME or one array) as arrays by
    name; the exit status when one cannot be read.  Read as sources are: a regular
    file, a header that agrees with the file's size, a plain number type."""
    from ..io.sources import SourceError
    from ..io.source_data import load_array_file

    inputs = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            print(f"fuse: --input takes NAME=FILE.npy, not {item!r}", file=sys.stderr)
            return EXIT_USAGE
        try:
            inputs[name] = load_array_file(Path(file), name)
        except (OSError, ValueError, TypeError, SourceError, MemoryError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else err
            if isinstance(err, MemoryError):
                reason = "the array does not fit in memory"
            print(f"fuse: --input {item}: cannot read {file}: {reason}", file=sys.stderr)
            return EXIT_USAGE
    return inputs


def _run(args: argparse.Namespace, text: str, inputs: dict) -> Any:
    """The run's result, or the exit status after its error was printed."""
    from .progress import progress_bar
    from ..run.interpret.evaluate import EvaluationError
    from ..run.program import FuseError, compile

    representation = {}
    for item in args.representation:
        name, sep, kind = item.partition("=")
        if not sep or not name or not kind:
            print(f"fuse: --representation takes NAME=dense or NAME=sparse, not {item!r}",
                  file=sys.stderr)
            return EXIT_USAGE
        representation[name] = kind
    try:
        program = compile(text, backend=args.backend, device=args.device,
                          base_dir=Path(args.path).parent, path=args.path,
                          precision=args.precision, compiled=args.compiled,
                          shard=args.shard_map or None, mesh=args.mesh_shape,
                          representation=representation,
                          targets=args.target or None,
                          config=config_of(args), weights=args.weights,
                          adapters=args.adapter or None)
        args.analysis = program.analysis  # the pictures' labels (--plot)
        accepted = [n for n, t in program.analysis.tensors.items()
                    if t.kind in ("source", "relation source", "param")]
        for name in inputs:
            if name not in accepted:
                print(f"fuse: --input {name}=...: `{name}` is not a source or param of "
                      f"{args.path} (those are: {', '.join(accepted) or 'none'})",
                      file=sys.stderr)
                return EXIT_USAGE
        bar = progress_bar(sys.stderr)
        program.progress = bar
        try:
            return program.execute(inputs, time_limit=args.time_limit)
        except KeyboardInterrupt:  # Ctrl-C: sinks are written last, so none was
            print(f"fuse: {args.path}: the run was stopped (Ctrl-C); no sink file was "
                  f"written", file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            if bar is not None:
                bar.close()
    except FuseError as err:
        analysis_diags = getattr(err, "diagnostics", ())
        if analysis_diags:
            lines = LineIndex(text)
            for d in analysis_diags:
                print(render_text(args.path, lines, d), file=sys.stderr)
        else:
            print(f"fuse: {args.path}: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except EvaluationError as err:  # a problem of the program, said in its words
        print(f"fuse: {args.path}: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except Exception as err:  # never a traceback: an engine bug is still one paragraph
        print(f"fuse: {args.path}: internal error while running: {type(err).__name__}: {err}",
              file=sys.stderr)
        return EXIT_ERRORS


def _result_json(result: Any, targeted: bool = False) -> dict:
    """`fuse run --format json`: outputs, query answers and sinks written (and,
    with --target, what was not run and why)."""
    extra = {"not_run": [n.to_json() for n in result.not_run]} if targeted else {}
    return {
        "outputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype), **_values_json(a)}
                    for n, a in result.outputs.items()},
        "queries": [{"query": q.text, "tensor": q.tensor, "free": list(q.free),
                     **_values_json(q.value),
                     **({"tuples": [list(t) for t in q.tuples]} if q.tuples is not None
                        else {})} for q in result.queries],
        "sinks": result.sinks,
        **extra,
        **({"trace": result.trace} if result.trace is not None else {}),
        **({"estimates": {n: {**e, "standard_error": e["standard_error"].tolist()}
                          for n, e in result.estimates.items()}} if result.estimates else {}),
        **({"backend": result.backend} if result.backend is not None else {}),
    }


def _values_json(array: Any) -> dict:
    """`values` (nested lists), or for a sparse array its non-zeros as [i, j, value]
    ([i, j, k, value] for three axes)."""
    if hasattr(array, "tocoo"):
        import numpy as np

        coo = array.tocoo()
        coords = tuple(coo.coords)
        order = np.lexsort(coords[::-1])  # row by row, whatever the storage order
        return {"representation": "sparse",
                "nonzeros": [[*map(int, at), float(v)] for *at, v in
                             zip(*(c[order] for c in coords), coo.data[order])]}
    return {"values": array.tolist()}


def _print_result(result: Any, out: str | None) -> None:
    for name, array in result.outputs.items():
        print(f"{name}  shape {tuple(array.shape)}  {array.dtype}  {_preview(array)}")
    for q in result.queries:
        if q.tuples is not None:
            # (maps all the way down: tens of thousands of answers print in C)
            answer = "; ".join(map(", ".join, map(functools.partial(map, str), q.tuples))) \
                or "no"
            if not q.free:
                answer = "yes" if q.tuples else "no"
            print(f"{q.text}  {answer}")
        else:
            print(f"{q.text}  shape {tuple(q.value.shape)}  {_preview(q.value)}")
    for path in result.sinks:
        print(f"wrote {path}")
    if out:
        print(f"wrote {out}")
    from ..run.trace import report_lines

    for line in report_lines(result):
        print(line)


def build_parser(prog: str = "fuse") -> argparse.ArgumentParser:
    parser = _Parser(prog=prog, description="Check, explain and run Fuse tensor programs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_check = sub.add_parser("check", help="report the diagnostics of programs")
    p_check.add_argument("--format", choices=("text", "json"), default="text")
    p_check.add_argument("--weights", metavar="MANIFEST.json",
                         help="check with a weights manifest's tensors in place of the "
                              "sources' files (headers only; docs/weights.md)")
    p_check.add_argument("paths", nargs="+", metavar="PATH")
    p_explain = sub.add_parser("explain", help="show the plan of a program (nothing is run)")
    p_explain.add_argument("--format", choices=("text", "json"), default="text")
    p_explain.add_argument("--graph", metavar="FILE.svg",
                           help="also draw the program's dataflow into FILE (.svg or .png)")
    p_explain.add_argument("path", metavar="PATH")
    add_config_options(p_explain)
    add_shard_options(p_explain, "show each tensor's sharding and the collectives implied")
    p_run = sub.add_parser("run", help="run a program and show its exports and queries")
    p_run.add_argument("path", metavar="PATH")
    p_run.add_argument("--backend", default="numpy", choices=("numpy", "torch", "jax", "auto"),
                       help="auto: picked by the rule of docs/execution.md")
    p_run.add_argument("--device", default=None,
                       help="cpu (the default), cuda, cuda:N or auto (torch and jax)")
    p_run.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                       dest="compiled",
                       help="run as compiled graphs (default: on for jax, off for torch)")
    p_run.add_argument("--precision", default="fp32", choices=("fp32", "fp64", "bf16", "fp16"))
    p_run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                       help="give a source's value from a .npy file (repeatable)")
    p_run.add_argument("--representation", action="append", default=[],
                       metavar="NAME=dense|sparse",
                       help="keep a tensor dense or sparse, overriding the plan (repeatable)")
    p_run.add_argument("--weights", metavar="MANIFEST.json",
                       help="read the weights a manifest gives in place of the sources' "
                            "files (docs/weights.md)")
    p_run.add_argument("--adapter", action="append", default=[], metavar="NAME",
                       help="apply the manifest's LoRA adapter NAME (repeatable)")
    p_run.add_argument("--out", metavar="FILE.npz|DIR/",
                       help="write the exports into one .npz (a sparse one as scipy.sparse "
                            "saves it), or into a folder, one file each")
    p_run.add_argument("--format", choices=("text", "json"), default="text")
    p_run.add_argument("--target", action="append", default=[], metavar="NAME",
                       help="run only this export, tensor or query (repeatable) and what it "
                            "depends on; errors elsewhere do not stop it, no sinks are written")
    p_run.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                       help="stop the run after this many seconds (default: no limit)")
    add_shard_options(p_run, "split tensors over a device mesh (jax)")
    add_config_options(p_run)
    cli_cache.add_cache_dir_option(p_run)
    p_run.add_argument("--trace", action="store_true",
                       help="show per equation and per fixpoint round what ran and its time")
    p_run.add_argument("--plot", metavar="DIR", help="write a picture of each export into DIR")
    p_run.add_argument("--plot-format", choices=("svg", "png"), default="svg")
    p_run.add_argument("--slice-along", metavar="INDEX",
                       help="draw a 3-D+ tensor as slices along this index (default: its first)")
    add_train_parser(sub)
    p_plot = sub.add_parser("plot", help="draw the pictures of saved results (.npz, .npy)")
    p_plot.add_argument("result", metavar="RESULT.npz")
    p_plot.add_argument("--out", metavar="DIR", help="where to write them "
                        "(default: RESULT-pictures beside the file)")
    p_plot.add_argument("--format", choices=("svg", "png"), default="svg")
    p_plot.add_argument("--program", metavar="PATH",
                        help="the program that made the results: index and symbol names")
    p_plot.add_argument("--slice-along", metavar="INDEX")
    cli_cache.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as err:
        usage = err.args[1] if len(err.args) > 1 else parser.format_usage().rstrip()
        print(f"fuse: {err.args[0]}\n{usage}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "check":
            return cmd_check(args)
        if args.command == "run":
            return cmd_run(args)
        if args.command == "plot":
            return cmd_plot(args)
        if args.command == "train":
            return cmd_train(args, _read_program, _read_inputs)
        if args.command in ("cache", "export"):
            return cli_cache.dispatch(args, _read_program, _read_inputs)
        return cmd_explain(args)
    except UsageError as err:  # an option's value that argparse cannot judge
        print(f"fuse: {err.args[0]}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


# Analyses that the `fuse` command leaves for the OS to free when it exits (see
# `entry`); None when fuse_lang.cli is used as a library.
_left_to_exit: list[Analysis] | None = None


def entry() -> None:
    """The `fuse` command.  After `check` and `explain` it ends without tearing the
    interpreter down. Freeing a large analysis object by object takes longer than
    the OS needs to take the whole process back: 0.3 s of `fuse check` on a
    10,000-line file here, where the analysis itself takes about a second. mypy
    ends the same way. `main` stays an ordinary function for callers."""
    global _left_to_exit
    argv = sys.argv[1:]
    if argv[:1] not in (["check"], ["explain"]):
        sys.exit(main(argv))
    _left_to_exit = []
    # and no cycle collection either, which would only scan the analysis: once on
    # again, the next allocation would go through all of it (0.2 s on 10,000 lines)
    gc.disable()
    code = main(argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe (`fuse check big.fuse | head`): nothing to say
        pass
    os._exit(code)


if __name__ == "__main__":
    entry()
