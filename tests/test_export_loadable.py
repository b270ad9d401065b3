"""Exports a user can load (issue 35, item 5): `fuse export` writes a torch.export
archive whose module takes the program's sources by name, keeps its params as
its state and returns the exports by name, and the serialized jax.export
artifact; each is loaded and run in a fresh process that imports only torch (or
only jax) and NumPy, never fuse_lang, and compared with `fuse run`, at the
example's batch size and at another one (`--dynamic n`)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import FuseError

ROOT = Path(__file__).resolve().parent.parent
TRANSFORMER = ROOT / "examples" / "transformer.fuse"

MLP = """X[n,j] = "x.npy"
T[n,c] = "t.npy"
param W1[h,j], B1[h], W2[c,h]
axis h = 6
H[n,h] = relu(W1[h,j] X[n,j] + B1[h])
P[n,c.] = softmax(W2[c,h] H[n,h])
CE[n] = -(log(P[n,c]) T[n,c])
L avg= CE[n]
train L
export P, L
"""
PARAMS = {"B1", "W1", "W2"}


def _fuse(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


def _data(folder: Path, name: str, rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    np.save(folder / f"x{name}.npy", rng.normal(size=(rows, 4)).astype(np.float32))
    np.save(folder / f"t{name}.npy", np.eye(3, dtype=np.float32)[rng.integers(0, 3, rows)])


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """The perceptron trained 3 steps (its checkpoint), and `fuse run --params` of
    it at 5 rows (the files') and at 9 rows, as .npz."""
    folder = tmp_path_factory.mktemp("mlp")
    (folder / "mlp.fuse").write_text(MLP)
    _data(folder, "", 5, 0)
    _data(folder, "9", 9, 1)
    done = _fuse("train", str(folder / "mlp.fuse"), "--steps", "3", "--checkpoint",
                 str(folder / "ckpt.safetensors"))
    assert done.returncode == 0, done.stderr
    for name, extra in (("", ()), ("9", ("--input", f"X={folder / 'x9.npy'}",
                                         "--input", f"T={folder / 't9.npy'}"))):
        done = _fuse("run", str(folder / "mlp.fuse"), "--params",
                     str(folder / "ckpt.safetensors"), *extra, "--out",
                     str(folder / f"expected{name}.npz"))
        assert done.returncode == 0, done.stderr
    return folder


def _fresh(code: str, *args: str) -> None:
    """`code` run in a new interpreter; it must not import fuse_lang."""
    check = "\nimport sys\nassert 'fuse_lang' not in sys.modules, 'fuse_lang was imported'\n"
    done = subprocess.run([sys.executable, "-c", code + check, *args], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def _same(folder: Path, got: Path) -> None:
    loaded = np.load(got)
    for rows in ("", "9"):
        expected = np.load(folder / f"expected{rows}.npz")
        for name in ("P", "L"):
            np.testing.assert_allclose(loaded[f"{name}{rows}"], expected[name], rtol=2e-4,
                                       atol=2e-5)


TORCH_CHILD = r"""
import json, sys
import numpy as np
import torch
archive, folder, out = sys.argv[1:]
extra = {"fuse.json": ""}
program = torch.export.load(archive, extra_files=extra)
meta = json.loads(extra["fuse.json"])
module = program.module()
results = {}
for rows in ("", "9"):
    inputs = {k: torch.from_numpy(np.load(f"{folder}/{k.lower()}{rows}.npy")) for k in ("X", "T")}
    for name, value in module(**inputs).items():
        results[name + rows] = value.detach().numpy()
for name, value in program.state_dict.items():
    results["state:" + name] = value.detach().numpy()
results["module_state"] = np.array(sorted(module.state_dict()))
results["meta"] = np.array(json.dumps(meta))
np.savez(out, **results)
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_export_loads_with_torch_alone_named_with_its_params_as_state(trained):
    archive = trained / "mlp.pt2"
    done = _fuse("export", str(trained / "mlp.fuse"), "--format", "torch", "--out",
                 str(archive), "--params", str(trained / "ckpt.safetensors"), "--dynamic", "n")
    assert done.returncode == 0, done.stderr
    assert "inputs T[n,3], X[n,4]; state B1, W1, W2; outputs P, L" in done.stdout
    _fresh(TORCH_CHILD, str(archive), str(trained), str(trained / "torch.npz"))
    _same(trained, trained / "torch.npz")
    got = np.load(trained / "torch.npz")
    # the state: the checkpoint's params, under their Fuse names, in both state dicts
    from safetensors.numpy import load_file

    checkpoint = load_file(trained / "ckpt.safetensors")
    assert {k.removeprefix("state:") for k in got.files if k.startswith("state:")} == PARAMS
    assert set(got["module_state"].tolist()) == PARAMS
    for name in PARAMS:
        np.testing.assert_allclose(got[f"state:{name}"], checkpoint[name], rtol=1e-6)
    meta = json.loads(str(got["meta"]))
    assert meta == {"inputs": {"T": "T", "X": "X"}, "state": sorted(PARAMS),
                    "outputs": ["P", "L"], "dynamic": {"n": [["T", 0], ["X", 0]]}}


JAX_CHILD = r"""
import sys
import numpy as np
import jax
artifact, folder, out = sys.argv[1:]
exported = jax.export.deserialize(bytearray(open(artifact, "rb").read()))
results = {}
for rows in ("", "9"):
    inputs = {k: np.load(f"{folder}/{k.lower()}{rows}.npy") for k in ("X", "T")}
    for name, value in exported.call(**inputs).items():
        results[name + rows] = np.asarray(value)
results["avals"] = np.array([str(a) for a in exported.in_avals])
np.savez(out, **results)
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None
                    or importlib.util.find_spec("flatbuffers") is None,
                    reason="jax (and flatbuffers, its serialization) are not installed")
def test_jax_export_loads_with_jax_alone_over_a_symbolic_batch(trained):
    artifact = trained / "mlp.jax"
    done = _fuse("export", str(trained / "mlp.fuse"), "--format", "jax", "--out",
                 str(artifact), "--params", str(trained / "ckpt.safetensors"), "--dynamic", "n")
    assert done.returncode == 0, done.stderr
    _fresh(JAX_CHILD, str(artifact), str(trained), str(trained / "jax.npz"))
    _same(trained, trained / "jax.npz")
    assert np.load(trained / "jax.npz")["avals"].tolist() == ["float32[n,3]", "float32[n,4]"]
    text = trained / "mlp.mlir"
    done = _fuse("export", str(trained / "mlp.fuse"), "--format", "stablehlo", "--out",
                 str(text), "--params", str(trained / "ckpt.safetensors"), "--dynamic", "n")
    assert done.returncode == 0, done.stderr
    assert "tensor<?x4xf32>" in text.read_text()  # the batch left open


def test_what_cannot_be_dynamic_is_refused_in_one_line(trained, tmp_path):
    path = str(trained / "mlp.fuse")
    cases = [("j", "the axis `j` cannot be dynamic: the param `W1` has it"),
             ("zz", "no input of the program has an axis `zz` to make dynamic")]
    for index, message in cases:
        done = _fuse("export", path, "--format", "stablehlo", "--out",
                     str(tmp_path / "m.mlir"), "--dynamic", index)
        assert done.returncode == 1 and message in done.stderr
        assert "Traceback" not in done.stderr and not (tmp_path / "m.mlir").exists()
    # the causal mask's extent is written in the program: the sequence is fixed
    program = fuse_lang.compile(TRANSFORMER.read_text(), base_dir=TRANSFORMER.parent)
    with pytest.raises(FuseError, match=r"cannot be exported to jax with `p` dynamic"):
        program.export("jax", dynamic=["p"])
    exported = fuse_lang.compile(MLP, base_dir=trained).export("jax")
    assert exported.state == tuple(sorted(PARAMS)) and exported.inputs == ("T", "X")
    with pytest.raises(FuseError, match=r"not W1 \(W1: the export's state, fixed at export\)"):
        exported.run({"W1": np.zeros((6, 4))})
    done = _fuse("export", path, "--format", "torch", "--out", str(tmp_path / "m.pt2"),
                 "--params", "a.safetensors", "--weights", "m.json")
    assert done.returncode == 2 and "not both" in done.stderr


def test_names_that_are_not_python_identifiers_are_spelled_as_documented(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3, dtype=np.float32))
    text = ("X'[i] = \"a.npy\"\nNone[i] = \"a.npy\"\nX_prime[i] = \"a.npy\"\n"
            "Out[i] = X'[i] + 2 None[i] + 3 X_prime[i]\nexport Out\n")
    program = fuse_lang.compile(text, base_dir=tmp_path)
    exported = program.export("jax")
    assert exported.arguments == {"X'": "X_prime_", "X_prime": "X_prime", "None": "None_"}
    np.testing.assert_allclose(exported.run({"X'": np.ones(3)})["Out"],
                               1 + 5 * np.arange(3))
