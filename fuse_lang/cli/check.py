"""`fuse check [--format text|json] [--weights MANIFEST.json] PATH...`: the
diagnostics of programs (also `fuse-lsp --check`, fuse_lsp/cli.py)."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..check import analyze
from ..front.diagnostics import Diagnostic, Severity
from ..front.span import LineIndex
from ..speed.fastinit import frozen_dataclass
from ..speed.gc_pause import gc_paused
from .reading import load, unreadable
from .render import diagnostic_json, render_text
from .status import (
    EXIT_ERRORS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    json_document,
    keep_until_exit,
    printable,
    quiet_stdout,
)


@frozen_dataclass
class CheckOptions:
    """`fuse check`'s options: the programs, the output format (text or json) and
    a weights manifest whose tensors stand in for the programs' sources."""
    paths: tuple[str, ...]
    format: str = "text"
    weights: str | None = None

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> CheckOptions:
        """The options of a parsed `fuse check` command line."""
        return cls(paths=tuple(ns.paths), format=ns.format, weights=ns.weights)


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
            problems.append(unreadable(path, err))
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
        keep_until_exit(analysis)
    return results, problems


def cmd_check(options: CheckOptions, prog: str = "fuse") -> int:
    """Print the diagnostics of `options.paths`; the exit status (0 none, 1 an
    error, 2 a file that could not be read).  `prog` names the command in its
    messages (`fuse-lsp --check`)."""
    # The analyses are millions of acyclic objects: with the cycle collector on,
    # its first pass after `analyze` would scan them all (a tenth of the run on a
    # 10,000-line file).  They are freed when _check returns, before it is back on.
    try:
        with gc_paused():
            return _check(options, prog)
    except KeyboardInterrupt:  # Ctrl-C: the status docs/cli.md gives it, no traceback
        return EXIT_INTERRUPTED


def _check(options: CheckOptions, prog: str) -> int:
    results, problems = check_paths(options.paths, options.weights)
    for message in problems:
        print(message.replace("fuse:", f"{prog}:", 1), file=sys.stderr)
    errors = any(d.severity is Severity.ERROR for _, _, ds in results for d in ds)
    status = EXIT_USAGE if problems else EXIT_ERRORS if errors else EXIT_OK
    try:
        _print(options.format, results)
    except BrokenPipeError:  # a reader that stopped (`fuse check ... | head`): the status
        # is still the diagnostics' (a pipeline's error is not hidden)
        quiet_stdout()
    return status


def _print(format: str, results: list) -> None:
    """The diagnostics of `results` on standard output, as `format` (text or json)."""
    if format == "json":
        out = [diagnostic_json(path, lines, d) for path, lines, ds in results for d in ds]
        # (exactly this shape, relied on: a file that could not be read is said on
        # stderr and by the exit status, 2)
        document = {"diagnostics": out}
        # (ints and strings only: strict JSON; a character stdout cannot say, escaped)
        sys.stdout.write(json_document(document))
    else:
        counts = {s: 0 for s in Severity}
        for path, lines, ds in results:
            for d in ds:
                counts[d.severity] += 1
                _say(render_text(path, lines, d))
        if results:
            summary = ", ".join(f"{n} {s.value}{'s' if n != 1 and s.value != 'information' else ''}"
                                for s, n in counts.items() if n)
            files = f"{len(results)} file{'s' if len(results) != 1 else ''}"
            print(f"{files} checked: {summary or 'no problems'}")


def _say(text: str) -> None:
    """A line of text output, never a traceback for a character standard output
    cannot say (a file name that is not UTF-8 on an ASCII terminal)."""
    sys.stdout.write(printable(text + "\n", sys.stdout))
