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

    python benchmarks/linear_costs.py [--runs 3] [--small] [--base TREE]

`--small` (the smoke test): 50, 100 and 200 lines, one run.

`--base TREE` (another checkout of the engine, e.g. `git worktree add
/tmp/base <commit>`): instead of the growth, the two targets (check of the
largest undefined workload, explain of the largest generated one) by TREE and
by this tree, alternating run by run so that a noisy neighbour slows both alike:
each a whole process (`PYTHONPATH=<tree> python -m fuse_lang.cli`, run from a
folder outside both trees), its wall time and its CPU time (user + system, from
the OS: steadier than the wall on a loaded machine), medians, and the ratios
base / this.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_process_seconds  # noqa: E402
from gen_program import generate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent  # this tree
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


def process_seconds(cmd: list[str], tree: Path, folder: Path) -> tuple[float, float]:
    """The wall and CPU seconds (user + system, the OS's count) of `cmd` run as
    one process with `tree` first on the path (exit 0 or 1 only)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} with {tree} ended with status {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def compare(folder: Path, base: Path, size: int, runs: int) -> None:
    """The two targets by `base` and by this tree, alternating (see the module)."""
    for command, workload in (("check", "undefined"), ("explain", "generated")):
        path, lines, size_bytes = write(folder, workload, size)
        cmd = [sys.executable, "-m", "fuse_lang.cli", command, str(path)]
        samples: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
        for _ in range(runs):
            samples["base"].append(process_seconds(cmd, base, folder))
            samples["this"].append(process_seconds(cmd, ROOT, folder))
        (bw, bc), (tw, tc) = [(statistics.median(w for w, _ in samples[k]),
                               statistics.median(c for _, c in samples[k]))
                              for k in ("base", "this")]
        print(f"{command:7s} {workload:9s} {lines:7,} lines {size_bytes / 1e6:5.2f} MB  "
              f"base {bw:7.2f} s (CPU {bc:6.2f} s)  this {tw:7.2f} s (CPU {tc:6.2f} s)  "
              f"ratio base/this: wall {bw / tw:.2f}, CPU {bc / tc:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--small", action="store_true",
                        help="50, 100 and 200 lines, one run (the smoke test)")
    parser.add_argument("--base", type=Path, metavar="TREE",
                        help="the two targets by another checkout and by this tree")
    args = parser.parse_args()
    if args.base is not None:
        base_tree = args.base.resolve()
        if not (base_tree / "fuse_lang" / "__init__.py").is_file():
            raise SystemExit(f"--base {args.base}: no fuse_lang package there")
        runs = 1 if args.small else args.runs
        print(f"base tree {base_tree} against this tree {ROOT}, medians of {runs} "
              f"alternating runs each; targets: check of 50,000 undefined lines < 5 s, "
              f"explain of 1.9 MB < 3 s", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            compare(Path(tmp), base_tree, SMALL_SIZES[-1] if args.small else SIZES[-1], runs)
        return
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
