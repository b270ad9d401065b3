"""How long `fuse check` takes after an edit that breaks thousands of statements
(issue 19, item 8: a deleted `param`/source line read by every block made the
did-you-mean suggestions quadratic).

Target: any edit of a 10,000-line file re-checked in under 500 ms.  Checks a
generated 10,000-line program intact, then with one of its source lines
deleted, and prints each broken check as a ratio to the intact one measured
in the same run (machines here are shared and noisy).

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
from gen_program import generate  # noqa: E402

# The lines deleted, by what they start with: each is read by every block.
BREAKS = {"delete the source W": "W[d,e] =", "delete the source X": "X[p,d] =",
          "delete the relation Edge": "Edge(a,b) ="}


def _median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{cmd} failed:\n{done.stderr}")
    return statistics.median(times)


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
        t_good = _median_seconds(fuse + [str(good)], args.runs)
        print(f"fuse check, {args.lines:,} lines, intact   {t_good * 1000:7.0f} ms   (baseline)")
        for what, start in BREAKS.items():
            broken = folder / "broken.fuse"
            broken.write_text("".join(line for line in intact.splitlines(keepends=True)
                                      if not line.startswith(start)), encoding="utf-8")
            took = _median_seconds(fuse + [str(broken)], args.runs)
            print(f"  {what:28} {took * 1000:7.0f} ms   {took / t_good:5.2f}x intact"
                  f"   target < 500 ms")


if __name__ == "__main__":
    main()
