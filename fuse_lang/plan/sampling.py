"""Which equations Monte Carlo projection estimates, and over which index.

An equation is estimated when its right-hand side is one product of tensor
references with plain index variables (an einsum), it sums an index over the
whole right-hand side, it is not recursive, its tensor is numeric and has no
other equation, and the index has more values than the samples drawn.  Of its
summed indices the one with the most values is drawn from: the work of the
contraction shrinks by samples/extent (docs/execution.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ..check import Analysis
from ..front import ir


class SampleSite(NamedTuple):
    statement: int
    tensor: str
    index: str
    extent: int
    weights: str | None  # importance tensor (1-D over `index`), or None: uniform


def _plain(ref: ir.Ref) -> bool:
    """Distinct index variables only (no constants, offsets, slices or repeats)."""
    return ref.indices is not None and all(isinstance(i, ir.IndexVar) for i in ref.indices) \
        and len({i.name for i in ref.indices}) == len(ref.indices)  # type: ignore[union-attr]


def sample_sites(analysis: Analysis, config: Any) -> list[SampleSite]:
    """The equations `config` (projection='monte_carlo') estimates: those that can
    be, of the tensors `config.estimate` names (None: of every tensor)."""
    out = []
    statements = analysis.program.statements
    for k, stmt in enumerate(statements):
        if not isinstance(stmt, ir.Equation) or stmt.op not in ("=", "+="):
            continue
        name = stmt.lhs.name
        if config.estimate is not None and name not in config.estimate:
            continue
        info = analysis.tensors.get(name)
        if info is None or info.boolean or name in analysis.recursive \
                or len(info.statements) != 1 or not (stmt.lhs.indices is None or _plain(stmt.lhs)):
            continue
        rhs = stmt.rhs
        factors = rhs.factors if isinstance(rhs, ir.Product) else (rhs,)
        if isinstance(rhs, ir.Product) and any(op not in ("", " ", "*") for op in rhs.ops):
            continue
        if not all(isinstance(f, ir.Ref) and _plain(f) for f in factors):
            continue
        read = {i.name for f in factors for i in f.indices}  # type: ignore[union-attr]
        if not {i.name for i in stmt.lhs.indices or ()} <= read:  # type: ignore[union-attr]
            continue  # an output index the right-hand side does not read (broadcast)
        summed = [r for r in analysis.roles.get(k, ()) if r.role == "projected"
                  and (r.op or "sum") == "sum" and (r.scope is None or r.scope.kind == "rhs")]
        extents = [(analysis.var_extents.get((k, r.name), (None, 0))[0], r.name) for r in summed]
        extents = [(e, n) for e, n in extents if e is not None]
        if not extents or len(summed) != len([r for r in analysis.roles.get(k, ())
                                              if r.role == "projected"]):
            continue
        extent, index = max(extents)
        if extent <= config.samples:
            continue
        out.append(SampleSite(k, name, index, int(extent), config.importance.get(name)))
    return out


@dataclass(frozen=True, slots=True)
class SampledEquation:
    """An equation whose summed index Monte Carlo projection estimates."""
    line: int
    tensor: str
    index: str  # the summed index drawn from
    extent: int
    samples: int
    weights: str | None  # the importance tensor, or None: uniform
    work_saved: float  # the share of the exact contraction's multiply-adds not done


def sampled_equations(analysis: Analysis, plans: list, config: Any) -> list[SampledEquation]:
    by_statement = {p.statement: p for p in plans}
    out = []
    for site in sample_sites(analysis, config):
        plan = by_statement[site.statement]
        out.append(SampledEquation(plan.line, site.tensor, site.index, site.extent,
                                   config.samples, site.weights,
                                   1 - config.samples / site.extent))
    return out
