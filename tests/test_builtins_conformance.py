"""LANGUAGE.md §10 (builtins) against references written here with NumPy.

Each test is a mismatch an audit of the builtins found, minimised: run through
`fuse_lang.compile(...).run()` on NumPy, eager torch and jitted jax (those
installed), or checked through `fuse check`.  A slice on the left-hand side is
an axis like any other (docs/language.md, "Slices are anonymous variables
matched by ordinal"): `topk` ranks along it when it is last, `causal_mask`
binds to it, and a numbered `axis=` counts it.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_backend_conformance import _run_on

import fuse_lang
from fuse_lang.cli import main as cli_main

RUNS = [("numpy", None), ("torch", False), ("jax", True)]

X = np.array([[1.0, 5, 5, 2], [3, 3, 3, 9], [0, -1, 4, 4]])
A = np.array([[1.0, 2, 3], [0, -1, 5]])


def _literal(array: np.ndarray) -> str:
    return "const(" + str(array.tolist()) + ")"


_run = _run_on  # (the backend conformance test's runner)


def _topk(a: np.ndarray, k: int) -> np.ndarray:
    """The k largest of each row along the last axis, descending, ties by lower index."""
    order = np.argsort(-a, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(a, order, -1)


def _softmax(a: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _check(tmp_path, capsys, text: str) -> tuple[int, str]:
    prog = tmp_path / "p.fuse"
    prog.write_text(text)
    code = cli_main(["check", str(prog)])
    return code, capsys.readouterr().out


# ------------------------------------------------------------ topk over an LHS slice

@pytest.mark.parametrize("backend,compiled", RUNS)
@pytest.mark.parametrize("representation", [None, "sparse"])
def test_topk_ranks_along_a_slice_that_is_the_last_lhs_axis(backend, compiled, representation):
    # was: ranked along `i` (the last LHS *variable*), result [[3,5,5,9],[1,3,4,4]]
    text = f"X = {_literal(X)}\nY[i,:] = topk(X[i,:], k=2)\nexport Y\n"
    kwargs = {"representation": {"X": representation}} if representation else {}
    got = _run(backend, compiled, text, **kwargs)["Y"]
    np.testing.assert_array_equal(got, _topk(X, 2))


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_topk_over_a_slice_alone_has_k_values(backend, compiled):
    # was: [5, 4, 3, 0, 0], the slice keeping the argument's extent 5
    text = "X = const([3, 1, 4, 1, 5])\nY[:] = topk(X[:], k=3)\nexport Y\n"
    np.testing.assert_array_equal(_run(backend, compiled, text)["Y"], [5, 4, 3])


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_topk_of_a_part_of_each_row_into_a_part_of_the_result(backend, compiled):
    # was: extent-conflict between the slices 1:4 and 0:2 (topk's row is its own axis)
    text = f"X = {_literal(X)}\nY[i,0:2] = topk(X[i,1:4], k=2)\nexport Y\n"
    np.testing.assert_array_equal(_run(backend, compiled, text)["Y"], _topk(X[:, 1:], 2))


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_topk_with_a_slice_first_still_ranks_along_the_last_axis(backend, compiled):
    text = f"X = {_literal(X)}\nY[:,j] = topk(X[:,j], k=2)\nexport Y\n"
    np.testing.assert_array_equal(_run(backend, compiled, text)["Y"], _topk(X, 2))


def test_topk_whose_argument_lacks_the_ranked_axis_is_a_check_error(tmp_path, capsys):
    # was: clean at check time, then the run stopped ("topk chooses along the last
    # left-hand-side axis `j`, which its argument does not have")
    code, out = _check(tmp_path, capsys, "X = const([1,2,3])\naxis j = 2\n"
                                         "Y[i,j] = topk(X[i], k=2)\nexport Y\n")
    assert code == 1
    assert "3:15: error[bad-argument]: `topk` ranks along the last axis of the left-hand " \
           "side, `j`, which its argument does not have" in out


def test_topk_of_no_values_is_a_check_error(tmp_path, capsys):
    # was: an empty (3, 0) result
    code, out = _check(tmp_path, capsys, f"X = {_literal(X)}\nY[i,j] = topk(X[i,j], k=0)\n"
                                         "export Y\n")
    assert code == 1
    assert "error[bad-argument]: `k=` takes a whole number of at least 1" in out


# ------------------------------------------------------------ a numbered axis= at a slice

@pytest.mark.parametrize("backend,compiled", RUNS)
def test_numbered_axis_counts_a_slice_of_the_lhs(backend, compiled):
    # was: normalised along `j`, axis=0 counting only the LHS's variables
    text = f"A = {_literal(A)}\nY[:,j] = softmax(A[:,j], axis=0)\nexport Y\n"
    np.testing.assert_allclose(_run(backend, compiled, text)["Y"], _softmax(A, 0), rtol=1e-5)


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_numbered_axis_at_a_trailing_slice(backend, compiled):
    # was: bad-argument "there is no index at position 1 (i)"
    text = f"A = {_literal(A)}\nY[i,:] = log_softmax(A[i,:], axis=1)\nexport Y\n"
    np.testing.assert_allclose(_run(backend, compiled, text)["Y"], np.log(_softmax(A, 1)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_concat_along_a_slice(backend, compiled):
    # was: bad-argument (no index at position 1); `axis=1` is the slice, extents add
    b = np.array([[5.0, 6, 7], [8, 9, 10]])
    text = f"A = {_literal(A[:, :2])}\nB = {_literal(b)}\n" \
           "Y[i,:] = concat(A[i,:], B[i,:], axis=1)\nexport Y\n"
    np.testing.assert_array_equal(_run(backend, compiled, text)["Y"],
                                  np.concatenate([A[:, :2], b], 1))


@pytest.mark.parametrize("statement,message", [
    ('"s.npy" = softmax(A[i,j])', "in a sink, which has no left-hand side, name it with "
                                  "`axis=`"),
    ("Y[0] = lnorm(A[1,j])", "but the left-hand side has none"),
    ("Y[*t+1] = log_softmax(Y[*t] + A[t,0])", "but the left-hand side has none"),
])
def test_a_normalising_builtin_with_no_axis_to_work_along_is_a_check_error(
        tmp_path, capsys, statement, message):
    # was: clean at check time, then the run stopped ("softmax and lnorm need an axis")
    code, out = _check(tmp_path, capsys, f"A = {_literal(A)}\n{statement}\nexport A\n")
    assert code == 1
    assert "error[bad-argument]: " in out and message in out


def test_an_axis_keyword_the_dot_overrides_is_a_warning(tmp_path, capsys):
    # was: clean, the dot silently chosen over `axis=j` (LANGUAGE.md §10: dot first)
    code, out = _check(tmp_path, capsys, f"A = {_literal(A)}\n"
                                         "Y[i.,j] = softmax(A[i,j], axis=j)\nexport Y\n")
    assert code == 0
    assert "2:32: warning[dotted-axis]: `softmax` works along the dotted axis `i`; its " \
           "`axis=` (`j`) has no effect" in out


# ------------------------------------------------------------ causal_mask

@pytest.mark.parametrize("backend,compiled", RUNS)
def test_causal_mask_binds_to_lhs_slices(backend, compiled):
    # was: unsized-tensor, the mask's extent given to variables only
    got = _run(backend, compiled, "M[:,:] = causal_mask(3)\nexport M\n")["M"]
    np.testing.assert_array_equal(got, np.tril(np.ones((3, 3))))


@pytest.mark.parametrize("lhs", ["M[q]", "M", "M[q,*t+1]"])
def test_causal_mask_on_fewer_than_two_lhs_axes_is_a_check_error(tmp_path, capsys, lhs):
    # was: clean at check time, then the run stopped ("causal_mask binds to the last
    # two left-hand-side axes; this left-hand side has fewer")
    code, out = _check(tmp_path, capsys, f"{lhs} = causal_mask(3)\nexport M\n")
    assert code == 1
    assert "error[bad-argument]: `causal_mask` is n×n over the last two axes of the " \
           "left-hand side" in out


def test_causal_mask_of_no_positions_is_a_check_error(tmp_path, capsys):
    # was: an empty (0, 0) mask
    code, out = _check(tmp_path, capsys, "M[q,k] = causal_mask(0)\nexport M\n")
    assert code == 1
    assert "1:22: error[bad-argument]: `causal_mask` takes a whole number of at least 1" in out


# ------------------------------------------------------------ reduce

def test_reduce_of_an_lhs_index_is_a_check_error(tmp_path, capsys):
    # was: clean, and the run ignored `reduce`'s `i` (Y = [2, 3], the row sums)
    code, out = _check(tmp_path, capsys, f"A = {_literal(A)}\nY[i] = reduce(sum, i) A[i,j]\n"
                                         "export Y\n")
    assert code == 1
    assert "2:20: error[bad-argument]: `reduce` projects `i`, but `i` is on the left-hand " \
           "side" in out


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_nested_reduce_with_every_operator(backend, compiled):
    text = f"A = {_literal(A)}\nP = reduce(max, i) reduce(sum, j) A[i,j]\n" \
           "Q = reduce(sum, j) reduce(max, i) A[i,j]\nR = reduce(avg, i) reduce(min, j) A[i,j]\n" \
           "export P, Q, R\n"
    got = _run(backend, compiled, text)
    np.testing.assert_allclose([got["P"], got["Q"], got["R"]],
                               [A.sum(1).max(), A.max(0).sum(), A.min(1).mean()], rtol=1e-6)


def test_a_sink_concatenates_along_a_numbered_slice(tmp_path):
    # was: extent-conflict (the two slices one domain) and bad-argument for axis=0
    text = 'A = const([1, 2])\nB = const([3, 4, 5])\n"cat.npy" = concat(A[:], B[:], axis=0)\n' \
           "export A\n"
    fuse_lang.compile(text, base_dir=tmp_path, path=str(tmp_path / "p.fuse")).run()
    np.testing.assert_array_equal(np.load(tmp_path / "cat.npy"), [1, 2, 3, 4, 5])
