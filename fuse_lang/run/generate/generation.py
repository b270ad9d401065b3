"""`program.generate(prompt, steps, ...)` and `fuse generate` (docs/generation.md):
tokens drawn one at a time from a causal program's logits at the last position.

The program is cut to the tensor of the logits (check.generation), the token
input made an input of its own; the window is the token input's sequence length
(the program's, e.g. 64: its positional params).  While the text fits in the
window, the first step runs the window whole and every later step computes only
the new position over the rows kept (stepping.HeldWindow), once the program is
seen to be causal; past the window the context slides (the last `window` tokens
at positions 0 to window-1), so every position changes and each step runs the
window whole, with or without reuse.  So both ways give the same tokens."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence
from weakref import WeakKeyDictionary

import numpy as np

from ...check import analyze
from ...check.generation import GenerationProblem, GenerationRoles, generation_roles
from ...front.diagnostics import make
from ...front.span import Span
from ..compiling import raise_on_errors
from ..results import FuseError
from .sampling import Sampler, whole_number
from .stepping import HeldWindow, Window
from .vocabulary import Vocabulary, text_vocabulary, weights_vocabulary

CompiledProgram = Any  # run.program.CompiledProgram (which imports this package)


@dataclass(frozen=True)
class GenerationOptions:
    steps: int
    temperature: float = 1.0
    top_k: int | None = None
    seed: int | None = 0
    tokens: str | None = None  # the token input (default: the ids gather reads)
    target: str | None = None  # the logits or probabilities (default: the export)
    vocabulary: tuple[str, ...] | dict | None = None  # default: the checkpoint's
    reuse: bool = True


@dataclass
class GenerationResult:
    prompt: list[int]  # the prompt's ids
    generated: list[int] = field(default_factory=list)  # the new tokens' ids
    text: str | None = None  # the prompt and what follows, as text (with a vocabulary)
    new_text: str | None = None  # what follows the prompt
    seconds: float = 0.0  # the generation's time (after compiling the cut program)
    reused_steps: int = 0  # steps that computed only the new position
    whole_steps: int = 0  # steps that ran the window whole
    reuse_note: str | None = None  # why the kept rows were not reused, where not
    window: int = 0

    @property
    def ids(self) -> list[int]:
        return self.prompt + self.generated

    @property
    def tokens_per_s(self) -> float:
        return len(self.generated) / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        return {"prompt": self.prompt, "generated": self.generated, "text": self.text,
                "new_text": self.new_text, "seconds": self.seconds,
                "tokens_per_s": self.tokens_per_s, "reused_steps": self.reused_steps,
                "whole_steps": self.whole_steps, "reuse_note": self.reuse_note,
                "window": self.window}


def generate(program: CompiledProgram, prompt: str | Sequence[int],
             options: GenerationOptions) -> GenerationResult:
    """See CompiledProgram.generate."""
    if whole_number(options.steps) is None or options.steps < 0:
        raise FuseError(f"steps is the number of tokens to generate, a whole number, 0 or "
                        f"more, not {options.steps!r}")
    sampler = Sampler(options.temperature, options.top_k, options.seed)
    roles = _roles(program.analysis, options)
    vocabulary = _vocabulary(program, options, prompt)
    size = roles.vocabulary
    if vocabulary is not None and size is not None and len(vocabulary) != size:
        raise FuseError(f"the vocabulary holds {len(vocabulary)} tokens but the program's "
                        f"vocabulary axis has {size}: was it written for another model?")
    ids = _prompt_ids(prompt, vocabulary, size)
    prepared = _prepared(program, roles)
    result = GenerationResult(list(ids), window=prepared.window)
    started = time.perf_counter()
    _loop(program, prepared, ids, sampler, options, result)
    result.seconds = time.perf_counter() - started
    if vocabulary is not None:
        result.text = vocabulary.decode(result.ids)
        result.new_text = vocabulary.decode(result.generated)
    return result


@dataclass
class _Prepared:
    """What the generations of one program with one choice of tokens and target
    share: the cut program and its plans, the rows kept, and the verdict on reuse
    (checked on the first generation: whether the program is causal, and whether a
    step at the new position gives the whole window's logits)."""

    roles: GenerationRoles
    window: int
    whole: Window
    held: HeldWindow
    causal_checked: bool = False
    step_checked: bool = False
    note: str | None = None  # why rows are not reused, once found


# per compiled program: its _Prepared per (tokens, logits); forgotten with the program
_PREPARED: WeakKeyDictionary = WeakKeyDictionary()


def _prepared(program: CompiledProgram, roles: GenerationRoles) -> _Prepared:
    known = _PREPARED.setdefault(program, {})
    key = (roles.tokens, roles.logits)
    if key not in known:
        cut, window = _cut_program(program, roles)
        known[key] = _Prepared(roles, window, Window(cut, roles, window),
                               HeldWindow(cut, roles, window), note=_compiled_note(cut))
    return known[key]


def _compiled_note(cut: CompiledProgram) -> str | None:
    """Why a program run as compiled graphs does not reuse rows: its whole window is
    one graph (jax.jit, torch.compile), while a row step runs the interpreter's
    operations one by one, eagerly: on jax 13 against 730 tokens/s (the tiny
    model of tests/test_generate.py)."""
    if not cut.compiled:
        return None
    return ("the program runs as a compiled graph (jax's default, or compiled=True on "
            "torch): the whole window as one graph is faster than steps computed "
            "operation by operation, so each step runs the window whole")


def _roles(analysis: Any, options: GenerationOptions) -> GenerationRoles:
    try:
        return generation_roles(analysis, options.tokens, options.target)
    except GenerationProblem as problem:
        raise _problem_error(analysis, problem.diagnostic) from None


def _problem_error(analysis: Any, diagnostic: Any) -> FuseError:
    line, col = analysis.lines.position(diagnostic.span.start)
    return FuseError(f"line {line + 1}, column {col + 1}: {diagnostic.message} "
                     f"[{diagnostic.code}]", (diagnostic,))


def _vocabulary(program: CompiledProgram, options: GenerationOptions,
                prompt: str | Sequence[int]) -> Vocabulary | None:
    entries = options.vocabulary
    if entries is None:
        entries = weights_vocabulary(program.weights)
    if entries is None:  # the one the program reads its own token ids from text with
        entries = text_vocabulary(program.analysis, program.base_dir)
    if entries is None:
        if isinstance(prompt, str):
            raise FuseError("no vocabulary to read the prompt with: give one (`--vocab "
                            "FILE.json`, `vocabulary=`: the tokens as a JSON list, each at "
                            "its id), train with `fuse train --vocab` so that the checkpoint "
                            "holds it, or give the prompt as ids")
        return None
    return Vocabulary(entries)


def _prompt_ids(prompt: str | Sequence[int], vocabulary: Vocabulary | None,
                size: int | None) -> list[int]:
    if isinstance(prompt, str):
        assert vocabulary is not None
        ids = vocabulary.encode(prompt)
    else:
        try:
            given = list(prompt)
        except TypeError:
            raise FuseError(f"the prompt is text or a list of token ids, not "
                            f"{prompt!r}") from None
        ids = [whole_number(i) for i in given]
        if None in ids:  # 1.7 or "1" is not an id (it was read as 1)
            raise FuseError(f"the prompt's ids are whole numbers, not "
                            f"{given[ids.index(None)]!r}")
        bad = [i for i in ids if i < 0 or (size is not None and i >= size)]
        if bad:
            raise FuseError(f"the prompt's id {bad[0]} is not a token of the vocabulary "
                            f"(ids 0 to {(size or 1) - 1})")
    if not ids:
        raise FuseError("the prompt is empty: generation goes on from at least one token")
    return ids


def _cut_program(program: CompiledProgram, roles: GenerationRoles
                 ) -> tuple[CompiledProgram, int]:
    """The program cut to the logits, compiled alike, and its window (the token
    input's sequence length); FuseError with `generate-no-window` when unknown."""
    base = program.analysis
    shapes = program.weights.shapes() if program.weights is not None else {}
    window = roles.window
    if window is None:  # the cut program's own shapes (the weights') may say it
        first = analyze(roles.text, base.path, program.base_dir, input_shapes=shapes or None)
        window = generation_roles(first, roles.tokens, roles.logits).window
    if window is None:
        diagnostic = make("generate-no-window", f"the length of `{roles.tokens}`'s sequence "
                          f"axis `{roles.sequence_index}` is not known: declare it (`axis "
                          f"{roles.sequence_index} = 64`) or give the params whose shapes "
                          f"say it (`--params`)", _declaration(base, roles.tokens))
        raise _problem_error(base, diagnostic)
    rank = len([a for a in base.tensors[roles.tokens].axes if not a.virtual])
    shapes = {**shapes, roles.tokens: roles.token_shape(rank, window)}
    cut = analyze(roles.text, base.path, program.base_dir, input_shapes=shapes)
    raise_on_errors(cut)
    missing = [n for n, t in cut.tensors.items() if t.kind == "param" and n not in shapes]
    if program.weights is not None and missing:
        raise FuseError(f"the params give no value for {', '.join(missing)}: were they "
                        f"written for another program?")
    return program.variant(analysis=cut), window


def _declaration(analysis: Any, name: str) -> Any:
    info = analysis.tensors[name]
    return analysis.program.statements[info.statements[0]].span if info.statements \
        else Span(0, 0)


def _loop(program: CompiledProgram, prepared: _Prepared, ids: list[int], sampler: Sampler,
          options: GenerationOptions, result: GenerationResult) -> None:
    window, whole = prepared.window, prepared.whole
    held = prepared.held if options.reuse and prepared.note is None else None
    if held is not None:
        held.run = None  # a new text: its first step runs the window whole
    if options.reuse:
        result.reuse_note = prepared.note
    text = list(ids)
    for _ in range(options.steps):
        if program.interrupt is not None:
            program.interrupt()
        context = text[-window:]
        if held is not None and held.run is not None and held.filled == len(text) - 1 \
                and len(text) <= window:
            logits = held.step(text[-1])
            result.reused_steps += 1
            if not prepared.step_checked:  # once per program: against the whole window
                prepared.step_checked = True
                expected = whole.logits(context)
                if not np.allclose(logits, expected, rtol=1e-3, atol=1e-4):
                    result.reuse_note = prepared.note = (
                        f"a step computed at the new position only differs from the whole "
                        f"window's (by {float(np.max(np.abs(logits - expected))):.3g}): "
                        f"each step runs the window whole")
                    held, logits = None, expected
                    result.reused_steps -= 1
                    result.whole_steps += 1
        elif held is not None and len(text) < window:
            logits = held.prefill(context)
            result.whole_steps += 1
            if options.steps > 1 and not prepared.causal_checked:  # once per program
                prepared.causal_checked = True
                note = held.causal_break(context, prepared.roles.vocabulary or 1)
                if note is not None:
                    result.reuse_note = prepared.note = \
                        note + ": each step runs the window whole"
                    held = None
        else:
            logits = whole.logits(context)
            result.whole_steps += 1
        text.append(sampler.choose(logits))
    result.generated = text[len(ids):]
