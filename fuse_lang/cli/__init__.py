"""`fuse`: check, explain, run, train and draw Fuse programs from the command line.

    fuse check [--format text|json] [--weights MANIFEST.json] PATH...
    fuse explain [--format text|json] [--shard INDEX=AXIS]... [--mesh AXIS=N,...] [--graph FILE.svg|FILE.png] PATH
    fuse run PATH [--backend numpy|torch|jax] [--device cpu|cuda[:N]|auto] [--precision fp32|fp64|bf16|fp16]
             [--compile|--no-compile] [--input NAME=FILE.npy]... [--out FILE.npz|DIR/] [--format text|json]
             [--shard INDEX=AXIS]... [--mesh AXIS=N,...] [--time-limit SECONDS] [--target NAME]...
             [--plot DIR [--plot-format svg|png] [--slice-along INDEX]]
    fuse train PATH [--backend torch|jax] [--optimizer sgd|adam|adamw] [--lr X] [--steps N] [--seed N]
               [--batch INDEX=N] [--checkpoint FILE.safetensors] [--resume FILE.safetensors]
    fuse plot RESULT.npz [--out DIR] [--format svg|png] [--program PATH] [--slice-along INDEX]
    fuse cache info|clear [--cache-dir DIR]      (and fuse run|train --cache-dir [DIR])
    fuse export PATH --format torch|jax|stablehlo --out FILE [--params CKPT.safetensors] [--dynamic INDEX,...]

Exit status: 0 when no errors, 1 when any error, 2 for usage or I/O errors, 130
when stopped by Ctrl-C.

A module per command: check.py, explain.py, run.py (and run_output.py, what it
prints), train.py, plot.py, cache.py (`cache` and `export`); main.py holds the
parser, `main` and the `fuse` console script `entry`.  Each command's arguments
become a frozen options object (`CheckOptions`, `RunOptions`, ...), and a
command that fails raises `status.CommandFailed` after printing why.  This
package re-exports what other code uses; the modules of `run`, `explain` and
`plot` (and their names below) are imported only when used, so that `fuse
check` starts fast.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .check import CheckOptions, check_paths, cmd_check
from .main import build_parser, entry, main
from .reading import MAX_FILE_BYTES, load, read_program
from .render import render_text
from .status import EXIT_ERRORS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CommandFailed, UsageError

# Names of the modules imported when first asked for (`fuse_lang.cli.cmd_run`).
_LAZY = {"RunOptions": "run", "cmd_run": "run", "ExplainOptions": "explain",
         "cmd_explain": "explain", "PlotOptions": "plot", "cmd_plot": "plot"}

__all__ = ["EXIT_ERRORS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "MAX_FILE_BYTES",
           "CheckOptions", "CommandFailed", "UsageError", "build_parser", "check_paths",
           "cmd_check", "entry", "load", "main", "read_program", "render_text", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
