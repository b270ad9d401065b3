"""The planner: per equation, what is joined, projected and kept, and the
contraction order with its cost — from shapes only, nothing executed.

opt_einsum's `contract_path` chooses the order (as its docs show, with
`shapes=True` no array is needed).  The result is plain, printable data:
`fuse explain`, hover and inlay hints all read it.
"""
from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Mapping

from ..check import Analysis
from ..check.kinds import TensorKind
from ..check.runnable import recurrence_of
from ..check.symbols import IndexRole
from ..check.values import compared_symbol, symbol_position
from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.ir_text import equation_text
from ..front.span import Span
from .contraction import contraction_path, einsum_spec
from .operands import reference_operand
from .representation import representations


@dataclass(frozen=True, slots=True)
class IndexPlan:
    name: str
    extent: int | None
    domain: int
    role: str  # "output" | "projected" | "free"
    op: str | None  # projection operator ("sum", "max", ...) when projected
    scope: str | None  # "right-hand side" | "argument of softmax" | "reduce"
    joined: bool
    factors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Contraction:
    """One product of tensor references, as an einsum."""

    einsum: str  # with the program's own index names: "W[i,j] X[j] -> [i]"
    letters: str  # the same as a numpy einsum string: "ij,j->i"
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


@dataclass(frozen=True, slots=True)
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
        return dataclasses.asdict(self)


def plan_program(analysis: Analysis, overrides: Mapping[str, str] | None = None
                 ) -> ProgramPlan:
    """The program's plan; `overrides`: per tensor "dense"/"sparse" (as `compile`'s
    `representation`)."""
    equations = []
    alone = _alone(analysis)
    for k, stmt in enumerate(analysis.program.statements):
        if isinstance(stmt, ir.Equation):
            equations.append(plan_equation(analysis, k, alone))
    flops = [e.flops for e in equations]
    total = sum(f for f in flops if f is not None) if all(f is not None for f in flops) else None
    groups = tuple(g for g in analysis.order if set(g) & analysis.recursive)
    shapes = tuple((n, t.shape) for n, t in analysis.tensors.items())
    stored = tuple((r.tensor, r.kind, r.nonzeros, r.cells, r.reason)
                   for r in representations(analysis, overrides).values())
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


def _step_by_step(analysis: Analysis, k: int, stmt: ir.Equation, alone: frozenset[str]
                  ) -> tuple[str, int] | None:
    """(index, steps) when the run computes equation `k` once per step of a recurrence,
    that index held at the step (run.execution: `_recurrence`): a virtual index, or
    a read one step back (`X[i-1,k]`) where the equation writes the index.  An
    equation that writes a constant there (`A[0,s] = ...`) runs once."""
    name = stmt.lhs.name
    if name not in alone:
        return None
    statements = analysis.program.statements
    equations = [e for e in analysis.tensors[name].statements
                 if isinstance(statements[e], ir.Equation)]
    found = recurrence_of(statements, name, equations)
    if found is None:
        return None
    var, position, virtual = found
    index = (stmt.lhs.indices or ())[position] if position < len(stmt.lhs.indices or ()) \
        else None
    if not virtual and not (isinstance(index, ir.IndexVar) and index.name == var):
        return None
    extents = (analysis.var_extents.get((e, var), (None, 0))[0] for e in equations)
    steps = next((n for n in extents if n is not None), None)
    return None if steps is None else (var, steps)


def plan_equation(analysis: Analysis, k: int, alone: frozenset[str] | None = None
                  ) -> EquationPlan:
    """Equation `k`'s plan; `alone`: `_alone(analysis)` where the caller plans many."""
    stmt = analysis.program.statements[k]
    assert isinstance(stmt, ir.Equation)
    roles = analysis.roles.get(k, ())
    indices = []
    # walked once per equation, not once per index (issue 19, item 10)
    call_arguments = _call_arguments(stmt) if any(
        r.scope is not None and r.scope.kind not in ("rhs", "reduce") for r in roles) else {}
    for role in roles:
        extent, domain = analysis.var_extents.get((k, role.name), (None, 0))
        indices.append(IndexPlan(role.name, extent, domain, role.role, role.op,
                                 _scope_label(role, call_arguments), role.joined,
                                 role.factors))
    output = tuple(v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i))
    projected = tuple((p.name, p.op or "sum", p.scope or "") for p in indices
                      if p.role == "projected")
    joined = tuple(p.name for p in indices if p.joined)
    if alone is None:
        alone = _alone(analysis) if stmt.lhs.name in analysis.recursive else frozenset()
    steps = _step_by_step(analysis, k, stmt, alone)
    contractions = tuple(_contractions(analysis, k, stmt, roles, steps))
    costs = [c.flops for c in contractions]
    flops = sum(c for c in costs if c is not None) if all(c is not None for c in costs) else None
    sizes = [c.largest_intermediate for c in contractions if c.largest_intermediate is not None]
    line = analysis.lines.position(stmt.span.start)[0] + 1
    return EquationPlan(
        k, line, _equation_text(analysis, k, stmt, line), stmt.lhs.name, stmt.op, output,
        joined, projected, tuple(indices), contractions, flops, max(sizes) if sizes else None,
        stmt.lhs.name in analysis.recursive, _comparisons(analysis, k, stmt, indices))


def _equation_text(analysis: Analysis, k: int, stmt: ir.Equation, line: int) -> str:
    """The equation as written; one a `fn` call wrote out (which has no text of its
    own: its span is the call's) as IR text, with where it came from."""
    origin = analysis.inlined.origins.get(k) if analysis.inlined is not None else None
    if origin is None:
        return analysis.text[stmt.span.start:stmt.span.end]
    inside = "".join(f" in fn {name}" for name in reversed(origin.outer))
    return f"{equation_text(stmt)}   (from fn {origin.fn}{inside}, called at line {line})"


def _comparisons(analysis: Analysis, k: int, stmt: ir.Equation, indices: list[IndexPlan]
                 ) -> tuple[str, ...]:
    """The comparison factors (`(j < i)`), each with the indices it is a mask over:
    built from the indices' values, one axis (against a number) or an outer
    comparison of several."""
    extents = {ix.name: ix.extent for ix in indices}
    out = []
    for node in ir.walk(stmt.rhs):
        if not (isinstance(node, ir.Call) and node.name in COMPARISONS):
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
    position = symbol_position(constant.name, analysis.domain_symbols.get(domain, ()))
    if position < 0:
        return (f", the symbol {constant.name}, which {var.name}'s column does not hold: "
                f"{'never' if call.name == '==' else 'always'} true")
    return f", the symbol {constant.name}: position {position} of {var.name}'s column"


def _contractions(analysis: Analysis, k: int, stmt: ir.Equation, roles,
                  steps: tuple[str, int] | None) -> list[Contraction]:
    role_by_name = {r.name: r for r in roles}
    tree = _StatementTree(stmt, roles)
    out = []
    for product in _products(stmt.rhs):
        factors = [f for f in product if isinstance(f, ir.Ref) and f.indices]
        if not factors:
            continue
        contraction = _contraction(analysis, k, stmt, factors, role_by_name, tree, steps)
        if contraction is None:
            continue
        inputs, _, output = contraction.letters.partition("->")
        if len(contraction.operands) == 1 and sorted(inputs) == sorted(output) \
                and not contraction.then_project:
            continue  # a plain read (or a copy): nothing joined or projected, no einsum
        out.append(contraction)
    out.sort(key=lambda c: c.first_offset)
    return out


def _products(expr: ir.Expr) -> list[list[ir.Expr]]:
    """Factor lists of every maximal product (a lone reference is a product of one)."""
    found: list[list[ir.Expr]] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Product):
            factors = [f for f, op in zip(node.factors, node.ops) if op != "/"]
            found.append(factors)
            stack.extend(f for f in node.factors if not isinstance(f, ir.Ref))
        elif isinstance(node, ir.Ref):
            if node.indices:
                found.append([node])
        else:
            stack.extend(ir.children(node))
    return found


class _StatementTree:
    """What planning each product of one statement asks of the whole statement,
    computed once for all its products (asking the tree each time made a long
    sum of products quadratic: issue 19, item 10): each node's parent, each
    index's occurrences in text order, the references holding k slices."""

    def __init__(self, stmt: ir.Equation, roles) -> None:
        self.stmt = stmt
        self._parents: dict[int, ir.Expr] = {}
        stack = [stmt.rhs]
        while stack:
            node = stack.pop()
            for child in ir.children(node):
                self._parents[id(child)] = node
                stack.append(child)
        self._occurrences = {r.name: sorted((o.span for o in r.occurrences), key=_start)
                            for r in roles}
        self._starts = {name: [span.start for span in spans]
                        for name, spans in self._occurrences.items()}
        self._slice_holders: dict[int, list[ir.Ref]] = {}

    def path_to(self, target: ir.Expr) -> list[ir.Expr]:
        """The nodes from the right-hand side down to `target`, both included."""
        path = [target]
        while id(path[-1]) in self._parents:
            path.append(self._parents[id(path[-1])])
        if path[-1] is not self.stmt.rhs:
            return [target]
        path.reverse()
        return path

    def occurrences_within(self, name: str, outer: Span) -> list[Span]:
        """The spans of index `name`'s occurrences that lie within span `outer`."""
        spans = self._occurrences.get(name)
        if not spans:
            return []
        starts = self._starts[name]
        window = spans[bisect_left(starts, outer.start):bisect_right(starts, outer.end)]
        return [span for span in window if span.end <= outer.end]

    def slice_holders(self, ordinal: int) -> list[ir.Ref]:
        """The right-hand side's references with more than `ordinal` slices."""
        holders = self._slice_holders.get(ordinal)
        if holders is None:
            holders = self._slice_holders[ordinal] = [
                r for r in ir.refs(self.stmt.rhs) if len(_slices(r)) > ordinal]
        return holders


def _contraction(analysis: Analysis, k: int, stmt: ir.Equation, factors: list[ir.Ref],
                 roles: dict[str, IndexRole], tree: _StatementTree,
                 steps: tuple[str, int] | None) -> Contraction | None:
    """The einsum the run performs for a product of references: each operand as the
    run reads it (plan.operands), gathered accesses and all; None where every
    factor is a scalar read (the run scales by it: no einsum).  `steps`: (index,
    count) for an equation run step by step, that index held at one position."""
    fixed = (steps[0],) if steps else ()
    read = [(ref, reference_operand(analysis, k, ref, fixed)) for ref in factors]
    read = [(ref, op) for ref, op in read if op.axes]
    if not read:
        return None
    factors = [ref for ref, _ in read]
    operands = [list(op.axes) for _, op in read]
    shapes = [op.shape for _, op in read]
    gathered = [f"{_reference_text(ref)} as [{','.join(op.axes)}]"
                for ref, op in read if op.gathered]
    note = f"gathered before the join: {'; '.join(gathered)}" if gathered else ""
    first = min(f.span.start for f in factors)
    names = dict.fromkeys(n for names in operands for n in names)
    term = _enclosing_term(tree, factors, {n: roles[n] for n in names if n in roles})
    dropped = set()
    for name in names:
        if name.startswith(":"):
            if _slice_summed(tree, factors, int(name[1:])):
                dropped.add(name)
            continue
        role = roles.get(name)
        if not (role is None or role.role != "projected" or role.op != "sum" or
                not _all_inside(tree, role, factors, term.get(name))):
            dropped.add(name)
    # the output follows the left-hand side's axis order, then what stays joined
    lhs_order = [v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i)]
    spec = einsum_spec(operands, dropped, lhs_order)
    if spec is None:
        return Contraction("", "", (), (), (), None, None, None,
                           "too many indices for an einsum")
    kept = spec.kept
    readable = " ".join(_reference_text(r) for r in factors) + f" -> [{','.join(kept)}]"
    then = tuple((n, roles[n].op or "sum") for n in kept
                 if n in roles and roles[n].role == "projected" and roles[n].op != "sum")
    if steps:
        note = "; ".join(x for x in (note, f"each of the {steps[1]} steps over "
                                           f"`{steps[0]}`, that index held") if x)
    if any(e is None for s in shapes for e in s):
        return Contraction(readable, spec.letters, tuple(r.name for r in factors), (), (),
                           None, None, None, note or "some extents are unknown until run time",
                           first, then)
    costed = _costed(readable, spec.letters, factors, tuple(shapes), note)
    flops = costed.flops
    if then and flops is not None:  # one comparison (or addition) per element reduced
        flops += _output_size(kept, operands, shapes)
    count = steps[1] if steps else 1
    return dataclasses.replace(
        costed, first_offset=first, then_project=then,
        flops=None if flops is None else flops * count,
        naive_flops=None if costed.naive_flops is None else costed.naive_flops * count,
        gathered=sum(op.size or 0 for _, op in read if op.gathered))


def _output_size(kept: tuple[str, ...], operands: list[list[str]], shapes) -> int:
    extent = {}
    for names, shape in zip(operands, shapes):
        extent.update(zip(names, shape))
    size = 1
    for name in kept:
        size *= extent.get(name, 1)
    return size


def _costed(readable: str, letter_eq: str, factors: list[ir.Ref], shapes, note: str
            ) -> Contraction:
    try:
        costed = contraction_path(letter_eq, shapes)
    except (ValueError, TypeError) as err:
        return Contraction(readable, letter_eq, tuple(r.name for r in factors), (), (),
                           None, None, None, f"not costed: {err}")
    return Contraction(readable, letter_eq, tuple(r.name for r in factors), costed.path,
                       costed.steps, costed.naive_flops, costed.flops,
                       costed.largest_intermediate, note)


def _reference_text(ref: ir.Ref) -> str:
    """`X[n,x+dx,i]`: a reference as the einsum line shows it."""
    texts = [str(i.value) if isinstance(i, ir.IndexConst) else _index_text(i)
             for i in ref.indices or ()]
    return f"{ref.name}[{','.join(texts)}]"


def _index_text(index: ir.Index) -> str:
    if isinstance(index, ir.IndexVar):
        return index.name
    if isinstance(index, ir.IndexShift):
        text = "+".join(v.name for v in index.terms)
        return text + (f"{index.offset:+d}" if index.offset else "")
    if isinstance(index, ir.IndexDiv):
        return f"{index.var.name}/{index.divisor}"
    if isinstance(index, ir.IndexSlice):
        return f"{'' if index.start is None else index.start}:" \
               f"{'' if index.stop is None else index.stop}"
    if isinstance(index, ir.IndexVirtual):
        return "*" + _index_text(index.inner)
    return str(index.value)


def _all_inside(tree: _StatementTree, role: IndexRole, factors: list[ir.Ref],
                term: ir.Expr | None) -> bool:
    """Whether every occurrence of a projected index in the product's additive term
    lies in the product's factors: then the sum can be taken in this product
    (LANGUAGE.md §5: inside a scope, projection is per additive term)."""
    if term is None:
        return False
    spans = [f.span for f in factors]
    return all(any(s.start <= o.start and o.end <= s.end for s in spans)
               for o in tree.occurrences_within(role.name, term.span))


def _start(span: Span) -> int:
    return span.start


def _within(inner, outer) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end


def _enclosing_term(tree: _StatementTree, factors: list[ir.Ref], roles: dict[str, IndexRole]
                    ) -> dict[str, ir.Expr | None]:
    """Per projected index: the additive term of its scope that holds this product, or
    None when the sum cannot be taken inside the product: the product lies in a deeper
    scope (a call argument, a reduce), under a nonlinear node (a power, a divisor), or
    is multiplied by another factor that mentions the index."""
    path = tree.path_to(factors[0])
    product = path[-2] if len(path) >= 2 and isinstance(path[-2], ir.Product) else None
    out: dict[str, ir.Expr | None] = {}
    for name, role in roles.items():
        scope = role.scope
        if role.role != "projected" or scope is None:
            continue
        term: ir.Expr | None = None
        crossed_product = False
        for k, node in enumerate(path[:-1]):
            if not _within(node.span, scope.span):
                continue
            if term is None:
                term = node  # the scope's root expression
            if node is product:
                break
            child = path[k + 1]
            if isinstance(node, ir.Reduce) and scope.kind == "reduce" and \
                    node.span == scope.span:
                term = child  # the reduce's body (its named indices are not reads)
            elif isinstance(node, ir.Sum) and not crossed_product:
                term = child  # projection is per additive term
            elif isinstance(node, ir.Neg):
                continue
            elif isinstance(node, ir.Product) and all(
                    op != "/" for f, op in zip(node.factors, node.ops) if f is child) and \
                    not any(_mentions(f, name) for f in node.factors if f is not child):
                crossed_product = True  # sum_j F(j) G = G sum_j F(j)
            else:
                term = None  # a nested scope, or not linear in the product
                break
        out[name] = term
    return out


def _mentions(expr: ir.Expr, name: str) -> bool:
    for node in ir.walk(expr):
        if isinstance(node, ir.Ref):
            if node.indices is None and node.name == name:
                return True
            if any(v.name == name for i in node.indices or () for v in ir.index_vars(i)):
                return True
        elif isinstance(node, ir.Reduce) and any(v.name == name for v in node.indices):
            return True
    return False


def _slices(ref: ir.Ref) -> list[ir.IndexSlice]:
    return [i for i in ref.indices or () if isinstance(i, ir.IndexSlice)]


def _slice_summed(tree: _StatementTree, factors: list[ir.Ref], ordinal: int) -> bool:
    """A slice is an anonymous variable matched by ordinal (docs/language.md): the k-th
    slice of the RHS with no k-th slice on the LHS is projected.  It is summed in this
    product when every reference holding a k-th slice is one of its factors, and the
    scope that holds them sums (a call argument, or an RHS with `=`/`+=`)."""
    stmt = tree.stmt
    if len(_slices(stmt.lhs)) > ordinal:
        return False
    if not all(any(r is f for f in factors) for r in tree.slice_holders(ordinal)):
        return False
    path = tree.path_to(factors[0])
    if any(isinstance(n, ir.Reduce) for n in path):
        return False
    return any(isinstance(n, ir.Call) for n in path[:-1]) or stmt.op in ("=", "+=")
