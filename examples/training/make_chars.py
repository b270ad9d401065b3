"""Write the data of char_transformer.fuse: windows of characters, one-hot, from
a text every Python installation ships: the reference documentation that
`pydoc` shows (`pydoc_data.topics`, about 465,000 characters of English prose
and code on CPython 3.11; nothing is downloaded, docs/training.md says why).

The topics are joined in the order of their names; characters seen fewer than
`RARE` times are one "rare" symbol (position 0 of the vocabulary).  The text is
cut into windows of `window + 1` characters, each starting where the last one's
final character is (so every character after the first is a target once), and
the windows are split by a seeded shuffle: a tenth held out for validation.

    python make_chars.py [FOLDER] [--window 64] [--chars 300000]

writes chars_train.npy and chars_valid.npy (windows x positions x vocabulary,
uint8 one-hot), the same windows as character ids in chars_train_ids.npy and
chars_valid_ids.npy (windows x positions, int64: char_transformer_ids.fuse)
and chars_vocab.json, and prints the unigram baseline: the
entropy of the training text's character frequencies, in nats.
"""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

RARE = 20  # characters seen fewer times than this share one symbol
HELD_OUT = 0.1


def corpus(chars: int | None = None) -> str:
    """pydoc's topics (Python's reference documentation), joined by name; the
    first `chars` characters of it when given."""
    from pydoc_data.topics import topics

    text = "".join(topics[name] for name in sorted(topics))
    return text if chars is None else text[:chars]


def vocabulary(text: str) -> list[str]:
    """The characters seen at least RARE times, sorted, after the rare symbol ''."""
    counts = Counter(text)
    return [""] + sorted(c for c, k in counts.items() if k >= RARE)


def windows(text: str, window: int = 64, seed: int = 0) -> dict[str, np.ndarray | list[str]]:
    """One-hot windows of `window + 1` characters, split into training and validation."""
    vocab = vocabulary(text)
    position = {c: k for k, c in enumerate(vocab)}
    codes = np.array([position.get(c, 0) for c in text], dtype=np.int64)
    count = (len(codes) - 1) // window
    starts = np.arange(count) * window
    picked = codes[starts[:, None] + np.arange(window + 1)[None, :]]
    order = np.random.default_rng(seed).permutation(count)
    held = max(1, round(count * HELD_OUT))
    one_hot = np.eye(len(vocab), dtype=np.uint8)
    return {"chars_train": one_hot[picked[order[held:]]],
            "chars_valid": one_hot[picked[order[:held]]],
            "chars_train_ids": picked[order[held:]],  # the same windows as ids
            "chars_valid_ids": picked[order[:held]],  # (char_transformer_ids.fuse)
            "vocab": vocab}


def unigram_nats(one_hot: np.ndarray) -> float:
    """Entropy (nats) of the character frequencies of the targets (every
    position but the first of each window): the loss of the best model that
    ignores the context."""
    counts = one_hot[:, 1:, :].reshape(-1, one_hot.shape[-1]).sum(axis=0).astype(np.float64)
    freq = counts[counts > 0] / counts.sum()
    return float(-(freq * np.log(freq)).sum())


def unigram_cross_nats(train: np.ndarray, valid: np.ndarray) -> float:
    """The loss on `valid`'s targets of the training text's character frequencies."""
    counts = train[:, 1:, :].reshape(-1, train.shape[-1]).sum(axis=0).astype(np.float64) + 1
    freq = counts / counts.sum()
    seen = valid[:, 1:, :].reshape(-1, valid.shape[-1]).sum(axis=0).astype(np.float64)
    return float(-(seen * np.log(freq)).sum() / seen.sum())


def sized_program(text: str, window: int = 64, width: int = 64, heads: int = 4,
                  key: int = 16, mlp: int = 256) -> str:
    """char_transformer.fuse's text with other sizes (the tests' and benchmark's
    tiny configurations): the axis declarations, the key width, the mask and the
    window's slices (`window` characters read, `window + 1` per window of data)."""
    changes = {r"axis d = \d+": f"axis d = {width}", r"axis h = \d+": f"axis h = {heads}",
               r"axis k = \d+": f"axis k = {key}", r"axis f = \d+": f"axis f = {mlp}",
               r"Dk = const\(\d+\)": f"Dk = const({key})",
               r"causal_mask\(\d+\)": f"causal_mask({window})",
               r"C\[n,0:\d+,c\]": f"C[n,0:{window},c]",
               r"C\[n,1:\d+,c\]": f"C[n,1:{window + 1},c]"}
    for pattern, replacement in changes.items():
        text, count = re.subn(pattern, replacement, text)
        assert count == 1, f"{pattern} occurs {count} times"
    return text


def sized_ids_program(text: str, vocab: int, window: int = 64, width: int = 64,
                      heads: int = 4, key: int = 16, mlp: int = 256) -> str:
    """char_transformer_ids.fuse's text with other sizes (the generation tests' and
    benchmark's configurations): `sized_program`'s rewrite, with the vocabulary's
    extent and the id windows' slices."""
    changes = {r"axis c = \d+": f"axis c = {vocab}", r"axis d = \d+": f"axis d = {width}",
               r"axis h = \d+": f"axis h = {heads}", r"axis k = \d+": f"axis k = {key}",
               r"axis f = \d+": f"axis f = {mlp}", r"Dk = const\(\d+\)": f"Dk = const({key})",
               r"I\[n,0:\d+\]": f"I[n,0:{window}]", r"I\[n,1:\d+\]": f"I[n,1:{window + 1}]"}
    for pattern, replacement in changes.items():
        text, count = re.subn(pattern, replacement, text)
        assert count == 1, f"{pattern} occurs {count} times"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=str(Path(__file__).parent))
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--chars", type=int, default=300_000,
                        help="how much of the text to use (default 300000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = Path(args.folder)
    data = windows(corpus(args.chars), args.window, args.seed)
    for name in ("chars_train", "chars_valid", "chars_train_ids", "chars_valid_ids"):
        np.save(folder / f"{name}.npy", data[name])
        print(f"wrote {folder / name}.npy {data[name].shape}")
    (folder / "chars_vocab.json").write_text(json.dumps(data["vocab"]), encoding="utf-8")
    print(f"unigram baseline: {unigram_nats(data['chars_train']):.4f} nats (training text), "
          f"{unigram_cross_nats(data['chars_train'], data['chars_valid']):.4f} nats "
          f"on the validation windows; {len(data['vocab'])} characters in the vocabulary")


if __name__ == "__main__":
    main()
