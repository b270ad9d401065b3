"""`gather(x, ids, axis=v)` (docs/language.md, Builtins): integer token ids index
an embedding's rows on every backend, differentiably; with an index shared by x
and the ids it picks one value per row (torch.gather).  Through the API and CLI."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.run.program import FuseError

torch = pytest.importorskip("torch")
F = torch.nn.functional

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ["numpy", "torch", pytest.param("jax", marks=pytest.mark.skipif(
    not importlib.util.find_spec("jax"), reason="no jax"))]
FRAMEWORKS = ["torch", pytest.param("jax", marks=pytest.mark.skipif(
    not importlib.util.find_spec("optax"), reason="no jax/optax"))]

LOOKUPS = """Emb[v,d] = "emb.npy"
Tok[t] = "tok.npy"
Batch[b,t] = "batch.npy"
LP[t,v] = "lp.npy"
E[t,d] = gather(Emb[v,d], Tok[t], axis=v)
EB[b,t,d] = gather(Emb[v,d], Batch[b,t], axis=v)
P[t] = gather(LP[t,v], Tok[t], axis=v)
S = gather(Emb[v,d], Tok[t], axis=v) E[t,d]
export E, EB, P, S
"""


def _lookup_files(folder: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {"emb": rng.normal(size=(7, 3)).astype(np.float32),
              "tok": np.array([6, 0, 2, 2, 1], dtype=np.int64),
              "batch": np.array([[6, 0, 2, 5, 5], [2, 1, 3, 0, 4]], dtype=np.int64),
              "lp": rng.normal(size=(5, 7)).astype(np.float32)}
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    return arrays


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_at_token_ids(tmp_path, backend):
    a = _lookup_files(tmp_path)
    result = fuse_lang.compile(LOOKUPS, backend=backend, base_dir=tmp_path).run()
    emb, tok = torch.from_numpy(a["emb"]), torch.from_numpy(a["tok"])
    np.testing.assert_allclose(np.asarray(result["E"]), F.embedding(tok, emb).numpy())
    np.testing.assert_allclose(np.asarray(result["EB"]),
                               F.embedding(torch.from_numpy(a["batch"]), emb).numpy())
    picked = torch.gather(torch.from_numpy(a["lp"]), 1, tok[:, None])[:, 0]
    np.testing.assert_allclose(np.asarray(result["P"]), picked.numpy())
    np.testing.assert_allclose(float(result["S"]), float((F.embedding(tok, emb) ** 2).sum()),
                               rtol=1e-5)


BIGRAM = """Tok[n] = "tok.npy"
Next[n] = "next.npy"
axis v = 5
axis d = 4
param Emb[v,d], Out[v,d]
H[n,d] = gather(Emb[v,d], Tok[n], axis=v)
Z[n,v] = Out[v,d] H[n,d]
L avg= cross_entropy(Z[n,v], Next[n], axis=v)
train L
"""


def _bigram_data(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of a cycle 0 1 2 3 4 0 ... with some noise: the next id is learnable."""
    rng = np.random.default_rng(1)
    tok = rng.integers(0, 5, size=64)
    nxt = np.where(rng.uniform(size=64) < 0.9, (tok + 1) % 5, rng.integers(0, 5, size=64))
    np.save(folder / "tok.npy", tok)
    np.save(folder / "next.npy", nxt)
    return tok, nxt


@pytest.mark.parametrize("backend", FRAMEWORKS)
def test_the_gradient_is_pytorchs_embedding_gradient(tmp_path, backend):
    tok, nxt = _bigram_data(tmp_path)
    rng = np.random.default_rng(2)
    params = {"Emb": rng.normal(size=(5, 4)), "Out": rng.normal(size=(5, 4))}
    program = fuse_lang.compile(BIGRAM, backend=backend, base_dir=tmp_path, precision="fp64")
    value, grads = program.gradients(params)
    emb = torch.tensor(params["Emb"], requires_grad=True)
    out = torch.tensor(params["Out"], requires_grad=True)
    loss = F.cross_entropy(F.embedding(torch.tensor(tok), emb) @ out.T, torch.tensor(nxt))
    loss.backward()
    assert value == pytest.approx(loss.item(), rel=1e-9)
    np.testing.assert_allclose(grads["Emb"], emb.grad.numpy(), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(grads["Out"], out.grad.numpy(), rtol=1e-7, atol=1e-10)


def test_a_bigram_model_on_token_ids_learns_alike_on_torch_and_jax(tmp_path):
    pytest.importorskip("optax")
    _bigram_data(tmp_path)
    losses = {}
    for backend in ("torch", "jax"):
        program = fuse_lang.compile(BIGRAM, backend=backend, base_dir=tmp_path,
                                    precision="fp64")
        losses[backend] = program.train(optimizer="adam", learning_rate=0.1, steps=60,
                                        seed=0).losses
    assert losses["torch"][-1] < 0.6  # ln 5 = 1.61 at chance; the cycle's noise ≈ 0.45
    np.testing.assert_allclose(losses["jax"], losses["torch"], rtol=1e-6)


def _fuse(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, cwd=folder, env={"PYTHONPATH": str(ROOT), "PATH": ""})


@pytest.mark.parametrize("ids, words", [
    (np.array([6, 0.5, 2, 2, 1]), "hold 0.5, which is no position"),
    (np.array([7, 0, 2, 2, 1]), "hold the position 7, outside the 7 of its axis"),
    (np.array([-1, 0, 2, 2, 1]), "hold the position -1, outside"),
])
def test_ids_that_are_no_positions_are_a_run_error(tmp_path, ids, words):
    _lookup_files(tmp_path)
    np.save(tmp_path / "tok.npy", ids)
    (tmp_path / "p.fuse").write_text(LOOKUPS)
    done = _fuse(tmp_path, "run", "p.fuse")
    assert done.returncode == 1, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def test_misuse_is_checked(tmp_path):
    _lookup_files(tmp_path)
    (tmp_path / "p.fuse").write_text(
        'Emb[v,d] = "emb.npy"\nTok[t] = "tok.npy"\n'
        "A[t,d] = gather(Emb[v,d], Tok[t], axis=w)\n"
        "B[t,v,d] = gather(Emb[v,d], Tok[t], axis=v)\n"
        "C[t,d] = gather(Emb[v,d], Tok[v], axis=v)\n"
        "D[d] = gather(Emb[v,d], Tok[t], axis=v)\n"
        "E[t,d] = gather(Emb[v,d], Tok[t])\n"
        "export A, B, C, D, E\n")
    done = _fuse(tmp_path, "check", "--format", "json", "p.fuse")
    assert done.returncode == 1
    found = {(d["code"], d["line"]): d["message"] for d in json.loads(done.stdout)[
        "diagnostics"] if d["severity"] == "error"}
    assert "first argument (v, d)" in found[("bad-argument", 3)]  # axis=w
    assert "cannot keep it" in found[("bad-argument", 4)]  # v kept on the left
    assert "not indexed by it" in found[("bad-argument", 5)]  # Tok[v]
    assert "summed over it before the lookup" in found[("bad-argument", 6)]  # t only in ids
    assert ("argument-count", 7) in found  # axis= is needed


def test_a_traced_jax_run_makes_ids_out_of_range_nan_not_an_edge_row(tmp_path):
    """A traced graph cannot stop on values: in one (the jax export here, a training
    step) an id outside the rows reads NaN (jax's own indexing would clamp it to the
    last row), and a class id no class matches makes that row's cross-entropy NaN
    rather than 0.  A jitted run that read such a NaN runs those equations again
    eagerly and stops as NumPy does (tests/test_backend_parity_audit.py)."""
    pytest.importorskip("jax")
    _lookup_files(tmp_path)
    np.save(tmp_path / "tok.npy", np.array([9, 0, 2, 2, 1]))
    text = LOOKUPS.replace("export E, EB, P, S", "CE[t] = cross_entropy(LP[t,v], Tok[t], "
                           "axis=v)\nexport E, CE")
    program = fuse_lang.compile(text, backend="jax", base_dir=tmp_path, compiled=True,
                                targets=["E", "CE"])
    with pytest.raises(FuseError, match="gather's positions hold the position 9, outside the 7"):
        program.run()
    result = program.export("jax").run({"Tok": np.array([9.0, 0, 2, 2, 1])})
    e, ce = np.asarray(result["E"]), np.asarray(result["CE"])
    assert np.isnan(e[0]).all() and np.isfinite(e[1:]).all()
    assert np.isnan(ce[0]) and np.isfinite(ce[1:]).all()
