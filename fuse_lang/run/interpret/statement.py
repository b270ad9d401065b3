"""What evaluating one statement needs, computed once per analysis: its scopes,
what each projects, index extents, the LHS order (StatementInfo); and the
constant subexpressions folded once per input-shape signature."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ...check import Analysis
from ...check.symbols import statement_scopes
from ...front import ir
from .labelled import LArray

if TYPE_CHECKING:
    from ..backends.base import Backend


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
    # the LHS is a Boolean tensor: its joins count paths (Backend.count_einsum)
    boolean: bool = False
    # each index's domain's values (check.value_tables), for those that hold values:
    # an index stands for its value in arithmetic and comparisons
    values: dict[str, tuple] = field(default_factory=dict)
    # id(IndexShift) -> how far a window over an `axis x = same` index is moved back
    # so that it is centred (PyTorch's padding='same')
    centred: dict[int, int] = field(default_factory=dict)
    # the LHS's axes in order, a slice's as its anonymous name (`:0`): what const,
    # causal_mask and the normalising builtins bind to
    lhs_axes: tuple[str, ...] = ()


Variables = dict[int, list[tuple[str, int | None, int]]]


def variables_by_statement(analysis: Analysis) -> Variables:
    """Each statement's variables as (name, extent, domain), in `var_extents`' order:
    the table grouped once for all statements (scanning it whole for each statement
    made a plan's making quadratic in the program's length)."""
    grouped: Variables = {}
    for (k, name), (extent, domain) in analysis.var_extents.items():
        grouped.setdefault(k, []).append((name, extent, domain))
    return grouped


class StatementInfos(Mapping[int, StatementInfo]):
    """The StatementInfo of each of `keys` (equations, sinks and queries), each made
    on first read and kept: a run reads those of the statements it evaluates, and
    `fuse explain`, which prints none, makes none (on 50,000 lines they cost
    seconds)."""

    def __init__(self, analysis: Analysis, keys: tuple[int, ...]) -> None:
        self._analysis = analysis
        self._keys = keys
        self._known = frozenset(keys)
        self._made: dict[int, StatementInfo] = {}
        self._variables: Variables | None = None

    def __getitem__(self, k: int) -> StatementInfo:
        info = self._made.get(k)
        if info is None:
            if k not in self._known:
                raise KeyError(k)
            if self._variables is None:
                self._variables = variables_by_statement(self._analysis)
            info = self._made[k] = statement_info(self._analysis, k, self._variables)
        return info

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, k: object) -> bool:
        return k in self._known


def statement_info(analysis: Analysis, k: int,
                   variables: Variables | None = None) -> StatementInfo:
    """What evaluating statement `k` needs; `variables`: `variables_by_statement`'s
    table where the caller makes the infos of many statements."""
    stmt = analysis.program.statements[k]
    scopes, placed = statement_scopes(stmt)
    scope_of: dict[int, int] = {}
    parent_scope: dict[int, int] = {}
    for node, scope in placed:
        parent_scope[id(node)] = scope
    for node, _ in placed:
        if isinstance(node, ir.Call):
            for arg in node.args + tuple(kw.value for kw in node.kwargs):
                scope_of[id(arg)] = parent_scope[id(arg)]
        elif isinstance(node, ir.Reduce):
            scope_of[id(node.body)] = parent_scope[id(node.body)]
    projected_at: dict[int, dict[str, str]] = {}
    for role in analysis.roles.get(k, ()):
        if role.role == "projected" and role.scope is not None:
            projected_at.setdefault(role.scope.id, {})[role.name] = role.op or "sum"
    mine = (variables if variables is not None else variables_by_statement(analysis)).get(k, ())
    extents = {name: ext for name, ext, _dom in mine}
    held = analysis.domain_symbols
    values = {name: held[dom] for name, _ext, dom in mine if dom in held}
    norm_axis = None
    lhs_order: tuple[str, ...] = ()
    lhs_axes: tuple[str, ...] = ()
    lhs_names = None
    if isinstance(stmt, ir.Equation):
        lhs_order = tuple(v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i))
        dotted = [i.name for i in stmt.lhs.indices or ()
                  if isinstance(i, ir.IndexVar) and i.dotted]
        lhs_axes = ir.lhs_axis_names(stmt.lhs.indices or ())
        norm_axis = dotted[0] if dotted else (lhs_axes[-1] if lhs_axes else None)
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
    lhs = getattr(stmt, "lhs", None)
    target = analysis.tensors.get(lhs.name) if isinstance(lhs, ir.Ref) else None
    return StatementInfo(k, stmt, scope_of, projected_at, extents, norm_axis, lhs_order,
                         plain_refs, lhs_names, boolean=bool(target and target.boolean),
                         values=values, centred=_centred_windows(analysis, placed, extents),
                         lhs_axes=lhs_axes)


def _centred_windows(analysis: Analysis, placed: list, extents: dict[str, int | None]
                     ) -> dict[int, int]:
    """The statement's windows over an `axis x = same` index, each with how far it
    is moved back: (k-1)//2 for every other variable's window of k, as PyTorch pads
    (the extra zero of an even window on the right)."""
    windows = [node for node, _ in placed if isinstance(node, ir.Ref)
               for index in node.indices or () if isinstance(index, ir.IndexShift)
               and len(index.terms) > 1]
    if not windows:
        return {}
    same = {name for name, padding in analysis.paddings.items() if padding == "same"}
    centred = {}
    for ref in windows:
        for index in ref.indices or ():
            if not isinstance(index, ir.IndexShift) or len(index.terms) < 2:
                continue
            names = [v.name for v in index.terms]
            if not same.intersection(names):
                continue
            centre = next(n for n in names if n in same)
            centred[id(index)] = sum(((extents.get(n) or 1) - 1) // 2
                                     for n in names if n != centre)
    return centred


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


class EvaluatorState:
    """What an `evaluate.Evaluator` holds, declared once for the mixins that make it
    up (`references.ReferenceReading`, `builtin_calls.BuiltinCalls`)."""

    backend: "Backend"
    analysis: Analysis
    info: StatementInfo
    values: dict[str, Any]
    fixed: dict[str, int]  # index -> position, for sequential (recurrent) evaluation
    overrides: dict[int, Any]  # id(Ref) -> value read instead (semi-naive deltas)
    local_extents: dict[str, int]
    extent: Callable[[str], int]
    index_values: Callable[[str], Any]
    scope: Callable[[ir.Expr, int], LArray]
