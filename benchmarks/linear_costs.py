"""Whether `fuse check` and `fuse explain` cost linearly in a program's length
(issue 28, item 5: 50,000 lines that each read an undefined tensor took 44.6 s
to check, 4,000 of them 0.78 s; explain of a generated program just under 2 MB
took minutes).

Two workloads at 1,000, 10,000 and 50,000 lines (50,000 generated lines are
1.9 MB, just under the 2 MB a program may hold):

- `undefined`: every line reads a tensor defined nowhere (`A7[x] = U7[x]`): an
  error (with its did-you-mean looked up) per line;
- `generated`: the ordinary program of benchmarks/gen_program.py.

Each command is timed as a whole process (the median of `--runs`), beside a bare
`python -c pass` measured in the same run.  The cost per line is the time less
that of a 30-line program of the same workload and command (start-up and
imports), over the lines added; the ratio of the cost per line at the largest
size to that at the smallest says how the cost grows: about 1 is linear, about
50 would be quadratic from 1,000 to 50,000 lines.

    python benchmarks/linear_costs.py [--runs 3] [--small]

`--small` (the smoke test): 50, 100 and 200 lines, one run.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_process_seconds  # noqa: E402
from gen_program import generate  # noqa: E402

SIZES = (1_000, 10_000, 50_000)
SMALL_SIZES = (50, 100, 200)
BASE_LINES = 30  # the program whose time stands for start-up and imports


def undefined_reads(lines: int, _data: Path) -> str:
    """`lines` equations, each reading a tensor that is defined nowhere."""
    return "".join(f"A{k}[x] = U{k}[x]\n" for k in range(lines))


WORKLOADS: dict[str, Callable[[int, Path], str]] = {
    "undefined": undefined_reads,
    "generated": generate,
}


def write(folder: Path, workload: str, lines: int) -> tuple[Path, int, int]:
    """The program file, its lines and its bytes."""
    text = WORKLOADS[workload](lines, folder / "data")
    path = folder / f"{workload}_{lines}.fuse"
    path.write_text(text, encoding="utf-8")
    return path, text.count("\n"), len(text.encode("utf-8"))


def measure(folder: Path, command: str, workload: str, sizes: tuple[int, ...], runs: int,
            base: float) -> None:
    fuse = [sys.executable, "-m", "fuse_lang.cli", command]
    small, small_lines, _ = write(folder, workload, BASE_LINES)
    t_small = median_process_seconds(fuse + [str(small)], runs)
    per_line = []
    for size in sizes:
        path, lines, size_bytes = write(folder, workload, size)
        seconds = median_process_seconds(fuse + [str(path)], runs)
        cost = max(seconds - t_small, 0.0) / max(lines - small_lines, 1)
        per_line.append(cost)
        print(f"{command:7s} {workload:9s} {lines:7,} lines {size_bytes / 1e6:5.2f} MB "
              f"{seconds * 1000:8.0f} ms {seconds / base:6.1f}x baseline   "
              f"per line {cost * 1e6:7.1f} us", flush=True)
    # (n/a: the smallest size was no slower than the 30-line program, in the noise)
    ratio = f"{per_line[-1] / per_line[0]:.2f}" if per_line[0] > 0 else "n/a"
    print(f"{command:7s} {workload:9s} per-line cost at {sizes[-1]:,} lines / at "
          f"{sizes[0]:,} lines  ratio {ratio}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--small", action="store_true",
                        help="50, 100 and 200 lines, one run (the smoke test)")
    args = parser.parse_args()
    sizes = SMALL_SIZES if args.small else SIZES
    runs = 1 if args.small else args.runs
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm, _, _ = write(folder, "generated", BASE_LINES)
        subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(warm)],
                       capture_output=True)  # the OS file cache warmed once
        base = median_process_seconds([sys.executable, "-c", "pass"], runs)
        print(f"python start-up (baseline) {base * 1000:.0f} ms; targets: check of 50,000 "
              f"undefined lines < 5 s, explain of 1.9 MB < 3 s", flush=True)
        for command in ("check", "explain"):
            for workload in WORKLOADS:
                measure(folder, command, workload, sizes, runs, base)


if __name__ == "__main__":
    main()
