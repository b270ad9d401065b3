"""ExecutionConfig (issue 13): one configuration object, through compile, `fuse run`
and `fuse explain`: fixpoint strategies, traces, backend="auto", Monte Carlo
projection.  A conformance module: each NumPy run here is also run on torch and
jax with the same configuration (tests/conftest.py)."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, FuseError, compile

ROOT = Path(__file__).resolve().parent.parent
DATALOG = (ROOT / "examples" / "datalog.fuse").read_text()
CHAIN = "".join(f"Edge(N{k}, N{k + 1})\n" for k in range(12)) + \
    "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\nexport Path\n"
PRODUCT = "param A[i,j]\nparam B[j]\nparam P[j]\naxis i = 3, j = {n}\n" \
          "Y[i] = A[i,j] B[j]\nexport Y\n"


def fuse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


# ------------------------------------------------------------ the object
def test_execution_config_is_exported_frozen_and_passed_to_compile():
    assert "ExecutionConfig" in fuse_lang.__all__
    config = ExecutionConfig(fixpoint="naive", max_iterations=50)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.mode = "demand"  # type: ignore[misc]
    assert hash(config) == hash(ExecutionConfig(fixpoint="naive", max_iterations=50))
    program = compile(DATALOG, config=config)
    assert program.config.fixpoint == "naive" and program.max_iterations == 50
    # the keywords keep working, and agree with a configuration that says the same
    assert compile(DATALOG, tolerance=1e-3).config.tolerance == 1e-3
    assert compile(DATALOG, backend="numpy", config=ExecutionConfig(backend="numpy"))


@pytest.mark.parametrize("fields, message", [
    (dict(samples=10), "samples is for projection='monte_carlo'"),
    (dict(seed=1), "seed is for projection='monte_carlo'"),
    (dict(importance={"Y": "P"}), "importance is for projection='monte_carlo'"),
    (dict(estimate=("Y",)), "estimate is for projection='monte_carlo'"),
    (dict(projection="monte_carlo"), "needs samples"),
    (dict(block_size=-4), "block_size must be a whole number of at least 1"),
    (dict(threads=0), "threads must be a whole number of at least 1"),
    (dict(max_iterations=0), "max_iterations must be"),
    (dict(tolerance=-1.0), "tolerance must be"),
    (dict(mode="backward"), "mode must be one of 'forward', 'demand'"),
    (dict(fixpoint="fast"), "fixpoint must be one of"),
    (dict(backend="tpu"), "unknown backend 'tpu'"),
])
def test_contradictory_or_unknown_settings_are_refused_before_running(fields, message):
    with pytest.raises(FuseError, match=message):
        compile(DATALOG, config=ExecutionConfig(**fields))


def test_a_keyword_that_contradicts_the_configuration_is_refused():
    with pytest.raises(FuseError, match=r"compile\(max_iterations=3\) contradicts"):
        compile(DATALOG, max_iterations=3, config=ExecutionConfig(max_iterations=5))
    with pytest.raises(FuseError, match="config must be a fuse_lang.ExecutionConfig"):
        compile(DATALOG, config={"mode": "forward"})  # type: ignore[arg-type]


def test_importance_weights_must_name_a_fitting_tensor():
    config = dict(projection="monte_carlo", samples=10, seed=0)
    with pytest.raises(FuseError, match="importance names `Z`"):
        compile(PRODUCT.format(n=100), config=ExecutionConfig(**config, importance={"Z": "P"}))
    with pytest.raises(FuseError, match="1-D tensor of the program with 100 values"):
        compile(PRODUCT.format(n=100), config=ExecutionConfig(**config, importance={"Y": "A"}))


# ------------------------------------------------------------ fixpoints
@pytest.mark.parametrize("strategy", ["semi_naive", "naive"])
def test_both_fixpoint_strategies_give_the_same_closure(strategy):
    result = compile(CHAIN, config=ExecutionConfig(fixpoint=strategy)).run()["Path"]
    expected = np.triu(np.ones((13, 13)), 1)
    np.testing.assert_array_equal(result, expected)


def test_non_convergence_names_the_tensor_and_the_last_change():
    with pytest.raises(FuseError, match=r"Path did not reach a fixpoint in 3 rounds .*"
                                        r"the last round added \d+ facts"):
        compile(CHAIN, config=ExecutionConfig(max_iterations=3)).run()
    with pytest.raises(FuseError, match=r"Path did not reach a fixpoint in 3 rounds \(the "
                                        r"round limit; the last round still changed it\)"):
        compile(CHAIN, config=ExecutionConfig(max_iterations=3, fixpoint="naive")).run()


def test_explain_says_which_strategy_each_group_gets(tmp_path):
    (tmp_path / "d.fuse").write_text(DATALOG)
    naive = fuse("explain", str(tmp_path / "d.fuse"), "--fixpoint", "naive")
    assert naive.returncode == 0, naive.stderr
    assert "Execution: fixpoint=naive" in naive.stdout
    assert "fixpoint of Ancestor: naive" in naive.stdout
    numeric = tmp_path / "n.fuse"
    numeric.write_text("param W[i,j]\naxis i = 3, j = 3\nX[i] = 0.1 W[i,j] X[j] + 1\n"
                       "export X\n")
    fallback = fuse("explain", str(numeric), "--max-iterations", "9")
    assert "falls back to naive" in fallback.stdout
    data = json.loads(fuse("explain", str(numeric), "--format", "json",
                           "--max-iterations", "9").stdout)
    assert data["execution"]["settings"] == [["max_iterations", "9"]]
    refused = fuse("explain", str(numeric), "--samples", "4")
    assert refused.returncode == 2 and "samples is for projection" in refused.stderr


# ------------------------------------------------------------ traces
@pytest.mark.parametrize("strategy", ["semi_naive", "naive"])
def test_trace_is_plain_data_per_equation_and_per_round(strategy):
    result = compile(CHAIN, config=ExecutionConfig(trace=True, fixpoint=strategy)).execute()
    json.dumps(result.trace)  # plain data
    by_tensor = {e["tensor"]: e for e in result.trace["equations"]}
    assert by_tensor["Path"]["shape"] == [13, 13] and by_tensor["Path"]["nonzeros"] == 78
    assert by_tensor["Edge"]["nonzeros"] == 12 and by_tensor["Path"]["seconds"] >= 0
    (fixpoint,) = result.trace["fixpoints"]
    assert fixpoint["group"] == ["Path"] and fixpoint["strategy"] == strategy
    rounds = fixpoint["rounds"]
    assert [r["iteration"] for r in rounds] == list(range(1, len(rounds) + 1))
    if strategy == "semi_naive":  # the facts beyond the 12 edges, found round by round
        assert sum(r["facts_added"] for r in rounds) == 78 - 12 and rounds[-1]["facts_added"] == 0
    else:
        assert rounds[-1]["change"] == 0 and rounds[0]["change"] == 1
    assert compile(CHAIN).execute().trace is None  # off by default


def test_trace_says_where_a_runs_time_went_by_phase(tmp_path):
    (tmp_path / "edge.tsv").write_text("".join(f"{k}\t{k + 1}\n" for k in range(30)))
    (tmp_path / "p.fuse").write_text('Edge(x,y) = "edge.tsv"\nPath(x,y) = Edge(x,y)\n'
                                     'Path(x,z) = Path(x,y) Edge(y,z)\n"path.tsv" = Path(x,y)\n')
    program = compile((tmp_path / "p.fuse").read_text(), base_dir=tmp_path,
                      config=ExecutionConfig(trace=True))
    phases = program.execute().trace["phases"]
    assert [p["phase"] for p in phases] == ["check", "plan", "load", "rules", "write"]
    assert all(p["seconds"] >= 0 for p in phases) and phases[0]["seconds"] > 0
    assert len((tmp_path / "path.tsv").read_text().splitlines()) == 30 * 31 // 2
    text = fuse("run", str(tmp_path / "p.fuse"), "--trace").stdout
    table = text[text.index("trace: phases"):text.index("trace: equations")].split()
    assert table[6::2] == ["check", "plan", "load", "rules", "write"]


def test_fuse_run_trace_prints_tables_and_json(tmp_path):
    path = tmp_path / "chain.fuse"
    path.write_text(CHAIN)
    text = fuse("run", str(path), "--trace")
    assert text.returncode == 0, text.stderr
    assert "trace: equations" in text.stdout and "non-zeros" in text.stdout
    assert "trace: fixpoint of Path (semi_naive)" in text.stdout
    assert "facts added" in text.stdout
    data = json.loads(fuse("run", str(path), "--trace", "--fixpoint", "naive", "--format",
                           "json").stdout)
    assert data["trace"]["fixpoints"][0]["strategy"] == "naive"
    assert "trace" not in json.loads(fuse("run", str(path), "--format", "json").stdout)


# ------------------------------------------------------------ backend="auto"
def test_auto_backend_says_what_it_picked_and_why(tmp_path):
    result = compile(DATALOG, backend="auto").execute()
    assert result.backend["backend"] == "numpy" and "relational" in result.backend["why"]
    small = compile(PRODUCT.format(n=10), config=ExecutionConfig(backend="auto"))
    picked = small.execute({"A": np.ones((3, 10)), "B": np.ones(10)}).backend
    assert picked["backend"] == "numpy" and "small program" in picked["why"]
    assert compile(DATALOG).execute().backend is None
    path = tmp_path / "d.fuse"
    path.write_text(DATALOG)
    out = fuse("run", str(path), "--backend", "auto")
    assert out.returncode == 0 and "backend: numpy on cpu (relational program" in out.stdout


def test_auto_backend_on_a_large_dense_program_follows_the_gpu_rule():
    text = ("axis i = 2000, j = 2000, k = 2000\nparam A[i,j], B[j,k]\n"
            "C[i,k] = A[i,j] B[j,k]\nexport C\n")
    choice = compile(text, backend="auto").backend_choice
    torch = pytest.importorskip("torch")

    if torch.cuda.is_available():
        assert choice["backend"] == "torch" and choice["device"] == "cuda"
    else:
        assert choice["backend"] in ("numpy", "jax")
        assert "large dense program" in choice["why"]
    on_cpu = compile(text, backend="auto", device="cpu").backend_choice
    assert on_cpu["backend"] == "numpy" and "device cpu asked" in on_cpu["why"]


# ------------------------------------------------------------ Monte Carlo
def _product(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(1.0, 1.0, size=(3, n)), rng.uniform(size=n)


def _estimate(n, samples, seed, inputs, importance=None, backend="numpy"):
    config = ExecutionConfig(projection="monte_carlo", samples=samples, seed=seed,
                             importance=importance or {})
    result = compile(PRODUCT.format(n=n), backend=backend, precision="fp64",
                     config=config).execute(inputs)
    return result.outputs["Y"], result.estimates["Y"]["standard_error"]


def test_monte_carlo_estimates_come_with_standard_errors_and_a_fixed_seed_repeats():
    A, B = _product(2000, np.random.default_rng(0))
    inputs = {"A": A, "B": B, "P": np.ones(2000)}
    first, error = _estimate(2000, 200, 7, inputs)
    again, _ = _estimate(2000, 200, 7, inputs)
    np.testing.assert_array_equal(first, again)
    assert error.shape == (3,) and (error > 0).all()
    assert (np.abs(first - A @ B) < 5 * error).all()


@pytest.mark.reference_only  # many runs: the estimator itself, backends compared below
@pytest.mark.parametrize("importance", [None, {"Y": "P"}])
def test_monte_carlo_is_unbiased_within_four_standard_errors(importance):
    n, samples = 1000, 100
    A, B = _product(n, np.random.default_rng(1))
    exact = A @ B
    weights = np.abs(A).sum(axis=0) * B + 0.01  # roughly the terms' size
    inputs = {"A": A, "B": B, "P": weights}
    inside, means = 0, []
    for seed in range(60):
        estimate, error = _estimate(n, samples, seed, inputs, importance)
        inside += int((np.abs(estimate - exact) <= 4 * error).sum())
        means.append(estimate)
    assert inside >= 0.97 * 60 * 3  # ~99.99% expected within 4 standard errors
    # the mean over seeds is unbiased: within 4 standard errors of that mean
    spread = np.std(means, axis=0, ddof=1) / math.sqrt(len(means))
    assert (np.abs(np.mean(means, axis=0) - exact) <= 4 * spread).all()


@pytest.mark.reference_only
def test_monte_carlo_error_shrinks_as_one_over_sqrt_samples():
    n = 4000
    A, B = _product(n, np.random.default_rng(2))
    inputs = {"A": A, "B": B, "P": np.ones(n)}
    small = np.mean([_estimate(n, 100, s, inputs)[1] for s in range(10)])
    large = np.mean([_estimate(n, 1600, s, inputs)[1] for s in range(10)])
    assert 3.0 < small / large < 5.5  # 16x the samples: 4x smaller


@pytest.mark.reference_only
@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_monte_carlo_draws_the_same_samples_on_every_backend(backend):
    pytest.importorskip(backend)
    A, B = _product(500, np.random.default_rng(3))
    inputs = {"A": A, "B": B, "P": B}
    for importance in (None, {"Y": "P"}):
        reference, error = _estimate(500, 50, 11, inputs, importance)
        other, other_error = _estimate(500, 50, 11, inputs, importance, backend)
        np.testing.assert_allclose(other, reference, rtol=1e-9)
        np.testing.assert_allclose(other_error, error, rtol=1e-9)


def test_fuse_run_and_explain_show_monte_carlo(tmp_path):
    rng = np.random.default_rng(4)
    np.save(tmp_path / "a.npy", rng.normal(size=(3, 5000)))
    np.save(tmp_path / "b.npy", rng.uniform(size=5000))
    path = tmp_path / "p.fuse"
    path.write_text('A[i,j] = "a.npy"\nB[j] = "b.npy"\nY[i] = A[i,j] B[j]\nexport Y\n')
    flags = ["--projection", "monte_carlo", "--samples", "50", "--seed", "1"]
    out = fuse("run", str(path), *flags)
    assert out.returncode == 0, out.stderr
    assert "Y  Monte Carlo over `j`: 50 of 5000 values, standard error" in out.stdout
    data = json.loads(fuse("run", str(path), *flags, "--format", "json").stdout)
    assert len(data["estimates"]["Y"]["standard_error"]) == 3
    explained = fuse("explain", str(path), *flags)
    assert "Monte Carlo over `j`: 50 of 5000 values drawn uniformly; 99.0% of the " \
           "contraction's work saved" in explained.stdout


# ------------------------------------------------------------ blocked contraction
JOIN = ("axis i = 60, j = 50, k = 40, l = 30\nparam A[i,j], B[j,k], C[k,l]\n"
        "M[i] max= A[i,j] B[j,k]\nN[i,k] = A[i,j] B[j,k]\nL[i,l] = A[i,j] B[j,k] C[k,l]\n"
        "S = A[i,j] B[j,k]\nexport M\nexport N\nexport L\nexport S\n")


def _join_inputs() -> dict:
    rng = np.random.default_rng(5)
    return {"A": rng.normal(size=(60, 50)), "B": rng.normal(size=(50, 40)),
            "C": rng.normal(size=(40, 30))}


@pytest.mark.parametrize("block_size", [7, 500, 2000])
def test_blocked_contraction_gives_the_unblocked_result(block_size):
    inputs = _join_inputs()
    exact = compile(JOIN, precision="fp64").run(inputs)
    blocked = compile(JOIN, precision="fp64",
                      config=ExecutionConfig(block_size=block_size)).run(inputs)
    for name in exact:
        np.testing.assert_allclose(blocked[name], exact[name], rtol=1e-10, atol=1e-10)


def test_a_join_over_the_memory_guard_runs_in_blocks():
    # a max over j and k of A[i,j] B[j,k] joins first: 200^3 floats (32 MB)
    text = ("axis i = 200, j = 200, k = 200\nparam A[i,j], B[j,k]\n"
            "M[i] max= A[i,j] B[j,k]\nexport M\n")
    rng = np.random.default_rng(6)
    inputs = {"A": rng.normal(size=(200, 200)), "B": rng.normal(size=(200, 200))}
    with pytest.raises(FuseError, match="while computing M"):
        compile(text, memory_limit=10_000_000).run(inputs)
    blocked = compile(text, memory_limit=10_000_000,
                      config=ExecutionConfig(block_size=100_000)).run(inputs)["M"]
    expected = (inputs["A"][:, :, None] * inputs["B"][None, :, :]).max(axis=(1, 2))
    np.testing.assert_allclose(blocked, expected, rtol=1e-5)


def test_explain_shows_the_blocks_and_the_peak(tmp_path):
    path = tmp_path / "j.fuse"
    path.write_text(JOIN)
    out = fuse("explain", str(path), "--block-size", "1000")
    assert out.returncode == 0, out.stderr
    assert "Execution: block_size=1000" in out.stdout
    # split as the run splits it: along i (kept, 60 values), never finer than one
    # value of i a block, so 60 blocks of 50 x 40 elements (not 120 of 1k)
    assert "line 3: M: intermediate of 120k elements in 60 blocks; peak 2k elements" \
        in out.stdout
    run = fuse("run", str(path), "--block-size", "1000")
    assert run.returncode == 0, run.stderr


def test_monte_carlo_per_equation_estimates_only_the_tensors_named(tmp_path):
    text = PRODUCT.format(n=3000) + "Z[i] = A[i,j] P[j]\nexport Z\n"
    A, B = _product(3000, np.random.default_rng(7))
    inputs = {"A": A, "B": B, "P": B}
    config = ExecutionConfig(projection="monte_carlo", samples=100, seed=2, estimate=("Z",))
    result = compile(text, precision="fp64", config=config).execute(inputs)
    assert set(result.estimates) == {"Z"}
    np.testing.assert_allclose(result.outputs["Y"], A @ B, rtol=1e-9)  # exact
    assert not np.allclose(result.outputs["Z"], A @ B)
    with pytest.raises(FuseError, match="estimate names `W`"):
        compile(text, config=ExecutionConfig(projection="monte_carlo", samples=10,
                                             estimate=("W",)))
    path = tmp_path / "two.fuse"
    path.write_text(text.replace("param P[j]\n", "").replace("P[j]", "B[j]")
                    .replace("param A[i,j]\nparam B[j]\n", 'A[i,j] = "a.npy"\nB[j] = "b.npy"\n'))
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    out = fuse("explain", str(path), "--projection", "monte_carlo", "--samples", "30",
               "--estimate", "Z")
    assert out.returncode == 0, out.stderr
    assert "Z: Monte Carlo over `j`" in out.stdout and "Y: Monte Carlo" not in out.stdout
