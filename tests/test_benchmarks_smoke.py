"""The Torch/JAX benchmarks run end to end (tiny sizes, `--small`): each exits 0,
checks its outputs against the hand-written code, and prints a ratio line per
comparison and a compilation count per pair; so does the edit-speed matrix (a
tiny program, without Torch or JAX).  No timing is asserted."""
from __future__ import annotations

import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

needs_backends = pytest.mark.skipif(find_spec("torch") is None or find_spec("jax") is None,
                                    reason="needs torch and jax")

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


@needs_backends
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


@needs_backends
def test_speed_tricks_switches_each_trick_off():
    """benchmarks/speed_tricks.py patches the engine's internals from outside: each
    variant must still find what it patches (its asserts) and print its ratio."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "speed_tricks.py"), "--lines", "200",
                           "--edges", "2800", "--runs", "1"], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ratios = re.findall(r"^  (.+?) +\d+ ms +([\d.]+)x$", proc.stdout, re.M)
    names = [name for name, _ in ratios]
    # fuse check's seven tricks and its baseline, then fuse run's two and its baseline
    assert len(ratios) == 11 and names[0] == names[8] == "all tricks (baseline)", proc.stdout
    assert names[9].startswith("without numpy's tools deferred"), proc.stdout
    assert names[10].startswith("without tables over ids' range"), proc.stdout


@needs_backends
def test_sharded_attention_runs_on_8_host_devices_and_prints_its_ratio():
    """benchmarks/sharded_attention.py: sharded equals one device (its assert), and
    the ratio line is printed."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "sharded_attention.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "8 host devices" in proc.stdout and "outputs equal" in proc.stdout, proc.stdout
    assert re.search(r"one device [\d.]+ ms  sharded [\d.]+ ms  ratio [\d.]+ "
                     r"\(sharded / one device\)", proc.stdout), proc.stdout


@needs_backends
@pytest.mark.parametrize("workload", ["attention", "training"])
def test_distributed_attention_runs_on_2_processes_and_prints_its_ratio(workload):
    """benchmarks/distributed_attention.py: 2 processes equal 1 (its assert: the
    attention's output; the training's losses and params), the ratio line and
    each process's half of the sharded tensors are printed."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "distributed_attention.py"),
                           "--small", "--processes", "1,2", "--workload", workload],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "answers equal" in proc.stdout, proc.stdout
    assert re.search(r"^2 process\(es\) +[\d.]+ ms( a step)?  ratio +[\d.]+ \(against 1\)  "
                     r"sharded tensors per process (4/4|2/2) KiB", proc.stdout, re.M), proc.stdout


@needs_backends
def test_cancel_latency_prints_its_ratio():
    """benchmarks/cancel_latency.py, tiny: the blocks switch it patches still exist."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "cancel_latency.py"), "--size",
                           "800"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"in blocks \d+ ms .* ratio [\d.]+x$", proc.stdout, re.M), proc.stdout


@needs_backends
def test_chain_closure_prints_its_scaling():
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "chain_closure.py"), "--edges", "10",
                           "20"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(re.findall(r"^chain of \d+ edges: [\d.]+ s CPU  ratio [\d.]+x", proc.stdout,
                          re.M)) == 2, proc.stdout


def test_sparse_io_prints_its_peaks_and_ratios():
    """benchmarks/sparse_io.py --small: the files written and read back agree (its
    asserts) and each line has its peaks and ratios."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "sparse_io.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(headers only); plan: sparse" in proc.stdout, proc.stdout
    assert len(re.findall(r"^(read|write) \.(npz|tsv) +peak fuse +[\d.,]+ MB .* ratio +[\d.]+ +"
                          r"time fuse .* ratio +[\d.]+$", proc.stdout, re.M)) == 3, proc.stdout


def test_datalog_large_checks_both_programs_and_prints_ratios():
    """benchmarks/datalog_large.py --small: points-to and the 56-rule program equal
    the reference evaluator (else it exits non-zero); a ratio per comparison."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "datalog_large.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^points-to, 3,000 facts .* ratio [\d.]+; answers equal", proc.stdout,
                     re.M), proc.stdout
    assert re.search(r"^wide program, 6,000 facts, 56 rules: .* ratio [\d.]+; answers equal",
                     proc.stdout, re.M), proc.stdout
    assert len(re.findall(r"^reading 20,000 lines of \w+: .* ratio [\d.]+$", proc.stdout,
                          re.M)) == 2, proc.stdout
    assert re.search(r"^join A\(x,y,f\) .* sparse product [\d.]+ ms, expand pairs [\d.]+ ms; "
                     r"ratio [\d.]+$", proc.stdout, re.M), proc.stdout


@needs_backends
def test_datalog_join_prints_its_flops_and_ratios():
    """benchmarks/datalog_join.py --small: the planned and the carried contraction
    agree (its assert) and both ratios are printed."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "datalog_join.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"FLOPs ratio carried / planned +[\d.]+", proc.stdout), proc.stdout
    assert re.search(r"ratio carried / planned +[\d.]+ +answers identical", proc.stdout), \
        proc.stdout
    assert "fuse explain:" in proc.stdout


def test_datalog_join_compares_a_sparse_answer():
    """At 120 constants per column the plan keeps H sparse, and run() hands it out
    sparse: the benchmark's answer check compares it dense (indexing the sparse
    array had said the two contractions disagree; at 300 it asked for 249 GiB)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "datalog_join.py"),
                           "--constants", "120", "--rows", "1000", "--repeats", "1"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"ratio carried / planned +[\d.]+ +answers identical", proc.stdout), \
        proc.stdout


@needs_backends
def test_plot_speed_times_every_picture_command():
    """benchmarks/plot_speed.py, tiny: each picture command runs and gets its ratios."""
    pytest.importorskip("matplotlib")
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "plot_speed.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ratios = re.findall(r"^(fuse .+?) +\d+ ms \(cpu +\d+ ms\) .*x `(fuse [a-z]+ transformer)` "
                        r"\(cpu +[\d.]+x\)", proc.stdout, re.M)
    assert len(ratios) == 5, proc.stdout


def test_the_edit_speed_matrix_runs_and_prints_each_edit():
    """benchmarks/edit_speed.py, tiny: every edit timed in the editor and through the
    server, each printed with its ratio to the run's baselines."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "edit_speed.py"), "--lines", "150",
                           "--runs", "1"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^  (.+?) +editor +\d+ ms +[\d.]+x cold.* server +\d+ ms +[\d.]+x "
                      r"baseline", proc.stdout, re.M)
    assert len(rows) == 11 and "unclosed ( inserted at top" in rows, proc.stdout


def test_execution_controls_prints_monte_carlo_and_blocked_ratios():
    """benchmarks/execution_controls.py --small: Monte Carlo against exact (with its
    standard error) and blocked against unblocked (peak memory, time)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "execution_controls.py"),
                           "--small"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"monte carlo, \d+ values, \d+ samples \(1%\): .* ratio [\d.]+",
                     proc.stdout), proc.stdout
    assert re.search(r"monte carlo standard error \(relative to \|exact\|\): [\d.]+",
                     proc.stdout), proc.stdout
    assert re.search(r"peak memory unblocked .* ratio [\d.]+", proc.stdout), proc.stdout
    assert re.search(r"blocked time: .* ratio [\d.]+", proc.stdout), proc.stdout


@pytest.mark.skipif(find_spec("torch") is None or find_spec("optax") is None,
                    reason="needs torch, jax and optax")
def test_training_step_prints_a_ratio_per_framework():
    """benchmarks/training_step.py --small: `program.train` against the hand-written
    loop on torch and on jax (the script checks that both reach the same loss)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "training_step.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.findall(r"^mlp .*, (torch|jax) on cpu  fuse [\d.]+ ms/step  hand-written [\d.]+ "
                       r"ms/step  ratio [\d.]+$", proc.stdout, re.M)
    assert found == ["torch", "jax"], proc.stdout



@pytest.mark.skipif(find_spec("torch") is None or find_spec("optax") is None,
                    reason="needs torch, jax and optax")
def test_training_step_charlm_prints_a_ratio_per_framework():
    """benchmarks/training_step_charlm.py --small: the character transformer's
    `program.train` against the same model hand-written on torch and on jax (the
    script checks that both reach the same loss)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "training_step_charlm.py"),
                           "--small"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.findall(r"^char transformer .*, (torch|jax) on cpu  fuse [\d.]+ ms/step  "
                       r"hand-written [\d.]+ ms/step  ratio [\d.]+ ", proc.stdout, re.M)
    assert found == ["torch", "jax"], proc.stdout

@pytest.mark.skipif(find_spec("torch") is None or find_spec("safetensors") is None,
                    reason="needs torch and safetensors")
def test_generation_prints_tokens_per_second_with_and_without_reuse():
    """benchmarks/generation.py --small: `program.generate` with and without reuse
    against the model hand-written in PyTorch with and without a KV cache (the
    script checks that every side gives the same greedy tokens)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "generation.py"), "--small",
                           "--rounds", "1"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.findall(r"^generation, (numpy|torch): reuse / whole window [\d.]+x; fuse reuse "
                       r"/ pytorch KV cache [\d.]+; fuse whole window / pytorch no cache "
                       r"[\d.]+$", proc.stdout, re.M)
    assert found == ["numpy", "torch"], proc.stdout
    assert "the same tokens on every side: yes" in proc.stdout


def test_weights_prints_int8_and_lora_figures():
    """benchmarks/weights.py --small: int8 against float (error within the bound
    from the scales: its assert; run and load ratios) and LoRA compilations when
    switching adapters (0 new ones) on each backend installed."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "weights.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Z within the bound from its scales: True" in proc.stdout, proc.stdout
    assert re.search(r"run +int8 [\d.]+ ms +float [\d.]+ ms +ratio [\d.]+ \(int8 / float\)",
                     proc.stdout), proc.stdout
    switches = re.findall(r"^lora, (.+?): compilations (\d+) -> (\d+) after 4 adapter switches",
                          proc.stdout, re.M)
    assert switches and all(before == after for _, before, after in switches), proc.stdout


@needs_backends
def test_compile_cache_prints_cold_and_warm_ratios():
    """benchmarks/compile_cache.py --small: jax, one trial, a fresh process cold and
    one warm (the index must know the warm one's program)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "compile_cache.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for what in ("first result", "process"):
        assert re.search(rf"transformer, jax, {what} *: cold +[\d.]+ s +warm +[\d.]+ s +"
                         rf"ratio [\d.]+", proc.stdout), proc.stdout


def test_demand_prints_time_and_memory_ratios_against_forward():
    """benchmarks/demand.py --small: a bound query in demand mode against forward mode
    (time, rules and peak memory ratios, the same answer), then demand mode alone."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "demand.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"demand vs forward, \d+ symbols, .* same: True\): .* time ratio [\d.]+, "
                     r"rules ratio [\d.]+, memory ratio [\d.]+", proc.stdout), proc.stdout
    assert re.search(r"demand alone, \d+ symbols, .* rules [\d.]+ ms, peak [\d.]+ MB",
                     proc.stdout), proc.stdout


def test_demand_on_a_chain_prints_the_search_against_the_rounds():
    """benchmarks/demand.py --small --shape chain: a query as deep as the chain, its
    rounds finished by one graph search against the rounds alone (same answers)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "demand.py"), "--small",
                           "--shape", "chain"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"demand, \d+-symbol chain: rounds then search [\d.]+ ms .* time ratio "
                     r"[\d.]+, rules ratio [\d.]+, same answers: True", proc.stdout), proc.stdout
    assert re.search(r"demand alone, \d+ symbols, chain, .* rules [\d.]+ ms", proc.stdout)


def test_the_uniform_edit_speed_benchmark_prints_each_edit():
    """benchmarks/uniform_edit_speed.py, tiny: each edit of the one-statement file
    (a param or a bare scalar deleted) in the editor and through the server."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "uniform_edit_speed.py"),
                           "--lines", "120", "--runs", "1"], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^  (.+?) +editor +\d+ ms +[\d.]+x baseline +server +\d+ ms +[\d.]+x "
                      r"baseline", proc.stdout, re.M)
    assert len(rows) == 5 and "scalar S (read bare) deleted" in rows, proc.stdout


def test_datalog_ids_checks_its_answers_and_prints_ratios():
    """benchmarks/datalog_ids.py --small: a closure over node ids 0..N-1 and over
    64-bit ids equals the Python reference (else it exits non-zero); the ratios."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "datalog_ids.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "answers equal to the reference" in proc.stdout, proc.stdout
    assert re.search(r"^ratio 64-bit / small: time [\d.]+, memory [\d.]+$", proc.stdout, re.M), \
        proc.stdout


def test_bench_complement_runs_its_sparse_anti_joins():
    """benchmarks/bench_complement.py at 1,000 symbols per column (A and R kept sparse,
    given as inputs) but few tuples: every spelling of the negation gives the same
    answers and a ratio to `not R` (the sparse inputs' NaN check once broke it)."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_complement.py"),
                           "--constants", "1000", "--rows", "300", "--dense-constants", "20",
                           "--repeats", "1"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "identical" in proc.stdout, proc.stdout
    assert len(re.findall(r"D sparse\s+ratio to not R\s+[\d.]+$", proc.stdout, re.M)) == 3, \
        proc.stdout


def test_linear_costs_prints_each_size_and_its_growth_ratio():
    """benchmarks/linear_costs.py --small: check and explain of both workloads at
    each size, and the per-line cost ratio of the largest size to the smallest."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "linear_costs.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^python start-up \(baseline\) \d+ ms", proc.stdout, re.M), proc.stdout
    rows = re.findall(r"^(check|explain) +(undefined|generated) +[\d,]+ lines +[\d.]+ MB +\d+ ms "
                      r"+[\d.]+x baseline +per line +[\d.]+ us$", proc.stdout, re.M)
    assert len(rows) == 12, proc.stdout
    ratios = re.findall(r"^(check|explain) +(undefined|generated) per-line cost at 200 lines / "
                        r"at 50 lines  ratio ([\d.]+|n/a)$", proc.stdout, re.M)
    assert len(ratios) == 4, proc.stdout


def test_linear_costs_compares_the_targets_with_a_base_tree():
    """benchmarks/linear_costs.py --small --base TREE (this very tree as the base):
    the two targets by both trees, wall and CPU seconds each, and their ratios."""
    root = BENCHMARKS.parent
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "linear_costs.py"), "--small",
                           "--base", str(root)], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^(check|explain) +(undefined|generated) +[\d,]+ lines +[\d.]+ MB  "
                      r"base +[\d.]+ s \(CPU +[\d.]+ s\)  this +[\d.]+ s \(CPU +[\d.]+ s\)  "
                      r"ratio base/this: wall ([\d.]+), CPU ([\d.]+)$", proc.stdout, re.M)
    assert [(c, w) for c, w, _, _ in rows] == [("check", "undefined"),
                                               ("explain", "generated")], proc.stdout
    assert all(float(wall) > 0 and float(cpu) > 0 for _, _, wall, cpu in rows), proc.stdout


def test_cost_cliffs_prints_each_shapes_growth_against_the_baseline():
    """benchmarks/cost_cliffs.py --small: the baseline's growth, then a row per shape
    and operation with its two times, its growth and its growth over the baseline's."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "cost_cliffs.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^baseline: check of a chain of n tensors, n [\d,]+: [\d.]+ ms, 4n: "
                     r"[\d.]+ ms, growth [\d.]+ \(size x4\)$", proc.stdout, re.M), proc.stdout
    rows = re.findall(r"^(.+?) +(check|compile|explain|run|fmt|fmtline|tokens|hover) +n +[\d,]+ +"
                      r"[\d.]+ ms  4n +[\d.]+ ms  growth +[\d.]+  over baseline +[\d.]+$",
                      proc.stdout, re.M)
    assert len(rows) == 19, proc.stdout
    assert ("path of n edges, 1-D", "run") in rows, proc.stdout


def test_datalog_peers_gets_identical_answers_from_every_engine():
    """benchmarks/datalog_peers.py --small: every workload run by Fuse (on 1 and 2
    threads), DuckDB (1 and 2 threads) and Nemo where installed, each a whole
    process; the answers must be identical as sets of tuples (else it exits 1), and
    the table has a row a workload, with its ratios to DuckDB."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "datalog_peers.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = ["fuse", "fuse-2"]
    if find_spec("duckdb") is not None:
        expected += ["duckdb-1", "duckdb-2"]
    if find_spec("nmo_python") is not None:
        expected += ["nemo"]
    verdicts = dict(re.findall(r"^(\w+): answers identical across (.+) \([\d,]+ tuples\)$",
                               proc.stdout, re.M))
    assert sorted(verdicts) == ["andersen", "andersen_local", "cspa", "sg", "tc",
                                "tc_forward"], proc.stdout
    for workload, engines in verdicts.items():
        assert engines.split(", ") == expected, (workload, proc.stdout)
    rows = re.findall(r"^\| .+ \(([\d,]+) answers\) \| .+ \|$", proc.stdout, re.M)
    assert len(rows) == 6 and all(int(n.replace(",", "")) > 0 for n in rows), proc.stdout
    if "duckdb-1" in expected:
        assert len(re.findall(r"\| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", proc.stdout, re.M)) == 6, \
            proc.stdout
    # what a process pays before its first fact, measured in the same run
    assert re.search(r"^start-up floor, Python \+ numpy .*: [\d.]+ s, \d+ MB$", proc.stdout,
                     re.M), proc.stdout


def test_format_range_prints_a_ratio_per_size():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "format_range.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = re.findall(r"^ +(\d+) lines  one line's range .* ratio +[\d.]+$", done.stdout, re.M)
    assert rows == ["200", "1000"], done.stdout


@needs_backends
def test_ml_peer_shapes_prints_a_ratio_per_case_and_framework():
    """benchmarks/ml_peer_shapes.py --small: every case's output checked against the
    hand-written NumPy, torch and jax.jit code, then a ratio line for each, and no
    compilation after the first call."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "ml_peer_shapes.py"), "--small"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^(\w+) +(numpy|torch|jax) +fuse +[\d.]+ ms +hand-written +[\d.]+ ms +"
                      r"ratio +[\d.]+ +compilations (\d+) -> (\d+)$", proc.stdout, re.M)
    cases = ["tiny_matmul", "chain4", "broadcast_chain", "softmax_axis0", "layer_norm",
             "many_heads", "conv1d", "rnn_steps", "embed_onehot", "embed_gather"]
    assert [(r[0], r[1]) for r in rows] == [(c, f) for c in cases
                                            for f in ("numpy", "torch", "jax")], proc.stdout
    assert all(before == after for _, _, before, after in rows), proc.stdout
