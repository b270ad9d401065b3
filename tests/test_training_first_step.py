"""Training says what its first step costs (issue 35, item 6): `TrainResult`
and `fuse train` report the first step's seconds (the loss captured as a graph
on torch, the step traced and compiled on jax) apart from the later steps'
median; with `--cache-dir` a second process finds jax's compiled step in the
persistent cache and trains the same steps (a stored forward segment is never
asked for a gradient)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

ROOT = Path(__file__).resolve().parent.parent

MLP = """X[n,j] = "x.npy"
T[n,c] = "t.npy"
param W1[h,j], W2[c,h]
axis h = 4
P[n,c.] = softmax(W2[c,h] relu(W1[h,j] X[n,j]))
L avg= -(log(P[n,c]) T[n,c])
train L
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(8, 3)).astype(np.float32))
    np.save(tmp_path / "t.npy", np.eye(2, dtype=np.float32)[rng.integers(0, 2, 8)])
    (tmp_path / "mlp.fuse").write_text(MLP)
    return tmp_path


def _train(folder: Path, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "train",
                           str(folder / "mlp.fuse"), "--steps", "4", "--format", "json", *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_first_step_is_reported_apart_from_the_others(folder, backend, capsys):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    program = fuse_lang.compile(MLP, backend=backend, base_dir=folder)
    result = program.train(steps=5)
    assert result.first_step_seconds > 0 and result.step_seconds > 0
    data = result.to_json()
    assert data["first_step_seconds"] == result.first_step_seconds
    assert data["step_seconds"] == result.step_seconds
    one = fuse_lang.compile(MLP, backend=backend, base_dir=folder).train(steps=1)
    assert one.first_step_seconds > 0 and one.step_seconds is None  # no later step
    from fuse_lang.cli import main

    assert main(["train", str(folder / "mlp.fuse"), "--steps", "3", "--backend", backend]) == 0
    out = capsys.readouterr().out
    assert "first step " in out and "s (the step captured or compiled), then " in out


@pytest.mark.skipif(importlib.util.find_spec("optax") is None, reason="optax is not installed")
def test_a_second_process_trains_from_the_cache_the_same_steps(folder):
    cache = folder / "cache"
    cold = _train(folder, "--backend", "jax", f"--cache-dir={cache}")
    entries = sorted(p.name for p in (cache / "jax").iterdir())
    assert entries  # jax's persistent cache holds the compiled step
    warm = _train(folder, "--backend", "jax", f"--cache-dir={cache}")
    assert warm["losses"] == cold["losses"]
    assert sorted(p.name for p in (cache / "jax").iterdir()) == entries  # nothing new
    assert warm["first_step_seconds"] > 0


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_keeps_the_captured_loss_in_the_cache_for_a_later_process(folder):
    cache = folder / "cache"
    cold = _train(folder, "--backend", "torch", f"--cache-dir={cache}")
    (stored,) = (cache / "torch" / "fuse-train").glob("*.pt")
    made = stored.stat().st_mtime_ns
    warm = _train(folder, "--backend", "torch", f"--cache-dir={cache}")
    assert warm["losses"] == cold["losses"]  # the stored graph computes the same steps
    assert stored.stat().st_mtime_ns == made  # loaded, not captured and written again
    stored.write_bytes(b"not a graph")
    again = _train(folder, "--backend", "torch", f"--cache-dir={cache}")
    assert again["losses"] == cold["losses"]
    assert stored.read_bytes() != b"not a graph"  # captured again and written whole
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "cache", "clear",
                           "--cache-dir", str(cache)], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0 and not stored.exists()
