"""The Torch/JAX benchmarks run end to end (tiny sizes, `--small`): each exits 0,
checks its outputs against the hand-written code, and prints a ratio line per
comparison and a compilation count per pair.  No timing is asserted."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("jax")

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
TIMEOUT = 300  # a bound for a hung process, not a speed target
PAIRS = ("jax.jit", "torch eager", "torch.compile")
SCRIPTS = {"attention_backends.py": ("attention", "transformer"),
           "closure_backends.py": ("closure",)}
RATIO = re.compile(r"^(?P<workload>\w+), (?P<pair>jax\.jit|torch eager|torch\.compile), "
                   r"(?P<what>run_native|run \(NumPy io\)) +fuse +[\d.]+ ms +hand-written +"
                   r"[\d.]+ ms +ratio +(?P<ratio>[\d.]+) ", re.M)
COMPILATIONS = re.compile(r"compilations (\d+) -> (\d+) after 2 runs with new input values")


@pytest.fixture(scope="module")
def outputs() -> dict[str, subprocess.CompletedProcess]:
    """Both scripts at once (each spends most of its time compiling)."""
    running = {name: subprocess.Popen([sys.executable, str(BENCHMARKS / name), "--small"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in SCRIPTS}
    done = {}
    for name, proc in running.items():
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return done


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_benchmark_runs_and_prints_its_ratios(outputs, script):
    proc = outputs[script]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {(m["workload"], m["pair"], m["what"]) for m in RATIO.finditer(proc.stdout)}
    for workload in SCRIPTS[script]:
        for pair in PAIRS:
            for what in ("run_native", "run (NumPy io)"):
                assert (workload, pair, what) in found, proc.stdout
    counts = COMPILATIONS.findall(proc.stdout)
    assert len(counts) == len(SCRIPTS[script]) * len(PAIRS), proc.stdout
    assert all(before == after for before, after in counts), proc.stdout


def test_speed_tricks_switches_each_trick_off():
    """benchmarks/speed_tricks.py patches the engine's internals from outside: each
    variant must still find what it patches (its asserts) and print its ratio."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "speed_tricks.py"), "--lines", "200",
                           "--runs", "1"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ratios = re.findall(r"^  (.+?) +\d+ ms +([\d.]+)x$", proc.stdout, re.M)
    assert [name for name, _ in ratios][0] == "all tricks (baseline)", proc.stdout
    assert len(ratios) == 8, proc.stdout


def test_sharded_attention_runs_on_8_host_devices_and_prints_its_ratio():
    """benchmarks/sharded_attention.py: sharded equals one device (its assert), and
    the ratio line is printed."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "sharded_attention.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "8 host devices" in proc.stdout and "outputs equal" in proc.stdout, proc.stdout
    assert re.search(r"one device [\d.]+ ms  sharded [\d.]+ ms  ratio [\d.]+ "
                     r"\(sharded / one device\)", proc.stdout), proc.stdout
