"""Shapes from benchmarks/ml_peer_shapes.py: a recurrence over many steps, read
row by row from its inputs, gives the NumPy reference's values on every
backend (the jax backend reads each step's row with one jitted call whose
position is an argument, and multiplies with a jitted einsum: a wrong row or a
stale cached position would show here), and follows new input values."""
from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

import fuse_lang

BACKENDS = ["numpy"] + [b for b in ("torch", "jax") if find_spec(b) is not None]

# inputs read at the step on different axes: U's last, V's first, P's middle one
RNN = """
W[i,j] = "w.npy"
U[i,t] = "u.npy"
V[t,i] = "v.npy"
P[i,t,k] = "p.npy"
X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t] + V[t,i] + P[i,t,k])
export X
"""


def _inputs(seed: int, steps: int = 40, width: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"W": rng.standard_normal((width, width), dtype=np.float32) * np.float32(0.3),
            "U": rng.standard_normal((width, steps), dtype=np.float32),
            "V": rng.standard_normal((steps, width), dtype=np.float32),
            "P": rng.standard_normal((width, steps, 3), dtype=np.float32)}


def _by_hand(v: dict[str, np.ndarray]) -> np.ndarray:
    x = np.zeros(v["W"].shape[0], np.float64)
    for t in range(v["U"].shape[1]):
        x = np.tanh(v["W"] @ x + v["U"][:, t] + v["V"][t] + v["P"][:, t].sum(axis=1))
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("compiled", [False, True])
def test_recurrence_rows_at_each_step_match_the_reference(tmp_path, backend, compiled):
    if backend == "numpy" and compiled:
        pytest.skip("numpy has no compiled runs")
    for name, array in _inputs(0).items():
        np.save(tmp_path / f"{name.lower()}.npy", np.zeros_like(array))
    prog = fuse_lang.compile(RNN, backend=backend, base_dir=tmp_path, compiled=compiled)
    previous = None
    for seed in (0, 1):
        inputs = _inputs(seed)
        got = prog.run(inputs)["X"]
        np.testing.assert_allclose(got, _by_hand(inputs), rtol=1e-4, atol=1e-5)
        assert previous is None or not np.allclose(got, previous)
        previous = got


@pytest.mark.skipif(find_spec("jax") is None, reason="needs jax")
def test_jax_eager_products_follow_shapes_and_values(tmp_path):
    """A product of two and of four operands on jax's eager path (compiled=False)
    equals NumPy's, for new values and for new shapes of the same program."""
    text = ('A[a,b] = "a.npy"\nB[b,c] = "b.npy"\nC[c,d] = "c.npy"\nD[d,e] = "d.npy"\n'
            "Y[a,c] = A[a,b] B[b,c]\nZ[a,e] = A[a,b] B[b,c] C[c,d] D[d,e]\nexport Y, Z\n")
    rng = np.random.default_rng(0)
    for n, m in ((6, 2), (9, 3)):
        shapes = {"A": (n, m), "B": (m, n), "C": (n, m), "D": (m, n)}
        for name, shape in shapes.items():
            np.save(tmp_path / f"{name.lower()}.npy", np.zeros(shape, np.float32))
        prog = fuse_lang.compile(text, backend="jax", base_dir=tmp_path, compiled=False)
        for _ in range(2):
            v = {k: rng.standard_normal(s, dtype=np.float32) for k, s in shapes.items()}
            out = prog.run(v)
            np.testing.assert_allclose(out["Y"], v["A"] @ v["B"], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(out["Z"], v["A"] @ v["B"] @ v["C"] @ v["D"],
                                       rtol=1e-4, atol=1e-4)


CHAINS = """
X[b,h] = "x.npy"
G[h] = "g.npy"
B[h] = "b.npy"
S[b] = "s.npy"
Y[b,h] = relu(X[b,h] * G[h] + B[h]) * S[b] - X[b,h] * 0.5
Z[b,h] = X[b,h] - G[h] - B[h] * S[b] - 2
Q[b,h] = X[b,h] * G[h] / (B[h] + 3) / S[b]
R[b,h] = (X[b,h] + G[h]) * (X[b,h] + G[h]) - (X[b,h] + G[h])
M[b] max= (G[h] + 1) * X[b,h]
export Y, Z, Q, R, M
"""


def _chain_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"X": rng.standard_normal((64, 48), dtype=np.float32),
            "G": rng.standard_normal(48, dtype=np.float32),
            "B": rng.standard_normal(48, dtype=np.float32),
            "S": rng.uniform(1, 2, 64).astype(np.float32)}


@pytest.mark.parametrize("block_size", [None, 200])
def test_elementwise_chains_leave_inputs_alone_and_match_numpy(tmp_path, block_size):
    """Chains of + - * / over broadcast operands (NumPy writes each step into the
    previous step's fresh result): the values NumPy gives written by hand, the
    inputs unchanged, and a second run the same; with block_size too, where the
    max-product runs in blocks that each read its factors again."""
    for name, array in _chain_inputs(0).items():
        np.save(tmp_path / f"{name.lower()}.npy", np.zeros_like(array))
    config = fuse_lang.ExecutionConfig(block_size=block_size)
    prog = fuse_lang.compile(CHAINS, backend="numpy", base_dir=tmp_path, config=config)
    v = _chain_inputs(1)
    kept = {k: a.copy() for k, a in v.items()}
    x, g, b, s = v["X"], v["G"], v["B"], v["S"][:, None]
    t = x + g
    want = {"Y": np.maximum(x * g + b, 0) * s - x * np.float32(0.5),
            "Z": x - g - b * s - 2, "Q": x * g / (b + 3) / s, "R": t * t - t,
            "M": ((g + 1) * x).max(axis=1)}
    first = prog.run(v)
    for name, value in want.items():
        np.testing.assert_allclose(first[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
    for name, array in kept.items():
        np.testing.assert_array_equal(v[name], array, err_msg=name)
    second = prog.run(v)
    for name in want:
        np.testing.assert_array_equal(second[name], first[name], err_msg=name)


CONVOLUTIONS = """
I[c,x] = "i.npy"
W[o,c,dx] = "w.npy"
F[dx] = "f.npy"
Y[o,x] = W[o,c,dx] I[c,x+dx]
L[o,x] = W[o,c,dx] I[c,x+dx-2]
T[c,x] = F[dx] I[c,dx+x+3]
A[c,x] = F[dx] I[c,x+dx-9]
export Y, L, T, A
"""


def _conv_by_hand(i: np.ndarray, kernel: np.ndarray, shift: int) -> np.ndarray:
    """out[..., x] = sum_dx kernel[..., dx] * i[:, x + dx + shift], 0 outside."""
    channels, length = i.shape
    width = kernel.shape[-1]
    cells = np.zeros((channels, length, width), np.float64)
    for x in range(length):
        for d in range(width):
            if 0 <= x + d + shift < length:
                cells[:, x, d] = i[:, x + d + shift]
    return cells


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("compiled", [False, True])
def test_index_arithmetic_convolutions_match_the_reference(tmp_path, backend, compiled):
    """`I[c,x+dx]` with offsets that read past either end (zeros there), or
    wholly outside (`x+dx-9` over 6 cells), equal the convolution by hand on
    every backend, eager and compiled (torch reads the cells as windows of the
    padded axis, the others gather them)."""
    if backend == "numpy" and compiled:
        pytest.skip("numpy has no compiled runs")
    rng = np.random.default_rng(3)
    v = {"I": rng.standard_normal((3, 6), dtype=np.float32),
         "W": rng.standard_normal((2, 3, 3), dtype=np.float32),
         "F": rng.standard_normal(3, dtype=np.float32)}
    for name, array in v.items():
        np.save(tmp_path / f"{name.lower()}.npy", array)
    out = fuse_lang.compile(CONVOLUTIONS, backend=backend, base_dir=tmp_path,
                            compiled=compiled).run(v)
    i, w, f = (v[k].astype(np.float64) for k in ("I", "W", "F"))
    want = {"Y": np.einsum("ocd,cxd->ox", w, _conv_by_hand(i, w, 0)),
            "L": np.einsum("ocd,cxd->ox", w, _conv_by_hand(i, w, -2)),
            "T": np.einsum("d,cxd->cx", f, _conv_by_hand(i, f, 3)),
            "A": np.zeros((3, 6))}
    for name, value in want.items():
        np.testing.assert_allclose(out[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


STEP_FORMS = """
W[i,j] = "w.npy"
U[i,t] = "u.npy"
X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t+1]) + U[i,t-1]
Y[i,*t+1] = tanh(W[i,j] Y[j,*t] (j < t) + U[i,t])
export X, Y
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_recurrence_step_forms_compiled_match_numpy(tmp_path, backend):
    """Reads at t+1 and t-1 past the ends (zeros), and a comparison with the
    step (j < t, which a
    loop inside a jax graph cannot hold as a number: those steps run one by one):
    compiled runs give NumPy's values, and follow new inputs."""
    rng = np.random.default_rng(5)
    make = lambda: {"W": rng.standard_normal((4, 4), dtype=np.float32) * np.float32(0.4),  # noqa: E731
                    "U": rng.standard_normal((4, 7), dtype=np.float32)}
    for name, array in make().items():
        np.save(tmp_path / f"{name.lower()}.npy", array)
    reference = fuse_lang.compile(STEP_FORMS, backend="numpy", base_dir=tmp_path)
    prog = fuse_lang.compile(STEP_FORMS, backend=backend, base_dir=tmp_path,
                             compiled=backend != "numpy")
    for _ in range(2):
        v = make()
        got, want = prog.run(v), reference.run(v)
        for name in ("X", "Y"):
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5,
                                       err_msg=name)
