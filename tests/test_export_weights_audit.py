"""Export and weights, from a user's side: what an inference export of a
trained program (its loss's targets not in the graph) and a manifest's
edges do (docs/backends.md "Export", docs/weights.md)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

LOSS = """X[b,j] = "x.npy"
W[o,j] = "w.npy"
T[b,o] = "t.npy"
H[b,o] = relu(W[o,j] X[b,j])
D[b,o] = H[b,o] - T[b,o]
L avg= D[b,o] D[b,o]
export H
"""


def test_a_dynamic_export_that_leaves_out_the_targets_is_checked_at_another_size(
        tmp_path: Path):
    # the targets T share the batch index but are not in the graph: the check
    # at another size grows them too (it failed on their file's extent)
    jax = pytest.importorskip("jax")
    del jax
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "t.npy", rng.normal(size=(2, 3)).astype(np.float32))
    program = fuse_lang.compile(LOSS, base_dir=tmp_path)
    made = program.export("jax", dynamic=["b"])
    assert set(made.inputs) == {"X", "W"}  # T is not read by the export
    x = rng.normal(size=(5, 4)).astype(np.float32)
    out = made.run({"X": x, "W": w})
    np.testing.assert_allclose(out["H"], np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)
