"""Reasoning in embedding space, learned (docs/training.md, "Examples that learn"):
examples/training/family_embeddings.fuse learns entity embeddings and relation
matrices from a family tree's Parent facts and its rules; at a low temperature
its queries equal the symbolic Datalog program's answers, as sets, on torch and
on jax, through `program.train` and through `fuse train`.  And the relaxation it
rests on: `sig(x, T)` with T > 0 has the gradient of the logistic (central
finite differences, float64); T = 0 is a step, reported as `gradient-blocked`."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "training"
FILES = ("family_embeddings.fuse", "family_parent.tsv", "family_weights.json")
QUERIES = {"GrandparentQ": "Grandparent", "AncestorQ": "Ancestor", "SiblingQ": "Sibling"}
BACKENDS = [pytest.param("torch", marks=pytest.mark.skipif(
                not importlib.util.find_spec("torch"), reason="no torch")),
            pytest.param("jax", marks=pytest.mark.skipif(
                not importlib.util.find_spec("optax"), reason="no jax/optax"))]
STEPS, RATE = 100, 0.1  # all queries exact from about 60 steps (docs/training.md)


@pytest.fixture
def folder(tmp_path):
    for name in FILES:
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path


def _people(folder: Path) -> list[str]:
    """The symbols in order of first appearance: the rows of Emb."""
    order: list[str] = []
    for line in (folder / "family_parent.tsv").read_text(encoding="utf-8").splitlines():
        for name in line.split("\t"):
            if name and name not in order:
                order.append(name)
    return order


def _pairs(matrix, people: list[str]) -> set[tuple[str, str]]:
    return {(people[i], people[j]) for i, j in zip(*np.nonzero(np.asarray(matrix) > 0.5))}


def _answers(folder: Path, outputs) -> dict[str, tuple[set, set]]:
    """Per query: (the learned answers at T = 0.01, the symbolic program's)."""
    people = _people(folder)
    return {q: (_pairs(outputs[q], people), _pairs(outputs[s], people))
            for q, s in QUERIES.items()}


def _text(folder: Path) -> str:
    return (folder / "family_embeddings.fuse").read_text(encoding="utf-8")


@pytest.mark.parametrize("backend", BACKENDS)
def test_learned_queries_equal_the_symbolic_answers(folder, backend):
    program = fuse_lang.compile(_text(folder), backend=backend, base_dir=folder)
    result = program.train(steps=STEPS, learning_rate=RATE, seed=0)
    assert result.losses[-1] < 0.01 * result.losses[0]
    assert np.mean(result.losses[-10:]) < np.mean(result.losses[:10])
    outputs = fuse_lang.compile(_text(folder), base_dir=folder).run(result.params)
    answers = _answers(folder, outputs)
    for query, (learned, symbolic) in answers.items():
        assert learned == symbolic, query
    # the facts give 18 parents; the rules derive the rest
    assert len(answers["AncestorQ"][1]) == 44 and ("Abe", "Kirk") in answers["AncestorQ"][0]
    assert ("Bart", "Lisa") in answers["SiblingQ"][0]
    assert ("Bart", "Bart") not in answers["SiblingQ"][0]


def test_the_same_seed_learns_the_same(folder):
    pytest.importorskip("torch")
    program = fuse_lang.compile(_text(folder), backend="torch", base_dir=folder)
    first = program.train(steps=15, learning_rate=RATE, seed=3)
    again = program.train(steps=15, learning_rate=RATE, seed=3)
    other = program.train(steps=15, learning_rate=RATE, seed=4)
    assert first.losses == again.losses
    for name, value in first.params.items():
        np.testing.assert_array_equal(value, again.params[name])
    assert other.losses != first.losses


def test_fuse_train_then_fuse_run_answers_like_datalog(folder, capsys):
    """The checkpoint of `fuse train`, read through the example's weights
    manifest by `fuse run --weights`, answers as the symbolic program."""
    pytest.importorskip("torch")
    program = folder / "family_embeddings.fuse"
    assert main(["train", str(program), "--backend", "torch", "--steps", str(STEPS),
                 "--lr", str(RATE), "--checkpoint", str(folder / "family.safetensors")]) == 0
    assert "trained `L`: steps 0-100" in capsys.readouterr().out
    out = folder / "answers.npz"
    assert main(["run", str(program), "--weights", str(folder / "family_weights.json"),
                 "--out", str(out)]) == 0
    with np.load(out) as saved:
        for query, (learned, symbolic) in _answers(folder, saved).items():
            assert learned == symbolic, query


# --- sig(x, T): the gradient flows for T > 0, and T = 0 is a step --------------

DATA = 'X[n,j] = "x.npy"\nY[n,i] = "t.npy"\n'
RELAXED = {
    "a number": "param W[i,j]\nS[n,i] = sig(W[i,j] X[n,j], 0.3)\n",
    "a keyword": "param W[i,j]\nS[n,i] = sig(W[i,j] X[n,j], T=0.3)\n",
    "a named constant": "param W[i,j]\nT = const(0.3)\nS[n,i] = sig(W[i,j] X[n,j], T)\n",
    "a learned temperature": "param W[i,j], T\nS[n,i] = sig(W[i,j] X[n,j], T)\n",
    "a Boolean relation relaxed": "param W[i,j]\nR(n,i) = Y[n,i]\n"
                                  "S[n,i] = sig(W[i,j] X[n,j] R(n,i), 0.5)\n",
}
BCE = "L avg= -(Y[n,i] log(S[n,i]) + (1 - Y[n,i]) log(1 - S[n,i]))\ntrain L"


def _save_data(folder: Path) -> None:
    rng = np.random.default_rng(7)
    np.save(folder / "x.npy", rng.normal(size=(4, 3)))
    np.save(folder / "t.npy", (rng.uniform(size=(4, 2)) > 0.5).astype(float))


def _finite_differences(text: str, folder: Path, params: dict, eps: float = 1e-6) -> dict:
    reference = fuse_lang.compile(text, base_dir=folder, precision="fp64", targets=["L"])

    def loss(values):
        return float(reference.run(values)["L"])

    out = {}
    for name, value in params.items():
        grad = np.zeros_like(value)
        for pos in np.ndindex(value.shape):
            up, down = value.copy(), value.copy()
            up[pos] += eps
            down[pos] -= eps
            grad[pos] = (loss({**params, name: up}) - loss({**params, name: down})) / (2 * eps)
        out[name] = grad
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(RELAXED))
def test_sig_with_a_temperature_has_a_gradient(tmp_path, backend, name):
    _save_data(tmp_path)
    text = DATA + RELAXED[name] + BCE
    assert not [d for d in fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
                if d.code == "gradient-blocked"]
    rng = np.random.default_rng(11)
    params = {"W": rng.normal(size=(2, 3))}
    if "param W[i,j], T" in text:
        params["T"] = np.array(0.6)
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
    _, grads = program.gradients(params)
    expected = _finite_differences(text, tmp_path, params)
    for param, value in expected.items():
        assert np.abs(value).max() > 1e-3
        np.testing.assert_allclose(grads[param], value, rtol=1e-5, atol=1e-8,
                                   err_msg=f"{name}: d L / d {param}")


@pytest.mark.parametrize("spelling", ["sig(W[j] X[n,j], 0)", "sig(W[j] X[n,j], T=0)",
                                      "sig(W[j] X[n,j], Cold)"])
def test_sig_at_temperature_zero_is_a_step_without_gradient(tmp_path, spelling):
    _save_data(tmp_path)
    text = (DATA + "param W[j]\nCold = const(0)\n"
            f"S[n] = {spelling}\nL avg= (S[n] - Y[n,i])^2\ntrain L")
    blocked = [d for d in fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
               if d.code == "gradient-blocked"]
    assert len(blocked) == 1 and "`W`" in blocked[0].message
    pytest.importorskip("torch")
    program = fuse_lang.compile(text, backend="torch", base_dir=tmp_path, precision="fp64")
    _, grads = program.gradients({"W": np.array([0.5, -1.0, 2.0])})
    assert not grads["W"].any()
