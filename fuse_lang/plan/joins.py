"""What the run computes for one equation's right-hand side, found from shapes
alone: each einsum, each elementwise product and each reduction, in the order
and with the operand axes run/interpret/evaluate.py has.

The walk follows the evaluator step by step (LANGUAGE.md §4-5): a scope (the
right-hand side, a call argument, a `reduce` body) projects its indices per
additive term when they are summed, on the terms' total otherwise; a term that
is a product projected by sum only is one einsum over its factors' values
(`product_factors`: a parenthesised product and a negation are spliced in, as
the run splices them), whatever the factors are — references, calls
(`W2[i,h] relu(...)`), divisors (`A[i,j] / B[j]`, joined as 1/B); a
negated term is the negation of its einsum; any other term is evaluated
elementwise (a product of two values that both have axes is an elementwise
product, broadcast by name) and then reduced (one reduction per projection
operator).  Each value's axes are in the run's order, so the einsum strings
are those the backend is asked for.
"""
from __future__ import annotations

from typing import Collection

from ..check import Analysis
from ..check.symbols import scope_openers
from ..front import ir
from ..speed.fastinit import frozen_dataclass
from .contraction import einsum_spec

_SAME_AXES = frozenset(("relu", "tanh", "exp", "log", "sqrt", "abs", "sin", "cos", "step",
                        "gelu", "gelu_tanh", "not", "softmax", "log_softmax",
                        "lnorm"))
_SCALARS = frozenset(("const", "linear", "exponential", "cosine"))


@frozen_dataclass
class Join:
    """One operation of the run: an einsum over `factors`, an elementwise product of
    them, or a reduction of the value of `factors[0]`."""

    kind: str  # "einsum" | "elementwise" | "reduce"
    factors: tuple[ir.Expr, ...]
    ops: tuple[str, ...]  # per factor: "/" for a divisor, else "*"
    axes: tuple[tuple[str, ...], ...]  # each factor's value's axes, in the run's order
    summed: tuple[str, ...] = ()  # einsum: the names it sums away
    # elementwise: the axes of each broadcast product's result; reduce: the axes of
    # each reduction's input, with (operator, names) reduced
    combines: tuple[tuple[str, ...], ...] = ()
    reduced: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # einsum: the product has factors without axes (numbers, scalars: a scaling of
    # its result, no letters), and the run negates the result (`-(A B)`, `-A B`)
    scaled: bool = False
    negated: bool = False


def product_factors(expr: ir.Product) -> tuple[list[tuple[ir.Expr, str]], bool]:
    """A product's factors with their operators ("*" or "/"), a parenthesised
    product under `*` spliced in (`(A B) E` is A B E) and each negation taken
    out (`-(A B) E` is A B E negated); and whether the product is negated."""
    out: list[tuple[ir.Expr, str]] = []
    negative = False
    stack: list[tuple[ir.Expr, str]] = list(zip(expr.factors, ("/" if o == "/" else "*"
                                                               for o in expr.ops)))[::-1]
    while stack:
        factor, op = stack.pop()
        while type(factor) is ir.Neg:
            negative = not negative
            factor = factor.operand  # type: ignore[attr-defined]
        if type(factor) is ir.Product and op == "*":
            stack += list(zip(factor.factors, ("/" if o == "/" else "*"  # type: ignore
                                               for o in factor.ops)))[::-1]  # type: ignore
            continue
        out.append((factor, op))
    return out, negative


class RunWalk:
    """Walks statement `k`'s right-hand side as the run evaluates it, collecting
    its `joins`.  `fixed`: indices held at one position (a recurrence's step);
    `sparse`: tensors held as tuples (a product reading one is a join even with
    nothing summed: run/sparse/join.py); `operand_axes(ref)`: a reference's axes
    as the run reads it (plan.operands)."""

    def __init__(self, analysis: Analysis, k: int, stmt: ir.Equation,
                 operand_axes, fixed: Collection[str] = (), sparse: Collection[str] = ()):
        self.analysis = analysis
        self.k = k
        self.stmt = stmt
        self.operand_axes = operand_axes
        self.fixed = fixed
        self.sparse = sparse
        self.joins: list[Join] = []
        self.negated = False  # inside a term's negation (`-(A B)`): its einsum is negated
        self.lhs_order = tuple(v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i))
        self.scope_of: dict[int, int] = scope_openers(stmt)
        self.var_extents = analysis.var_extents  # (read once: a deferred field)
        self.projected_at: dict[int, dict[str, str]] = {}
        for role in analysis.roles.get(k, ()):
            if role.role == "projected" and role.scope is not None:
                self.projected_at.setdefault(role.scope.id, {})[role.name] = role.op or "sum"

    def run(self) -> list[Join]:
        if self.stmt.rhs is not None and not isinstance(self.stmt.rhs, ir.String):
            self.scope(self.stmt.rhs, 0)
        return self.joins

    # ------------------------------------------------------------ scopes
    def scope(self, expr: ir.Expr, sid: int) -> tuple[str, ...]:
        negated, self.negated = self.negated, False  # (a term's sign is not its arguments')
        try:
            return self._scope(expr, sid)
        finally:
            self.negated = negated

    def _scope(self, expr: ir.Expr, sid: int) -> tuple[str, ...]:
        projected = self.projected_at.get(sid, {})
        if type(expr) is ir.Sum:
            summed = {n: op for n, op in projected.items() if op == "sum"}
            other = {n: op for n, op in projected.items() if op != "sum"}
            axes: tuple[str, ...] | None = None
            for term, sign in zip(expr.terms, expr.signs):  # type: ignore[attr-defined]
                self.negated = sign == "-"  # a subtracted term's einsum: negated
                value = self.term(term, summed, term)
                axes = value if axes is None else _union(axes, value)
            self.negated = False
            return self.project(axes or (), other, expr)
        return self.term(expr, projected, expr)

    def term(self, expr: ir.Expr, projected: dict[str, str], whole: ir.Expr
             ) -> tuple[str, ...]:
        if not projected:
            if type(expr) is ir.Product and self._joins_sparse(expr):
                found = self.einsum_product(expr, projected)
                if found is not None:
                    return found
            return self.eval(expr)
        all_sum = all(op == "sum" for op in projected.values())
        if type(expr) is ir.Neg and all_sum:  # -(A B): the negation of the einsum
            self.negated = not self.negated
            try:
                return self.term(expr.operand, projected, whole)  # type: ignore[attr-defined]
            finally:
                self.negated = not self.negated
        if type(expr) is ir.Product and all_sum:
            found = self.einsum_product(expr, projected)
            if found is not None:
                return found
        return self.project(self.eval(expr), projected, whole)

    def project(self, axes: tuple[str, ...], projected: dict[str, str], expr: ir.Expr
                ) -> tuple[str, ...]:
        """The run's `project_all`: one reduction per operator, in order."""
        by_op: dict[str, list[str]] = {}
        for name, op in projected.items():
            if name in axes:
                by_op.setdefault(op, []).append(name)
        if not by_op:
            return axes
        inputs, reduced = [], []
        for op, names in by_op.items():
            inputs.append(axes)
            reduced.append((op, tuple(names)))
            axes = tuple(a for a in axes if a not in names)
        self.joins.append(Join("reduce", (expr,), ("*",), (inputs[0],),
                               combines=tuple(inputs), reduced=tuple(reduced)))
        return axes

    def _joins_sparse(self, expr: ir.Product) -> bool:
        if not self.sparse:
            return False
        for factor in expr.factors:
            if type(factor) is ir.Call and factor.name == "not" and factor.args:
                factor = factor.args[0]
            if type(factor) is ir.Ref and factor.name in self.sparse:
                return True
        return False

    def einsum_product(self, expr: ir.Product, projected: dict[str, str]
                       ) -> tuple[str, ...] | None:
        factors, negative = product_factors(expr)
        operands = []
        scaled = False
        for factor, op in factors:
            axes = self.eval(factor)
            if axes:
                operands.append((factor, op, axes))
            else:
                scaled = True
        if not operands:
            return None
        if len(operands) == 1 and not any(a in projected for a in operands[0][2]):
            return operands[0][2]  # a scaling, no einsum
        spec = einsum_spec([axes for _, _, axes in operands], projected, self.lhs_order)
        if spec is None:
            return None
        self.joins.append(Join("einsum", tuple(f for f, _, _ in operands),
                               tuple(op for _, op, _ in operands),
                               tuple(a for _, _, a in operands),
                               tuple(n for n in projected if any(n in a for *_, a in operands)),
                               scaled=scaled, negated=negative != self.negated))
        return spec.kept

    # ------------------------------------------------------- expressions
    def eval(self, expr: ir.Expr) -> tuple[str, ...]:
        kind = type(expr)
        if kind is ir.Ref:
            return self.ref(expr)  # type: ignore[arg-type]
        if kind is ir.Call:
            return self.call(expr)  # type: ignore[arg-type]
        if kind is ir.Neg:
            return self.eval(expr.operand)  # type: ignore[attr-defined]
        if kind is ir.Sum:
            axes: tuple[str, ...] = ()
            for term in expr.terms:  # type: ignore[attr-defined]
                axes = _union(axes, self.eval(term))
            return axes
        if kind is ir.Product:
            return self.elementwise(expr)  # type: ignore[arg-type]
        if kind is ir.Power:
            return _union(self.eval(expr.base), self.eval(expr.exponent))  # type: ignore
        if kind is ir.Reduce:
            return self.scope(expr.body, self.scope_of[id(expr.body)])  # type: ignore
        return ()

    def ref(self, ref: ir.Ref) -> tuple[str, ...]:
        if ref.indices is None:
            if ref.name in self.fixed or (self.k, ref.name) not in self.var_extents:
                return ()  # a scalar tensor, a symbol constant, a step held
            return (ref.name,)  # an index's value
        return self.operand_axes(ref)

    def elementwise(self, expr: ir.Product) -> tuple[str, ...]:
        """The run's dense product: left to right, each step broadcast by name."""
        axes = self.eval(expr.factors[0])
        values, combines = [axes], []
        for factor in expr.factors[1:]:
            value = self.eval(factor)
            if axes and value:
                combines.append(_union(axes, value))
            values.append(value)
            axes = _union(axes, value)
        if combines:
            self.joins.append(Join("elementwise", tuple(expr.factors),
                                   tuple("/" if o == "/" else "*" for o in expr.ops),
                                   tuple(values), combines=tuple(combines)))
        return axes

    def call(self, call: ir.Call) -> tuple[str, ...]:
        name = call.name
        if name in _SCALARS:
            if name == "const":
                return ()  # (its axes are the LHS's; it joins nothing)
            return ()
        if name == "causal_mask":
            return self.lhs_order[-2:] if len(self.lhs_order) >= 2 else ()
        if name in ("even", "odd"):
            if not call.args:  # (`even()` is `argument-count`; its plan is still made)
                return ()
            var = call.args[0]
            return () if not isinstance(var, ir.Ref) or var.name in self.fixed else (var.name,)
        args = [self.scope(a, self.scope_of[id(a)]) for a in call.args]
        if name == "sig" and any(kw.name == "T" for kw in call.kwargs):
            args.append(self.scope(call.kwargs[0].value, self.scope_of[id(call.kwargs[0].value)]))
        if not args:
            return ()
        if name in _SAME_AXES:
            return args[0]
        if name == "concat":
            axis = next((kw.value.name for kw in call.kwargs if kw.name == "axis"
                         and isinstance(kw.value, ir.Ref)), None)
            others: tuple[str, ...] = ()
            for a in args:
                others = _union(others, tuple(n for n in a if n != axis))
            return others + ((axis,) if axis else ())
        if name in ("cross_entropy", "gather"):  # the axis is the call's own: gone
            axis = next((kw.value.name for kw in call.kwargs if kw.name == "axis"
                         and isinstance(kw.value, ir.Ref)), None)
            if name == "gather" and len(args) > 1:  # (run/interpret/lookups.gather_axes'
                # order; one argument is `argument-count`, and its plan is still made)
                shared = tuple(a for a in args[0] if a != axis and a in args[1])
                return shared + tuple(a for a in args[1] if a not in args[0]) + \
                    tuple(a for a in args[0] if a != axis and a not in args[1])
            return tuple(a for a in args[0] if a != axis)
        if name == "topk":
            axis = self.lhs_order[-1] if self.lhs_order else None
            return tuple(a for a in args[0] if a != axis) + \
                ((axis,) if axis in args[0] else ())
        axes: tuple[str, ...] = ()
        for a in args:  # comparisons, pow, max, min, sig(x, T): broadcast by name
            axes = _union(axes, a)
        return axes


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """`labelled.combine`'s axes: the same, or a scalar's partner's, or the union."""
    if a == b or not b:
        return a
    if not a:
        return b
    return a + tuple(n for n in b if n not in a)
