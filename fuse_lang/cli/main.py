"""The `fuse` command line: its parser (`build_parser`), `main`, which hands a
parsed command's options to the command's module, and `entry`, the console
script, which ends `fuse check` and `fuse explain` without tearing the
interpreter down.  The modules of `run`, `explain` and `plot` are imported only
for their command, so that `fuse check` starts fast."""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any, NoReturn, Sequence

from .cache import (
    CacheOptions,
    ExportOptions,
    add_cache_dir_option,
    add_commands,
    cmd_cache,
    cmd_export,
)
from .check import CheckOptions, cmd_check
from .generate import add_generate_parser
from .options import add_config_options, add_shard_options, asks_for_json, seconds
from .status import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    UsageError,
    file_name,
    leave_analyses_to_exit,
    usable_output_streams,
)
from .train import add_train_parser
from .why import add_why_parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage().rstrip())


def build_parser(prog: str = "fuse") -> argparse.ArgumentParser:
    """The parser of every `fuse` command line."""
    parser = _Parser(prog=prog, description="Check, explain and run Fuse tensor programs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_check = sub.add_parser("check", help="report the diagnostics of programs")
    p_check.add_argument("--format", choices=("text", "json"), default="text")
    p_check.add_argument("--weights", type=file_name, metavar="MANIFEST.json",
                         help="check with a weights manifest's tensors in place of the "
                              "sources' files (headers only; docs/weights.md)")
    p_check.add_argument("paths", nargs="+", metavar="PATH")
    p_explain = sub.add_parser("explain", help="show the plan of a program (nothing is run)")
    p_explain.add_argument("--format", choices=("text", "json"), default="text")
    p_explain.add_argument("--graph", metavar="FILE.svg",
                           help="also draw the program's dataflow into FILE (.svg or .png)")
    p_explain.add_argument("path", metavar="PATH")
    p_explain.add_argument("--representation", action="append", default=[],
                           metavar="NAME=dense|sparse",
                           help="keep a tensor dense or sparse, overriding the plan, as "
                                "`fuse run` does (repeatable)")
    add_config_options(p_explain)
    add_shard_options(p_explain, "show each tensor's sharding and the collectives implied")
    _add_run_parser(sub)
    add_train_parser(sub)
    add_generate_parser(sub)
    p_plot = sub.add_parser("plot", help="draw the pictures of saved results (.npz, .npy)")
    p_plot.add_argument("result", metavar="RESULT.npz")
    p_plot.add_argument("--out", metavar="DIR", help="where to write them "
                        "(default: RESULT-pictures beside the file)")
    p_plot.add_argument("--format", choices=("svg", "png"), default="svg")
    p_plot.add_argument("--program", type=file_name, metavar="PATH",
                        help="the program that made the results: index and symbol names")
    p_plot.add_argument("--slice-along", metavar="INDEX")
    add_commands(sub)
    add_why_parser(sub)
    return parser


def _add_run_parser(sub: Any) -> None:
    """`fuse run`'s options on the subcommand parsers `sub`."""
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
                       help="give a source's value from a .npy, .npz or "
                            ".safetensors[:KEY] file (repeatable)")
    p_run.add_argument("--representation", action="append", default=[],
                       metavar="NAME=dense|sparse",
                       help="keep a tensor dense or sparse, overriding the plan (repeatable)")
    p_run.add_argument("--weights", type=file_name, metavar="MANIFEST.json",
                       help="read the weights a manifest gives in place of the sources' "
                            "files (docs/weights.md)")
    p_run.add_argument("--params", type=file_name, metavar="CKPT.safetensors",
                       help="give every param (and any source) its value from a checkpoint "
                            "`fuse train` wrote, matched by name; no manifest needed")
    p_run.add_argument("--adapter", action="append", default=[], metavar="NAME",
                       help="apply the manifest's LoRA adapter NAME (repeatable)")
    p_run.add_argument("--out", metavar="FILE.npz|FILE.npy|DIR/",
                       help="write the exports into one .npz (a sparse one as scipy.sparse "
                            "saves it), the one dense export into an .npy, or into a "
                            "folder, one file each")
    p_run.add_argument("--format", choices=("text", "json"), default="text")
    p_run.add_argument("--target", action="append", default=[], metavar="NAME",
                       help="run only this export, tensor or query (repeatable) and what it "
                            "depends on; errors elsewhere do not stop it, no sinks are written")
    p_run.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                       help="stop the run after this many seconds (default: no limit)")
    p_run.add_argument("--allow-outside-sinks", action="store_true",
                       help="let sinks write outside the program's folder (refused by "
                            "default)")
    add_shard_options(p_run, "split tensors over a device mesh (jax)")
    p_run.add_argument("--distributed", action="store_true",
                       help="join the JAX process group of several processes (from "
                            "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID or a "
                            "launcher's variables) and run over all their devices; process 0 "
                            "prints and writes (docs/scale.md)")
    add_config_options(p_run)
    add_cache_dir_option(p_run)
    p_run.add_argument("--trace", action="store_true",
                       help="show per equation and per fixpoint round what ran and its time")
    p_run.add_argument("--plot", metavar="DIR", help="write a picture of each export into DIR")
    p_run.add_argument("--plot-format", choices=("svg", "png"), default=None,
                       help="the pictures' format with --plot (default: svg)")
    p_run.add_argument("--why", action="append", default=[], metavar="TARGET",
                       help="after the results, explain a tuple `Ancestor(Alice, Eve)` or an "
                            "element `Y[3]` (repeatable; docs/why.md)")
    p_run.add_argument("--slice-along", metavar="INDEX",
                       help="draw a 3-D+ tensor as slices along this index (default: its first)")


def main(argv: Sequence[str] | None = None) -> int:
    """`fuse ARGS...` (sys.argv's by default): its exit status."""
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:  # said with the command's own usage line, not `fuse COMMAND ...`
            _command_parser(parser, args.command).error(
                f"unrecognized arguments: {' '.join(extras)}")
    except UsageError as err:
        usage = err.args[1] if len(err.args) > 1 else parser.format_usage().rstrip()
        print(f"fuse: {err.args[0]}\n{usage}", file=sys.stderr)
        _unread_line_document(parser, list(sys.argv[1:] if argv is None else argv),
                              f"fuse: {err.args[0]}")
        return EXIT_USAGE
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    if args.command is None:  # the one line every usage problem gets, then the commands
        print("fuse: give a command (fuse COMMAND ...; fuse COMMAND --help for its options)",
              file=sys.stderr)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return _dispatch(args)
    except UsageError as err:  # an option's value that argparse cannot judge
        print(f"fuse: {err.args[0]}", file=sys.stderr)
        _failure_document(args, f"fuse: {err.args[0]}")
        return EXIT_USAGE
    except CommandFailed as failed:  # its message was printed
        _failure_document(args, failed.message, failed.diagnostics)
        return failed.status
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _failure_document(args: argparse.Namespace, error: str | None,
                      diagnostics: Sequence[dict] = ()) -> None:
    """With `--format json`, a command that failed still writes one JSON document
    on standard output (docs/cli.md): the one-line reason (null where the
    diagnostics say it) and the program's diagnostics. `fuse run` and `fuse
    check` write their own, of their own shape."""
    if getattr(args, "format", None) != "json" or args.command in ("run", "check"):
        return
    json.dump({"error": error, "diagnostics": list(diagnostics)}, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _unread_line_document(parser: argparse.ArgumentParser, argv: list[str],
                          error: str) -> None:
    """A command line argparse cannot read, of a command that asks for `--format
    json`, still writes that command's one JSON document (docs/cli.md): `fuse
    check`'s `{"diagnostics": []}`, `fuse run`'s failure document, the others'
    `{"error", "diagnostics"}`.  (`fuse plot`'s and `fuse export`'s `--format` is
    a picture's or an artifact's.)"""
    command = next((word for word in argv if not word.startswith("-")), None)
    if command in ("plot", "export") or _command_parser(parser, command) is parser:
        return
    if not asks_for_json(argv[argv.index(command) + 1:]):
        return
    if command == "check":
        document: dict = {"diagnostics": []}
    elif command == "run":
        from .run_output import failure_json

        document = failure_json(error, ())
    else:
        document = {"error": error, "diagnostics": []}
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _command_parser(parser: argparse.ArgumentParser,
                    command: str | None) -> argparse.ArgumentParser:
    """The parser of `command` (`parser` itself when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    """The command's options made from `args`, and the command run with them
    (its module imported only now, but for `check`'s)."""
    if args.command == "check":
        return cmd_check(CheckOptions.from_args(args))
    if args.command == "run":
        from .run import RunOptions, cmd_run

        return cmd_run(RunOptions.from_args(args))
    if args.command == "why":
        from .why import WhyOptions, cmd_why

        return cmd_why(WhyOptions.from_args(args))
    if args.command == "plot":
        from .plot import PlotOptions, cmd_plot

        return cmd_plot(PlotOptions.from_args(args))
    if args.command == "train":
        from .train import TrainOptions, cmd_train

        return cmd_train(TrainOptions.from_args(args))
    if args.command == "generate":
        from .generate import GenerateOptions, cmd_generate

        return cmd_generate(GenerateOptions.from_args(args))
    if args.command == "cache":
        return cmd_cache(CacheOptions.from_args(args))
    if args.command == "export":
        return cmd_export(ExportOptions.from_args(args))
    from .explain import ExplainOptions, cmd_explain

    return cmd_explain(ExplainOptions.from_args(args))


def entry() -> None:
    """The `fuse` command.  After `check` and `explain` it ends without tearing the
    interpreter down. Freeing a large analysis object by object takes longer than
    the OS needs to take the whole process back: 0.3 s of `fuse check` on a
    10,000-line file here, where the analysis itself takes about a second. mypy
    ends the same way. `main` stays an ordinary function for callers."""
    argv = sys.argv[1:]
    usable_output_streams()
    if argv[:1] not in (["check"], ["explain"]):
        sys.exit(main(argv))
    leave_analyses_to_exit()  # (status.keep_until_exit keeps them)
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
