"""Demand mode (issue 13): `Ancestor(P0, x)?` over a parent relation read from a
.tsv file, NumPy, in one process:

- at --forward-size symbols (a size forward mode can still do): the time and the
  peak memory (tracemalloc) of the demand run against the forward run, and that
  both give the same answer;
- at --size symbols (100,000): the demand run alone (forward mode would
  compute every ancestor pair): compile and run together and apart, their CPU
  time and peak memory, and `fuse run --mode demand` as a whole process beside
  a process that only imports the same modules (start-up).

The relation is a random tree (each symbol's parent drawn among the symbols
before it, so depth grows like log n); P0 is its root's child's first child,
asking about a sub-tree.  Compile and run are timed together, from the text
(reading the .tsv file is most of it at 100,000), and the rules alone (the
trace's times of the equations other than reading the file); the peak memory is
the run's (reading the file and evaluating), the program compiled before.

    python benchmarks/demand.py [--size 100000] [--forward-size 20000]
    python benchmarks/demand.py --small   # what the smoke test runs
    python benchmarks/demand.py --backend jax --size 20000 --forward-size 2000
    python benchmarks/demand.py --shape chain --forward-size 2000   # 100,000 rounds deep

--backend torch|jax runs both eagerly (compiled=False: their sparse relations,
docs/scale.md); the times include jax's compilations of its sparse kernels.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_process_seconds, peak_bytes  # noqa: E402

from fuse_lang import ExecutionConfig, compile  # noqa: E402

PROGRAM = """Parent(x,y) = "parent.tsv"
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(P{asked}, x)?
"""


def write_tree(folder: Path, size: int, seed: int = 0) -> int:
    """A random tree over P0..P(size-1) as `parent child` lines; the symbol asked
    about (one with a sub-tree of its own)."""
    rng = random.Random(seed)
    lines = [f"P{rng.randrange(max(k // 2, 1)) if k > 1 else 0}\tP{k}" for k in range(1, size)]
    (folder / "parent.tsv").write_text("\n".join(lines) + "\n")
    return 1


def write_chain(folder: Path, size: int) -> int:
    """A chain P0 -> P1 -> ... as `parent child` lines; the symbol asked about
    (P0: every other symbol is its descendant, size - 1 rounds deep)."""
    (folder / "parent.tsv").write_text("".join(f"P{k}\tP{k + 1}\n" for k in range(size - 1)))
    return 0


SHAPES = {"tree": write_tree, "chain": write_chain}
BACKEND = {}  # compile()'s backend arguments (--backend)


def one_run(folder: Path, mode: str, asked: int) -> tuple[float, float, set]:
    """Seconds of compile and run together, seconds of the rules alone (the trace's
    equations other than reading the file), the answer."""
    start = time.perf_counter()
    program = compile(PROGRAM.format(asked=asked), base_dir=folder,
                      config=ExecutionConfig(mode=mode, trace=True), **BACKEND)
    result = program.execute()
    seconds = time.perf_counter() - start
    rules = sum(e["seconds"] for e in result.trace["equations"] if e["tensor"] != "Parent")
    return seconds, rules, set(result.queries[0].tuples or ())


def measure(folder: Path, mode: str, asked: int, repeats: int) -> tuple[float, float, int, set]:
    runs = [one_run(folder, mode, asked) for _ in range(repeats)]
    program = compile(PROGRAM.format(asked=asked), base_dir=folder,
                      config=ExecutionConfig(mode=mode), **BACKEND)
    peak = peak_bytes(program.execute)  # the run: reading the file and the rules
    middle = len(runs) // 2
    return (sorted(r[0] for r in runs)[middle], sorted(r[1] for r in runs)[middle], peak,
            runs[0][2])


def compile_and_run(folder: Path, asked: int, repeats: int) -> tuple[float, float, float, int]:
    """Demand mode's compile and run apart (medians of wall seconds), the CPU seconds
    of both (steadier on a shared machine), and the peak memory of both together."""
    text = PROGRAM.format(asked=asked)
    config = ExecutionConfig(mode="demand")
    samples = []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        program = compile(text, base_dir=folder, config=config, **BACKEND)
        compiled = time.perf_counter()
        program.execute()
        samples.append((compiled - start, time.perf_counter() - compiled,
                        time.process_time() - cpu))
    peak = peak_bytes(lambda: compile(text, base_dir=folder, config=config, **BACKEND).execute())
    return (*(statistics.median(s[k] for s in samples) for k in range(3)), peak)


def whole_process(folder: Path, asked: int, runs: int) -> tuple[float, float]:
    """`fuse run --mode demand` as a user runs it, a whole process (median wall
    seconds), and a process that only imports what it imports (the start-up)."""
    program = folder / "ancestor.fuse"
    program.write_text(PROGRAM.format(asked=asked))
    backend = ["--backend", BACKEND["backend"], "--no-compile"] if BACKEND else []
    run = median_process_seconds([sys.executable, "-m", "fuse_lang.cli", "run", str(program),
                                  "--mode", "demand", *backend], runs)
    imports = "import fuse_lang.cli, fuse_lang.run.program, scipy.sparse" + (
        f", {BACKEND['backend']}" if BACKEND else "")
    start = median_process_seconds([sys.executable, "-c", imports], runs)
    return run, start


def searched_against_rounds(folder: Path, asked: int, args: argparse.Namespace) -> None:
    """A deep chain's demand run with the rest of its rounds found by one graph
    search (run.closure) against the semi-naive rounds alone, same file."""
    from fuse_lang.run.fixpoint import closure

    searched = measure(folder, "demand", asked, args.repeats)
    after, closure.SEARCH_AFTER = closure.SEARCH_AFTER, 10**9
    try:
        rounds = measure(folder, "demand", asked, args.repeats)
    finally:
        closure.SEARCH_AFTER = after
    print(f"[{args.backend}] demand, {args.forward_size}-symbol chain: rounds then search "
          f"{searched[0] * 1e3:.1f} ms (rules {searched[1] * 1e3:.1f} ms), rounds alone "
          f"{rounds[0] * 1e3:.1f} ms (rules {rounds[1] * 1e3:.1f} ms); time ratio "
          f"{searched[0] / rounds[0]:.3f}, rules ratio {searched[1] / rounds[1]:.3f}, "
          f"same answers: {searched[3] == rounds[3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--forward-size", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="a tiny run (the smoke test)")
    parser.add_argument("--backend", choices=["numpy", "torch", "jax"], default="numpy")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tree",
                        help="the parent relation: a random tree (log-deep) or a chain "
                             "(as deep as it is long; forward mode at --forward-size)")
    args = parser.parse_args()
    write = SHAPES[args.shape]
    if args.backend != "numpy":
        BACKEND.update(backend=args.backend, compiled=False)
    if args.small:
        args.size, args.forward_size, args.repeats = 2_000, 500, 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        asked = write(folder, args.forward_size)
        forward = measure(folder, "forward", asked, args.repeats)
        demand = measure(folder, "demand", asked, args.repeats)
        print(f"[{args.backend}] demand vs forward, {args.forward_size} symbols, {args.shape}, "
              f"Ancestor(P{asked}, x)? "
              f"({len(demand[3])} answers, same: {demand[3] == forward[3]}): forward "
              f"{forward[0] * 1e3:.1f} ms (rules {forward[1] * 1e3:.1f} ms), "
              f"{forward[2] / 1e6:.1f} MB; demand {demand[0] * 1e3:.1f} ms (rules "
              f"{demand[1] * 1e3:.1f} ms), {demand[2] / 1e6:.1f} MB; time ratio "
              f"{demand[0] / forward[0]:.3f}, rules ratio {demand[1] / forward[1]:.3f}, "
              f"memory ratio {demand[2] / forward[2]:.3f}")
        if args.shape == "chain":
            searched_against_rounds(folder, asked, args)
        asked = write(folder, args.size)
        seconds, rules, peak, answer = measure(folder, "demand", asked, args.repeats)
        print(f"[{args.backend}] demand alone, {args.size} symbols, {args.shape}, "
              f"Ancestor(P{asked}, x)? "
              f"({len(answer)} "
              f"answers): {seconds * 1e3:.1f} ms in all (compile, read the file, run), "
              f"rules {rules * 1e3:.1f} ms, peak {peak / 1e6:.1f} MB")
        compiling, running, cpu, both = compile_and_run(folder, asked, args.repeats)
        print(f"[{args.backend}] demand alone, {args.size} symbols, apart: compile "
              f"{compiling * 1e3:.1f} ms, run {running * 1e3:.1f} ms, CPU {cpu * 1e3:.1f} ms; "
              f"peak of compile and run {both / 1e6:.1f} MB")
        process, start = whole_process(folder, asked, args.repeats)
        print(f"[{args.backend}] fuse run --mode demand, {args.size} symbols: whole process "
              f"{process:.2f} s, start-up (imports alone) {start:.2f} s, the rest "
              f"{process - start:.2f} s")

if __name__ == "__main__":
    main()
