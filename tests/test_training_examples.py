"""Examples that learn for real (docs/training.md): the digits MLP of
examples/training/digits.fuse reaches over 95% accuracy on held-out images, on
torch and on jax, through `fuse train` and through `program.train`."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "training"
pytestmark = pytest.mark.skipif(not importlib.util.find_spec("sklearn"),
                                reason="the digits ship with scikit-learn")


@pytest.fixture
def folder(tmp_path):
    sys.path.insert(0, str(EXAMPLE))
    try:
        from make_digits import digits
    finally:
        sys.path.remove(str(EXAMPLE))
    for name, array in digits().items():
        np.save(tmp_path / f"{name}.npy", array)
    shutil.copy(EXAMPLE / "digits.fuse", tmp_path / "digits.fuse")
    return tmp_path


def _accuracy(folder: Path, params: dict) -> float:
    text = (folder / "digits.fuse").read_text(encoding="utf-8")
    test_x = np.load(folder / "digits_test_x.npy")
    predicted = fuse_lang.compile(text, base_dir=folder, targets=["P"]).run(
        {"X": test_x, **params})["P"]
    return float((predicted.argmax(1) == np.load(folder / "digits_test_t.npy").argmax(1)).mean())


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_digits_mlp_learns_over_95_percent(folder, backend):
    pytest.importorskip(backend)
    if backend == "jax":
        pytest.importorskip("optax")
    text = (folder / "digits.fuse").read_text(encoding="utf-8")
    held = {"X": np.load(folder / "digits_test_x.npy"), "T": np.load(folder / "digits_test_t.npy")}
    result = fuse_lang.compile(text, backend=backend, base_dir=folder).train(
        steps=400, batch={"n": 128}, learning_rate=0.01, validation=held)
    assert result.validation[-1][1] < 0.1 * result.losses[0]
    assert _accuracy(folder, result.params) > 0.95


def test_fuse_train_writes_params_that_classify_the_digits(folder, capsys):
    pytest.importorskip("torch")
    from safetensors.numpy import load_file

    assert main(["train", str(folder / "digits.fuse"), "--steps", "300", "--batch", "n=128",
                 "--checkpoint", str(folder / "digits.safetensors")]) == 0
    assert "trained `L`: steps 0-300" in capsys.readouterr().out
    params = load_file(str(folder / "digits.safetensors"))
    assert set(params) == {"W1", "B1", "W2", "B2"}
    assert _accuracy(folder, params) > 0.95
