"""Backends: one small class per framework, imported only when asked for.

Importing fuse_lang never imports torch or jax; `get_backend("torch")`
does, once, and caches the instance (the einops `_backends.py` pattern).
"""
from __future__ import annotations

import functools
import importlib
from typing import Any

BACKENDS = {"numpy": "fuse_lang.backends.numpy_backend:NumpyBackend"}


class BackendError(Exception):
    """A backend that is unknown, not installed, or cannot use the device or precision."""


@functools.lru_cache(maxsize=None)
def get_backend(name: str, device: str = "cpu", precision: str = "fp32") -> Any:
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    module_name, _, class_name = BACKENDS[name].partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name)(device=device, precision=precision)


def available_backends() -> list[str]:
    return list(BACKENDS)
