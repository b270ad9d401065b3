"""How long `fuse check` takes as a whole process (issue: front end).

Targets: a generated 10,000-line program (sources, equations, recursion) in
under 1 s; a 30-line program in under 0.3 s, start-up included.  Each figure
is the median of several runs, printed beside a bare `python -c pass` start
measured in the same run (machines here are shared and noisy).

    python benchmarks/check_speed.py [--runs 7]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_process_seconds  # noqa: E402
from gen_program import generate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big = folder / "big.fuse"
        big.write_text(generate(10_000, folder / "data"), encoding="utf-8")
        small = folder / "small.fuse"
        small.write_text(generate(30, folder / "data"), encoding="utf-8")
        fuse = [sys.executable, "-m", "fuse_lang.cli", "check"]
        # warm the OS file cache once
        subprocess.run(fuse + [str(small)], capture_output=True)
        base = median_process_seconds([sys.executable, "-c", "pass"], args.runs)
        lines = len(big.read_text().splitlines())
        t_big = median_process_seconds(fuse + [str(big)], args.runs)
        t_small = median_process_seconds(fuse + [str(small)], args.runs)
    print(f"python start-up (baseline)     {base * 1000:7.0f} ms")
    print(f"fuse check, {lines:,} lines    {t_big * 1000:7.0f} ms   "
          f"{t_big / base:5.1f}x baseline   target < 1000 ms")
    print(f"fuse check, 30 lines          {t_small * 1000:7.0f} ms   "
          f"{t_small / base:5.1f}x baseline   target < 300 ms")


if __name__ == "__main__":
    main()
