"""The reference interpreter: one equation's right-hand side -> its contribution
to the left-hand side tensor (LANGUAGE.md §3-6, §10).

Values are LArrays (axes named by index variables).  Each projection scope
(the RHS, each call argument, each `reduce` body) projects the indices whose
innermost common scope it is, per additive term; a product of references
projected by sum is one einsum with a planned, cached contraction path.
Array operations go through the backend object, so torch and jax run this
same code.

The Evaluator's parts live beside it, one concern each: statement.py (what a
statement needs, once per analysis; constant folding), references.py (reading
`T[...]`), builtin_calls.py (the builtins), lhs.py (writing the left-hand side).
"""
from __future__ import annotations

import operator
from typing import Any

from ...check import Analysis
from ...check.value_tables import value_array
from ...front import ir
from ...front.builtins import COMPARISONS
from ...plan.contraction import einsum_spec
from ...plan.joins import product_factors
from ..backends.base import Backend
from ..sparse.value import is_sparse
from .builtin_calls import BuiltinCalls
from .labelled import LArray, combine, project
from .lhs import equation_op, write_lhs
from .references import ReferenceReading
from .statement import ConstantFolding, EvaluationError, StatementInfo, statement_info

__all__ = ["ConstantFolding", "EvaluationError", "Evaluator", "StatementInfo", "equation_op",
           "statement_info", "write_lhs"]

_NONE: dict[str, str] = {}  # no projections (shared, never written)
# what is worth folding: nodes that compute (a reference or a number is a lookup)
_FOLDABLE = (ir.Sum, ir.Product, ir.Neg, ir.Power, ir.Call)


class Evaluator(ReferenceReading, BuiltinCalls):
    """Evaluates expressions of one statement against the current tensor values."""

    def __init__(self, backend: Backend, analysis: Analysis, info: StatementInfo,
                 values: dict[str, Any], fixed: dict[str, int] | None = None,
                 overrides: dict[int, Any] | None = None,
                 folded: ConstantFolding | None = None) -> None:
        self.backend = backend
        self.analysis = analysis
        self.info = info
        self.values = values
        self.folded = folded
        self.fixed = fixed or {}  # index -> position, for sequential (recurrent) evaluation
        self.overrides = overrides or {}  # id(Ref) -> value read instead (semi-naive deltas)
        # an index whose extent differs inside a call argument (topk's and concat's
        # axis has the argument's own extent there)
        self.local_extents: dict[str, int] = {}

    # ------------------------------------------------------------ extents
    def extent(self, name: str) -> int:
        if name in self.local_extents:
            return self.local_extents[name]
        ext = self.info.extents.get(name)
        if ext is None:
            raise EvaluationError(f"the extent of index `{name}` is not known; declare it with "
                                  f"`axis {name} = N` or give a source that has it")
        return ext

    def index_values(self, name: str) -> Any:
        """What index `name` stands for at each of its positions (a NumPy array):
        its column's values, or its positions on a positional axis."""
        return value_array(self.info.values.get(name), self.extent(name))

    # -------------------------------------------------------------- scopes
    def scope(self, expr: ir.Expr, scope_id: int) -> LArray:
        """Evaluate a scope's expression, projecting its indices per additive term."""
        projected = self.info.projected_at.get(scope_id, _NONE)
        if type(expr) is ir.Sum:
            # only a sum splits over the terms; max/min/avg project the terms' total
            # (max_j (A[j] + B[j]), as in Viterbi), which still counts a term that
            # lacks the index once
            summed = {n: op for n, op in projected.items() if op == "sum"}
            other = {n: op for n, op in projected.items() if op != "sum"}
            result = None
            for sign, term in zip(expr.signs, expr.terms):
                value = self.term(term, summed)
                if result is not None:  # `a - b` in one pass, not -b then a + (-b)
                    result = combine(self.backend, operator.sub if sign == "-" else
                                     operator.add, result, value)
                elif sign == "-":
                    result = LArray(-value.data, value.axes)
                else:
                    result = value
            assert result is not None
            return self.project_all(result, other)
        return self.term(expr, projected)

    def term(self, expr: ir.Expr, projected: dict[str, str]) -> LArray:
        if not projected:
            if type(expr) is ir.Product and self._joins_sparse(expr):  # a join of tuples,
                fast = self.einsum_product(expr, projected)  # not a broadcast product
                if fast is not None:
                    return fast
            return self.eval(expr)
        if type(expr) is ir.Neg and all(op == "sum" for op in projected.values()):
            # -(A B) summed: the negation of the einsum, not a broadcast product
            value = self.term(expr.operand, projected)
            return LArray(-value.data, value.axes)
        if type(expr) is ir.Product:
            fast = self.einsum_product(expr, projected)
            if fast is not None:
                return fast
            # block_size set: a large join before a max/min runs in blocks (run.interpret.blocked)
            if self.backend.blocks_terms:
                fast = self.backend.blocked_term(self, expr, projected)
                if fast is not None:
                    return fast
        value = self.eval(expr)
        return self.project_all(value, projected)

    def _joins_sparse(self, expr: ir.Product) -> bool:
        """A factor reads a sparse tensor (or negates one): the product is a join
        (on a backend that joins tuples: NumPy's run/sparse/join.py)."""
        if not self.backend.sparse_relations:
            return False
        for factor in expr.factors:
            if type(factor) is ir.Call and factor.name == "not" and factor.args:
                factor = factor.args[0]
            factor = self.complement_operand(factor)  # 1 - R(...): `not R(...)`
            if type(factor) is ir.Ref and factor.name in self.values and \
                    is_sparse(self.overrides.get(id(factor), self.values[factor.name])):
                return True
        return False

    def project_all(self, value: LArray, projected: dict[str, str]) -> LArray:
        if not projected:
            return value
        by_op: dict[str, list[str]] = {}
        for name, op in projected.items():
            if name in value.axes:
                by_op.setdefault(op, []).append(name)
        for op, names in by_op.items():
            value = project(self.backend, value, names, op)
        return value

    def einsum_product(self, expr: ir.Product, projected: dict[str, str]) -> LArray | None:
        """A product projected by sum: one planned einsum over its factors' values
        (plan.joins.product_factors: a parenthesised product and a negation spliced
        in).  Scalar factors are applied to the (smaller) result instead of joining."""
        if any(op != "sum" for op in projected.values()):
            return None
        operands = []
        factors, negative = product_factors(expr)  # (A B) E is A B E; -(A B) E negated
        scale = -1.0 if negative else None
        joins_tuples = None  # whether a comparison filters the join's tuples (asked once)
        for factor, op in factors:
            value = None
            if type(factor) is ir.Call and factor.name in COMPARISONS and op != "/":
                if joins_tuples is None:
                    joins_tuples = self._joins_sparse(expr)
                if joins_tuples:
                    value = self.comparison_filter(factor)
            if value is None:
                value = self.factor(factor)
            if not value.axes:
                factor_value = 1 / value.data if op == "/" else value.data
                scale = factor_value if scale is None else scale * factor_value
                continue
            if op == "/":
                value = LArray(1 / value.data, value.axes)
            operands.append(value)
        if not operands:
            return None
        if len(operands) == 1 and not any(a in projected for a in operands[0].axes):
            # nothing to join or sum (`1e9 * (1 - Mask[p,p'])` in a sum over dk): a
            # scaling, not an einsum (the planner prints none: plan.planner)
            value = operands[0]
            if scale is None:
                return value
            data = self.backend.scale_fresh(value.data, scale) if value.fresh \
                else value.data * scale
            return LArray(data, value.axes, True)
        key = (id(expr), tuple(v.axes for v in operands))
        plan = self.info.einsum_specs.get(key)
        if plan is None:
            plan = self._einsum_plan(operands, projected)
            self.info.einsum_specs[key] = plan
        if plan is False:
            return None
        spec, keep = plan
        join = self.backend.count_einsum if self.info.boolean else self.backend.einsum
        result = join(spec, *(v.data for v in operands))
        if scale is not None:
            result = self.backend.scale_fresh(result, scale)
        return LArray(result, keep, fresh=True)

    def _einsum_plan(self, operands: list[LArray], projected: dict[str, str]):
        """The product's einsum from the one planner (plan.contraction), or False
        when it cannot be one (a repeated axis, more indices than letters)."""
        if any(len(set(v.axes)) != len(v.axes) for v in operands):
            return False
        spec = einsum_spec([v.axes for v in operands], projected, self.info.lhs_order)
        return False if spec is None else spec

    # ---------------------------------------------------------- expressions
    def eval(self, expr: ir.Expr) -> LArray:
        folded = self.folded
        if folded is not None and type(expr) in _FOLDABLE and not self.local_extents \
                and expr is not self.info.stmt.rhs:  # type: ignore[union-attr]
            value = folded.values.get(id(expr))
            if value is not None:
                return value
            if folded.is_constant(expr):
                value = self._eval(expr)
                value = LArray(value.data, value.axes)  # shared: never updated in place
                folded.values[id(expr)] = value
                return value
        return self._eval(expr)

    def _eval(self, expr: ir.Expr) -> LArray:
        backend = self.backend
        kind = type(expr)
        if kind is ir.Ref:
            return self.ref(expr)  # type: ignore[arg-type]
        if kind is ir.Call:
            return self.call(expr)  # type: ignore[arg-type]
        if isinstance(expr, ir.Number):
            return LArray(backend.asarray(expr.value), ())
        if isinstance(expr, ir.Neg):
            value = self.eval(expr.operand)
            return LArray(-value.data, value.axes)
        if isinstance(expr, ir.Sum):
            result = None
            for sign, term in zip(expr.signs, expr.terms):
                value = self.eval(term)
                if result is not None:  # `a - b` in one pass, not -b then a + (-b)
                    result = combine(backend, operator.sub if sign == "-" else operator.add,
                                     result, value)
                elif sign == "-":
                    result = LArray(-value.data, value.axes)
                else:
                    result = value
            return result  # type: ignore[return-value]
        if isinstance(expr, ir.Product):
            result = self.eval(expr.factors[0])
            for factor, op in zip(expr.factors[1:], expr.ops[1:]):
                value = self.eval(factor)
                if op == "/":
                    result = combine(backend, operator.truediv, result, value)
                else:
                    result = combine(backend, operator.mul, result, value)
            return result
        if isinstance(expr, ir.Power):
            return combine(backend, backend.power, self.eval(expr.base), self.eval(expr.exponent))
        if isinstance(expr, ir.Call):
            return self.call(expr)
        if isinstance(expr, ir.Reduce):
            return self.scope(expr.body, self.info.scope_of[id(expr.body)])
        raise EvaluationError(f"cannot evaluate {type(expr).__name__} here")
