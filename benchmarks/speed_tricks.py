"""What each speed trick of `fuse check` (and of `fuse run`) buys.

A trick stays only where it pays at least about 10% of the figure it serves:
`fuse check` of the generated 10,000-line program as a whole process, and for
the run's tricks `fuse run` of a transitive closure read from and written to
`.tsv` files (issue 29's whole-process figure).  Each
variant runs the same `fuse check` with one trick switched off from outside
(a patch made before the command runs, nothing in the product changes), and
is printed as a ratio to the unpatched command measured in the same run,
alternating, median of several runs of the process' CPU seconds (user and
system: machines here are shared and noisy, and a wall-clock median of a few
runs under load once read a 9% trick as 2%).

    python benchmarks/speed_tricks.py [--runs 7] [--lines 10000] [--edges 280000]
        [--part check|run|both]
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_program import generate  # noqa: E402

# Each variant: (name, what it serves, Python run before `fuse check`).  The
# patches go in before the command's modules are used.
_ENTRY = "import sys; sys.argv[1:] = ['check', {path!r}]\n"
_RUN_ENTRY = "from fuse_lang.cli import entry; entry()\n"

VARIANTS: list[tuple[str, str]] = [
    ("all tricks (baseline)", ""),
    ("without the cycle collector paused",
     "import gc, contextlib\n"
     "gc.disable = lambda: None\n"
     "import fuse_lang.speed.gc_pause as g, fuse_lang.check.analyzer as a\n"
     "import fuse_lang.cli.check as c\n"
     "assert a.gc_paused is c.gc_paused is g.gc_paused\n"
     "g.gc_paused = a.gc_paused = c.gc_paused = contextlib.nullcontext\n"),
    ("without the hard exit (the interpreter torn down)",
     "import gc, sys; gc.disable()\n"
     "from fuse_lang.cli import main; code = main(sys.argv[1:]); gc.enable(); sys.exit(code)\n"),
    ("without the precomputed parse tables (lark at start)",
     "import fuse_lang.front.tables as t; assert t.TABLES_PATH.exists()\n"
     "t.TABLES_PATH = t.TABLES_PATH.with_name('none.json')\n"),
    ("without the compiled replay (per-shape replay only)",
     "from fuse_lang.front.lalr import Parser; assert Parser.COMPILE_AFTER\n"
     "Parser.COMPILE_AFTER = 10**12\n"),
    ("without any replay (every statement by the table)",
     "from fuse_lang.front.lalr import Parser, kind_of\n"
     "Parser.parse = lambda self, tokens, shape=None: self._parse(\n"
     "    tokens, shape if shape is not None else tuple(map(kind_of, tokens)))\n"),
    ("without frozen_dataclass (plain frozen slotted dataclasses)",
     # fastinit loaded (and patched) before the package, whose modules use it
     "import dataclasses, importlib.util, pathlib\n"
     "where = pathlib.Path(importlib.util.find_spec('fuse_lang').origin).with_name('fastinit.py')\n"
     "spec = importlib.util.spec_from_file_location('fuse_lang.speed.fastinit', where)\n"
     "f = importlib.util.module_from_spec(spec); spec.loader.exec_module(f)\n"
     "sys.modules['fuse_lang.speed.fastinit'] = f\n"
     "assert f.frozen_dataclass\n"
     "f.frozen_dataclass = dataclasses.dataclass(frozen=True, slots=True)\n"),
    ("without the deferred tables (made for every analysis)",
     "import fuse_lang.cli.check as c, fuse_lang.check.analysis as an\n"
     "assert an.Deferred\n"
     "_analyze = c.analyze\n"
     "def analyze(*args, **kwargs):\n"
     "    analysis = _analyze(*args, **kwargs)\n"
     "    analysis.tensors, analysis.var_extents, analysis.domain_symbols\n"
     "    return analysis\n"
     "c.analyze = analyze\n"),
]


# `fuse run` of a closure over forward edges (benchmarks/datalog_peers.py's
# tc_forward generator), whose start-up imports scipy.sparse
_CLOSURE = """Edge(x, y) = "edge.tsv"
Path(x, y) = Edge(x, y)
Path(x, z) = Path(x, y) Edge(y, z)
"path.tsv" = Path(x, y)
"""
_RUN_ENTRY_RUN = "import sys; sys.argv[1:] = ['run', {path!r}]\n"
RUN_VARIANTS: list[tuple[str, str]] = [
    ("all tricks (baseline)", ""),
    ("without numpy's tools deferred (f2py, testing... at scipy's import)",
     "import fuse_lang.speed.lazy_numpy as z; assert z.DEFERRED; z.DEFERRED = ()\n"),
    ("without tables over ids' range (sorts and searches instead)",
     "import fuse_lang.io.whole_files as w; assert w.RANGE_TABLE_FACTOR\n"
     "w.RANGE_TABLE_FACTOR = 0\n"),
]


def _closure_program(folder: Path, edges: int) -> Path:
    from datalog_peer_workloads import gen_forward_graph  # (benchmarks/ is on the path)

    gen_forward_graph(folder, nodes=int(edges / 1.4), edges=edges)
    program = folder / "closure.fuse"
    program.write_text(_CLOSURE, encoding="utf-8")
    return program


def _alternating(codes: list[str], runs: int) -> list[float]:
    """The median CPU seconds of each code's process, run alternating `runs` times."""
    _seconds(codes[0])  # warm the file cache
    times: list[list[float]] = [[] for _ in codes]
    for _ in range(runs):  # alternating: every variant sees the same noise
        for i, code in enumerate(codes):
            times[i].append(_seconds(code))
    return [statistics.median(t) for t in times]


def _print(title: str, variants: list[tuple[str, str]], medians: list[float]) -> None:
    print(title)
    for (name, _), median in zip(variants, medians):
        print(f"  {name:66s} {median * 1000:7.0f} ms  {median / medians[0]:5.2f}x")


def _seconds(code: str) -> float:
    """The CPU seconds (user and system) of one process running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"a variant failed:\n{code}\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=280_000)  # tc_forward's size
    parser.add_argument("--part", choices=("check", "run", "both"), default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big = folder / "big.fuse"
        big.write_text(generate(args.lines, folder / "data"), encoding="utf-8")
        if args.part != "run":
            codes = []
            for _, patch in VARIANTS:
                entry = "" if patch.rstrip().endswith("sys.exit(code)") else _RUN_ENTRY
                codes.append(_ENTRY.format(path=str(big)) + patch + entry)
            _print(f"fuse check, {args.lines:,}-line program, CPU median of {args.runs} "
                   "alternating runs", VARIANTS, _alternating(codes, args.runs))
        if args.part != "check":
            closure = _closure_program(folder, args.edges)
            runs = _alternating([_RUN_ENTRY_RUN.format(path=str(closure)) + patch + _RUN_ENTRY
                                 for _, patch in RUN_VARIANTS], args.runs)
            _print(f"fuse run, closure of {args.edges:,} forward edges, CPU median of {args.runs} "
                   "alternating runs", RUN_VARIANTS, runs)


if __name__ == "__main__":
    main()
