"""A param's starting values: what its initialiser draws (check.initialisers
names them, check.param_roles gives the role and fans), the same for every run
and every training of the same name and seed (docs/language.md, "Params and their
initialisers").  A run's params and training's both start here."""
from __future__ import annotations

import hashlib
import math
from typing import Sequence

import numpy as np

from ..check.param_roles import ParamStart, positional_role
from .results import FuseError


def initial_param(name: str, shape: Sequence[int | None], seed: int | None,
                  start: ParamStart | None = None) -> np.ndarray:
    """`name`'s start: drawn by `start` (None: Glorot-uniform with the positional
    fans), from the param's name and the seed (None: the start every run has)."""
    if any(extent is None for extent in shape):
        raise FuseError(f"the param `{name}` has an axis of unknown extent: declare it "
                        f"with `axis`")
    dims: tuple[int, ...] = tuple(shape)  # type: ignore[arg-type]
    if start is None:
        start = ParamStart("glorot", (), positional_role(len(dims)))
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    rng = np.random.default_rng(digest if seed is None else [seed, digest])
    return _draw(start, dims, rng)


def _draw(start: ParamStart, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    init, args = start.init, start.args
    if init == "zeros":
        return np.zeros(shape)
    if init == "ones":
        return np.ones(shape)
    if init == "constant":
        return np.full(shape, args[0], dtype=np.float64)
    if init == "uniform":
        low, high = (-args[0], args[0]) if len(args) == 1 else args
        return rng.uniform(low, high, size=shape)
    if init == "normal":
        mean, std = (0.0, args[0]) if len(args) == 1 else args
        return rng.normal(mean, std, size=shape)
    fan_in, fan_out = (max(fan, 1) for fan in start.role.fans(shape))  # (an empty axis)
    if init == "glorot":  # torch.nn.init.xavier_uniform_
        gain = args[0] if args else 1.0
        bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    elif init == "kaiming":  # kaiming_uniform_(a, mode="fan_in", nonlinearity="leaky_relu")
        slope = args[0] if args else 0.0
        bound = math.sqrt(2.0 / (1.0 + slope * slope)) * math.sqrt(3.0 / fan_in)
    elif init == "torch":  # nn.Linear / nn.ConvNd.reset_parameters: kaiming with a=√5
        bound = 1.0 / math.sqrt(fan_in)
    else:  # (check.initialisers refuses any other name first)
        raise FuseError(f"`{init}` is not an initialiser")
    return rng.uniform(-bound, bound, size=shape)
