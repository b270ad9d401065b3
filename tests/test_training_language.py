"""`train L`: the loss of a program, as the checker, hover and `fuse explain` see it."""
from __future__ import annotations

import json

import numpy as np

import fuse_lang
from fuse_lang.cli import main
from fuse_lang.ide.hover import hover_at

PROGRAM = """X[n,j] = "x.npy"
T[n] = "t.npy"
param W[j], B
param Unused[k]
axis k = 2
Y[n] = W[j] X[n,j] + B
L = (Y[n] - T[n])^2 / 8
train L
export Y
"""


def _write(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((8, 3)))
    np.save(tmp_path / "t.npy", np.zeros(8))
    path = tmp_path / "reg.fuse"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def test_a_train_declaration_is_clean_and_counts_as_a_read(tmp_path):
    path = _write(tmp_path)
    analysis = fuse_lang.analyze(PROGRAM, str(path))
    codes = [d.code for d in analysis.diagnostics]
    assert "unused-tensor" in codes  # `Unused` only
    assert all(d.code != "unused-tensor" or "`Unused`" in d.message
               for d in analysis.diagnostics)
    assert not [d for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]


def test_hover_on_the_loss_lists_its_params_and_data(tmp_path):
    path = _write(tmp_path)
    analysis = fuse_lang.analyze(PROGRAM, str(path))
    at = PROGRAM.index("train L") + len("train ")
    text = hover_at(analysis, at).markdown
    assert "**Loss**" in text and "`B`, `W`" in text and "`T`, `X`" in text
    assert "Unused" not in text
    param = hover_at(analysis, PROGRAM.index("W[j], B")).markdown
    assert "against the loss `L`" in param


def test_explain_shows_the_loss_in_text_and_json(tmp_path, capsys):
    path = _write(tmp_path)
    assert main(["explain", str(path)]) == 0
    assert "Loss (train L): reaches the params B, W; data: T, X." in capsys.readouterr().out
    assert main(["explain", "--format", "json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["loss"] == {"name": "L", "params": ["B", "W"], "data": ["T", "X"]}


def test_train_is_a_keyword_now_not_a_name():
    analysis = fuse_lang.analyze("train = const(1)")
    assert [d.code for d in analysis.diagnostics] == ["syntax-error"]


def _blocked(text):
    return sorted(d.message.split("`")[1] for d in fuse_lang.analyze(text).diagnostics
                  if d.code == "gradient-blocked")


def test_gradient_blocked_names_exactly_the_params_without_a_gradient():
    """A param reaching the loss only through a step, `not`, a comparison of values,
    `sig(x, 0)` (either spelling) or a Boolean tensor has a zero gradient; a param
    beside them (a comparison of indices is a mask, `sig(x, T)` with T > 0 is smooth)
    keeps its gradient and is not named."""
    head = 'X[n,j] = "x.npy"\naxis i = 2\nparam W[i,j], V[i,j]\n'
    cases = {
        "Y[n,i] = W[i,j] X[n,j] > 0\nZ[n,i] = V[i,j] X[n,j]\n": ["W"],
        "Y[n,i] = sig(W[i,j] X[n,j], T=0)\nZ[n,i] = sig(V[i,j] X[n,j], T=0.5)\n": ["W"],
        "Y[n,i] = step(W[i,j] X[n,j]) + not(V[i,j] X[n,j])\nZ[n,i] = 0\n": ["V", "W"],
        "Y(n,i) = W[i,j] X[n,j]\nZ[n,i] = V[i,j] X[n,j] (i < j)\n": ["W"],
        "Y[n,i] = W[i,j] X[n,j] (i < j)\nZ[n,i] = V[i,j] X[n,j]\n": [],
    }
    for body, blocked in cases.items():
        text = head + body + "L = Y[n,i] + Z[n,i]\ntrain L\n"
        assert _blocked(text) == blocked, body


def test_training_a_blocked_param_leaves_it_and_its_gradient_is_zero(tmp_path):
    """What gradient-blocked warns about, training does: the param stays as it starts."""
    import pytest

    pytest.importorskip("torch")
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(4, 3)))
    text = 'X[n,j] = "x.npy"\naxis i = 2\nparam W[i,j]\nY[n,i] = W[i,j] X[n,j] > 0\n' \
           'L = Y[n,i]\ntrain L\n'
    program = fuse_lang.compile(text, backend="torch", base_dir=tmp_path, precision="fp64")
    _, grads = program.gradients({"W": np.ones((2, 3))})
    assert not grads["W"].any()
    result = program.train(steps=3)
    assert len(set(result.losses)) == 1
