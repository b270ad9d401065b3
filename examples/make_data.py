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
    }


def write_tuples(path: Path, rows) -> None:
    path.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    DATA.mkdir(exist_ok=True)
    rng = np.random.default_rng(20240601)
    for name, array in arrays(rng).items():
        np.save(DATA / f"{name}.npy", array)
    write_tuples(DATA / "likes.tsv", LIKES)


if __name__ == "__main__":
    main()
