"""How each param starts: its role, read from its use, its fans, and the
initialiser that draws it (docs/language.md, "Params and their initialisers").

A param's **use** is where an equation reads it.  There, each of its axes is
either **projected** (its index is not on the left-hand side: summed, or taken
by `max=`...) or **kept**.  PyTorch counts, for a weight [out, in, *kernel],
fan_in = in × receptive field and fan_out = out × receptive field; with named
axes that is:

- fan_in: the product of the extents of the param's projected axes;
- fan_out: the product of its kept axes' extents, times the receptive field:
  its projected axes whose index also steps a window elsewhere in the equation
  (`dx` in `X[n,x+dx,i]`).

`H[b,f] = W1[f,d] X[b,d]`: fan_in d, fan_out f (nn.Linear(d, f));
`H[n,x,o] = K[o,dx,i] X[n,x+dx,i]`: fan_in dx·i, fan_out o·dx (nn.Conv1d(i, o, dx)).

The role of one use: a **weight** is multiplied with something else and has a
projected axis; a **bias** has no projected axis and is added (a term of a sum,
or the whole right-hand side); a **scale** has no projected axis and is
multiplied in, divides, or is a call's argument (a temperature).  A param whose
uses agree (the same role, the same fans) has that role; one whose uses disagree,
or that nothing reads as one of the three, is **positional**: fan_in is its last
axis' extent, fan_out its first's, both times the axes between (the order
`W[out, in]`, `K[out, dx, in]` that Fuse programs write).

The default initialiser follows the role: a weight's (and a positional param's)
is `glorot`, a bias's `zeros`, a scale's `ones`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from ..front import ir
from .analysis import Analysis, TensorKind
from .initialisers import written_initialisers

WEIGHT, BIAS, SCALE, POSITIONAL = "weight", "bias", "scale", "positional"
DEFAULT_INITIALISER = {WEIGHT: "glorot", BIAS: "zeros", SCALE: "ones", POSITIONAL: "glorot"}

# where a reference sits in its expression
_TERM, _FACTOR, _OTHER = "term", "factor", "other"


@dataclass(frozen=True)
class ParamRole:
    """A param's role and which of its axes (positions) make its fans."""
    kind: str  # WEIGHT, BIAS, SCALE or POSITIONAL
    fan_in: tuple[int, ...]
    fan_out: tuple[int, ...]

    def fans(self, shape: Sequence[int]) -> tuple[int, int]:
        """(fan_in, fan_out) for the param's extents (1 for no axis)."""
        return (math.prod(shape[p] for p in self.fan_in),
                math.prod(shape[p] for p in self.fan_out))


@dataclass(frozen=True)
class ParamStart:
    """How a param starts: the initialiser (`name` and numbers) and the role whose
    fans it reads; `written`: the program or the training chose it."""
    init: str
    args: tuple[float, ...]
    role: ParamRole
    written: bool = False

    def text(self, shape: Sequence[int | None] | None = None) -> str:
        """`glorot (the default; a weight param: fan_in 4, fan_out 8)`, for a hover."""
        init = self.init if not self.args else \
            f"{self.init}({', '.join(f'{a:g}' for a in self.args)})"
        how = "written" if self.written else "the default"
        if shape is None or any(e is None for e in shape) or self.role.kind in (BIAS, SCALE):
            return f"{init} ({how}; a {self.role.kind} param)"
        fan_in, fan_out = self.role.fans(shape)  # type: ignore[arg-type]
        return f"{init} ({how}; a {self.role.kind} param: fan_in {fan_in}, fan_out {fan_out})"


def positional_role(rank: int) -> ParamRole:
    """fan_in the last axis, fan_out the first, each times the axes between."""
    if rank == 0:
        return ParamRole(POSITIONAL, (), ())
    if rank == 1:
        return ParamRole(POSITIONAL, (0,), ())
    middle = tuple(range(1, rank - 1))
    return ParamRole(POSITIONAL, (*middle, rank - 1), (0, *middle))


def param_starts(analysis: Analysis, given: Mapping[str, ir.Initialiser] | None = None,
                 default: ir.Initialiser | None = None) -> dict[str, ParamStart]:
    """Each param's start: `given` (training's), else the program's initialiser,
    else `default` for a weight or positional param, else its role's default."""
    roles = param_roles(analysis)
    written = written_initialisers(analysis.program.statements)
    out = {}
    for name, role in roles.items():
        init = (given or {}).get(name) or written.get(name)
        if init is None and default is not None and role.kind in (WEIGHT, POSITIONAL):
            init = default
        if init is None:
            out[name] = ParamStart(DEFAULT_INITIALISER[role.kind], (), role)
        else:
            out[name] = ParamStart(init.name, tuple(a.value for a in init.args), role, True)
    return out


def param_roles(analysis: Analysis) -> dict[str, ParamRole]:
    """Every param's role, from one walk over the equations."""
    tensors = analysis.tensors
    params = {n: len(t.shape) for n, t in tensors.items() if t.kind == TensorKind.PARAM}
    seen: dict[str, set[ParamRole]] = {n: set() for n in params}
    for stmt in analysis.program.statements:
        if type(stmt) is not ir.Equation:
            continue
        for ref, place in _placed_refs(stmt.rhs):
            if ref.name in params and len(ref.indices or ()) == params[ref.name]:
                role = _use_role(stmt, ref, place)
                if role is not None:
                    seen[ref.name].add(role)
    return {n: next(iter(seen[n])) if len(seen[n]) == 1 else positional_role(rank)
            for n, rank in params.items()}


def _use_role(stmt: ir.Equation, ref: ir.Ref, place: str) -> ParamRole | None:
    """The role of one use, or None when it says nothing (a projected axis in a
    sum's term or a call's argument; an index other than a variable)."""
    if not all(type(i) is ir.IndexVar for i in ref.indices or ()):
        return None
    kept_vars = _variables(stmt.lhs.indices or ())
    names = [i.name for i in ref.indices or ()]  # type: ignore[union-attr]
    projected = tuple(p for p, v in enumerate(names) if v not in kept_vars)
    kept = tuple(p for p, v in enumerate(names) if v in kept_vars)
    if not projected:
        return ParamRole(BIAS if place == _TERM else SCALE, (), ())
    if place != _FACTOR:
        return None
    windows = _window_vars(stmt)
    field = tuple(p for p in projected if names[p] in windows)
    return ParamRole(WEIGHT, projected, tuple(sorted(kept + field)))


def _variables(indices: Sequence[ir.Index]) -> set[str]:
    """The index variables among `indices` (in `t+1`, `x/2` too)."""
    out = set()
    for index in indices:
        if type(index) is ir.IndexVar:
            out.add(index.name)
        elif type(index) is ir.IndexShift:
            out.update(t.name for t in index.terms)
        elif type(index) is ir.IndexDiv:
            out.add(index.var.name)
    return out


def _window_vars(stmt: ir.Equation) -> set[str]:
    """The variables that step a window: a term of `x+dx` (two variables or more)."""
    out: set[str] = set()
    refs = [stmt.lhs, *ir.refs(stmt.rhs)]
    for ref in refs:
        for index in ref.indices or ():
            if type(index) is ir.IndexShift and len(index.terms) > 1:
                out.update(t.name for t in index.terms)
    return out


def _placed_refs(rhs: ir.Expr) -> Iterator[tuple[ir.Ref, str]]:
    """Every reference of `rhs` with where it sits: a term of a sum (or the whole
    side), a factor of a product with something else, or anywhere else."""
    stack: list[tuple[ir.Expr, str]] = [(rhs, _TERM)]
    while stack:
        node, place = stack.pop()
        kind = type(node)
        if kind is ir.Ref:
            yield node, place  # type: ignore[misc]
        elif kind is ir.Neg:
            stack.append((node.operand, place))  # type: ignore[union-attr]
        elif kind is ir.Sum:
            stack += [(term, _TERM) for term in node.terms]  # type: ignore[union-attr]
        elif kind is ir.Product:
            stack += _product_places(node, place)  # type: ignore[arg-type]
        else:  # a call's argument, a power, a reduce's body: a reference is `other`;
            # a sum or product there has its own terms and factors
            stack += [(child, _OTHER if type(child) is ir.Ref else _TERM)
                      for child in ir.children(node)]


def _product_places(node: ir.Product, place: str) -> list[tuple[ir.Expr, str]]:
    """A product's factors: a divisor is `other`; with only numbers beside it, a
    factor keeps the product's place (`2 W[i]` is W's place)."""
    others = [f for f in node.factors if type(f) is not ir.Number]
    out = []
    for factor, op in zip(node.factors, node.ops):
        if op == "/":
            out.append((factor, _OTHER))
        elif len(others) <= 1:
            out.append((factor, place))
        else:
            out.append((factor, _FACTOR))
    return out
