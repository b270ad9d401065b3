"""The GPU paths of execution controls (issue 13) and training (issue 17) on a real
NVIDIA GPU, torch and jax alike; skipped cleanly where there is none (as on CI).

The rest of the GPU checking is the conformance suite itself: with
FUSE_CONFORMANCE_DEVICE=cuda (tests/conftest.py) every program of the conformance
modules (demand mode, Monte Carlo, blocked contraction, fixpoints, sparse
relations...) runs on torch and jax on the GPU and is compared with NumPy.  The
device check (docs/execution.md) runs both.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from test_training import REGRESSION  # (the regression every training test fits)

import fuse_lang
from fuse_lang import ExecutionConfig


def _gpu_backends() -> list[str]:
    found = []
    if importlib.util.find_spec("torch"):
        import torch

        if torch.cuda.is_available():
            found.append("torch")
    if importlib.util.find_spec("jax"):
        import jax

        try:
            if jax.devices("gpu"):
                found.append("jax")
        except RuntimeError:  # no GPU platform in this jax
            pass
    return found


GPU = _gpu_backends()
pytestmark = [pytest.mark.cuda]
BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(
    name not in GPU, reason=f"no NVIDIA GPU for {name} on this machine"))
    for name in ("torch", "jax")]

CHAIN = "Parent(x,y) = \"parent.tsv\"\nAnc(x,y) = Parent(x,y)\n" \
        "Anc(x,z) = Anc(x,y) Parent(y,z)\nAnc(P0, x)?\n"


def _regression_data(folder, n=64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    np.save(folder / "x.npy", x)
    np.save(folder / "t.npy", x @ np.array([1.0, -2.0, 0.5]) + 0.3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_on_the_gpu_learns_resumes_and_keeps_the_params_there(tmp_path, backend):
    _regression_data(tmp_path)
    program = fuse_lang.compile(REGRESSION, backend=backend, device="cuda", base_dir=tmp_path)
    assert program.backend.device.startswith("cuda")
    result = program.train(optimizer="adam", learning_rate=0.05, steps=120)
    assert result.losses[-1] < 0.05 * result.losses[0]
    np.testing.assert_allclose(result.params["W"], [1.0, -2.0, 0.5], atol=0.1)
    checkpoint = tmp_path / "ck.safetensors"
    whole = program.train(steps=12, batch={"n": 16}, learning_rate=0.05)
    program.train(steps=5, batch={"n": 16}, learning_rate=0.05, checkpoint=checkpoint)
    rest = program.train(steps=12, batch={"n": 16}, learning_rate=0.05, resume=checkpoint)
    np.testing.assert_allclose(rest.losses, whole.losses[5:], rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_on_the_gpu_takes_the_steps_it_takes_on_the_cpu(tmp_path, backend):
    _regression_data(tmp_path)
    losses = {}
    for device in ("cpu", "cuda"):
        program = fuse_lang.compile(REGRESSION, backend=backend, device=device,
                                    base_dir=tmp_path)
        losses[device] = program.train(steps=30, seed=3, batch={"n": 16}).losses
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_demand_query_over_a_large_relation_file_on_the_gpu(tmp_path, backend):
    size = 20_000  # a random tree, each symbol's parent drawn among those before it
    rng = np.random.default_rng(0)
    rows = "".join(f"P{rng.integers(max(k // 2, 1)) if k > 1 else 0}\tP{k}\n"
                   for k in range(1, size))
    (tmp_path / "parent.tsv").write_text(rows, encoding="utf-8")
    config = ExecutionConfig(mode="demand")
    expected = fuse_lang.compile(CHAIN, config=config, base_dir=tmp_path).execute()
    got = fuse_lang.compile(CHAIN, backend=backend, device="cuda", config=config,
                            base_dir=tmp_path).execute()
    assert len(expected.queries[0].tuples) == size - 1  # P0 is every symbol's ancestor
    assert got.queries[0].tuples == expected.queries[0].tuples


@pytest.mark.parametrize("backend", BACKENDS)
def test_monte_carlo_on_the_gpu_is_numpys_estimator(backend):
    text = "param A[i,j]\nparam B[j]\naxis i = 3, j = 100000\nY[i] = A[i,j] B[j]\nexport Y\n"
    rng = np.random.default_rng(0)
    inputs = {"A": rng.normal(1.0, 1.0, size=(3, 100_000)), "B": rng.uniform(size=100_000)}
    config = ExecutionConfig(projection="monte_carlo", samples=1000, seed=11)
    expected = fuse_lang.compile(text, config=config).execute(inputs)
    got = fuse_lang.compile(text, backend=backend, device="cuda", config=config).execute(inputs)
    np.testing.assert_allclose(got.outputs["Y"], expected.outputs["Y"], rtol=1e-3)
    np.testing.assert_allclose(got.estimates["Y"]["standard_error"],
                               expected.estimates["Y"]["standard_error"], rtol=1e-3)
    exact = inputs["A"] @ inputs["B"]
    assert (np.abs(got.outputs["Y"] - exact) < 5 * got.estimates["Y"]["standard_error"]).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_blocked_contraction_and_a_trace_on_the_gpu(backend):
    text = "param A[i,j], B[j,k]\naxis i = 300, j = 200, k = 300\n" \
           "C[i,k] = A[i,j] B[j,k]\nexport C\n"
    rng = np.random.default_rng(1)
    inputs = {"A": rng.normal(size=(300, 200)), "B": rng.normal(size=(200, 300))}
    config = ExecutionConfig(block_size=50, trace=True)
    result = fuse_lang.compile(text, backend=backend, device="cuda", precision="fp64",
                               config=config).execute(inputs)
    np.testing.assert_allclose(result.outputs["C"], inputs["A"] @ inputs["B"], rtol=1e-9)
    (entry,) = [e for e in result.trace["equations"] if e["tensor"] == "C"]
    assert entry["seconds"] >= 0


def test_backend_auto_picks_the_gpu_for_a_large_dense_program():
    if "torch" not in GPU:
        pytest.skip("no NVIDIA GPU for torch on this machine")
    text = "axis i = 2000, j = 2000, k = 2000\nparam A[i,j], B[j,k]\nC[i,k] = A[i,j] B[j,k]\n" \
           "export C\n"
    program = fuse_lang.compile(text, backend="auto")
    assert program.backend_choice["backend"] == "torch"
    assert program.backend_choice["device"] == "cuda"
    assert program.execute().backend["device"].startswith("cuda")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deep_chain_on_the_gpu_is_searched_on_the_host_and_answered_alike(tmp_path, backend):
    from fuse_lang.run.fixpoint import closure

    size = 5_000
    (tmp_path / "parent.tsv").write_text("".join(f"P{k}\tP{k + 1}\n" for k in range(size - 1)),
                                         encoding="utf-8")
    config = ExecutionConfig(mode="demand", trace=True)
    expected = fuse_lang.compile(CHAIN, config=config, base_dir=tmp_path).execute()
    got = fuse_lang.compile(CHAIN, backend=backend, device="cuda", compiled=False,
                            config=config, base_dir=tmp_path).execute()
    assert got.queries[0].tuples == expected.queries[0].tuples
    assert len(got.queries[0].tuples) == size - 1
    (fixpoint,) = got.trace["fixpoints"]
    assert fixpoint["rounds"][closure.SEARCH_AFTER].get("searched")
