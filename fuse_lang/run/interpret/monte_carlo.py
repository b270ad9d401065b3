"""Monte Carlo projection (`projection="monte_carlo"`, docs/execution.md).

For an equation that plan.sampling selects, the summed index `j` (extent N)
is estimated from S draws j_1..j_S instead of all N values:

    Y[i] = sum_j A[i,j] B[j]   ~   (1/S) sum_s A[i,j_s] B[j_s] / p(j_s)

with p uniform (1/N: each term scaled by N/S) or proportional to a 1-D
weights tensor the program names (`importance={"Y": "P"}`).  The estimate is
unbiased wherever p is positive on every j whose term is not zero; its
standard error is the sample standard deviation of the weighted terms over
sqrt(S).  The draws come from one `numpy.random.Generator` per estimated
tensor and run, seeded by the seed and the tensor's name, so the same seed
draws the same indices on NumPy, Torch and JAX, and a run of one target (its
cone) draws for it what the whole program's run draws; the terms are the
backend's own einsum.
"""
from __future__ import annotations

import math
import zlib
from typing import Any, Mapping

import numpy as np

from ...front import ir
from ...plan.config import ExecutionConfig
from ...plan.sampling import SampleSite
from .evaluate import EvaluationError


class Sampler:
    """The draws and estimates of one run."""

    def __init__(self, sites: Mapping[int, SampleSite], config: ExecutionConfig) -> None:
        self.config = config
        self.sites = sites  # by statement (RunPlan.sample_sites)
        self.rngs: dict[str, np.random.Generator] = {}  # per estimated tensor
        self.estimates: dict[str, dict] = {}

    def rng(self, tensor: str) -> np.random.Generator:
        """The draws of `tensor`'s equation: seeded by the seed and the tensor's
        name, not by what was drawn before it (which a targeted run leaves out)."""
        if tensor not in self.rngs:
            seed = self.config.seed
            self.rngs[tensor] = np.random.default_rng(
                None if seed is None else [seed, zlib.crc32(tensor.encode("utf-8"))])
        return self.rngs[tensor]

    def probabilities(self, run: Any, site: SampleSite) -> np.ndarray | None:
        if site.weights is None:
            return None
        value = run.values.get(site.weights)
        if value is None:  # read by nothing else: computed for the draws
            value = run.tensor(site.weights)
        weights = np.asarray(run.backend.to_numpy(value), dtype=np.float64).reshape(-1)
        total = weights.sum()
        if (weights < 0).any() or not math.isfinite(total) or total <= 0:
            raise EvaluationError(f"the importance weights `{site.weights}` must be "
                                  f"non-negative and finite with a positive sum")
        return weights / total

    def estimate(self, run: Any, k: int, shape: tuple[int, ...]) -> Any:
        """Equation k's value, estimated; its standard error is recorded."""
        site = self.sites[k]
        stmt = run.statements[k]
        backend = run.backend
        samples = self.config.samples
        assert isinstance(stmt, ir.Equation) and samples is not None
        p = self.probabilities(run, site)
        drawn = self.rng(site.tensor).choice(site.extent, size=samples, p=p)
        # each term's weight: 1/p(j_s), over S for the mean
        scale = np.full(samples, float(site.extent)) if p is None else 1.0 / p[drawn]
        rhs = stmt.rhs
        factors = rhs.factors if isinstance(rhs, ir.Product) else (rhs,)
        letters: dict[str, str] = {site.index: "a"}
        operands, specs = [], []
        for ref in factors:
            assert isinstance(ref, ir.Ref) and ref.indices is not None
            names = [i.name for i in ref.indices]  # type: ignore[union-attr]
            value = run.values[ref.name]
            if site.index in names:
                value = backend.take(value, drawn, names.index(site.index))
            operands.append(value)
            specs.append("".join(letters.setdefault(n, chr(ord("b") + len(letters) - 1))
                                 for n in names))
        output = [i.name for i in stmt.lhs.indices or ()]  # type: ignore[union-attr]
        spec = ",".join(specs) + "->" + "".join(letters[n] for n in output) + "a"
        terms = backend.einsum(spec, *operands) * backend.asarray(scale)
        value = backend.reduce("sum", terms, (len(output),)) / samples
        weighted = np.asarray(backend.to_numpy(terms), dtype=np.float64)
        error = weighted.std(axis=-1, ddof=1) / math.sqrt(samples) if samples > 1 \
            else np.full(weighted.shape[:-1], math.inf)
        self.estimates[site.tensor] = {
            "index": site.index, "samples": samples, "extent": site.extent,
            "weights": site.weights, "standard_error": error,
            "max_standard_error": float(error.max()) if error.size else 0.0}
        return value
