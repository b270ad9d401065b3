"""Sharded attention and a sharded training step over 1, 2 and 4 JAX processes
on this machine (issue 32).

The attention head of benchmarks/_common.py (with its output projection), P
positions, width D, float32, its sources `.npy` files.  For each process count
the script starts that many processes on localhost (one CPU device each,
joined by `fuse_lang.distributed.initialize()` from JAX_COORDINATOR_ADDRESS,
JAX_NUM_PROCESSES and JAX_PROCESS_ID, gloo between them), each compiling the
program with `distributed=True, shard={"p": "data"}` and timing `run_native`
(median of --repeats, the slowest process's).  It checks that every count's
output equals the 1-process one, then prints per count: the time, the ratio
against 1 process (in this same invocation), and per process the bytes of the
sharded tensors it holds (X, a source, and Out, the result: both split along
p, so 1/processes of them) and its peak resident memory (most of which is
the JAX runtime itself).

With `--workload training` the program is instead an MLP's training step
(`TRAINING` below: N examples of width D, a hidden layer of width D, softmax
over C classes, Adam), its examples n split over the processes
(`shard={"n": "data"}`); each process times the steps after the first two
(the median gap between the progress callback's calls), and every count's
losses and trained params must equal the 1-process ones.  Per process, the
bytes of the sharded tensors are those of X (the examples, 1/processes each).

    python benchmarks/distributed_attention.py [--processes 1,2,4]
        [--positions 1024] [--width 128] [--repeats 5] [--small]
    python benchmarks/distributed_attention.py --workload training
        [--examples 4096] [--width 128] [--steps 12] [--small]

On 2 cores expect no speed-up (the processes share the cores); the point is
the answers and the per-process memory of the sharded tensors.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import attention_program  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = dict(rtol=2e-4, atol=2e-5)  # tests/conftest.py: float32 on every backend


TRAINING = """X[n,d] = "x.npy"
T[n,c] = "t.npy"
param W1[h,d], W2[c,h]
axis h = {width}
H[n,h] = relu(W1[h,d] X[n,d])
P[n,c.] = softmax(W2[c,h] H[n,h])
L = -(log(P[n,c]) T[n,c]) / {examples}
train L
"""
CLASSES = 16


def training_worker(folder: Path, width: int, examples: int, steps: int) -> None:
    """One process of a training group: its step time, losses and holdings."""
    import fuse_lang

    group = fuse_lang.distributed.initialize()
    program = fuse_lang.compile(TRAINING.format(width=width, examples=examples),
                                backend="jax", base_dir=folder, shard={"n": "data"},
                                distributed=True)
    seen = []
    result = program.train(optimizer="adam", learning_rate=1e-3, steps=steps, seed=0,
                           progress=seen.append)
    gaps = np.diff([p.elapsed_s for p in seen][1:])  # the first two steps compile
    placed_x = program.backend.place("X", np.load(folder / "x.npy", mmap_mode="r"))
    here = sum(s.data.nbytes for s in placed_x.addressable_shards)
    if group.lead:
        np.savez(folder / f"trained_{group.num_processes}.npz", losses=result.losses,
                 **{name: np.asarray(v) for name, v in result.params.items()})
    print(json.dumps({"process": group.process_id, "seconds": float(np.median(gaps)),
                      "sharded_bytes": here,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def worker(folder: Path, width: int, repeats: int) -> None:
    """One process of the group: its timings and holdings as one JSON line."""
    import jax

    import fuse_lang

    group = fuse_lang.distributed.initialize()
    program = fuse_lang.compile(attention_program(width), backend="jax", base_dir=folder,
                                shard={"p": "data"}, distributed=True)
    for _ in range(2):  # compile and warm
        out = jax.block_until_ready(program.run_native())["Out"]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        jax.block_until_ready(program.run_native())
        times.append(time.perf_counter() - started)
    placed_x = program.backend.place("X", np.load(folder / "x.npy", mmap_mode="r"))
    here = sum(s.data.nbytes for a in (placed_x, out) for s in a.addressable_shards)
    gathered = program.run()["Out"]  # every process takes part in the gathering
    if group.lead:
        np.save(folder / f"out_{group.num_processes}.npy", gathered)
    print(json.dumps({"process": group.process_id, "seconds": float(np.median(times)),
                      "sharded_bytes": here,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def reserved_port() -> socket.socket:
    """A socket bound (SO_REUSEPORT, not listening) to a free port, held while a group
    runs: no other process takes the port before the group's coordinator binds it
    (its gRPC server binds with SO_REUSEPORT too, and this socket takes no connections)."""
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    held.bind(("127.0.0.1", 0))
    return held


def run_group(count: int, folder: Path, args: argparse.Namespace) -> list[dict]:
    with reserved_port() as held:
        return _run_group(count, folder, args, held.getsockname()[1])


def _run_group(count: int, folder: Path, args: argparse.Namespace, port: int) -> list[dict]:
    procs = []
    for rank in range(count):
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env.update({"JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_PLATFORMS": "cpu",
                    "JAX_NUM_PROCESSES": str(count), "JAX_PROCESS_ID": str(rank),
                    "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT),
                                                              env.get("PYTHONPATH")) if p)})
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", str(folder), "--width", str(args.width),
             "--repeats", str(args.repeats), "--workload", args.workload,
             "--examples", str(args.examples), "--steps", str(args.steps)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"a process of {count} failed:\n{stderr[-3000:]}")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("attention", "training"), default="attention")
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--positions", type=int, default=1024)
    parser.add_argument("--examples", type=int, default=4096)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--small", action="store_true", help="a tiny run (the smoke test)")
    parser.add_argument("--worker", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.small:
        args.positions, args.examples, args.width, args.repeats, args.steps = 64, 64, 16, 2, 4
    if args.worker:
        if args.workload == "training":
            training_worker(Path(args.worker), args.width, args.examples, args.steps)
        else:
            worker(Path(args.worker), args.width, args.repeats)
        return 0
    counts = [int(c) for c in args.processes.split(",")]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if args.workload == "training":
            title = _training_data(folder, args)
        else:
            title = _attention_data(folder, args)
        results = {count: run_group(count, folder, args) for count in counts}
        _check_equal(folder, args.workload, counts)
    print(f"distributed {title}, processes {args.processes} on localhost "
          f"({os.cpu_count()} cores, one CPU device each): answers equal "
          f"(rtol {TOLERANCE['rtol']})")
    base = max(r["seconds"] for r in results[counts[0]])
    for count, rows in results.items():
        seconds = max(r["seconds"] for r in rows)
        held = "/".join(f"{r['sharded_bytes'] / 1024:.0f}" for r in rows)
        rss = "/".join(f"{r['peak_rss_mb']:.0f}" for r in rows)
        print(f"{count} process(es)  {seconds * 1e3:9.2f} ms{' a step' if args.workload == 'training' else ''}"
              f"  ratio {seconds / base:5.2f} (against {counts[0]})  sharded tensors per "
              f"process {held} KiB  peak RSS per process {rss} MiB")
    return 0


def _attention_data(folder: Path, args: argparse.Namespace) -> str:
    p, d = args.positions, args.width
    rng = np.random.default_rng(0)
    np.save(folder / "x.npy", rng.standard_normal((p, d), dtype=np.float32))
    for w in ("wq", "wk", "wv", "wo"):
        np.save(folder / f"{w}.npy",
                rng.standard_normal((d, d), dtype=np.float32) * np.float32(d ** -0.5))
    return f"attention, P={p}, D={d}"


def _training_data(folder: Path, args: argparse.Namespace) -> str:
    n, d = args.examples, args.width
    rng = np.random.default_rng(0)
    np.save(folder / "x.npy", rng.standard_normal((n, d), dtype=np.float32))
    np.save(folder / "t.npy", np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, n)])
    return f"training step (MLP, Adam), N={n}, D={d}, C={CLASSES}, {args.steps} steps"


def _check_equal(folder: Path, workload: str, counts: list[int]) -> None:
    """Every process count's answers equal the first count's."""
    if workload == "training":
        reference = np.load(folder / f"trained_{counts[0]}.npz")
        for count in counts[1:]:
            got = np.load(folder / f"trained_{count}.npz")
            for key in reference.files:
                np.testing.assert_allclose(got[key], reference[key], **TOLERANCE)
        return
    reference = np.load(folder / f"out_{counts[0]}.npy")
    for count in counts[1:]:
        np.testing.assert_allclose(np.load(folder / f"out_{count}.npy"), reference, **TOLERANCE)


if __name__ == "__main__":
    sys.exit(main())
