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
