"""The reference interpreter: one equation's right-hand side -> its contribution
to the left-hand side tensor (LANGUAGE.md §3-6, §10).

Values are LArrays (axes named by index variables).  Each projection scope
(the RHS, each call argument, each `reduce` body) projects the indices whose
innermost common scope it is, per additive term; a product of references
projected by sum is one einsum with a planned, cached contraction path.
Array operations go through the backend object, so torch and jax run this
same code.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from ..front import ir
from ..check import Analysis
from ..plan.contraction import einsum_spec
from .labelled import LArray, align, combine, expand_to, project, union_axes
from ..check.symbols import SUM_OPS, slice_name, statement_scopes

_NONE: dict[str, str] = {}  # no projections (shared, never written)


class EvaluationError(Exception):
    """A failure while running one statement; the engine adds where it happened."""


@dataclass
class StatementInfo:
    """What evaluating one statement needs, computed once per analysis."""

    index: int
    stmt: ir.Statement
    scope_of: dict[int, int]  # id(expr) -> the scope that expr opens (call args, reduce bodies)
    projected_at: dict[int, dict[str, str]]  # scope id -> {index: operator}
    extents: dict[str, int | None]
    norm_axis: str | None  # the axis softmax/lnorm work along, if the LHS says
    lhs_order: tuple[str, ...]  # LHS index names: einsums write their output in this order
    plain_refs: dict[int, tuple[str, ...]]  # id(Ref) -> its names, for `T[i,j]`-only refs
    lhs_names: tuple[str, ...] | None  # the LHS's names when it is plain distinct variables
    einsum_specs: dict = field(default_factory=dict)  # (id(product), operand axes) -> plan


def statement_info(analysis: Analysis, k: int) -> StatementInfo:
    stmt = analysis.program.statements[k]
    scopes, placed = statement_scopes(stmt)
    scope_of: dict[int, int] = {}
    parent_scope: dict[int, int] = {}
    for node, scope in placed:
        parent_scope[id(node)] = scope
    for node, scope in placed:
        if isinstance(node, ir.Call):
            for arg in node.args + tuple(kw.value for kw in node.kwargs):
                scope_of[id(arg)] = parent_scope[id(arg)]
        elif isinstance(node, ir.Reduce):
            scope_of[id(node.body)] = parent_scope[id(node.body)]
    projected_at: dict[int, dict[str, str]] = {}
    for role in analysis.roles.get(k, ()):
        if role.role == "projected" and role.scope is not None:
            projected_at.setdefault(role.scope.id, {})[role.name] = role.op or "sum"
    extents = {name: ext for (kk, name), (ext, _dom) in analysis.var_extents.items() if kk == k}
    norm_axis = None
    lhs_order: tuple[str, ...] = ()
    lhs_names = None
    if isinstance(stmt, ir.Equation):
        lhs_order = tuple(v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i))
        dotted = [i.name for i in stmt.lhs.indices or ()
                  if isinstance(i, ir.IndexVar) and i.dotted]
        norm_axis = dotted[0] if dotted else (lhs_order[-1] if lhs_order else None)
        if stmt.lhs.indices is not None and all(isinstance(i, ir.IndexVar)
                                                for i in stmt.lhs.indices) \
                and len(set(lhs_order)) == len(lhs_order):
            lhs_names = lhs_order
    plain_refs = {}
    for node, _scope in placed:
        if isinstance(node, ir.Ref) and node.indices and all(
                isinstance(i, ir.IndexVar) for i in node.indices):
            names = tuple(i.name for i in node.indices)  # type: ignore[union-attr]
            if len(set(names)) == len(names):
                plain_refs[id(node)] = names
    return StatementInfo(k, stmt, scope_of, projected_at, extents, norm_axis, lhs_order,
                         plain_refs, lhs_names)


class ConstantFolding:
    """Subexpressions whose value the program text alone fixes (`-1e9 * (1 - Mask)`
    for a causal mask, `sqrt(Dk)` for a constant `Dk`), computed once per input-shape
    signature and reused by later runs: they read only `constants` (tensors that
    depend on no input, source or param) and literals.  Eager runs only: a compiled
    graph folds them itself."""

    def __init__(self, constants: set[str]) -> None:
        self.constants = constants
        self.values: dict[int, LArray] = {}  # id(expr) -> its value
        self._constant: dict[int, bool] = {}  # id(expr) -> whether it is constant

    def is_constant(self, expr: ir.Expr) -> bool:
        known = self._constant.get(id(expr))
        if known is None:
            names = [r.name for r in ir.refs(expr)]
            known = bool(names) and all(n in self.constants for n in names)
            self._constant[id(expr)] = known
        return known


# what is worth folding: nodes that compute (a reference or a number is a lookup)
_FOLDABLE = (ir.Sum, ir.Product, ir.Neg, ir.Power, ir.Call)


class Evaluator:
    """Evaluates expressions of one statement against the current tensor values."""

    def __init__(self, B: Any, analysis: Analysis, info: StatementInfo,
                 values: dict[str, Any], fixed: dict[str, int] | None = None,
                 overrides: dict[int, Any] | None = None,
                 folded: ConstantFolding | None = None) -> None:
        self.B = B
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
                if sign == "-":
                    value = LArray(-value.data, value.axes)
                result = value if result is None else combine(self.B, operator.add, result, value)
            assert result is not None
            return self.project_all(result, other)
        return self.term(expr, projected)

    def term(self, expr: ir.Expr, projected: dict[str, str]) -> LArray:
        if not projected:
            return self.eval(expr)
        if type(expr) is ir.Product:
            fast = self.einsum_product(expr, projected)
            if fast is not None:
                return fast
        value = self.eval(expr)
        return self.project_all(value, projected)

    def project_all(self, value: LArray, projected: dict[str, str]) -> LArray:
        if not projected:
            return value
        by_op: dict[str, list[str]] = {}
        for name, op in projected.items():
            if name in value.axes:
                by_op.setdefault(op, []).append(name)
        for op, names in by_op.items():
            value = project(self.B, value, names, op)
        return value

    def einsum_product(self, expr: ir.Product, projected: dict[str, str]) -> LArray | None:
        """A product of references projected by sum: one planned einsum.  Scalar
        factors are applied to the (smaller) result instead of joining."""
        if any(op != "sum" for op in projected.values()):
            return None
        operands = []
        scale = None
        for factor, op in zip(expr.factors, expr.ops):
            value = self.eval(factor)
            if not value.axes:
                factor_value = 1 / value.data if op == "/" else value.data
                scale = factor_value if scale is None else scale * factor_value
                continue
            if op == "/":
                value = LArray(1 / value.data, value.axes)
            operands.append(value)
        if not operands:
            return None
        key = (id(expr), tuple(v.axes for v in operands))
        plan = self.info.einsum_specs.get(key)
        if plan is None:
            plan = self._einsum_plan(operands, projected)
            self.info.einsum_specs[key] = plan
        if plan is False:
            return None
        spec, keep = plan
        result = self.B.einsum(spec, *(v.data for v in operands))
        if scale is not None:
            result = self.B.scale_fresh(result, scale)
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
        B = self.B
        kind = type(expr)
        if kind is ir.Ref:
            return self.ref(expr)  # type: ignore[arg-type]
        if kind is ir.Call:
            return self.call(expr)  # type: ignore[arg-type]
        if isinstance(expr, ir.Number):
            return LArray(B.asarray(expr.value), ())
        if isinstance(expr, ir.Neg):
            value = self.eval(expr.operand)
            return LArray(-value.data, value.axes)
        if isinstance(expr, ir.Sum):
            result = None
            for sign, term in zip(expr.signs, expr.terms):
                value = self.eval(term)
                if sign == "-":
                    value = LArray(-value.data, value.axes)
                result = value if result is None else combine(B, operator.add, result, value)
            return result  # type: ignore[return-value]
        if isinstance(expr, ir.Product):
            result = self.eval(expr.factors[0])
            for factor, op in zip(expr.factors[1:], expr.ops[1:]):
                value = self.eval(factor)
                if op == "/":
                    result = combine(B, operator.truediv, result, value)
                else:
                    result = combine(B, operator.mul, result, value)
            return result
        if isinstance(expr, ir.Power):
            return combine(B, B.power, self.eval(expr.base), self.eval(expr.exponent))
        if isinstance(expr, ir.Call):
            return self.call(expr)
        if isinstance(expr, ir.Reduce):
            return self.scope(expr.body, self.info.scope_of[id(expr.body)])
        raise EvaluationError(f"cannot evaluate {type(expr).__name__} here")

    # ----------------------------------------------------------- references
    def ref(self, ref: ir.Ref) -> LArray:
        B = self.B
        if ref.indices is None:
            if ref.name in self.values:
                data = self.overrides.get(id(ref), self.values[ref.name])
                return LArray(data, ())
            if ref.name in self.fixed:
                return LArray(B.asarray(self.fixed[ref.name]), ())
            return LArray(B.arange(self.extent(ref.name)), (ref.name,))  # an index's value
        if ref.name not in self.values:
            raise EvaluationError(f"`{ref.name}` has no value yet")
        data = self.overrides.get(id(ref), self.values[ref.name])
        plain = self.info.plain_refs.get(id(ref))
        if plain is not None and not (self.fixed and any(n in self.fixed for n in plain)):
            return LArray(data, plain)
        info = self.analysis.tensors[ref.name]
        labels: list[str] = []
        axis = 0
        slices = 0
        for pos, index in enumerate(ref.indices):
            if isinstance(index, ir.IndexVirtual):
                continue  # the stored value is the current time step
            size = B.shape(data)[axis]
            if isinstance(index, ir.IndexVar):
                if index.name in self.fixed:
                    data = self._select(data, axis, self.fixed[index.name], size)
                    continue
                labels.append(index.name)
                axis += 1
            elif isinstance(index, ir.IndexConst):
                position = self._constant_position(info.axes[pos].domain, index)
                data = self._select(data, axis, position, size)
            elif isinstance(index, ir.IndexShift):
                data, names = self._shifted(data, axis, size, index)
                labels.extend(names)
                axis += len(names)
            elif isinstance(index, ir.IndexDiv):
                name = index.var.name
                if name in self.fixed:
                    data = self._select(data, axis, self.fixed[name] // index.divisor, size)
                    continue
                positions = B.int_arange(self.extent(name)) // index.divisor
                data = self._gather(data, axis, positions, size)
                labels.append(name)
                axis += 1
            elif isinstance(index, ir.IndexSlice):
                start = index.start or 0
                stop = size if index.stop is None else min(index.stop, size)
                data = B.take(data, B.int_arange(max(stop - start, 0)) + start, axis)
                labels.append(slice_name(slices))
                slices += 1
                axis += 1
        return self._diagonals(LArray(data, tuple(labels)))

    def _select(self, data: Any, axis: int, position: int, size: int) -> Any:
        B = self.B
        if 0 <= position < size:
            return B.take(data, position, axis)
        shape = list(B.shape(data))
        del shape[axis]
        return B.zeros(tuple(shape))  # reads outside an axis are 0

    def _gather(self, data: Any, axis: int, positions: Any, size: int) -> Any:
        """data[..., positions, ...] with 0 where a position is outside the axis."""
        import numpy as np

        pos = np.asarray(positions)
        inside = (pos >= 0) & (pos < size)
        taken = self.B.take(data, np.clip(pos, 0, max(size - 1, 0)), axis)
        if inside.all():
            return taken
        mask_shape = [1] * len(self.B.shape(taken))
        for k, n in enumerate(pos.shape):
            mask_shape[axis + k] = n
        mask = self.B.asarray(inside.reshape(mask_shape))
        return taken * mask

    def _shifted(self, data: Any, axis: int, size: int, index: ir.IndexShift):
        import numpy as np

        free = [v.name for v in index.terms if v.name not in self.fixed]
        base = index.offset + sum(self.fixed[v.name] for v in index.terms if v.name in self.fixed)
        if not free:
            return self._select(data, axis, base, size), []
        grids = np.ix_(*[np.arange(self.extent(n)) for n in free]) if len(free) > 1 else \
            (np.arange(self.extent(free[0])),)
        positions = base + sum(grids)
        return self._gather(data, axis, positions, size), free

    def _diagonals(self, value: LArray) -> LArray:
        data, axes = value.data, list(value.axes)
        seen: dict[str, int] = {}
        k = 0
        while k < len(axes):
            name = axes[k]
            if name in seen:
                data = self.B.diagonal(data, seen[name], k)
                del axes[k]
                continue
            seen[name] = k
            k += 1
        return LArray(data, tuple(axes))

    def _constant_position(self, domain: int, index: ir.IndexConst) -> int:
        if isinstance(index.value, int):
            return index.value
        symbols = self.analysis.domain_symbols.get(domain, ())
        if index.value not in symbols:
            raise EvaluationError(f"the symbol `{index.value}` is not in this axis' domain")
        return symbols.index(index.value)

    # --------------------------------------------------------------- calls
    def arg(self, expr: ir.Expr) -> LArray:
        return self.scope(expr, self.info.scope_of[id(expr)])

    def call(self, call: ir.Call) -> LArray:
        B = self.B
        name = call.name
        kwargs = {kw.name: kw.value for kw in call.kwargs}
        if name == "const":
            return self._const(call.args[0])
        if name == "causal_mask":
            return self._causal_mask(call)
        if name in ("even", "odd"):
            var = call.args[0]
            assert isinstance(var, ir.Ref)
            if var.name in self.fixed:
                parity = self.fixed[var.name] % 2
                return LArray(B.asarray(float(parity == (0 if name == "even" else 1))), ())
            n = self.extent(var.name)
            values = [float(i % 2 == (0 if name == "even" else 1)) for i in range(n)]
            return LArray(B.asarray(values), (var.name,))
        args = self._own_axis_args(call) or [self.arg(a) for a in call.args]
        if name in ("relu", "tanh", "exp", "log", "sqrt", "abs", "sin", "cos", "step", "gelu"):
            x = args[0]
            return LArray(self._unary(name, x.data), x.axes)
        if name == "sig":
            x = args[0]
            if len(args) == 1:
                return LArray(1 / (1 + B.exp(-x.data)), x.axes)
            return combine(B, self._sig_t, x, args[1])
        if name == "pow":
            return combine(B, B.power, args[0], args[1])
        if name in ("max", "min"):
            return combine(B, B.maximum if name == "max" else B.minimum, args[0], args[1])
        if name in ("softmax", "lnorm"):
            axis = self._norm_axis(kwargs)
            eps = float(_number(kwargs.get("eps"), 1e-5))
            return self._normalise(name, args[0], axis, eps)
        if name == "concat":
            axis_ref = kwargs["axis"]
            assert isinstance(axis_ref, ir.Ref)
            return self._concat(args, axis_ref.name)
        if name == "topk":
            return self._topk(args[0], int(_number(kwargs["k"], 1)))
        raise EvaluationError(f"`{name}` is not a builtin")

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
        lhs = self.info.stmt.lhs if isinstance(self.info.stmt, ir.Equation) else None
        lhs_vars = [v.name for i in ((lhs.indices if lhs else None) or ())
                    if not isinstance(i, ir.IndexVirtual) for v in ir.index_vars(i)]
        return lhs_vars[-1] if lhs_vars else None

    def _unary(self, name: str, x: Any) -> Any:
        B = self.B
        if name == "relu":
            return B.maximum(x, 0)
        if name == "step":
            return B.step(x)
        if name == "gelu":
            return B.gelu(x)  # the exact (erf) form, as one fused op where there is one
        return getattr(B, name)(x)

    def _sig_t(self, x: Any, t: Any) -> Any:
        B = self.B
        safe = B.where(t == 0, 1.0, t)
        return B.where(t == 0, B.step(x), 1 / (1 + B.exp(-x / safe)))

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
        B = self.B
        if axis not in x.axes:
            # constant along the axis: broadcast it first
            x = LArray(B.broadcast_to(align(B, x, x.axes + (axis,)),
                                      tuple(B.shape(x.data)) + (self.extent(axis),)),
                       x.axes + (axis,))
        k = x.axes.index(axis)
        if name == "softmax":
            return LArray(B.softmax(x.data, k, x.fresh), x.axes, fresh=True)
        return LArray(B.lnorm(x.data, k, eps), x.axes, fresh=True)

    def _topk(self, x: LArray, k: int) -> LArray:
        """The k largest values of each row along the last LHS axis, in descending
        order (the result's axis has extent k); equal values keep the lower index
        first.  Inside the argument that axis has the argument's own extent."""
        B = self.B
        axis = self._topk_axis() or (x.axes[-1] if x.axes else None)
        if axis is None or axis not in x.axes:
            raise EvaluationError(f"topk chooses along the last left-hand-side axis "
                                  f"`{axis}`, which its argument does not have")
        row = B.shape(x.data)[x.axes.index(axis)]
        if k > row:
            raise EvaluationError(f"topk(k={k}) asks for more values than a row along `{axis}` "
                                  f"holds ({row})")
        axes = tuple(a for a in x.axes if a != axis) + (axis,)
        return LArray(B.topk(align(B, x, axes), k), axes)

    def _concat(self, args: list[LArray], axis: str) -> LArray:
        B = self.B
        others = union_axes(*[LArray(None, tuple(a for a in x.axes if a != axis)) for x in args])
        axes = others + (axis,)
        sizes = {}
        for x in args:
            for a, n in zip(x.axes, B.shape(x.data)):
                if a != axis:
                    sizes[a] = max(sizes.get(a, 1), n)
        parts = []
        for x in args:
            if axis not in x.axes:
                raise EvaluationError(f"every argument of concat needs the axis `{axis}`")
            data = align(B, x, axes)
            target = tuple(sizes[a] for a in others) + (B.shape(data)[-1],)
            parts.append(B.broadcast_to(data, target))
        return LArray(B.concatenate(parts, axis=-1), axes)

    def _const(self, literal: ir.Expr) -> LArray:
        value = _literal(literal)
        data = self.B.asarray(value)
        rank = len(self.B.shape(data))
        names = self.info.lhs_order[:rank]
        if len(names) == rank:
            return LArray(data, names)
        return LArray(data, tuple(f"#{k}" for k in range(rank)))

    def _causal_mask(self, call: ir.Call) -> LArray:
        n = int(_number(call.args[0], 0))
        names = self.info.lhs_order
        if len(names) < 2:
            raise EvaluationError("causal_mask binds to the last two left-hand-side axes; "
                                  "this left-hand side has fewer")
        query, key = names[-2], names[-1]
        import numpy as np

        return LArray(self.B.asarray(np.tri(n, dtype=np.float32)), (query, key))


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


# ----------------------------------------------------------- writing an LHS


def write_lhs(B: Any, analysis: Analysis, info: StatementInfo, value: LArray,
              shape: tuple[int, ...], op: str, fixed: dict[str, int] | None = None,
              skip: int | None = None) -> Any:
    """Lay the RHS value out as the LHS tensor (shape `shape`), combining by `op`
    where several positions land in one cell (pooling `x/2`).  `skip` is an LHS
    position left out: a recurrence writes one row at a time."""
    stmt = info.stmt
    assert isinstance(stmt, ir.Equation)
    names = info.lhs_names
    if names is not None and skip is None and not fixed and value.axes == names \
            and tuple(B.shape(value.data)) == tuple(shape):
        return value.data  # already laid out as the LHS: no copy
    fixed = fixed or {}
    lhs = stmt.lhs
    indices = [_symbol_position(analysis, lhs.name, pos, i)
               for pos, i in enumerate(lhs.indices or ())
               if not isinstance(i, ir.IndexVirtual) and pos != skip]
    if lhs.indices is None:
        if value.axes and all(a.startswith("#") for a in value.axes):
            return B.broadcast_to(value.data, shape)  # bare W = const([...])
        return B.broadcast_to(value.data, shape)
    plain = all(isinstance(i, ir.IndexVar) and i.name not in fixed for i in indices)
    names = [i.name for i in indices if isinstance(i, ir.IndexVar)]
    if plain and len(set(names)) == len(names):
        extents = {n: e for n, e in zip(names, shape)}
        stray = [a for a in value.axes if a not in names]
        if stray:
            raise EvaluationError(f"indices {', '.join(stray)} are left over on the right-hand "
                                  f"side")
        return B.copy(expand_to(B, value, tuple(names), extents))
    return _scatter(B, info, value, indices, shape, op, fixed)


def _symbol_position(analysis: Analysis, name: str, pos: int, index: Any) -> Any:
    """A symbol constant on the LHS (`S[Bob] = 2`) as its position in the axis' domain."""
    if not (isinstance(index, ir.IndexConst) and isinstance(index.value, str)):
        return index
    symbols = analysis.domain_symbols.get(analysis.tensors[name].axes[pos].domain, ())
    if index.value not in symbols:
        raise EvaluationError(f"the symbol `{index.value}` is not in this axis' domain")
    return ir.IndexConst(symbols.index(index.value), index.span)


def _scatter(B: Any, info: StatementInfo, value: LArray, indices: list, shape: tuple[int, ...],
             op: str, fixed: dict[str, int]) -> Any:
    """The general LHS: constants, offsets, pooling, slices, repeated indices."""
    import numpy as np

    # every variable of the LHS, with its extent
    names: list[str] = []
    slices = 0
    for index in indices:
        if isinstance(index, ir.IndexSlice):
            names.append(slice_name(slices))
            slices += 1
        else:
            names.extend(v.name for v in ir.index_vars(index) if v.name not in fixed)
    names = list(dict.fromkeys(names))
    extents = {}
    for n in names:
        if n in value.axes:
            extents[n] = B.shape(value.data)[value.axes.index(n)]
        else:
            ext = info.extents.get(n)
            if ext is None:
                raise EvaluationError(f"the extent of index `{n}` is not known")
            extents[n] = ext
    stray = [a for a in value.axes if a not in names]
    if stray:
        raise EvaluationError(f"indices {', '.join(stray)} are left over on the right-hand side")
    data = expand_to(B, value, tuple(names), extents)
    cells, targets, counts = _scatter_plan(indices, names, extents, shape, fixed)
    size = int(np.prod(shape))
    if targets.size == 0:
        return B.zeros(shape)
    values = B.take(B.reshape(data, (-1,)), cells, 0)
    init = {"sum": 0.0, "avg": 0.0, "max": -np.inf, "min": np.inf}[op]
    out = B.scatter("sum" if op == "avg" else op, size, targets, values, init)
    if op == "avg":
        out = out / B.asarray(np.maximum(counts, 1))
    elif op != "sum":
        out = B.where(B.asarray(counts > 0) > 0, out, 0.0)  # untouched cells are 0
    return B.reshape(B.asarray(out), shape)


def _scatter_plan(indices: list, names: list[str], extents: dict[str, int],
                  shape: tuple[int, ...], fixed: dict[str, int]):
    """Where each cell of the RHS (laid out over `names`) lands in the flat LHS,
    from shapes alone: the cells that land inside, their targets, and how many
    land in each target."""
    import numpy as np

    grid_shape = tuple(extents[n] for n in names)
    grids = np.meshgrid(*[np.arange(extents[n]) for n in names], indexing="ij") if names else []
    env = dict(zip(names, grids))
    targets = []
    valid = np.ones(grid_shape, dtype=bool)
    slices = 0
    for axis_size, index in zip(shape, indices):
        if isinstance(index, ir.IndexVar):
            pos = env[index.name] if index.name not in fixed else fixed[index.name]
        elif isinstance(index, ir.IndexConst):
            pos = int(index.value)
        elif isinstance(index, ir.IndexShift):
            pos = index.offset + sum(env[v.name] if v.name not in fixed else fixed[v.name]
                                     for v in index.terms)
        elif isinstance(index, ir.IndexDiv):
            pos = (env[index.var.name] if index.var.name not in fixed
                   else fixed[index.var.name]) // index.divisor
        elif isinstance(index, ir.IndexSlice):
            pos = env[slice_name(slices)] + (index.start or 0)
            slices += 1
        else:
            raise EvaluationError("unsupported index on the left-hand side")
        pos = np.broadcast_to(pos, grid_shape)
        valid &= (pos >= 0) & (pos < axis_size)  # writes outside an axis are dropped
        targets.append(pos)
    cells = np.flatnonzero(valid)
    if targets:
        flat = np.ravel_multi_index([t[valid] for t in targets], shape)
    else:  # a scalar LHS: every cell lands in the one
        flat = np.zeros(cells.size, dtype=np.intp)
    counts = np.bincount(flat, minlength=int(np.prod(shape)))
    return cells, flat, counts


def equation_op(stmt: ir.Equation) -> str:
    return "sum" if stmt.op in SUM_OPS else stmt.op[:-1]
