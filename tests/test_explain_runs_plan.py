"""What `fuse explain` prints is what runs: the contraction path that the plan
(`fuse_lang.plan_program`) reports for a product of three tensors is the path
every backend follows, because both ask the one planner (plan.contraction)."""
from __future__ import annotations

import numpy as np
import pytest

import fuse_lang
from fuse_lang.plan import contraction

PROGRAM = """\
axis i = {i}, j = {j}, k = {k}, l = {l}
param A[i,j], B[j,k], C[k,l]
Y[i,l] = A[i,j] B[j,k] C[k,l]
export Y
"""
LARGE = dict(i=10, j=600, k=3, l=150)  # past numpy's small-operand fast path
SMALL = dict(i=2, j=5, k=3, l=4)  # numpy's C einsum, step by step along the path


def _planned(text: str) -> tuple[str, tuple]:
    plan = fuse_lang.plan_program(fuse_lang.analyze(text, None))
    (equation,) = [e for e in plan.equations if e.tensor == "Y"]
    (product,) = equation.contractions
    assert len(product.operands) == 3
    return product.letters, product.path


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("sizes", [LARGE, SMALL], ids=["large", "small"])
def test_the_run_follows_the_printed_path(monkeypatch, backend, sizes):
    if backend != "numpy":
        pytest.importorskip(backend)
    text = PROGRAM.format(**sizes)
    letters, path = _planned(text)
    assert len(path) == 2  # two pairwise steps for three operands
    used: list[tuple[str, tuple]] = []
    real = contraction.contraction_path

    def spy(letters: str, shapes: tuple) -> contraction.ContractionPath:
        found = real(letters, shapes)
        used.append((letters, found.path))
        return found

    monkeypatch.setattr(contraction, "contraction_path", spy)
    contraction.planned_contraction.cache_clear()  # so that the run plans again
    program = fuse_lang.compile(text, backend=backend, compiled=False)
    result = np.asarray(program.run()["Y"])
    assert result.shape == (sizes["i"], sizes["l"])
    assert used == [(letters, path)]
