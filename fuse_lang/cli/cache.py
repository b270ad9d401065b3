"""`fuse cache info|clear`, `fuse export` and `fuse run --cache-dir`.

    fuse cache info [--cache-dir DIR] [--format text|json]
    fuse cache clear [--cache-dir DIR]
    fuse export PATH --format torch|stablehlo --out FILE [--input NAME=FILE.npy]...

The cache folder when `--cache-dir` is given without one, or left out of
`fuse cache`: `$FUSE_CACHE_DIR`, else `$XDG_CACHE_HOME/fuse`, else
`~/.cache/fuse` (run.cache.default_cache_dir; docs/execution.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
DEFAULT = "default"  # --cache-dir without a folder


def add_cache_dir_option(parser: argparse.ArgumentParser) -> None:
    """`fuse run --cache-dir [DIR]`."""
    parser.add_argument("--cache-dir", nargs="?", const=DEFAULT, default=None, metavar="DIR",
                        help="keep compiled graphs in DIR for later runs (jax; torch with "
                             "--compile); without DIR: $XDG_CACHE_HOME/fuse")


def cache_dir_of(args: argparse.Namespace) -> str | None:
    """The folder `--cache-dir` names (the default one for the bare flag)."""
    value = getattr(args, "cache_dir", None)
    if value == DEFAULT:
        from ..run.cache import default_cache_dir

        return str(default_cache_dir())
    return value


def add_commands(sub: Any) -> None:
    """The `cache` and `export` subcommands."""
    p_cache = sub.add_parser("cache", help="show or clear the compiled-graph cache")
    p_cache.add_argument("action", choices=("info", "clear"))
    p_cache.add_argument("--cache-dir", metavar="DIR", default=None,
                         help="the cache folder (default: $XDG_CACHE_HOME/fuse)")
    p_cache.add_argument("--format", choices=("text", "json"), default="text")
    p_export = sub.add_parser("export", help="write a program as a torch.export archive "
                                             "(.pt2) or StableHLO text")
    p_export.add_argument("path", metavar="PATH")
    p_export.add_argument("--format", choices=("torch", "stablehlo"), required=True)
    p_export.add_argument("--out", metavar="FILE", required=True)
    p_export.add_argument("--device", default=None, help="cpu (the default) or cuda[:N]")
    p_export.add_argument("--precision", default="fp32", choices=("fp32", "fp64", "bf16", "fp16"))
    p_export.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                          help="a source's value (its shape is the graph's; repeatable)")


def cmd_cache(args: argparse.Namespace) -> int:
    from ..run import cache

    folder = args.cache_dir or str(cache.default_cache_dir())
    if args.action == "clear":
        before = cache.clear(folder)
        print(f"cleared {folder}: {before['entries']} entries, {_size(before['bytes'])}")
        return EXIT_OK
    data = cache.info(folder)
    if args.format == "json":
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    state = "" if data["exists"] else " (not made yet)"
    print(f"cache {data['cache_dir']}{state}: {data['entries']} entries, "
          f"{_size(data['bytes'])}")
    for name, part in data["backends"].items():
        print(f"  {name}: {part['entries']} entries, {part['files']} files, "
              f"{_size(part['bytes'])}")
    return EXIT_OK


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


def dispatch(args: argparse.Namespace, read_program: Callable, read_inputs: Callable) -> int:
    """Run `fuse cache` or `fuse export` (cli.py hands over its readers of a
    program and of --input files)."""
    if args.command == "cache":
        return cmd_cache(args)
    text, failed = read_program(args.path)
    if failed is not None:
        return failed
    inputs = read_inputs(args.input)
    if isinstance(inputs, int):
        return inputs
    return cmd_export(args, text, inputs)


def cmd_export(args: argparse.Namespace, text: str, inputs: dict) -> int:
    """`fuse export`: the program's graph written to --out, whole or not at all."""
    from ..run.program import FuseError, compile

    backend = "torch" if args.format == "torch" else "jax"
    try:
        program = compile(text, backend=backend, device=args.device,
                          base_dir=Path(args.path).parent, path=args.path,
                          precision=args.precision, compiled=False)
        exported = program.export(backend, inputs)
        data = exported.to_bytes()
    except FuseError as err:
        print(f"fuse: {args.path}: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except Exception as err:  # never a traceback: an engine bug is still one paragraph
        print(f"fuse: {args.path}: internal error while exporting: {type(err).__name__}: "
              f"{err}", file=sys.stderr)
        return EXIT_ERRORS
    from ..io.sinks import atomic_write

    try:
        atomic_write(Path(args.out), data)
    except OSError as err:
        print(f"fuse: --out {args.out}: cannot be written: {err.strerror or err}",
              file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {args.out} ({args.format}: inputs {', '.join(exported.inputs) or 'none'}; "
          f"outputs {', '.join(exported.outputs)})")
    return EXIT_OK
