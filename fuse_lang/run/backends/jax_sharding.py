"""The JAX backend over a device mesh: each tensor placed by its PartitionSpec.

Nothing here partitions a computation by hand.  A tensor's value is placed
with `jax.device_put` (`jax.lax.with_sharding_constraint` inside a traced
graph) on a `NamedSharding(mesh, PartitionSpec(...))`; inside `jax.jit` XLA's
SPMD partitioner (GSPMD) splits each operation and inserts the collectives.
Which axis is split over which mesh axis comes from the plan
(`plan.sharding.axis_specs`): the same data `fuse explain --shard` prints.

Over several processes (run.distributed) the mesh spans every process's
devices: a host value is placed by `jax.make_array_from_callback`, which asks
for this process's slices only (a memory-mapped file is read there only); a
result is brought to NumPy by gathering its shards from every process (every
process asks, in the same order: a collective); only process 0 writes files.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from . import BackendError
from .jax_backend import JaxBackend


class ShardedJaxBackend(JaxBackend):
    """JaxBackend whose tensors live on `mesh`, split as `specs` says (per tensor,
    per stored axis: a mesh axis or None); a tensor not named there is replicated."""

    sharded = True

    def __init__(self, mesh: Mesh, specs: Mapping[str, tuple[str | None, ...]],
                 device: str = "cpu", precision: str = "fp32") -> None:
        super().__init__(device=device, precision=precision)
        self.mesh = mesh
        # new arrays start on the mesh's first device of this process
        here = jax.process_index()
        self.jax_device = next(d for d in mesh.devices.flat if d.process_index == here)
        # the mesh spans other processes' devices (run.distributed)
        self.multiprocess = any(d.process_index != here for d in mesh.devices.flat)
        self.writes_files = here == 0  # sinks and --out: process 0 only
        self.specs = dict(specs)
        self._shardings = {name: NamedSharding(mesh, PartitionSpec(*spec))
                           for name, spec in self.specs.items()}
        self._replicated = NamedSharding(mesh, PartitionSpec())

    def place(self, name: str, value: Any) -> Any:
        """`value` (tensor `name`) split over the mesh by its PartitionSpec."""
        sharding = self._shardings.get(name, self._replicated)
        shape = tuple(np.shape(value))
        spec = self.specs.get(name, ())
        if len(spec) != len(shape):
            sharding = self._replicated  # a row of a recurrence, a scalar: not split
        else:
            for extent, mesh_axis in zip(shape, spec):
                if mesh_axis is not None and extent % self.mesh.shape[mesh_axis]:
                    raise ValueError(
                        f"`{name}` has extent {extent} along the axis sharded over "
                        f"`{mesh_axis}`, which that mesh axis ({self.mesh.shape[mesh_axis]} "
                        f"devices) does not divide: JAX shards evenly only (pad the data, or "
                        f"use a mesh axis whose size divides {extent})")
        if self.multiprocess and (isinstance(value, np.ndarray)
                                  or getattr(value, "host_slices", False)):
            # each process reads only the slices its devices hold (a memmap: only those
            # pages; a manifest's shards: only those files, run/weight_shards.py)
            return jax.make_array_from_callback(
                shape, sharding, lambda index: np.asarray(value[index], dtype=self.dtype))
        value = self.asarray(value)
        if isinstance(value, jax.core.Tracer):  # inside a jax.jit graph
            return jax.lax.with_sharding_constraint(value, sharding)
        # outside: device_put, which also makes a global array on several hosts when
        # every process gives the same value
        return jax.device_put(value, sharding)


    def to_numpy(self, x: Any) -> np.ndarray:
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            if x.sharding.is_fully_replicated:  # this process's copy is the whole value
                x = x.addressable_shards[0].data
            else:  # every process asks (the same results, in the same order): a collective
                from jax.experimental import multihost_utils

                x = multihost_utils.process_allgather(x, tiled=True)
        return super().to_numpy(x)


def make_mesh(mesh: Any, shard: Mapping[str, str], device: str) -> Mesh:
    """The mesh a run uses: a `jax.sharding.Mesh` as given (its axes made Auto, so
    that XLA chooses the collectives); a mapping {axis name: size} over the first
    devices of the backend's platform; None: one axis over all of them, named by
    the shard map's one mesh axis."""
    if isinstance(mesh, Mesh):
        if any(t != AxisType.Auto for t in mesh.axis_types):
            mesh = Mesh(mesh.devices, mesh.axis_names,
                        axis_types=(AxisType.Auto,) * len(mesh.axis_names))
        return mesh
    devices = _platform_devices(device)
    if mesh is None:
        names = list(dict.fromkeys(shard.values()))
        if len(names) > 1:
            raise BackendError(f"the shard map uses the mesh axes {', '.join(names)}: give "
                               f"the mesh's shape (mesh={{'{names[0]}': 4, ...}}, or "
                               f"--mesh {names[0]}=4,...)")
        sizes = {names[0] if names else "data": len(devices)}
    elif isinstance(mesh, Mapping):
        sizes = dict(mesh)
    else:
        raise BackendError(f"mesh= takes a jax.sharding.Mesh or a mapping of axis names to "
                           f"sizes, not {type(mesh).__name__}")
    bad = [f"{n}={s!r}" for n, s in sizes.items()
           if not isinstance(s, int) or isinstance(s, bool) or s < 1]
    if bad or not sizes:
        raise BackendError(f"a mesh axis needs a positive number of devices, not "
                           f"{', '.join(bad) or 'no axis'}")
    needed = math.prod(sizes.values())
    if needed > len(devices):
        platform = devices[0].platform if devices else "cpu"
        raise BackendError(
            f"the mesh {', '.join(f'{n}={s}' for n, s in sizes.items())} needs {needed} "
            f"devices; jax sees {len(devices)} {platform} device(s) here (host devices: set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count=N before jax is imported)")
    return jax.make_mesh(tuple(sizes.values()), tuple(sizes), devices=devices[:needed],
                         axis_types=(AxisType.Auto,) * len(sizes))


def _platform_devices(device: str) -> list:
    """All devices of the platform `device` names (cpu, cuda, tpu; auto: a GPU's if any)."""
    kind = device.partition(":")[0]
    platforms = ("gpu", "cpu") if kind == "auto" else \
        ("gpu",) if kind in ("cuda", "gpu") else (kind,)
    for platform in platforms:
        try:
            found = jax.devices(platform)
        except RuntimeError:  # no such platform here
            continue
        if found:
            return list(found)
    return []
