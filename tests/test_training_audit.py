"""An audit of learning (`param`, `train L`, `program.train`, `fuse train`): what
the other training tests left out.  Gradients of `select`/`case`/`fn`/`let`/
`when`/`pow` with a param exponent/`sig(x, T=param)` against finite differences;
torch and jax taking the same steps with each optimizer; bad option values
refused in words (never a traceback); a checkpoint running with `fuse run
--params`, for every param of the program."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from test_training import REGRESSION
from test_training_gradients import _finite_differences

import fuse_lang
from fuse_lang import FuseError
from fuse_lang.cli import main

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("optax") is not None
BACKENDS = [pytest.param("torch", marks=pytest.mark.skipif(not HAS_TORCH, reason="no torch")),
            pytest.param("jax", marks=pytest.mark.skipif(not HAS_JAX, reason="no jax/optax"))]
torch_only = pytest.mark.skipif(not HAS_TORCH, reason="no torch")



def _regression(tmp_path, text=REGRESSION, name="reg.fuse"):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", x @ np.array([1.0, -2.0, 0.5]) + 0.3)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- gradients

DATA = 'X[n,j] = "x.npy"\nT[n,i] = "t.npy"\n'
PROGRAMS = {
    "select": "param W[i,j], V[i,j]\n"
              "Y[n,i] = select(X[n,j] > 0, W[i,j] X[n,j], V[i,j] X[n,j])\n"
              "L = Y[n,i] Y[n,i] T[n,i]\ntrain L",
    "case": "param W[i,j]\nZ[n,i,j] = case { X[n,j] > 0.5 -> W[i,j]; X[n,j] < -0.5 -> "
            "2 W[i,j] W[i,j]; default -> exp(W[i,j]) }\nL = Z[n,i,j] T[n,i]\ntrain L",
    "fn": "fn dense(x[b,d], w[f,d]) -> y[b,f] { y[b,f] = tanh(x[b,d] w[f,d]) }\n"
          "param W[i,j]\nY[n,i] = dense(X[n,j], W[i,j])\nL = Y[n,i] T[n,i]\ntrain L",
    "let block": "param W[i,j], B[i]\n{ let h[n,i] = W[i,j] X[n,j]\n  let h[n,i] += B[i]\n"
                 "  Y[n,i] = gelu(h[n,i]) }\nL = Y[n,i] T[n,i]\ntrain L",
    "when guard": "param W[i,j]\nY[n,i] = W[i,j] X[n,j] when X[n,j] > 0\n"
                  "L = Y[n,i] Y[n,i] T[n,i]\ntrain L",
    "pow with a param exponent, sig with a param temperature":
        "param W[i,j], E, S\nY[n,i] = pow(sig(W[i,j] X[n,j], T=S), E)\n"
        "L = Y[n,i] T[n,i]\ntrain L",
    "softmax over a dotted first axis": "param W[i,j]\nP[n.,i] = softmax(W[i,j] X[n,j])\n"
                                        "L = P[n,i] P[n,i] T[n,i]\ntrain L",
    "recurrence with a learned start": "param W[h,h'], U[h,j], S0[h]\naxis h = 2\n"
                                       "S[h,*t] = S0[h]\n"
                                       "S[h,*n+1] = tanh(W[h,h'] S[h',*n] + U[h,j] X[n,j])\n"
                                       "F[h] = S[h,*n]\nL = F[h] F[h]\ntrain L",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_gradients_of_more_constructs_equal_finite_differences(tmp_path, backend, name):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(4, 3)))
    np.save(tmp_path / "t.npy", rng.uniform(size=(4, 2)))
    text = DATA + PROGRAMS[name]
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
    reference = fuse_lang.compile(text, base_dir=tmp_path, precision="fp64", targets=["L"])
    shapes = {n: t.shape for n, t in program.analysis.tensors.items() if t.kind == "param"}
    # (a positive exponent and temperature: sig(x, T) ** E is smooth there)
    params = {n: np.asarray(rng.normal(size=s) + (1.5 if n in ("E", "S") else 0.0))
              for n, s in shapes.items()}
    value, grads = program.gradients(params)
    expected, expected_value = _finite_differences(reference, params)
    assert value == pytest.approx(expected_value, rel=1e-9)
    for param in params:
        np.testing.assert_allclose(grads[param], expected[param], rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name}: d L / d {param}")


# ---------------------------------------------------------------- optimizers

@pytest.mark.skipif(not (HAS_TORCH and HAS_JAX), reason="needs torch and jax")
@pytest.mark.parametrize("optimizer, weight_decay", [("sgd", None), ("adam", None),
                                                     ("adamw", None), ("sgd", 0.1),
                                                     ("adam", 0.1)])
def test_torch_and_jax_take_the_same_steps_with_each_optimizer(tmp_path, optimizer,
                                                                weight_decay):
    """torch.optim and optax with the documented hyperparameters (AdamW's decay
    0.01; an L2 term for SGD and Adam) give the same losses step by step."""
    _regression(tmp_path)
    results = [fuse_lang.compile(REGRESSION, backend=b, base_dir=tmp_path, precision="fp64")
               .train(optimizer=optimizer, learning_rate=0.05, steps=8, seed=3,
                      weight_decay=weight_decay, batch={"n": 4})
               for b in ("torch", "jax")]
    np.testing.assert_allclose(results[0].losses, results[1].losses, rtol=1e-10)
    for name in ("W", "B"):
        np.testing.assert_allclose(results[0].params[name], results[1].params[name],
                                   rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- bad values

@torch_only
@pytest.mark.parametrize("options, said", [
    ({"seed": -1}, "seed must be a whole number of at least 0, not -1"),
    ({"seed": 1.5}, "seed must be a whole number of at least 0, not 1.5"),
    ({"steps": 1.5}, "steps must be a whole number of at least 0, not 1.5"),
    ({"steps": "10"}, "steps must be a whole number of at least 0, not '10'"),
    ({"epochs": 1.5}, "epochs must be a whole number of at least 0"),
    ({"checkpoint_every": 2.5}, "checkpoint_every must be a whole number of at least 1"),
    ({"batch": {"n": 2.5}}, "the batch size of `n` must be a whole number of at least 1"),
    ({"learning_rate": float("inf")}, "the learning rate is a finite number above 0"),
    ({"learning_rate": "0.1"}, "the learning rate is a finite number above 0"),
    ({"weight_decay": float("inf")}, "the weight decay must be 0 or more, not inf"),
    ({"weight_decay": "x"}, "the weight decay must be 0 or more, not x"),
    ({"init": {"W": 3}}, "the initialiser of `W` is given as text"),
    ({"data": {"X": "x.npy"}}, "the data `X` is given as str 'x.npy', not an array of numbers"),
])
def test_bad_option_values_are_refused_in_words(tmp_path, options, said):
    """Each was a TypeError, an AttributeError or NumPy's ValueError from inside the
    training (or, for an infinite rate, "the loss became nan: lower the learning
    rate"; a fractional batch size was truncated)."""
    _regression(tmp_path)
    program = fuse_lang.compile(REGRESSION, backend="torch", base_dir=tmp_path)
    data = options.pop("data", None)
    with pytest.raises(FuseError) as err:
        program.train(data, **{"steps": None if "epochs" in options else 2, **options})
    assert said in str(err.value)


@torch_only
def test_a_param_given_as_no_numbers_is_refused_by_gradients(tmp_path):
    _regression(tmp_path)
    program = fuse_lang.compile(REGRESSION, backend="torch", base_dir=tmp_path)
    with pytest.raises(FuseError, match="the param `W` is given as str 'a', not an array"):
        program.gradients({"W": "a", "B": 0.0})


@pytest.mark.parametrize("flags, said", [
    (["--seed", "-1"], "argument --seed: expected a whole number of at least 0, not '-1'"),
    (["--steps", "-3"], "argument --steps: expected a whole number of at least 0"),
    (["--epochs", "-1"], "argument --epochs: expected a whole number of at least 0"),
    (["--validate-every", "0"], "argument --validate-every: expected a whole number of at "
                                "least 1"),
    (["--checkpoint-every", "0"], "argument --checkpoint-every: expected a whole number"),
    (["--lr", "inf"], "argument --lr: expected a positive number, not 'inf'"),
])
def test_fuse_train_refuses_bad_numbers_as_usage_errors(tmp_path, capsys, flags, said):
    """Exit 2 as for `--batch n=0` and `--lr -1` (a negative --seed was NumPy's
    traceback, a negative --steps exit 1)."""
    path = _regression(tmp_path)
    assert main(["train", str(path), *flags]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


# ---------------------------------------------------------------- checkpoints

UNREACHED = """X[n,j] = "x.npy"
T[n] = "t.npy"
param W[j], B, V[j]
Y[n] = W[j] X[n,j] + B
L avg= (Y[n] - T[n])^2
Z[j] = V[j] + 1
train L
export Z
"""


@torch_only
def test_a_param_the_loss_does_not_reach_is_said_and_kept_in_the_checkpoint(tmp_path, capsys):
    """`V` is not in the loss' cone: it was trained silently not at all and left out
    of the checkpoint, which `fuse run --params` then refused for the program
    ("gives no value for the param V")."""
    path = _regression(tmp_path, UNREACHED)
    ck = tmp_path / "u.safetensors"
    assert main(["train", str(path), "--steps", "3", "--checkpoint", str(ck),
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    said = "the loss `L` does not depend on the param `V`: training leaves it as it starts"
    assert said in err and said in json.loads(out)["warnings"][0]
    assert main(["run", str(path), "--params", str(ck), "--format", "json"]) == 0
    from safetensors.numpy import load_file

    saved = load_file(ck)
    assert sorted(saved) == ["B", "V", "W"]
    ran = json.loads(capsys.readouterr().out)["outputs"]["Z"]["values"]
    np.testing.assert_allclose(ran, saved["V"] + 1, rtol=1e-6)
    # left as a run starts it (seed None), and as the checkpoint holds it on resuming
    program = fuse_lang.compile(UNREACHED, backend="torch", base_dir=tmp_path)
    np.testing.assert_allclose(program.train(steps=2, seed=None).params["V"] + 1,
                               fuse_lang.compile(UNREACHED, base_dir=tmp_path).run()["Z"])
    saved["V"] = saved["V"] + 5  # (as if it had been trained by another program)
    from safetensors.numpy import save_file

    save_file(saved, tmp_path / "edited.safetensors", metadata={"fuse.step": "3"})
    resumed = program.train(steps=4, resume=str(tmp_path / "edited.safetensors"))
    np.testing.assert_array_equal(resumed.params["V"], saved["V"])


LIBRARY = "param W[j], B\nfn lin(x[n,j]) -> y[n] { y[n] = W[j] x[n,j] + B }\n"
IMPORTING = """X[n,j] = "x.npy"
T[n] = "t.npy"
import "lib.fuse" as m
Y[n] = m::lin(X[n,j])
L avg= (Y[n] - T[n])^2
train L
"""


@torch_only
def test_the_checkpoint_of_imported_params_runs_with_params(tmp_path, capsys):
    """The checkpoint holds `m::W` and `m::B`; `fuse run --params` refused them as
    "not a source or param of the program (those are: X, T)": the manifest was
    checked against the parsed text, without its imports."""
    path = _regression(tmp_path, IMPORTING)
    (tmp_path / "lib.fuse").write_text(LIBRARY, encoding="utf-8")
    ck = tmp_path / "imp.safetensors"
    assert main(["train", str(path), "--steps", "5", "--checkpoint", str(ck),
                 "--precision", "fp64", "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["run", str(path), "--params", str(ck), "--target", "L",
                 "--precision", "fp64", "--format", "json"]) == 0
    ran = json.loads(capsys.readouterr().out)["outputs"]["L"]["values"]
    from safetensors.numpy import load_file

    trained = load_file(ck)
    assert sorted(trained) == ["m::B", "m::W"]
    program = fuse_lang.compile(IMPORTING, backend="torch", base_dir=tmp_path,
                                precision="fp64")
    assert ran == pytest.approx(program.gradients(trained)[0], rel=1e-12)
    loaded = fuse_lang.compile(IMPORTING, base_dir=tmp_path, weights=str(ck),
                               precision="fp64", targets=["L"])
    assert float(loaded.run()["L"]) == pytest.approx(ran, rel=1e-12)


# ---------------------------------------------------------------- the losses reported

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text", ["param B = constant(2)\ntrain B\n",
                                  "param B = constant(2)\nL = B\ntrain L\n"])
def test_a_loss_that_is_a_param_is_reported_before_each_update(tmp_path, backend, text):
    """On torch the loss tensor was the param itself, read after the optimizer had
    updated it in place: each step reported the next step's loss (jax did not)."""
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
    result = program.train(optimizer="sgd", learning_rate=0.5, steps=3)
    assert result.losses == pytest.approx([2.0, 1.5, 1.0])
    assert float(result.params["B"]) == pytest.approx(0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gradient_that_is_not_finite_is_not_blamed_on_the_learning_rate_alone(tmp_path,
                                                                                 backend):
    """sqrt(B B) at B = 0 has a NaN gradient: the loss is finite at step 1 and NaN
    at step 2, which said only "lower the learning rate"."""
    text = "param B = zeros, W = constant(1)\nL = sqrt(B B) + W W\ntrain L\n"
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path)
    with pytest.raises(FuseError) as err:
        program.train(optimizer="sgd", learning_rate=1e-3, steps=3)
    said = str(err.value)
    assert "the loss `L` became nan at step 2 (the updates before it left `B` not finite)" \
        in said and "a gradient that is not finite" in said and "`W`" not in said


# ---------------------------------------------------------------- gradients at 0

AT_ZERO = {"sig": ("L = sig(W)", 0.25), "sig at a temperature": ("L = sig(W, 0.5)", 0.5),
           "sig(x, T=1)": ("L = sig(W, T=1)", 0.25), "abs": ("L = abs(W)", 0.0)}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(AT_ZERO))
def test_gradients_at_exactly_zero_are_the_frameworks_alike(tmp_path, backend, name):
    """The logistic took |z| through `abs`, whose gradient at 0 is torch's 0: on torch
    sig's gradient at 0 was 0, not 1/4 (jax: 1/4).  And jnp.abs's gradient at 0 is
    1 where torch's (and the central difference) is 0."""
    line, expected = AT_ZERO[name]
    program = fuse_lang.compile(f"param W = zeros\n{line}\ntrain L\n", backend=backend,
                                base_dir=tmp_path, precision="fp64")
    _, grads = program.gradients({"W": np.array(0.0)})
    assert float(grads["W"]) == pytest.approx(expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_logistic_regression_from_zeros_learns(tmp_path, backend):
    """Every pre-activation is exactly 0 at a zero start: on torch the loss stayed
    at 0.25 step after step."""
    text = ('X[n,j] = "x.npy"\nT[n] = "t.npy"\nparam W[j] = zeros, B\n'
            'Y[n] = sig(W[j] X[n,j] + B)\nL avg= (Y[n] - T[n])^2\ntrain L\n')
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", (x[:, 0] > 0).astype(float))
    program = fuse_lang.compile(text, backend=backend, base_dir=tmp_path)
    losses = program.train(optimizer="sgd", learning_rate=1.0, steps=5).losses
    assert losses[0] == pytest.approx(0.25) and losses[-1] < 0.2


@torch_only
def test_gradients_of_a_param_the_loss_does_not_reach_are_zero(tmp_path):
    _regression(tmp_path, UNREACHED)
    program = fuse_lang.compile(UNREACHED, backend="torch", base_dir=tmp_path)
    _, grads = program.gradients({"W": np.ones(3), "B": 0.0, "V": np.ones(3)})
    np.testing.assert_array_equal(grads["V"], np.zeros(3))
    assert grads["W"].shape == (3,) and np.any(grads["W"] != 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fuse_train_json_is_strict_and_its_checkpoint_runs_to_the_trained_loss(
        tmp_path, capsys, backend):
    """The JSON holds a loss per step (no bare NaN anywhere: a NaN validation loss
    is null); `fuse run --params` of the checkpoint gives the loss of the trained
    params, which is the loss after the last update (`final_loss` is the last
    step's, before it)."""
    path = _regression(tmp_path)
    np.save(tmp_path / "held.npy", np.full((16, 3), np.nan))
    ck = tmp_path / "reg.safetensors"
    assert main(["train", str(path), "--backend", backend, "--steps", "6", "--precision",
                 "fp64", "--checkpoint", str(ck), "--validation", f"X={tmp_path / 'held.npy'}",
                 "--validation", f"T={tmp_path / 't.npy'}", "--format", "json"]) == 0
    out = capsys.readouterr().out

    def refuse(constant):
        raise ValueError(f"bare {constant} in the JSON")

    trained = json.loads(out, parse_constant=refuse)
    assert len(trained["losses"]) == 6 and trained["final_loss"] == trained["losses"][-1]
    assert trained["validation"][-1] == [6, None]
    assert main(["run", str(path), "--params", str(ck), "--target", "L", "--precision",
                 "fp64", "--format", "json"]) == 0
    ran = json.loads(capsys.readouterr().out)["outputs"]["L"]["values"]
    from safetensors.numpy import load_file

    params = load_file(ck)
    program = fuse_lang.compile(REGRESSION, backend=backend, base_dir=tmp_path,
                                precision="fp64")
    assert ran == pytest.approx(program.gradients(params)[0], rel=1e-12)
    assert ran < trained["final_loss"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_select_whose_untaken_branch_is_kept_safe_has_a_finite_gradient(tmp_path, backend):
    """docs/training.md: the branch not taken still passes 0 * its gradient, NaN for
    sqrt of a negative number; the documented spelling keeps it finite."""
    naive = "param A\nL = select(A > 0, sqrt(A), 0)\ntrain L\n"
    safe = "param A\nL = select(A > 0, sqrt(select(A > 0, A, 1)), 0)\ntrain L\n"
    grads = [fuse_lang.compile(text, backend=backend, base_dir=tmp_path, precision="fp64")
             .gradients({"A": np.array(value)})[1]["A"]
             for text in (naive, safe) for value in (-1.0, 4.0)]
    assert np.isnan(grads[0]) and grads[1] == pytest.approx(0.25)
    assert grads[2] == 0.0 and grads[3] == pytest.approx(0.25)


@torch_only
def test_fuse_train_says_a_param_without_a_gradient(tmp_path, capsys):
    """`fuse check`'s gradient-blocked warning was not said by the training, which
    then left the param as it started without a word."""
    text = 'X[n,j] = "x.npy"\nparam W[j], B\nL = (W[j] X[n,j] > 0) + B B\ntrain L\n'
    path = _regression(tmp_path, text)
    assert main(["train", str(path), "--steps", "2", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    said = "the param `W` reaches the loss `L` only through constructs without a gradient"
    assert said in err and any(said in w for w in json.loads(out)["warnings"])
    assert "`B`" not in err


@torch_only
def test_a_resumed_training_keeps_the_checkpoints_vocabulary(tmp_path, capsys):
    """The checkpoint of a run resumed without --vocab again had no vocabulary, so
    `fuse generate --params` of it had none."""
    path = _regression(tmp_path)
    (tmp_path / "vocab.json").write_text('["a", "b", "c"]', encoding="utf-8")
    first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    assert main(["train", str(path), "--steps", "2", "--checkpoint", str(first),
                 "--vocab", str(tmp_path / "vocab.json")]) == 0
    assert main(["train", str(path), "--steps", "4", "--resume", str(first),
                 "--checkpoint", str(second)]) == 0
    capsys.readouterr()
    from safetensors import safe_open

    with safe_open(str(second), framework="numpy") as opened:
        assert json.loads(opened.metadata()["fuse.vocabulary"]) == ["a", "b", "c"]
        assert opened.metadata()["fuse.step"] == "4"


@torch_only
def test_a_resume_with_other_settings_says_so(tmp_path, capsys):
    """A resume takes an uninterrupted run's steps; with another learning rate, seed
    or (under a decaying schedule) another number of steps it cannot, and said nothing."""
    path = _regression(tmp_path)
    ck = tmp_path / "a.safetensors"
    assert main(["train", str(path), "--steps", "2", "--lr", "0.05", "--schedule", "cosine",
                 "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    assert main(["train", str(path), "--steps", "4", "--lr", "0.05", "--schedule", "cosine",
                 "--resume", str(ck), "--format", "json"]) == 0
    (steps,) = json.loads(capsys.readouterr().out)["warnings"]
    assert steps == (f"the checkpoint {ck} was trained towards 2 steps, this run towards 4: "
                     f"the cosine schedule's rates from here on are not an uninterrupted run's")
    assert main(["train", str(path), "--steps", "2", "--lr", "0.01", "--seed", "3",
                 "--schedule", "cosine", "--resume", str(ck), "--format", "json"]) == 0
    rate, seed = json.loads(capsys.readouterr().out)["warnings"]
    assert rate == (f"the checkpoint {ck} was trained with the learning rate 0.05, this run "
                    f"with 0.01: the steps from here on are not an uninterrupted run's")
    assert seed == (f"the checkpoint {ck} was trained with the seed 0, this run with 3: the "
                    f"steps from here on are not an uninterrupted run's (the batches are "
                    f"drawn from the seed)")
    # the same settings: nothing to say
    assert main(["train", str(path), "--steps", "2", "--lr", "0.05", "--schedule", "cosine",
                 "--resume", str(ck), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []


def test_a_let_as_the_loss_is_refused_by_fuse_check(tmp_path, capsys):
    """`fuse check` passed `let L = ...; train L`, and `fuse train` then refused it
    at a line past the file's end (the loss' cut of the program exports it)."""
    text = 'X[n,j] = "x.npy"\nparam W[j]\nlet L = W[j] W[j] X[n,j] X[n,j]\ntrain L\n'
    path = _regression(tmp_path, text)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "4:7: error[local-export]: `L` is a `let`, local to this file: a loss is" in out
