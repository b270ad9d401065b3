"""Renderings of a ProgramPlan: the `fuse explain` text tables and the Markdown
of an editor's preview and hover.

One walker reads the plan (`_equation_lines`, `_render`); a formatter says how
each piece looks: `_Text` or `_Markdown`.  Both show the same content.
"""
from __future__ import annotations

from typing import Any

from ..front.let_blocks import user_name
from ..front.numbers import short_number
from .config import ExecutionPlan
from .planner import Contraction, EquationPlan, IndexPlan, ProgramPlan
from .sharding import Collective, ShardingPlan


def _num(n: int | None) -> str:
    if n is None:
        return "?"
    if n >= 10**12:  # exact integers (costs of huge extents), never through a float
        return short_number(n, 0)
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def _shape(shape) -> str:
    return "(" + ", ".join("?" if e is None else str(e) for e in shape) + \
        ("," if len(shape) == 1 else "") + ")"


_row_formats: dict[tuple[int, ...], Any] = {}  # a table's column widths -> its rows' format
_INDEX_HEADER = ["index", "extent", "domain", "role"]
# an index table's column widths -> its rows' format and its first two lines, indented
_index_formats: dict[tuple[int, ...], Any] = {}


class _Text:
    """Aligned columns, indented by two spaces a level."""

    einsum_gap = "   "

    def code(self, text: str) -> str:
        return text

    def tensor(self, name: str) -> str:
        """A tensor's name as the user wrote it: a block's `let` (renamed `h@let.3`
        inside) is `h (local)`."""
        return self.code(name) if "@let." not in name else f"{self.code(user_name(name))} (local)"

    def table(self, header: list[str], rows: list[list[str]]) -> list[str]:
        # (the cells are strings; one format per row: explain prints a table per
        # equation, hundreds of thousands of rows on a long program)
        widths = tuple([max(map(len, col)) for col in zip(header, *rows)])
        line = _row_formats.get(widths)
        if line is None:  # each cell left-aligned in its column's width
            if len(_row_formats) > 1000:
                _row_formats.clear()
            line = _row_formats[widths] = "  ".join([f"{{:<{w}}}" for w in widths]).format
        return [line(*row).rstrip() for row in (header, ["-" * w for w in widths], *rows)]

    def equation_head(self, eq: EquationPlan) -> str:
        return f"line {eq.line}: {eq.text}"

    def indices(self, rows: list[list[str]]) -> list[str]:
        # (`table`, indented, with its head made once per column widths: explain
        # prints one such table per equation)
        widths = tuple([max(map(len, col)) for col in zip(_INDEX_HEADER, *rows)])
        made = _index_formats.get(widths)
        if made is None:
            if len(_index_formats) > 1000:
                _index_formats.clear()
            line = "  ".join([f"{{:<{w}}}" for w in widths]).format
            made = _index_formats[widths] = (
                line, ["  " + line(*row).rstrip()
                       for row in (_INDEX_HEADER, ["-" * w for w in widths])])
        line, head = made
        return head + ["  " + line(*row).rstrip() for row in rows]

    def before_items(self) -> list[str]:
        return []

    def item(self, text: str) -> str:
        return "  " + text

    def sub_item(self, text: str) -> str:
        return "    " + text

    def mesh(self, heading: str, notes: list[str]) -> list[str]:
        return [heading] + [f"  note: {n}" for n in notes] + [""]

    def document(self, plan: ProgramPlan, title: str | None, tensors: list[list[str]],
                 order: list[tuple[int, list[str], str | None]],
                 equations: list[list[str]], mesh: list[str]) -> str:
        out = mesh + ["Tensors"]
        out += ["  " + line for line in self.table(_TENSOR_HEADER[:len(tensors[0])]
                                                   if tensors else ["tensor", "shape"],
                                                   tensors)]
        out += ["", "Storage (representation, estimated non-zeros, why)"]
        out += [f"  {name}: {kind}, {count} ({why})"
                for name, kind, count, why in storage(plan, self)]
        if any(r[1] == "sparse" for r in plan.representations):
            out.append("  note: sparse on numpy, and on torch and jax in eager runs "
                       "(compiled=False); a compiled or sharded run keeps every tensor "
                       "dense")
        out += ["", "Evaluation order"]
        for step, names, how in order:
            mark = f"  (recursive: {how})" if how is not None else ""
            out.append(f"  {step}. {', '.join(names)}{mark}")
        out += ["", "Equations"]
        # (an equation's lines as one string: the document's half a million lines are
        # joined once, not each made anew with its indent)
        out += ["  " + "\n  ".join(lines) for lines in equations if lines]
        out += ["", f"Total: {_num(plan.total_flops)} flops"]
        return "\n".join(out)


class _Markdown(_Text):
    """Headings, tables and lists; names as inline code."""

    einsum_gap = " "

    def code(self, text: str) -> str:
        """Inline code, safe in a table cell."""
        text = " ".join(text.split()).replace("|", "\\|")
        fence = "``" if "`" in text else "`"
        return f"{fence}{text}{fence}"

    def table(self, header: list[str], rows: list[list[str]]) -> list[str]:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
        return out

    def equation_head(self, eq: EquationPlan) -> str:
        return f"**line {eq.line}** {self.code(eq.text)}"

    def indices(self, rows: list[list[str]]) -> list[str]:
        return [""] + self.table(_INDEX_HEADER, rows)

    def before_items(self) -> list[str]:
        return [""]

    def item(self, text: str) -> str:
        return "- " + text

    def sub_item(self, text: str) -> str:
        return "  - " + text

    def mesh(self, heading: str, notes: list[str]) -> list[str]:
        return [f"**{heading}**", ""] + [f"- note: {n}" for n in notes] + \
            ([""] if notes else [])

    def document(self, plan: ProgramPlan, title: str | None, tensors: list[list[str]],
                 order: list[tuple[int, list[str], str | None]],
                 equations: list[list[str]], mesh: list[str]) -> str:
        name = title or (plan.path.replace("\\", "/").rsplit("/", 1)[-1] if plan.path else None)
        out = [f"## Plan{f' of {self.code(name)}' if name else ''}", "",
               f"**Total:** {_num(plan.total_flops)} flops · {len(plan.shapes)} tensors · "
               f"{len(plan.equations)} equations", ""] + mesh + ["### Tensors", ""]
        out += self.table(_TENSOR_HEADER[:len(tensors[0])] if tensors else ["tensor", "shape"],
                          tensors)
        out += ["", "### Storage", ""]
        out += self.table(STORAGE_HEADER, storage(plan, self))
        out += ["", "### Evaluation order", ""]
        for step, names, how in order:
            mark = f" — *recursive: {how}*" if how is not None else ""
            out.append(f"{step}. {', '.join(names)}{mark}")
        if not order:
            out.append("*(nothing to evaluate)*")
        out += ["", "### Equations", ""]
        for lines in equations:
            out += lines + [""]
        if not equations:
            out += ["*(no equations)*", ""]
        return "\n".join(out).rstrip() + "\n"


_TENSOR_HEADER = ["tensor", "shape", "sharding"]
_TEXT = _Text()
_MARKDOWN = _Markdown()


# ------------------------------------------------------------------ the walker
STORAGE_HEADER = ["tensor", "representation", "non-zeros (estimated)", "why"]


def storage(plan: ProgramPlan, fmt: "_Text") -> list[list[str]]:
    """Each tensor's representation (plan.representation) as table rows."""
    rows = []
    for name, kind, nonzeros, cells, reason in plan.representations:
        count = "?" if nonzeros is None else f"~{nonzeros:,}"
        if nonzeros is not None and cells:
            count += f" of {cells:,}"
        rows.append([fmt.tensor(name), kind, count, reason])
    return rows


def _role(ix: IndexPlan, fmt: _Text) -> str:
    role = f"projected ({ix.op}) in {ix.scope}" if ix.role == "projected" else ix.role
    if ix.detail:
        role += f" ({ix.detail})"
    if ix.joined:
        role += f"; joins {', '.join(fmt.code(f) for f in ix.factors)}"
    return role


def _contraction_lines(c: Contraction, fmt: _Text) -> list[str]:
    if c.kind == "reduce":
        by_op: dict[str, list[str]] = {}
        for name, op in c.then_project:
            by_op.setdefault(op, []).append(fmt.code(name))
        what = "; ".join(f"{op} over {', '.join(names)}" for op, names in by_op.items())
        out = [fmt.item(f"reduce {what}{fmt.einsum_gap}({fmt.code(c.einsum)})")]
    elif c.kind == "elementwise":
        out = [fmt.item(f"elementwise product{fmt.einsum_gap}({fmt.code(c.einsum)})")]
    else:
        out = [fmt.item(f"einsum {fmt.code(c.letters)}{fmt.einsum_gap}({fmt.code(c.einsum)})")]
        for name, op in c.then_project:
            out.append(fmt.sub_item(f"then {op} over {fmt.code(name)}"))
    if c.steps:
        out.append(fmt.sub_item(f"order: {' ; '.join(fmt.code(s) for s in c.steps)}"))
    gathered = f", gathered operands: {_num(c.gathered)} elements" if c.gathered else ""
    out.append(fmt.sub_item(f"flops: {_num(c.flops)} (naive {_num(c.naive_flops)}), "
                            f"largest intermediate: {_num(c.largest_intermediate)} elements"
                            f"{gathered}"))
    if c.note:
        out.append(fmt.sub_item(f"note: {c.note}"))
    return out


def _spec(spec: tuple[str | None, ...]) -> str:
    """A tensor's PartitionSpec as JAX writes it; `replicated` when nothing is split."""
    if all(m is None for m in spec):
        return "replicated"
    return "P(" + ", ".join("None" if m is None else repr(m) for m in spec) + ")"


def _collective_line(c: Collective, fmt: _Text) -> str:
    what = ", ".join(fmt.code(t) for t in c.tensors)
    return fmt.item(f"collective: {c.kind} over {fmt.code(c.mesh_axis)} of {what}: {c.why}")


def _sharding_lines(sharding: ShardingPlan | None, eq: EquationPlan, fmt: _Text) -> list[str]:
    if sharding is None:
        return []
    found = sharding.equation(eq.statement)
    if found is None or not found.collectives:
        if found is not None and all(m is None for m in sharding.spec_of(found.tensor)):
            # no collective, and the result is split over nothing: computed whole
            return [fmt.item("collective: none (the result is replicated: each device "
                             "computes all of it)")]
        return [fmt.item("collective: none (each device computes its own block)")]
    return [_collective_line(c, fmt) for c in found.collectives]


def _held(sharding: ShardingPlan, fmt: _Text) -> list[str]:
    """What one device holds of each split tensor (so each process of a group of one
    device each); every other tensor it holds whole."""
    split = [f"{fmt.code(t.tensor)} {_shape(t.per_device)}" for t in sharding.tensors
             if not t.replicated]
    if not split:
        return []
    return [f"each device (each process, one device each) holds {', '.join(split)}; "
            f"every other tensor whole"]


def _mesh_heading(sharding: ShardingPlan) -> str:
    mesh = ", ".join(f"{m}={'?' if n is None else n}" for m, n in sharding.mesh)
    shard = ", ".join(f"{i}->{m}" for i, m in sharding.shard) or "nothing"
    return f"Mesh: {mesh or 'none'}; sharded: {shard}"


def _equation_lines(eq: EquationPlan, fmt: _Text,
                    sharding: ShardingPlan | None = None) -> list[str]:
    out = [fmt.equation_head(eq)]
    rows = [[fmt.code(ix.name), "?" if ix.extent is None else str(ix.extent), f"D{ix.domain}",
             _role(ix, fmt)] for ix in eq.indices]
    if rows:
        out += fmt.indices(rows)
    if eq.contractions or eq.recursive or eq.comparisons or sharding is not None:
        out += fmt.before_items()
    for c in eq.contractions:
        out += _contraction_lines(c, fmt)
    for comparison in eq.comparisons:
        out.append(fmt.item(f"comparison {comparison}"))
    if eq.recursive:
        out.append(fmt.item("part of a recursive group"))
    return out + _sharding_lines(sharding, eq, fmt)


# a contraction's text lines but its einsum's, by what decides them (its form's)
_contraction_texts: dict[tuple, tuple[str, list[str]]] = {}


def _text_lines(eq: EquationPlan) -> list[str]:
    """`_equation_lines(eq, _TEXT)` without sharding, made without the formatter's
    calls, each contraction's lines but its einsum text once per form of
    contraction (explain prints these for every equation of a long program)."""
    out = [f"line {eq.line}: {eq.text}"]
    if eq.indices:
        rows = []
        for ix in eq.indices:
            role = f"projected ({ix.op}) in {ix.scope}" if ix.role == "projected" else ix.role
            if ix.detail:
                role += f" ({ix.detail})"
            if ix.joined:
                role += f"; joins {', '.join(ix.factors)}"
            rows.append([ix.name, "?" if ix.extent is None else str(ix.extent),
                         f"D{ix.domain}", role])
        out += _TEXT.indices(rows)
    for c in eq.contractions:
        key = (c.kind, c.letters, c.then_project, c.steps, c.flops, c.naive_flops,
               c.largest_intermediate, c.gathered, c.note)
        made = _contraction_texts.get(key)
        if made is None:
            if len(_contraction_texts) > 4096:
                _contraction_texts.clear()
            lines = _contraction_lines(c, _TEXT)
            head = lines[0]
            made = _contraction_texts[key] = (head[:len(head) - len(c.einsum) - 1], lines[1:])
        head, rest = made
        out.append(f"{head}{c.einsum})")
        out += rest
    for comparison in eq.comparisons:
        out.append(f"  comparison {comparison}")
    if eq.recursive:
        out.append("  part of a recursive group")
    return out


def _render(plan: ProgramPlan, fmt: _Text, title: str | None = None,
            sharding: ShardingPlan | None = None) -> str:
    tensors = [[fmt.tensor(name), fmt.code(_shape(shape))] for name, shape in plan.shapes]
    mesh: list[str] = []
    if sharding is not None:
        for row, (name, _) in zip(tensors, plan.shapes):
            row.append(fmt.code(_spec(sharding.spec_of(name))))
        mesh = fmt.mesh(_mesh_heading(sharding), _held(sharding, fmt) + list(sharding.notes))
    how = dict(plan.recursion)
    order = [(step, [fmt.tensor(n) for n in group], how.get(group[0]))
             for step, group in enumerate(plan.order, 1)]
    equations = [_text_lines(eq) for eq in plan.equations] if fmt is _TEXT and \
        sharding is None else [_equation_lines(eq, fmt, sharding) for eq in plan.equations]
    return fmt.document(plan, title, tensors, order, equations, mesh)


# ------------------------------------------------------------------ entry points
def render_equation(eq: EquationPlan) -> list[str]:
    """One equation's plan as text lines (hover shows them in a code block)."""
    return _equation_lines(eq, _TEXT)


def render_equation_markdown(eq: EquationPlan) -> list[str]:
    return _equation_lines(eq, _MARKDOWN)


def render_plan_text(plan: ProgramPlan, sharding: ShardingPlan | None = None,
                     execution: ExecutionPlan | None = None) -> str:
    """The `fuse explain` tables: tensors, evaluation order, equations, total cost;
    with `sharding`, each tensor's PartitionSpec and each equation's collectives;
    with `execution` that sets anything, what the configuration does."""
    text = _render(plan, _TEXT, sharding=sharding)
    if execution is not None and execution.settings:
        text += "\n\n" + "\n".join(render_execution(execution))
    return text


def render_execution(execution: ExecutionPlan) -> list[str]:
    """The configuration's section of `fuse explain` (plan.config)."""
    out = ["Execution: " + ", ".join(f"{k}={v}" for k, v in execution.settings)]
    out += [f"  fixpoint of {group}: {how}" for group, how in execution.fixpoints]
    for s in execution.sampled:
        draw = f"weighted by {s.weights}" if s.weights else "uniformly"
        out.append(f"  line {s.line}: {s.tensor}: Monte Carlo over `{s.index}`: {s.samples} "
                   f"of {s.extent} values drawn {draw}; {s.work_saved:.1%} of the "
                   f"contraction's work saved")
    for b in execution.blocked:
        out.append(f"  line {b.line}: {b.tensor}: intermediate of {_num(b.intermediate)} "
                   f"elements in {b.blocks} blocks; peak {_num(b.peak)} elements")
    out += [f"  {note}" for note in execution.notes]
    demand = execution.demand
    if demand is not None and demand.rewritten:
        out += [f"  demand: {r.tensor} asked as {r.name} (adornment {r.adornment}: "
                f"b bound, f free), its magic relation {r.magic}" for r in demand.relations]
        out += [f"  demand: the query {q} reads {w}" for q, _t, w in demand.queries]
        out += ["  demand: rules added:"] + [f"    {rule}" for rule in demand.rules]
        out.append(f"  demand: evaluated {', '.join(demand.evaluated)}" + (
            f"; not evaluated: {', '.join(demand.left_out)}" if demand.left_out else ""))
    return out


def render_plan_markdown(plan: ProgramPlan, title: str | None = None,
                         sharding: ShardingPlan | None = None) -> str:
    """The whole plan as Markdown: the same content as `render_plan_text`
    (tensors, evaluation order, each equation's indices and contractions, total
    cost, and the sharding when given), for an editor's preview or hover."""
    return _render(plan, _MARKDOWN, title, sharding)
