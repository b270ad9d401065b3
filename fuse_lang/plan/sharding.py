"""Sharding over a device mesh, planned from names and shapes only (no jax here).

A shard map names indices and the mesh axis each is split over
(`{"p": "data"}`).  Every tensor axis is known by the index name of the
tensor's first definition (`X[p,d]`: p, d); an axis whose name is sharded is
split over that mesh axis, every other axis is replicated.  That is the
tensor's PartitionSpec, which the JAX backend places it by.

Per equation the planner says which collectives the join implies under those
shardings (what XLA's SPMD partitioner has to insert; it may choose an
equivalent one):

- an index kept in the result, split over the same mesh axis in the operands
  and in the result: none (each device computes its own block);
- an index the result keeps unsplit (or splits over another mesh axis) but an
  operand has split: all-gather of that operand;
- an index projected away (summed, max, min) that an operand has split: each
  device holds a partial result, combined by an all-reduce of the result; but
  when the same mesh axis already splits the result along another index, the
  devices cannot each hold a partial over it: the operand is all-gathered.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping

from ..check import Analysis
from ..front import ir

# how a projection's partial results are combined across devices
_REDUCTION = {"sum": "sum", "avg": "sum", "max": "max", "min": "min"}


@dataclass(frozen=True, slots=True)
class TensorSharding:
    tensor: str
    shape: tuple[int | None, ...]
    spec: tuple[str | None, ...]  # per stored axis: its mesh axis, None when replicated
    # the block each device holds (so each process, with one device each): per stored
    # axis its extent over the mesh axis's size; None where either is not known
    per_device: tuple[int | None, ...] = ()

    @property
    def replicated(self) -> bool:
        return all(m is None for m in self.spec)


@dataclass(frozen=True, slots=True)
class Collective:
    kind: str  # "all-gather" | "all-reduce (sum)" | "all-reduce (max)" | ...
    mesh_axis: str
    index: str  # the equation's index that implies it
    tensors: tuple[str, ...]  # the operands gathered, or the result reduced
    why: str


@dataclass(frozen=True, slots=True)
class EquationSharding:
    statement: int
    line: int  # 1-based
    text: str
    tensor: str
    collectives: tuple[Collective, ...]


@dataclass(frozen=True, slots=True)
class ShardingPlan:
    shard: tuple[tuple[str, str], ...]  # (index, mesh axis)
    mesh: tuple[tuple[str, int | None], ...]  # (mesh axis, devices along it; None: not known)
    tensors: tuple[TensorSharding, ...]
    equations: tuple[EquationSharding, ...]
    problems: tuple[str, ...]  # what makes the shard map unusable (unknown names)
    notes: tuple[str, ...]  # extents the mesh axis does not divide (JAX refuses them)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def spec_of(self, tensor: str) -> tuple[str | None, ...]:
        for t in self.tensors:
            if t.tensor == tensor:
                return t.spec
        return ()

    def equation(self, statement: int) -> EquationSharding | None:
        for eq in self.equations:
            if eq.statement == statement:
                return eq
        return None


def axis_names(analysis: Analysis) -> list[str]:
    """The index names that name some tensor's axis, in order of appearance."""
    return list(dict.fromkeys(a.index for t in analysis.tensors.values() for a in t.axes
                              if a.index and not a.virtual))


def axis_specs(analysis: Analysis, shard: Mapping[str, str]) -> dict[str, tuple]:
    """Per tensor, per axis (virtual ones included): its mesh axis or None.  A mesh
    axis splits a tensor once: a second axis sharded over it stays replicated."""
    out = {}
    for name, info in analysis.tensors.items():
        used: set[str] = set()
        spec = []
        for axis in info.axes:
            mesh_axis = None if axis.virtual else shard.get(axis.index)
            if mesh_axis in used:
                mesh_axis = None
            if mesh_axis is not None:
                used.add(mesh_axis)
            spec.append(mesh_axis)
        out[name] = tuple(spec)
    return out


def plan_sharding(analysis: Analysis, shard: Mapping[str, str],
                  mesh: Mapping[str, int | None] | None = None) -> ShardingPlan:
    """The shardings and implied collectives of `shard` over a mesh with the
    axes (and sizes) `mesh`; None: a 1-D mesh named by the shard map's axis."""
    names = axis_names(analysis)
    mesh_axes = dict(mesh) if mesh is not None else \
        {m: None for m in dict.fromkeys(shard.values())}
    problems = [_unknown_index(index, names) for index in shard if index not in names]
    for index, mesh_axis in shard.items():
        if mesh_axis not in mesh_axes:
            problems.append(f"`{mesh_axis}` (for index `{index}`) is not an axis of the mesh "
                            f"(its axes: {', '.join(mesh_axes) or 'none'})")
    specs = axis_specs(analysis, shard)
    tensors = []
    uneven: dict[tuple[str, int, str, int], list[str]] = {}
    for name, info in analysis.tensors.items():
        stored = [(axis, m) for axis, m in zip(info.axes, specs[name]) if not axis.virtual]
        spec = tuple(m for _, m in stored)
        tensors.append(TensorSharding(name, info.shape, spec, _block(info.shape, spec,
                                                                     mesh_axes)))
        for axis, m in stored:
            size = mesh_axes.get(m) if m is not None else None
            if size and axis.extent is not None and axis.extent % size:
                uneven.setdefault((axis.index, axis.extent, m, size), []).append(name)
    notes = [f"`{index}` has extent {extent} (in {', '.join(names)}), which the mesh axis "
             f"`{m}` ({size} devices) does not divide: JAX shards evenly only, so a run "
             f"refuses it" for (index, extent, m, size), names in uneven.items()]
    if mesh is None and len(mesh_axes) > 1:  # as run.backends.jax_sharding.make_mesh refuses
        notes.append(f"the shard map uses the mesh axes {', '.join(mesh_axes)}: a run needs "
                     f"the mesh's shape (--mesh {'=N,'.join(mesh_axes)}=N, or mesh= in the "
                     f"API), and refuses the shard map without it")
    equations = []
    for k, stmt in enumerate(analysis.program.statements):
        if isinstance(stmt, ir.Equation):
            line = analysis.lines.position(stmt.span.start)[0] + 1
            equations.append(EquationSharding(
                k, line, analysis.text[stmt.span.start:stmt.span.end], stmt.lhs.name,
                tuple(_collectives(analysis, k, stmt.lhs.name, specs))))
    return ShardingPlan(tuple(shard.items()), tuple(mesh_axes.items()), tuple(tensors),
                        tuple(equations), tuple(problems), tuple(notes))


def _block(shape: tuple[int | None, ...], spec: tuple[str | None, ...],
           mesh: Mapping[str, int | None]) -> tuple[int | None, ...]:
    """The extents of one device's block of a tensor (ceil where uneven: JAX refuses those)."""
    out = []
    for extent, m in zip(shape, spec):
        size = mesh.get(m) if m is not None else 1
        out.append(None if extent is None or size is None else -(-extent // size))
    return tuple(out)


def _unknown_index(index: str, names: list[str]) -> str:
    return (f"`{index}` names no tensor's axis in this program (sharding follows the index "
            f"names of each tensor's first definition: {', '.join(names) or 'none'})")


def _collectives(analysis: Analysis, k: int, tensor: str,
                 specs: Mapping[str, tuple]) -> list[Collective]:
    """What equation k's join implies under the shardings `specs` (module docstring)."""
    roles = analysis.roles.get(k, ())
    # per index: the result's mesh axis, and per mesh axis the operands that split it
    result_axis: dict[str, str | None] = {}
    operands: dict[str, dict[str, list[str]]] = {}
    for role in roles:
        for occ in role.occurrences:
            spec = specs.get(occ.tensor, ())
            mesh_axis = spec[occ.position] if occ.form == "var" and \
                occ.position is not None and occ.position < len(spec) else None
            if occ.lhs:
                result_axis[role.name] = mesh_axis
            elif mesh_axis is not None:
                found = operands.setdefault(role.name, {}).setdefault(mesh_axis, [])
                if occ.tensor not in found:
                    found.append(occ.tensor)
    splitting_result = {m for m in result_axis.values() if m is not None}
    out = []
    for role in roles:
        for mesh_axis, tensors in operands.get(role.name, {}).items():
            kept = role.name in result_axis
            if kept and result_axis[role.name] == mesh_axis:
                continue  # each device computes its own block
            if kept:
                out.append(Collective("all-gather", mesh_axis, role.name, tuple(tensors),
                                      f"`{role.name}` is split over `{mesh_axis}` in the "
                                      f"operands, not in `{tensor}`"))
            elif role.role != "projected":
                continue  # a query's free index, a constant position: nothing joined
            elif mesh_axis in splitting_result:
                out.append(Collective("all-gather", mesh_axis, role.name, tuple(tensors),
                                      f"`{role.name}` is projected, and `{mesh_axis}` already "
                                      f"splits `{tensor}` along another index"))
            else:
                how = _REDUCTION.get(role.op or "sum", "sum")
                out.append(Collective(f"all-reduce ({how})", mesh_axis, role.name, (tensor,),
                                      f"`{role.name}` is projected ({role.op or 'sum'}) over "
                                      f"`{mesh_axis}`: each device holds a partial result"))
    return out
