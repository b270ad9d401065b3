"""A longer run of tests/test_datalog_conformance.py's property test: random Datalog
programs (facts and relation files of every format, values of every kind, joins,
recursion, negation with `_`, comparisons, computed heads, queries with constants
and `_`) against its naive reference evaluator, forward and by demand.  Prints a
summary (programs, queries, how many answered as the reference, the first
mismatches); exits 1 when one did not.  Not a speed benchmark and not run by the
test suite:

    python benchmarks/datalog_fuzz.py --seeds 300 [--start 1000]
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_datalog_conformance as conformance  # noqa: E402 - the generator and reference

from fuse_lang import Severity, analyze  # noqa: E402


def _one(program, folder: Path, mode: str) -> list[str]:
    """What went wrong with one program in one mode (empty: it answered right)."""
    text = program.text(folder)
    errors = [d.code for d in analyze(text, base_dir=folder).diagnostics
              if d.severity is Severity.ERROR]
    if errors:
        return [f"errors {errors}:\n{text}"]
    try:
        got = conformance.answers(text, folder, mode)
    except Exception as err:  # noqa: BLE001 - a fuzz driver reports whatever failed
        return [f"{mode} raised {type(err).__name__}: {err}\n{text}"]
    db = conformance._reference(program)
    wrong = []
    for (name, terms), answer in zip(program.queries, got):
        want = conformance._answer(db, name, terms)
        if {tuple(map(conformance._value, row)) for row in answer} != want:
            wrong.append(f"{mode}: {program._atom(name, terms)} answered "
                         f"{sorted(answer, key=repr)[:6]}, the reference {sorted(want)[:6]}\n{text}")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--programs", type=int, default=12, help="programs per seed")
    options = parser.parse_args()
    programs = queries = 0
    problems: list[str] = []
    for seed in range(options.start, options.start + options.seeds):
        rng = random.Random(seed)
        for _ in range(options.programs):
            program = conformance._Program(rng)
            programs += 1
            queries += len(program.queries)
            for mode in ("forward", "demand"):
                with tempfile.TemporaryDirectory() as folder:
                    problems += [f"seed {seed}, {p}" for p in _one(program, Path(folder), mode)]
    print(f"{programs} programs, {queries} queries, 2 modes: {len(problems)} problems")
    for problem in problems[:5]:
        print("---", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
