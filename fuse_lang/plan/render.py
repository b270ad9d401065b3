"""Text rendering of a ProgramPlan: the `fuse explain` tables."""
from __future__ import annotations

from .planner import EquationPlan, ProgramPlan


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
    how = dict(plan.recursion)
    for step, group in enumerate(plan.order, 1):
        mark = f"  (recursive: {how[group[0]]})" if group[0] in how else ""
        out.append(f"  {step}. {', '.join(group)}{mark}")
    out.append("")
    out.append("Equations")
    for eq in plan.equations:
        out += ["  " + line for line in render_equation(eq)]
    out.append("")
    out.append(f"Total: {_num(plan.total_flops)} flops")
    return "\n".join(out)


# ------------------------------------------------------------- markdown
def _code(text: str) -> str:
    """Inline code, safe in a table cell."""
    text = " ".join(text.split()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def render_equation_markdown(eq: EquationPlan) -> list[str]:
    out = [f"**line {eq.line}** {_code(eq.text)}"]
    rows = []
    for ix in eq.indices:
        role = f"projected ({ix.op}) in {ix.scope}" if ix.role == "projected" else ix.role
        if ix.joined:
            role += f"; joins {', '.join(_code(f) for f in ix.factors)}"
        rows.append([_code(ix.name), "?" if ix.extent is None else str(ix.extent),
                     f"D{ix.domain}", role])
    if rows:
        out += [""] + _md_table(["index", "extent", "domain", "role"], rows)
    if eq.contractions or eq.recursive:
        out.append("")
    for c in eq.contractions:
        out.append(f"- einsum {_code(c.letters)} ({_code(c.einsum)})")
        for name, op in c.then_project:
            out.append(f"  - then {op} over {_code(name)}")
        if c.steps:
            out.append(f"  - order: {' ; '.join(_code(s) for s in c.steps)}")
        out.append(f"  - flops: {_num(c.flops)} (naive {_num(c.naive_flops)}), "
                   f"largest intermediate: {_num(c.largest_intermediate)} elements")
        if c.note:
            out.append(f"  - note: {c.note}")
    if eq.recursive:
        out.append("- part of a recursive group")
    return out


def render_plan_markdown(plan: ProgramPlan, title: str | None = None) -> str:
    """The whole plan as Markdown: the same content as `render_plan_text`
    (tensors, evaluation order, each equation's indices and contractions, total
    cost), for an editor's preview or hover."""
    name = title or (plan.path.replace("\\", "/").rsplit("/", 1)[-1] if plan.path else None)
    out = [f"## Plan{f' of {_code(name)}' if name else ''}", "",
           f"**Total:** {_num(plan.total_flops)} flops · {len(plan.shapes)} tensors · "
           f"{len(plan.equations)} equations", "", "### Tensors", ""]
    out += _md_table(["tensor", "shape"],
                     [[_code(n), _code(_shape(shape))] for n, shape in plan.shapes])
    out += ["", "### Evaluation order", ""]
    how = dict(plan.recursion)
    for step, group in enumerate(plan.order, 1):
        mark = f" — *recursive: {how[group[0]]}*" if group[0] in how else ""
        out.append(f"{step}. {', '.join(_code(n) for n in group)}{mark}")
    if not plan.order:
        out.append("*(nothing to evaluate)*")
    out += ["", "### Equations", ""]
    for eq in plan.equations:
        out += render_equation_markdown(eq) + [""]
    if not plan.equations:
        out += ["*(no equations)*", ""]
    return "\n".join(out).rstrip() + "\n"
