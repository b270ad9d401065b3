"""Shared helpers for the NumPy-engine benchmarks: timing by the median of
interleaved repeats, and writing placeholder source files of the right shape."""
from __future__ import annotations

import statistics
import subprocess
import time
import tracemalloc
from pathlib import Path
from typing import Callable

import numpy as np


def median_times(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2,
                 clock: str = "wall") -> dict[str, float]:
    """Median seconds per call of each function; the calls are interleaved so that
    a noisy neighbour slows every contender alike.  clock: "wall" (elapsed) or
    "cpu" (this process's CPU time, steadier on a loaded machine)."""
    now = time.perf_counter if clock == "wall" else time.process_time
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = now()
            fn()
            samples[name].append(now() - start)
    return {name: statistics.median(ts) for name, ts in samples.items()}


def median_process_seconds(cmd: list[str], runs: int) -> float:
    """The median wall time of running `cmd` as a whole process (exit 0 or 1 only)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{cmd} failed:\n{done.stderr}")
    return statistics.median(times)


def peak_bytes(fn: Callable[[], object]) -> int:
    """The peak bytes Python allocated while `fn` ran (tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


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


def attention_program(d: int) -> str:
    """One attention head with an output projection, model and key width d."""
    return f"""
X[p,d]   = "x.npy"
WQ[dk,d] = "wq.npy"
WK[dk,d] = "wk.npy"
WV[dv,d] = "wv.npy"
WO[e,dv] = "wo.npy"
Dk = const({d})

Query[p,dk] = WQ[dk,d] X[p,d]
Key[p,dk]   = WK[dk,d] X[p,d]
Val[p,dv]   = WV[dv,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk))
Attn[p,dv]  = Comp[p,p'] Val[p',dv]
Out[p,e]    = WO[e,dv] Attn[p,dv]

export Out
"""


def optax_adam_steps(loss_fn: Callable, params: dict, rate: float, steps: int,
                     now: Callable[[], float] = time.perf_counter) -> tuple[list[float], float]:
    """A hand-written jax training loop: optax.adam on `loss_fn(params)`, one
    jax.jit step (value and gradients, the update); each step's end stamped by
    `now()` after its loss is read.  Returns the stamps and the last loss."""
    import jax
    import optax

    tx = optax.adam(rate)
    state = tx.init(params)

    @jax.jit
    def update(p, s):
        value, grads = jax.value_and_grad(loss_fn)(p)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    stamps, value = [], float("nan")
    for _ in range(steps):
        params, state, loss = update(params, state)
        value = float(loss)
        stamps.append(now())
    return stamps, value
