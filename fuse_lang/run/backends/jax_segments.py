"""Compiled segments kept as `jax.export` artifacts (the compiled-artifact cache,
run.cache; docs/execution.md).

With `cache_dir`, a jax run keeps each compiled graph serialized
(`jax.export.Exported.serialize`) in `DIR/jax-export`, named by the program's
cache key, the graph's place in the run and its arguments' signature (tree,
shapes, dtypes).  A later process finds the file, deserializes it and calls it:
neither Fuse's evaluator is traced nor its graph lowered again, and XLA's
compiled code comes from jax's persistent cache.  A file that cannot be read
back is made again (written whole, renamed over the old one); what jax.export
cannot take runs as the plain `jax.jit` graph, and so does a segment called
inside another trace (training's step: its gradient is taken through it).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np

from ...io.sinks import atomic_write


@functools.cache
def serializable() -> bool:
    """jax serializes an export with the flatbuffers package, an optional one."""
    return importlib.util.find_spec("flatbuffers") is not None


def exported_segment(jitted: Callable, platform: str, artifact: Path) -> Callable:
    """`jitted`, with each argument signature's graph read from (or written to)
    `artifact` + the signature's digest + `.bin`."""
    by_signature: dict[str, Callable] = {}

    def call(*args: Any) -> Any:
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args)):
            # inside another trace (training's jitted step, its gradient): the
            # segment is part of that graph, which jax's persistent cache keeps; a
            # stored export has no gradient to give (jax: "No VJP is available")
            return jitted(*args)
        signature = _signature(args)
        runner = by_signature.get(signature)
        if runner is None:
            path = artifact.with_name(f"{artifact.name}-{signature[:16]}.bin")
            runner = by_signature[signature] = _runner(jitted, args, platform, path)
        return runner(*args)

    return call


def _signature(args: tuple) -> str:
    """The digest of the arguments' tree and each leaf's shape and dtype: what
    decides the graph jax traces."""
    leaves, tree = jax.tree.flatten(args)
    parts = [str(tree)] + [f"{np.shape(x)}:{getattr(x, 'dtype', type(x).__name__)}:"
                           f"{getattr(x, 'weak_type', False)}" for x in leaves]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _runner(jitted: Callable, args: tuple, platform: str, path: Path) -> Callable:
    """The stored graph, deserialized; else the graph exported now and stored;
    else (jax.export refuses it) the plain jitted graph."""
    exported = _load(path)
    if exported is None:
        try:
            exported = jax.export.export(jitted, platforms=[platform])(*args)
            data = exported.serialize()
        except Exception:  # noqa: BLE001 - what export cannot take (and a program's own
            return jitted  # error, which the jitted graph raises again, located)
        _store(path, data)
    # the same call cold and warm: XLA's compiled code is the same persistent-cache entry
    return jax.jit(exported.call)


def _load(path: Path) -> Any:
    """The stored export, or None: absent, unreadable or not an export."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return jax.export.deserialize(bytearray(data))
    except Exception:  # noqa: BLE001 - a corrupt file is made again, never trusted
        return None


def _store(path: Path, data: bytes | bytearray) -> None:
    """Written whole (io.sinks.atomic_write).  A folder that cannot be written
    costs the next process its reuse, never this run."""
    try:
        atomic_write(path, bytes(data))
    except OSError:
        pass
