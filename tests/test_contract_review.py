"""Regression tests from a review against the contract (shared/LANGUAGE.md),
each program written from the contract alone and compared with NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import fuse_lang


def run(tmp_path, text, inputs=None, **arrays):
    for name, array in arrays.items():
        np.save(tmp_path / f"{name.lower()}.npy", np.asarray(array, dtype=np.float32))
    program = fuse_lang.compile(text, base_dir=tmp_path)
    return program.run(inputs=inputs)


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=1e-5, atol=1e-5)


A = np.array([[1, -2], [3, -4], [5, 6]], np.float32)
B = np.array([1, -1], np.float32)
HEAD = 'A[i,j] = "a.npy"\nB[j] = "b.npy"\n'


# §2/§5: `max=` projects with max instead of sum: max over the RHS, not a sum of per-term maxima
@pytest.mark.parametrize("op,fn", [("max=", np.max), ("min=", np.min), ("avg=", np.mean)])
def test_projection_op_over_a_sum_of_terms_sharing_the_index(tmp_path, op, fn):
    out = run(tmp_path, HEAD + f"Y[i] {op} A[i,j] + B[j]\nexport Y", A=A, B=B)
    close(out["Y"], fn(A + B, axis=1))


def test_reduce_max_over_a_parenthesised_sum(tmp_path):
    out = run(tmp_path, HEAD + "Y[i] = reduce(max, j) (A[i,j] + B[j])\nexport Y", A=A, B=B)
    close(out["Y"], (A + B).max(axis=1))


def test_max_projection_still_adds_a_term_without_the_index_once(tmp_path):
    out = run(tmp_path, HEAD + "C = const([10, 20, 30])\nY[i] max= A[i,j] + C[i]\nexport Y",
              A=A, B=B)
    close(out["Y"], A.max(axis=1) + [10, 20, 30])


def test_viterbi_in_log_space(tmp_path):
    init = np.log(np.array([0.6, 0.4]))
    trans = np.log(np.array([[0.7, 0.3], [0.4, 0.6]]))
    emit = np.log(np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]]))
    obs = [0, 1, 2]
    E = emit[:, obs].T  # E[t,s]
    text = ('Init[s] = "init.npy"\nT[r,s] = "t.npy"\nE[t,s] = "e.npy"\n'
            "V[0,s] max= Init[s] + E[0,s]\n"
            "V[t,s] max= V[t-1,r] + T[r,s] + E[t,s]\nexport V")
    out = run(tmp_path, text, Init=init, T=trans, E=E)
    # V[0,s] also gets the second equation's value at t = 0 (V[-1,r] reads 0)
    first = np.maximum(init + E[0], trans.max(axis=0) + E[0])
    expected = [first]
    for t in range(1, 3):
        expected.append((expected[-1][:, None] + trans).max(axis=0) + E[t])
    close(out["V"], np.array(expected))


# §9: sinks write the same formats as sources, `.txt` included
def test_txt_sink_round_trips_a_token_matrix(tmp_path):
    (tmp_path / "words.txt").write_text("the cat sat on the mat\n")
    run(tmp_path, 'T(p,w) = "words.txt"\n"out/copy.txt" = T(p,w)\n"out/dense.txt" = T[p,w] * 2')
    assert (tmp_path / "out" / "copy.txt").read_text().split() == \
        "the cat sat on the mat".split()
    dense = np.loadtxt(tmp_path / "out" / "dense.txt")
    assert dense.shape == (6, 5) and dense[4, 0] == 2 and dense.sum() == 12


# §9: runtime inputs override a source's file, so the file need not exist
def test_runtime_input_replaces_a_missing_source_file(tmp_path):
    text = 'X[i,j] = "not_there.npy"\nY[i] = X[i,j]\nexport Y'
    program = fuse_lang.compile(text, base_dir=tmp_path)
    close(program.run(inputs={"X": np.ones((2, 3))})["Y"], [3, 3])
    with pytest.raises(fuse_lang.FuseError, match="not_there.npy"):
        program.run()


def test_a_missing_source_with_other_errors_still_fails_at_compile(tmp_path):
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile('X[i] = "not_there.npy"\nY[i] = Z[i]', base_dir=tmp_path)
    assert {d.code for d in err.value.diagnostics} == {"missing-source", "undefined-tensor"}


# §3: an offset or a slice in a query reads like in any other reference
def test_query_with_an_offset_or_a_slice(tmp_path):
    text = "A = const([1, 2, 3])\nY[i] = A[i]\nY[i+1]?\nY[i-1]?\nY[1:3]?"
    answers = fuse_lang.compile(text, base_dir=tmp_path).execute().queries
    close(answers[0].value, [2, 3, 0])
    close(answers[1].value, [0, 1, 2])
    close(answers[2].value, [2, 3])


def test_boolean_query_with_a_slice_names_the_sliced_symbols(tmp_path):
    text = "E(A, B)\nE(B, C)\nE(C, A)\nE(x, y)?\nE(A, 1:3)?"
    answer = fuse_lang.compile(text, base_dir=tmp_path).execute().queries[1]
    # E's second axis holds B, C, A (in order of appearance): 1:3 is C, A
    close(answer.value, [0, 0])
    text = "E(A, B)\nE(B, C)\nE(C, A)\nE(x, 1:3)?"
    answer = fuse_lang.compile(text, base_dir=tmp_path).execute().queries[0]
    assert answer.tuples == [("B", "C"), ("C", "A")]


# §5: `reduce(op, j)` projects j explicitly; another index of its body is projected by
# the enclosing scope (the RHS's operator), not by the reduce's op
def test_reduce_projects_only_the_indices_it_names(tmp_path):
    A3 = np.arange(12, dtype=np.float32).reshape(2, 3, 2) * np.array([1, -1], np.float32)
    out = run(tmp_path, 'A[i,j,k] = "a.npy"\nY[i] = reduce(max, j) A[i,j,k]\n'
              "Z[i] max= reduce(sum, j) A[i,j,k]\nexport Y, Z", A=A3)
    close(out["Y"], A3.max(axis=1).sum(axis=1))
    close(out["Z"], A3.sum(axis=1).max(axis=1))
