"""Several processes, one program: joining a JAX process group (docs/scale.md).

`initialize()` (also `fuse_lang.distributed.initialize()`, `compile(...,
distributed=True)`, `fuse run --distributed`) joins the group that every
process of a run joins alike, through JAX's own distributed runtime
(`jax.distributed.initialize`); Fuse adds no transport of its own.  After it,
`jax.devices()` lists every process's devices, so the mesh a sharded program
runs over spans them all, and XLA's SPMD partitioner inserts the
cross-process collectives (gloo on CPU, NCCL on GPU).

Where the group comes from, in order:

1. the arguments given;
2. the variables `JAX_COORDINATOR_ADDRESS` (host:port of process 0),
   `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID` (the first is JAX's own; JAX reads
   no variable for the other two, Fuse does);
3. what JAX's cluster detection finds (SLURM, Open MPI's mpirun, mpi4py,
   Kubernetes indexed jobs, Cloud TPU): the launcher's own variables.

A process that dies makes the others stop: each sends heartbeats to the
coordination service, which after `heartbeat_timeout` seconds without one
(`FUSE_HEARTBEAT_TIMEOUT`, default 100 as JAX's) stops every other process
(JAX aborts it, "another task died").  Nothing here imports jax at import time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from .results import FuseError

# the variables read (JAX_COORDINATOR_ADDRESS is JAX's; the two others Fuse's)
COORDINATOR = "JAX_COORDINATOR_ADDRESS"
NUM_PROCESSES = "JAX_NUM_PROCESSES"
PROCESS_ID = "JAX_PROCESS_ID"
HEARTBEAT = "FUSE_HEARTBEAT_TIMEOUT"
DEFAULT_HEARTBEAT = 100  # seconds, as jax.distributed.initialize's default


@dataclass(frozen=True, slots=True)
class ProcessGroup:
    """The group this process is part of (after `initialize`)."""
    process_id: int
    num_processes: int
    local_devices: int
    global_devices: int

    @property
    def lead(self) -> bool:
        """Process 0: the one that writes sinks and prints answers."""
        return self.process_id == 0


_joined: ProcessGroup | None = None


def settings_from(environ: Mapping[str, str]) -> dict:
    """`jax.distributed.initialize`'s arguments from the variables (module
    docstring); a variable not set is left to JAX's cluster detection.  FuseError
    for a malformed one."""
    out: dict = {}
    if environ.get(COORDINATOR):
        out["coordinator_address"] = environ[COORDINATOR]
    for variable, key in ((NUM_PROCESSES, "num_processes"), (PROCESS_ID, "process_id"),
                          (HEARTBEAT, "heartbeat_timeout_seconds")):
        raw = environ.get(variable)
        if raw is None or raw == "":
            continue
        try:
            value = int(raw)
        except ValueError:
            raise FuseError(f"{variable}={raw!r}: a whole number is needed") from None
        if value < 0 or (value == 0 and key != "process_id"):
            raise FuseError(f"{variable}={raw!r}: out of range")
        out[key] = value
    return out


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, heartbeat_timeout: int | None = None,
               initialization_timeout: int = 300) -> ProcessGroup:
    """Join the process group (once; a second call returns the same group).  Must
    come before this process runs anything on jax.  FuseError when the group
    cannot be joined (no coordinator known, a coordinator that never answers
    within `initialization_timeout` seconds, jax already in use)."""
    global _joined
    if _joined is not None:
        return _joined
    import jax

    settings = settings_from(os.environ)
    given = {"coordinator_address": coordinator_address, "num_processes": num_processes,
             "process_id": process_id, "heartbeat_timeout_seconds": heartbeat_timeout}
    settings.update({k: v for k, v in given.items() if v is not None})
    settings.setdefault("heartbeat_timeout_seconds", DEFAULT_HEARTBEAT)
    # processes on CPU exchange their shards through gloo (JAX's CPU collectives);
    # without it a computation over several processes' CPU devices fails
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(initialization_timeout=initialization_timeout, **settings)
    except (RuntimeError, ValueError, TypeError) as err:
        raise FuseError(f"cannot join the process group ({_described(settings)}): {err} "
                        f"(set {COORDINATOR}=host:port of process 0, {NUM_PROCESSES} and "
                        f"{PROCESS_ID} in every process, or start under a launcher JAX "
                        f"knows: SLURM, mpirun, Kubernetes, Cloud TPU)") from None
    _joined = ProcessGroup(jax.process_index(), jax.process_count(),
                           jax.local_device_count(), jax.device_count())
    return _joined


def group() -> ProcessGroup | None:
    """The group joined by `initialize`; None in a process that runs alone."""
    return _joined


def is_lead() -> bool:
    """True for process 0 of a group, and for a process that runs alone."""
    return _joined is None or _joined.lead


def _described(settings: Mapping) -> str:
    shown = [f"{k}={v}" for k, v in settings.items() if k != "heartbeat_timeout_seconds"]
    return ", ".join(shown) or "nothing set: the launcher's environment"
