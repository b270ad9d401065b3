"""A program's loss: the scalar tensor named by `train L` (docs/training.md).

`check_losses` reports what keeps a loss from being trained (not a scalar, no
param reaches it, a param it reaches only through constructs without a
gradient, named twice); `loss_of` says, as plain data, which params
and which data (sources) a loss reaches: hover, `fuse explain` and training
read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, Related, make
from ..front.span import Span
from .analysis import SOURCE_KINDS, Analysis, TensorKind
from .cone import tensor_cone
from .symbols import TensorSymbol


@dataclass(frozen=True)
class LossInfo:
    """The loss `name` (declared at `span`), the params it reaches and the
    sources (its data) it is computed over, each sorted by name."""
    name: str
    span: Span
    params: tuple[str, ...]
    data: tuple[str, ...]

    def text(self) -> str:
        """One line for a hover and `fuse explain`."""
        params = ", ".join(f"`{p}`" for p in self.params) or "none"
        data = ", ".join(f"`{d}`" for d in self.data) or "none (constants and params only)"
        return f"**Loss** (`train {self.name}`): reaches the params {params}; data: {data}."

    def to_json(self) -> dict:
        return {"name": self.name, "params": list(self.params), "data": list(self.data)}


def train_declarations(statements: Sequence[ir.Statement]) -> list[ir.TrainDecl]:
    return [s for s in statements if isinstance(s, ir.TrainDecl)]


def check_losses(statements: Sequence[ir.Statement], tensors: Mapping[str, TensorSymbol],
                 deps: Mapping[str, list[str]], diags: list[Diagnostic]) -> None:
    """The diagnostics of `train` declarations: one loss per program, a scalar,
    reached by at least one param (deps: tensor -> the tensors it reads)."""
    declared = train_declarations(statements)
    if not declared:
        return
    first = declared[0]
    for extra in declared[1:]:
        diags.append(make("loss-twice", f"the program already trains `{first.loss.name}`; "
                          f"a program has one loss (add the terms: `L = A + B`)",
                          extra.span, related=(Related(first.span, "the first loss"),)))
    sym = tensors.get(first.loss.name)
    if sym is None:
        return  # undefined-tensor says so
    if sym.arity:
        diags.append(make("loss-not-scalar", f"the loss `{sym.name}` has {sym.arity} "
                          f"ax{'is' if sym.arity == 1 else 'es'}; a loss is a scalar (sum it: "
                          f"`L = {sym.name}[...]` with no index on the left)",
                          first.loss.name_span,
                          related=(Related(sym.first_name_span, f"`{sym.name}` is defined "
                                           f"here"),)))
    reached = _reached(sym.name, tensors, deps)
    if not reached:
        diags.append(make("loss-without-params", f"no param influences the loss `{sym.name}`: "
                          f"training would change nothing (declare the learned tensors with "
                          f"`param`)", first.loss.name_span))
        return
    smooth = _reached(sym.name, tensors, _smooth_deps(statements, tensors))
    for name in reached:
        if name not in smooth:
            diags.append(make(
                "gradient-blocked", f"the param `{name}` reaches the loss `{sym.name}` only "
                f"through constructs without a gradient (`step`, `not`, a comparison, a "
                f"Boolean tensor, `sig(x, 0)`): training leaves it as it starts; relax them with "
                f"`sig(x, T)`", tensors[name].first_name_span,
                related=(Related(first.loss.name_span, "the loss"),)))


# builtins whose value does not change with their arguments' (almost everywhere):
# thresholds, masks and the comparisons (`W[i] X[i] > 0` is 0 or 1)
_FLAT_CALLS = frozenset({"step", "not", "even", "odd", "causal_mask"}) | COMPARISONS


def _smooth_deps(statements: Sequence[ir.Statement],
                 tensors: Mapping[str, TensorSymbol]) -> dict[str, list[str]]:
    """Tensor -> the tensors it reads through which a gradient flows: not inside a
    flat builtin or `sig(x, 0)`, and not into a Boolean tensor (a step of its sum)."""
    out: dict[str, list[str]] = {}
    for name, sym in tensors.items():
        if sym.boolean:
            continue
        reads = out[name] = []
        for k in sym.statements:
            for expr in ir.used_exprs(statements[k]):
                stack = [expr]
                while stack:
                    node = stack.pop()
                    if isinstance(node, ir.Ref):
                        reads.append(node.name)
                    elif isinstance(node, ir.Call) and (
                            node.name in _FLAT_CALLS
                            or _cold_sig(node, statements, tensors)):
                        continue
                    stack.extend(ir.children(node))
    return out


def _cold_sig(call: ir.Call, statements: Sequence[ir.Statement],
              tensors: Mapping[str, TensorSymbol]) -> bool:
    """`sig(x, 0)`, `sig(x, T=0)` or `sig(x, Z)` with `Z = const(0)` (or `Z = 0`):
    a step, whose gradient is zero.  A temperature above 0 lets it flow."""
    if call.name != "sig":
        return False
    given = [kw.value for kw in call.kwargs if kw.name == "T"]
    temperature = call.args[1] if len(call.args) > 1 else (given[0] if given else None)
    if isinstance(temperature, ir.Ref) and not temperature.indices:
        sym = tensors.get(temperature.name)
        if sym is None or sym.is_param or len(sym.statements) != 1:
            return False
        stmt = statements[sym.statements[0]]
        temperature = stmt.rhs if isinstance(stmt, ir.Equation) and stmt.op == "=" else None
        if isinstance(temperature, ir.Call) and temperature.name == "const" \
                and len(temperature.args) == 1:
            temperature = temperature.args[0]
    return isinstance(temperature, ir.Number) and temperature.value == 0


def _reached(root: str, tensors: Mapping[str, TensorSymbol],
             deps: Mapping[str, list[str]]) -> list[str]:
    """The params among the tensors `root` reads, transitively."""
    seen: set[str] = set()
    stack = [root]
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(deps.get(name, ()))
    return sorted(n for n in seen if n in tensors and tensors[n].is_param)


def loss_of(analysis: Analysis) -> LossInfo | None:
    """The program's loss (its first `train` declaration) with the params and the
    data it reaches; None when the program names no loss or it is undefined."""
    declared = train_declarations(analysis.program.statements)
    if not declared or declared[0].loss.name not in analysis.tensors:
        return None
    name = declared[0].loss.name
    reached, _ = tensor_cone(analysis, [name])
    params = sorted(n for n in reached if analysis.tensors[n].kind == TensorKind.PARAM)
    data = sorted(n for n in reached if analysis.tensors[n].kind in SOURCE_KINDS)
    return LossInfo(name, declared[0].span, tuple(params), tuple(data))
