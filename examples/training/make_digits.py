"""Write the data of digits.fuse: scikit-learn's handwritten digits (it ships
them; nothing is downloaded), pixels scaled to [0, 1], classes one-hot, split
into 1,400 training and 397 test images by a seeded shuffle."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def digits(seed: int = 0) -> dict[str, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    order = np.random.default_rng(seed).permutation(len(data.target))
    x = data.data[order] / 16.0
    t = np.eye(10)[data.target[order]]
    return {"digits_x": x[:1400], "digits_t": t[:1400],
            "digits_test_x": x[1400:], "digits_test_t": t[1400:]}


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    for name, array in digits().items():
        np.save(folder / f"{name}.npy", array)
        print(f"wrote {folder / name}.npy {array.shape}")
