"""Index forms of LANGUAGE.md §3 combined with the builtins that read an LHS
axis: the values are those computed by hand with NumPy."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import fuse_lang

BACKENDS = ["numpy"] + [b for b in ("torch",) if importlib.util.find_spec(b)]
W = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], dtype=float)
SRC = f"W = const({W.astype(int).tolist()})\n"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _lnorm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)


CASES = {
    # without a dot softmax and lnorm work along the last LHS axis, a slice's too
    "Y[i,:] = softmax(W[i, 1:3])": _softmax(W[:, 1:3]),
    "Y[:,:] = softmax(W[0:2, 1:3])": _softmax(W[0:2, 1:3]),
    "Y[i,:] = lnorm(W[i, 1:3])": _lnorm(W[:, 1:3]),
    "Y[i,:] = log_softmax(W[i, 1:3])": np.log(_softmax(W[:, 1:3])),
    "Y[:,i] = softmax(W[i, 1:3])": _softmax(W[:, 1:3].T),
    "Y[i.,:] = softmax(W[i, 1:3])": _softmax(W[:, 1:3].T).T,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("equation", list(CASES))
def test_normalising_builtins_take_a_slice_axis_as_the_last_lhs_axis(backend, equation):
    out = fuse_lang.compile(SRC + equation + "\nexport Y\n", backend=backend).run()["Y"]
    np.testing.assert_allclose(np.asarray(out), CASES[equation], rtol=1e-4, atol=1e-4)


CONST_CASES = {
    # const binds the literal to the LHS axes in order, a slice's too
    "Y[:] = const([1,2,3])": np.array([1.0, 2, 3]),
    "Y[i,:] = const([[1,2],[3,4]])": np.array([[1.0, 2], [3, 4]]),
    "Y[:,i] = const([[1,2],[3,4]])": np.array([[1.0, 2], [3, 4]]),
}


@pytest.mark.parametrize("equation", list(CONST_CASES))
def test_const_binds_to_a_slice_on_the_lhs(equation):
    text = equation + "\nexport Y\n"
    assert not [d for d in fuse_lang.analyze(text).diagnostics if d.severity.name == "ERROR"]
    out = fuse_lang.compile(text).run()["Y"]
    np.testing.assert_allclose(np.asarray(out), CONST_CASES[equation])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lhs", ["X[i,*t+1]", "X[i.,*t+1]"])
def test_softmax_in_a_recurrence_works_along_the_last_real_axis(backend, lhs):
    # the virtual axis is no axis of X: without a dot softmax is along i
    text = ("U = const([[1,2,3],[1,1,1]])\n"
            f"{lhs} = softmax(X[i,*t] + U[i,t])\nexport X\n")
    x = np.zeros(2)
    for t in range(3):
        x = _softmax(x + np.array([[1, 2, 3], [1, 1, 1.0]])[:, t])
    out = fuse_lang.compile(text, backend=backend).run()["X"]
    np.testing.assert_allclose(np.asarray(out), x, rtol=1e-5)
