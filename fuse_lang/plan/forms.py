"""The planner's walk of an equation (plan.joins with plan.operands), made once
per form of equation.

A long program repeats a few forms of equation under other tensor names
(`H3[p,e] = relu(W[d,e] N2[p,d] + 0.5)` has the form of `H1[p,e] = relu(W[d,e]
N0[p,d] + 0.5)`), and the walk of a form gives the same joins and operands,
node for node.  `WalkMemo.walk` keys each equation by its form and makes the
walk of a form once per `plan_program`; the joins of another equation of that
form are the first one's, with its own nodes put in.

The form holds everything the walk reads, so that two equations of one form
cannot differ in what it finds:
- the statement's nodes in walk order, without spans: kinds, operators, call
  and keyword names, numbers' texts, every index (names, offsets, constants,
  slices); the name of a reference with indices as its slot (the first
  tensor the form reads is slot 0, ...), with whether that tensor is held
  sparse and, where the reference slices, its axes' extents; any other name
  (a bare name: an index's value, a scalar tensor, a symbol) as itself;
- the statement's projected indices in order (scope number, name, operator),
  the extent of every index of the statement, and the indices held at one
  position (a recurrence's step).
A statement whose nodes share an object (the walk keys its operands by node)
or hold a node kind the form does not know is walked directly, every time.
"""
from __future__ import annotations

from typing import Any, Collection

from ..check import Analysis
from ..front import ir
from .joins import Join, RunWalk
from .operands import Operand, reference_operand

# a walk that could not be put in terms of the form's nodes (walked directly)
_UNCACHED = object()


def walk_joins(analysis: Analysis, k: int, stmt: ir.Equation, fixed: tuple[str, ...],
               sparse: Collection[str]) -> tuple[list[Join], dict[int, Operand]]:
    """Equation `k`'s joins as the run computes them, and each reference's operand
    (by `id` of the reference), walked now."""
    read: dict[int, Operand] = {}

    def axes_of(ref: ir.Ref) -> tuple[str, ...]:
        operand = read[id(ref)] = reference_operand(analysis, k, ref, fixed)
        return operand.axes

    return RunWalk(analysis, k, stmt, axes_of, fixed, sparse).run(), read


class WalkMemo:
    """The walks of one program's equations (one analysis, one set of sparse
    tensors), each form's made once."""

    def __init__(self, analysis: Analysis, sparse: Collection[str]) -> None:
        self.analysis = analysis
        self.sparse = frozenset(sparse)
        self._known: dict[tuple, Any] = {}
        self._extents: dict[int, tuple[tuple[str, int | None], ...]] | None = None
        # the planner's findings that depend on a form alone (its joins' einsum
        # specs, paths and costs: plan.planner), by (form key, anything more)
        self.costs: dict[tuple, Any] = {}
        # a planned equation of each form, to relabel (plan.relabel), by (key, steps)
        self.plans: dict[tuple, Any] = {}
        self._last: tuple | None = None  # (k, fixed, _form's answer): the last asked
        # each recursive tensor's recurrence and steps (plan.planner: _step_by_step)
        self.recurrences: dict[str, Any] = {}

    def form_of(self, k: int, stmt: ir.Equation, fixed: tuple[str, ...]
                ) -> tuple[tuple, list[ir.Expr]] | None:
        """The key of equation `k`'s form and its right-hand side's nodes in walk
        order (None: it is walked directly); kept for the walk of the same equation."""
        last = self._last
        if last is not None and last[0] == k and last[1] == fixed:
            return last[2]
        form = self._form(k, stmt, fixed)
        self._last = (k, fixed, form)
        return form

    def walk(self, k: int, stmt: ir.Equation, fixed: tuple[str, ...]
             ) -> tuple[list[Join], dict[int, Operand], list[ir.Expr] | None, tuple | None]:
        """walk_joins of equation `k`, from its form's walk where one was made; the
        right-hand side's nodes in walk order (`ir.walk`'s), where the form was
        found (None: the equation was walked directly); and the form's key where
        the joins are the form's (None: walked directly, so only this equation's)."""
        form = self.form_of(k, stmt, fixed)
        if form is None:
            return (*walk_joins(self.analysis, k, stmt, fixed, self.sparse), None, None)
        key, nodes = form
        template = self._known.get(key)
        if template is None:
            joins, read = walk_joins(self.analysis, k, stmt, fixed, self.sparse)
            template = self._known[key] = _template(joins, read, nodes)
            return joins, read, nodes, (None if template is _UNCACHED else key)
        if template is _UNCACHED:
            return (*walk_joins(self.analysis, k, stmt, fixed, self.sparse), nodes, None)
        return (*_materialised(template, nodes), nodes, key)

    def _extents_of(self, k: int) -> tuple[tuple[str, int | None], ...]:
        """Every index of statement `k` with its extent, by name."""
        if self._extents is None:  # (every statement's at once, each sorted once)
            grouped: dict[int, list[tuple[str, int | None]]] = {}
            for (statement, name), (extent, _domain) in self.analysis.var_extents.items():
                grouped.setdefault(statement, []).append((name, extent))
            self._extents = {k: tuple(sorted(pairs)) for k, pairs in grouped.items()}
        return self._extents.get(k, ())

    def _form(self, k: int, stmt: ir.Equation, fixed: tuple[str, ...]
              ) -> tuple[tuple, list[ir.Expr]] | None:
        """The key of equation `k`'s form, and its nodes in walk order; None where
        the walk is made directly (see the module)."""
        nodes: list[ir.Expr] = []
        tokens: list[Any] = [stmt.op, _index_forms(stmt.lhs.indices)]
        slots: dict[str, int] = {}
        tensors = self.analysis.tensors
        sparse = self.sparse
        rhs = stmt.rhs
        stack: list[ir.Expr] = [] if rhs is None else [rhs]
        # (one loop, each common node's token made in it, its children pushed without
        # a call: every equation of a long program is keyed here)
        pop, add_node, add = stack.pop, nodes.append, tokens.append
        Ref, Product, Sum, Number, IndexVar = ir.Ref, ir.Product, ir.Sum, ir.Number, ir.IndexVar
        while stack:
            node = pop()
            add_node(node)
            kind = type(node)
            if kind is Ref:
                indices = node.indices  # type: ignore[union-attr]
                name = node.name  # type: ignore[union-attr]
                if indices is None:  # a bare name: the walk reads the name itself
                    add(("ref", name, None, node.paren))  # type: ignore[union-attr]
                    continue
                slot = slots.get(name)
                if slot is None:
                    slot = slots[name] = len(slots)
                # (_index_forms, inline, noting a slice on the way)
                forms = []
                sliced: Any = None
                for index in indices:
                    if type(index) is IndexVar:
                        forms.append(("var", index.name, index.dotted))
                        continue
                    if type(index) is ir.IndexSlice:
                        sliced = True
                    forms.append(_index_form(index))
                if sliced:
                    info = tensors.get(name)
                    sliced = None if info is None else tuple(a.extent for a in info.axes)
                add(("ref", slot, name in sparse, sliced, tuple(forms),
                     node.paren))  # type: ignore[union-attr]
                continue
            if kind is Product:  # (_token and ir.children of the common kinds, inline)
                factors = node.factors  # type: ignore[union-attr]
                add(("product", node.ops, len(factors)))  # type: ignore[union-attr]
                stack += reversed(factors)
                continue
            if kind is Sum:
                terms = node.terms  # type: ignore[union-attr]
                add(("sum", node.signs, len(terms)))  # type: ignore[union-attr]
                stack += reversed(terms)
                continue
            if kind is Number:
                add(("number", node.text))  # type: ignore[union-attr]
                continue
            token = _token(node)
            if token is None:
                return None
            add(token)
            stack += reversed(ir.children(node))
        if len(set(map(id, nodes))) != len(nodes):
            return None  # a node met twice (the walk keys its operands by node)
        roles = tuple([(r.scope.id, r.name, r.op) for r in self.analysis.roles.get(k, ())
                       if r.role == "projected" and r.scope is not None])
        return (tuple(tokens), roles, self._extents_of(k), fixed), nodes


def _token(node: ir.Expr) -> tuple | None:
    """A node other than a reference, without its span and its children (which
    follow it in walk order); None for a kind the form does not know."""
    kind = type(node)
    if kind is ir.Number:
        return ("number", node.text)  # type: ignore[attr-defined]
    if kind is ir.Product:
        return ("product", node.ops, len(node.factors))  # type: ignore[attr-defined]
    if kind is ir.Sum:
        return ("sum", node.signs, len(node.terms))  # type: ignore[attr-defined]
    if kind is ir.Call:
        return ("call", node.name, len(node.args),  # type: ignore[attr-defined]
                tuple([kw.name for kw in node.kwargs]))  # type: ignore[attr-defined]
    if kind is ir.Neg:
        return ("neg",)
    if kind is ir.Power:
        return ("power",)
    if kind is ir.Reduce:
        return ("reduce", node.op, _index_forms(node.indices))  # type: ignore[attr-defined]
    if kind is ir.String:
        return ("string", node.value)  # type: ignore[attr-defined]
    if kind is ir.ListLit:
        return ("list", len(node.items))  # type: ignore[attr-defined]
    return None


def _index_forms(indices: tuple | None) -> tuple | None:
    if indices is None:
        return None
    var = ir.IndexVar  # (the common index, made here without a call)
    return tuple([("var", i.name, i.dotted) if type(i) is var else _index_form(i)
                  for i in indices])


def _index_form(index: Any) -> tuple:
    """An index without its spans: its kind and every other field."""
    kind = type(index)
    if kind is ir.IndexVar:
        return ("var", index.name, index.dotted)
    if kind is ir.IndexConst:
        return ("const", type(index.value).__name__, index.value, index.quoted)
    if kind is ir.IndexShift:
        return ("shift", tuple([_index_form(v) for v in index.terms]), index.offset)
    if kind is ir.IndexDiv:
        return ("div", _index_form(index.var), index.divisor)
    if kind is ir.IndexSlice:
        return ("slice", index.start, index.stop)
    if kind is ir.IndexVirtual:
        return ("virtual", _index_form(index.inner))
    return ("other", id(index))  # (unknown: a form of its own)


def _template(joins: list[Join], read: dict[int, Operand], nodes: list[ir.Expr]) -> Any:
    """The walk with each node given by its place in the form's walk order
    (_UNCACHED where a join or an operand is of a node outside it)."""
    place = {id(node): n for n, node in enumerate(nodes)}
    try:
        made = [(j.kind, tuple([place[id(f)] for f in j.factors]), j.ops, j.axes, j.summed,
                 j.combines, j.reduced, j.scaled, j.negated) for j in joins]
        operands = [(place[key], operand) for key, operand in read.items()]
    except KeyError:
        return _UNCACHED
    return made, operands


def _materialised(template: Any, nodes: list[ir.Expr]
                  ) -> tuple[list[Join], dict[int, Operand]]:
    made, operands = template
    joins = [Join(kind, tuple([nodes[n] for n in factors]), ops, axes, summed, combines,
                  reduced, scaled, negated)
             for kind, factors, ops, axes, summed, combines, reduced, scaled, negated in made]
    return joins, {id(nodes[n]): operand for n, operand in operands}
