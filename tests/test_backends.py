"""The torch and jax backends through `fuse_lang.compile` and `fuse run`:
compiled graphs reused with new values, native results, devices, precisions.
(Every engine test also runs on these backends: tests/conftest.py.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import FuseError

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

# a straight program (one compiled graph), then a recursion (a loop), then more
# straight equations (a second graph)
PROGRAM = """\
X[p,d] = "x.npy"
W[d,e] = "w.npy"
H[p,e] = relu(X[p,d] W[d,e])
Y[p,q.] = softmax(H[p,e] H[q,e])
Edge(a,b) = "edges.npy"
Path(a,b) = Edge(a,b)
Path(a,c) = Path(a,b) Edge(b,c)
Reach[a] = Path(a,b) + 1
export Y, Path, Reach
"""

COMPILED = [("jax", None), ("torch", True)]


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    h = np.maximum(x @ w, 0)
    s = h @ h.T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def write_inputs(folder: Path, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=(5, 3)), rng.normal(size=(3, 4))
    np.save(folder / "x.npy", x)
    np.save(folder / "w.npy", w)
    edges = np.zeros((6, 6))
    for a in range(5):
        edges[a, a + 1] = 1
    np.save(folder / "edges.npy", edges)
    return x, w


@pytest.mark.parametrize("backend, compiled", COMPILED)
def test_a_second_run_reuses_the_graph_and_computes_with_the_new_values(tmp_path, backend,
                                                                        compiled):
    x, w = write_inputs(tmp_path, 0)
    program = fuse_lang.compile(PROGRAM, backend=backend, base_dir=tmp_path, compiled=compiled)
    first = program.run()
    np.testing.assert_allclose(first["Y"], reference(x, w), rtol=1e-4, atol=1e-6)
    # a graph for each straight run around the recursion, and a third for the
    # fixpoint: jax runs it whole (a lax.while_loop), torch compiles one round
    graphs = 3
    assert program.compilations == graphs
    # new values in the source files: the same graphs, the new answer
    x2, w2 = write_inputs(tmp_path, 1)
    second = program.run()
    np.testing.assert_allclose(second["Y"], reference(x2, w2), rtol=1e-4, atol=1e-6)
    assert not np.allclose(second["Y"], first["Y"])
    # new values as run-time inputs, same shapes: still no new graph
    x3, w3 = np.ones((5, 3)), np.full((3, 4), 0.5)
    third = program.run({"X": x3, "W": w3})
    np.testing.assert_allclose(third["Y"], reference(x3, w3), rtol=1e-4, atol=1e-6)
    again = program.run({"X": x, "W": w})
    np.testing.assert_allclose(again["Y"], first["Y"], rtol=1e-6)
    # inputs of a new kind (given, not read from files): one new trace of each graph
    assert program.compilations == 2 * graphs
    program.run({"X": x3, "W": w3})
    assert program.compilations == 2 * graphs
    # a new shape is a new signature: traced once more
    program.run({"X": np.ones((7, 3)), "W": w3})
    assert program.compilations == 3 * graphs
    assert first["Path"].sum() == 15 and list(first["Reach"]) == [6, 5, 4, 3, 2, 1]


def test_an_eager_torch_run_compiles_nothing(tmp_path):
    write_inputs(tmp_path, 0)
    program = fuse_lang.compile(PROGRAM, backend="torch", base_dir=tmp_path)
    program.run()
    assert program.compilations == 0 and not program.compiled


@pytest.mark.parametrize("backend, kind", [("torch", "torch.Tensor"), ("jax", "jax.Array")])
def test_run_native_hands_back_the_frameworks_tensors(tmp_path, backend, kind):
    x, w = write_inputs(tmp_path, 0)
    program = fuse_lang.compile(PROGRAM, backend=backend, base_dir=tmp_path)
    if backend == "torch":
        inputs = {"X": torch.tensor(x, dtype=torch.float32), "W": torch.tensor(w)}
        tensor_type = torch.Tensor
    else:
        inputs = {"X": jax.numpy.asarray(x), "W": jax.numpy.asarray(w)}
        tensor_type = jax.Array
    out = program.run_native(inputs)
    assert isinstance(out["Y"], tensor_type), kind
    assert str(out["Y"].dtype).endswith("float32")
    np.testing.assert_allclose(np.asarray(out["Y"]), reference(x, w), rtol=1e-4, atol=1e-6)
    # run still hands back NumPy arrays
    assert isinstance(program.run(inputs)["Y"], np.ndarray)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_torch_run_never_writes_into_the_callers_tensors(tmp_path, compiled):
    # a scaled product is updated in place when it is a new result; a view of
    # an input (a one-operand einsum, a transpose) must be copied instead
    program = fuse_lang.compile("""\
A[i,j] = "a.npy"
B[j,k] = "b.npy"
S[j] = A[i,j] / 2
T[j,i] = A[i,j] * 3
P[i,k] = A[i,j] B[j,k] / 4
Q[k,i] = 0.5 * B[j,k] A[i,j]
R[i,j] = A[i,j] B[j,k] * 2
export S, T, P, Q, R
""", backend="torch", base_dir=tmp_path, compiled=compiled)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    inputs = {"A": torch.tensor(a, dtype=torch.float32), "B": torch.tensor(b, dtype=torch.float32)}
    before = {n: t.clone() for n, t in inputs.items()}
    for _ in range(2):
        out = program.run_native(inputs)
    for name, tensor in inputs.items():
        assert torch.equal(tensor, before[name]), name
    np.testing.assert_allclose(out["S"].numpy(), a.sum(axis=0) / 2, rtol=1e-5)
    np.testing.assert_allclose(out["T"].numpy(), a.T * 3, rtol=1e-5)
    np.testing.assert_allclose(out["P"].numpy(), a @ b / 4, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["Q"].numpy(), (a @ b).T * 0.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["R"].numpy(), a * b.sum(axis=1) * 2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_precisions(tmp_path, backend):
    x, w = write_inputs(tmp_path, 0)
    expected = reference(x, w)
    wide = fuse_lang.compile(PROGRAM, backend=backend, base_dir=tmp_path, precision="fp64").run()
    assert wide["Y"].dtype == np.float64
    np.testing.assert_allclose(wide["Y"], expected, rtol=1e-12)
    for precision in ("bf16", "fp16"):
        out = fuse_lang.compile(PROGRAM, backend=backend, base_dir=tmp_path,
                                precision=precision).run()
        # bfloat16 comes back as float32 (NumPy has no bfloat16 of its own)
        assert out["Y"].dtype in (np.float16, np.float32)
        np.testing.assert_allclose(out["Y"].astype(np.float64), expected, atol=0.05)


def test_a_precision_or_device_that_is_not_there_is_a_clear_error():
    with pytest.raises(FuseError, match="the numpy backend supports fp32 and fp64, not 'bf16'"):
        fuse_lang.compile("X = 1\n", precision="bf16")
    with pytest.raises(FuseError, match="unknown precision 'fp8'"):
        fuse_lang.compile("X = 1\n", backend="torch", precision="fp8")
    with pytest.raises(FuseError, match="unknown backend 'tensorflow'; choose one of numpy, "
                                        "torch, jax, or \"auto\""):
        fuse_lang.compile("X = 1\n", backend="tensorflow")
    with pytest.raises(FuseError, match="the numpy backend runs eagerly only"):
        fuse_lang.compile("X = 1\n", compiled=True)
    with pytest.raises(FuseError, match="the jax backend runs on cpu, cuda"):
        fuse_lang.compile("X = 1\n", backend="jax", device="quantum")
    if not torch.cuda.is_available():
        with pytest.raises(FuseError, match="torch sees no CUDA GPU"):
            fuse_lang.compile("X = 1\n", backend="torch", device="cuda")
    if not any(d.platform == "gpu" for d in jax.devices()):
        with pytest.raises(FuseError, match="jax sees no gpu device"):
            fuse_lang.compile("X = 1\n", backend="jax", device="cuda:0")


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_auto_picks_the_accelerator_when_there_is_one(backend):
    program = fuse_lang.compile("X[i] = const([1, 2])\nexport X\n", backend=backend,
                                device="auto")
    has_gpu = torch.cuda.is_available() if backend == "torch" else \
        any(d.platform == "gpu" for d in jax.devices())
    assert program.backend.device.startswith("cuda") == has_gpu
    assert program.run()["X"].tolist() == [1, 2]


def test_a_run_error_is_the_same_inside_a_compiled_graph(tmp_path):
    text = "A[i] = const([1, 2, 3])\nB[i] = 2 A[i]\nZ[i,k] = B[i]\n"
    for backend in ("numpy", "torch", "jax"):
        with pytest.raises(FuseError, match=r"line 3, column 1: `Z`'s axis `k` has no known "
                                            r"extent"):
            fuse_lang.compile(text, backend=backend, compiled=backend == "torch" or None).run()


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_fuse_run_on_another_backend(backend):
    numpy_out = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "attention.fuse",
                                "--format", "json"], cwd=EXAMPLES, capture_output=True,
                               text=True, check=True).stdout
    other = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "attention.fuse",
                            "--backend", backend, "--format", "json"], cwd=EXAMPLES,
                           capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    import json

    a, b = json.loads(numpy_out)["outputs"], json.loads(other.stdout)["outputs"]
    for name in a:
        np.testing.assert_allclose(b[name]["values"], a[name]["values"], rtol=1e-4, atol=1e-6)


def test_fuse_run_refuses_what_the_backend_cannot_do():
    out = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "attention.fuse",
                          "--compile"], cwd=EXAMPLES, capture_output=True, text=True)
    assert out.returncode == 1
    assert "the numpy backend runs eagerly only" in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------------------------ CUDA
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no NVIDIA GPU on this machine")
# on a GPU, float32 matmuls may run in TF32 (jax's default): a looser tolerance
GPU_TOLERANCE = dict(rtol=1e-2, atol=1e-3)


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("backend, compiled", [("torch", False), ("torch", True), ("jax", None)])
@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.fuse")))
def test_every_example_runs_on_cuda(backend, compiled, example):
    text = (EXAMPLES / f"{example}.fuse").read_text()
    expected = fuse_lang.compile(text, base_dir=EXAMPLES).execute(write_sinks=False)
    program = fuse_lang.compile(text, backend=backend, device="cuda", base_dir=EXAMPLES,
                                compiled=compiled)
    assert program.backend.device.startswith("cuda")
    got = program.execute(write_sinks=False)
    assert set(got.outputs) == set(expected.outputs)
    for name, value in expected.outputs.items():
        np.testing.assert_allclose(got.outputs[name], value, **GPU_TOLERANCE, err_msg=name)
    for mine, theirs in zip(got.queries, expected.queries):
        assert mine.tuples == theirs.tuples


@pytest.mark.cuda
@cuda
def test_native_results_stay_on_the_gpu(tmp_path):
    write_inputs(tmp_path, 0)
    out = fuse_lang.compile(PROGRAM, backend="torch", device="cuda",
                            base_dir=tmp_path).run_native()
    assert out["Y"].is_cuda
    out = fuse_lang.compile(PROGRAM, backend="jax", device="cuda", base_dir=tmp_path).run_native()
    assert all(d.platform == "gpu" for d in out["Y"].devices())
