"""Write the small data files the example programs read (examples/data/).

    python examples/make_data.py

Fixed seed, float32, tiny arrays: the outputs are committed beside the
programs so that `fuse check examples/*.fuse` works on a fresh checkout.
Running it again rewrites the same bytes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"

# sizes (the tests read the shapes back through `fuse_lang.analyze`)
P, D, DK, DV = 6, 16, 8, 4          # attention: positions, model width, key and value widths
IMG, CH, K = 7, 3, 3                # cnn: a 7x7 image with 3 channels, 3x3 filters
LAYERS, WIDTH = 3, 5                # mlp: 3 layers of width 5
HIDDEN, STEPS = 4, 5                # rnn: 4 units over 5 time steps
EMB = 4                             # embedding width
PEOPLE = ("Alice", "Bob", "Carol", "Dave", "Eve")
LIKES = (("Alice", "Bob"), ("Bob", "Carol"), ("Carol", "Dave"), ("Dave", "Eve"),
         ("Eve", "Alice"), ("Alice", "Carol"))
TP, TD, TDK, TH = 6, 8, 4, 16       # transformer: positions, width, key width, MLP width
LAYERS2, HEADS2 = 2, 2              # the 2-layer transformer: layers, heads (key width TDK)
STATES, SYMBOLS, TIMES = 3, 4, 7    # hmm: hidden states, observation symbols, time steps
KN, KQ, KDIM = 8, 5, 2              # kernel machine: training points, queries, dimensions
TEMP_EMB = 8                        # embedding width for the temperature example (orthonormal rows)
# a small directed graph over cities with a cycle (Bern -> Paris -> Oslo -> Bern)
ROADS = (("Amsterdam", "Berlin"), ("Berlin", "Bern"), ("Bern", "Paris"), ("Paris", "Oslo"),
         ("Oslo", "Bern"), ("Amsterdam", "Madrid"), ("Madrid", "Lisbon"), ("Rome", "Athens"))


def arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {
        # attention head
        "attention_x": normal(P, D),
        "attention_wq": normal(DK, D, scale=D ** -0.5),
        "attention_wk": normal(DK, D, scale=D ** -0.5),
        "attention_wv": normal(DV, D, scale=D ** -0.5),
        # CNN
        "cnn_image": rng.random((IMG, IMG, CH)).astype(np.float32),
        "cnn_filter": normal(K, K, CH, scale=(K * K * CH) ** -0.5),
        # MLP: W[i,j,k] is layer i's weight from unit k to unit j
        "mlp_w": normal(LAYERS, WIDTH, WIDTH, scale=WIDTH ** -0.5),
        # RNN
        "rnn_w": normal(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5),
        "rnn_v": normal(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5),
        "rnn_u": normal(HIDDEN, STEPS),
        # embedding-space reasoning: one row per symbol of the relation's domain
        "reasoning_emb": normal(len(PEOPLE), EMB, scale=EMB ** -0.5),
        # transformer block: attention (WO maps values back to the model width) and an MLP
        "transformer_x": normal(TP, TD),
        "transformer_wq": normal(TDK, TD, scale=TD ** -0.5),
        "transformer_wk": normal(TDK, TD, scale=TD ** -0.5),
        "transformer_wv": normal(TD, TD, scale=TD ** -0.5),
        "transformer_wo": normal(TD, TD, scale=TD ** -0.5),
        "transformer_w1": normal(TH, TD, scale=TD ** -0.5),
        "transformer_b1": normal(TH, scale=0.1),
        "transformer_w2": normal(TD, TH, scale=TH ** -0.5),
        # hidden Markov model: Init[s], Trans[s,s'] (row s sums to 1), Emit[s,o],
        # Obs[t,o] one-hot observations
        "hmm_init": _stochastic(rng, STATES),
        "hmm_trans": _stochastic(rng, STATES, STATES),
        "hmm_emit": _stochastic(rng, STATES, SYMBOLS),
        "hmm_obs": np.eye(SYMBOLS, dtype=np.float32)[rng.integers(0, SYMBOLS, TIMES)],
        # Bayesian network (the sprinkler): Cloudy -> Sprinkler, Cloudy -> Rain,
        # (Sprinkler, Rain) -> WetGrass; each table's last axis is the variable's value
        "bayes_cloudy": np.array([0.5, 0.5], dtype=np.float32),
        "bayes_sprinkler": np.array([[0.5, 0.5], [0.9, 0.1]], dtype=np.float32),
        "bayes_rain": np.array([[0.8, 0.2], [0.2, 0.8]], dtype=np.float32),
        "bayes_wet": np.array([[[1.0, 0.0], [0.1, 0.9]],
                               [[0.1, 0.9], [0.01, 0.99]]], dtype=np.float32),
        # kernel machine: training points, dual weights times labels, query points
        "kernel_x": normal(KN, KDIM),
        "kernel_alpha": normal(KN),
        "kernel_q": normal(KQ, KDIM),
        # embedding-space reasoning at several temperatures: orthonormal rows
        "temperature_emb": np.linalg.qr(rng.standard_normal((TEMP_EMB, TEMP_EMB)))[0][
            :len(PEOPLE)].astype(np.float32),
        # a 2-layer transformer with 2 attention heads (transformer_fn.fuse, written out in
        # transformer_2layer.fuse): a leading layer axis, then the head axis.  (Last in
        # this table: an array drawn earlier would change every later one's bytes.)
        "transformer2_x": normal(TP, TD),
        "transformer2_wq": normal(LAYERS2, HEADS2, TDK, TD, scale=TD ** -0.5),
        "transformer2_wk": normal(LAYERS2, HEADS2, TDK, TD, scale=TD ** -0.5),
        "transformer2_wv": normal(LAYERS2, HEADS2, TDK, TD, scale=TD ** -0.5),
        "transformer2_wo": normal(LAYERS2, TD, HEADS2, TDK, scale=(HEADS2 * TDK) ** -0.5),
        "transformer2_w1": normal(LAYERS2, TH, TD, scale=TD ** -0.5),
        "transformer2_b1": normal(LAYERS2, TH, scale=0.1),
        "transformer2_w2": normal(LAYERS2, TD, TH, scale=TH ** -0.5),
    }


def _stochastic(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Non-negative, each row (the last axis) summing to 1."""
    x = rng.random(shape) + 0.1
    return (x / x.sum(axis=-1, keepdims=True)).astype(np.float32)


def write_tuples(path: Path, rows) -> None:
    path.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    DATA.mkdir(exist_ok=True)
    rng = np.random.default_rng(20240601)
    for name, array in arrays(rng).items():
        np.save(DATA / f"{name}.npy", array)
    write_tuples(DATA / "likes.tsv", LIKES)
    write_tuples(DATA / "roads.tsv", ROADS)


if __name__ == "__main__":
    main()
