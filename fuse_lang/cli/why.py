"""`fuse why PROGRAM TARGET`: why a tuple holds (its derivation), why it does not, or
why an element of a numeric tensor has its value (its terms); text or JSON.
`fuse run --why TARGET` asks the same after the run's results (`whys_of`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..speed.fastinit import frozen_dataclass
from .reading import read_inputs, read_program
from .render import fail_with_diagnostics
from .status import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, fail, json_document


@frozen_dataclass
class WhyOptions:
    path: str
    target: str
    format: str
    limit: int
    top: int
    inputs: tuple[str, ...]

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> WhyOptions:
        return cls(path=ns.path, target=ns.target, format=ns.format, limit=ns.limit,
                   top=ns.top, inputs=tuple(ns.input))


def add_why_parser(sub: Any) -> None:
    p_why = sub.add_parser("why", help="explain one answer: a tuple's derivation, or a "
                                       "number's terms (docs/why.md)")
    p_why.add_argument("path", metavar="PATH")
    p_why.add_argument("target", metavar="TARGET",
                       help="a tuple `Ancestor(Alice, Eve)` or an element `Y[3]`")
    p_why.add_argument("--format", choices=("text", "json"), default="text")
    p_why.add_argument("--limit", type=_positive, default=50, metavar="N",
                       help="nodes of a derivation shown before '... K more' (default 50)")
    p_why.add_argument("--top", type=_positive, default=5, metavar="K",
                       help="terms of a sum shown (default 5)")
    p_why.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                       help="give a source's value from a .npy file (repeatable)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, not {value}")
    return value


def parsed_targets(texts: Sequence[str], flag: str) -> list[tuple[str, tuple]]:
    """Each target read (`Ancestor(Alice, Eve)`); CommandFailed (exit 2) for one malformed."""
    if not texts:
        return []  # (a run without --why does not import the reader)
    from ..ide.why_text import TargetError, parse_target

    out = []
    for text in texts:
        try:
            out.append(parse_target(text))
        except TargetError as err:
            fail(f"fuse: {flag}: {err}", EXIT_USAGE)
    return out


def whys_of(path: str, result: Any, targets: Sequence[tuple[str, tuple]], limit: int = 50,
            top: int = 5) -> list[Any]:
    """The why of each target on `result`; CommandFailed (exit 1) when one cannot be
    answered (an unknown tensor, a wrong number of values), said in words."""
    answers, problems = whys_answered(path, result, targets, limit, top)
    if problems:
        fail(problems[0], EXIT_ERRORS)
    return answers


def whys_answered(path: str, result: Any, targets: Sequence[tuple[str, tuple]],
                  limit: int = 50, top: int = 5) -> tuple[list[Any], list[str]]:
    """The answers of the targets that can be answered, and a line for each that
    cannot (an unknown tensor, a wrong number of values)."""
    from ..run.results import FuseError

    answers, problems = [], []
    for name, values in targets:
        try:
            answers.append(result.why(name, values, limit=limit, top=top))
        except FuseError as err:
            problems.append(f"fuse: {path}: why {name}: {err}")
    return answers, problems


def cmd_why(options: WhyOptions) -> int:
    from ..ide.why_text import why_text
    from ..run.why.data import to_json
    from ..speed.lazy_numpy import defer_numpy_tools

    defer_numpy_tools()
    targets = parsed_targets([options.target], "why")
    text = read_program(options.path)
    inputs = read_inputs(options.inputs)
    result = _ran(options, text, inputs, None)
    answers, problems = whys_answered(options.path, result, targets, options.limit, options.top)
    if problems and ("is not computed by this run" in problems[0]
                     or "is not a tensor of this program" in problems[0]):
        # the whole document's run left the tensor out (read by nothing it exports,
        # queries or writes, or reading what has an error): its own cone can still run
        name = targets[0][0]
        retried = _ran(options, text, inputs, name)
        if not isinstance(retried, str):
            answers, problems = whys_answered(options.path, retried, targets, options.limit,
                                              options.top)
        elif "is not a tensor of this program" in problems[0] \
                and "is not an export, query or tensor" not in retried:
            problems = [f"fuse: {options.path}: why {name}: `{name}` is not computed by this "
                        f"run: what it reads has errors ({retried})"]
    if problems:
        fail(problems[0], EXIT_ERRORS)
    if options.format == "json":
        sys.stdout.write(json_document(to_json(answers[0]), allow_nan=True, default=str))
    else:
        print(why_text(answers[0]))
    return EXIT_OK


def _ran(options: WhyOptions, text: str, inputs: Any, target: str | None) -> Any:
    """The run of the whole document past its errors (target None), or of one tensor's
    dependency cone (the error's words when that cannot run)."""
    from ..run.program import FuseError, compile

    try:
        program = compile(text, base_dir=Path(options.path).parent, path=options.path,
                          past_errors=True, targets=[target] if target else None)
        if target:  # (an input of a source outside the cone is not one of its run)
            inputs = {n: v for n, v in inputs.items() if n in program.analysis.tensors}
        return program.execute(inputs, write_sinks=False)
    except FuseError as err:
        if target:
            return str(err)
        fail_with_diagnostics(options.path, text, err)
    except Exception as err:  # never a traceback: an engine bug is still one paragraph
        if target:
            return f"internal error while running: {type(err).__name__}: {err}"
        fail(f"fuse: {options.path}: internal error while running: {type(err).__name__}: "
             f"{err}", EXIT_ERRORS)
