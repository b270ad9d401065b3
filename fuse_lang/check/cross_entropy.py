"""What `cross_entropy(z, t, axis=v, smoothing=ε)` requires of its arguments:
`axis=` names the class index of the logits z, which the call consumes (so it
is no index of the left-hand side); the targets t are class ids indexed like z
without v, or a distribution indexed like z; ε is a number from 0 to 1."""
from __future__ import annotations

from ..front import ir
from ..front.diagnostics import Diagnostic, make
from .literals import is_number


def check_cross_entropy(call: ir.Call, lhs_vars: set[str], out: list[Diagnostic]) -> None:
    """What is wrong with a `cross_entropy` call goes to `out`."""
    logits, targets = call.args
    z_vars = _vars(logits)
    axis = next((kw.value for kw in call.kwargs if kw.name == "axis"), None)
    smoothing = next((kw.value for kw in call.kwargs if kw.name == "smoothing"), None)
    if smoothing is not None and not (is_number(smoothing) and isinstance(smoothing, ir.Number)
                                      and 0 <= smoothing.value <= 1):
        out.append(make("bad-argument", "`smoothing=` takes a number from 0 to 1 (the share "
                        "of the uniform distribution in the targets)", smoothing.span))
    if axis is None:
        return  # (argument-count says `axis=` is needed)
    if not (isinstance(axis, ir.Ref) and axis.indices is None and axis.name in z_vars):
        listed = ", ".join(z_vars) or "it has none"
        out.append(make("bad-argument", f"`axis=` names the class index of the logits, the "
                        f"first argument ({listed})", axis.span))
        return
    if axis.name in lhs_vars:
        out.append(make("bad-argument", f"cross_entropy sums its class axis `{axis.name}` "
                        f"away, so the left-hand side cannot keep it: drop `{axis.name}` there "
                        f"(`CE[...] = cross_entropy(...)` has the logits' other indices)",
                        axis.span))
        return
    _check_targets(targets, z_vars, axis.name, out)


def _check_targets(targets: ir.Expr, z_vars: list[str], axis: str,
                   out: list[Diagnostic]) -> None:
    if isinstance(targets, ir.Number) and targets.value != round(targets.value):
        out.append(make("cross-entropy-targets", f"the target `{targets.text}` is no class id: "
                        f"class ids are whole numbers from 0", targets.span))
        return
    extra = [v for v in _vars(targets) if v not in z_vars]
    if extra:
        ids = ", ".join(v for v in z_vars if v != axis)
        out.append(make("cross-entropy-targets", f"the targets have the index `{extra[0]}` "
                        f"that the logits lack: give class ids indexed like the logits without "
                        f"`{axis}` ([{ids}]) or a distribution indexed like the logits "
                        f"([{', '.join(z_vars)}])", targets.span))


def _vars(expr: ir.Expr) -> list[str]:
    """The index variables of the references in `expr`, in order of first use."""
    seen: dict[str, None] = {}
    for ref in ir.refs(expr):
        for index in ref.indices or ():
            for var in ir.index_vars(index):
                seen.setdefault(var.name)
    return list(seen)
