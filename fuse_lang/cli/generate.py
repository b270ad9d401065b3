"""`fuse generate PROG --params CKPT --prompt TEXT --steps N`: tokens drawn one at a
time from a causal program (docs/generation.md).

    fuse generate [--params CKPT.safetensors] (--prompt TEXT | --prompt-ids 3,1,4)
                  [--steps N] [--temperature T] [--top-k K] [--seed S]
                  [--vocab FILE.json] [--tokens NAME] [--target NAME] [--no-reuse]
                  [--backend numpy|torch|jax] [--device D] [--precision P]
                  [--format text|json] PATH

The prompt and what follows it are printed as text (standard output); a line on
standard error says how many tokens were made, how fast, and whether the
prefix's rows were reused.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..speed.fastinit import frozen_dataclass
from .render import fail_with_diagnostics
from .status import EXIT_ERRORS, EXIT_INTERRUPTED, EXIT_OK, UsageError, fail, file_name, printable


def add_generate_parser(sub: Any) -> None:
    """`fuse generate`'s options on the subcommand parsers `sub`."""
    p = sub.add_parser("generate", help="generate tokens from a causal program, one at a time")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--params", type=file_name, metavar="CKPT.safetensors",
                   help="the params (a checkpoint `fuse train` wrote), matched by name")
    p.add_argument("--prompt", metavar="TEXT", help="the text to go on from")
    p.add_argument("--prompt-ids", metavar="ID,ID,...",
                   help="the prompt as token ids instead of text")
    p.add_argument("--steps", type=_count, default=100, metavar="N",
                   help="how many tokens to generate (default 100)")
    p.add_argument("--temperature", type=_non_negative, default=1.0, metavar="T",
                   help="divides the logits before drawing; 0 takes the likeliest (default 1)")
    p.add_argument("--top-k", type=_count, default=None, metavar="K",
                   help="draw among the K likeliest tokens only")
    p.add_argument("--seed", type=_count, default=0, metavar="S",
                   help="the draws' seed: the same seed, the same text (default 0)")
    p.add_argument("--vocab", type=file_name, metavar="FILE.json",
                   help="the tokens as a JSON list, each at its id (default: the checkpoint's, "
                        "`fuse train --vocab`)")
    p.add_argument("--tokens", metavar="NAME",
                   help="the token input (default: the ids a `gather` reads)")
    p.add_argument("--target", metavar="NAME",
                   help="the tensor of the next token's logits or probabilities "
                        "(default: the export over the vocabulary)")
    p.add_argument("--no-reuse", action="store_false", dest="reuse",
                   help="run the whole window for every token (no rows kept)")
    p.add_argument("--backend", default="numpy", choices=("numpy", "torch", "jax"))
    p.add_argument("--device", default=None, help="cpu (the default), cuda, cuda:N or auto")
    p.add_argument("--precision", default="fp32", choices=("fp32", "fp64", "bf16", "fp16"))
    p.add_argument("--format", choices=("text", "json"), default="text")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, not {text!r}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number, 0 or more, not {text!r}")
    return value


@frozen_dataclass
class GenerateOptions:
    """`fuse generate`'s options; the prompt as text or as ids."""
    path: str
    params: str | None
    prompt: str | tuple[int, ...]
    steps: int
    temperature: float
    top_k: int | None
    seed: int
    vocab: str | None
    tokens: str | None
    target: str | None
    reuse: bool
    backend: str
    device: str | None
    precision: str
    format: str

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> GenerateOptions:
        """The options of a parsed command line; UsageError for a missing or double
        prompt, malformed ids or a `--params` that is no checkpoint."""
        if (ns.prompt is None) == (ns.prompt_ids is None):
            raise UsageError("give the prompt with --prompt TEXT or --prompt-ids 3,1,4 (one)")
        prompt: str | tuple[int, ...] = ns.prompt
        if ns.prompt_ids is not None:
            try:
                prompt = tuple(int(i) for i in ns.prompt_ids.split(",") if i.strip())
            except ValueError:
                raise UsageError(f"--prompt-ids takes ids separated by commas (3,1,4), not "
                                 f"{ns.prompt_ids!r}") from None
        if ns.params and not ns.params.lower().endswith(".safetensors"):
            raise UsageError(f"--params takes a .safetensors checkpoint (as `fuse train "
                             f"--checkpoint` writes), not {ns.params}")
        if ns.top_k == 0:
            raise UsageError("--top-k keeps 1 token or more")
        return cls(path=ns.path, params=ns.params, prompt=prompt, steps=ns.steps,
                   temperature=ns.temperature, top_k=ns.top_k, seed=ns.seed, vocab=ns.vocab,
                   tokens=ns.tokens, target=ns.target, reuse=ns.reuse, backend=ns.backend,
                   device=ns.device, precision=ns.precision, format=ns.format)


def cmd_generate(options: GenerateOptions) -> int:
    """`fuse generate`: the text printed; CommandFailed after saying why not."""
    from ..run.generate.vocabulary import read_vocabulary_file
    from ..run.program import FuseError, compile
    from .reading import read_program

    text = read_program(options.path)
    try:
        vocabulary = read_vocabulary_file(options.vocab) if options.vocab else None
        program = compile(text, backend=options.backend, device=options.device,
                          base_dir=Path(options.path).parent, path=options.path,
                          precision=options.precision, weights=options.params,
                          past_errors=True)
        result = program.generate(options.prompt, options.steps,
                                  temperature=options.temperature, top_k=options.top_k,
                                  seed=options.seed, tokens=options.tokens,
                                  target=options.target, vocabulary=vocabulary,
                                  reuse=options.reuse)
    except KeyboardInterrupt:
        fail(f"fuse: {options.path}: generation was stopped (Ctrl-C)", EXIT_INTERRUPTED)
    except FuseError as err:
        fail_with_diagnostics(options.path, text, err)
    except Exception as err:  # never a traceback: an engine bug is still one paragraph
        fail(f"fuse: {options.path}: internal error while generating: {type(err).__name__}: "
             f"{err}", EXIT_ERRORS)
    _show(result, options.format)
    return EXIT_OK


def _show(result: Any, fmt: str) -> None:
    if fmt == "json":
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print(printable(result.text if result.text is not None else
                    " ".join(str(i) for i in result.ids), sys.stdout))
    how = f"{result.reused_steps} of {result.reused_steps + result.whole_steps} steps " \
        f"computed the new position only" if result.reused_steps else "each step ran the window"
    note = f" ({result.reuse_note})" if result.reuse_note else ""
    sys.stdout.flush()  # the text first, then the line about it
    print(f"generated {len(result.generated)} tokens in {result.seconds:.3g} s "
          f"({result.tokens_per_s:.1f} tokens/s; {how}{note})", file=sys.stderr)
