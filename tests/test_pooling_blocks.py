"""Pooling whose blocks fill the axis (`P[x/2,y/3] = F[x,y]` over 8x9) runs as a
reshape and a sum of the blocks' cells (run/interpret/lhs.py, `_pooled`), not a
scatter; its values, on every backend, and its gradient on torch are those of
the blocks computed by hand."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import fuse_lang

BACKENDS = ["numpy"] + [b for b in ("torch", "jax") if importlib.util.find_spec(b)]
F = np.random.default_rng(3).normal(size=(3, 8, 9))
BLOCKS = F.reshape(3, 4, 2, 3, 3)  # (n, x/2, 2, y/3, 3)
EXPECTED = {"": BLOCKS.sum((2, 4)), "avg": BLOCKS.mean((2, 4)), "max": BLOCKS.max((2, 4)),
            "min": BLOCKS.min((2, 4))}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", list(EXPECTED))
def test_blocks_that_fill_the_axes_pool_as_by_hand(tmp_path, backend, op):
    np.save(tmp_path / "f.npy", F)
    text = f'F[n,x,y] = "f.npy"\nP[n,x/2,y/3] {op}= F[n,x,y]\nexport P\n'
    out = fuse_lang.compile(text, backend=backend, base_dir=tmp_path,
                            precision="fp64").run()["P"]
    assert out.shape == (3, 4, 3)
    np.testing.assert_allclose(out, EXPECTED[op], rtol=1e-12)


def test_a_partial_last_block_of_a_sum_is_padded_and_the_gradient_flows(tmp_path):
    torch = pytest.importorskip("torch")
    np.save(tmp_path / "f.npy", F[:, :7])  # 7 rows: blocks of 2, the last one of 1
    text = ('F[n,x,y] = "f.npy"\nparam W[x,y]\nP[n,x/2,y/3] = W[x,y] F[n,x,y]\n'
            'L = P[n,u,v] P[n,u,v]\ntrain L\nexport P\n')
    program = fuse_lang.compile(text, backend="torch", base_dir=tmp_path, precision="fp64")
    w = np.random.default_rng(4).normal(size=(7, 9))
    value, grads = program.gradients({"W": w})
    weighted = torch.tensor(w * F[:, :7], requires_grad=True)
    padded = torch.cat([weighted, torch.zeros(3, 1, 9, dtype=torch.float64)], 1)
    pooled = padded.reshape(3, 4, 2, 3, 3).sum((2, 4))
    (pooled * pooled).sum().backward()
    assert value == pytest.approx(float((pooled * pooled).sum().detach()), rel=1e-10)
    np.testing.assert_allclose(grads["W"], (weighted.grad.numpy() * F[:, :7]).sum(0),
                               rtol=1e-10)
