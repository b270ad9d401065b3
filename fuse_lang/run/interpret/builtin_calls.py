"""The builtins of an expression (LANGUAGE.md §6): elementwise functions,
softmax, log_softmax and lnorm along an axis, cross_entropy, gather,
topk, concat, const and causal_mask."""
from __future__ import annotations

import operator
from typing import Any

from ...check.compared_constants import (
    compared_symbol,
    constant_text,
    symbol_constant,
    symbol_position,
)
from ...check.datalog import complemented
from ...check.value_tables import domain_values, is_numeric
from ...front import ir
from ..sparse.value import is_sparse
from .labelled import LArray, align, combine, union_axes
from .lookups import gather
from .losses import cross_entropy
from .statement import EvaluationError, EvaluatorState

# `a < b` and the other comparisons (front/builtins.py COMPARISONS): an index
# stands for its position, which for an integer column is its value
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


class BuiltinCalls(EvaluatorState):
    """The Evaluator's builtin calls (a mixin of evaluate.Evaluator)."""

    def arg(self, expr: ir.Expr) -> LArray:
        return self.scope(expr, self.info.scope_of[id(expr)])

    def _compared(self, call: ir.Call, operand: ir.Expr) -> LArray:
        """A comparison's operand; a symbol constant (`Ann` in `(x != Ann)`) is its
        position in the other operand's column, -1 where the column lacks it."""
        tensors = self.analysis.tensors
        if not symbol_constant(operand, tensors):
            codes = self._shared_codes(call, operand) if call.name in ("==", "!=") else None
            return self.arg(operand) if codes is None else codes
        found = compared_symbol(call, tensors)
        assert found is not None and isinstance(found[1], ir.Ref)  # (the checker's rule)
        _, domain = self.analysis.var_extents[(self.info.index, found[1].name)]
        symbols = self.analysis.domain_symbols.get(domain, ())
        position = symbol_position(constant_text(operand), symbols)
        return LArray(self.backend.asarray(float(position)), ())

    def _exact_comparison(self, call: ir.Call) -> LArray | None:
        """A comparison of indices' values and numbers (`(v > 16777216)`, `(x < y)`)
        computed on the host in int64 (float64 for float values), the mask then made
        an array of the backend: in the backend's float32 (or fp16, bf16) the values
        16777216 and 16777217 are one number (LANGUAGE.md §14: comparisons compute on
        values, any int64).  None where an operand is anything else."""
        sides = self._exact_sides(call)
        if sides is None:
            return None
        import numpy as np

        axes = union_axes(*sides)
        a, b = (_aligned(side, axes) for side in sides)
        mask = _COMPARE[call.name](a, b)
        return LArray(self.backend.asarray(np.asarray(mask, dtype=np.float64)), axes)

    def _exact_sides(self, call: ir.Call) -> list[LArray] | None:
        """Both operands of a comparison as exact host numbers (NumPy int64 or
        float64, or a Python number) with their axes; None where one is not an
        index or a number, or symbols are compared (`_compared`)."""
        if len(call.args) != 2 or any(symbol_constant(a, self.analysis.tensors)
                                      for a in call.args):
            return None
        if call.name in ("==", "!=") and self._shared_codes(call, call.args[0]) is not None:
            return None
        sides = [self._exact_operand(a) for a in call.args]
        if sides[0] is None or sides[1] is None:
            return None
        return [LArray(data, axes) for data, axes in sides]

    def _exact_operand(self, operand: ir.Expr) -> tuple[Any, tuple[str, ...]] | None:
        """A comparison's operand as exact host numbers and its axes: a number, an
        index (its values, or its position), or a sum or negation of those (`a - b`:
        in int64, as the values are, not in the backend's floats)."""
        if type(operand) is ir.Neg:
            inner = self._exact_operand(operand.operand)
            return None if inner is None else (-inner[0], inner[1])
        if type(operand) is ir.Sum:
            terms = [self._exact_operand(t) for t in operand.terms]
            if any(t is None for t in terms):
                return None
            labelled = [LArray(data, axes) for data, axes in terms]  # type: ignore[misc]
            axes = union_axes(*labelled)
            total: Any = 0
            for term, sign in zip(labelled, operand.signs):
                part = _aligned(term, axes)
                total = total + part if sign == "+" else total - part
            return total, axes
        if type(operand) is ir.Number:
            text = operand.text
            return (int(text), ()) if text.isdigit() else (operand.value, ())
        if type(operand) is not ir.Ref or operand.indices is not None \
                or operand.name in self.values:
            return None
        if operand.name in self.fixed:
            return self.fixed[operand.name], ()
        if (self.info.index, operand.name) not in self.analysis.var_extents:
            return None
        return _exact_values(self.index_values(operand.name),
                             self.info.values.get(operand.name)), (operand.name,)

    def _shared_codes(self, call: ir.Call, operand: ir.Expr) -> LArray | None:
        """`(x != y)` over two domains (numbered apart) that hold symbols: each
        value's place in one table of both domains' values, so equal values
        compare equal (LANGUAGE.md §14); None where positions or values compare."""
        variables = [a for a in call.args if type(a) is ir.Ref and a.indices is None
                     and (self.info.index, a.name) in self.analysis.var_extents]
        if len(variables) != 2 or variables[0].name in self.fixed \
                or variables[1].name in self.fixed:
            return None
        domains = [self.analysis.var_extents[(self.info.index, v.name)][1] for v in variables]
        if domains[0] == domains[1]:
            return None
        held = [domain_values(self.analysis, d) for d in domains]
        if all(is_numeric(values) for values in held):
            return None  # numbers compare as values
        import numpy as np

        table: dict = {}
        codes = []
        for values, domain, v in zip(held, domains, variables):
            extent = self.extent(v.name)
            # a positional domain's position is its value; a position past a domain's
            # values (a token domain an embedding's rows outnumber) equals nothing else
            keys = range(extent) if values is None else \
                [values[p] if p < len(values) else (domain, p) for p in range(extent)]
            codes.append(np.fromiter((table.setdefault(key, len(table)) for key in keys),
                                     dtype=np.int64, count=len(keys)))
        at = 0 if operand is variables[0] else 1
        return LArray(self.backend.asarray(codes[at]), (variables[at].name,))

    def call(self, call: ir.Call) -> LArray:
        backend = self.backend
        name = call.name
        kwargs = {kw.name: kw.value for kw in call.kwargs}
        if name == "const":
            return self._const(call.args[0])
        if name == "causal_mask":
            return self._causal_mask(call)
        if name in ("linear", "exponential", "cosine"):  # a schedule's first step; a run
            # gives its value as an input instead (run.schedules)
            return LArray(backend.asarray(_number(call.args[0], 0.0)), ())
        if name in ("even", "odd"):
            var = call.args[0]
            assert isinstance(var, ir.Ref)
            if var.name in self.fixed:
                parity = self.fixed[var.name] % 2
                return LArray(backend.asarray(float(parity == (0 if name == "even" else 1))), ())
            parity = self.index_values(var.name) % 2 == (0 if name == "even" else 1)
            return LArray(backend.asarray(parity.astype(float)), (var.name,))
        if name in _COMPARE:  # a Boolean factor, broadcast by index name
            compare = _COMPARE[name]
            exact = self._exact_comparison(call)
            if exact is not None:
                return exact
            args = [self._compared(call, a) for a in call.args]
            return combine(backend, lambda a, b: backend.where(compare(a, b), 1.0, 0.0),
                           args[0], args[1])
        args = self._own_axis_args(call) or [self.arg(a) for a in call.args]
        if name in ("relu", "tanh", "exp", "log", "sqrt", "abs", "sin", "cos", "step", "gelu",
                    "gelu_tanh"):
            x = args[0]
            return LArray(self._unary(name, x.data), x.axes)
        if name == "not":  # no tuple matches: 1 - step(x)
            x = args[0]
            if is_sparse(x.data):  # an anti-join where the backend joins tuples (sparse/join.py)
                return LArray(backend.complement(x.data), x.axes)
            return LArray(1 - self._unary("step", x.data), x.axes)
        if name == "sig":
            x = args[0]
            if "T" in kwargs:  # sig(x, T=...), the seeds' spelling of sig(x, T)
                args = [x, self.arg(kwargs["T"])]
            if len(args) == 1:
                return LArray(self._logistic(x.data), x.axes)
            return combine(backend, self._sig_t, x, args[1])
        if name == "pow":
            return combine(backend, backend.power, args[0], args[1])
        if name in ("max", "min"):
            pick = backend.maximum if name == "max" else backend.minimum
            return combine(backend, pick, args[0], args[1])
        if name == "select":  # a where c > 0, else b (`case` and `when` are selects too)
            where = backend.where
            return combine(backend, lambda c, a, b: where(c > 0, a, b), *args)
        if name in ("cross_entropy", "gather"):  # an axis of the first argument consumed
            axis_ref = kwargs["axis"]
            assert isinstance(axis_ref, ir.Ref)
            if name == "gather":
                return gather(backend, args[0], args[1], axis_ref.name)
            return cross_entropy(backend, args[0], args[1], axis_ref.name,
                                 float(_number(kwargs.get("smoothing"), 0.0)))
        if name in ("softmax", "log_softmax", "lnorm"):
            axis = self._norm_axis(kwargs)
            eps = float(_number(kwargs.get("eps"), 1e-5))
            return self._normalise(name, args[0], axis, eps)
        if name == "concat":
            axis_ref = kwargs["axis"]
            assert isinstance(axis_ref, ir.Ref)
            return self._concat(args, axis_ref.name)
        if name == "topk":
            count = kwargs["k"]  # exact from its digits (a float of 10^400 is inf)
            return self._topk(args[0], int(count.text) if isinstance(count, ir.Number)
                              and count.text.isdigit() else int(_number(count, 1)))
        raise EvaluationError(f"`{name}` is not a builtin")

    def factor(self, factor: ir.Expr) -> LArray:
        """A factor of a join.  `1 - R(...)` of a relation and `1 - step(E)` are `not`
        (check.datalog.complemented): where the backend joins tuples and the operand is
        sparse, its complement is kept as the operand's tuples (an anti-join in the
        join, as `not` is) instead of the dense `1 - R` over every cell."""
        if type(factor) is ir.Sum and self.backend.sparse_relations:
            operand = complemented(factor, self._boolean)
            if operand is not None:
                x = self.eval(operand)  # type: ignore[attr-defined]
                if is_sparse(x.data):
                    return LArray(self.backend.complement(x.data), x.axes)
                return LArray(1 - x.data, x.axes)  # (the sum's own value, without a second read)
        return self.eval(factor)  # type: ignore[attr-defined]

    def comparison_filter(self, call: ir.Call) -> LArray | None:
        """A comparison factor of a join of sparse relations (`(x != y)`, `(x < 3)`)
        as the backend's filter on the join's tuples (each side's values compared at
        the tuples' positions, run/sparse/join.py), never a dense mask over its
        indices' cells; None where the backend joins no tuples, or a side reads
        several indices."""
        compare = _COMPARE.get(call.name)
        if compare is None or len(call.args) != 2:
            return None
        # exact numbers where they are (a TupleFilter compares NumPy arrays, as here)
        sides = self._exact_sides(call) or [self._compared(call, a) for a in call.args]
        if any(len(side.axes) > 1 for side in sides):
            return None
        axes = union_axes(*sides)
        if not axes:
            return None
        shape = tuple(next(self.backend.shape(side.data)[0] for side in sides
                           if side.axes == (name,)) for name in axes)
        value = self.backend.tuple_filter(
            compare, [(axes.index(side.axes[0]) if side.axes else None, side.data)
                      for side in sides], shape)
        return None if value is None else LArray(value, axes)

    def complement_operand(self, factor: ir.Expr) -> ir.Expr:
        """The reference whose tuples a factor `1 - R(...)` / `1 - step(R(...))`
        complements (R itself for the join's test), else the factor."""
        operand = complemented(factor, self._boolean) if type(factor) is ir.Sum else None
        if isinstance(operand, ir.Call):
            operand = operand.args[0]
        return factor if operand is None else operand

    def _boolean(self, name: str) -> bool:
        info = self.analysis.tensors.get(name)
        return info is not None and info.boolean

    def _own_axis_args(self, call: ir.Call) -> list[LArray] | None:
        """topk's and concat's arguments, each with the chosen axis at the argument's
        own extent (read off the tensors it indexes there), not the result's."""
        if call.name == "topk":
            axis = self._topk_axis()
        elif call.name == "concat":
            axis_ref = next((kw.value for kw in call.kwargs if kw.name == "axis"), None)
            axis = axis_ref.name if isinstance(axis_ref, ir.Ref) else None
        else:
            return None
        if axis is None:
            return None
        out = []
        for arg in call.args:
            own = self._own_extent(arg, axis)
            saved = dict(self.local_extents)
            if own is not None:
                self.local_extents[axis] = own
            try:
                out.append(self.arg(arg))
            finally:
                self.local_extents = saved
        return out

    def _own_extent(self, expr: ir.Expr, axis: str) -> int | None:
        for node in ir.walk(expr):
            if isinstance(node, ir.Ref) and node.indices and node.name in self.analysis.tensors:
                stored = [a for a in self.analysis.tensors[node.name].axes]
                for pos, index in enumerate(node.indices):
                    if ir.reads_along(index, axis) \
                            and pos < len(stored) and stored[pos].extent is not None:
                        return stored[pos].extent
        return None

    def _topk_axis(self) -> str | None:
        """The last LHS axis, a slice's included (`Y[i,:] = topk(X[i,:], k=2)`)."""
        return self.info.lhs_axes[-1] if self.info.lhs_axes else None

    def _unary(self, name: str, x: Any) -> Any:
        backend = self.backend
        if name == "relu":
            return backend.relu(x)
        if name == "step":
            return backend.step(x)
        if name == "gelu":
            return backend.gelu(x)  # the exact (erf) form, as one fused op where there is one
        if name == "gelu_tanh":
            return backend.gelu_tanh(x)
        return getattr(backend, name)(x)

    def _sig_t(self, x: Any, t: Any) -> Any:
        backend = self.backend
        safe = backend.where(t == 0, 1.0, t)
        return backend.where(t == 0, backend.step(x), self._logistic(x / safe))

    def _logistic(self, z: Any) -> Any:
        """1/(1+e^-z) without overflow: e^-|z| is at most 1 (a cold temperature makes
        |z| large, and e^|z| past float32's range warned and meant nothing).  |z| as
        the branch z >= 0 takes it: through `abs`, whose gradient at 0 is torch's 0,
        the logistic's gradient at z = 0 was 0, not 1/4 (a zero start never moved)."""
        backend = self.backend
        e = backend.exp(-backend.where(z >= 0, z, -z))
        return backend.where(z >= 0, 1 / (1 + e), e / (1 + e))

    def _norm_axis(self, kwargs: dict) -> str:
        axis = kwargs.get("axis")
        if isinstance(axis, ir.Ref):
            if isinstance(self.info.stmt, ir.Equation) and any(
                    isinstance(i, ir.IndexVar) and i.dotted for i in self.info.stmt.lhs.indices
                    or ()):
                return self.info.norm_axis or axis.name
            return axis.name
        if self.info.norm_axis is None:
            raise EvaluationError("softmax and lnorm need an axis: dot one on the left-hand "
                                  "side or pass axis=")
        return self.info.norm_axis

    def _normalise(self, name: str, x: LArray, axis: str, eps: float) -> LArray:
        backend = self.backend
        if axis not in x.axes:
            # constant along the axis: broadcast it first
            x = LArray(backend.broadcast_to(align(backend, x, x.axes + (axis,)),
                                      tuple(backend.shape(x.data)) + (self.extent(axis),)),
                       x.axes + (axis,))
        k = x.axes.index(axis)
        if name == "softmax":
            return LArray(backend.softmax(x.data, k, x.fresh), x.axes, fresh=True)
        if name == "log_softmax":
            return LArray(backend.log_softmax(x.data, k), x.axes, fresh=True)
        return LArray(backend.lnorm(x.data, k, eps), x.axes, fresh=True)

    def _topk(self, x: LArray, k: int) -> LArray:
        """The k largest values of each row along the last LHS axis, in descending
        order (the result's axis has extent k); equal values keep the lower index
        first.  Inside the argument that axis has the argument's own extent."""
        backend = self.backend
        axis = self._topk_axis() or (x.axes[-1] if x.axes else None)
        if axis is None or axis not in x.axes:
            raise EvaluationError(f"topk chooses along the last left-hand-side axis "
                                  f"`{axis}`, which its argument does not have")
        row = backend.shape(x.data)[x.axes.index(axis)]
        k = min(k, row)  # capped at the row, as the seed DSL's topk (warning topk-capped)
        axes = tuple(a for a in x.axes if a != axis) + (axis,)
        return LArray(backend.topk(align(backend, x, axes), k), axes)

    def _concat(self, args: list[LArray], axis: str) -> LArray:
        backend = self.backend
        others = union_axes(*[LArray(None, tuple(a for a in x.axes if a != axis)) for x in args])
        axes = others + (axis,)
        sizes = {}
        for x in args:
            for a, n in zip(x.axes, backend.shape(x.data)):
                if a != axis:
                    sizes[a] = max(sizes.get(a, 1), n)
        parts = []
        for x in args:
            if axis not in x.axes:
                raise EvaluationError(f"every argument of concat needs the axis `{axis}`")
            data = align(backend, x, axes)
            target = tuple(sizes[a] for a in others) + (backend.shape(data)[-1],)
            parts.append(backend.broadcast_to(data, target))
        return LArray(backend.concatenate(parts, axis=-1), axes)

    def _const(self, literal: ir.Expr) -> LArray:
        value = _literal(literal)
        stmt = self.info.stmt
        if isinstance(stmt, ir.Equation) and stmt.rhs is not None and stmt.lhs.indices:
            # `W[0,h] = const([[...]])`: the literal's axis at a constant is that position
            import numpy as np

            array = np.asarray(value, dtype=np.float64)
            fixed = tuple(p for p, i in enumerate(stmt.lhs.indices)
                          if isinstance(i, ir.IndexConst) and p < array.ndim)
            if fixed and all(array.shape[p] == 1 for p in fixed):
                value = array.reshape([n for p, n in enumerate(array.shape) if p not in fixed])
        data = self.backend.asarray(value)
        rank = len(self.backend.shape(data))
        names = self.info.lhs_axes[:rank]
        if len(names) == rank:
            return LArray(data, names)
        return LArray(data, tuple(f"#{k}" for k in range(rank)))

    def _causal_mask(self, call: ir.Call) -> LArray:
        n = int(_number(call.args[0], 0))
        names = self.info.lhs_axes  # a slice's too: `M[:,:] = causal_mask(4)`
        if len(names) < 2:
            raise EvaluationError("causal_mask binds to the last two left-hand-side axes; "
                                  "this left-hand side has fewer")
        query, key = names[-2], names[-1]
        import numpy as np

        return LArray(self.backend.asarray(np.tri(n, dtype=np.float32)), (query, key))


def _number(expr: ir.Expr | None, default: float) -> float:
    if expr is None:
        return default
    if isinstance(expr, ir.Neg):
        return -_number(expr.operand, default)
    if isinstance(expr, ir.Number):
        return expr.value
    raise EvaluationError("expected a number")


def _literal(expr: ir.Expr):
    if isinstance(expr, ir.ListLit):
        return [_literal(item) for item in expr.items]
    return _number(expr, 0.0)


def _exact_values(array: Any, values: tuple | None) -> Any:
    """An index's values for an exact comparison: a column of floats and integers
    past 2^53 (`9007199254740993` beside `0.5`) as exact Python numbers (each float
    a Fraction, which it is exactly), so that they compare, add and subtract by
    magnitude exactly (float64 makes 2^53 + 1 and 2^53 one number); any other
    column as it is."""
    if array.dtype.kind != "f" or values is None or len(values) != len(array) or not any(
            type(v) is int and abs(v) > _FLOAT_EXACT for v in values):
        return array
    from fractions import Fraction

    import numpy as np

    exact = np.empty(len(array), dtype=object)
    exact[:] = [Fraction(v) if type(v) is float else v for v in values]
    return exact


_FLOAT_EXACT = 2**53  # every integer up to it is a float64 exactly


def _aligned(side: LArray, axes: tuple[str, ...]) -> Any:
    """An exact operand's host numbers laid along `axes` (1 along the axes it lacks),
    to broadcast with the others; a number as it is."""
    if not side.axes:
        return side.data
    import numpy as np

    data = np.transpose(np.asarray(side.data), [side.axes.index(x) for x in axes
                                                 if x in side.axes])
    sizes = iter(data.shape)
    return np.reshape(data, [next(sizes) if x in side.axes else 1 for x in axes])
