"""fuse.train over stdio: the lens and actions, the loss curve, progress with the
step and loss, cancellation without a checkpoint, the time limit, NumPy refused
(docs/running-from-the-editor.md, "Training")."""
from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest
from lsprotocol import types

from .conftest import WAIT_S, open_doc
from .test_code_actions import actions, rng
from .test_commands import execute, until
from .test_run_bounds import configure

REGRESSION = """\
X[n,j] = "x.npy"
T[n] = "t.npy"
param W[j], B
Y[n] = W[j] X[n,j] + B
L avg= (Y[n] - T[n])^2
train L
export Y
"""


def _regression(folder, n=32) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    np.save(folder / "x.npy", x)
    np.save(folder / "t.npy", x @ np.array([1.0, -2.0, 0.5]) + 0.3)


def _train_reports(client):
    return [(t, rs) for t, rs in client.progress_reports.items()
            if str(t).startswith("fuse.train/")]


async def test_the_train_lens_sits_on_the_train_statement(vscode, tmp_path):
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    lenses = await vscode.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    (train,) = [lens for lens in lenses if lens.command.title == "Train"]
    assert train.range.start.line == 5
    assert train.command.command == "fuse.train" and list(train.command.arguments) == [uri, {}]
    # a program without a loss has no Train lens
    other = open_doc(vscode, tmp_path / "plain.fuse", "A[i] = const([1, 2])\nexport A\n")
    lenses = await vscode.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=other)))
    assert "Train" not in [lens.command.title for lens in lenses]


async def test_train_on_torch_returns_a_falling_loss_curve_with_progress(vscode, tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await asyncio.wait_for(execute(vscode, "fuse.train", uri, {
        "backend": "torch", "optimizer": "adam", "lr": 0.05, "steps": 150, "seed": 1,
        "batch": "n=16", "checkpoint": "out/reg.safetensors"}), 120)
    assert result["ok"] is True, result
    assert result["loss"] == "L" and result["backend"] == "torch" and result["steps"] == 150
    history = result["history"]
    assert [p["step"] for p in history] == list(range(1, 151))
    assert all(p["seconds"] >= 0 for p in history)
    assert result["final_loss"] == history[-1]["loss"] < 0.05 * result["initial_loss"]
    assert result["params"]["W"]["shape"] == [3] and result["params"]["B"]["shape"] == []
    assert result["options"]["batch"] == {"n": 16} and result["options"]["lr"] == 0.05
    assert result["checkpoint"] == str((tmp_path / "out" / "reg.safetensors").resolve())
    assert (tmp_path / "out" / "reg.safetensors").is_file()
    assert result["message"].startswith("Trained reg.fuse on cpu (torch): L ")
    ((token, reports),) = _train_reports(vscode)
    begin, *middle, end = reports
    assert begin.title == "Training reg.fuse on cpu (torch)" and begin.cancellable is True
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message.startswith("done: loss ")
    steps = [r for r in middle if r.message and r.message.startswith("step ")]
    for report in steps:
        assert re.fullmatch(r"step \d+/150: loss [\d.e+-]+ \([\d.]+ s\)", report.message)
    await until(lambda: [m for m in vscode.log_messages
                         if m.message.startswith("fuse.train: Trained reg.fuse")])
    # resumed from that checkpoint: its step, params and optimizer state
    more = await asyncio.wait_for(execute(vscode, "fuse.train", uri, {
        "backend": "torch", "lr": 0.05, "steps": 160, "batch": "n=16", "seed": 1,
        "resume": "out/reg.safetensors"}), 120)
    assert more["ok"] is True, more
    assert more["first_step"] == 150 and more["steps"] == 160
    assert [p["step"] for p in more["history"]] == list(range(151, 161))
    assert more["checkpoint"] is None


async def test_train_on_jax_too(vscode, tmp_path):
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    _regression(tmp_path)
    held = tmp_path / "held"
    held.mkdir()
    _regression(held, n=8)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await asyncio.wait_for(execute(vscode, "fuse.train", uri, {
        "backend": "jax", "lr": 0.05, "steps": 100, "validateEvery": 25,
        "validation": {"X": "held/x.npy", "T": "held/t.npy"}}), 120)
    assert result["ok"] is True, result
    assert result["backend"] == "jax" and len(result["history"]) == 100
    assert result["final_loss"] < 0.05 * result["initial_loss"]
    assert [p["step"] for p in result["history"] if "validation" in p] == [25, 50, 75, 100]
    assert [v["step"] for v in result["validation"]] == [25, 50, 75, 100]
    assert result["validation"][-1]["loss"] < 0.05 * result["validation"][0]["loss"]
    assert result["report"][0].startswith("loss █") and result["report"][-2].startswith(
        "param B (): mean ")


async def test_cancelling_a_training_leaves_no_checkpoint(vscode, tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    pending = asyncio.ensure_future(execute(vscode, "fuse.train", uri, {
        "backend": "torch", "steps": 10_000_000, "checkpoint": "c.safetensors"}))

    def stepping():
        return [(t, r) for t, rs in _train_reports(vscode) for r in rs
                if isinstance(r, types.WorkDoneProgressReport) and r.message
                and r.message.startswith("step ")]
    token, report = (await until(stepping, timeout=60))[0]
    assert re.match(r"step \d+/10000000: loss ", report.message)
    vscode.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL,
                           types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(pending, WAIT_S)
    assert result == {"ok": False, "cancelled": True, "error": "cancelled"}
    log = await until(lambda: [m for m in vscode.log_messages
                               if "training of reg.fuse was cancelled" in m.message])
    assert "no checkpoint was written" in log[0].message
    assert not list(tmp_path.glob("c*.safetensors"))


async def test_a_training_stops_at_the_run_time_limit(vscode, tmp_path):
    pytest.importorskip("torch")
    configure(vscode, runTimeLimit=1)
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await asyncio.wait_for(execute(vscode, "fuse.train", uri, {
        "backend": "torch", "steps": 10_000_000, "checkpoint": "c.safetensors"}), 60)
    assert result["ok"] is False
    assert "reg.fuse: the training was stopped at its time limit of 1 s" in result["error"]
    assert not list(tmp_path.glob("c*.safetensors"))


async def test_numpy_refuses_training_and_bad_options_are_clear(vscode, tmp_path):
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await execute(vscode, "fuse.train", uri, {"backend": "numpy"})
    assert result["ok"] is False
    assert "training needs gradients, which the numpy backend does not compute" in \
        result["error"] and "torch or jax" in result["error"]
    await until(lambda: [m for m in vscode.messages if m.type == types.MessageType.Error])
    for options, said in [({"lr": -1}, "lr must be above 0"),
                          ({"optimizer": "rmsprop"}, "optimizer must be one of sgd, adam"),
                          ({"batch": "n"}, "batch takes INDEX=N"),
                          ({"steps": 1.5}, "steps must be a whole number"),
                          ({"steps": 5, "epochs": 2}, "give steps or epochs, not both"),
                          ({"weightDecay": -1}, "the weight decay must be 0 or more"),
                          ({"checkpoint": "../out.safetensors"}, "outside the program's"),
                          ({"validation": {"X": "../x.npy"}}, "outside the program's"),
                          ({"validation": {"X": "nope.npy"}}, "cannot read nope.npy for `X`"),
                          ({"data": ["x.npy"]}, 'data takes {NAME: "file.npy"}')]:
        result = await execute(vscode, "fuse.train", uri, {"backend": "torch", **options})
        assert result["ok"] is False and said in result["error"], (options, result)
    plain = open_doc(vscode, tmp_path / "plain.fuse", "A[i] = const([1, 2])\nexport A\n")
    result = await execute(vscode, "fuse.train", plain, {"backend": "torch"})
    assert result["ok"] is False and "names no loss" in result["error"]


async def test_the_train_lens_trains_with_the_default_numpy_setting(vscode, tmp_path):
    """The lens sends no backend: with `fuse.backend` left at numpy, the training
    runs on a framework that can train (torch first), and the result says so."""
    pytest.importorskip("torch")
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await asyncio.wait_for(execute(vscode, "fuse.train", uri, {"steps": 5}), 60)
    assert result["ok"] is True, result
    assert result["backend"] == "torch" and result["steps"] == 5


async def test_a_training_larger_than_the_memory_budget_is_refused(vscode, tmp_path):
    pytest.importorskip("torch")
    configure(vscode, memoryLimit=100)
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await execute(vscode, "fuse.train", uri, {"backend": "torch",
                                                       "checkpoint": "c.safetensors"})
    assert result["ok"] is False
    assert "more than the server's memory budget for runs (100 B" in result["error"], result
    assert not list(tmp_path.glob("c*.safetensors"))


async def test_train_settings_are_the_defaults_and_train_actions_are_offered(
        vscode, tmp_path):
    pytest.importorskip("torch")
    configure(vscode, backend="torch", trainSteps=7, trainLearningRate=0.02,
              trainBatch="n=8", trainOptimizer="sgd", trainSeed=3)
    _regression(tmp_path)
    uri = open_doc(vscode, tmp_path / "reg.fuse", REGRESSION)
    result = await asyncio.wait_for(execute(vscode, "fuse.train", uri, {}), 60)
    assert result["ok"] is True, result
    assert result["steps"] == 7 and result["options"] == {
        "optimizer": "sgd", "lr": 0.02, "schedule": "constant", "steps": 7, "epochs": None,
        "seed": 3, "batch": {"n": 8}}
    found = await actions(vscode, uri, rng(0, 0, 0), only=["source.fuse.train"])
    titles = [a.title for a in found]
    assert "Train on cpu (torch)" in titles and not any("numpy" in t for t in titles)
    (torch_cpu,) = [a for a in found if a.title == "Train on cpu (torch)"]
    assert torch_cpu.command.command == "fuse.train"
    assert list(torch_cpu.command.arguments) == [uri, {"backend": "torch", "device": "cpu"}]
