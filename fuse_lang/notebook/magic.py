"""The `%%fuse` cell magic (docs/notebooks.md): `%load_ext fuse_lang`, then

    %%fuse [--backend B] [--device D] [--target NAME]... [--input NAME[=VAR]]...
           [--out NAME[=VAR]]... [--quiet]

runs the cell's program.  Its diagnostics print as `fuse check` prints them
(errors and warnings, with the cell's own line numbers, path `cell`), and a
cell with an error runs nothing (with `--target`, the targets run where the
errors are outside their dependency cones, as `compile(targets=...)` allows).  `--input` reads notebook values as sources
(notebook.values); the exports (or the `--out` names) come back as notebook
variables: a relation as a pandas DataFrame of its tuples (the `Relation` view
without pandas), a tensor as a NumPy array.  The cell's value is the run's
`RunResult`, which Jupyter shows as the editor's results view does."""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..check import INPUT_KINDS, analyze
from ..cli.render import render_text
from ..front.diagnostics import Severity
from ..front.span import LineIndex
from ..run.program import compile as compile_program
from ..run.results import FuseError, RunResult
from .values import ValueProblem, cell_sources

CELL = "cell"  # the path diagnostics name


class MagicUsage(Exception):
    """A `%%fuse` line that cannot be read; the message says why."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # never exit the kernel
        raise MagicUsage(f"%%fuse: {message}\n{self.format_usage().strip()}")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%%fuse", add_help=False,
                description="Run the cell's Fuse program (docs/notebooks.md).")
    p.add_argument("--backend", default=None, help="numpy (default), torch, jax or auto")
    p.add_argument("--device", default=None, help="cpu (default), cuda, cuda:N or auto")
    p.add_argument("--target", action="append", default=[],
                   help="a tensor or query to compute alone (with its dependency cone)")
    p.add_argument("--input", action="append", default=[], metavar="NAME[=VAR]",
                   help="the notebook variable VAR (default NAME) as the source NAME")
    p.add_argument("--out", action="append", default=[], metavar="NAME[=VAR]",
                   help="set only these outputs, as VAR (default NAME)")
    p.add_argument("--quiet", action="store_true", help="print no list of variables set")
    return p


def pairs(items: list[str], flag: str) -> dict[str, str]:
    """`NAME=VAR` (or `NAME`, meaning `NAME=NAME`) items by NAME."""
    out = {}
    for item in items:
        name, _, var = item.partition("=")
        if not name.isidentifier() or (var and not var.isidentifier()):
            raise MagicUsage(f"%%fuse: {flag} takes NAME or NAME=VARIABLE, not {item!r}")
        out[name] = var or name
    return out


def print_diagnostics(text: str, diagnostics: Any, namespace: dict | None = None) -> int:
    """Print errors and warnings as `fuse check` does; the number of errors.  An
    undefined name that is a notebook variable gets a hint: `--input NAME`."""
    lines = LineIndex(text)
    shown = [d for d in diagnostics if d.severity in (Severity.ERROR, Severity.WARNING)]
    for d in sorted(shown, key=lambda d: d.span.start):
        print(render_text(CELL, lines, d))
        name = text[d.span.start:d.span.end]
        if d.code == "undefined-tensor" and namespace is not None and name in namespace:
            print(f"  hint: `{name}` is a notebook variable: `%%fuse --input {name}` reads it "
                  f"as the source `{name}`")
    return sum(d.severity is Severity.ERROR for d in shown)


def outputs_to_namespace(result: RunResult, names: dict[str, str], namespace: dict
                         ) -> list[str]:
    """Set each output `name` as the variable `names[name]`: a relation as a
    DataFrame (pandas installed) or a Relation, a tensor as an array."""
    try:
        import pandas  # noqa: F401 - only whether it is there
        frames = True
    except ImportError:
        frames = False
    relations = result.relations()
    told = []
    for name, var in names.items():
        if name in relations:
            relation = relations[name]
            namespace[var] = relation.to_pandas() if frames else relation
            told.append(f"{var} ({len(relation)} tuples)")
        else:
            namespace[var] = result.outputs[name]
            told.append(f"{var} {tuple(getattr(result.outputs[name], 'shape', ()))}")
    return told


def run_cell(line: str, cell: str, namespace: dict) -> RunResult | None:
    """The `%%fuse` magic: run `cell` with the options of `line`; the result, or
    None after printing why nothing ran."""
    try:
        options = parser().parse_args(shlex.split(line))
        inputs = pairs(options.input, "--input")
        outs = pairs(options.out, "--out")
        missing = [var for var in inputs.values() if var not in namespace]
        if missing:
            raise MagicUsage(f"%%fuse: --input: no notebook variable named {missing[0]!r}")
        folder = Path(tempfile.mkdtemp(prefix="fuse-cell-"))
    except (MagicUsage, ValueError) as err:
        print(err, file=sys.stderr)
        return None
    try:
        return _run(options, cell, {n: namespace[v] for n, v in inputs.items()}, outs,
                    namespace, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(options: argparse.Namespace, cell: str, values: dict[str, Any], outs: dict[str, str],
         namespace: dict, folder: Path) -> RunResult | None:
    base = Path(os.getcwd())
    declared = {n for n, t in analyze(cell, None, base).tensors.items()
                if t.kind in INPUT_KINDS and t.source_path} if values else set()
    try:
        sources = cell_sources(folder, values, declared)
    except ValueProblem as err:
        print(f"%%fuse: {err}", file=sys.stderr)
        return None
    text = sources.program(cell)
    shapes = {n: tuple(a.shape) for n, a in sources.runtime.items()}
    analysis = analyze(text, None, base, input_shapes=shapes or None)
    errors = print_diagnostics(text, analysis.diagnostics, namespace)
    if errors:  # with --target, the targets still run where the errors are outside their cones
        plural = "s" if errors != 1 else ""
        if not options.target:
            print(f"{CELL}: {errors} error{plural}; nothing ran")
            return None
        print(f"{CELL}: {errors} error{plural}; running only {', '.join(options.target)}")
    try:
        program = compile_program(text, options.backend, options.device, base,
                                  targets=options.target or None,
                                  analysis=None if shapes else analysis)
        result = program.execute(sources.runtime)
    except FuseError as err:
        print(f"{CELL}: {err}", file=sys.stderr)
        return None
    wanted = outs or {n: n for n in (program.exports or result.outputs) if n in result.outputs}
    unknown = [n for n in wanted if n not in result.outputs]
    if unknown:
        print(f"%%fuse: --out {unknown[0]}: not an output of the cell (those are: "
              f"{', '.join(result.outputs)})", file=sys.stderr)
        wanted = {n: v for n, v in wanted.items() if n in result.outputs}
    told = outputs_to_namespace(result, wanted, namespace)
    if told and not options.quiet:
        print("set " + ", ".join(told))
    return result


def register(ipython: Any) -> None:
    """Register `%%fuse` with an IPython shell (`%load_ext fuse_lang`)."""
    from ..ide import notebook_html  # noqa: F401 - registers the results' rich display

    def fuse(line: str, cell: str) -> RunResult | None:
        return run_cell(line, cell, ipython.user_ns)

    fuse.__doc__ = parser().format_help() + "\n" + (__doc__ or "")
    ipython.register_magic_function(fuse, magic_kind="cell", magic_name="fuse")
    # a why's answer (run.why.data: plain dataclasses this layer does not change)
    # shows as `fuse why` prints it
    formatter = ipython.display_formatter.formatters["text/html"]
    for kind in ("Derivation", "WhyNot", "NumberWhy"):
        formatter.for_type_by_name("fuse_lang.run.why.data", kind, notebook_html.why_html)
