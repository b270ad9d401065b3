"""LANGUAGE.md §6-8 through the public API: several equations for one tensor,
evaluation order and recursion, extents."""
from __future__ import annotations

import numpy as np
import pytest

import fuse_lang


def _run(text: str, **kw):
    return {k: np.asarray(v, dtype=float) for k, v in dict(fuse_lang.compile(text, **kw).run()).items()}


@pytest.mark.parametrize("extra, expected", [
    ("W[i] avg= 3", [2.0, 2.0, 2.0]),                   # mean of the file's 1 and 3
    ("W[i] avg= 3\nW[i] avg= 5", [3.0, 3.0, 3.0]),      # mean of 1, 3 and 5
])
def test_avg_counts_a_source_as_one_of_the_averaged_values(tmp_path, extra, expected):
    np.save(tmp_path / "w.npy", np.ones(3, dtype=np.float32))
    got = _run(f'W[i] = "w.npy"\n{extra}\nexport W', base_dir=tmp_path)
    np.testing.assert_allclose(got["W"], expected)


def test_avg_equations_alone_are_averaged():
    got = _run("P[b,o] = const([[1,5],[3,2]])\nM[o] avg= P[b,o]\nM[o] avg= 1\nexport M")
    np.testing.assert_allclose(got["M"], [1.5, 2.25])


def test_a_fixpoint_not_finite_after_its_first_round_names_no_earlier_change():
    with pytest.raises(fuse_lang.FuseError) as caught:
        fuse_lang.compile("X = X / X + 1\nexport X").run()
    message = str(caught.value)
    assert "after 1 iteration the values are no longer finite" in message
    assert "last change" not in message  # there was no round before the first


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_numeric_fixpoint_converges_to_the_solution(backend):
    got = _run("W[i,j] = const([[0.5,0],[0.25,0.25]])\nX[i] = W[i,j] X[j] + 1\n"
               "Y = 0.5 Z + 1\nZ = 0.5 Y\nexport X, Y, Z", backend=backend)
    np.testing.assert_allclose(got["X"], [2.0, 2.0], atol=1e-5)
    np.testing.assert_allclose([got["Y"], got["Z"]], [4 / 3, 2 / 3], atol=1e-5)


def test_recurrences_over_offsets_are_computed_in_order():
    got = _run("axis i = 3\naxis j = 3\nL[i,j] = L[i-1,j] + L[i,j-1] + 1\n"
               "A[k] = const([3,1,4,1,5])\nR[k] max= R[k-1]\nR[k] max= A[k]\nexport L, R")
    np.testing.assert_allclose(got["L"], [[1, 2, 3], [2, 5, 9], [3, 9, 19]])
    np.testing.assert_allclose(got["R"], [3, 3, 4, 4, 5])


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("text, expected", [
    ("D[0] min= 3\nD[1] min= 2\nD[1] min= 5", [3, 2]),        # not min(0, 3) at D[0]
    ("D[0] max= -3\nD[1] max= -2\nD[1] max= -5", [-3, -2]),   # not max(0, -3)
    ("D[0] avg= 3\nD[1] avg= 5\nD[1] avg= 1", [3, 3]),         # each cell over its own
    ("axis i = 4\nY[i] max= -1\nY[i+1] max= 0 - i\nY[0:2] max= 5", [5, 5, -1, -1]),
    ("axis i = 4\nD[0] min= 0\nD[i+1] min= D[i] + 1", [0, 1, 2, 3]),  # a recurrence
    ("axis i = 3\nD[0] max= 2\nD[i] max= D[i] - 1\nD[i+1] max= D[i] - 0.5", [2, 1.5, 1]),
    ("D[1] min= 4\nD[3] min= 1", [0, 4, 0, 1]),                # a cell nothing writes is 0
])
def test_max_min_avg_combine_each_cell_over_the_equations_that_write_it(backend, text,
                                                                         expected):
    """LANGUAGE.md §6: equations combine by max/min; an equation whose head is a
    constant, an offset or a slice writes only its cells (it used to add a 0 to
    every other cell, so `D[0] min= 3` with `D[1] min= 2` gave [0, 0])."""
    got = _run(f"{text}\nexport D, Y" if "Y[" in text and "D[" in text
               else f"{text}\nexport {'Y' if 'Y[' in text else 'D'}", backend=backend)
    np.testing.assert_allclose(next(iter(got.values())), expected)


def test_facts_with_min_keep_their_tuples_and_values():
    got = _run("D[Alice] min= 3\nD[Bob] min= 2\nD[Bob] min= 5\n"
               "R(Alice) min= 1\nR(Bob) min= 1\nexport D, R")
    np.testing.assert_allclose(got["D"], [3, 2])
    np.testing.assert_allclose(got["R"], [1, 1])  # a Boolean relation: both tuples


@pytest.mark.parametrize("backend, precision", [("numpy", "fp32"), ("torch", "fp32"),
                                                ("jax", "fp32"), ("torch", "fp16")])
def test_a_min_or_max_fixpoint_starts_from_nothing_derived(tmp_path, backend, precision):
    """A `min=` group starts from +inf and a `max=` group from -inf: a shortest
    path gives the distances (from 0 it gave [0, 0, 0, 0, 0]: `D[x] + W[x,x]` held
    every cell at 0) and an unreachable node stays +inf."""
    inf = np.inf
    np.save(tmp_path / "w.npy", np.array(
        [[0, 1, 9, inf, inf], [inf, 0, 2, inf, inf], [inf, inf, 0, 3, inf],
         [inf, inf, inf, 0, inf], [inf, inf, inf, 1, 0]], dtype=np.float32))
    got = _run('W[x,y] = "w.npy"\nD[y] min= W[0, y]\nD[y] min= D[x] + W[x, y]\n'
               'L[y] max= 0 - W[0, y]\nL[y] max= L[x] - W[x, y]\nexport D, L',
               base_dir=tmp_path, backend=backend, precision=precision)
    np.testing.assert_array_equal(got["D"], [0, 1, 3, 6, inf])
    np.testing.assert_array_equal(got["L"], [0, -1, -3, -6, -inf])


def test_the_recursion_note_says_where_a_min_group_starts():
    found = [d.message for d in fuse_lang.analyze(
        "W[x,y] = const([[0, 1], [5, 0]])\nD[y] min= W[0, y]\nD[y] min= D[x] + W[x, y]\n"
        "export D").diagnostics if d.code == "recursion"]
    assert found and "D from +inf" in found[0]
