"""Shared helpers for the NumPy-engine benchmarks: timing by the median of
interleaved repeats, and writing placeholder source files of the right shape."""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np


def median_times(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2
                 ) -> dict[str, float]:
    """Median seconds per call of each function; the calls are interleaved so that
    a noisy neighbour slows every contender alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in samples.items()}


def write_sources(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    """The program's sources must exist (extents come from their headers); the
    benchmark passes the real values at run time through `inputs=`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", np.zeros_like(array))


def report(label: str, engine: float, baseline: float, target: float) -> bool:
    ratio = engine / baseline
    ok = ratio <= target
    print(f"{label:<34} engine {engine * 1e3:9.3f} ms   baseline {baseline * 1e3:9.3f} ms   "
          f"ratio {ratio:5.2f}   target <= {target}   {'OK' if ok else 'MISSED'}")
    return ok


def profile(fn, repeats: int, sort: str) -> None:
    """Run `fn` `repeats` times under cProfile and print the top entries."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        fn()
    profiler.disable()
    pstats.Stats(profiler).sort_stats(sort).print_stats(25)
