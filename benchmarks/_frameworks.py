"""Shared helpers for the Torch/JAX benchmarks (issue 5): Fuse on a framework
backend against the same computation written by hand in that framework.

Three pairs are measured, each in the same run, interleaved (`median_times`):

    jax            Fuse backend="jax" (jax.jit segments)   vs  hand-written jax.jit
    torch eager    Fuse backend="torch"                    vs  hand-written eager torch
    torch.compile  Fuse backend="torch", compiled=True     vs  hand-written torch.compile

For each pair: the steady state of `run_native` (framework tensors in and out,
synchronised: `block_until_ready` for jax, `torch.cuda.synchronize` on CUDA)
against the hand-written function on the same tensors, and `run` (NumPy in,
NumPy out) against the hand-written function with the same copies.  The
outputs are checked against the hand-written ones first, and the compiled
programs are run again with new input values of the same shapes to show that
`compilations` does not grow while the results follow the inputs.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

# torch.compile in this process, not in a pool of worker processes that keep a
# 2-core machine busy (warming up) while the first repeats are timed
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times, profile, write_sources  # noqa: E402

import fuse_lang  # noqa: E402

TARGET = 1.1
PAIRS = ("jax", "torch", "torch-compile")


def parse_args(description: str, repeats: int,
               configure: Callable[[argparse.ArgumentParser], None] | None = None
               ) -> argparse.Namespace:
    """The options every backend benchmark takes; `configure` adds a script's own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", default="cpu",
                        help="cpu (default), cuda, cuda:N, or auto (cuda when there is one)")
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes and few repeats (a smoke test, not a measurement)")
    parser.add_argument("--pairs", default=",".join(PAIRS),
                        help=f"which comparisons to run, comma-separated from {', '.join(PAIRS)}")
    parser.add_argument("--profile", choices=PAIRS, default=None,
                        help="cProfile the Fuse side's run_native of one pair instead of timing")
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads of torch and XLA on the CPU (default 1: on a "
                             "small shared machine a parallel region waits a scheduler "
                             "quantum for a descheduled thread, which swamps the arithmetic)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: elapsed time (default); cpu: this process's CPU time, "
                             "steadier on a loaded machine (with one thread; cpu devices only)")
    parser.add_argument("--sort", default="tottime")
    if configure is not None:
        configure(parser)
    args = parser.parse_args()
    if args.device == "cpu" and args.threads is None:
        args.threads = 1
    if args.threads:
        # before jax is imported: XLA reads its flags once
        single = "false" if args.threads == 1 else "true"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_cpu_multi_thread_eigen={single}"
                                   f" intra_op_parallelism_threads={args.threads}").strip()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    unknown = [p for p in args.pairs if p not in PAIRS]
    if unknown:
        parser.error(f"unknown pair(s) {', '.join(unknown)}; choose from {', '.join(PAIRS)}")
    if args.clock == "cpu" and args.device != "cpu":
        parser.error("--clock cpu measures CPU work: use it with --device cpu only")
    if args.small:
        args.repeats = min(args.repeats, 3)
    return args


# ------------------------------------------------------------------ frameworks
@dataclass
class Framework:
    """How to hand arrays to one framework on one device, and wait for it."""

    pair: str  # jax, torch or torch-compile
    backend: str  # the Fuse backend
    compiled: bool
    device: str  # the Fuse device string
    put: Callable[[np.ndarray], Any]  # NumPy -> a framework tensor on the device
    sync: Callable[[Any], Any]  # waits until a result is computed; returns it
    to_numpy: Callable[[Any], np.ndarray]

    def native(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        return {name: self.put(a) for name, a in arrays.items()}


def framework(pair: str, device: str) -> Framework | None:
    """The framework of a pair on `device`, or None (with a note) when it cannot
    run there (jax built without CUDA on a GPU machine, say)."""
    if pair == "jax":
        import jax

        kind = device.partition(":")[0]
        platform = "gpu" if kind in ("cuda", "gpu") else kind
        try:
            found = jax.devices(platform)
        except RuntimeError:
            print(f"[jax] skipped: jax sees no {platform} device here")
            return None
        index = int(device.partition(":")[2] or 0)
        jax_device = found[index]

        def sync(x):
            return jax.block_until_ready(x)

        return Framework(pair, "jax", True, device, lambda a: jax.device_put(a, jax_device),
                         sync, np.asarray)
    import torch

    torch_device = torch.device(device)
    cuda = torch_device.type == "cuda"

    def tsync(x):
        if cuda:
            torch.cuda.synchronize(torch_device)
        return x

    def put(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(torch_device)

    return Framework(pair, "torch", pair == "torch-compile", device, put, tsync,
                     lambda t: t.detach().cpu().numpy())


# ------------------------------------------------------------------ comparing
@dataclass
class Workload:
    name: str  # what the report lines call it
    program: str  # the Fuse program text; its sources are written as placeholder files
    output: str  # the export compared
    inputs: Callable[[int], dict[str, np.ndarray]]  # seed -> input arrays (same shapes)
    hand: dict[str, Callable[[Framework], Callable[..., Any]]]  # pair -> maker of fn(**inputs)
    exact: bool = False  # Boolean outputs: equal, not close
    warmup: int = 2  # untimed rounds of every contender (after the first, checked, runs)
    rtol: float = 2e-3
    atol: float = 2e-4


def check_same(workload: Workload, got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == np.float32, f"{what}: Fuse gave {got.dtype}, not float32"
    if workload.exact:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=workload.rtol, atol=workload.atol,
                                   err_msg=what)


def compare(workload: Workload, pair: str, args: argparse.Namespace) -> list[bool] | None:
    """Time one pair on one workload; print its report lines.  Returns whether
    each ratio met the target (None when the pair cannot run here)."""
    fw = framework(pair, args.device)
    if fw is None:
        return None
    inputs = workload.inputs(0)
    hand_fn = workload.hand[pair](fw)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_sources(folder, {name.lower(): a for name, a in inputs.items()})
        program = workload.program
        prog = fuse_lang.compile(program, backend=fw.backend, device=fw.device, base_dir=folder,
                                 path=str(folder / f"{workload.name}.fuse"),
                                 compiled=fw.compiled)
        native = fw.native(inputs)
        out = workload.output

        def fuse_native():
            return fw.sync(prog.run_native(native)[out])

        def hand_native():
            return fw.sync(hand_fn(**native))

        def fuse_run():
            return prog.run(inputs)[out]

        def hand_run():
            return fw.to_numpy(fw.sync(hand_fn(**fw.native(inputs))))

        # the first calls compile (jax.jit, torch.compile); they are not timed
        want = fw.to_numpy(hand_native())
        got = fw.to_numpy(fuse_native())
        check_same(workload, got, want, f"{workload.name} [{pair}] run_native")
        check_same(workload, fuse_run(), want, f"{workload.name} [{pair}] run")
        if args.profile == pair:
            profile(fuse_native, args.repeats, args.sort)
            return []
        times = median_times({"fuse native": fuse_native, "hand native": hand_native,
                              "fuse run": fuse_run, "hand run": hand_run}, args.repeats,
                             warmup=workload.warmup, clock=args.clock)
        label = {"jax": "jax.jit", "torch": "torch eager",
                 "torch-compile": "torch.compile"}[pair]
        ok = [report_ratio(f"{workload.name}, {label}, run_native", times["fuse native"],
                           times["hand native"]),
              report_ratio(f"{workload.name}, {label}, run (NumPy io)", times["fuse run"],
                           times["hand run"])]
        recompilation(workload, fw, prog, hand_fn, want)
    return ok


def report_ratio(label: str, fuse: float, hand: float) -> bool:
    ratio = fuse / hand
    ok = ratio <= TARGET
    print(f"{label:<44} fuse {fuse * 1e3:9.3f} ms   hand-written {hand * 1e3:9.3f} ms   "
          f"ratio {ratio:5.2f}   target <= {TARGET}   {'OK' if ok else 'MISSED'}")
    return ok


def recompilation(workload: Workload, fw: Framework, prog, hand_fn, first: np.ndarray) -> None:
    """Run again with new values of the same shapes: no new compilation, and the
    results follow the new inputs (they agree with the hand-written code on them
    and differ from the previous run's)."""
    before = prog.compilations
    previous = first
    for seed in (1, 2):
        inputs = workload.inputs(seed)
        native = fw.native(inputs)
        got = fw.to_numpy(fw.sync(prog.run_native(native)[workload.output]))
        want = fw.to_numpy(fw.sync(hand_fn(**native)))
        check_same(workload, got, want, f"{workload.name} [{fw.pair}] new inputs {seed}")
        assert not np.array_equal(got, previous), "the result did not change with the inputs"
        previous = got
    after = prog.compilations
    assert after == before, f"compilations grew from {before} to {after} on new input values"
    print(f"{'':<44} compilations {before} -> {after} after 2 runs with new input values "
          f"(same shapes): results changed, and match the hand-written code")


def run_all(title: str, workloads: list[Workload], args: argparse.Namespace) -> None:
    threads = f", {args.threads} thread(s)" if args.threads else ""
    print(f"{title}; device {args.device}{threads}, float32, median of {args.repeats} "
          f"interleaved repeats ({args.clock} clock)")
    print("ratio = Fuse / hand-written; run_native: framework tensors in and out; "
          "run: NumPy in and out (both sides copy)")
    met: list[bool] = []
    for workload in workloads:
        for pair in args.pairs:
            met += compare(workload, pair, args) or []
    if met:
        print(f"{sum(met)} of {len(met)} ratios within the target <= {TARGET}")
