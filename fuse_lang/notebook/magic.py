"""The `%%fuse` cell magic (docs/notebooks.md): `%load_ext fuse_lang`, then

    %%fuse [--input NAME[=VAR]]... [--out NAME[=VAR]]... [--quiet] [--target NAME]...
           [--config FILE|VAR] [fuse run's options: --backend, --precision, --trace,
           --why, --plot, ...; notebook.options]

runs the cell's program.  Its diagnostics print as `fuse check` prints them
(errors and warnings, with the cell's own line numbers, path `cell`), and a
cell with an error runs nothing (with `--target`, the targets run where the
errors are outside their dependency cones, as `compile(targets=...)` allows).
`--input` reads notebook values as sources (notebook.values), and so does a
name the cell reads without defining it that is a notebook variable holding
data (implicit_inputs); the exports (or
the `--out` names) come back as notebook variables: a relation as a pandas (else
polars) DataFrame of its tuples (the `Relation` view with neither), a tensor as
an array of the run's backend.  The cell's value is the run's `RunResult` (with `--plot`, holding
its pictures), which Jupyter shows as the editor's results view does."""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..check import INPUT_KINDS, analyze
from ..cli.render import render_text
from ..front.diagnostics import Severity
from ..front.span import LineIndex
from ..run.interpret.evaluate import EvaluationError
from ..run.program import compile as compile_program
from ..run.results import FuseError, RunResult
from .options import MagicUsage, cell_config, pairs, parser, representations
from .values import KEYWORDS, ValueProblem, article, cell_sources, is_data

CELL = "cell"  # the path diagnostics name


def print_diagnostics(text: str, diagnostics: Any, namespace: dict | None = None,
                      cell_end: int | None = None, labels: dict[str, str] | None = None
                      ) -> int:
    """Print errors and warnings as `fuse check` does; the number of errors.  An
    undefined name that is a notebook variable holding no data gets a hint.
    `cell_end`: where the cell's own text ends and the declarations of its
    `--input`s begin; a place among those is named by its `--input`, not by a
    line the cell does not have; `labels`: a file of the run's named by what the
    user knows (`the notebook variable `X``) in place of its path."""
    lines = LineIndex(text)
    shown = [d for d in diagnostics if d.severity in (Severity.ERROR, Severity.WARNING)]
    end = len(text) if cell_end is None else cell_end
    for d in sorted(shown, key=lambda d: d.span.start):
        rendered = _rendered(text, lines, d, end)
        for path, label in (labels or {}).items():  # quoted or not
            rendered = rendered.replace(f"`{path}`", label).replace(path, label)
        print(rendered)
        name = text[d.span.start:d.span.end]
        if d.code in _UNDEFINED and namespace is not None and name in namespace:
            # (one holding data is read without a word: notebook.magic.implicit_inputs)
            print(_hint(name, namespace[name]))
    return sum(d.severity is Severity.ERROR for d in shown)


def _hint(name: str, value: Any) -> str:
    """The hint under an undefined name that is a notebook variable holding no data."""
    number = value.item() if isinstance(value, (np.integer, np.floating)) else value
    if ((isinstance(number, int) and not isinstance(number, bool) and abs(number) < 2**63)
            or (isinstance(number, float) and math.isfinite(number))):  # a hyperparameter
        return (f"  hint: `{name}` is a notebook variable, but a single number is no source; "
                f"write it in the cell as `{name} = const({number!r})`")
    kind = type(value).__name__
    return (f"  hint: `{name}` is a notebook variable, but {article(kind)} {kind} is no "
            f"source: a cell reads a NumPy array, a DataFrame or a set of tuples by its name")


def _rendered(text: str, lines: LineIndex, d: Any, end: int) -> str:
    """A diagnostic as `fuse check` prints it, its places past `end` (an
    `--input`'s declaration) named by the `--input`."""
    hidden = [r for r in d.related if r.position is None and r.span.start >= end]
    notes = [f"  {_input_at(text, lines, r.span.start)}: note: {r.message}" for r in hidden]
    if d.span.start < end:
        kept = dataclasses.replace(d, related=tuple(r for r in d.related if r not in hidden))
        return "\n".join([render_text(CELL, lines, kept), *notes])
    head = f"{_input_at(text, lines, d.span.start)}: {d.severity.value}[{d.code}]: {d.message}"
    places = [(r, r.position or lines.position(r.span.start)) for r in d.related
              if r not in hidden]
    return "\n".join([head, *notes, *(f"  {r.path or CELL}:{at[0] + 1}:{at[1] + 1}: note: "
                                       f"{r.message}" for r, at in places)])


def _input_at(text: str, lines: LineIndex, offset: int) -> str:
    """`--input NAME`: the `--input` whose declaration holds `offset`."""
    line = lines.line_text(lines.position(offset)[0])
    return "--input " + _NAME.match(line).group()


_NAME = re.compile(r"\w*")


def frame_kind() -> str | None:
    """The DataFrame library relations come back in: "pandas" where it is
    installed, else "polars" where that is, else None (a `Relation`)."""
    for module in ("pandas", "polars"):
        try:
            __import__(module)
        except ImportError:
            continue
        return module
    return None


def outputs_to_namespace(result: RunResult, names: dict[str, str], namespace: dict,
                         backend: Any = None) -> list[str]:
    """Set each output `name` as the variable `names[name]`: a relation as a
    DataFrame (pandas, else polars) or a Relation (neither installed), a tensor
    as an array of the run's backend (`backend`; a NumPy array without one or on
    numpy; a SciPy sparse array where the run kept it sparse)."""
    frames = frame_kind()
    relations = result.relations()
    told = []
    for name, var in names.items():
        if name in relations:
            relation = relations[name]
            namespace[var] = relation if frames is None else \
                relation.to_pandas() if frames == "pandas" else relation.to_polars()
            count = len(relation)
            told.append(f"{var} ({count} tuple{'' if count == 1 else 's'}" + (
                "; a Relation: neither pandas nor polars is installed" if frames is None
                else "") + ")")
        else:
            value = result.outputs[name]
            # a tensor kept sparse (--representation NAME=sparse) stays sparse: dense, it
            # could outgrow the memory; the "set" line says so
            sparse = type(value).__module__.startswith("scipy.sparse")
            namespace[var] = value if sparse else backend_array(backend, value)
            told.append(f"{var} {tuple(getattr(value, 'shape', ()))}"
                        + (" as a SciPy sparse array" if sparse else ""))
    return told


def backend_array(backend: Any, value: Any) -> Any:
    """A NumPy output as the backend's own array, on its device, of its dtype
    (issue 31: "tensors as arrays of the chosen backend"); as it is on numpy."""
    name = getattr(backend, "name", "numpy")
    if name == "torch":
        import torch

        return torch.tensor(np.asarray(value), device=backend.torch_device)  # a copy: any layout
    if name == "jax":
        import jax

        with backend.context():
            return jax.device_put(value)
    return value


def run_cell(line: str, cell: str, namespace: dict) -> RunResult | None:
    """The `%%fuse` magic: run `cell` with the options of `line`; the result, or
    None after printing why nothing ran."""
    try:
        options = parser().parse_args(_words(line))
        inputs = pairs(options.input, "--input")
        inputs.update(implicit_inputs(cell, namespace, inputs))
        outs = pairs(options.out, "--out")
        missing = [var for var in inputs.values() if var not in namespace]
        if missing:
            raise MagicUsage(f"%%fuse: --input: no notebook variable named {missing[0]!r}")
        setup = RunSetup(config=cell_config(options, namespace),
                         representation=representations(options.representation),
                         whys=why_targets(options.why), inputs=inputs)
        setup.check_weights(options)
        folder = Path(tempfile.mkdtemp(prefix="fuse-cell-"))
    except (MagicUsage, ValueError) as err:
        print(err, file=sys.stderr)
        return None
    result = None
    try:
        result = _run(options, setup, cell, {n: namespace[v] for n, v in inputs.items()}, outs,
                      namespace, folder)
        return result
    finally:
        # the result's why re-reads the run's sources: the folder goes with the result
        keeper = getattr(result, "explainer", None)
        if keeper is None:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            weakref.finalize(keeper, shutil.rmtree, folder, True)


def implicit_inputs(cell: str, namespace: dict, given: dict[str, str]) -> dict[str, str]:
    """The names the cell reads without defining them that are notebook variables
    holding data (values.is_data): each is the source of its name, as `--input
    NAME` would make it (docs/notebooks.md, "Python data in")."""
    names: dict[str, str] = {}
    if not any(is_data(namespace.get(word)) for word in set(_WORDS(cell)) - set(given)):
        return names  # (most cells: no word names data, and no second analysis is made)
    analysis = analyze(cell, None, Path(os.getcwd()))
    for d in analysis.diagnostics:
        name = cell[d.span.start:d.span.end]
        if (d.code in _UNDEFINED and name not in given and name.isidentifier()
                and name not in KEYWORDS and is_data(namespace.get(name))):
            names[name] = name
    return names


# a name the cell reads and does not define: `x[i]` (or `X(a)`) is an undefined
# tensor, `rows(a,b)` (lower case, so a call) an unknown builtin
_UNDEFINED = ("undefined-tensor", "unknown-builtin")

_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").findall

# a double-quoted string right after `(`, `[` or `,` is a why target's value
# (`--why Person(Ann,"25")`): it keeps its quotes, which a shell would drop (it asked
# about the integer 25); single- and other double-quoted words are the shell's
_WORD_QUOTES = re.compile(r"'[^']*'" + r'|"(?:[^"\\]|\\.)*"')


def _words(line: str) -> list[str]:
    """The `%%fuse` line's words, as a shell splits them (a target's quoted values kept)."""
    kept = _WORD_QUOTES.sub(lambda m: shlex.quote(m.group()) if m.group()[0] == '"' and
                            m.start() > 0 and line[m.start() - 1] in "([," else m.group(), line)
    try:
        return shlex.split(kept)
    except ValueError as err:  # an unclosed quote
        raise MagicUsage(f"%%fuse: the line cannot be read: {err}") from None


@dataclass
class RunSetup:
    """What the line says about the run, read before anything runs: the
    configuration, the representations kept, the targets of `--why`."""
    config: Any
    representation: dict[str, str]
    whys: list[tuple[str, tuple]]
    inputs: dict[str, str] = field(default_factory=dict)  # --input: source -> variable

    @staticmethod
    def check_weights(options: argparse.Namespace) -> None:
        """`--weights` and `--params` as `fuse run` takes them."""
        from ..cli.weights import weights_problem

        problem = weights_problem(options.weights, options.params)
        if problem:
            raise MagicUsage(f"%%fuse: {problem}")


def why_targets(texts: list[str]) -> list[tuple[str, tuple]]:
    """`--why`'s targets read (`Ancestor(Alice, Eve)`, `Y[3]`)."""
    from ..ide.why_text import TargetError, parse_target

    try:
        return [parse_target(text) for text in texts]
    except TargetError as err:
        raise MagicUsage(f"%%fuse: --why: {err}") from None


def _run(options: argparse.Namespace, setup: RunSetup, cell: str, values: dict[str, Any],
         outs: dict[str, str], namespace: dict, folder: Path) -> RunResult | None:
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
    weights = options.weights or options.params
    # a source's file the weights give in its place is no error (compile reads them)
    diagnostics = [d for d in analysis.diagnostics
                   if not (weights and d.code == "missing-source")]
    # the files of the --input values, by the notebook variables they were written from
    labels = {str(folder / f"{name}.{kind}"): f"the notebook variable `{var}`"
              for name, var in setup.inputs.items() for kind in ("tsv", "npy", "npz")}
    errors = print_diagnostics(text, diagnostics, namespace, len(cell.rstrip("\n")) + 1,
                               labels)
    if errors:  # with --target, the targets still run where the errors are outside their cones
        plural = "s" if errors != 1 else ""
        if not options.target:
            print(f"{CELL}: {errors} error{plural}; nothing ran")
            return None
        print(f"{CELL}: {errors} error{plural}; running only {', '.join(options.target)}")
    try:
        program = compile_program(text, None, None, base, targets=options.target or None,
                                  config=setup.config, compiled=options.compiled,
                                  representation=setup.representation, weights=weights,
                                  adapters=options.adapter or None,
                                  analysis=None if shapes or weights else analysis)
        result = program.execute(sources.runtime, time_limit=options.time_limit)
    except FuseError as err:
        print(f"{CELL}: {err}", file=sys.stderr)
        return None
    except EvaluationError as err:  # a problem of the program, said in its words
        print(f"{CELL}: {err}", file=sys.stderr)
        return None
    except KeyboardInterrupt:  # the notebook's stop button: sinks are written last
        print(f"{CELL}: the run was stopped; no sink file was written", file=sys.stderr)
        return None
    _set_outputs(options, outs, program, result, namespace)
    if result.explainer is not None:  # a why, now or later, cites a value's file by the
        result.explainer.source_labels.update(labels)  # notebook variable
        result.explainer.input_labels.update({name: f"the notebook variable `{setup.inputs[name]}`"
                                              for name in sources.runtime})
    _report(result, setup.whys)
    return _with_pictures(options, result)


def _set_outputs(options: argparse.Namespace, outs: dict[str, str], program: Any,
                 result: RunResult, namespace: dict) -> None:
    wanted = outs or {n: n for n in (program.exports or result.outputs) if n in result.outputs}
    unknown = [n for n in wanted if n not in result.outputs]
    if unknown:
        print(f"%%fuse: --out {unknown[0]}: not an output of the cell (those are: "
              f"{', '.join(result.outputs)})", file=sys.stderr)
        wanted = {n: v for n, v in wanted.items() if n in result.outputs}
    told = outputs_to_namespace(result, wanted, namespace, getattr(program, "backend", None))
    if told and not options.quiet:
        print("set " + ", ".join(told))


def _report(result: RunResult, whys: list[tuple[str, tuple]]) -> None:
    """What `fuse run` prints after its results: the backend `auto` picked, the
    Monte Carlo estimates, the trace (`--trace`), the answers of `--why`."""
    from ..ide.why_text import why_text
    from ..run.trace import report_lines

    for line in report_lines(result):
        print(line)
    for name, values in whys:
        try:
            answer = result.why(name, values)
        except FuseError as err:
            print(f"{CELL}: why {name}: {err}", file=sys.stderr)
            continue
        print(f"why {answer.text}:")
        print(why_text(answer))


def _with_pictures(options: argparse.Namespace, result: RunResult) -> RunResult:
    """The result with a picture of each output (`--plot`), as `fuse_lang.plot`
    draws them; the result as it is, after saying why, where they cannot be drawn."""
    if not options.plot:
        return result
    from ..ide.notebook_html import with_pictures

    try:
        return with_pictures(result, options.plot_format, options.slice_along)
    except FuseError as err:
        print(f"%%fuse: --plot: {err}", file=sys.stderr)
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
