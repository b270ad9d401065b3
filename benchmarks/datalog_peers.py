"""Fuse against other Datalog engines, each as a whole process (issue 29, item 1).

The workloads (benchmarks/datalog_peer_workloads.py): transitive closure over
random edges and over edges from lower to higher ids, same generation, Andersen's
points-to analysis (two non-linear rules) and CSPA (Graspan's context-sensitive
points-to analysis, 10 rules). Each is generated as `.tsv` facts of integer
ids; every engine reads the same files and writes the answer relations as
tab-separated tuples; the answers must be identical as sets of tuples (else the
script exits 1). The engines, each a process of its own:

- Fuse: `python -m fuse_lang.cli run PROGRAM.fuse` (sinks write the answers),
  `fuse-2` with `--threads 2` (its sparse products on two threads) and BLAS at 2,
  with OMP/OpenBLAS/MKL threads at 1 (single-threaded, as the issue's table);
  on request `fuse-env`, the environment left as a user has it (BLAS and the
  sparse products on every core);
- DuckDB (`duckdb` from PyPI): recursive CTEs, `SET threads=1` and `=2`,
  `read_csv` in and `COPY ... TO` out (a Python process running the SQL);
- Nemo (`nemo-python`, `nmo_python`): the rules with `@import`/`@export`,
  skipped when not installed.

Time is the wall time of the process, start-up included; peak RSS is
`getrusage(RUSAGE_CHILDREN).ru_maxrss` read by a fresh wrapper process that
runs only that one engine process (so no other run's peak counts). A run past
`--timeout` seconds is killed and shown as such.

    python benchmarks/datalog_peers.py [--small] [--only WORKLOAD]... [--timeout S]
        [--engines fuse,fuse-2,duckdb-1,duckdb-2,nemo,fuse-env] [--keep DIR] [--fuse-trace]
        [--andersen-variables N]

--small is seconds in all (the smoke test, tests/test_benchmarks_smoke.py); the
large sizes are the issue's. Figures: docs/scale.md, "Against other Datalog
engines".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from datalog_peer_workloads import WORKLOADS, Workload, gen_andersen, gen_cspa  # noqa: E402

ENGINES = ("fuse", "fuse-2", "duckdb-1", "duckdb-2", "nemo")
# on request (--engines): Fuse as a user runs it, the environment left as it is
# (BLAS and the sparse products on every core unless OMP_NUM_THREADS says otherwise)
OPTIONAL_ENGINES = ("fuse-env",)

# Run in a fresh interpreter around one engine process: its wall time, and the
# peak RSS of its children (that process alone), written as JSON to argv[1].
WRAPPER = r"""
import json, os, resource, signal, subprocess, sys, time
report, limit, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
start = time.perf_counter()
child = subprocess.Popen(cmd, start_new_session=True)
try:
    rc = child.wait(timeout=limit)
    status = "ok" if rc == 0 else f"exit {rc}"
except subprocess.TimeoutExpired:
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    status = "timeout"
wall = time.perf_counter() - start
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(report, "w") as f:
    json.dump({"status": status, "wall_s": wall, "peak_kb": peak_kb}, f)
"""


# ------------------------------------------------------- the engine children


def duckdb_child(sql_file: str, threads: str) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads={int(threads)}")
    con.execute("SET preserve_insertion_order=false")
    for statement in Path(sql_file).read_text().split(";\n"):
        if statement.strip():
            con.execute(statement)


def nemo_child(rules_file: str, out_folder: str) -> None:
    """Nemo writes each `@export`ed predicate into out_folder (the output manager
    flattens a folder in the resource name, so the folder is given here)."""
    import re

    import nmo_python

    text = Path(rules_file).read_text()
    engine = nmo_python.NemoEngine(nmo_python.load_string(text))
    engine.reason()
    out = nmo_python.NemoOutputManager(out_folder, overwrite=True)
    for predicate in re.findall(r"^@export (\w+)", text, re.M):
        engine.write_result(predicate, out)


# ------------------------------------------------------------- the parent


def engine_command(engine: str, workload: Workload, folder: Path) -> list[str] | None:
    """The process that runs `engine` on the workload in `folder` (cwd), after
    writing its program there; None where the engine cannot express it."""
    out = f"out_{engine.replace('-', '')}"
    (folder / out).mkdir(exist_ok=True)
    if engine.startswith("fuse"):  # fuse-2: its sparse products on 2 threads
        (folder / f"{out}.fuse").write_text(workload.fuse.replace("{out}", out))
        threads = ["--threads", engine.split("-")[1]] if engine[5:].isdigit() else []
        return [sys.executable, "-m", "fuse_lang.cli", "run", *threads, f"{out}.fuse"]
    if engine.startswith("duckdb"):
        if workload.sql is None:
            return None
        (folder / f"{out}.sql").write_text(workload.sql.replace("{out}", out))
        return [sys.executable, str(Path(__file__).resolve()), "--child", "duckdb",
                f"{out}.sql", engine.split("-")[1]]
    (folder / "program.rls").write_text(workload.nemo.replace("{out}", out))
    return [sys.executable, str(Path(__file__).resolve()), "--child", "nemo", "program.rls",
            out]


def child_env(engine: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    if engine.startswith("fuse") and engine != "fuse-env":
        # single-threaded, as DuckDB's 1-thread column (fuse-2: 2)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = engine.split("-")[1] if "-" in engine else "1"
    return env


def measure(cmd: list[str], folder: Path, env: dict, limit: float) -> dict:
    """One run of `cmd` in `folder` under the wrapper: status, wall_s, peak_kb, log."""
    report = folder / "run.json"
    report.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(report), str(limit), *cmd],
                          cwd=folder, env=env, capture_output=True, text=True,
                          timeout=limit + 120)
    result = json.loads(report.read_text()) if report.exists() else \
        {"status": f"wrapper exit {done.returncode}", "wall_s": 0.0, "peak_kb": 0}
    result["log"] = (done.stdout + done.stderr)[-2000:]
    return result


def installed(engine: str) -> bool:
    from importlib.util import find_spec

    if engine.startswith("duckdb"):
        return find_spec("duckdb") is not None
    if engine == "nemo":
        return find_spec("nmo_python") is not None
    return True


def read_answers(path: Path):
    """The tuples of a 2-column relation file, as sorted distinct int64 keys."""
    import numpy as np

    if not path.exists() or path.stat().st_size == 0:
        return np.empty(0, dtype=np.int64)
    rows = np.loadtxt(path, dtype=np.int64, delimiter="\t", ndmin=2)
    return np.unique((rows[:, 0] << 32) | rows[:, 1])  # ids are below 2^31


def compare(workload: Workload, folder: Path, finished: list[str]) -> tuple[bool, int]:
    """Whether every finished engine's answers equal the first one's; the count."""
    import numpy as np

    if not finished:
        return True, 0
    first = finished[0]
    want = {rel: read_answers(folder / f"out_{first.replace('-', '')}" / f"{rel}.tsv")
            for rel in workload.answers}
    same = True
    for engine in finished[1:]:
        for rel in workload.answers:
            got = read_answers(folder / f"out_{engine.replace('-', '')}" / f"{rel}.tsv")
            if not np.array_equal(got, want[rel]):
                same = False
                print(f"  {workload.name}: {engine}'s {rel} differs from {first}'s: "
                      f"{len(got):,} tuples against {len(want[rel]):,}, "
                      f"{len(np.setdiff1d(got, want[rel])):,} not in {first}'s, "
                      f"{len(np.setdiff1d(want[rel], got)):,} missing")
    return same, sum(len(v) for v in want.values())


def fuse_trace(folder: Path, env: dict, limit: float) -> None:
    """Where Fuse's time goes: `fuse check` alone, then `fuse run --trace` (not timed above)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "out_fuse.fuse"], cwd=folder,
                   env=env, capture_output=True, timeout=limit)
    check_s = time.perf_counter() - start
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "--trace",
                           "out_fuse.fuse"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=limit)
    print(f"  fuse check (start-up + reading the facts' symbols): {check_s:.2f} s; "
          f"fuse run --trace: {time.perf_counter() - start:.2f} s")
    print("\n".join("    " + line for line in done.stdout.splitlines() if line.strip()))


def cell(run: dict | None) -> str:
    if run is None:
        return "not expressible (non-linear)"
    if run["status"] == "ok":
        return f"{run['wall_s']:.2f} s, {run['peak_kb'] / 1024:.0f} MB"
    if run["status"] == "timeout":
        return f"over {run['limit']:.0f} s"
    return run["status"]


def run_workload(workload: Workload, folder: Path, args) -> tuple[dict, bool, int]:
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    facts = workload.generate(folder, args.small)
    print(f"{workload.name}: {workload.title}, {workload.sizes[args.small]} "
          f"({', '.join(f'{k} {v:,}' for k, v in facts.items())} facts; generated in "
          f"{time.perf_counter() - start:.1f} s)", flush=True)
    runs: dict[str, dict | None] = {}
    for engine in args.engines:
        if not installed(engine):
            runs[engine] = {"status": "not installed"}
            continue
        cmd = engine_command(engine, workload, folder)
        if cmd is None:
            runs[engine] = None
            continue
        run = measure(cmd, folder, child_env(engine), args.timeout)
        run["limit"] = args.timeout
        runs[engine] = run
        print(f"  {engine:<9} {cell(run)}", flush=True)
        if run["status"] not in ("ok", "timeout"):
            print("    " + run["log"].strip().replace("\n", "\n    "))
    if args.fuse_trace and runs.get("fuse", {}) and runs["fuse"]["status"] == "ok":
        fuse_trace(folder, child_env("fuse"), args.timeout)
    finished = [e for e, r in runs.items() if r is not None and r["status"] == "ok"]
    same, answers = compare(workload, folder, finished)
    verdict = "identical" if same else "DIFFERENT"
    print(f"{workload.name}: answers {verdict} across {', '.join(finished) or 'no engine'} "
          f"({answers:,} tuples)", flush=True)
    return runs, same, answers


def ratio(runs: dict, key: str, fuse: str = "fuse", duckdb: str = "duckdb-1") -> str:
    fuse, duck = runs.get(fuse), runs.get(duckdb)
    if not fuse or not duck or fuse["status"] != "ok" or duck["status"] != "ok":
        return "-"
    return f"{fuse[key] / duck[key]:.2f}"


def print_table(results: list[tuple[Workload, dict, int]], args) -> None:
    names = {"fuse": "Fuse `fuse run`", "fuse-2": "Fuse `--threads 2`",
             "fuse-env": "Fuse, environment as is",
             "duckdb-1": "DuckDB 1 thread", "duckdb-2": "DuckDB 2 threads", "nemo": "Nemo"}
    head = ["workload", *(names[e] for e in args.engines)]
    one = "fuse" in args.engines and "duckdb-1" in args.engines
    two = "fuse-2" in args.engines and "duckdb-2" in args.engines
    head += ["Fuse/DuckDB-1 time", "Fuse/DuckDB-1 RSS"] * one + ["Fuse-2/DuckDB-2 time"] * two
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for workload, runs, answers in results:
        row = [f"{workload.title}, {workload.sizes[args.small]} ({answers:,} answers)",
               *(cell(runs.get(e)) for e in args.engines)]
        row += [ratio(runs, "wall_s"), ratio(runs, "peak_kb")] * one + \
            [ratio(runs, "wall_s", "fuse-2", "duckdb-2")] * two
        print("| " + " | ".join(row) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="the small sizes (seconds)")
    parser.add_argument("--only", action="append", choices=sorted(WORKLOADS),
                        help="this workload only (repeatable)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per engine run (default 60 with --small, else 300)")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help="comma-separated subset of " + ",".join(ENGINES + OPTIONAL_ENGINES))
    parser.add_argument("--cspa-variables", type=int, metavar="N",
                        help="CSPA at N variables")
    parser.add_argument("--andersen-variables", type=int, metavar="N",
                        help="Andersen at N variables and N random facts of each kind")
    parser.add_argument("--keep", type=Path, help="generate into DIR and keep the files")
    parser.add_argument("--fuse-trace", action="store_true",
                        help="also run `fuse check` and `fuse run --trace` (untimed)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        {"duckdb": duckdb_child, "nemo": nemo_child}[args.child[0]](*args.child[1:])
        return 0
    args.engines = [e for e in args.engines.split(",") if e]
    if unknown := set(args.engines) - set(ENGINES + OPTIONAL_ENGINES):
        parser.error(f"unknown engines {sorted(unknown)}")
    args.timeout = args.timeout or (60.0 if args.small else 300.0)
    import compileall  # time the engine, not the writing of its bytecode

    compileall.compile_dir(ROOT / "fuse_lang", quiet=1)
    workloads = dict(WORKLOADS)
    if n := args.andersen_variables:
        workloads["andersen"] = replace(
            workloads["andersen"], generate=lambda folder, small: gen_andersen(folder, n, n),
            sizes={args.small: f"{n:,} variables, {n:,} facts each"})
    if n := args.cspa_variables:
        workloads["cspa"] = replace(workloads["cspa"],
                                    generate=lambda folder, small: gen_cspa(folder, n),
                                    sizes={args.small: f"{n:,} variables"})
    results, all_same = [], True
    with tempfile.TemporaryDirectory(prefix="datalog_peers_") as tmp:
        base = args.keep or Path(tmp)
        for name in args.only or list(workloads):
            runs, same, answers = run_workload(workloads[name], base / name, args)
            results.append((workloads[name], runs, answers))
            all_same &= same
    print_table(results, args)
    if "fuse" in args.engines:
        print_floor(args)
    return 0 if all_same else 1


FLOOR = ("from fuse_lang.speed.lazy_numpy import defer_numpy_tools; defer_numpy_tools(); "
         "import scipy.sparse, fuse_lang.cli.run, fuse_lang.run.program")
PEER_FLOOR = "import duckdb"


def print_floor(args) -> None:
    """What a whole process pays before its first fact, measured now under the
    same wrapper: Python with the imports of a Fuse run (numpy, scipy.sparse, the
    engine), and Python importing DuckDB."""
    with tempfile.TemporaryDirectory(prefix="datalog_floor_") as tmp:
        rows = [("fuse", "Python + numpy + scipy.sparse + Fuse's imports", FLOOR)]
        if any(e.startswith("duckdb") for e in args.engines):
            rows.append(("duckdb-1", "Python + `import duckdb`", PEER_FLOOR))
        for engine, what, code in rows:
            run = measure([sys.executable, "-c", code], Path(tmp), child_env(engine), 60.0)
            print(f"start-up floor, {what}: {cell(run)}")


if __name__ == "__main__":
    sys.exit(main())
