"""Eager jax sparse relations on the CPU (run/backends/jax_sparse.py): the
sort, pack and join steps run in NumPy on the host arrays, compiling no kernel
per padded size, with the answers of the NumPy backend."""
from __future__ import annotations

import random

import pytest

import fuse_lang

jax = pytest.importorskip("jax")

PROGRAM = """Parent(x,y) = "parent.tsv"
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(P1, x)?
Ancestor(x, P40)?
"""


@pytest.mark.reference_only  # compared with NumPy here, eagerly
@pytest.mark.parametrize("mode", ["forward", "demand"])
def test_eager_jax_on_the_cpu_compiles_no_sparse_kernel(tmp_path, mode):
    if jax.devices()[0].platform != "cpu":
        pytest.skip("the host path is for jax's CPU device")
    from fuse_lang.run.sparse import jax_sparse

    rng = random.Random(11)
    (tmp_path / "parent.tsv").write_text("".join(
        f"P{rng.randrange(max(k // 2, 1)) if k > 1 else 0}\tP{k}\n" for k in range(1, 3000)))
    config = fuse_lang.ExecutionConfig(mode=mode)
    before = jax_sparse.compiled_kernels()
    got = fuse_lang.compile(PROGRAM, base_dir=tmp_path, config=config, backend="jax",
                            compiled=False, representation={"Parent": "sparse"}).execute()
    want = fuse_lang.compile(PROGRAM, base_dir=tmp_path, config=config).execute()
    assert [set(q.tuples) for q in got.queries] == [set(q.tuples) for q in want.queries]
    assert got.queries[0].tuples and got.queries[1].tuples
    assert jax_sparse.compiled_kernels() == before  # the sort ran in NumPy


@pytest.mark.reference_only
def test_the_device_kernels_still_give_numpys_answers(tmp_path, monkeypatch):
    """The jitted kernels that a GPU uses, forced on the CPU: the same answers,
    so that path stays tested where no accelerator is lent."""
    from fuse_lang.run.sparse import jax_sparse

    asked = []
    monkeypatch.setattr(jax_sparse, "_on_cpu", lambda arrays: asked.append(1) and False)
    rng = random.Random(5)
    (tmp_path / "parent.tsv").write_text("".join(
        f"P{rng.randrange(max(k // 2, 1)) if k > 1 else 0}\tP{k}\n" for k in range(1, 400)))
    got = fuse_lang.compile(PROGRAM, base_dir=tmp_path, backend="jax", compiled=False,
                            representation={"Parent": "sparse"}).execute()
    want = fuse_lang.compile(PROGRAM, base_dir=tmp_path).execute()
    assert [set(q.tuples) for q in got.queries] == [set(q.tuples) for q in want.queries]
    assert got.queries[0].tuples and got.queries[1].tuples
    assert asked  # every sparse step took the kernels' path
