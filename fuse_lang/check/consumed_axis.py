"""What the builtins that consume an axis of their first argument require:
`cross_entropy(z, t, axis=v, smoothing=ε)` and `gather(x, ids, axis=v)`.
`axis=` names an index of the first argument, which the call consumes (so it is
no index of the left-hand side).  cross_entropy's targets t are class ids
indexed like z without v, or a distribution indexed like z; ε is a number from
0 to 1.  gather's positions are not indexed by v."""
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
    if _consumed_axis(call, axis, z_vars, lhs_vars, "the class index of the logits", out):
        _check_targets(targets, z_vars, axis.name, out)  # type: ignore[union-attr]


def check_gather(call: ir.Call, stmt: ir.Statement, lhs_vars: set[str],
                 out: list[Diagnostic]) -> None:
    """What is wrong with a `gather` call goes to `out`."""
    x, ids = call.args
    axis = next((kw.value for kw in call.kwargs if kw.name == "axis"), None)
    if not _consumed_axis(call, axis, _vars(x), lhs_vars, "the index of the first argument "
                          "that the positions pick along", out):
        return
    assert isinstance(axis, ir.Ref)
    if axis.name in _vars(ids):
        out.append(make("bad-argument", f"the positions pick along `{axis.name}`, so they are "
                        f"not indexed by it: index them like the result (`E[t,d] = "
                        f"gather(Emb[{axis.name},d], Tok[t], axis={axis.name})`)", ids.span))
        return
    everywhere = index_var_counts([*ir.defined_refs(stmt), *ir.used_exprs(stmt)])
    inside = index_var_counts([ids])
    summed = [v for v in inside if v not in lhs_vars and everywhere[v] == inside[v]]
    if summed:  # projected inside the argument (LANGUAGE.md §5): a sum of positions
        out.append(make("bad-argument", f"the positions' index `{summed[0]}` is on no other "
                        f"side, so the positions would be summed over it before the lookup: "
                        f"keep `{summed[0]}` on the left-hand side, then project the result "
                        f"(`E[{summed[0]},...] = gather(...)`, `S = E[{summed[0]},...]`)",
                        ids.span))


def _consumed_axis(call: ir.Call, axis: ir.Expr | None, x_vars: list[str], lhs_vars: set[str],
                   what: str, out: list[Diagnostic]) -> bool:
    """Whether `axis=` names an index of the first argument that the left-hand side
    does not keep; what is wrong goes to `out`."""
    if axis is None:
        return False  # (argument-count says `axis=` is needed)
    if not (isinstance(axis, ir.Ref) and axis.indices is None and axis.name in x_vars):
        listed = ", ".join(x_vars) or "it has none"
        out.append(make("bad-argument", f"`axis=` names {what}, the first argument "
                        f"({listed})", axis.span))
        return False
    if axis.name in lhs_vars:
        out.append(make("bad-argument", f"{call.name} takes its axis `{axis.name}` away, so "
                        f"the left-hand side cannot keep it: drop `{axis.name}` there (the "
                        f"result has the other indices)", axis.span))
        return False
    return True


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


def index_var_counts(exprs: list) -> dict[str, int]:
    """How many times each index variable occurs in `exprs`, in order of first use."""
    counts: dict[str, int] = {}
    for expr in exprs:
        for ref in ir.refs(expr):
            for index in ref.indices or ():
                for var in ir.index_vars(index):
                    counts[var.name] = counts.get(var.name, 0) + 1
    return counts
