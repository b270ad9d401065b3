"""`program.train(...)`, `program.gradients(...)` and `fuse train` (docs/training.md)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang import FuseError
from fuse_lang.cli import main

BACKENDS = [pytest.param("torch", marks=pytest.mark.skipif(
                not __import__("importlib").util.find_spec("torch"), reason="no torch")),
            pytest.param("jax", marks=pytest.mark.skipif(
                not __import__("importlib").util.find_spec("optax"), reason="no jax/optax"))]

REGRESSION = """X[n,j] = "x.npy"
T[n] = "t.npy"
param W[j], B
Y[n] = W[j] X[n,j] + B
L avg= (Y[n] - T[n])^2
train L
export Y
"""


def _regression(tmp_path, n=32):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", x @ np.array([1.0, -2.0, 0.5]) + 0.3)
    path = tmp_path / "reg.fuse"
    path.write_text(REGRESSION, encoding="utf-8")
    return path


def _compile(tmp_path, backend, text=REGRESSION, precision=None):
    return fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision=precision)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw"])
def test_the_loss_decreases_and_the_params_are_learned(tmp_path, backend, optimizer):
    _regression(tmp_path)
    result = _compile(tmp_path, backend).train(optimizer=optimizer, learning_rate=0.05,
                                               steps=150)
    assert result.loss == "L" and len(result.losses) == 150
    assert result.losses[-1] < 0.05 * result.losses[0]
    if optimizer != "adamw":  # weight decay pulls away from the exact solution
        np.testing.assert_allclose(result.params["W"], [1.0, -2.0, 0.5], atol=0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_seed_gives_the_same_losses(tmp_path, backend):
    _regression(tmp_path)
    program = _compile(tmp_path, backend)
    first = program.train(steps=20, seed=7, batch={"n": 8})
    again = _compile(tmp_path, backend).train(steps=20, seed=7, batch={"n": 8})
    other = program.train(steps=20, seed=8, batch={"n": 8})
    assert first.losses == again.losses
    assert first.losses != other.losses


@pytest.mark.parametrize("backend", BACKENDS)
def test_resuming_takes_the_steps_of_an_uninterrupted_run(tmp_path, backend):
    _regression(tmp_path)
    program = _compile(tmp_path, backend)
    whole = program.train(steps=12, batch={"n": 8}, learning_rate=0.05)
    half = program.train(steps=5, batch={"n": 8}, learning_rate=0.05,
                         checkpoint=tmp_path / "ck.safetensors")
    rest = program.train(steps=12, batch={"n": 8}, learning_rate=0.05,
                         resume=tmp_path / "ck.safetensors")
    assert half.losses == whole.losses[:5]
    assert rest.first_step == 5 and rest.steps == 12
    np.testing.assert_allclose(rest.losses, whole.losses[5:], rtol=1e-6)
    for name in ("W", "B"):
        np.testing.assert_allclose(rest.params[name], whole.params[name], rtol=1e-6)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_torch_and_jax_take_the_same_steps_with_a_cosine_schedule(tmp_path, optimizer):
    """The same start, optimizer and schedule on both frameworks: the same losses
    (float64), so the cosine decay is computed alike (optax's formula)."""
    pytest.importorskip("torch")
    pytest.importorskip("optax")
    _regression(tmp_path)
    runs = [_compile(tmp_path, b, precision="fp64").train(
        optimizer=optimizer, learning_rate=0.05, schedule="cosine", steps=15)
        for b in ("torch", "jax")]
    np.testing.assert_allclose(runs[0].losses, runs[1].losses, rtol=1e-9)
    constant = _compile(tmp_path, "torch", precision="fp64").train(
        optimizer=optimizer, learning_rate=0.05, steps=15)
    assert constant.losses[1:] != runs[0].losses[1:]


@pytest.mark.parametrize("backend", BACKENDS)
def test_resuming_a_cosine_schedule(tmp_path, backend):
    _regression(tmp_path)
    program = _compile(tmp_path, backend)
    options = {"schedule": "cosine", "learning_rate": 0.05, "optimizer": "adamw"}
    whole = program.train(steps=10, **options)
    # a cosine schedule decays over `steps`: the first part is a run to 10 stopped
    # after its checkpoint at step 4 (the cancel of an editor, Ctrl-C)
    def stop_after_step_4(now):
        if now.done == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        program.train(steps=10, checkpoint=tmp_path / "c.safetensors", checkpoint_every=4,
                      progress=stop_after_step_4, **options)
    rest = program.train(steps=10, resume=tmp_path / "c.safetensors", **options)
    assert rest.first_step == 4 and len(rest.losses) == 6
    np.testing.assert_allclose(rest.losses, whole.losses[4:], rtol=1e-5)
    np.testing.assert_allclose(rest.params["W"], whole.params["W"], rtol=1e-5)


def test_epochs_count_passes_over_the_batches(tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)  # 32 positions of `n`
    program = _compile(tmp_path, "torch")
    assert program.train(epochs=3, batch={"n": 8}).steps == 12
    assert program.train(epochs=3, batch={"n": 10}).steps == 9  # 3 full batches an epoch
    assert program.train(epochs=2).steps == 2  # the whole data each step


def test_a_batch_larger_than_the_data_is_a_warning_not_silence(tmp_path, capsys):
    pytest.importorskip("torch")
    path = _regression(tmp_path)  # 32 positions of `n`
    result = _compile(tmp_path, "torch").train(steps=2, batch={"n": 5000})
    (warning,) = result.warnings
    assert "5000" in warning and "`n`" in warning and "32" in warning
    assert _compile(tmp_path, "torch").train(steps=2, batch={"n": 8}).warnings == []
    assert main(["train", str(path), "--backend", "torch", "--steps", "2",
                 "--batch", "n=5000"]) == 0
    err = capsys.readouterr().err
    assert "warning: the batch of 5000 positions of `n` is larger than the data's 32" in err


def test_a_checkpoint_holds_the_params_by_name_and_its_step(tmp_path):
    pytest.importorskip("torch")
    from safetensors import safe_open
    from safetensors.numpy import load_file

    _regression(tmp_path)
    result = _compile(tmp_path, "torch").train(steps=3, checkpoint=tmp_path / "w.safetensors")
    saved = load_file(str(tmp_path / "w.safetensors"))
    assert set(saved) == {"W", "B"} and saved["B"].shape == () and saved["W"].shape == (3,)
    np.testing.assert_array_equal(saved["W"], result.params["W"])
    with safe_open(str(tmp_path / "w.safetensors"), framework="numpy") as opened:
        assert opened.metadata()["fuse.step"] == "3"
    assert (tmp_path / "w.optimizer.safetensors").is_file()


@pytest.mark.parametrize("backend", BACKENDS)
def test_validation_loss_on_held_out_data(tmp_path, backend):
    _regression(tmp_path)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(10, 3))
    held = {"X": x, "T": x @ np.array([1.0, -2.0, 0.5]) + 0.3}
    result = _compile(tmp_path, backend).train(steps=40, learning_rate=0.05, validation=held,
                                               validate_every=10)
    assert [step for step, _ in result.validation] == [10, 20, 30, 40]
    assert result.validation[-1][1] < result.validation[0][1]


def test_data_given_in_place_of_missing_files_shapes_the_params(tmp_path):
    pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20, 5))
    data = {"X": x, "T": x @ np.arange(5.0)}
    program = fuse_lang.compile(REGRESSION, backend="torch", base_dir=tmp_path)  # no files
    result = program.train(data, learning_rate=0.1, steps=200)
    assert result.params["W"].shape == (5,)
    np.testing.assert_allclose(result.params["W"], np.arange(5.0), atol=0.05)


def test_numpy_refuses_training_naming_the_backends_that_can(tmp_path):
    _regression(tmp_path)
    with pytest.raises(FuseError, match="torch or jax"):
        _compile(tmp_path, "numpy").train()


def test_a_program_without_a_loss_is_refused(tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    program = _compile(tmp_path, "torch", REGRESSION.replace("train L\n", ""))
    with pytest.raises(FuseError, match="names no loss"):
        program.train()


def test_a_batch_over_an_index_the_data_lacks_is_refused(tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    with pytest.raises(FuseError, match="no data of the loss has an axis `q`"):
        _compile(tmp_path, "torch").train(batch={"q": 4})


def test_progress_reports_each_step_with_its_loss(tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    seen = []
    _compile(tmp_path, "torch").train(steps=4, progress=seen.append)
    assert [p.done for p in seen] == [1, 2, 3, 4]
    assert seen[-1].message().startswith("step 4/4: loss ")


def test_interrupt_stops_training(tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    program = _compile(tmp_path, "torch")
    calls = []

    def interrupt():
        calls.append(1)
        if len(calls) > 3:
            raise FuseError("stopped")

    program.interrupt = interrupt
    with pytest.raises(FuseError, match="stopped"):
        program.train(steps=50)


# ------------------------------------------------------------------ the CLI


def test_fuse_train_prints_the_loss_and_writes_a_checkpoint(tmp_path, capsys):
    pytest.importorskip("torch")
    path = _regression(tmp_path)
    ck = tmp_path / "out" / "w.safetensors"
    assert main(["train", str(path), "--steps", "20", "--lr", "0.05",
                 "--checkpoint", str(ck)]) == 0
    out = capsys.readouterr().out
    assert "step 2/20: loss" in out and "step 20/20: loss" in out
    assert "trained `L`: steps 0-20, final loss" in out and f"wrote {ck}" in out
    assert main(["train", str(path), "--steps", "30", "--lr", "0.05", "--resume", str(ck),
                 "--format", "json", "--batch", "n=16"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["first_step"] == 20 and data["steps"] == 30 and len(data["losses"]) == 10


def test_fuse_train_shows_a_validation_loss(tmp_path, capsys):
    pytest.importorskip("torch")
    path = _regression(tmp_path)
    x = np.random.default_rng(5).normal(size=(6, 3))
    np.save(tmp_path / "xv.npy", x)
    np.save(tmp_path / "tv.npy", x @ np.array([1.0, -2.0, 0.5]) + 0.3)
    assert main(["train", str(path), "--steps", "10", "--schedule", "cosine",
                 "--validation", f"X={tmp_path / 'xv.npy'}",
                 "--validation", f"T={tmp_path / 'tv.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "step 10/10: loss" in out and ", validation " in out
    assert "validation loss " in out and "at step 10" in out


def test_fuse_train_refuses_numpy_and_bad_batches(tmp_path, capsys):
    path = _regression(tmp_path)
    assert main(["train", str(path), "--backend", "numpy"]) == 1
    assert "torch or jax" in capsys.readouterr().err
    assert main(["train", str(path), "--batch", "n"]) == 2
    assert "--batch takes INDEX=N" in capsys.readouterr().err


def test_fuse_train_says_which_flag_is_wrong_before_training(tmp_path, capsys):
    """--steps with --epochs (one was silently ignored), a negative weight decay
    (a traceback from the optimizer) and an unreadable --data or --validation
    file (said as `--input`) are refused in the flags' own words."""
    path = _regression(tmp_path)
    assert main(["train", str(path), "--steps", "5", "--epochs", "2"]) == 2
    assert "give --steps N or --epochs N, not both" in capsys.readouterr().err
    assert main(["train", str(path), "--steps", "1", "--weight-decay", "-1"]) == 1
    assert "the weight decay must be 0 or more, not -1.0" in capsys.readouterr().err
    for flag in ("--data", "--validation"):
        assert main(["train", str(path), "--steps", "1", flag, "X=none.npy"]) == 2
        assert f"fuse: {flag} X=none.npy: cannot read none.npy" in capsys.readouterr().err
    with pytest.raises(FuseError, match="give steps= or epochs=, not both"):
        _compile(tmp_path, "numpy").train(steps=5, epochs=2)


def test_a_file_that_is_no_checkpoint_is_refused_clearly(tmp_path):
    pytest.importorskip("torch")
    _regression(tmp_path)
    (tmp_path / "bad.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(FuseError, match="not a readable safetensors checkpoint"):
        _compile(tmp_path, "torch").train(resume=tmp_path / "bad.safetensors")
    with pytest.raises(FuseError, match="no checkpoint at"):
        _compile(tmp_path, "torch").train(resume=tmp_path / "none.safetensors")


def test_resuming_with_another_optimizer_or_framework_is_refused(tmp_path):
    """A checkpoint's optimizer state is its optimizer's, in its framework's layout:
    torch took another's silently (Adam's moments under SGD, optax's leaves
    dropped), jax said "another optimizer?" of torch's state.  And a checkpoint
    past the steps to end at takes no step, with a warning."""
    pytest.importorskip("torch")
    _regression(tmp_path)
    checkpoint = tmp_path / "ck.safetensors"
    _compile(tmp_path, "torch").train(steps=3, checkpoint=checkpoint)
    with pytest.raises(FuseError, match="trained with the optimizer `adam`.*not sgd"):
        _compile(tmp_path, "torch").train(steps=5, optimizer="sgd", resume=checkpoint)
    if __import__("importlib").util.find_spec("optax"):
        with pytest.raises(FuseError, match="holds torch's optimizer state: resume it on "
                                            "the torch backend"):
            _compile(tmp_path, "jax").train(steps=5, resume=checkpoint)
    past = _compile(tmp_path, "torch").train(steps=2, resume=checkpoint)
    assert past.losses == [] and past.steps == 3
    assert any("at step 3, past the steps to end at (2)" in w for w in past.warnings)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bf16_training_writes_a_checkpoint_numpy_reads(tmp_path, backend):
    """NumPy has no bfloat16: the params and the optimizer's state come to the host
    as float32 (torch's `.numpy()` of a bf16 tensor was a traceback; jax wrote a
    bf16 checkpoint that safetensors.numpy, and so `fuse run --params`, cannot
    read), and a resumed bf16 run takes the uninterrupted one's steps."""
    _regression(tmp_path)
    whole = _compile(tmp_path, backend, precision="bf16").train(
        steps=4, checkpoint=tmp_path / "ck.safetensors")
    assert all(v.dtype == np.float32 for v in whole.params.values())
    _compile(tmp_path, backend, precision="bf16").train(steps=2,
                                                        checkpoint=tmp_path / "r.safetensors")
    rest = _compile(tmp_path, backend, precision="bf16").train(
        steps=4, resume=tmp_path / "r.safetensors")
    np.testing.assert_array_equal(rest.params["W"], whole.params["W"])
    program = fuse_lang.compile(REGRESSION, base_dir=tmp_path, weights=tmp_path / "ck.safetensors")
    assert np.isfinite(program.run()["Y"]).all()


def test_validation_data_that_do_not_fit_are_refused_before_the_first_step(tmp_path):
    """Held-out X without T: T is read from its file, 32 rows against 8.  The error
    came at the first validation, after training steps, saying T was an input
    given; and a misspelt param of gradients() was dropped without a word."""
    pytest.importorskip("torch")
    _regression(tmp_path)
    program = _compile(tmp_path, "torch")
    seen = []
    with pytest.raises(FuseError, match=r"the validation data \(T not given: read from the "
                                        r"program's files\) do not fit the loss: .*extent"):
        program.train(steps=20, validation={"X": np.ones((8, 3))}, progress=seen.append)
    assert seen == []  # no step taken
    with pytest.raises(FuseError, match="`Q` is not a param of the program"):
        program.gradients({"W": np.zeros(3), "B": 0.0, "Q": 1.0})


def test_a_checkpoint_that_cannot_be_written_is_refused_before_the_first_step(tmp_path,
                                                                             capsys):
    """Not .safetensors: it was written under that name, then no `--params` took it;
    a folder that cannot be made, or a folder in its place: a traceback after the
    last step."""
    path = _regression(tmp_path)
    (tmp_path / "taken.safetensors").mkdir()
    (tmp_path / "file").write_text("")
    for checkpoint, said in [("ck.npy", "a checkpoint is a .safetensors file"),
                             ("file/ck.safetensors", "its folder cannot be made"),
                             ("taken.safetensors", "it is a folder")]:
        assert main(["train", str(path), "--steps", "1",
                     "--checkpoint", str(tmp_path / checkpoint)]) == 1
        captured = capsys.readouterr()
        assert said in captured.err and "Traceback" not in captured.err
        assert "step 1/1" not in captured.out
    assert not (tmp_path / "ck.npy").exists()


def test_a_loss_not_finite_at_the_start_is_not_blamed_on_the_learning_rate(tmp_path):
    """NaN for the starting params, before any update, said "lower the learning rate"."""
    pytest.importorskip("torch")
    _regression(tmp_path)
    program = _compile(tmp_path, "torch", 'X[n,j] = "x.npy"\nparam W[j]\n'
                                          "L avg= log(W[j] X[n,j] - 100)\ntrain L\n")
    with pytest.raises(FuseError, match=r"is nan at the start \(step 1, before any "
                                        r"update\).*whatever the learning rate"):
        program.train(steps=3)


def test_a_checkpoint_reads_back_as_a_source(tmp_path):
    """The learned params, as `.safetensors` sources of a program that uses them."""
    pytest.importorskip("torch")
    _regression(tmp_path)
    result = _compile(tmp_path, "torch").train(steps=5, checkpoint=tmp_path / "w.safetensors")
    use = 'W[j] = "w.safetensors"\nX[n,j] = "x.npy"\nY[n] = W[j] X[n,j]\nexport W, Y'
    out = fuse_lang.compile(use, base_dir=tmp_path).run()
    np.testing.assert_allclose(out["W"], result.params["W"])


def test_torch_training_replays_a_captured_graph_and_leaves_the_program_runnable(tmp_path):
    """On torch the loss is captured once as an aten graph (run/captured_loss.py) and
    replayed each step: the same steps as jax takes (float64), constants of the
    program (a `const`, a causal mask) included, and the program still runs after."""
    pytest.importorskip("torch")
    pytest.importorskip("optax")
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(4, 3)))
    text = ('X[n,j] = "x.npy"\nparam W[j,k]\naxis k = 2\nC = const([1.5, -2, 0.5])\n'
            'M[n,m] = causal_mask(4)\nY[n,k] = W[j,k] X[n,j] C[j]\n'
            'L avg= (M[n,m] Y[n,k] Y[m,k] - 1)^2\ntrain L\nexport L')
    losses = {}
    for backend in ("torch", "jax"):
        program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
        result = program.train(optimizer="adam", learning_rate=0.05, steps=15)
        losses[backend] = result.losses
        after = program.run(result.params)["L"]
        assert float(after) < result.losses[0]
    np.testing.assert_allclose(losses["torch"], losses["jax"], rtol=1e-9)
    assert losses["torch"][-1] < losses["torch"][0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_temperature_annealed_per_run_anneals_per_step(tmp_path, backend):
    """Each training step is a run of the loss: a `per=run` schedule moves on each
    step, its value an input of the captured (torch) or jitted (jax) step."""
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(4, 3)))
    text = ('X[n,j] = "x.npy"\nparam W[j]\nT = linear(1.0, 0.1, steps=4, per=run)\n'
            'Y[n] = sig(W[j] X[n,j], T)\nL avg= (Y[n] - 1)^2\ntrain L\nexport L')
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
    losses = program.train(optimizer="sgd", learning_rate=1e-12, steps=6).losses
    reference = fuse_lang.compile(text, base_dir=tmp_path, precision="fp64")
    from fuse_lang.run.train.training import initial_param

    w = initial_param("W", (3,), 0)  # the start of seed 0
    expected = [float(reference.run({"W": w})["L"]) for _ in range(6)]
    np.testing.assert_allclose(losses, expected, rtol=1e-6)
    assert len(set(np.round(expected, 6))) > 2
