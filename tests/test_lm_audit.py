"""A second audit of issue 35 (language models end to end), through the public
entry points, on a tiny token-id model trained in seconds.

- Stable losses: `cross_entropy` from class ids with logits masked to -inf in
  other classes (PyTorch's `masked_fill(..., -inf)`) is finite and equals a
  hand-written float64 log-sum-exp oracle and PyTorch on NumPy, torch and jax
  (it was NaN everywhere: 0·-inf of the one-hot product), its gradient is
  PyTorch's; smoothing over a row holding -inf is +inf as in PyTorch; an empty
  batch gives an empty loss per example and a NaN mean, as PyTorch's.
  PyTorch's `-inf` in a masked fill is an `undefined-tensor` that says a number
  has no infinity and offers `-1e9` (it said only "`inf` is not defined").
- `fuse train` on data whose token ids or class ids lie outside the vocabulary,
  or on an empty batch, exits 1 with one line naming the equation and the id (it
  was a traceback, IndexError from the captured torch step, or a NaN guessed at
  as "a log of a negative number"); its `--format json` keys.
- `fuse generate`: temperature 0 and `--top-k 1` are the same greedy text for
  any seed, on every backend; a seed draws the same text on NumPy, torch and jax;
  `--steps 0`; a prompt longer than the window; a vocabulary with emoji, an
  empty entry and a duplicate; a prompt of unknown characters.
- Exports of the trained model (`torch`, `torch --dynamic n,p`, `jax`) load and
  give `fuse run --params`' logits, the params in the torch module's state."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
F = torch.nn.functional
HAS_JAX = importlib.util.find_spec("jax") is not None and \
    importlib.util.find_spec("optax") is not None
JAX = pytest.param("jax", marks=pytest.mark.skipif(not HAS_JAX, reason="no jax/optax"))

LM = """axis c = 5
axis d = 4
axis v = 5
X[n,p] = "x.npy"
T[n,p] = "t.npy"
param Emb[c,d], Out[v,d]
H[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)
Logits[n,p,v] = Out[v,d] H[n,p,d]
L avg= cross_entropy(Logits[n,p,v], T[n,p], axis=v)
train L
export Logits, L
"""
# the tokens by id: an emoji (one code point, two UTF-16 units in the JSON)
VOCAB = ["\u00e9", "ab", "\U0001F600", " ", "z"]
TEXT = "".join(VOCAB)  # the cycle the model learns: each token is followed by the next


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert "Traceback" not in err.getvalue() + out.getvalue()
    return code, out.getvalue(), err.getvalue()


def _windows(folder: Path) -> None:
    cycle = np.arange(40) % 5
    x = np.stack([np.roll(cycle, -k)[:6] for k in range(8)]).astype(np.float32)
    np.save(folder / "x.npy", x)
    np.save(folder / "t.npy", (x + 1) % 5)


@pytest.fixture(scope="module")
def lm(tmp_path_factory) -> Path:
    """The model trained 60 steps with `fuse train --vocab --format json`."""
    folder = tmp_path_factory.mktemp("lm")
    (folder / "lm.fuse").write_text(LM, encoding="utf-8")
    (folder / "vocab.json").write_text(json.dumps(VOCAB), encoding="utf-8")
    _windows(folder)
    code, out, err = _cli("train", str(folder / "lm.fuse"), "--steps", "60", "--lr", "0.1",
                          "--vocab", str(folder / "vocab.json"), "--checkpoint",
                          str(folder / "ck.safetensors"), "--format", "json")
    assert code == 0, err
    (folder / "train.json").write_text(out, encoding="utf-8")
    return folder


def test_train_json_has_the_documented_keys_and_the_loss_falls(lm):
    data = json.loads((lm / "train.json").read_text(encoding="utf-8"))
    assert set(data) == {"loss", "first_step", "steps", "warnings", "first_step_seconds",
                         "step_seconds", "losses", "final_loss", "validation",
                         "checkpoint", "params"}
    assert data["loss"] == "L" and data["steps"] == 60 and len(data["losses"]) == 60
    assert data["params"] == {"Emb": [5, 4], "Out": [5, 4]}
    assert data["first_step_seconds"] > 0 and data["step_seconds"] > 0
    assert data["losses"][0] > 1.0 and data["final_loss"] < 0.05  # ln 5 = 1.61 to ~0


# ---- stable losses -----------------------------------------------------------

CE = """Z[n,v] = "z.npy"
T[n] = "t.npy"
LS[n,v.] = log_softmax(Z[n,v])
CE[n] = cross_entropy(Z[n,v], T[n], axis=v)
CS[n] = cross_entropy(Z[n,v], T[n], axis=v, smoothing=0.1)
L avg= cross_entropy(Z[n,v], T[n], axis=v)
export LS, CE, CS, L
"""
INF = np.inf
MASKED = np.array([[0.0, -INF, 2.0, 1.0],
                   [-INF, -INF, 3.0, -INF],
                   [1e4, -INF, -1e4, 0.0],
                   [-1e4, 1e4, -INF, 5e3]], dtype=np.float32)
MASKED_IDS = np.array([0, 2, 0, 3], dtype=np.float32)


def _oracle(z: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """-log_softmax(z)[id] by a hand-written log-sum-exp, in float64."""
    z = z.astype(np.float64)
    top = z.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
    return lse - z[np.arange(len(ids)), ids.astype(int)]


@pytest.mark.parametrize("backend", ["numpy", "torch", JAX])
def test_cross_entropy_with_masked_logits_is_the_oracles(tmp_path, backend):
    np.save(tmp_path / "z.npy", MASKED)
    np.save(tmp_path / "t.npy", MASKED_IDS)
    result = fuse_lang.compile(CE, backend=backend, base_dir=tmp_path).run()
    expected = _oracle(MASKED, MASKED_IDS)
    assert np.allclose(expected, [2.40760596, 0.0, 0.0, 5000.0])
    np.testing.assert_allclose(result["CE"], expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(result["CE"], F.cross_entropy(
        torch.from_numpy(MASKED), torch.from_numpy(MASKED_IDS).long(),
        reduction="none").numpy(), rtol=1e-6, atol=1e-6)
    assert float(result["L"]) == pytest.approx(expected.mean(), rel=1e-6)
    # smoothing puts mass on the masked classes: +inf, PyTorch's value, not NaN
    assert np.isposinf(result["CS"]).all()
    ls = np.asarray(result["LS"])
    assert np.array_equal(np.isneginf(ls), np.isneginf(MASKED)) and not np.isnan(ls).any()


MASKED_TRAIN = """X[n,j] = "x.npy"
T[n] = "t.npy"
K[v] = "keep.npy"
axis v = 4
param W[v,j]
Z[n,v] = select(K[v] > 0, W[v,j] X[n,j], -1e999)
L avg= cross_entropy(Z[n,v], T[n], axis=v)
train L
"""


@pytest.mark.parametrize("backend", ["torch", JAX])
def test_the_gradient_through_a_masked_class_is_pytorchs(tmp_path, backend):
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(6, 3)), rng.normal(size=(4, 3))
    ids, keep = np.array([0, 2, 3, 0, 2, 3.0]), np.array([1, 0, 1, 1.0])
    for name, value in (("x", x), ("t", ids), ("keep", keep)):
        np.save(tmp_path / f"{name}.npy", value)
    program = fuse_lang.compile(MASKED_TRAIN, backend=backend, base_dir=tmp_path,
                                precision="fp64")
    value, grads = program.gradients({"W": w})
    wt = torch.tensor(w, requires_grad=True)
    z = (torch.tensor(x) @ wt.T).masked_fill(torch.tensor(keep) == 0, -INF)
    loss = F.cross_entropy(z, torch.tensor(ids).long())
    loss.backward()
    assert np.isfinite(value) and value == pytest.approx(loss.item(), rel=1e-12)
    np.testing.assert_allclose(grads["W"], wt.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert not np.asarray(grads["W"])[1].any()  # the masked class learns nothing


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", ["numpy", "torch", JAX])
def test_an_empty_batch_gives_no_losses_and_pytorchs_nan_mean(tmp_path, backend):
    np.save(tmp_path / "z.npy", np.zeros((0, 4), np.float32))
    np.save(tmp_path / "t.npy", np.zeros((0,), np.float32))
    result = fuse_lang.compile(CE, backend=backend, base_dir=tmp_path).run()
    assert np.shape(result["CE"]) == (0,) and np.shape(result["LS"]) == (0, 4)
    expected = F.cross_entropy(torch.zeros(0, 4), torch.zeros(0).long())
    assert np.isnan(float(result["L"])) and torch.isnan(expected)


@pytest.mark.parametrize("backend", ["torch", JAX])
@pytest.mark.parametrize("name,bad,words", [
    ("x", (0, 0, 9.0), "line 7: `H[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)`: gather's "
                       "positions hold the position 9, outside the 5 of its axis (0 to 4)"),
    ("t", (2, 3, 7.0), "line 9: `L avg= cross_entropy(Logits[n,p,v], T[n,p], axis=v)`: "
                       "cross_entropy's targets hold the class id 7, outside the 5 of its "
                       "axis (0 to 4)"),
    (None, None, "the data `T` of a step is empty (shape (0, 6)): the loss has no "
                "examples to average"),
], ids=["token-id", "class-id", "empty"])
def test_training_on_ids_outside_the_vocabulary_says_which(lm, tmp_path, backend, name, bad,
                                                           words):
    """torch raised IndexError out of its captured step (a traceback); jax and the
    class ids gave a NaN loss blamed on "a log or sqrt of a negative number"."""
    data = {n: np.load(lm / f"{n}.npy") for n in ("x", "t")}
    if bad is None:  # both empty
        data = {n: v[:0] for n, v in data.items()}
    else:
        data[name][bad[:2]] = bad[2]
    given = []
    for n, value in data.items():
        np.save(tmp_path / f"{n}.npy", value)
        given += ["--data", f"{n.upper()}={tmp_path / f'{n}.npy'}"]
    code, _, err = _cli("train", str(lm / "lm.fuse"), "--steps", "2", "--backend", backend,
                        *given)
    assert code == 1 and err.strip().splitlines()[-1] == \
        f"fuse: {lm / 'lm.fuse'}: " + ("the data of a step: " if bad else "") + words


# ---- generation ----------------------------------------------------------------

def _generate(lm: Path, *options: str) -> dict:
    code, out, err = _cli("generate", str(lm / "lm.fuse"), "--params",
                          str(lm / "ck.safetensors"), "--format", "json", *options)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("backend", ["numpy", "torch", JAX])
def test_greedy_is_temperature_0_and_top_k_1_for_any_seed(lm, backend):
    runs = [_generate(lm, "--prompt", "\u00e9", "--steps", "7", "--backend", backend, *o)
            for o in (("--temperature", "0", "--seed", "1"),
                      ("--temperature", "0", "--seed", "2", "--no-reuse"),
                      ("--top-k", "1", "--seed", "3"),
                      ("--top-k", "1", "--temperature", "50", "--seed", "4"))]
    assert {tuple(r["generated"]) for r in runs} == {(1, 2, 3, 4, 0, 1, 2)}
    assert {r["text"] for r in runs} == {TEXT + "".join(VOCAB[:3])}
    assert runs[0]["new_text"] == "".join(VOCAB[1:] + VOCAB[:3]) and runs[0]["prompt"] == [0]


def test_a_seed_draws_the_same_tokens_on_numpy_torch_and_jax(lm):
    backends = ["numpy", "torch"] + (["jax"] if HAS_JAX else [])
    drawn = [_generate(lm, "--prompt-ids", "0,1", "--steps", "12", "--temperature", "3",
                       "--seed", "11", "--backend", b)["generated"] for b in backends]
    assert all(d == drawn[0] for d in drawn) and len(drawn[0]) == 12
    other = _generate(lm, "--prompt-ids", "0,1", "--steps", "12", "--temperature", "3",
                      "--seed", "12")["generated"]
    assert other != drawn[0]  # (at temperature 3 the draws are nearly uniform)


def test_no_steps_a_long_prompt_and_unknown_characters(lm):
    none = _generate(lm, "--prompt", "ab", "--steps", "0")
    assert none["generated"] == [] and none["text"] == "ab" and none["new_text"] == ""
    assert none["reused_steps"] == none["whole_steps"] == 0 and none["window"] == 6
    long = _generate(lm, "--prompt", TEXT + TEXT + " z", "--steps", "3", "--temperature", "0")
    assert long["prompt"] == [0, 1, 2, 3, 4] * 2 + [3, 4] and long["generated"] == [0, 1, 2]
    assert long["whole_steps"] == 3 and long["reused_steps"] == 0  # past the window of 6
    code, out, err = _cli("generate", str(lm / "lm.fuse"), "--params",
                          str(lm / "ck.safetensors"), "--prompt", "\u00e9q\u00e9b\U0001F600",
                          "--steps", "2")
    assert code == 1 and out == "" and err.strip() == (
        f"fuse: {lm / 'lm.fuse'}: the prompt holds 2 characters that the vocabulary does "
        f"not ('q', 'b'); its 5 tokens are those the model was trained on")


def test_a_vocabulary_with_an_empty_entry_and_a_duplicate(lm, tmp_path):
    """An entry given twice reads as its first id; an empty one is never matched and
    reads back as U+FFFD."""
    vocab = tmp_path / "v.json"
    vocab.write_text(json.dumps(["x", "x", "", "y", "\ud800"]), encoding="utf-8")
    result = _generate(lm, "--prompt", "xy", "--steps", "4", "--temperature", "0",
                       "--vocab", str(vocab))
    assert result["prompt"] == [0, 3] and result["generated"] == [4, 0, 1, 2]
    assert result["text"] == "xy\ud800xx\ufffd" and result["new_text"] == "\ud800xx\ufffd"


# ---- exports -----------------------------------------------------------------

@pytest.mark.parametrize("fmt,dynamic", [("torch", False), ("torch", True),
                                         pytest.param("jax", False, marks=pytest.mark.skipif(
                                             not HAS_JAX, reason="no jax"))])
def test_exports_of_the_model_give_its_logits(lm, tmp_path, fmt, dynamic):
    code, _, err = _cli("run", str(lm / "lm.fuse"), "--params", str(lm / "ck.safetensors"),
                        "--target", "Logits", "--out", str(tmp_path / "run.npz"))
    assert code == 0, err
    want = np.load(tmp_path / "run.npz")["Logits"]
    out = tmp_path / ("lm.pt2" if fmt == "torch" else "lm.jax")
    code, _, err = _cli("export", str(lm / "lm.fuse"), "--format", fmt, "--out", str(out),
                        "--params", str(lm / "ck.safetensors"),
                        *(("--dynamic", "n,p") if dynamic else ()))
    assert code == 0, err
    x, t = np.load(lm / "x.npy"), np.load(lm / "t.npy")
    if dynamic:  # another batch and a shorter sequence
        x, t, want = x[:3, :4].copy(), t[:3, :4].copy(), want[:3, :4]
    if fmt == "torch":
        module = torch.export.load(str(out)).module()
        got = module(X=torch.from_numpy(x), T=torch.from_numpy(t))["Logits"].detach().numpy()
        assert sorted(module.state_dict()) == ["Emb", "Out"]
    else:
        import jax

        got = np.asarray(jax.export.deserialize(out.read_bytes()).call(X=x, T=t)["Logits"])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_minus_inf_in_a_masked_fill_is_said_with_its_fix():
    text = 'S[q,k] = "z.npy"\nA[q,k] = masked_fill(S[q,k], k > q, -inf)\nexport A\n'
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "undefined-tensor"]
    assert [d.message for d in found] == [
        "`inf` is not defined: a number has no infinity; a masked fill takes a large one "
        "(`-1e9`: its softmax is 0)"]
    (edit,) = found[0].fixes[0].edits
    assert text[:edit.span.start] + edit.new_text + text[edit.span.end:] == \
        text.replace("-inf", "-1e9")


def test_a_prompt_that_begins_with_a_dash_is_given_with_an_equals_sign(lm, tmp_path):
    vocab = tmp_path / "v.json"
    vocab.write_text(json.dumps(["-", "a", "b", " ", "\n"]), encoding="utf-8")
    result = _generate(lm, "--prompt=-a", "--steps", "2", "--temperature", "0",
                       "--vocab", str(vocab))
    assert result["prompt"] == [0, 1] and result["text"] == "-ab "


@pytest.mark.parametrize("backend", ["torch", JAX])
def test_a_later_batch_with_an_id_outside_the_vocabulary_says_which(lm, tmp_path, backend):
    """The first batches are sound; the one holding row 7 is not (torch raised
    IndexError there; jax's loss became NaN, blamed on the learning rate)."""
    x = np.load(lm / "x.npy")
    x[7, 0] = 9
    np.save(tmp_path / "x.npy", x)
    code, _, err = _cli("train", str(lm / "lm.fuse"), "--steps", "8", "--batch", "n=2",
                        "--backend", backend, "--data", f"X={tmp_path / 'x.npy'}")
    assert code == 1 and err.strip().splitlines()[-1].endswith(
        "the data of a step: line 7: `H[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)`: "
        "gather's positions hold the position 9, outside the 5 of its axis (0 to 4)")
