"""One gradient step of a program's loss, per framework (docs/training.md).

A learner holds the params as the framework's own tensors and an optimizer of
the framework: `torch.optim` (SGD, Adam, AdamW) over torch autograd through the
torch backend's evaluation, or `optax` (sgd, adam, adamw) over `jax.grad`
through the jax backend's, the whole step traced once per input shape by
`jax.jit`.  The loss function is the engine itself: it takes the inputs (data
and params) and returns the loss as the backend's scalar tensor.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..backends.base import Backend
from ..results import FuseError
from .optimizers import OPTIMIZERS, SCHEDULES

ADAMW_WEIGHT_DECAY = 0.01  # torch's default, used on both frameworks alike

LossFunction = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Rate:
    """The learning rate at each step: constant, or cosine decay to 0 over `steps`
    (optax.cosine_decay_schedule's formula, computed alike for torch)."""
    value: float
    schedule: str = "constant"
    steps: int = 1

    def at(self, step: int) -> float:
        if self.schedule == "constant":
            return self.value
        done = min(step, self.steps) / max(self.steps, 1)
        return self.value * 0.5 * (1.0 + math.cos(math.pi * done))


def make_learner(backend: Backend, loss: LossFunction, params: Mapping[str, np.ndarray],
                 optimizer: str, rate: Rate, weight_decay: float | None,
                 fresh: Callable[[], LossFunction] | None = None,
                 stored: Any = None) -> "TorchLearner | JaxLearner":
    """The learner of `backend` (torch or jax) starting from `params`; on torch,
    `fresh` (the loss of a new copy of the program) lets it capture the loss as a
    graph (CapturedLoss), kept in the compile cache at `stored` (a Path) if given."""
    if optimizer not in OPTIMIZERS:
        raise FuseError(f"unknown optimizer `{optimizer}`: use one of {', '.join(OPTIMIZERS)}")
    if rate.schedule not in SCHEDULES:
        raise FuseError(f"unknown schedule `{rate.schedule}`: use one of {', '.join(SCHEDULES)}")
    if backend.name == "torch":
        return TorchLearner(backend, loss, params, optimizer, rate, weight_decay, fresh, stored)
    if backend.name == "jax":
        return JaxLearner(backend, loss, params, optimizer, rate, weight_decay)
    raise FuseError(f"training needs gradients, which the {backend.name} backend does not "
                    f"compute: train on the torch or jax backend (--backend torch|jax)")


class TorchLearner:
    def __init__(self, backend: Backend, loss: LossFunction, params: Mapping[str, np.ndarray],
                 optimizer: str, rate: Rate, weight_decay: float | None,
                 capture: Callable[[], LossFunction] | None = None,
                 stored: Any = None) -> None:
        import torch

        from .captured_loss import CapturedLoss

        self.torch = torch
        self.host = backend.to_numpy  # (bfloat16, which NumPy lacks, as float32)
        self.loss = loss if capture is None else CapturedLoss(loss, capture, stored)
        self.names = sorted(params)
        self.tensors = {n: backend.asarray(np.asarray(params[n])).detach().clone()
                        .requires_grad_(True) for n in self.names}
        kinds = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
        self.rate = rate
        options: dict[str, Any] = {"lr": rate.at(0)}
        if weight_decay is not None or optimizer == "adamw":
            options["weight_decay"] = ADAMW_WEIGHT_DECAY if weight_decay is None \
                else weight_decay
        self.optimizer = kinds[optimizer]([self.tensors[n] for n in self.names], **options)

    def step(self, inputs: Mapping[str, Any], number: int) -> float:
        """Update `number` (counted from 0); the loss before it."""
        if self.rate.schedule != "constant":
            for group in self.optimizer.param_groups:
                group["lr"] = self.rate.at(number)
        self.optimizer.zero_grad(set_to_none=True)
        value = self.loss({**inputs, **self.tensors})
        # (a copy before the update: a loss that is a param itself, `train B` or
        # `L = B`, is that tensor, which the update changes in place)
        before = value.detach().clone()
        if value.requires_grad:  # else no param reaches it with a gradient (a warning
            value.backward()  # of `fuse check`, gradient-blocked): nothing to update
            self.optimizer.step()
        return float(before)

    def evaluate(self, inputs: Mapping[str, Any]) -> float:
        with self.torch.no_grad():
            return float(self.loss({**inputs, **self.tensors}))

    def gradients(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The loss' gradient for each param, without an update."""
        value = self.loss({**inputs, **self.tensors})
        if not value.requires_grad:  # every param blocked (gradient-blocked): all zero
            return {n: np.zeros(tuple(t.shape)) for n, t in self.tensors.items()}
        grads = self.torch.autograd.grad(value, [self.tensors[n] for n in self.names],
                                         allow_unused=True)
        return {n: (np.zeros(tuple(self.tensors[n].shape)) if g is None
                    else self.host(g)) for n, g in zip(self.names, grads)}

    def params(self) -> dict[str, np.ndarray]:
        return {n: self.host(t).copy() for n, t in self.tensors.items()}

    def optimizer_state(self) -> dict[str, np.ndarray]:
        """The optimizer's state per param, named `param/key` (Adam's moments, step)."""
        out = {}
        for number, state in self.optimizer.state_dict()["state"].items():
            for key, value in state.items():
                array = self.host(value)
                out[f"{self.names[number]}/{key}"] = array
        return out

    def load_optimizer_state(self, arrays: Mapping[str, np.ndarray]) -> None:
        saved = self.optimizer.state_dict()
        state: dict[int, dict[str, Any]] = {}
        for key, array in arrays.items():
            name, _, field = key.partition("/")
            if name in self.names:
                state.setdefault(self.names.index(name), {})[field] = \
                    self.torch.from_numpy(np.array(array))
        saved["state"] = state
        self.optimizer.load_state_dict(saved)


class JaxLearner:
    def __init__(self, backend: Backend, loss: LossFunction, params: Mapping[str, np.ndarray],
                 optimizer: str, rate: Rate, weight_decay: float | None) -> None:
        try:
            import optax
        except ImportError:
            raise FuseError("training on the jax backend needs optax: "
                            "pip install 'fuse-lang[jax]'") from None
        import jax

        self.jax = jax
        self.host = backend.to_numpy  # (bfloat16, which NumPy lacks, as float32)
        self.loss = loss
        self.values = {n: backend.asarray(np.asarray(params[n])) for n in sorted(params)}
        decay = ADAMW_WEIGHT_DECAY if weight_decay is None else weight_decay
        learning_rate: Any = rate.value if rate.schedule == "constant" else \
            optax.cosine_decay_schedule(rate.value, max(rate.steps, 1))
        if optimizer == "sgd":
            chain = optax.sgd(learning_rate)
        elif optimizer == "adam":
            chain = optax.adam(learning_rate)
        else:
            chain = optax.adamw(learning_rate, weight_decay=decay)
        if weight_decay is not None and optimizer != "adamw":  # L2 added to the gradient
            chain = optax.chain(optax.add_decayed_weights(weight_decay), chain)
        self.transform = chain
        self.state = chain.init(self.values)

        def update(values, state, inputs):
            value, grads = jax.value_and_grad(lambda v: loss({**inputs, **v}))(values)
            updates, state = chain.update(grads, state, values)
            return optax.apply_updates(values, updates), state, value

        self._update = jax.jit(update)
        self._evaluate = jax.jit(lambda values, inputs: loss({**inputs, **values}))
        self._gradients = jax.jit(jax.grad(lambda values, inputs: loss({**inputs, **values})))

    def step(self, inputs: Mapping[str, Any], number: int) -> float:
        """Update `number` (optax counts them in its state); the loss before it."""
        with self._traceable():
            self.values, self.state, value = self._update(self.values, self.state,
                                                          dict(inputs))
        return float(value)

    def evaluate(self, inputs: Mapping[str, Any]) -> float:
        with self._traceable():
            return float(self._evaluate(self.values, dict(inputs)))

    def gradients(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        with self._traceable():
            grads = self._gradients(self.values, dict(inputs))
        return {n: self.host(g) for n, g in grads.items()}

    @contextlib.contextmanager
    def _traceable(self) -> Iterator[None]:
        """A loss jax cannot trace (a fixpoint run until its values stop changing
        asks for concrete values) is a clear FuseError, not a tracer's traceback."""
        errors = self.jax.errors
        try:
            yield
        except (errors.ConcretizationTypeError, errors.TracerArrayConversionError,
                errors.TracerBoolConversionError) as err:
            raise FuseError(f"jax cannot differentiate this loss: its evaluation needs "
                            f"concrete values (a recursion run until it stops changing?); "
                            f"train it on the torch backend ({type(err).__name__})") from None

    def params(self) -> dict[str, np.ndarray]:
        return {n: np.array(self.host(v)) for n, v in self.values.items()}

    def optimizer_state(self) -> dict[str, np.ndarray]:
        """optax's state as its leaves, in the order of its tree."""
        leaves = self.jax.tree_util.tree_leaves(self.state)
        return {f"leaf/{k:05d}": np.array(self.host(leaf)) for k, leaf in enumerate(leaves)}

    def load_optimizer_state(self, arrays: Mapping[str, np.ndarray]) -> None:
        leaves, tree = self.jax.tree_util.tree_flatten(self.state)
        saved = [arrays[key] for key in sorted(arrays)]
        if len(saved) != len(leaves):
            raise FuseError(f"the checkpoint's optimizer state has {len(saved)} arrays; this "
                            f"optimizer keeps {len(leaves)} (another optimizer?)")
        import jax.numpy as jnp

        self.state = self.jax.tree_util.tree_unflatten(
            tree, [jnp.asarray(a, dtype=leaf.dtype) for a, leaf in zip(saved, leaves)])
