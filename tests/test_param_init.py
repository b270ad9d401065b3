"""Param initialisers (docs/language.md, "Params and their initialisers"): the
spellings `fuse check` takes and refuses; the values a run and training start
from (bounds from the fans a param's use gives, as PyTorch computes them; zeros
for a bias, ones for a scale; a normal's spread); `fuse train --init` over the
program's initialiser; the same start for the same name and seed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main


def _write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _start(text, folder=None, names=None):
    """The params' values as a run starts them (numpy, no training)."""
    program = fuse_lang.compile(text, **({} if folder is None else {"base_dir": folder}))
    out = program.run()
    return {n: np.asarray(out[n]) for n in (names or out)}


SPELLINGS = """axis f = 4, d = 3, a = 2
param W1[f,d] = kaiming, B1[f] = zeros, E[f,d] = normal(0.02)
param U[a,d] = uniform(-0.1, 0.1), V[a,d] = uniform(0.1), N[a,d] = normal(1, 0.5)
param G[f,d] = glorot, G2[f,d] = glorot(2), K2[f,d] = kaiming(0.1), T[f,d] = torch
param C[f] = constant(-1.5), O[f] = ones, Plain[f,d]
X[d] = const([1, 2, 3])
Y[f] = W1[f,d] X[d] + B1[f] + E[f,d] X[d] + G[f,d] X[d] + G2[f,d] X[d] + K2[f,d] X[d] \
+ T[f,d] X[d] + C[f] O[f] + Plain[f,d] X[d]
Z[a] = U[a,d] X[d] + V[a,d] X[d] + N[a,d] X[d]
export Y, Z
"""


def test_fuse_check_takes_every_spelling(tmp_path, capsys):
    assert main(["check", str(_write(tmp_path, "p.fuse", SPELLINGS))]) == 0
    assert "no problems" in capsys.readouterr().out


@pytest.mark.parametrize("init,words", [
    ("kaimin", ["bad-initialiser", "did you mean `kaiming`"]),
    ("normal", ["`normal` takes 1 or 2 arguments, not 0"]),
    ("zeros(1)", ["`zeros` takes 0 arguments, not 1"]),
    ("uniform(0)", ["a is above 0"]),
    ("normal(0.5, -1)", ["standard deviation is above 0"]),
    ("glorot(0)", ["a gain is above 0"]),
    ("kaiming(-1)", ["negative slope"]),
])
def test_fuse_check_refuses_a_bad_initialiser(tmp_path, capsys, init, words):
    text = f"axis i = 2\nparam W[i] = {init}\nY = W[i]\nexport Y\n"
    assert main(["check", str(_write(tmp_path, "p.fuse", text))]) != 0
    out = capsys.readouterr().out
    for word in words:
        assert word in out


def test_an_initialiser_is_numbers_only(tmp_path, capsys):
    text = "axis i = 2\nparam W[i] = normal(s)\nY = W[i]\nexport Y\n"
    assert main(["check", str(_write(tmp_path, "p.fuse", text))]) != 0
    assert "syntax-error" in capsys.readouterr().out


def test_each_param_of_a_declaration_has_its_own_initialiser():
    text = ("axis i = 3, j = 4\nparam A[i,j], B[i] = constant(2), C[i,j] = zeros\n"
            "X[j] = const([1, 2, 3, 4])\nY[i] = A[i,j] X[j] + B[i] + C[i,j] X[j]\n"
            "export A, B, C")
    values = _start(text)
    assert np.abs(values["A"]).min() > 0  # the default: glorot
    assert (values["B"] == 2).all() and (values["C"] == 0).all()


# -------------------------------------------------------- fans, as PyTorch's

LINEAR = ("axis f = 48, d = 300\nX[b,d] = \"l.npy\"\nparam W1[f,d] = {init}, B1[f]\n"
          "H[b,f] = relu(W1[f,d] X[b,d] + B1[f])\nexport W1, B1")
CONV = ("axis o = 40, dx = 5, i = 30\nX[n,x,i] = \"x.npy\"\nparam K1[o,dx,i] = {init}, BK[o]\n"
        "H1[n,x,o] = K1[o,dx,i] X[n,x+dx,i] + BK[o]\nexport K1, BK")
ATTENTION = ("axis h = 4, k = 16, d = 96\nA[n,p,d] = \"a.npy\"\nparam WQ[h,k,d] = {init}\n"
             "Q[n,h,p,k] = WQ[h,k,d] A[n,p,d]\nexport WQ")


@pytest.fixture
def data(tmp_path):
    """The folder of CONV's and ATTENTION's inputs."""
    np.save(tmp_path / "x.npy", np.ones((1, 12, 30)))
    np.save(tmp_path / "a.npy", np.ones((1, 3, 96)))
    np.save(tmp_path / "l.npy", np.ones((1, 300)))
    np.save(tmp_path / "c.npy", np.ones((1, 40)))
    return tmp_path


def _spans(values: np.ndarray, bound: float) -> None:
    """Many values uniform on [-bound, bound]: within it, reaching near its ends."""
    assert values.size >= 1000
    assert np.abs(values).max() <= bound * (1 + 1e-6)  # (a run's values are float32)
    assert np.abs(values).max() > 0.97 * bound
    assert abs(values.mean()) < 0.05 * bound


def _within(values: np.ndarray, bound: float) -> None:
    """A few values uniform on [-bound, bound]."""
    assert bound * 0.3 < np.abs(values).max() <= bound * (1 + 1e-6)


def test_torch_is_pytorchs_default_for_linear_and_conv(data):
    torch = pytest.importorskip("torch")
    linear = torch.nn.Linear(300, 48)  # PyTorch's weight [out, in]: W1[f,d]
    conv = torch.nn.Conv1d(30, 40, 5)  # [out, in, kernel]: K1[o,dx,i]
    for module, text, name in ((linear, LINEAR, "W1"), (conv, CONV, "K1")):
        weight = module.weight.detach().numpy()
        fan_in = weight.shape[1] * int(np.prod(weight.shape[2:]))  # torch's fan_in
        bound = 1 / math.sqrt(fan_in)
        assert np.abs(weight).max() <= bound  # (torch's own draw is on that bound)
        values = _start(text.format(init="torch"), data)[name]
        assert values.size == weight.size
        _spans(values, bound)


def test_kaiming_and_glorot_bounds_are_torchs(data):
    torch = pytest.importorskip("torch")
    init = torch.nn.init
    for text, name, torch_shape in ((LINEAR, "W1", (48, 300)), (CONV, "K1", (40, 30, 5)),
                                    (ATTENTION, "WQ", (64, 96))):
        weight = torch.empty(torch_shape)
        fan_in = torch_shape[1] * int(np.prod(torch_shape[2:]))
        fan_out = torch_shape[0] * int(np.prod(torch_shape[2:]))
        kaiming = init.kaiming_uniform_(weight.clone(), nonlinearity="relu").numpy()
        glorot = init.xavier_uniform_(weight.clone()).numpy()
        for drawn, spelled, bound in ((kaiming, "kaiming", math.sqrt(6 / fan_in)),
                                      (glorot, "glorot", math.sqrt(6 / (fan_in + fan_out)))):
            _spans(drawn, bound)  # torch's draw has the bound of the fans written here
            _spans(_start(text.format(init=spelled), data)[name], bound)
    leaky = _start(LINEAR.format(init="kaiming(0.2)"), data)["W1"]
    _spans(leaky, math.sqrt(2 / (1 + 0.2 ** 2)) * math.sqrt(3 / 300))


def test_a_weight_starts_glorot_and_a_bias_at_zeros_by_default(data):
    linear = _start(LINEAR.replace(" = {init}", ""), data)
    _spans(linear["W1"], math.sqrt(6 / (300 + 48)))
    assert (linear["B1"] == 0).all()
    conv = _start(CONV.replace(" = {init}", ""), data)
    _spans(conv["K1"], math.sqrt(6 / (5 * 30 + 40 * 5)))
    assert (conv["BK"] == 0).all()


def test_a_scalar_bias_is_zero_and_a_temperature_one(data):
    text = ("axis j = 300\nX[n,j] = \"l.npy\"\nparam W[j], B, T, S[j]\n"
            "Y[n] = sig(W[j] X[n,j] + B, T)\nZ[n,j] = S[j] X[n,j]\nexport W, B, T, S")
    values = _start(text, data)
    assert values["B"] == 0 and values["T"] == 1 and (values["S"] == 1).all()
    _within(values["W"], math.sqrt(6 / (300 + 1)))


def test_a_param_whose_uses_disagree_takes_the_positional_fans(data):
    """Read as a weight in one equation and a scale in another: fan_in its last
    axis, fan_out its first (times the axes between)."""
    text = ("axis a = 20, b = 30, c = 40\nX[n,c] = \"c.npy\"\nparam W[a,b,c]\n"
            "Y[n,a,b] = W[a,b,c] X[n,c]\nZ[a,b,c] = 2 W[a,b,c] X[n,c]\nexport W, Z")
    _spans(_start(text, data)["W"], math.sqrt(6 / (40 * 30 + 20 * 30)))


def test_normal_and_uniform_and_constant():
    text = ("axis a = 200, b = 100\n"
            "param E[a,b] = normal(0.02), M[a,b] = normal(3, 0.5), U[a,b] = uniform(-0.1, 0.3), "
            "V[a,b] = uniform(0.25), C[a,b] = constant(-0.5)\n"
            "Y[a] = E[a,b] + M[a,b] + U[a,b] + V[a,b] + C[a,b]\nexport E, M, U, V, C")
    values = _start(text)
    assert abs(values["E"].std() - 0.02) < 0.02 * 0.05 and abs(values["E"].mean()) < 0.002
    assert abs(values["M"].std() - 0.5) < 0.5 * 0.05 and abs(values["M"].mean() - 3) < 0.05
    assert values["U"].min() >= -0.1 and values["U"].max() < 0.3
    assert values["U"].min() < -0.09 and values["U"].max() > 0.29
    _spans(values["V"], 0.25)
    assert (values["C"] == -0.5).all()


# ------------------------------------------------------ training and the CLI

REGRESSION = """X[n,j] = "x.npy"
T[n] = "t.npy"
axis f = 8
param W1[f,j] = normal(0.5), B1[f], W2[f], B2
H[n,f] = relu(W1[f,j] X[n,j] + B1[f])
Y[n] = W2[f] H[n,f] + B2
L avg= (Y[n] - T[n])^2
train L
export L
"""


@pytest.fixture
def regression(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(32, 5)))
    np.save(tmp_path / "t.npy", rng.normal(size=(32,)))
    return _write(tmp_path, "reg.fuse", REGRESSION)


def test_training_starts_from_the_programs_initialisers(regression):
    pytest.importorskip("torch")
    program = fuse_lang.compile(regression.read_text(), backend="torch",
                                base_dir=regression.parent)
    start = program.train(steps=0, seed=0).params
    assert (start["B1"] == 0).all() and start["B2"] == 0
    assert abs(start["W1"].std() - 0.5) < 0.2  # (40 values)
    _within(start["W2"], math.sqrt(6 / (8 + 1)))
    again = program.train(steps=0, seed=0).params
    other = program.train(steps=0, seed=1).params
    for name in start:
        np.testing.assert_array_equal(start[name], again[name])
    assert not np.array_equal(start["W1"], other["W1"])
    given = program.train(steps=0, init={"W1": "zeros", "B1": "constant(0.25)"},
                          init_default="torch").params
    assert (given["W1"] == 0).all() and (given["B1"] == 0.25).all()
    _within(given["W2"], 1 / math.sqrt(8))  # the default for a weight with none written
    assert given["B2"] == 0  # (a bias keeps its default)


def test_a_run_starts_its_params_as_training_without_a_seed(regression):
    pytest.importorskip("torch")
    text = regression.read_text().replace("export L", "export L, W1, W2")
    run = fuse_lang.compile(text, base_dir=regression.parent).run()
    trained = fuse_lang.compile(text, backend="torch", base_dir=regression.parent).train(
        steps=0, seed=None).params
    for name in ("W1", "W2"):
        np.testing.assert_array_equal(np.asarray(run[name]), trained[name])


def test_fuse_train_init_overrides_the_program(regression, capsys):
    pytest.importorskip("torch")
    from safetensors.numpy import load_file

    out = regression.parent / "start.safetensors"
    assert main(["train", str(regression), "--steps", "0", "--checkpoint", str(out),
                 "--init", "W1=uniform(0.01)", "--init", "B2=constant(3)",
                 "--init-default", "kaiming"]) == 0
    saved = load_file(str(out))
    _within(saved["W1"], 0.01)
    assert saved["B2"] == 3
    _within(saved["W2"], math.sqrt(6 / 8))
    capsys.readouterr()
    assert main(["train", str(regression), "--steps", "0", "--init", "W1=kaimin"]) == 1
    assert "did you mean `kaiming`" in capsys.readouterr().err
    assert main(["train", str(regression), "--steps", "0", "--init", "Q=zeros"]) == 1
    assert "`Q`, which is not a param" in capsys.readouterr().err
    assert main(["train", str(regression), "--steps", "0", "--init", "W1"]) == 2
    assert "--init takes NAME=INIT" in capsys.readouterr().err


# ------------------------------------------------------------------ the editor

def test_hover_and_completion_know_the_initialisers():
    from fuse_lang.check import analyze
    from fuse_lang.ide.completion import complete
    from fuse_lang.ide.hover import hover_at
    from fuse_lang.ide.semantic_tokens import semantic_tokens

    text = ("axis i = 3, j = 4\nparam W[i,j] = kaiming, B[i]\nX[j] = const([1, 2, 3, 4])\n"
            "Y[i] = W[i,j] X[j] + B[i]\nexport Y\n")
    analysis = analyze(text)
    assert "Kaiming (He) uniform" in hover_at(analysis, text.index("kaiming") + 1).markdown
    weight = hover_at(analysis, text.index("W[i,j] =")).markdown
    assert "Starts as kaiming (written; a weight param: fan_in 4, fan_out 3)" in weight
    assert "Starts as zeros (the default; a bias param)" in hover_at(
        analysis, text.index("B[i]\n")).markdown
    tokens = {text[t.span.start:t.span.end]: t.type for t in semantic_tokens(analysis)}
    assert tokens["kaiming"] == "function"
    typed = "param W[i,j] = "
    labels = [c.label for c in complete(analyze(typed), len(typed))]
    assert labels[:3] == ["zeros", "ones", "constant"] and "kaiming" in labels
