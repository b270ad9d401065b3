"""The data a training run reads (run.train.training): the loss' data as NumPy
arrays, read once (given, else from their files), and each step's batch of them:
all of it, or `size` positions of one index drawn per epoch without replacement
from the seed and the epoch, so that a resumed run draws what an uninterrupted
one would."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...check.loss import LossInfo
from ..inputs import load_base
from ..results import FuseError
from ..schedules import schedules_of

# A program here is a run.program.CompiledProgram (which imports run.train.training)
CompiledProgram = Any


def loss_data(cut: CompiledProgram, loss: LossInfo, given: dict[str, Any]) -> dict[str, np.ndarray]:
    """The loss' data as NumPy arrays, read once: given, else from their files."""
    unknown = sorted(set(given) - set(loss.data))
    if unknown:
        raise FuseError(f"`{unknown[0]}` is not data of the loss `{loss.name}` (its data: "
                        f"{', '.join(loss.data) or 'none'})")
    analysis = cut.analysis
    out = {}
    for name in loss.data:
        if name in given:
            out[name] = numbers(given[name], f"the data `{name}`")
            continue
        shape = analysis.tensors[name].shape
        if any(extent is None for extent in shape):
            raise FuseError(f"the data `{name}` has no file to read its shape from; give it")
        value, _ = load_base(analysis, cut.backend, cut.base_dir, {}, name, tuple(shape))
        out[name] = np.asarray(cut.backend.to_numpy(value), dtype=np.float64)
    return out


def numbers(value: Any, what: str) -> np.ndarray:
    """`value` as float64; FuseError for what is no array of numbers (a file's name
    given in place of its data was NumPy's ValueError)."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise FuseError(f"{what} is given as {type(value).__name__} {value!r:.40}, not an "
                        f"array of numbers") from None


class Batches:
    """Each step's data: all of it, or `size` positions of one index (its domain's
    axes in every data tensor), drawn per epoch without replacement."""

    def __init__(self, cut: CompiledProgram, host: dict[str, np.ndarray],
                 batch: Mapping[str, int] | None, seed: int | None) -> None:
        self.backend = cut.backend
        self.host = host
        self.seed = 0 if seed is None else seed
        self.whole = {n: self.backend.asarray(v) for n, v in host.items()}
        self.annealed = annealed_temperatures(cut)
        self.axes: dict[str, int] = {}
        self.size = self.extent = 0
        self.warnings: list[str] = []
        if batch:
            if len(batch) != 1:
                raise FuseError("minibatches are drawn over one index (batch={'n': 64})")
            (index, size), = batch.items()
            self._find_axes(cut, index, int(size))

    def _find_axes(self, cut: CompiledProgram, index: str, size: int) -> None:
        tensors = cut.analysis.tensors
        domains = {a.domain for n in self.host for a in tensors[n].axes if a.index == index}
        for name in self.host:
            for pos, axis in enumerate(tensors[name].axes):
                if axis.domain in domains:
                    self.axes[name] = pos
        if not self.axes:
            shown = ", ".join(f"{n}{tensors[n].axes_text}" for n in self.host) or "none"
            raise FuseError(f"no data of the loss has an axis `{index}` to draw batches "
                            f"over (its data: {shown})")
        extents = {self.host[n].shape[p] for n, p in self.axes.items()}
        self.extent = min(extents)
        if size < 1:
            raise FuseError(f"a batch holds at least one position of `{index}`")
        self.size = min(size, self.extent)
        if size > self.extent:  # said, not silent: every step then sees all the data
            self.warnings.append(
                f"the batch of {size} positions of `{index}` is larger than the data's "
                f"{self.extent}: each step trains on all {self.extent} (full batch)")

    def temperatures(self, step: int) -> dict[str, Any]:
        """The `per=run` temperatures at `step` (counting a resumed run's steps)."""
        return {n: self.backend.asarray(np.asarray(s.value(step)))
                for n, s in self.annealed.items()}

    @property
    def per_epoch(self) -> int:
        """Steps per pass over the data (1 without batches)."""
        return self.extent // self.size if self.axes and self.size < self.extent else 1

    def at(self, step: int) -> dict[str, Any]:
        if not self.axes or self.size >= self.extent:
            return self.whole
        epoch, k = divmod(step, self.per_epoch)
        order = np.random.default_rng([self.seed, epoch]).permutation(self.extent)
        chosen = np.sort(order[k * self.size:(k + 1) * self.size])
        return {n: (self.backend.asarray(np.take(v, chosen, axis=self.axes[n]))
                    if n in self.axes else self.whole[n]) for n, v in self.host.items()}


def annealed_temperatures(cut: CompiledProgram) -> dict[str, Any]:
    """The temperatures annealed `per=run`: a step is a run of the loss, and the
    step's value is an input of the step (never a constant of a captured or
    jitted graph)."""
    return {n: s for n, s in schedules_of(cut.analysis).items() if s.per == "run"}
