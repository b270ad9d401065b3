"""Run every program in examples/ on the NumPy engine and compare each export
with a hand-written NumPy computation of the same thing from the same data files.

One tolerance for every comparison: the engine computes in float32, the
references in float64, so   assert_allclose(rtol=RTOL, atol=ATOL)   with the
values below.  Boolean results (Datalog, embedding reasoning at T = 0) must
also match exactly.

Every example also runs once through `fuse run --format json` (exit status 0,
the same exports).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import erf

import fuse_lang
from fuse_lang.io.relation_tuples import value_key
from fuse_lang.run.outputs import relation_axes

RTOL = 1e-4
ATOL = 1e-7

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DATA = EXAMPLES / "data"
PROGRAMS = sorted(EXAMPLES.glob("*.fuse"))


def load(name: str) -> np.ndarray:
    return np.load(DATA / f"{name}.npy").astype(np.float64)


def tuples(name: str) -> list[list[str]]:
    text = (DATA / name).read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines() if line.strip()]


def first_appearance(rows: list[list[str]]) -> list[str]:
    """Symbols in the order a reader meets them: line by line, left to right."""
    return list(dict.fromkeys(cell for row in rows for cell in row))


def engine_symbols(program: str) -> list[str]:
    """The symbols of the (single) domain of an example, as the checker numbers them."""
    path = EXAMPLES / program
    analysis = fuse_lang.analyze(path.read_text(encoding="utf-8"), str(path))
    (symbols,) = analysis.domain_symbols.values()
    return list(symbols)


def relation(rows: list[list[str]], symbols: list[str] | None = None
             ) -> tuple[np.ndarray, list[str]]:
    """A Boolean matrix over the symbols (by default numbered in order of first appearance).

    The references take the numbering from the checker where it matters (see
    test_relation_file_symbols_are_numbered_in_reading_order) so that these tests
    check the computation, not the numbering."""
    symbols = symbols if symbols is not None else first_appearance(rows)
    assert sorted(symbols) == sorted(first_appearance(rows))
    out = np.zeros((len(symbols), len(symbols)))
    for a, b in rows:
        out[symbols.index(a), symbols.index(b)] = 1
    return out, symbols


def closure(rel: np.ndarray) -> np.ndarray:
    reach = rel.copy()
    while True:
        new = ((reach + reach @ rel) > 0).astype(float)
        if np.array_equal(new, reach):
            return reach
        reach = new


def sig(x, temperature=1.0):
    if temperature == 0:
        return (x > 0).astype(float)
    return 1 / (1 + np.exp(-x / temperature))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lnorm(x, axis=-1, eps=1e-5):
    centred = x - x.mean(axis=axis, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(axis=axis, keepdims=True) + eps)


def gelu(x):
    return x * 0.5 * (1 + erf(x / np.sqrt(2.0)))


# ------------------------------------------------- hand-written references


def ref_perceptron():
    w = np.array([0.2, 1.9, -0.7, 3])
    x = np.array([0, 1, 1, 0])
    return {"Y": np.array(float(w @ x > 0))}


def ref_attention():
    x, wq, wk, wv = (load(f"attention_{n}") for n in ("x", "wq", "wk", "wv"))
    q, k, v = x @ wq.T, x @ wk.T, x @ wv.T
    comp = softmax(q @ k.T / np.sqrt(8))
    return {"Comp": comp, "Attn": comp @ v}


def ref_cnn():
    image, filt = load("cnn_image"), load("cnn_filter")
    h, w, _ = image.shape
    kh, kw, _ = filt.shape
    padded = np.zeros((h + kh, w + kw, image.shape[2]))
    padded[:h, :w] = image  # reads past the edge are 0
    features = np.zeros((h, w))
    for x in range(h):
        for y in range(w):
            features[x, y] = np.sum(filt * padded[x:x + kh, y:y + kw])
    features = np.maximum(features, 0)
    pooled = np.zeros(((h + 1) // 2, (w + 1) // 2))
    for x in range(h):
        for y in range(w):
            pooled[x // 2, y // 2] += features[x, y]
    return {"Pooled": pooled}


def ref_mlp():
    w = load("mlp_w")
    layers, width, _ = w.shape
    x = np.zeros((layers, width))
    previous = np.zeros(width)  # X[i-1] is 0 before the first layer
    for i in range(layers):
        x[i] = sig(w[i] @ previous)
        previous = x[i]
    return {"X": x}


def ref_rnn():
    w, v, u = load("rnn_w"), load("rnn_v"), load("rnn_u")
    x = np.zeros(w.shape[0])
    for t in range(u.shape[1]):
        x = sig(w @ x + v @ u[:, t])
    return {"X": x}


def ref_embedding_reasoning():
    r, _ = relation(tuples("likes.tsv"))
    emb = load("reasoning_emb")
    emb_r = emb.T @ r @ emb
    return {"D": sig(emb @ emb_r @ emb.T, 0.1)}


def ref_datalog():
    people = ["Alice", "Bob", "Carol", "Dave", "Eve"]
    parent, _ = relation([["Alice", "Bob"], ["Bob", "Carol"], ["Carol", "Dave"],
                          ["Bob", "Eve"]])
    assert _ == people
    return {"Ancestor": closure(parent)}


def ref_datalog_file():
    road, _ = relation(tuples("roads.tsv"), engine_symbols("datalog_file.fuse"))
    reach = closure(road)
    return {"Reach": reach, "Cyclic": np.diag(reach).copy()}


def ref_flights():
    """examples/flights.fuse: the library's functions (examples/lib/graph.fuse) on Flight."""
    symbols = engine_symbols("flights.fuse")
    flight, _ = relation([["Paris", "Lyon"], ["Lyon", "Nice"], ["Nice", "Rome"],
                          ["Rome", "Paris"], ["Oslo", "Bergen"]], symbols)
    reach = closure(flight)
    hub = np.zeros(len(symbols))
    hub[[symbols.index("Paris"), symbols.index("Oslo")]] = 1  # the library's and the program's
    return {"Reach": reach, "Linked": np.maximum(flight, flight.T),
            "FromHub": hub[:, None] * reach}


def ref_dependencies():
    """examples/dependencies.fuse: the same library on Needs."""
    path = EXAMPLES / "dependencies.fuse"
    analysis = fuse_lang.analyze(path.read_text(encoding="utf-8"), str(path))
    # (the library's Hub is a domain of its own, which Needs does not meet)
    symbols = analysis.domain_symbols[analysis.tensors["Needs"].axes[0].domain]
    needs, _ = relation([["App", "Web"], ["Web", "Http"], ["Http", "Tls"], ["Tls", "Crypto"],
                         ["Crypto", "Tls"], ["App", "Log"]], list(symbols))
    reach = closure(needs)
    return {"AllNeeds": reach, "Cyclic": np.diag(reach).copy()}


def ref_transformer():
    x = load("transformer_x")
    wq, wk, wv, wo = (load(f"transformer_{n}") for n in ("wq", "wk", "wv", "wo"))
    w1, b1, w2 = load("transformer_w1"), load("transformer_b1"), load("transformer_w2")
    n = x.shape[0]
    scores = (x @ wq.T) @ (x @ wk.T).T / np.sqrt(wq.shape[0])
    causal = np.tril(np.ones((n, n), dtype=bool))
    comp = softmax(np.where(causal, scores, -np.inf))
    h = lnorm(x + (comp @ (x @ wv.T)) @ wo.T)
    y = lnorm(h + gelu(h @ w1.T + b1) @ w2.T)
    return {"Y": y, "Comp": comp}


def _transformer2_layer(x, layer):
    """One layer of examples/transformer_fn.fuse (2 causal heads, residuals, layer
    norms, a GELU MLP) with weights `transformer2_*[layer]`."""
    wq, wk, wv, wo, w1, b1, w2 = (load(f"transformer2_{n}")[layer]
                                  for n in ("wq", "wk", "wv", "wo", "w1", "b1", "w2"))
    n = x.shape[0]
    causal = np.tril(np.ones((n, n), dtype=bool))
    heads = []
    for head in range(wq.shape[0]):
        scores = (x @ wq[head].T) @ (x @ wk[head].T).T / 2.0
        heads.append(softmax(np.where(causal, scores, -np.inf)) @ (x @ wv[head].T))
    r = lnorm(x + sum(heads[k] @ wo[:, k, :].T for k in range(len(heads))))
    return lnorm(r + gelu(r @ w1.T + b1) @ w2.T)


def ref_transformer_fn():
    x = load("transformer2_x")
    return {"Y": _transformer2_layer(_transformer2_layer(x, 0), 1)}


ref_transformer_2layer = ref_transformer_fn  # the same program written out
ref_transformer_blocks = ref_transformer_fn  # the same program, each layer a block of lets


def ref_hmm():
    init, trans, emit, obs = (load(f"hmm_{n}") for n in ("init", "trans", "emit", "obs"))
    e = obs @ emit.T  # e[t, s] = P(o_t | s)
    alpha = np.zeros((obs.shape[0], init.shape[0]))
    alpha[0] = init * e[0]
    for t in range(1, obs.shape[0]):
        alpha[t] = e[t] * (alpha[t - 1] @ trans)
    return {"Alpha": alpha, "Likelihood": np.array(alpha[-1].sum())}


def ref_bayes():
    pc, ps, pr, pw = (load(f"bayes_{n}") for n in ("cloudy", "sprinkler", "rain", "wet"))
    joint = pc[:, None, None, None] * ps[:, :, None, None] * pr[:, None, :, None] * \
        pw[None, :, :, :]
    rain_and_wet = joint[..., 1].sum(axis=(0, 1))
    return {"Joint": joint, "Wet": joint.sum(axis=(0, 1, 2)), "Rain": joint.sum(axis=(0, 1, 3)),
            "RainGivenWet": rain_and_wet / rain_and_wet.sum()}


def ref_kernel():
    x, a, q = load("kernel_x"), load("kernel_alpha"), load("kernel_q")
    var, bias = 0.5, -0.2

    def gauss(u, v):
        return np.exp(-((u[:, None, :] - v[None, :, :]) ** 2).sum(-1) / var)

    k, kq = gauss(x, x), gauss(q, x)
    score = kq @ a + bias
    return {"K": k, "Score": score, "Label": (score > 0).astype(float), "Fit": k @ a + bias}


def ref_embedding_temperatures():
    r, _ = relation(tuples("likes.tsv"))
    emb = load("temperature_emb")
    emb_r = emb.T @ r @ emb
    score_r = emb @ emb_r @ emb.T
    score_g = emb @ (emb_r @ emb_r) @ emb.T
    out = {}
    for suffix, temperature in (("0", 0.0), ("1", 0.1), ("2", 1.0)):
        out["R" + suffix] = sig(score_r - 0.5, temperature)
        out["G" + suffix] = sig(score_g - 0.5, temperature)
    return out


def ref_datalog_values():
    ages = np.array([25, 30, 7])  # Ann, Bob, Cy
    n = np.arange(11)
    sums = np.zeros((11, 11, 5))
    for a in range(3):
        for b in range(3):
            sums[a, b, a + b] = 1
    x = np.arange(1, 10, dtype=float).reshape(3, 3)
    i, j = np.indices((3, 3))
    return {"Adult": (ages >= 18).astype(float),
            "Older": (ages[:, None] > ages[None, :]).astype(float),
            "NotBob": np.array([1.0, 0.0, 1.0]),
            "N": np.ones(11), "Even": (n % 2 == 0).astype(float), "Sums": sums,
            "Lower": (x * (j < i)).sum(1)}


def ref_embedding_annealing():
    """Annealing by hand: round r applies the rule at T = 1 + (0.02 - 1)·min(r, 8)/8,
    from Reach = 0, until a round changes nothing by more than 1e-6."""
    r, _ = relation(tuples("likes.tsv"))
    emb = load("temperature_emb")
    score = emb @ (emb.T @ r @ emb) @ emb.T
    reach = np.zeros_like(score)
    for step in range(1000):
        temperature = 1.0 + (0.02 - 1.0) * min(step, 8) / 8
        new = sig(score + reach @ score - 0.5, temperature)
        change, reach = np.max(np.abs(new - reach)), new
        if change <= 1e-6:
            break
    return {"Reach": reach}


REFERENCES = {name[len("ref_"):]: fn for name, fn in globals().items()
              if name.startswith("ref_")}

# Boolean exports that must match exactly (not only to the tolerance)
EXACT = {("datalog", "Ancestor"), ("datalog_file", "Reach"), ("datalog_file", "Cyclic"),
         ("flights", "Reach"), ("flights", "Linked"), ("flights", "FromHub"),
         ("dependencies", "AllNeeds"), ("dependencies", "Cyclic"),
         ("perceptron", "Y"), ("embedding_temperatures", "R0"),
         ("embedding_temperatures", "G0"), ("kernel", "Label"),
         *(("datalog_values", name) for name in ("Adult", "Older", "NotBob", "N", "Even", "Sums"))}


def compile_example(path: Path) -> fuse_lang.CompiledProgram:
    return fuse_lang.compile(path.read_text(encoding="utf-8"), backend="numpy",
                             base_dir=path.parent, path=str(path))


# ------------------------------------------------------------------ tests


def test_every_example_has_a_reference():
    assert {p.stem for p in PROGRAMS} == set(REFERENCES)


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_example_matches_numpy(path):
    outputs = compile_example(path).run()
    expected = REFERENCES[path.stem]()
    assert set(outputs) == set(expected)
    for name, want in expected.items():
        got = outputs[name]
        assert got.dtype == np.float32, name
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)
        if (path.stem, name) in EXACT:
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_embedding_at_temperature_zero_is_exact_deduction():
    """T = 0 gives the relation itself and the Datalog rule G(x,z) = R(x,y) R(y,z)."""
    out = compile_example(EXAMPLES / "embedding_temperatures.fuse").run()
    r, _ = relation(tuples("likes.tsv"))
    np.testing.assert_array_equal(out["R0"], r)
    np.testing.assert_array_equal(out["G0"], ((r @ r) > 0).astype(float))
    # warmer temperatures only soften: the same side of 1/2 everywhere, never exact
    for soft in ("R1", "R2", "G1", "G2"):
        assert np.array_equal(out[soft] > 0.5, out[soft[0] + "0"] > 0.5)
        assert np.all((out[soft] > 0) & (out[soft] < 1))
    assert np.all(np.abs(out["R1"] - 0.5) > np.abs(out["R2"] - 0.5))


def test_datalog_queries_answer_by_name():
    result = compile_example(EXAMPLES / "datalog.fuse").execute()
    (query,) = result.queries
    assert sorted(t[0] for t in query.tuples) == ["Bob", "Carol", "Dave", "Eve"]
    result = compile_example(EXAMPLES / "datalog_file.fuse").execute()
    reach, cyclic = result.queries
    road, symbols = relation(tuples("roads.tsv"), engine_symbols("datalog_file.fuse"))
    reach_ref = closure(road)
    # answers sorted by value (issue 27, point 6), not in the order of the positions
    assert [t[0] for t in reach.tuples] == sorted(
        symbols[k] for k in np.nonzero(reach_ref[symbols.index("Amsterdam")])[0])
    assert [t[0] for t in cyclic.tuples] == sorted(
        symbols[k] for k in np.nonzero(np.diag(reach_ref))[0])
    assert [t[0] for t in cyclic.tuples] == ["Bern", "Oslo", "Paris"]


def test_hmm_likelihood_is_the_sum_over_all_state_paths():
    """An independent check of the forward pass: brute force over every path."""
    import itertools

    init, trans, emit, obs = (load(f"hmm_{n}") for n in ("init", "trans", "emit", "obs"))
    o = obs.argmax(axis=1)
    total = 0.0
    for path in itertools.product(range(init.shape[0]), repeat=len(o)):
        p = init[path[0]] * emit[path[0], o[0]]
        for t in range(1, len(o)):
            p *= trans[path[t - 1], path[t]] * emit[path[t], o[t]]
        total += p
    out = compile_example(EXAMPLES / "hmm.fuse").run()
    np.testing.assert_allclose(out["Likelihood"], total, rtol=RTOL, atol=ATOL)


def test_relation_file_symbols_are_numbered_in_reading_order():
    """LANGUAGE.md §8: symbols are numbered in order of first appearance.  In
    roads.tsv, Lisbon (line 7, column 2) appears before Rome (line 8, column 1)."""
    assert engine_symbols("datalog_file.fuse") == first_appearance(tuples("roads.tsv"))


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_example_runs_through_the_cli(path):
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    expected = REFERENCES[path.stem]()
    assert set(data["outputs"]) == set(expected)
    analysis = fuse_lang.analyze(path.read_text(encoding="utf-8"), str(path))
    for name, want in expected.items():
        axes = relation_axes(analysis, name)
        if axes is not None:  # a relation: its tuples of values, sorted by value
            rows = [tuple(ax[p] if ax else p for ax, p in zip(axes, map(int, at)))
                    for at in np.argwhere(np.asarray(want) > 0.5)]
            rows.sort(key=lambda row: tuple(map(value_key, row)))
            assert data["outputs"][name]["count"] == len(rows), name
            assert [tuple(t) for t in data["outputs"][name]["tuples"]] == rows, name
            continue
        got = np.asarray(data["outputs"][name]["values"], dtype=np.float64)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)
