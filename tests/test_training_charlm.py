"""The character-level transformer of examples/training/char_transformer.fuse
learns (docs/training.md): in a tiny configuration (20,000 characters of
pydoc's topics, windows of 16, width 16, two heads, 50 steps) its validation
loss falls below the unigram baseline on torch and on jax, through
`program.train`; `fuse train` with a seed is reproducible; make_chars.py writes
the data and prints the baseline."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import training_example

import fuse_lang
from fuse_lang.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "training"
TINY = {"window": 16, "width": 16, "heads": 2, "key": 8, "mlp": 32}


def _make_chars():
    return training_example("make_chars")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, np.ndarray, float]:
    """A folder with the tiny program and its training windows; the validation
    windows; the unigram baseline on them (nats)."""
    make_chars = _make_chars()
    folder = tmp_path_factory.mktemp("charlm")
    data = make_chars.windows(make_chars.corpus(20_000), TINY["window"])
    np.save(folder / "chars_train.npy", data["chars_train"])
    np.save(folder / "chars_valid.npy", data["chars_valid"])
    text = (EXAMPLE / "char_transformer.fuse").read_text(encoding="utf-8")
    (folder / "char_transformer.fuse").write_text(make_chars.sized_program(text, **TINY),
                                                  encoding="utf-8")
    baseline = make_chars.unigram_cross_nats(data["chars_train"], data["chars_valid"])
    return folder, data["chars_valid"], baseline


@pytest.fixture
def one_torch_thread():
    """Torch's default threads on a small loaded machine wait on each other far
    longer than the tiny model computes."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_example_checks_clean_and_its_loss_reaches_every_param(tmp_path):
    """With data of make_chars.py's default window (65 characters)."""
    np.save(tmp_path / "chars_train.npy", np.zeros((2, 65, 10), dtype=np.uint8))
    text = (EXAMPLE / "char_transformer.fuse").read_text(encoding="utf-8")
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    assert not analysis.diagnostics, [d.message for d in analysis.diagnostics]
    assert analysis.tensors["P"].shape == (2, 64, 10)
    params = re.findall(r"\b(\w+)\[", " ".join(line for line in text.splitlines()
                                             if line.startswith("param ")))
    assert len(params) == 18
    from fuse_lang.check.loss import loss_of

    assert sorted(loss_of(analysis).params) == sorted(params)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_the_windows_slices_give_inputs_and_next_characters(tmp_path, backend):
    """`X[n,:,c] = C[n,0:4,c]` lays the slice out as it is (no scatter: run.lhs),
    `T[n,:,c] = C[n,1:5,c]` shifts by one; a slice that does not fill its axis is
    still written with zeros past it."""
    pytest.importorskip(backend) if backend != "numpy" else None
    data = np.arange(2 * 5 * 3, dtype=np.float64).reshape(2, 5, 3)
    np.save(tmp_path / "c.npy", data)
    text = ('C[n,w,c] = "c.npy"\nX[n,:,c] = C[n,0:4,c]\nT[n,:,c] = C[n,1:5,c]\n'
            'axis q = 6\nY[n,0:4,c] = X[n,0:4,c]\nZ[n,q,c] = Y[n,q,c]\nexport X, T, Z')
    out = fuse_lang.compile(text, backend=backend, base_dir=tmp_path).run()
    np.testing.assert_array_equal(out["X"], data[:, :4])
    np.testing.assert_array_equal(out["T"], data[:, 1:])
    np.testing.assert_array_equal(out["Z"][:, :4], data[:, :4])
    assert out["Z"].shape == (2, 6, 3) and not out["Z"][:, 4:].any()


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_tiny_transformer_beats_the_unigram_baseline(tiny, backend, one_torch_thread):
    pytest.importorskip(backend)
    if backend == "jax":
        pytest.importorskip("optax")
    folder, valid, baseline = tiny
    text = (folder / "char_transformer.fuse").read_text(encoding="utf-8")
    result = fuse_lang.compile(text, backend=backend, base_dir=folder).train(
        steps=50, batch={"n": 16}, learning_rate=0.02, seed=0, validation={"C": valid},
        validate_every=50)
    assert 3.0 < baseline < 3.3  # the entropy of English-like character frequencies
    assert result.losses[0] > baseline + 1  # from about log(vocabulary size)
    assert result.validation[-1][1] < baseline - 0.1, (result.validation, baseline)


def test_fuse_train_is_reproducible_with_a_seed(tiny, one_torch_thread, capsys):
    from safetensors.numpy import load_file

    folder, _, _ = tiny
    finals, params = [], []
    for k, seed in enumerate((3, 3, 4)):
        checkpoint = folder / f"run{k}.safetensors"
        assert main(["train", str(folder / "char_transformer.fuse"), "--backend", "torch",
                     "--steps", "6", "--batch", "n=8", "--lr", "0.01", "--seed", str(seed),
                     "--checkpoint", str(checkpoint)]) == 0
        out = capsys.readouterr().out
        finals.append(re.search(r"final loss ([\d.]+)", out).group(1))
        params.append(load_file(str(checkpoint)))
    assert finals[0] == finals[1] and finals[0] != finals[2]
    for name, value in params[0].items():
        np.testing.assert_array_equal(value, params[1][name], err_msg=name)
    assert not np.array_equal(params[0]["Emb"], params[2]["Emb"])


def test_make_chars_writes_windows_and_prints_the_baseline(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLE / "make_chars.py"), str(tmp_path),
                           "--window", "8", "--chars", "5000"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    train = np.load(tmp_path / "chars_train.npy")
    valid = np.load(tmp_path / "chars_valid.npy")
    assert train.shape[1:] == valid.shape[1:] and train.shape[1] == 9
    assert train.shape[0] + valid.shape[0] == (5000 - 1) // 8
    assert (train.sum(axis=2) == 1).all()  # one character per position
    assert re.search(r"unigram baseline: \d\.\d+ nats", done.stdout)


pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None
                                and importlib.util.find_spec("jax") is None,
                                reason="training needs torch or jax")
