"""examples/training/char_transformer_ids.fuse, the character transformer on
token ids (`gather` rows, a `select` causal mask, `cross_entropy` from the
logits), computes what the one-hot char_transformer.fuse computes: the same
loss and the same gradient for the same params, on torch and jax.  It trains,
and its checkpoint runs with `fuse run --params`."""
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

pytest.importorskip("torch")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "training"
ROOT = EXAMPLE.parent.parent
TINY = {"window": 8, "width": 8, "heads": 2, "key": 4, "mlp": 16}
FRAMEWORKS = ["torch", pytest.param("jax", marks=pytest.mark.skipif(
    not importlib.util.find_spec("optax"), reason="no jax/optax"))]


def _make_chars():
    return training_example("make_chars")


def _ids_program(vocabulary: int, window: int, width: int, heads: int, key: int,
                 mlp: int) -> str:
    text = (EXAMPLE / "char_transformer_ids.fuse").read_text(encoding="utf-8")
    changes = {r"axis c = \d+": f"axis c = {vocabulary}", r"axis d = \d+": f"axis d = {width}",
               r"axis h = \d+": f"axis h = {heads}", r"axis k = \d+": f"axis k = {key}",
               r"axis f = \d+": f"axis f = {mlp}", r"Dk = const\(\d+\)": f"Dk = const({key})",
               r"I\[n,0:\d+\]": f"I[n,0:{window}]", r"I\[n,1:\d+\]": f"I[n,1:{window + 1}]"}
    for pattern, replacement in changes.items():
        text, count = re.subn(pattern, replacement, text)
        assert count == 1, pattern
    return text


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> tuple[Path, str, str]:
    """Six windows of pydoc's text as one-hot and as ids; both tiny programs."""
    make_chars = _make_chars()
    out = tmp_path_factory.mktemp("charids")
    data = make_chars.windows(make_chars.corpus(4_000), TINY["window"])
    np.save(out / "chars_train.npy", data["chars_train"][:6])
    np.save(out / "chars_train_ids.npy", data["chars_train_ids"][:6])
    one_hot = make_chars.sized_program(
        (EXAMPLE / "char_transformer.fuse").read_text(encoding="utf-8"), **TINY)
    ids = _ids_program(len(data["vocab"]), **TINY)
    (out / "ids.fuse").write_text(ids, encoding="utf-8")
    return out, one_hot, ids


@pytest.mark.parametrize("backend", FRAMEWORKS)
def test_ids_and_one_hot_give_the_same_loss_and_gradient(folder, backend):
    out, one_hot, ids = folder
    by_ids = fuse_lang.compile(ids, backend=backend, base_dir=out, precision="fp64")
    by_one_hot = fuse_lang.compile(one_hot, backend=backend, base_dir=out, precision="fp64")
    rng = np.random.default_rng(0)
    shapes = {n: t.shape for n, t in by_ids.analysis.tensors.items() if t.kind == "param"}
    assert shapes == {n: t.shape for n, t in by_one_hot.analysis.tensors.items()
                      if t.kind == "param"}
    params = {n: rng.normal(size=s) * 0.3 for n, s in shapes.items()}
    value, grads = by_ids.gradients(params)
    expected, expected_grads = by_one_hot.gradients(params)
    assert value == pytest.approx(expected, rel=1e-9)
    for name in params:
        np.testing.assert_allclose(grads[name], expected_grads[name], rtol=1e-7, atol=1e-10,
                                   err_msg=name)


def test_it_trains_and_its_checkpoint_runs_from_the_command_line(folder):
    out, _, _ = folder
    env = {"PYTHONPATH": str(ROOT), "PATH": ""}
    train = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "train", "ids.fuse",
                            "--backend", "torch", "--optimizer", "adam", "--lr", "0.01",
                            "--steps", "40", "--seed", "0", "--checkpoint", "ids.safetensors"],
                           capture_output=True, text=True, cwd=out, env=env)
    assert train.returncode == 0, train.stderr
    losses = [float(x) for x in re.findall(r"loss ([0-9.e+-]+)", train.stdout + train.stderr)]
    assert losses and losses[-1] < 3.0  # ln 40-odd characters ≈ 3.7 at the start
    run = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "ids.fuse",
                          "--params", "ids.safetensors", "--target", "L", "--out", "l.npz"],
                         capture_output=True, text=True, cwd=out, env=env)
    assert run.returncode == 0, run.stderr
    assert float(np.load(out / "l.npz")["L"]) == pytest.approx(losses[-1], rel=0.2)
