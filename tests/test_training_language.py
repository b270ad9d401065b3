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
