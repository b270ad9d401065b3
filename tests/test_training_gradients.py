"""Gradients of a loss through the engine equal central finite differences (float64).

Each program is small and its params random; `program.gradients` differentiates
with the backend's framework, the finite differences come from NumPy runs of
the same program (the reference semantics)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import fuse_lang

BACKENDS = [pytest.param("torch", marks=pytest.mark.skipif(
                not importlib.util.find_spec("torch"), reason="no torch")),
            pytest.param("jax", marks=pytest.mark.skipif(
                not importlib.util.find_spec("optax"), reason="no jax/optax"))]

DATA = 'X[n,j] = "x.npy"\nT[n,i] = "t.npy"\n'
PROGRAMS = {
    "join, sum, tanh": "param W[i,j], B[i]\nY[n,i] = tanh(W[i,j] X[n,j] + B[i])\n"
                       "L = Y[n,i] T[n,i] + 0.1 Y[n,i] Y[n,i]\ntrain L",
    "two layers, relu, sig": "param W1[h,j], W2[i,h]\naxis h = 5\n"
                             "H[n,h] = relu(W1[h,j] X[n,j])\nY[n,i] = sig(W2[i,h] H[n,h])\n"
                             "L avg= (Y[n,i] - T[n,i])^2\ntrain L",
    "max projection": "param W[i,j]\nM[n] max= W[i,j] X[n,j] T[n,i]\nL = M[n] M[n]\ntrain L",
    "softmax cross-entropy": "param W[i,j]\nP[n,i.] = softmax(W[i,j] X[n,j])\n"
                             "L = -(log(P[n,i]) T[n,i])\ntrain L",
    "exp, layer norm": "param W[i,j], G[i]\nZ[n,i.] = lnorm(W[i,j] X[n,j])\n"
                       "L = exp(0.3 Z[n,i] G[i]) T[n,i]\ntrain L",
    "offsets": "param W[i,j]\nY[n,i] = W[i,j] X[n,j+1] + W[i,j] X[n,j-1]\n"
               "L = Y[n,i] Y[n,i] T[n,i]\ntrain L",
    "avg= and min=": "param W[i,j]\nA[n] avg= W[i,j] X[n,j] T[n,i]\nM[i] min= W[i,j] X[n,j]\n"
                     "L = A[n] A[n] + M[i] M[i]\ntrain L",
    "recurrence over an offset": "param W[j]\nY[n] = W[j] X[n,j]\nY[n] += 0.5 Y[n-1]\n"
                                 "L = Y[n] Y[n]\ntrain L",
    "rnn over a virtual index": "param W[h,h'], U[h,j]\naxis h = 2\n"
                                "S[h,*n+1] = tanh(W[h,h'] S[h',*n] + U[h,j] X[n,j])\n"
                                "F[h] = S[h,*n]\nL = F[h] F[h]\ntrain L",
    "gelu, sqrt, pow": "param W[i,j]\nY[n,i] = gelu(W[i,j] X[n,j]) + pow(W[i,j] W[i,j], 2)\n"
                       "L = sqrt(Y[n,i] Y[n,i] T[n,i] + 1)\ntrain L",
    "slices": "param W[i,k], V[i]\naxis k = 2\nY[n,i] = W[i,k] X[n,1:3] + V[0:2] X[n,0:2]\n"
              "L = Y[n,i] Y[n,i] T[n,i]\ntrain L",
    "offset on the batch axis": "param W[i,j]\nY[n,i] = W[i,j] X[n+1,j] - W[i,j] X[n-1,j]\n"
                                "L = Y[n,i] Y[n,i] T[n,i]\ntrain L",
    "convolution and pooling": "param F[d], W[i,j]\naxis d = 2\nC[n,j] = F[d] X[n,j+d]\n"
                               "P[n/2,i] = W[i,j] C[n,j] T[n,i]\nL = P[m,i] P[m,i]\ntrain L",
    "avg= and max= projections": "param W[i,j]\nA[n,i] avg= W[i,j] X[n,j] T[n,i]\n"
                                 "M[n] max= W[i,j] X[n,j] T[n,i]\n"
                                 "L = A[n,i] A[n,i] + M[n] M[n]\ntrain L",
    "a Boolean rule relaxed by sig(x, T)": "param E[n,k]\naxis k = 2\nR(n,m) = T[n,0] T[m,1]\n"
                                           "D[n,m] = sig(E[n,k] E[m,k] + R(n,m), 0.5)\n"
                                           "L avg= (D[n,m] - T[n,1])^2\ntrain L",
    "a recursive rule relaxed by sig(x, T)": "param E[n,m]\n"
                                             "A[n,m] = sig(E[n,m] + 0.3 A[n,p] E[p,m], 0.5)\n"
                                             "L = A[n,m] T[n,0]\ntrain L",
    "topk's values": "param W[i,j]\nY[n,i] = W[i,j] X[n,j] T[n,i]\nK[n,i] = topk(Y[n,i], k=1)\n"
                     "L = K[n,i] K[n,i]\ntrain L",
    "a numeric fixpoint": "param W[j]\nA = 0.5 A + W[j] X[n,j] T[n,i]\nL = A A\ntrain L",
    "concat, max(a, b), an index mask": "param W[i,j], V[k,j]\naxis k = 2\n"
                                        "A[n,i] = max(W[i,j] X[n,j], 0.1) T[n,i]\n"
                                        "B[n,k] = V[k,j] X[n,j] (k < j)\n"
                                        "C[n,c] = concat(A[n,c], B[n,c], axis=c)\n"
                                        "L = C[n,c] C[n,c]\ntrain L",
}


def _data(tmp_path, seed):
    rng = np.random.default_rng(seed)
    np.save(tmp_path / "x.npy", rng.normal(size=(4, 3)))
    np.save(tmp_path / "t.npy", rng.uniform(size=(4, 2)))


def _finite_differences(reference, params, eps=1e-6):
    def loss(values):
        return float(reference.run(values)["L"])

    out = {}
    for name, value in params.items():
        grad = np.zeros_like(value)
        for pos in np.ndindex(value.shape):
            up, down = value.copy(), value.copy()
            up[pos] += eps
            down[pos] -= eps
            grad[pos] = (loss({**params, name: up}) - loss({**params, name: down})) / (2 * eps)
        out[name] = grad
    return out, loss(params)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_gradients_equal_finite_differences(tmp_path, backend, name):
    for seed in (0, 1):
        _data(tmp_path, seed)
        text = DATA + PROGRAMS[name]
        program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
        reference = fuse_lang.compile(text, base_dir=tmp_path, precision="fp64", targets=["L"])
        rng = np.random.default_rng(100 + seed)
        shapes = {n: t.shape for n, t in program.analysis.tensors.items() if t.kind == "param"}
        params = {n: rng.normal(size=s) for n, s in shapes.items()}
        value, grads = program.gradients(params)
        expected, expected_value = _finite_differences(reference, params)
        assert value == pytest.approx(expected_value, rel=1e-9)
        for param in params:
            np.testing.assert_allclose(grads[param], expected[param], rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name}: d L / d {param}")


def test_a_numeric_fixpoint_unrolled_on_jax_trains_as_on_torch(tmp_path):
    """Iterated to tolerance: torch's autograd follows the rounds taken; on jax the
    fixpoint is unrolled to a fixed number of rounds (counted once at the start),
    which jax differentiates: both frameworks take the same steps."""
    pytest.importorskip("torch")
    pytest.importorskip("optax")
    _data(tmp_path, 0)
    text = DATA + "param W[j]\nA = 0.5 A + W[j] X[n,j] T[n,i]\nL avg= (A - 1)^2\ntrain L"
    losses = {}
    for backend in ("torch", "jax"):
        program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
        losses[backend] = program.train(optimizer="sgd", learning_rate=0.01, steps=20).losses
    assert losses["jax"][-1] < losses["jax"][0] / 2
    np.testing.assert_allclose(losses["jax"], losses["torch"], rtol=1e-9)


# ---------------------------------------------------------------- random programs
SMOOTH = ("tanh({})", "sig({})", "exp(0.2 {})", "gelu({})", "sqrt({0} {0} + 1)", "{}")
AXES = ("a", "b", "c")


def random_program(seed: int) -> str:
    """A small random program over the data X[n,j], T[n,i]: a chain of joins with
    params (each contracting an axis), projections (sum, avg=, max=), smooth
    nonlinearities, biases, softmax and layer norm, then a scalar loss."""
    rng = np.random.default_rng(seed)
    lines = [f"axis a = {rng.integers(2, 4)}", f"axis b = {rng.integers(2, 4)}", "axis c = 2"]
    params = []
    current, axis = "X[n,j]", "j"
    for k in range(int(rng.integers(1, 4))):
        new = AXES[k]
        params.append(f"W{k}[{new},{axis}]")
        term = f"W{k}[{new},{axis}] {current}"
        if k == 1 and rng.random() < 0.5:
            params.append("B[b]")
            term += " + B[b]"
        kind = rng.choice(["smooth", "smooth", "softmax", "lnorm", "avg", "max"])
        name = f"H{k}"
        if kind == "softmax" or kind == "lnorm":
            call = "softmax" if kind == "softmax" else "lnorm"
            lines.append(f"{name}[n,{new}.] = {call}({term})")
        elif kind in ("avg", "max"):  # a projection of an extra axis of the data
            lines.append(f"{name}[n,{new}] {kind}= ({term}) T[n,i]")
        else:
            lines.append(f"{name}[n,{new}] = " + str(rng.choice(SMOOTH)).format(f"({term})"))
        current, axis = f"{name}[n,{new}]", new
    lines.append(f"L = {current} {current} T[n,0]" if rng.random() < 0.5
                 else f"L avg= ({current} - 0.5)^2")
    lines.append("train L")
    return "\n".join(["param " + ", ".join(params)] + lines)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(8))
def test_random_programs_gradients_equal_finite_differences(tmp_path, backend, seed):
    _data(tmp_path, seed)
    text = DATA + random_program(seed)
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
    reference = fuse_lang.compile(text, base_dir=tmp_path, precision="fp64", targets=["L"])
    rng = np.random.default_rng(200 + seed)
    params = {n: rng.normal(size=t.shape) for n, t in program.analysis.tensors.items()
              if t.kind == "param"}
    value, grads = program.gradients(params)
    expected, expected_value = _finite_differences(reference, params)
    assert value == pytest.approx(expected_value, rel=1e-9), text
    for param in params:
        np.testing.assert_allclose(grads[param], expected[param], rtol=1e-5, atol=1e-7,
                                   err_msg=f"d L / d {param} of\n{text}")
