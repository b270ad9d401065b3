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


def test_a_numeric_fixpoint_differentiates_on_torch_and_is_refused_clearly_on_jax(tmp_path):
    """Iterated to tolerance: torch's autograd follows the rounds taken; jax cannot
    trace a loop that stops on concrete values, and says so."""
    pytest.importorskip("torch")
    _data(tmp_path, 0)
    text = DATA + "param W[j]\nA = 0.5 A + W[j] X[n,j] T[n,i]\nL = A A\ntrain L"
    params = {"W": np.random.default_rng(3).normal(size=3)}
    reference = fuse_lang.compile(text, base_dir=tmp_path, precision="fp64", targets=["L"])
    expected, _ = _finite_differences(reference, params)
    program = fuse_lang.compile(text, backend="torch", base_dir=tmp_path, precision="fp64")
    _, grads = program.gradients(params)
    np.testing.assert_allclose(grads["W"], expected["W"], rtol=1e-4)
    if importlib.util.find_spec("optax"):
        on_jax = fuse_lang.compile(text, backend="jax", base_dir=tmp_path, precision="fp64")
        with pytest.raises(fuse_lang.FuseError, match="train it on the torch backend"):
            on_jax.gradients(params)
