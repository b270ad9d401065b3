"""How long `fuse check` takes after an edit that breaks thousands of statements
(issue 19, item 8: a deleted `param`/source line read by every block made the
did-you-mean suggestions quadratic).

Target: any edit of a 10,000-line file re-checked in under 500 ms.  Checks a
generated 10,000-line program intact, then with one of its source lines
deleted, and prints each broken check as a ratio to the intact one measured
in the same run (machines here are shared and noisy): as `fuse check` (a
process each), and as the editor re-checks (one incremental Analyzer, the
delete against an edit of the same line that breaks nothing).

    python benchmarks/broken_edit_speed.py [--runs 5] [--lines 10000]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_process_seconds  # noqa: E402
from gen_program import generate  # noqa: E402

# The lines deleted, by what they start with: each is read by every block.
BREAKS = {"delete the source W": "W[d,e] =", "delete the source X": "X[p,d] =",
          "delete the relation Edge": "Edge(a,b) ="}


def _editor_seconds(before: str, after: str, runs: int) -> float:
    """Median time of the editor's re-check of `after`, following `before`."""
    from fuse_lang.check import Analyzer

    times = []
    for _ in range(runs):
        analyzer = Analyzer()
        analyzer.analyze(before)
        start = time.perf_counter()
        analyzer.analyze(after)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _without(text: str, start: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(start))


def _commented(text: str, start: str) -> str:
    """`text` with a comment added to the line starting with `start`."""
    lines = text.splitlines(keepends=True)
    for k, line in enumerate(lines):
        if line.startswith(start):
            lines[k] = line.rstrip("\n") + "  # seen\n"
            break
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=10_000)
    args = parser.parse_args()
    fuse = [sys.executable, "-m", "fuse_lang.cli", "check"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        intact = generate(args.lines, folder / "data")
        good = folder / "intact.fuse"
        good.write_text(intact, encoding="utf-8")
        subprocess.run(fuse + [str(good)], capture_output=True)  # warm the file cache
        t_good = median_process_seconds(fuse + [str(good)], args.runs)
        print(f"fuse check, {args.lines:,} lines, intact   {t_good * 1000:7.0f} ms   (baseline)")
        for what, start in BREAKS.items():
            broken = folder / "broken.fuse"
            broken.write_text(_without(intact, start), encoding="utf-8")
            took = median_process_seconds(fuse + [str(broken)], args.runs)
            print(f"  {what:28} {took * 1000:7.0f} ms   {took / t_good:5.2f}x intact")
        print("editor re-check after the edit (incremental)")
        for what, start in BREAKS.items():
            # the same line edited without breaking anything (a comment added to it)
            t_harmless = _editor_seconds(intact, _commented(intact, start), args.runs)
            took = _editor_seconds(intact, _without(intact, start), args.runs)
            print(f"  {what:28} {took * 1000:7.0f} ms   {took / t_harmless:5.2f}x the same "
                  f"line edited harmlessly ({t_harmless * 1000:.0f} ms)   target < 500 ms")


if __name__ == "__main__":
    main()
