"""Why a number: an element of a numeric tensor split into the terms of its sum.

For each equation of the tensor: the nonlinearity around its right-hand side (the
outermost call of one argument, `sig(...)`, `softmax(...)`), and the terms of the
summed product inside it: one per value of the projected indices, each the product
of its factors at those values.  The factors are read by the reference interpreter
(run.interpret), so any factor it evaluates (`X[i-1,k]`, `sqrt(Dk)`) is split alike.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...check.value_tables import constant_position
from ...front import ir
from ...front.builtins import BUILTINS, COMPARISONS
from ...front.ir_text import expr_text, index_text
from ..backends.numpy_backend import NumpyBackend
from ..interpret.evaluate import EvaluationError, Evaluator
from .data import Contribution, Factor, NumberWhy, Term, show_value
from .model import Key, Model

_NOT_NONLINEAR = frozenset({"const", "concat", "topk", "reduce", "max", "min", "not",
                            "select"}) | COMPARISONS


def number_why(model: Model, key: Key, top: int) -> NumberWhy:
    name, positions = key
    analysis = model.analysis
    value = float(_element(model.values[name], positions))
    shown = _shown(model, name, positions)
    text = f"{name}[{', '.join(shown)}]" if shown else name
    statements = analysis.program.statements
    equations = [k for k in analysis.tensors[name].statements
                 if isinstance(statements[k], ir.Equation)]
    note = ""
    if not equations:
        note = _given(model, name)
    with np.errstate(all="ignore"):  # (the run said its NaNs and infinities where they arose)
        parts = tuple(_contribution(model, k, positions, top) for k in equations
                      if _applies(model, statements[k], name, positions))
    return NumberWhy(name, _values(model, name, positions), text, value, parts, note)


def _values(model: Model, name: str, positions: tuple[int, ...]) -> tuple:
    """An element's index as `why` takes it: values where an axis holds values."""
    axes = [a for a in model.analysis.tensors[name].axes if not a.virtual]
    return tuple(_at(model.analysis.domain_symbols.get(axis.domain), p)
                 for axis, p in zip(axes, positions))


def _at(values: Any, position: int) -> Any:
    return values[position] if values and 0 <= position < len(values) else position


def _shown(model: Model, name: str, positions: tuple[int, ...]) -> list[str]:
    return [show_value(v) for v in _values(model, name, positions)]


def _applies(model: Model, stmt: ir.Equation, name: str, positions: tuple[int, ...]) -> bool:
    """Whether an equation writes the element: a constant on its left-hand side
    (`Alpha[0,s]`) selects one position."""
    axes = model.analysis.tensors[name].axes
    for pos, (ix, p) in enumerate(zip(stmt.lhs.indices or (), positions)):
        if isinstance(ix, ir.IndexConst) and pos < len(axes) and \
                constant_position(model.analysis, axes[pos].domain, ix.value) != p:
            return False
    return True


def _given(model: Model, name: str) -> str:
    tensor = model.analysis.tensors[name]
    if name in model.given:
        return model.input_text(name)
    if tensor.source_path:
        return f"`{name}` is read from {model.source_of(name)}"
    return f"`{name}` is given, not computed"


def _element(value: Any, positions: tuple[int, ...]) -> Any:
    if hasattr(value, "on_numpy"):
        value = value.on_numpy()
        value = value.matrix.toarray() if hasattr(value, "matrix") else value.native().todense()
    return np.asarray(value)[tuple(positions)]


def _contribution(model: Model, k: int, positions: tuple[int, ...], top: int) -> Contribution:
    analysis = model.analysis
    stmt = analysis.program.statements[k]
    place = model.place(k)
    lhs = stmt.lhs.indices or ()
    if not all(isinstance(ix, (ir.IndexVar, ir.IndexConst)) for ix in lhs) \
            or len(lhs) != len(positions):
        return Contribution(place, None, (), float("nan"), (), 0, 0.0,
                            "a left-hand side with offsets, slices or virtual indices is "
                            "not split into terms")
    fixed = {ix.name: p for ix, p in zip(lhs, positions) if isinstance(ix, ir.IndexVar)}
    info = model.plan.statements[k]
    rhs, nonlinearity = stmt.rhs, None
    if isinstance(rhs, ir.Call) and rhs.name in BUILTINS and rhs.name not in _NOT_NONLINEAR \
            and rhs.args:
        nonlinearity = rhs.name
        if rhs.name in ("softmax", "lnorm") and info.norm_axis:
            nonlinearity += f" along {info.norm_axis}"
        rhs = rhs.args[0]
    try:
        terms, total, count, projected, absolute = _terms(model, info, rhs, fixed, top,
                                                          stmt.op, _written(model, k))
    except (EvaluationError, ValueError, IndexError, TypeError) as err:
        return Contribution(place, nonlinearity, (), float("nan"), (), 0, 0.0,
                            f"not split into terms: {err}")
    shown = sum(abs(t.value) for t in terms)
    share = 1.0 if count <= len(terms) or not absolute else min(shown / absolute, 1.0)
    op = {"max=": "max", "min=": "min", "avg=": "mean"}.get(stmt.op, "sum")
    return Contribution(place, nonlinearity, projected, total, terms, count, share, "", op)


def _terms(model: Model, info: Any, rhs: ir.Expr, fixed: dict[str, int], top: int,
           op: str = "=", written: bool = True
           ) -> tuple[tuple[Term, ...], float, int, tuple[str, ...], float]:
    """The top terms of the sum of `rhs` at the element `fixed`, the sum, the count,
    the projected indices and the sum of the terms' magnitudes."""
    ev = Evaluator(NumpyBackend(), model.analysis, info, dict(model.values))
    additive = list(zip(rhs.signs, rhs.terms)) if isinstance(rhs, ir.Sum) else [("+", rhs)]
    candidates: list[tuple[float, Term]] = []
    every: list[np.ndarray] = []
    count = 0
    absolute = 0.0
    projected_all: dict[str, None] = {}
    for sign, term in additive:
        factors = _factor_list(term)
        arrays = []
        for factor, divide in factors:
            value = ev.eval(factor)
            data, axes = _dense_at(value.data, value.axes, fixed)
            arrays.append((factor, 1.0 / data if divide else data, axes, divide))
        projected = tuple(dict.fromkeys(a for _, _, axes, _ in arrays for a in axes
                                        if a not in fixed))
        projected_all.update(dict.fromkeys(projected))
        grid = np.ones([ev.extent(a) for a in projected], dtype=np.float64)
        for _, data, axes, _ in arrays:
            grid = grid * _aligned(data, axes, fixed, projected)
        if sign == "-":
            grid = -grid
        flat = grid.reshape(-1)
        every.append(flat)
        absolute += float(np.abs(flat).sum())
        # a 0 adds nothing to a sum (a join's missing tuple); a max, min or mean reads it
        count += flat.size if op in _READS_ZEROS else int(np.count_nonzero(flat))
        order = np.argsort(_rank(flat, op), kind="stable")[:top]
        for at in order.tolist():
            if flat[at] == 0 and op not in _READS_ZEROS:
                continue
            where = dict(zip(projected, np.unravel_index(at, grid.shape))) if projected else {}
            where = {a: int(p) for a, p in where.items()}
            candidates.append((float(_rank(flat[at], op)), _term(model, info, arrays, fixed, where,
                                                           float(flat[at]), sign, written)))
    joined = np.concatenate(every) if every else np.zeros(0)
    reduce = {"max=": np.max, "min=": np.min, "avg=": np.mean}.get(op, np.sum)
    total = float(reduce(joined)) if joined.size else 0.0
    candidates.sort(key=lambda c: c[0])
    terms = tuple(t for _, t in candidates[:top])
    return terms, total, count, tuple(projected_all), absolute


_READS_ZEROS = ("max=", "min=", "avg=")


def _rank(values: Any, op: str) -> Any:
    """The order terms are shown in (ascending): a max's largest first, a min's
    smallest first (so the term that is the value comes first), else by magnitude."""
    if op == "max=":
        return -values
    if op == "min=":
        return values
    return -np.abs(values)


# the cells of one factor made dense at most (after the element's indices select)
MAX_DENSE = 50_000_000


def _dense_at(data: Any, axes: tuple[str, ...], fixed: dict[str, int]
              ) -> tuple[np.ndarray, tuple[str, ...]]:
    """A factor's value as a dense float64 array: a sparse one (a relation of millions
    of tuples) is first cut to the element's row or column, never densified whole."""
    if hasattr(data, "on_numpy"):
        data = data.on_numpy()
        matrix = getattr(data, "matrix", None)
        if matrix is not None and len(axes) == 2 and any(a in fixed for a in axes):
            if axes[0] in fixed:  # the element's row: the other axis left
                part = matrix[[fixed[axes[0]]], :].toarray()[0]
                return np.asarray(part, dtype=np.float64), (axes[1],)
            part = matrix[:, [fixed[axes[1]]]].toarray()[:, 0]
            return np.asarray(part, dtype=np.float64), (axes[0],)
        size = int(np.prod(data.shape))
        if size > MAX_DENSE:
            raise ValueError(f"a sparse factor of {size:,} cells is too large to split")
        data = data.matrix.toarray() if matrix is not None else data.native().todense()
    return np.asarray(data, dtype=np.float64), axes


def _factor_list(term: ir.Expr) -> list[tuple[ir.Expr, bool]]:
    if isinstance(term, ir.Product):
        return [(f, op == "/") for f, op in zip(term.factors, term.ops)]
    return [(term, False)]


def _aligned(data: np.ndarray, axes: tuple[str, ...], fixed: dict[str, int],
             projected: tuple[str, ...]) -> np.ndarray:
    """A factor at the element (its LHS axes selected), broadcast over `projected`."""
    index = tuple(fixed[a] if a in fixed else slice(None) for a in axes)
    data = data[index] if axes else data
    left = [a for a in axes if a not in fixed]
    kept = [a for a in projected if a in left]  # (every axis left is projected)
    if left:
        data = np.transpose(data, [left.index(a) for a in kept])
    return np.reshape(data, [data.shape[kept.index(a)] if a in kept else 1
                             for a in projected])


def _term(model: Model, info: Any, arrays: list, fixed: dict[str, int], where: dict[str, int],
          value: float, sign: str, written: bool = True) -> Term:
    every = {**fixed, **where}
    factors = []
    for factor, data, axes, divide in arrays:
        at = tuple(every[a] for a in axes)
        text = _factor_text(model, info, factor, every, written)
        element = _element_read(model, factor, every)
        factors.append(Factor(f"1/{text}" if divide else text, float(data[at]),
                              *(element or (None, ()))))
    bindings = tuple((a, _index_value(info, a, p)) for a, p in where.items())
    return Term(bindings, tuple(factors), value)


def _index_value(info: Any, name: str, position: int) -> Any:
    return _at(info.values.get(name), position)


def _element_read(model: Model, factor: ir.Expr, every: dict[str, int]
                  ) -> tuple[str, tuple] | None:
    """The tensor and the index of one element a factor reads, if it is one."""
    if not isinstance(factor, ir.Ref) or factor.name not in model.analysis.tensors \
            or not factor.indices:
        return None
    index = []
    for ix in factor.indices:
        if isinstance(ix, ir.IndexVar) and ix.name in every:
            index.append(every[ix.name])
        elif isinstance(ix, ir.IndexShift) and all(t.name in every for t in ix.terms):
            index.append(sum(every[t.name] for t in ix.terms) + ix.offset)
        elif isinstance(ix, ir.IndexConst) and isinstance(ix.value, int):
            index.append(ix.value)
        else:
            return None
    axes = [a for a in model.analysis.tensors[factor.name].axes if not a.virtual]
    if len(axes) != len(index):
        return None
    tables = [model.analysis.domain_symbols.get(a.domain) for a in axes]
    # as `why` takes it: a value where the axis holds values, else the position
    return factor.name, tuple(_at(t, p) for t, p in zip(tables, index))


def _written(model: Model, k: int) -> bool:
    """Whether statement k's nodes have text of their own in the program (one a `fn`
    call wrote out has the call's span; one of an imported file, that file's)."""
    analysis = model.analysis
    inlined = analysis.inlined is not None and k in analysis.inlined.origins
    imports = analysis.imports
    span = analysis.program.statements[k].span
    return not inlined and (imports is None or imports.file_at(span.start) is None)


def _factor_text(model: Model, info: Any, factor: ir.Expr, every: dict[str, int],
                 written: bool = True) -> str:
    """A factor at the term's indices: `W[3, 7]`, `sqrt(Dk)` (as written, or as IR
    text where the statement has no text of its own)."""
    def text_of(node: Any, index: bool = False) -> str:
        if not written:
            return index_text(node) if index else expr_text(node)
        return model.analysis.text[node.span.start:node.span.end]

    text = text_of(factor)
    if not isinstance(factor, ir.Ref) or factor.indices is None:
        return text
    shown = []
    for ix in factor.indices:
        if isinstance(ix, ir.IndexVar) and ix.name in every:
            shown.append(show_value(_index_value(info, ix.name, every[ix.name])))
        elif isinstance(ix, ir.IndexShift) and all(t.name in every for t in ix.terms):
            shown.append(str(sum(every[t.name] for t in ix.terms) + ix.offset))
        else:
            shown.append(text_of(ix, index=True))
    open_, close = ("(", ")") if factor.paren else ("[", "]")
    return f"{factor.name}{open_}{', '.join(shown)}{close}"
