"""Backends: one small class per framework, imported only when asked for.

Importing fuse_lang never imports torch or jax; `get_backend("torch")`
does, once, and caches the instance (the einops `_backends.py` pattern).
"""
from __future__ import annotations

import functools
import importlib
import math
from typing import Any, Callable, NamedTuple

BACKENDS = {"numpy": "fuse_lang.run.backends.numpy_backend:NumpyBackend",
            "torch": "fuse_lang.run.backends.torch_backend:TorchBackend",
            "jax": "fuse_lang.run.backends.jax_backend:JaxBackend"}
PRECISIONS = ("fp32", "fp64", "bf16", "fp16")


class BackendError(Exception):
    """A backend that is unknown, not installed, or cannot use the device or precision."""


@functools.lru_cache(maxsize=None)
def get_backend(name: str, device: str = "cpu", precision: str = "fp32") -> Any:
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if precision not in PRECISIONS:
        raise BackendError(f"unknown precision {precision!r}; choose one of "
                           f"{', '.join(PRECISIONS)}")
    module_name, _, class_name = BACKENDS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        if name == "numpy" or err.name not in (name, f"{name}lib"):
            raise
        raise BackendError(f"the {name} backend needs {name}, which is not installed here "
                           f"(pip install \"fuse-lang[{name}]\")") from None
    return getattr(module, class_name)(device=device, precision=precision)


@functools.lru_cache(maxsize=1024)
def planned_contraction(spec: str, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """The contraction path for an einsum, planned once per spec and shapes."""
    import opt_einsum

    return opt_einsum.contract_expression(spec, *shapes, optimize="auto")


def pair_as_matmul(spec: str, a: Any, b: Any, *, total: Callable, permute: Callable,
                   matmul: Callable) -> Any:
    """A two-operand einsum as one batched matmul (BLAS), with the operands'
    roles chosen so that the result comes out in the requested order (a plain
    matrix product when nothing is batched).  `total(x, axes)` sums axes away,
    `permute(x, order)` transposes, `matmul` multiplies: the framework's own.
    The plan is made once per spec and shapes, so a run pays only for the calls."""
    plan = _matmul_plan(spec, tuple(a.shape), tuple(b.shape))
    if plan.swap:
        a, b = b, a
    if plan.total_a:
        a = total(a, plan.total_a)
    if plan.total_b:
        b = total(b, plan.total_b)
    if plan.order_a is not None:
        a = permute(a, plan.order_a)
    if plan.order_b is not None:
        b = permute(b, plan.order_b)
    if plan.reshape:
        out = matmul(a.reshape(plan.shape_a), b.reshape(plan.shape_b)).reshape(plan.produced)
    else:
        out = matmul(a, b)
    return out if plan.order_out is None else permute(out, plan.order_out)


class _MatmulPlan(NamedTuple):
    swap: bool  # multiply b @ a (the first of the output's free indices is b's)
    total_a: tuple[int, ...]  # axes summed away first (in one operand only, not kept)
    total_b: tuple[int, ...]
    order_a: tuple[int, ...] | None  # to (batch, free, contracted); None: already so
    order_b: tuple[int, ...] | None  # to (batch, contracted, free)
    shape_a: tuple[int, ...]  # (batch?, free, contracted)
    shape_b: tuple[int, ...]  # (batch?, contracted, free)
    produced: tuple[int, ...]  # the product's shape, axis by axis
    order_out: tuple[int, ...] | None  # produced -> requested order; None: already so
    reshape: bool  # whether any operand or the product needs reshaping (not a plain mm)


@functools.lru_cache(maxsize=4096)
def _matmul_plan(spec: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> _MatmulPlan:
    inputs, output = spec.split("->")
    sa, sb = inputs.split(",")
    sizes = dict(zip(sa, shape_a))
    sizes.update(zip(sb, shape_b))
    # put first whichever operand's free indices come first in the output
    first_free = next((c for c in output if (c in sa) != (c in sb)), None)
    swap = first_free is not None and first_free in sb
    if swap:
        sa, sb = sb, sa
    # an index in one operand only and not kept is summed first
    total_a = tuple(i for i, c in enumerate(sa) if c not in sb and c not in output)
    total_b = tuple(i for i, c in enumerate(sb) if c not in sa and c not in output)
    sa = "".join(c for i, c in enumerate(sa) if i not in total_a)
    sb = "".join(c for i, c in enumerate(sb) if i not in total_b)
    batch = [c for c in output if c in sa and c in sb]
    contracted = [c for c in sa if c in sb and c not in output]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]

    def prod(cs: list[str]) -> int:
        return math.prod(sizes[c] for c in cs)

    def order(of: str, to: list[str]) -> tuple[int, ...] | None:
        positions = tuple(of.index(c) for c in to)
        return None if positions == tuple(range(len(positions))) else positions

    lead = (prod(batch),) if batch else ()
    produced = batch + free_a + free_b
    plain = len(batch) <= 1 and len(free_a) == len(free_b) == len(contracted) == 1
    return _MatmulPlan(
        swap, total_a, total_b,
        order(sa, batch + free_a + contracted), order(sb, batch + contracted + free_b),
        lead + (prod(free_a), prod(contracted)), lead + (prod(contracted), prod(free_b)),
        tuple(sizes[c] for c in produced), order("".join(produced), list(output)),
        not plain)


def check_precision(backend: Any) -> None:
    """Run a few operations in the backend's precision on its device, so that a
    precision the device cannot compute in is refused when the backend is made,
    with the framework's reason, and not half way through a run."""
    try:
        x = backend.asarray([[0.5, -1.0], [2.0, 0.25]])
        y = backend.einsum("ij,jk->ik", x, x)
        y = backend.softmax(backend.erf(y) + backend.exp(x) + backend.tanh(x), 1)
        backend.to_numpy(backend.reduce("sum", y, (0, 1)))
    except Exception as err:  # noqa: BLE001 - the framework's own words go to the user
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise BackendError(f"{backend.precision} is not supported by the {backend.name} backend "
                           f"on {backend.device}: {reason}") from None


def available_backends() -> list[str]:
    return list(BACKENDS)


# ------------------------------------------------------------ what is here
# Per backend: the devices it can use on this machine.  A probe imports its
# framework, so it runs only when `available_targets()` is first called (never
# at import), and the answer is cached.
def _numpy_devices() -> list[str]:
    return ["cpu"]


def _torch_devices() -> list[str]:
    import torch

    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{k}" for k in range(torch.cuda.device_count())]
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def _jax_devices() -> list[str]:
    import jax

    devices = ["cpu"]
    for platform in ("gpu", "tpu"):
        try:
            found = jax.devices(platform)
        except RuntimeError:  # no such platform here
            continue
        name = "cuda" if platform == "gpu" else platform
        devices += [f"{name}:{d.id}" for d in found]
    return devices


DEVICE_PROBES = {"numpy": _numpy_devices, "torch": _torch_devices, "jax": _jax_devices}


def _importable(module: str) -> bool:
    """Whether a module can be imported, without importing it."""
    import sys
    from importlib.util import find_spec

    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@functools.lru_cache(maxsize=None)
def available_targets() -> tuple[tuple[str, str], ...]:
    """The (backend, device) pairs that can run here: numpy on cpu always; a
    framework backend only when it is registered and its framework imports, with
    an accelerator only when the framework reports one.  Cached: call
    `available_targets.cache_clear()` to probe again."""
    out: list[tuple[str, str]] = []
    for name, where in BACKENDS.items():
        module = where.partition(":")[0]
        probe = DEVICE_PROBES.get(name, _numpy_devices)
        if name != "numpy" and not (_importable(name) and _importable(module)):
            continue
        try:
            devices = probe()
        except Exception:  # noqa: BLE001 - a broken install is simply not available
            continue
        out.extend((name, device) for device in devices)
    return tuple(out)
