"""Text rendering of a ProgramPlan: the `fuse explain` tables."""
from __future__ import annotations

from .plan import EquationPlan, ProgramPlan


def _num(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def _shape(shape) -> str:
    return "(" + ", ".join("?" if e is None else str(e) for e in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()]
    out += [fmt.format(*row).rstrip() for row in rows]
    return out


def render_equation(eq: EquationPlan) -> list[str]:
    out = [f"line {eq.line}: {eq.text}"]
    rows = []
    for ix in eq.indices:
        if ix.role == "projected":
            role = f"projected ({ix.op}) in {ix.scope}"
        else:
            role = ix.role
        if ix.joined:
            role += f"; joins {', '.join(ix.factors)}"
        rows.append([ix.name, "?" if ix.extent is None else str(ix.extent), f"D{ix.domain}", role])
    if rows:
        out += ["  " + line for line in _table(["index", "extent", "domain", "role"], rows)]
    for c in eq.contractions:
        out.append(f"  einsum {c.letters}   ({c.einsum})")
        for name, op in c.then_project:
            out.append(f"    then {op} over {name}")
        if c.steps:
            out.append(f"    order: {' ; '.join(c.steps)}")
        out.append(f"    flops: {_num(c.flops)} (naive {_num(c.naive_flops)}), "
                   f"largest intermediate: {_num(c.largest_intermediate)} elements")
        if c.note:
            out.append(f"    note: {c.note}")
    if eq.recursive:
        out.append("  part of a recursive group")
    return out


def render_plan_text(plan: ProgramPlan) -> str:
    out = ["Tensors"]
    out += ["  " + line for line in _table(
        ["tensor", "shape"], [[name, _shape(shape)] for name, shape in plan.shapes])]
    out.append("")
    out.append("Evaluation order")
    recursive = {n for g in plan.recursive_groups for n in g}
    for step, group in enumerate(plan.order, 1):
        mark = "  (recursive: evaluated to a fixpoint)" if set(group) & recursive else ""
        out.append(f"  {step}. {', '.join(group)}{mark}")
    out.append("")
    out.append("Equations")
    for eq in plan.equations:
        out += ["  " + line for line in render_equation(eq)]
    out.append("")
    out.append(f"Total: {_num(plan.total_flops)} flops")
    return "\n".join(out)
