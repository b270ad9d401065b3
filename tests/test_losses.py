"""log_softmax and cross_entropy (docs/language.md, Builtins): numerically stable
on every backend (extreme logits give no NaN and PyTorch's values), differentiable
for training, and misuse said in words (a code at check time, a run error for
targets that are no class ids)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

torch = pytest.importorskip("torch")
F = torch.nn.functional

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ["numpy", "torch",
            pytest.param("jax", marks=pytest.mark.skipif(
                not importlib.util.find_spec("jax"), reason="no jax"))]

# rows of extreme logits: ±1e4 next to ordinary ones, a row all equal, a row
# where log(softmax) underflows to -inf for every class but one
LOGITS = np.array([[1e4, -1e4, 0.0, 3.0],
                   [0.0, 0.0, 0.0, 0.0],
                   [-1e4, 2.0, 3.0, -1e4],
                   [5e3, 5e3, -5e3, 1.0],
                   [-1e4, -1e4, -1e4, -1e4]], dtype=np.float32)
IDS = np.array([1, 0, 3, 2, 1], dtype=np.float32)

PROGRAM = """Z[n,v] = "z.npy"
T[n] = "t.npy"
Y[n,v] = "y.npy"
LS[n,v.] = log_softmax(Z[n,v])
CE[n] = cross_entropy(Z[n,v], T[n], axis=v)
CS[n] = cross_entropy(Z[n,v], T[n], axis=v, smoothing=0.1)
CY[n] = cross_entropy(Z[n,v], Y[n,v], axis=v)
CYS[n] = cross_entropy(Z[n,v], Y[n,v], axis=v, smoothing=0.25)
L avg= cross_entropy(Z[n,v], T[n], axis=v)
export LS, CE, CS, CY, CYS, L
"""


def _files(folder: Path, targets: np.ndarray = IDS) -> None:
    rng = np.random.default_rng(0)
    probs = rng.uniform(size=LOGITS.shape).astype(np.float32)
    np.save(folder / "z.npy", LOGITS)
    np.save(folder / "t.npy", targets)
    np.save(folder / "y.npy", probs / probs.sum(axis=1, keepdims=True))


def _expected(folder: Path) -> dict[str, np.ndarray]:
    z = torch.from_numpy(LOGITS)
    ids = torch.from_numpy(IDS).long()
    y = torch.from_numpy(np.load(folder / "y.npy"))
    return {"LS": F.log_softmax(z, dim=1),
            "CE": F.cross_entropy(z, ids, reduction="none"),
            "CS": F.cross_entropy(z, ids, reduction="none", label_smoothing=0.1),
            "CY": F.cross_entropy(z, y, reduction="none"),
            "CYS": F.cross_entropy(z, y, reduction="none", label_smoothing=0.25),
            "L": F.cross_entropy(z, ids)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_extreme_logits_give_pytorchs_values_and_no_nan(tmp_path, backend):
    _files(tmp_path)
    program = fuse_lang.compile(PROGRAM, backend=backend, base_dir=tmp_path)
    result = program.run()
    for name, expected in _expected(tmp_path).items():
        got = np.asarray(result[name], dtype=np.float64)
        assert np.isfinite(got).all(), f"{name} on {backend}: {got}"
        np.testing.assert_allclose(got, expected.double().numpy(), rtol=1e-6, atol=1e-3,
                                   err_msg=f"{name} on {backend}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_log_of_softmax_underflows_where_log_softmax_does_not(tmp_path):
    """The reason for the builtin: log(softmax(z)) is -inf at 1e4 apart."""
    _files(tmp_path)
    text = PROGRAM + "P[n,v.] = softmax(Z[n,v])\nNaive[n,v] = log(P[n,v])\nexport Naive\n"
    result = fuse_lang.compile(text, base_dir=tmp_path).run()
    assert np.isinf(result["Naive"]).any()
    assert np.isfinite(result["LS"]).all()


TRAIN = """X[n,j] = "x.npy"
T[n] = "t.npy"
axis v = 4
param W[v,j]
Z[n,v] = W[v,j] X[n,j]
L avg= cross_entropy(Z[n,v], T[n], axis=v, smoothing=0.05)
train L
"""


def _train_data(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 3))
    ids = rng.integers(0, 4, size=16).astype(np.float64)
    np.save(folder / "x.npy", x)
    np.save(folder / "t.npy", ids)
    return x, ids


@pytest.mark.parametrize("backend", ["torch", pytest.param("jax", marks=pytest.mark.skipif(
    not importlib.util.find_spec("optax"), reason="no jax/optax"))])
def test_gradient_is_pytorchs(tmp_path, backend):
    x, ids = _train_data(tmp_path)
    program = fuse_lang.compile(TRAIN, backend=backend, base_dir=tmp_path, precision="fp64")
    w = np.random.default_rng(5).normal(size=(4, 3)) * 1e3  # extreme logits
    value, grads = program.gradients({"W": w})
    wt = torch.tensor(w, requires_grad=True)
    loss = F.cross_entropy(torch.tensor(x) @ wt.T, torch.tensor(ids).long(),
                           label_smoothing=0.05)
    loss.backward()
    assert value == pytest.approx(loss.item(), rel=1e-9)
    assert np.isfinite(grads["W"]).all()
    np.testing.assert_allclose(grads["W"], wt.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_training_with_class_ids_lowers_the_loss_alike_on_torch_and_jax(tmp_path):
    pytest.importorskip("optax")
    _train_data(tmp_path)
    losses = {}
    for backend in ("torch", "jax"):
        program = fuse_lang.compile(TRAIN, backend=backend, base_dir=tmp_path, precision="fp64")
        losses[backend] = program.train(optimizer="adam", learning_rate=0.1, steps=30,
                                        seed=0).losses
    assert losses["torch"][-1] < 0.8 * losses["torch"][0]
    np.testing.assert_allclose(losses["jax"], losses["torch"], rtol=1e-6)


def _fuse(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})


@pytest.mark.parametrize("targets, words", [
    (np.array([1, 0.5, 3, 2, 1], dtype=np.float32), "0.5, which is no class id"),
    (np.array([1, 0, 4, 2, 1], dtype=np.float32), "class id 4, outside the 4 of its axis"),
])
def test_targets_that_are_no_class_ids_are_a_run_error(tmp_path, targets, words):
    _files(tmp_path, targets)
    (tmp_path / "p.fuse").write_text(PROGRAM)
    done = _fuse("run", str(tmp_path / "p.fuse"))
    assert done.returncode == 1, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def test_misuse_is_checked_with_codes(tmp_path):
    _files(tmp_path)
    (tmp_path / "p.fuse").write_text(
        'Z[n,v] = "z.npy"\nT[n] = "t.npy"\n'
        "A[n] = cross_entropy(Z[n,v], T[n], axis=w)\n"
        "B[n,v] = cross_entropy(Z[n,v], T[n], axis=v)\n"
        "C[n] = cross_entropy(Z[n,v], T[m], axis=v)\n"
        "D[n] = cross_entropy(Z[n,v], 1.5, axis=v, smoothing=2)\n"
        "E[n] = cross_entropy(Z[n,v], T[n])\n"
        "export A, B, C, D, E\n")
    done = _fuse("check", "--format", "json", str(tmp_path / "p.fuse"))
    assert done.returncode == 1
    found = [(d["code"], d["line"]) for d in json.loads(done.stdout)[
        "diagnostics"] if d["severity"] == "error"]
    assert ("bad-argument", 3) in found  # axis=w: no index of the logits
    assert ("bad-argument", 4) in found  # the class axis kept on the left
    assert ("cross-entropy-targets", 5) in found  # T[m]
    assert ("cross-entropy-targets", 6) in found  # 1.5
    assert ("bad-argument", 6) in found  # smoothing=2
    assert ("argument-count", 7) in found  # axis= is needed


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_fill_is_a_select(tmp_path, backend):
    """PyTorch's masked_fill before a softmax, as docs/language.md writes it."""
    scores = np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32)
    np.save(tmp_path / "s.npy", scores)
    text = ('S[q,k] = "s.npy"\nM[q,k] = select(k <= q, S[q,k], -1e9)\n'
            "P[q,k.] = softmax(M[q,k])\nexport P\n")
    got = fuse_lang.compile(text, backend=backend, base_dir=tmp_path).run()["P"]
    s = torch.from_numpy(scores)
    mask = torch.ones(4, 4).tril() == 0
    expected = torch.softmax(s.masked_fill(mask, float("-inf")), dim=1)
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-6, atol=1e-7)
