"""The planner: per equation, what is joined, projected and kept, and the
contraction order with its cost — from shapes only, nothing executed.

opt_einsum's `contract_path` chooses the order (as its docs show, with
`shapes=True` no array is needed).  The result is plain, printable data:
`fuse explain`, hover and inlay hints all read it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

from ..check import Analysis
from ..check.compared_constants import compared_symbol, constant_text, symbol_position
from ..check.kinds import TensorKind
from ..check.runnable import recurrence_of
from ..check.symbols import IndexRole
from ..front import ir
from ..front.arguments import instance_argument
from ..front.builtins import COMPARISONS
from ..front.ir_text import equation_text
from ..front.span import Span
from ..speed.fastinit import frozen_dataclass
from .contraction import contraction_path, einsum_spec
from .contraction_notes import SPARSE_NOTE, after_notes, read_notes
from .forms import WalkMemo, walk_joins
from .index_details import index_details
from .joins import Join
from .operands import Operand
from .relabel import factor_text, reference_text, relabelled, saved_form
from .representation import representations, sparse_join_filters


@frozen_dataclass
class IndexPlan:
    name: str
    extent: int | None
    domain: int
    role: str  # "output" | "projected" | "free" | "step" (a virtual index: no axis)
    op: str | None  # projection operator ("sum", "max", ...) when projected
    scope: str | None  # "right-hand side" | "argument of softmax" | "reduce"
    joined: bool
    factors: tuple[str, ...]
    # what a left-hand-side index does beyond "output" (plan.index_details): pooled,
    # broadcast, normalised, a recurrence's step; "" for none
    detail: str = ""


@frozen_dataclass
class Contraction:
    """One thing the run computes for a right-hand side: an einsum over a product's
    factors (`kind` "einsum"), an elementwise product of values that have axes
    ("elementwise"), or a reduction of a value ("reduce": `then_project` says over
    what, by which operator)."""

    einsum: str  # with the program's own index names: "W[i,j] X[j] -> [i]"
    letters: str  # the same as a numpy einsum string: "ij,j->i" ("" when not an einsum)
    operands: tuple[str, ...]
    path: tuple[tuple[int, ...], ...]
    steps: tuple[str, ...]  # readable contraction order
    naive_flops: int | None
    flops: int | None
    largest_intermediate: int | None
    note: str = ""
    first_offset: int = 0  # where its first factor starts in the text (sorting)
    # indices the einsum keeps only for a max/min/avg projection right after it
    then_project: tuple[tuple[str, str], ...] = ()
    # elements of the gathered copies of shifted and pooled reads (`X[n,x+dx,i]`),
    # made before the einsum and held while it runs (the memory estimate adds them)
    gathered: int = 0
    kind: str = "einsum"  # "einsum" | "elementwise" | "reduce"


@frozen_dataclass
class EquationPlan:
    statement: int
    line: int  # 1-based
    text: str
    tensor: str
    op: str
    output: tuple[str, ...]
    joined: tuple[str, ...]
    projected: tuple[tuple[str, str, str], ...]  # (index, operator, scope)
    indices: tuple[IndexPlan, ...]
    contractions: tuple[Contraction, ...]
    flops: int | None
    largest_intermediate: int | None
    recursive: bool
    # each comparison factor, in words: "(y < 5): a mask over y (9 values)"
    comparisons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProgramPlan:
    path: str | None
    equations: tuple[EquationPlan, ...]
    order: tuple[tuple[str, ...], ...]
    recursive_groups: tuple[tuple[str, ...], ...]
    shapes: tuple[tuple[str, tuple[int | None, ...]], ...]
    total_flops: int | None
    recursion: tuple[tuple[str, str], ...] = ()  # (tensor, how its recursive group runs)
    # (tensor, "dense" | "sparse", estimated non-zeros or None, cells or None, why):
    # plan.representation decides, the run follows
    representations: tuple[tuple[str, str, int | None, int | None, str], ...] = ()
    # the scalars of the `param` tensors (0 without params; None while an extent is unknown)
    parameters: int | None = 0

    def to_json(self) -> dict:
        """`dataclasses.asdict` of the plan (made without its deep copy of every
        string and number: tens of seconds on a 2 MB program)."""
        return _as_dict(self)


def _as_dict(value: object) -> object:
    """What `dataclasses.asdict` makes of a plan's value: a dataclass as the dict of
    its fields, a tuple or list as one of its items', other values as they are
    (strings, numbers, None: nothing in a plan that a copy would change)."""
    names = getattr(type(value), "__dataclass_fields__", None)
    if names is not None:
        return {name: _as_dict(getattr(value, name)) for name in names}
    kind = type(value)
    if kind is tuple or kind is list:
        return kind([_as_dict(item) for item in value])  # type: ignore[attr-defined]
    if isinstance(value, dict):
        return {_as_dict(k): _as_dict(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple, as asdict
        return kind(*[_as_dict(item) for item in value])
    if isinstance(value, (tuple, list)):
        return kind(_as_dict(item) for item in value)  # type: ignore[call-arg]
    return value


def plan_program(analysis: Analysis, overrides: Mapping[str, str] | None = None
                 ) -> ProgramPlan:
    """The program's plan; `overrides`: per tensor "dense"/"sparse" (as `compile`'s
    `representation`)."""
    instance_argument("fuse_lang.plan_program", analysis, Analysis,
                      "a program's Analysis (fuse_lang.analyze(text, path))")
    equations = []
    alone = _alone(analysis)
    chosen = representations(analysis, overrides)
    sparse = frozenset(r.tensor for r in chosen.values() if r.kind == "sparse")
    memo = WalkMemo(analysis, sparse)  # each form of equation walked once
    for k, stmt in enumerate(analysis.program.statements):
        if isinstance(stmt, ir.Equation):
            equations.append(plan_equation(analysis, k, alone, sparse, memo))
    flops = [e.flops for e in equations]
    total = sum(f for f in flops if f is not None) if all(f is not None for f in flops) else None
    groups = tuple(g for g in analysis.order if set(g) & analysis.recursive)
    shapes = tuple((n, t.shape) for n, t in analysis.tensors.items())
    stored = tuple((r.tensor, r.kind, r.nonzeros, r.cells, r.reason)
                   for r in chosen.values())
    return ProgramPlan(analysis.path, tuple(equations), analysis.order, groups, shapes, total,
                       tuple(analysis.recursion.items()), stored, _parameters(analysis))


def _parameters(analysis: Analysis) -> int | None:
    """How many scalars the program's `param` tensors hold (None when one's shape
    is not known before the run)."""
    count = 0
    for info in analysis.tensors.values():
        if info.kind != TensorKind.PARAM:
            continue
        if any(e is None for e in info.shape):
            return None
        count += math.prod(info.shape)  # type: ignore[arg-type]
    return count


def _scope_label(role: IndexRole, call_arguments: dict[Span, str]) -> str | None:
    scope = role.scope
    if scope is None:
        return None
    if scope.kind == "rhs":
        return "right-hand side"
    if scope.kind == "reduce":
        return f"reduce({scope.op}, ...)"
    name = call_arguments.get(scope.span)
    return "argument" if name is None else f"argument of {name}"


def _call_arguments(stmt: ir.Statement) -> dict[Span, str]:
    """The span of each call argument of `stmt`, to the call's name (the first
    call, in walking order, when two share a span)."""
    found: dict[Span, str] = {}
    for node in ir.walk(ir.used_exprs(stmt)[0]):
        if isinstance(node, ir.Call):
            for arg in node.args:
                found.setdefault(arg.span, node.name)
    return found


def _alone(analysis: Analysis) -> frozenset[str]:
    """The tensors of a recursive group of one in the evaluation order (a recurrence
    runs step by step only there, as the run plan's groups say)."""
    return frozenset(g[0] for g in analysis.order if len(g) == 1 and g[0] in analysis.recursive)


def _step_by_step(analysis: Analysis, k: int, stmt: ir.Equation, alone: frozenset[str],
                  known: dict[str, tuple | None] | None = None) -> tuple[str, int] | None:
    """(index, steps) when the run computes equation `k` once per step of a recurrence,
    that index held at the step (run.execution: `_recurrence`): a virtual index, or
    a read one step back (`X[i-1,k]`) where the equation writes the index.  An
    equation that writes a constant there (`A[0,s] = ...`) runs once.  `known`:
    each tensor's recurrence and steps found already (they are the tensor's)."""
    name = stmt.lhs.name
    if name not in alone:
        return None
    found = None if known is None else known.get(name)
    if found is None:
        found = _recurrence_steps(analysis, name)
        if known is not None:
            known[name] = found
    var, position, virtual, steps = found
    if var is None:
        return None
    index = (stmt.lhs.indices or ())[position] if position < len(stmt.lhs.indices or ()) \
        else None
    if not virtual and not (isinstance(index, ir.IndexVar) and index.name == var):
        return None
    return None if steps is None else (var, steps)


def _recurrence_steps(analysis: Analysis, name: str) -> tuple:
    """(index, LHS position, virtual, steps) of tensor `name`'s recurrence (None for
    each where it has none; steps None where its extent is unknown)."""
    statements = analysis.program.statements
    equations = [e for e in analysis.tensors[name].statements
                 if isinstance(statements[e], ir.Equation)]
    found = recurrence_of(statements, name, equations)
    if found is None:
        return None, None, None, None
    var, position, virtual = found
    extents = (analysis.var_extents.get((e, var), (None, 0))[0] for e in equations)
    return var, position, virtual, next((n for n in extents if n is not None), None)


def plan_equation(analysis: Analysis, k: int, alone: frozenset[str] | None = None,
                  sparse: Collection[str] = (), memo: WalkMemo | None = None
                  ) -> EquationPlan:
    """Equation `k`'s plan; `alone`: `_alone(analysis)` where the caller plans many;
    `sparse`: the tensors held as tuples (plan.representation); `memo`: the walks
    of the program's forms of equation (plan.forms), made with the same `sparse`,
    and the plans of the forms planned already (an equation of a form met before
    takes that plan with its own names, texts and places: plan.relabel)."""
    stmt = analysis.program.statements[k]
    assert isinstance(stmt, ir.Equation)
    roles = analysis.roles.get(k, ())
    if alone is None:
        alone = _alone(analysis) if stmt.lhs.name in analysis.recursive else frozenset()
    steps = _step_by_step(analysis, k, stmt, alone,
                          None if memo is None else memo.recurrences)
    form = None if memo is None else memo.form_of(k, stmt, (steps[0],) if steps else ())
    saved = None if form is None else memo.plans.get((form[0], steps))  # type: ignore[union-attr]
    if saved is not None:
        scopes = saved.scopes_of(roles)
        if scopes is not None:
            indices = _index_plans(analysis, k, roles, scopes, stmt, steps, form[1])
            return _equation_plan(analysis, k, stmt, indices,
                                  relabelled(saved, form[1], analysis.text),  # type: ignore[index]
                                  (), saved.figures)
    # walked once per equation, not once per index (issue 19, item 10)
    call_arguments = _call_arguments(stmt) if any(
        r.scope is not None and r.scope.kind not in ("rhs", "reduce") for r in roles) else {}
    scopes = [_scope_label(role, call_arguments) for role in roles]
    indices = _index_plans(analysis, k, roles, scopes, stmt, steps,
                           None if form is None else form[1])
    found, nodes, walked = _contractions(analysis, k, stmt, steps, sparse, memo)
    contractions = tuple(found)
    comparisons = _comparisons(analysis, k, stmt, indices, nodes, sparse)
    figures = _figures(stmt, contractions, indices)
    if form is not None and walked is not None and not comparisons:
        made = saved_form(contractions, *walked, form[1], roles, scopes, figures)
        if made is not None:
            memo.plans[(form[0], steps)] = made  # type: ignore[union-attr]
    return _equation_plan(analysis, k, stmt, indices, contractions, comparisons, figures)


_NO_EXTENT = (None, 0)  # (extent, domain) of an index the analysis has none for


def _index_plans(analysis: Analysis, k: int, roles: Sequence[IndexRole],
                 scopes: Sequence[str | None], stmt: ir.Equation,
                 steps: tuple[str, int] | None,
                 nodes: Sequence[ir.Expr] | None = None) -> list[IndexPlan]:
    var_extents = analysis.var_extents  # (read once: a deferred field's descriptor)
    get, plan = var_extents.get, IndexPlan
    details = index_details(stmt, roles, steps[0] if steps else None, nodes)
    indices = []
    for role, scope in zip(roles, scopes):
        name = role.name
        extent, domain = get((k, name), _NO_EXTENT)
        kind, detail = details.get(name, _NO_DETAIL) if role.role == "output" \
            else (role.role, "")
        indices.append(plan(name, extent, domain, kind, role.op, scope, role.joined,
                            role.factors, detail))
    return indices


_NO_DETAIL = ("output", "")


def _figures(stmt: ir.Equation, contractions: tuple[Contraction, ...],
             indices: Sequence[IndexPlan]) -> tuple:
    """(output indices, flops, largest intermediate, joined indices, projected indices
    with their operators and scopes): the equation's form's (an equation of the form
    has the form's index names, roles and scopes: SavedForm.scopes_of)."""
    # (a virtual index is the recurrence's step, no axis of the tensor: not an output)
    output = tuple(v.name for i in stmt.lhs.indices or () if type(i) is not ir.IndexVirtual
                   for v in ir.index_vars(i))
    costs = [c.flops for c in contractions]
    flops = sum(c for c in costs if c is not None) if all(c is not None for c in costs) else None
    sizes = [c.largest_intermediate for c in contractions if c.largest_intermediate is not None]
    projected = tuple([(p.name, p.op or "sum", p.scope or "") for p in indices
                       if p.role == "projected"])
    joined = tuple([p.name for p in indices if p.joined])
    return output, flops, max(sizes) if sizes else None, joined, projected


def _equation_plan(analysis: Analysis, k: int, stmt: ir.Equation, indices: list[IndexPlan],
                   contractions: tuple[Contraction, ...], comparisons: tuple[str, ...],
                   figures: tuple) -> EquationPlan:
    output, flops, largest, joined, projected = figures
    line, where = _place(analysis, stmt.span)
    name = stmt.lhs.name
    return EquationPlan(
        k, line, _equation_text(analysis, k, stmt, where or f"line {line}"), name, stmt.op,
        output, joined, projected, tuple(indices), contractions, flops, largest,
        name in analysis.recursive, comparisons)


def _place(analysis: Analysis, span: Span) -> tuple[int, str]:
    """The program's line of `span`, and for a span in an imported file its file and
    line there (`lib/graph.fuse:8`; the line is then its import statement's)."""
    imports = analysis.imports
    file = imports.file_at(span.start) if imports is not None else None
    if file is None:
        return analysis.lines.position(span.start)[0] + 1, ""
    inside = file.parsed.lines.position(span.start - file.base)[0] + 1
    return analysis.lines.position(file.via.start)[0] + 1, f"{file.shown}:{inside}"


def _equation_text(analysis: Analysis, k: int, stmt: ir.Equation, where: str) -> str:
    """The equation as written; one a `fn` call wrote out (which has no text of its
    own: its span is the call's) as IR text, with where it came from; one of an
    imported file as IR text (its names as the program has them), with its file."""
    origin = analysis.inlined.origins.get(k) if analysis.inlined is not None else None
    if origin is None:
        if where.startswith("line "):
            return analysis.text[stmt.span.start:stmt.span.end]
        return f"{equation_text(stmt)}   (from {where})"
    inside = "".join(f" in fn {name}" for name in reversed(origin.outer))
    return f"{equation_text(stmt)}   (from fn {origin.fn}{inside}, called at {where})"


def _comparisons(analysis: Analysis, k: int, stmt: ir.Equation, indices: list[IndexPlan],
                 nodes: list[ir.Expr] | None = None, sparse: Collection[str] = ()
                 ) -> tuple[str, ...]:
    """The comparison factors (`(j < i)`), each with the indices it is a mask over:
    built from the indices' values, one axis (against a number) or an outer
    comparison of several; in a join of sparse relations, a filter on the join's
    tuples (plan.representation.tuple_filter).  `nodes`: the right-hand side's
    nodes in walk order, where the caller has them."""
    found = [node for node in (ir.walk(stmt.rhs) if nodes is None else nodes)
             if type(node) is ir.Call and node.name in COMPARISONS]
    if not found:  # (most equations: nothing else to make)
        return ()
    extents = {ix.name: ix.extent for ix in indices}
    filters = sparse_join_filters(analysis, k, stmt, sparse) if sparse else {}
    out = []
    for node in found:
        if id(node) in filters:
            text = analysis.text[node.span.start:node.span.end]
            text = text[1:-1] if text.startswith("(") and text.endswith(")") else text
            out.append(f"({text}): filters the join's tuples (the relations are sparse), "
                       f"comparing the values of {', '.join(filters[id(node)])}"
                       f"{_symbol_text(analysis, k, node)}")
            continue
        names = list(dict.fromkeys(
            n.name for n in ir.walk(node) if isinstance(n, ir.Ref) and n.indices is None
            and n.name in extents))
        text = analysis.text[node.span.start:node.span.end]
        text = text[1:-1] if text.startswith("(") and text.endswith(")") else text
        sizes = [extents[n] for n in names]
        cells = "?" if None in sizes else "×".join(str(e) for e in sizes)
        symbol = _symbol_text(analysis, k, node)
        if not names:
            out.append(f"({text}): a constant")
        elif len(names) == 1:
            out.append(f"({text}): a mask over {names[0]} ({cells} values){symbol}")
        else:
            out.append(f"({text}): a Boolean factor over {', '.join(names)} ({cells}), "
                       f"an outer comparison of their values")
    return tuple(out)


def _symbol_text(analysis: Analysis, k: int, call: ir.Call) -> str:
    """`, Ann: symbol 0 of x's column` for a symbol constant (check/values.py)."""
    found = compared_symbol(call, analysis.tensors)
    if found is None or not isinstance(found[1], ir.Ref) or (k, found[1].name) not in \
            analysis.var_extents:
        return ""
    constant, var = found
    _, domain = analysis.var_extents[(k, var.name)]
    name = constant_text(constant)
    position = symbol_position(name, analysis.domain_symbols.get(domain, ()))
    if position < 0:
        return (f", the symbol {name}, which {var.name}'s column does not hold: "
                f"{'never' if call.name == '==' else 'always'} true")
    return f", the symbol {name}: position {position} of {var.name}'s column"


def _contractions(analysis: Analysis, k: int, stmt: ir.Equation,
                  steps: tuple[str, int] | None, sparse: Collection[str],
                  memo: WalkMemo | None = None
                  ) -> tuple[list[Contraction], list[ir.Expr] | None, tuple | None]:
    """What the run computes for equation `k` (plan.joins walks it as the run does):
    each einsum, elementwise product and reduction, with its cost, in the run's
    order (an argument's join before the join that reads the call); the
    right-hand side's nodes in walk order where the memo has them; and where
    the joins are the form's, (joins, operands, costs)."""
    fixed = (steps[0],) if steps else ()
    nodes = key = None
    if memo is not None:
        joins, read, nodes, key = memo.walk(k, stmt, fixed)
    else:
        joins, read = walk_joins(analysis, k, stmt, fixed, sparse)
    # the joins' specs and costs depend on the form alone (its joins, operands and
    # extents: plan.forms) and on the steps: made once per form, the texts per equation
    costs = None if key is None else memo.costs.get((key, steps))  # type: ignore[union-attr]
    if costs is None:
        var_extents = analysis.var_extents
        extent = {name: var_extents.get((k, name), (None, 0))[0] for name in _names(joins)}
        lhs_order = [v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i)]
        count = steps[1] if steps else 1
        costs = [_einsum_costs(join, read, extent, lhs_order, count) if join.kind == "einsum"
                 else _pointwise_costs(join, extent, count) for join in joins]
        if key is not None:
            memo.costs[(key, steps)] = costs  # type: ignore[union-attr]
    out = [_contraction(analysis, join, read, cost, steps, sparse) if join.kind == "einsum"
           else _pointwise(analysis, join, cost, sparse) for join, cost in zip(joins, costs)]
    # (out: in the order the run computes them)
    return out, nodes, (None if key is None else (joins, read, costs))


def _names(joins: list[Join]) -> set[str]:
    return {n for j in joins for axes in j.axes + j.combines for n in axes}


def _joined_text(analysis: Analysis, join: Join, kept: tuple[str, ...]) -> str:
    text = ""
    for factor, op in zip(join.factors, join.ops):
        part = factor_text(analysis.text, factor)
        text = part if not text else f"{text} / {part}" if op == "/" else f"{text} {part}"
    return text + f" -> [{','.join(kept)}]"


def _size(axes: tuple[str, ...], extent: Mapping[str, int | None]) -> int | None:
    size = 1
    for name in axes:
        n = extent.get(name)
        if n is None:
            return None
        size *= n
    return size


def _pointwise_costs(join: Join, extent: Mapping[str, int | None], count: int) -> tuple:
    """An elementwise product's or a reduction's figures (see _pointwise), which
    its form decides: (kept axes, projections after it, flops, largest)."""
    sizes = [_size(axes, extent) for axes in join.combines]
    if join.kind == "reduce":
        result = tuple(a for a in join.axes[0] if all(a not in names
                                                      for _, names in join.reduced))
        then = tuple((n, op) for op, names in join.reduced for n in names)
        largest = _size(result, extent)
    else:
        result = join.combines[-1]
        then = ()
        largest = None if None in sizes else max(sizes)  # type: ignore[type-var]
    flops = None if None in sizes else sum(sizes) * count  # type: ignore[arg-type]
    return result, then, flops, largest


def _pointwise(analysis: Analysis, join: Join, costs: tuple,
               sparse: Collection[str] = ()) -> Contraction:
    """An elementwise product (one multiply per element of each broadcast result)
    or a reduction (one addition or comparison per element reduced)."""
    result, then, flops, largest = costs
    readable = _joined_text(analysis, join, result)
    names = tuple(f.name if isinstance(f, ir.Ref) else factor_text(analysis.text, f)
                  for f in join.factors)
    note = "" if flops is not None else "some extents are unknown until run time"
    if sparse and any(type(f) is ir.Ref and f.name in sparse for f in join.factors):
        note = "; ".join(x for x in (note, SPARSE_NOTE) if x)
    return Contraction(readable, "", names, (), (), flops, flops, largest, note,
                       min(f.span.start for f in join.factors), then, kind=join.kind)


def _einsum_costs(join: Join, read: Mapping[int, Operand], extent: Mapping[str, int | None],
                  lhs_order: list[str], count: int) -> tuple:
    """An einsum's figures (see _contraction), which its form decides: (spec or
    None, the path or None while an extent is unknown or the error that refused
    it, naive flops, flops, largest intermediate, elements gathered)."""
    ops = [read.get(id(f)) for f in join.factors]
    spec = einsum_spec(join.axes, join.summed, lhs_order)
    gathered = sum(op.size or 0 for op in ops if op is not None and op.gathered)
    if spec is None:
        return None, None, None, None, None, gathered
    shapes = tuple([op.shape if op is not None else tuple(extent.get(n) for n in axes)
                    for op, axes in zip(ops, join.axes)])
    if any(e is None for s in shapes for e in s):
        return spec, None, None, None, None, gathered
    try:
        costed = contraction_path(spec.letters, shapes)  # type: ignore[arg-type]
    except (ValueError, TypeError) as err:
        return spec, f"not costed: {err}", None, None, None, gathered
    return (spec, costed, costed.naive_flops * count, costed.flops * count,
            costed.largest_intermediate, gathered)


def _contraction(analysis: Analysis, join: Join, read: Mapping[int, Operand], costs: tuple,
                 steps: tuple[str, int] | None, sparse: Collection[str] = ()) -> Contraction:
    """The einsum the run performs for a product: each reference as the run reads it
    (plan.operands), gathered accesses and all, each other factor as its value.
    `steps`: (index, count) for an equation run step by step, that index held;
    `costs`: _einsum_costs of its form."""
    spec, costed, naive, flops, largest, gathered_size = costs
    if spec is None:
        return Contraction("", "", (), (), (), None, None, None,
                           "too many indices for an einsum")
    factors = join.factors
    gathered = [f"{reference_text(f)} as [{','.join(op.axes)}]"  # type: ignore[arg-type]
                for f, op in zip(factors, [read.get(id(f)) for f in factors])
                if op is not None and op.gathered]
    note = f"gathered before the join: {'; '.join(gathered)}" if gathered else ""
    note = "; ".join(x for x in (note, *read_notes(factors, read, sparse), *after_notes(join))
                     if x)
    first = min(f.span.start for f in factors)
    names = tuple(f.name if isinstance(f, ir.Ref) else factor_text(analysis.text, f)
                  for f in factors)
    readable = _joined_text(analysis, join, spec.kept)
    if steps:
        note = "; ".join(x for x in (note, f"each of the {steps[1]} steps over "
                                           f"`{steps[0]}`, that index held") if x)
    if costed is None:
        return Contraction(readable, spec.letters, names, (), (), None, None, None,
                           note or "some extents are unknown until run time", first)
    if isinstance(costed, str):  # opt_einsum refused it: its words are the note
        return Contraction(readable, spec.letters, names, (), (), None, None, None, costed,
                           first, (), gathered_size)
    return Contraction(readable, spec.letters, names, costed.path, costed.steps, naive, flops,
                       largest, note, first, (), gathered_size)
