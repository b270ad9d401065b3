"""`fuse cache info|clear`, `fuse export` and `fuse run --cache-dir`.

    fuse cache info [--cache-dir DIR] [--format text|json]
    fuse cache clear [--cache-dir DIR] [--format text|json]
    fuse export PATH --format torch|jax|stablehlo --out FILE [--input NAME=FILE.npy]...
                [--params CKPT.safetensors | --weights MANIFEST.json] [--dynamic INDEX,...]

The cache folder when `--cache-dir` is given without one, or left out of
`fuse cache`: `$FUSE_CACHE_DIR`, else `$XDG_CACHE_HOME/fuse`, else
`~/.cache/fuse` (run.cache.default_cache_dir; docs/execution.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..speed.fastinit import frozen_dataclass
from .status import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError, fail, file_name
from .weights import weights_problem

DEFAULT = "default"  # --cache-dir without a folder


@frozen_dataclass
class CacheOptions:
    """`fuse cache info|clear [--cache-dir DIR] [--format text|json]`."""
    action: str
    cache_dir: str | None
    format: str

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> CacheOptions:
        """The options of a parsed `fuse cache` command line."""
        return cls(action=ns.action, cache_dir=ns.cache_dir, format=ns.format)


@frozen_dataclass
class ExportOptions:
    """`fuse export PATH --format torch|jax|stablehlo --out FILE ...`."""
    path: str
    format: str
    out: str
    device: str | None
    precision: str
    inputs: tuple[str, ...]
    weights: str | None  # --params CKPT.safetensors or --weights MANIFEST.json
    dynamic: tuple[str, ...]

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> ExportOptions:
        """The options of a parsed `fuse export` command line."""
        problem = weights_problem(ns.weights, ns.params)
        if problem:
            raise UsageError(problem)
        dynamic = tuple(i.strip() for text in ns.dynamic for i in text.split(",") if i.strip())
        return cls(path=ns.path, format=ns.format, out=ns.out, device=ns.device,
                   precision=ns.precision, inputs=tuple(ns.input),
                   weights=ns.params or ns.weights, dynamic=dynamic)


# where the cache folder is when no DIR is given (run/cache.py's default_cache_dir)
DEFAULT_PLACES = "$FUSE_CACHE_DIR, else $XDG_CACHE_HOME/fuse, else ~/.cache/fuse"


def add_cache_dir_option(parser: argparse.ArgumentParser,
                         kept: str = "jax; torch with --compile") -> None:
    """`fuse run --cache-dir [DIR]` (`kept`: what the command keeps there)."""
    parser.add_argument("--cache-dir", nargs="?", const=DEFAULT, default=None, metavar="DIR",
                        help=f"keep compiled graphs in DIR for later runs ({kept}); "
                             f"without DIR: {DEFAULT_PLACES}")


def cache_dir_of(value: str | None) -> str | None:
    """The folder `--cache-dir` names (the default one for the bare flag)."""
    if value == DEFAULT:
        from ..run.cache import default_cache_dir

        return str(default_cache_dir())
    return value


def add_commands(sub: Any) -> None:
    """The `cache` and `export` subcommands."""
    p_cache = sub.add_parser("cache", help="show or clear the compiled-graph cache")
    p_cache.add_argument("action", choices=("info", "clear"))
    p_cache.add_argument("--cache-dir", metavar="DIR", default=None,
                         help=f"the cache folder (default: {DEFAULT_PLACES})")
    p_cache.add_argument("--format", choices=("text", "json"), default="text")
    p_export = sub.add_parser("export", help="write a program as a torch.export archive "
                                             "(.pt2), a jax.export artifact or StableHLO text")
    p_export.add_argument("path", metavar="PATH")
    p_export.add_argument("--format", choices=("torch", "jax", "stablehlo"), required=True)
    p_export.add_argument("--out", type=file_name, metavar="FILE", required=True)
    p_export.add_argument("--device", default=None, help="cpu (the default) or cuda[:N]")
    p_export.add_argument("--precision", default="fp32", choices=("fp32", "fp64", "bf16", "fp16"))
    p_export.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                          help="a source's value (its shape is the graph's; repeatable)")
    p_export.add_argument("--params", type=file_name, metavar="CKPT.safetensors", default=None,
                          help="the params' values, from a checkpoint (fuse train --checkpoint)")
    p_export.add_argument("--weights", type=file_name, metavar="MANIFEST.json", default=None,
                          help="a weights manifest: its tensors become the export's state")
    p_export.add_argument("--dynamic", action="append", default=[], metavar="INDEX,...",
                          help="leave the size of these indices' axes open (batch, sequence)")


def cmd_cache(options: CacheOptions) -> int:
    """`fuse cache info|clear`: the compiled-graph cache shown or emptied."""
    from ..run import cache

    folder = options.cache_dir or str(cache.default_cache_dir())
    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"the cache folder {folder} is a file, not a folder; give "
                         f"--cache-dir a folder")
    above = next((p for p in path.absolute().parents if p.exists()), None)
    if above is not None and not above.is_dir():  # a run could never make the folder
        raise UsageError(f"the cache folder {folder} cannot be a folder: {above} is a file; "
                         f"give --cache-dir a folder")
    if options.action == "clear":
        try:
            before = cache.clear(folder)
        except OSError as err:
            where = f"{err.filename}: " if err.filename else ""
            fail(f"fuse: cache clear: {folder} cannot be cleared: {where}"
                 f"{err.strerror or err}", EXIT_USAGE)
        if options.format == "json":  # what was there, in the shape of `info`
            _print_json(before)
        else:
            print(f"cleared {folder}: {before['entries']} entries, {_size(before['bytes'])}")
        return EXIT_OK
    data = cache.info(folder)
    if options.format == "json":
        _print_json(data)
        return EXIT_OK
    state = "" if data["exists"] else " (not made yet)"
    print(f"cache {data['cache_dir']}{state}: {data['entries']} entries, "
          f"{_size(data['bytes'])}")
    for name, part in data["backends"].items():
        print(f"  {name}: {part['entries']} entries, {part['files']} files, "
              f"{_size(part['bytes'])}")
    return EXIT_OK


def _print_json(data: dict) -> None:
    json.dump(data, sys.stdout, indent=2, allow_nan=False)  # (counts and sizes)
    sys.stdout.write("\n")


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


def cmd_export(options: ExportOptions) -> int:
    """`fuse export`: the program's graph written to --out, whole or not at all;
    CommandFailed after saying why not."""
    from ..run.program import FuseError, compile
    from .reading import read_inputs, read_program

    text = read_program(options.path)
    inputs = read_inputs(options.inputs)
    backend = "torch" if options.format == "torch" else "jax"
    try:
        program = compile(text, backend=backend, device=options.device,
                          base_dir=Path(options.path).parent, path=options.path,
                          precision=options.precision, compiled=False,
                          weights=options.weights)
        exported = program.export(options.format, inputs, dynamic=options.dynamic)
        data = exported.to_bytes()
    except FuseError as err:
        fail(f"fuse: {options.path}: {err}", EXIT_ERRORS)
    except Exception as err:  # never a traceback: an engine bug is still one paragraph
        fail(f"fuse: {options.path}: internal error while exporting: {type(err).__name__}: "
             f"{err}", EXIT_ERRORS)
    from ..io.sinks import atomic_write

    read = _read_by(options, program)
    if read:  # the graph in place of what it was made from: a slip, never meant
        fail(f"fuse: --out {options.out} is {read}, which the export reads; write the "
             f"graph to another file", EXIT_USAGE)
    try:
        atomic_write(Path(options.out), data)
    except OSError as err:
        fail(f"fuse: --out {options.out}: cannot be written: {err.strerror or err}", EXIT_USAGE)
    print(f"wrote {options.out} ({_described(exported)})")
    return EXIT_OK


def _read_by(options: ExportOptions, program: Any) -> str | None:
    """What `--out` would overwrite that the export read, in words; None when it is
    none of those files (reading.files_read)."""
    from .reading import files_read, overwritten

    manifest = program.weights.manifest if program.weights is not None else None
    read = files_read(options.path, program.analysis, options.inputs, options.weights,
                      manifest)
    return overwritten([Path(options.out)], read)


def _described(exported: Any) -> str:
    """`torch: inputs X[n], ...; state W1, W2; outputs P`: the keywords, the
    dynamic indices, the state and the outputs."""
    dynamic = {(n, k): i for i, pairs in exported.dynamic.items() for n, k in pairs}

    def shown(name: str) -> str:
        shape = [dynamic.get((name, k), str(extent))
                 for k, extent in enumerate(exported.example_inputs[name].shape)]
        spelled = exported.arguments[name]
        alias = f" (`{name}`)" if spelled != name else ""
        return f"{spelled}{alias}[{','.join(shape)}]"

    inputs = ", ".join(shown(n) for n in exported.inputs) or "none"
    state = f"; state {', '.join(exported.state)}" if exported.state else ""
    return f"{exported.format}: inputs {inputs}{state}; outputs {', '.join(exported.outputs)}"
