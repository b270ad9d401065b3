"""Seeded mutations of examples/*.fuse with huge numbers, long runs of unary minus
and deep nesting (issue 19): no exception escapes `fuse_lang.analyze`,
`fuse_lang.plan_program`, the editor's hover or `fuse check` / `fuse explain` (exit 0 or 1, never a
traceback), and every diagnostic's span lies within the text."""
from __future__ import annotations

import contextlib
import io
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import fuse_lang
from fuse_lang.cli import main as cli_main
from fuse_lang.ide.hover import hover_at

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(EXAMPLE_DIR.glob("*.fuse"))
SEED = 19
PER_EXAMPLE = 40  # 13 examples: 520 programs

HUGE_NUMBERS = ["9" * 5000, "1" + "0" * 400, "1" + "0" * 30, "4294967296", str(2**53),
                str(2**53 + 1), str(2**63), "1e400", "0" * 1200 + "1", "1." + "0" * 2000,
                "1" * 1000, "1" * 1001]
DEPTHS = [99, 100, 101, 250, 10_000]
_NUMBER = re.compile(r"(?<![\w.])\d+(\.\d+)?([eE][+-]?\d+)?")
_RHS = re.compile(r"(?m)^([^#\n=]*[^=<>!]=)([^=\n][^\n]*)$")


def _huge_number(rng: random.Random, text: str) -> str:
    spots = list(_NUMBER.finditer(text))
    if not spots:
        return text + f"\naxis zz = {rng.choice(HUGE_NUMBERS)}\nparam Zz[zz]\n"
    spot = rng.choice(spots)
    return text[:spot.start()] + rng.choice(HUGE_NUMBERS) + text[spot.end():]


def _nest(rng: random.Random, text: str) -> str:
    lines = list(_RHS.finditer(text))
    if not lines:
        return text
    line = rng.choice(lines)
    n = rng.choice(DEPTHS) if rng.random() < 0.7 else rng.choice(DEPTHS[:3])
    rhs = line.group(2)
    nested = rng.choice([
        "-" * n + rhs, "-(" * min(n, 300) + rhs + ")" * min(n, 300),
        "tanh(" * min(n, 300) + rhs + ")" * min(n, 300), f"({rhs})" + "^1" * n])
    return text[:line.start(2)] + nested + text[line.end(2):]


def _huge_position(rng: random.Random, text: str) -> str:
    refs = list(re.finditer(r"\[([a-z_]\w*)", text))
    if not refs:
        return text
    ref = rng.choice(refs)
    return text[:ref.start(1)] + rng.choice(HUGE_NUMBERS) + text[ref.end(1):]


def _huge_axis(rng: random.Random, text: str) -> str:
    names = sorted(set(re.findall(r"[\[,]\s*([a-z_]\w*)", text)))
    if not names:
        return text
    return f"axis {rng.choice(names)} = {rng.choice(HUGE_NUMBERS)}\n" + text


def _causal_mask(rng: random.Random, text: str) -> str:
    return text + f"\nMzz[q, k] = causal_mask({rng.choice(HUGE_NUMBERS)})\n"


MUTATIONS = [_huge_number, _nest, _huge_position, _huge_axis, _huge_axis, _causal_mask]


def programs() -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    out = []
    for path in EXAMPLES:
        text = path.read_text(encoding="utf-8")
        for k in range(PER_EXAMPLE):
            mutated = text
            for _ in range(rng.choice([1, 1, 2, 3])):
                mutated = rng.choice(MUTATIONS)(rng, mutated)
            out.append((f"{path.stem}_{k}.fuse", mutated))
    return out


def test_mutated_programs_check_and_plan_without_exceptions(tmp_path):
    cases = programs()
    assert len(cases) >= 250
    codes = set()
    huge_plans = 0
    for name, text in cases:
        analysis = fuse_lang.analyze(text, base_dir=EXAMPLE_DIR)  # its sources' shapes
        for d in analysis.diagnostics:
            assert 0 <= d.span.start <= d.span.end <= len(text), (name, d)
            codes.add(d.code)
        plan = fuse_lang.plan_program(analysis)
        huge_plans += (plan.total_flops or 0) > 10**320
        for equals in re.finditer(r" = ", text):  # the editor's hover shows the plan
            hover_at(analysis, equals.start() + 1)
    # the mutations reach every limit, and plans of huge (exact) costs
    assert huge_plans >= 10
    assert {"number-too-long", "extent-too-large", "nesting-too-deep"} <= codes


def test_mutated_programs_through_the_cli(tmp_path):
    cases = programs()[::3]  # the command line reads every file again: a third of them
    shutil.copytree(EXAMPLE_DIR / "data", tmp_path / "data")
    for name, text in cases:
        (tmp_path / name).write_text(text, encoding="utf-8")
    for name, _text in cases:
        for argv in (["explain", name], ["explain", "--format", "json", name]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.chdir(tmp_path), contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                assert cli_main(argv) in (0, 1), (argv, err.getvalue()[-2000:])
    # the real command, once for all files: every file is reported, none ends it
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check",
                           *(name for name, _ in cases)], capture_output=True, text=True,
                          encoding="utf-8", errors="replace", cwd=tmp_path, timeout=300)
    assert proc.returncode in (0, 1)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert f"{len(cases)} files checked" in proc.stdout + proc.stderr
