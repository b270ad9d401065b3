"""Backends: one small class per framework, imported only when asked for.

Importing fuse_lang never imports torch or jax; `get_backend("torch")`
does, once, and caches the instance (the einops `_backends.py` pattern).
What a backend offers is named in `base.Backend`; how a product of two
operands runs as one matmul is `pairwise.pair_as_matmul`.
"""
from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .base import Backend

BACKENDS = {"numpy": "fuse_lang.run.backends.numpy_backend:NumpyBackend",
            "torch": "fuse_lang.run.backends.torch_backend:TorchBackend",
            "jax": "fuse_lang.run.backends.jax_backend:JaxBackend"}
PRECISIONS = ("fp32", "fp64", "bf16", "fp16")


class BackendError(Exception):
    """A backend that is unknown, not installed, or cannot use the device or precision."""


@functools.lru_cache(maxsize=None)
def get_backend(name: str, device: str = "cpu", precision: str = "fp32") -> Backend:
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


def check_precision(backend: Backend,
                    compile: Callable[[Callable], Callable] | None = None) -> None:
    """Run a few operations in the backend's precision on its device, so that a
    precision the device cannot compute in is refused when the backend is made,
    with the framework's reason, and not half way through a run.  compile: runs
    them as one graph (jax: one compilation, not one per operation; a process
    with a warm cache reads one entry)."""
    def probe(x: Any) -> Any:
        y = backend.einsum("ij,jk->ik", x, x)
        y = backend.softmax(backend.erf(y) + backend.exp(x) + backend.tanh(x), 1)
        return backend.reduce("sum", y, (0, 1))

    try:
        x = backend.asarray([[0.5, -1.0], [2.0, 0.25]])
        backend.to_numpy((compile or (lambda f: f))(probe)(x))
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
