"""Choosing the next token from its logits: greedy (temperature 0), or drawn at a
temperature from the `top_k` most likely, by a NumPy Generator made from the
seed (the same seed draws the same tokens)."""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from ..results import FuseError


class Sampler:
    def __init__(self, temperature: float = 1.0, top_k: int | None = None,
                 seed: int | None = 0) -> None:
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
                or not temperature >= 0:
            raise FuseError(f"the temperature is 0 (greedy) or more, not {temperature!r}")
        if top_k is not None and (whole_number(top_k) is None or top_k < 1):
            raise FuseError(f"top_k keeps 1 token or more (a whole number), not {top_k!r}")
        if seed is not None and (whole_number(seed) is None or seed < 0):
            raise FuseError(f"the seed is a whole number, 0 or more (or None: a fresh one), "
                            f"not {seed!r}")
        self.temperature = float(temperature)
        self.top_k = None if top_k is None else whole_number(top_k)
        self.rng = np.random.default_rng(None if seed is None else whole_number(seed))

    def choose(self, logits: np.ndarray) -> int:
        """The next token's id (ties: the lowest id, as `topk` orders them).  Logits
        that are NaN or +inf, or all -inf, are refused whatever the temperature; a
        -inf logit is a token of probability 0."""
        z = np.asarray(logits, dtype=np.float64)
        if np.isnan(z).any() or np.isposinf(z).any() or not np.isfinite(z).any():
            raise FuseError("the next token's logits are not finite numbers (NaN or "
                            "infinite): the params may not be the program's")
        if self.temperature == 0:
            return int(np.argmax(z))
        kept = np.isfinite(z)
        if self.top_k is not None and self.top_k < z.size:
            kept[np.argsort(-z, kind="stable")[self.top_k:]] = False
        # the largest logit taken off before dividing: a tiny temperature gives 0 for
        # it and -inf for the others (greedy, ties shared), never inf - inf
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            scaled = (z - np.max(z)) / self.temperature
        scaled = np.where(kept, scaled, -math.inf)
        p = np.exp(scaled)
        p /= p.sum()
        return int(self.rng.choice(p.size, p=p))


def whole_number(value: object) -> int | None:
    """`value` as an int when it is a whole number (an int, a NumPy integer), else
    None (a float, a bool, a string)."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None
