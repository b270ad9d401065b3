"""Choosing the next token from its logits: greedy (temperature 0), or drawn at a
temperature from the `top_k` most likely, by a NumPy Generator made from the
seed (the same seed draws the same tokens)."""
from __future__ import annotations

import numpy as np

from ..results import FuseError


class Sampler:
    def __init__(self, temperature: float = 1.0, top_k: int | None = None,
                 seed: int | None = 0) -> None:
        if not temperature >= 0:
            raise FuseError(f"the temperature is 0 (greedy) or more, not {temperature}")
        if top_k is not None and top_k < 1:
            raise FuseError(f"top_k keeps 1 token or more, not {top_k}")
        self.temperature = float(temperature)
        self.top_k = top_k
        self.rng = np.random.default_rng(seed)

    def choose(self, logits: np.ndarray) -> int:
        """The next token's id (ties: the lowest id, as `topk` orders them)."""
        z = np.asarray(logits, dtype=np.float64)
        if self.temperature == 0:
            return int(np.argmax(z))
        z = z / self.temperature
        if self.top_k is not None and self.top_k < z.size:
            kept = np.argsort(-z, kind="stable")[:self.top_k]
            masked = np.full_like(z, -np.inf)
            masked[kept] = z[kept]
            z = masked
        top = np.max(z)
        if not np.isfinite(top):
            raise FuseError("the next token's logits are not finite numbers (NaN or "
                            "infinite): the params may not be the program's")
        p = np.exp(z - top)
        p /= p.sum()
        return int(self.rng.choice(p.size, p=p))
