"""The backends' own operations against numpy's einsum (property-based)."""
import string

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fuse_lang.run.backends import get_backend
from fuse_lang.run.backends.numpy_backend import NumpyBackend


@st.composite
def two_operand_einsums(draw):
    letters = draw(st.lists(st.sampled_from(string.ascii_lowercase[:6]), min_size=1,
                            max_size=5, unique=True))
    sizes = {c: draw(st.integers(1, 4)) for c in letters}
    a = draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3, unique=True))
    b = draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3, unique=True))
    used = list(dict.fromkeys(a + b))
    out = draw(st.permutations(used).map(lambda p: p[:draw(st.integers(0, len(p)))]))
    return "".join(a) + "," + "".join(b) + "->" + "".join(out), sizes


@settings(max_examples=300, deadline=None)
@given(two_operand_einsums(), st.integers(0, 2**31 - 1))
def test_pairwise_matmul_einsum_equals_numpy_einsum(case, seed):
    spec, sizes = case
    rng = np.random.default_rng(seed)
    inputs = spec.split("->")[0].split(",")
    a, b = (rng.standard_normal([sizes[c] for c in s]) for s in inputs)
    expected = np.einsum(spec, a, b)
    np.testing.assert_allclose(get_backend("numpy", precision="fp64").einsum(spec, a, b),
                               expected, rtol=1e-10, atol=1e-10)
    # torch's two-operand einsum is the same matmul plan, on torch's own ops
    torch = pytest.importorskip("torch")
    got = get_backend("torch", precision="fp64").einsum(spec, torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)


def test_einsum_results_are_new_memory():
    B = NumpyBackend()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = B.einsum("ab->ab", x)
    out += 1  # the engine updates fresh results in place: x must not change
    assert x[0, 0] == 0


def test_softmax_in_place_only_when_fresh():
    B = NumpyBackend()
    x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    kept = x.copy()
    B.softmax(x, 1)
    np.testing.assert_array_equal(x, kept)
    out = B.softmax(x, 1, fresh=True)
    assert out is x and np.isclose(x.sum(), 1.0)
