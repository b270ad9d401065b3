"""Checkpoints as sources (issue 35, item 4): a `.safetensors` checkpoint that
`fuse train` wrote runs with `fuse run --params CKPT`, no manifest, and
`--input NAME=FILE.safetensors[:KEY]` reads one tensor; every problem is said
with a code or in words, never a traceback.  Through the CLI on real files."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

pytestmark = pytest.mark.skipif(not importlib.util.find_spec("safetensors"),
                                reason="no safetensors")

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """X[n,j] = "x.npy"
T[n] = "t.npy"
param W[j], B
Y[n] = W[j] X[n,j] + B
L avg= (Y[n] - T[n])^2
train L
export Y, L
"""


def _fuse(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, cwd=folder, env={"PYTHONPATH": str(ROOT), "PATH": ""})


def _save(path: Path, arrays: dict) -> None:
    from safetensors.numpy import save_file

    save_file({k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}, str(path))


@pytest.fixture
def trained(tmp_path):
    """A program, its data, and the checkpoint `fuse train` wrote for it."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", x @ np.array([1.0, 2.0, -1.0]) + 0.5)
    (tmp_path / "reg.fuse").write_text(PROGRAM)
    done = _fuse(tmp_path, "train", "reg.fuse", "--optimizer", "adam", "--lr", "0.1",
                 "--steps", "300", "--seed", "0", "--checkpoint", "out/reg.safetensors")
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_a_trained_checkpoint_runs_with_params(trained):
    from safetensors.numpy import load_file

    done = _fuse(trained, "run", "reg.fuse", "--params", "out/reg.safetensors", "--out",
                 "out/y.npz")
    assert done.returncode == 0, done.stderr
    params = load_file(str(trained / "out/reg.safetensors"))
    np.testing.assert_allclose(params["W"], [1.0, 2.0, -1.0], atol=1e-2)  # it learned
    got = np.load(trained / "out/y.npz")
    expected = fuse_lang.compile(PROGRAM, base_dir=trained).run(params)
    np.testing.assert_allclose(got["Y"], expected["Y"], rtol=1e-6)
    assert float(got["L"]) < 1e-3  # the trained params, not the initialiser's start
    untrained = _fuse(trained, "run", "reg.fuse", "--out", "out/y0.npz")
    assert untrained.returncode == 0, untrained.stderr
    assert float(np.load(trained / "out/y0.npz")["L"]) > 0.1


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_params_on_the_frameworks(trained, backend):
    pytest.importorskip(backend)
    done = _fuse(trained, "run", "reg.fuse", "--params", "out/reg.safetensors", "--backend",
                 backend, "--out", f"out/{backend}.npz")
    assert done.returncode == 0, done.stderr
    assert float(np.load(trained / f"out/{backend}.npz")["L"]) < 1e-3


def test_inputs_read_from_a_safetensors_file(trained):
    ckpt = "out/reg.safetensors"
    keyed = _fuse(trained, "run", "reg.fuse", "--input", f"W={ckpt}:W", "--input",
                  f"B={ckpt}:B", "--out", "out/keyed.npz")
    by_name = _fuse(trained, "run", "reg.fuse", "--input", f"W={ckpt}", "--input",
                    f"B={ckpt}", "--out", "out/named.npz")
    assert keyed.returncode == 0 and by_name.returncode == 0, keyed.stderr + by_name.stderr
    with_params = _fuse(trained, "run", "reg.fuse", "--params", ckpt, "--out", "out/p.npz")
    assert with_params.returncode == 0
    for name in ("keyed", "named"):
        np.testing.assert_array_equal(np.load(trained / f"out/{name}.npz")["Y"],
                                      np.load(trained / "out/p.npz")["Y"])
    # a one-tensor file needs no key; a key the file lacks says which it holds
    _save(trained / "w.safetensors", {"weights": [1.0, 2.0, -1.0]})
    one = _fuse(trained, "run", "reg.fuse", "--input", "W=w.safetensors", "--input",
                f"B={ckpt}")
    assert one.returncode == 0, one.stderr
    missing = _fuse(trained, "run", "reg.fuse", "--input", f"W={ckpt}:Q")
    assert missing.returncode == 2
    assert "holds no tensor named 'Q' (tensors: B, W)" in missing.stderr
    assert "Traceback" not in missing.stderr and "magic" not in missing.stderr


def test_params_problems_are_said(trained):
    _save(trained / "wide.safetensors", {"W": np.ones(5), "B": np.zeros(())})
    _save(trained / "extra.safetensors", {"W": np.ones(3), "B": np.zeros(()),
                                          "Q": np.ones(2)})
    _save(trained / "partial.safetensors", {"W": np.ones(3)})
    (trained / "not.safetensors").write_text("hello")
    cases = {"wide": (1, "error[weights-shape-mismatch]: the checkpoint `wide.safetensors` "
                         "gives `W` shape (5,)"),
             "extra": (1, "error[weights-unknown-tensor]"),
             "partial": (1, "gives no value for the param B of reg.fuse (it holds: W)"),
             "absent": (1, "error[weights-missing-file]"),
             "not": (1, "error[weights-bad-manifest]")}
    for name, (status, words) in cases.items():
        done = _fuse(trained, "run", "reg.fuse", "--params", f"{name}.safetensors")
        assert done.returncode == status, (name, done.stderr)
        assert words in done.stderr, (name, done.stderr)
        assert "Traceback" not in done.stderr
    # an --input gives what the checkpoint lacks
    topped = _fuse(trained, "run", "reg.fuse", "--params", "partial.safetensors",
                   "--input", "B=out/reg.safetensors")
    assert topped.returncode == 0, topped.stderr
    both = _fuse(trained, "run", "reg.fuse", "--params", "out/reg.safetensors",
                 "--weights", "m.json")
    assert both.returncode == 2 and "not both" in both.stderr
    npy = _fuse(trained, "run", "reg.fuse", "--params", "x.npy")
    assert npy.returncode == 2 and "--params takes a .safetensors checkpoint" in npy.stderr


def test_check_and_compile_read_a_checkpoint_as_weights(trained):
    done = _fuse(trained, "check", "reg.fuse", "--weights", "out/reg.safetensors")
    assert done.returncode == 0, done.stdout + done.stderr
    program = fuse_lang.compile(PROGRAM, base_dir=trained,
                                weights=str(trained / "out/reg.safetensors"))
    assert float(program.run()["L"]) < 1e-3
