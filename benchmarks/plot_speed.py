"""How long pictures take, as a user waits for them: whole processes, so the
matplotlib import is counted (issue 16: under 1 s each on this machine).

    fuse run examples/transformer.fuse --plot DIR      (the exports Y and Comp)
    fuse plot attention.npz                            (a 512 x 512 attention matrix)
    fuse explain examples/transformer.fuse --graph G   (the program's dataflow)

Each is the median of several runs, printed beside baselines measured in the
same run, alternating: a bare `python -c pass`, and the same command without
the picture (`fuse run`, `fuse explain`; for `fuse plot`, `fuse check` of the
transformer), so the ratio says what the picture adds.

    python benchmarks/plot_speed.py [--runs 5] [--small]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRANSFORMER = str(ROOT / "examples" / "transformer.fuse")


def _attention(n: int) -> np.ndarray:
    """A causal attention matrix: softmax of random scores over the keys up to each query."""
    scores = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    scores[np.triu_indices(n, 1)] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _medians(commands: dict[str, list[str]], runs: int
             ) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall seconds and median CPU seconds (user + system) of each command:
    on a shared machine the CPU time is the steadier figure."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):  # alternating, so a noisy neighbour slows every command alike
        for name, cmd in commands.items():
            start, start_cpu = time.perf_counter(), _children_cpu()
            done = subprocess.run(cmd, capture_output=True, text=True)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - start_cpu)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return ({n: statistics.median(ts) for n, ts in wall.items()},
            {n: statistics.median(ts) for n, ts in cpu.items()})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--small", action="store_true",
                        help="one run, a 64 x 64 matrix (the smoke test)")
    args = parser.parse_args()
    runs = 1 if args.small else args.runs
    size = 64 if args.small else 512
    fuse = [sys.executable, "-m", "fuse_lang.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        np.savez(folder / "attention.npz", Attn=_attention(size))
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "fuse check transformer": fuse + ["check", TRANSFORMER],
            "fuse run transformer": fuse + ["run", TRANSFORMER],
            "fuse run transformer --plot (svg)": fuse + ["run", TRANSFORMER, "--plot",
                                                         str(folder / "svg")],
            "fuse run transformer --plot (png)": fuse + ["run", TRANSFORMER, "--plot",
                                                         str(folder / "png"),
                                                         "--plot-format", "png"],
            f"fuse plot {size}x{size} attention (svg)": fuse + [
                "plot", str(folder / "attention.npz"), "--out", str(folder / "a-svg")],
            f"fuse plot {size}x{size} attention (png)": fuse + [
                "plot", str(folder / "attention.npz"), "--out", str(folder / "a-png"),
                "--format", "png"],
            "fuse explain transformer": fuse + ["explain", TRANSFORMER],
            "fuse explain transformer --graph (svg)": fuse + [
                "explain", TRANSFORMER, "--graph", str(folder / "g.svg")],
        }
        subprocess.run(commands["fuse check transformer"], capture_output=True)  # warm caches
        times, cpu = _medians(commands, runs)
    base = times["python -c pass"]
    against = {"fuse run transformer --plot (svg)": "fuse run transformer",
               "fuse run transformer --plot (png)": "fuse run transformer",
               f"fuse plot {size}x{size} attention (svg)": "fuse check transformer",
               f"fuse plot {size}x{size} attention (png)": "fuse check transformer",
               "fuse explain transformer --graph (svg)": "fuse explain transformer"}
    print(f"median of {runs} runs; whole processes, the matplotlib import included; "
          f"wall time (CPU time, user + system)")
    for name, seconds in times.items():
        line = f"{name:<40} {seconds * 1000:6.0f} ms (cpu {cpu[name] * 1000:5.0f} ms)  " \
               f"{seconds / base:5.1f}x python start-up"
        if name in against:
            other = against[name]
            line += f"  {seconds / times[other]:5.2f}x `{other}` (cpu " \
                    f"{cpu[name] / cpu[other]:4.2f}x)  target < 1000 ms " \
                    f"{'OK' if seconds < 1 else 'MISSED'}"
        print(line)


if __name__ == "__main__":
    main()
