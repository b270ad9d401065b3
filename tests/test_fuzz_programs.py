"""Seeded mutations of every example and test program (issue 28): characters and
tokens deleted, duplicated and swapped; huge numbers, NUL bytes, quotes, lone
surrogates and other unicode inserted.  No exception escapes `fuse_lang.analyze`
(one-off and an editor's incremental `Analyzer`), `fuse_lang.plan_program`, the
editor's functions (hover, completion, signature help, semantic tokens, inlay
hints, outline, folding, formatting, definitions and references, run and train
targets) or `fuse explain`'s plan of a program that compiles; every diagnostic's
span lies within the text.  A failure names the program's seed so it can be
replayed alone (`mutated(seed)`)."""
from __future__ import annotations

import random
import re
import sys
import time
from pathlib import Path

import fuse_lang
from fuse_lang.check.analyzer import Analyzer
from fuse_lang.ide.explain import explain_program, run_plan_json, run_plan_lines

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from grammar_fuzz import editor_requests  # noqa: E402 - what an editor asks, one list

EXAMPLES = ROOT / "examples"
PROGRAMS = 2400  # mutated programs checked (about 20 s here)
BUDGET_S = 180  # a hang guard, not a timing assertion (23 s on a loaded 2-core machine)
COMPILE_EVERY = 3  # one in this many clean programs is compiled and explained


def seeds() -> list[str]:
    """The programs mutated: the examples and the diagnostics' test programs."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.fuse"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((EXAMPLES / "training").glob("*.fuse"))]
    from test_diagnostics import CASES  # (tests/ is on the path: pytest's rootdir mode)

    texts += [case[1] for case in CASES if isinstance(case[1], str) and len(case[1]) < 4000]
    return texts


HUGE = ["9" * 310, "1e400", "-1e400", str(2**63), str(2**64 + 1), "1" + "0" * 30,
        "0.5e-400", "9" * 999, "1e308", str(2**53 + 1)]
ODD = ["\0", '"', '"\0"', "\\", '\\"', "\ud800", "\udfff", "é", "∀", "😀", "\u200b",
       "\ufeff", "\r", "\r\n", "\t", "\x0b", "\x1b", "#", ";", ":-", "?", "!", "=", "+=",
       "max=", "(", ")", "[", "]", "{", "}", ",", ".", "_", "'", "*", "/", "^", "**",
       "not ", "export ", "axis ", "param ", "train ", "fn ", "source(", "header=1",
       '"data/\0x.tsv"', '"\0.npy"', '"data/\ud800.tsv"', '"' + "a" * 300 + '.npy"',
       '"/dev/zero.npy"', '"examples"', "(n == m + 1e400)", f"(n < {'9' * 310})",
       "(x != Ann)", "R(x, x)", "X[i+1]", "X[*t+1]", "X[i/0]", "X[0:]"]
PATHS = ['"\0data/likes.tsv"', '"data/\0"', '"\ud800.npy"', '"data/\udfff.tsv"', '"' + "é" * 300 + '.tsv"',
         '"data"', '"/dev/null.tsv"', '"data/likes.tsv:x"', '"x.npz:\0"', '"\0.safetensors:w"',
         '""', '"."', '"data/likes.tsv\0"']
STATEMENTS = ['R(x,y) = "\0data/likes.tsv"', 'W[i,j] = "\0w.npy"', 'S(x) = "\ud800.tsv"',
              '"\0out.npy" = Y[i]', 'Q(n, m) = E(n, m) (n == m + 1e400)', 'E(1, 2)',
              f'Q(n) = E(n, m) (m < {"9" * 310})', 'N(0)', 'N(n) = N(m) (n == m + 1e400 - 1e400)',
              'axis x = 1000000, y = 1000000', 'Edge(0, 999999)', '"e.npy" = Edge(x, x)',
              f'E(1, {"9" * 30})', f'H(n + {"9" * 30}) = E(n, m)', 'export R, W, S, Q, N',
              'Y[i] = X[i] / 0', 'T(x) = not R(x, _)', 'R(x, y)?', 'Q(1, y)?']
_TOKEN = re.compile(r"\w+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\"[^\"\n]*\"|\S")


def mutate(rng: random.Random, text: str) -> str:
    """One random edit of `text`."""
    n = len(text)
    at = rng.randrange(n + 1)
    kind = rng.randrange(10)
    if kind == 0 and n:  # delete a character
        return text[:at] + text[at + 1:]
    if kind == 1 and n:  # duplicate a run of characters
        end = min(n, at + rng.randint(1, 12))
        return text[:end] + text[at:end] + text[end:]
    if kind == 2 and n > 1:  # swap two characters
        i, j = sorted(rng.sample(range(n), 2))
        return text[:i] + text[j] + text[i + 1:j] + text[i] + text[j + 1:]
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if kind == 3 and tokens:  # delete a token
        s, e = rng.choice(tokens)
        return text[:s] + text[e:]
    if kind == 4 and tokens:  # duplicate a token
        s, e = rng.choice(tokens)
        return text[:e] + " " + text[s:e] + text[e:]
    if kind == 5 and len(tokens) > 1:  # swap two tokens
        (s1, e1), (s2, e2) = sorted(rng.sample(tokens, 2))
        if e1 <= s2:
            return text[:s1] + text[s2:e2] + text[e1:s2] + text[s1:e1] + text[e2:]
    if kind == 6:  # a huge number, in place of a number or anywhere
        numbers = [(s, e) for s, e in tokens if text[s].isdigit()]
        if numbers and rng.random() < 0.7:
            s, e = rng.choice(numbers)
            return text[:s] + rng.choice(HUGE) + text[e:]
        return text[:at] + rng.choice(HUGE) + text[at:]
    if kind == 7 and rng.random() < 0.5:  # a hostile statement, or a path in a string
        strings = [(s, e) for s, e in tokens if text[s] == '"']
        if strings and rng.random() < 0.5:
            s, e = rng.choice(strings)
            return text[:s] + rng.choice(PATHS) + text[e:]
        lines = text.split("\n")
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(STATEMENTS))
        return "\n".join(lines)
    if kind == 7:  # a whole line repeated
        lines = text.split("\n")
        k = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[k])
        return "\n".join(lines)
    return text[:at] + rng.choice(ODD) + text[at:]  # NUL, quotes, unicode, syntax


def mutated(seed: int, texts: list[str] | None = None) -> str:
    """The program of `seed`: a seed program with one to four random edits."""
    texts = texts if texts is not None else seeds()
    rng = random.Random(seed)
    text = rng.choice(texts)
    for _ in range(rng.choice([1, 1, 2, 3, 4])):
        text = mutate(rng, text)
    return text


def editor_functions(analysis, rng: random.Random) -> None:
    """What an editor asks of one analysis, at a few offsets (the requests of
    benchmarks/grammar_fuzz.py)."""
    n = len(analysis.text)
    editor_requests(analysis, sorted({0, n, *(rng.randrange(n + 1) for _ in range(3))}))


def check_one(seed: int, text: str, analyzer: Analyzer, rng: random.Random) -> bool:
    """Every entry point on one program; True when it compiled and was explained."""
    analysis = fuse_lang.analyze(text, base_dir=EXAMPLES)
    for d in analysis.diagnostics:
        assert 0 <= d.span.start <= d.span.end <= len(text), (seed, d)
    analyzer.analyze(text, None, EXAMPLES)  # the editor's, after the last program's
    fuse_lang.plan_program(analysis)
    editor_functions(analysis, rng)
    errors = any(d.severity is fuse_lang.Severity.ERROR for d in analysis.diagnostics)
    if errors or seed % COMPILE_EVERY:
        return False
    try:
        program = fuse_lang.compile(text, base_dir=EXAMPLES)
        explained = explain_program(program)
    except fuse_lang.FuseError:  # refused in words: a run's check (a file, a size)
        return False
    run_plan_lines(explained.run_plan)
    run_plan_json(explained.run_plan)
    return True


def test_mutated_programs_raise_nothing():
    texts = seeds()
    assert len(texts) >= 100
    start = time.monotonic()
    analyzer = Analyzer()
    explained = 0
    for seed in range(PROGRAMS):
        text = mutated(seed, texts)
        try:
            explained += check_one(seed, text, analyzer, random.Random(seed))
        except Exception as err:
            raise AssertionError(f"seed {seed}: {type(err).__name__}: {err}\n{text!r}"[:4000]) \
                from err
        assert time.monotonic() - start < BUDGET_S, f"{seed} programs in {BUDGET_S} s"
    assert explained >= 20  # the run's planning was reached too
