"""The compiled-artifact cache (issue 14): time to first result of the
transformer example in a fresh process, with a warm cache against a cold one
(an empty cache folder), on jax and on torch compiled (`compiled=True`:
torch.compile with Inductor).  The machine's load moves these figures a lot;
compare only ratios taken in the same run.

Each trial makes a new empty cache folder, runs the program in a fresh
process (cold: the cache is filled), then again in another fresh process
(warm: the graphs come from the cache).  Two figures per process:
`first result`: seconds from `fuse_lang.compile` to the first result, the
framework and Fuse's run modules (fuse_lang.run.program among them) already
imported (what the cache can save);
`imports`: those imports (the same cold or warm); `process`: the whole
process's wall time, Python and framework imports included.  The ratio is
cold / warm, medians over the trials.

    python benchmarks/compile_cache.py [--backends jax,torch] [--trials 3]
    python benchmarks/compile_cache.py --small   # what the smoke test runs (jax, 1 trial)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "transformer.fuse"

CHILD = r"""
import json, sys, time
backend, folder, path = sys.argv[1:4]
import numpy
import_start = time.perf_counter()
__import__(backend)  # imports are the same cold or warm: timed apart
import fuse_lang
__import__(f"fuse_lang.run.backends.{backend}_backend")
import fuse_lang.run.cache
import fuse_lang.run.program
imports = time.perf_counter() - import_start
from pathlib import Path
start = time.perf_counter()
program = fuse_lang.compile(Path(path).read_text(), backend=backend, base_dir=Path(path).parent,
                            compiled=True, config=fuse_lang.ExecutionConfig(cache_dir=folder))
program.run()
first = time.perf_counter() - start
print(json.dumps({"first": first, "imports": imports, "traced": program.compilations,
                  "hits": list(program.cache_entries.values())}))
"""


def one_process(backend: str, folder: str) -> tuple[float, float, float, list[bool], int]:
    """(first result seconds, process seconds, import seconds, index hits, graphs
    traced) of one fresh process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, backend, folder, str(PROGRAM)],
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the {backend} run failed:\n{done.stderr[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return data["first"], wall, data["imports"], data["hits"], data["traced"]


def measure(backend: str, trials: int) -> None:
    cold: list[tuple[float, float, float]] = []
    warm: list[tuple[float, float, float]] = []
    for _ in range(trials):
        with tempfile.TemporaryDirectory(prefix="fuse-cache-bench-") as folder:
            first, wall, imports, hits, _ = one_process(backend, folder)
            assert hits == [False], hits  # an empty cache knows nothing
            cold.append((first, wall, imports))
            first, wall, imports, hits, traced = one_process(backend, folder)
            assert hits == [True], hits  # the index knew it: the graphs came from the cache
            if backend == "jax" and importlib.util.find_spec("flatbuffers"):
                assert traced == 0, traced  # its stored graph ran: nothing traced
            warm.append((first, wall, imports))
    for k, what in enumerate(("first result", "process", "imports")):
        c = statistics.median(t[k] for t in cold)
        w = statistics.median(t[k] for t in warm)
        print(f"transformer, {backend}, {what:<12}: cold {c:7.2f} s  warm {w:7.2f} s  "
              f"ratio {c / w:.2f} (cold / warm, median of {trials})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="jax,torch")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="jax only, one trial")
    args = parser.parse_args()
    backends = ["jax"] if args.small else args.backends.split(",")
    for backend in backends:
        measure(backend, 1 if args.small else args.trials)


if __name__ == "__main__":
    main()
