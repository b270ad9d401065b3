"""Writing an equation's value into its left-hand side tensor: a plain layout
when the LHS is distinct variables, else a scatter planned from shapes
(constants, offsets, pooling `x/2` combined by the equation's operator,
slices, repeated indices)."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from ...check import Analysis
from ...check.symbols import SUM_OPS, slice_name
from ...check.value_tables import constant_position, positions_of, value_array
from ...front import ir
from ..backends.base import Backend
from .labelled import LArray, expand_to
from .statement import EvaluationError, StatementInfo


def write_lhs(backend: Backend, analysis: Analysis, info: StatementInfo, value: LArray,
              shape: tuple[int, ...], op: str, fixed: dict[str, int] | None = None,
              skip: int | None = None, sparse: bool = False) -> Any:
    """Lay the RHS value out as the LHS tensor (shape `shape`), combining by `op`
    where several positions land in one cell (pooling `x/2`).  `skip` is an LHS
    position left out: a recurrence writes one row at a time.  `sparse`: the
    plan keeps the LHS tensor sparse."""
    stmt = info.stmt
    assert isinstance(stmt, ir.Equation)
    names = info.lhs_names
    if names is not None and skip is None and not fixed and value.axes == names \
            and tuple(backend.shape(value.data)) == tuple(shape):
        return value.data  # already laid out as the LHS: no copy
    if names is not None and skip is not None and fixed and len(fixed) == 1 \
            and names[skip] in fixed and value.axes == names[:skip] + names[skip + 1:] \
            and tuple(backend.shape(value.data)) == tuple(shape):
        return value.data  # one row (a generation step's, a recurrence's), laid out
    fixed = fixed or {}
    lhs = stmt.lhs
    indices = [_symbol_position(analysis, lhs.name, pos, i)
               for pos, i in enumerate(lhs.indices or ())
               if not isinstance(i, ir.IndexVirtual) and pos != skip]
    if lhs.indices is None:
        if value.axes and all(a.startswith("#") for a in value.axes):
            return backend.broadcast_to(value.data, shape)  # bare W = const([...])
        return backend.broadcast_to(value.data, shape)
    names = _plain_names(indices, fixed)
    if fixed and names is not None and value.axes == tuple(names) \
            and tuple(backend.shape(value.data)) == tuple(shape):
        return value.data  # a row already laid out as the LHS's (a recurrence's, a step's)
    if names is not None and len(set(names)) == len(names) \
            and _slices_fill_their_axes(backend, value, names, shape):
        extents = {n: e for n, e in zip(names, shape)}
        stray = [a for a in value.axes if a not in names]
        if stray:
            raise EvaluationError(f"indices {', '.join(stray)} are left over on the right-hand "
                                  f"side")
        return backend.copy(expand_to(backend, value, tuple(names), extents))
    diagonal = _sparse_diagonal(backend, value, indices, shape, fixed) if sparse else None
    if diagonal is not None:
        return diagonal
    pooled = None if sparse or fixed or skip is not None else _pooled(backend, info, value, indices, shape, op)
    if pooled is not None:
        return pooled
    spread = _sparse_scatter(backend, info, value, indices, shape, op, fixed) if sparse else None
    if spread is not None:
        return spread
    return _scatter(backend, info, value, indices, shape, op, fixed)


# pooling blocks up to this size are summed as slices (_pooled)
SUMMED_SLICES = 8

# a diagonal head (`R(x, x) = ...`) of this many cells or more is written sparse
SPARSE_DIAGONAL_CELLS = 1 << 16


def _sparse_diagonal(backend: Backend, value: LArray, indices: list, shape: tuple[int, ...],
                     fixed: dict[str, int]) -> Any:
    """`R(x, x) = V(x, y)` on a backend that keeps relations sparse: the value's
    non-zeros put on the diagonal of a sparse tensor, rather than a scatter over
    every cell of a large square (CSPA's `ValueFlow(x, x) = Assign(x, y)` on
    10,000 variables: 800 MB of counts).  Each cell gets one value, so every
    operator writes it as it is.  None when the head is any other."""
    import numpy as np

    if not backend.sparse or len(shape) != 2 or fixed or shape[0] * shape[1] < \
            SPARSE_DIAGONAL_CELLS or not all(isinstance(i, ir.IndexVar) for i in indices) \
            or indices[0].name != indices[1].name or value.axes != (indices[0].name,):
        return None
    vector = np.asarray(backend.to_numpy(value.data)).reshape(-1)[:min(shape)]
    at = np.flatnonzero(vector)
    from ..sparse.value import sp

    return backend.sparse_from(sp.csr_array((vector[at], (at, at)), shape=shape))


def _pooled(backend: Backend, info: StatementInfo, value: LArray, indices: list,
            shape: tuple[int, ...], op: str) -> Any:
    """Pooling in blocks (`Pool[n,x/2,y/2] = F[n,x,y]`, each LHS index a distinct
    variable or one divided): the value laid out in the LHS order, each divided
    axis split into (blocks, divisor) and the divisor's axes reduced by `op`, so a
    framework reshapes and sums where the scatter would index every cell (and its
    gradient would gather them back).  The divided extent must fill its blocks
    (a sum pads the last one with zeros).  None for any other LHS."""
    names = [i.name if isinstance(i, ir.IndexVar) else getattr(getattr(i, "var", None),
                                                                "name", None)
             for i in indices]
    if op not in ("sum", "avg", "max", "min") or None in names or len(names) != len(shape) \
            or len(set(names)) != len(names) \
            or not any(isinstance(i, ir.IndexDiv) for i in indices) \
            or not all(isinstance(i, (ir.IndexVar, ir.IndexDiv)) for i in indices) \
            or any(a not in names for a in value.axes):
        return None
    sizes = backend.shape(value.data)
    extents = {n: sizes[value.axes.index(n)] if n in value.axes else info.extents.get(n)
               for n in names}
    split: list[int] = []
    blocks: list[int] = []
    pads: list[tuple[int, int]] = []
    for k, (index, size) in enumerate(zip(indices, shape)):
        extent = extents[names[k]]
        if extent is None:
            return None
        if isinstance(index, ir.IndexVar):
            if extent != size:
                return None
            split.append(size)
            continue
        if index.divisor > extent:  # (one block, padded past the data: `i/2^62` would
            return None  # pad with 2^62 zeros)
        filled = size * index.divisor
        if not (extent == filled or (op == "sum" and filled - index.divisor < extent < filled)):
            return None
        if extent != filled:
            pads.append((k, filled - extent))
        split.extend((size, index.divisor))
        blocks.append(len(split) - 1)
    data = expand_to(backend, value, tuple(names), extents)
    for k, missing in pads:  # the last block's cells past the extent: zeros
        grown = list(backend.shape(data))
        grown[k] = missing
        data = backend.concatenate([data, backend.zeros(tuple(grown))], k)
    data = backend.reshape(data, tuple(split))
    if op not in ("sum", "avg") or max(split[b] for b in blocks) > SUMMED_SLICES:
        return backend.reduce(op, data, tuple(blocks))
    # a block's few cells added as slices: a framework's reduction over short inner
    # axes is many times slower (torch on the CPU: 12 ms against 0.5 ms, and so
    # its gradient), and the slices are views
    for axis in reversed(blocks):
        parts = [data[(slice(None),) * axis + (j,)] for j in range(split[axis])]
        data = parts[0]
        for part in parts[1:]:
            data = data + part
    return data / float(math.prod(split[b] for b in blocks)) if op == "avg" else data


def _plain_names(indices: list, fixed: dict[str, int]) -> list[str] | None:
    """The LHS as one name per axis when it lays the value out as it is: variables,
    and slices from position 0 (`X[n,:,c] = C[n,0:64,c]`); None when a cell moves."""
    names = []
    for index in indices:
        if isinstance(index, ir.IndexVar) and index.name not in fixed:
            names.append(index.name)
        elif isinstance(index, ir.IndexSlice) and not index.start:
            names.append(slice_name(sum(n.startswith(":") for n in names)))
        else:
            return None
    return names


def _slices_fill_their_axes(backend: Backend, value: LArray, names: list[str],
                            shape: tuple[int, ...]) -> bool:
    """Whether the value spans each slice's whole LHS axis (else the cells past
    it are zeros, or a broadcast covers only the slice: the scatter writes them)."""
    sizes = backend.shape(value.data)
    return all(n in value.axes and sizes[value.axes.index(n)] == extent
               for n, extent in zip(names, shape) if n.startswith(":"))


def _symbol_position(analysis: Analysis, name: str, pos: int, index: Any) -> Any:
    """A constant on the LHS (`S[Bob] = 2`, `N(0)`) as its position in the axis'
    domain; an offset on an axis that holds values as a _ValueShift."""
    domain = analysis.tensors[name].axes[pos].domain
    if isinstance(index, ir.IndexConst):
        return ir.IndexConst(constant_position(analysis, domain, index.value), index.span)
    if isinstance(index, ir.IndexShift) and domain in analysis.domain_symbols:
        return _ValueShift(index, analysis.domain_symbols[domain])
    return index


class _ValueShift(NamedTuple):
    """`N(m + 1)` on a head whose column holds values: the cell of the value
    `offset + Σ terms` among `values` (check.value_tables)."""

    shift: ir.IndexShift
    values: tuple


def _scatter(backend: Backend, info: StatementInfo, value: LArray, indices: list,
             shape: tuple[int, ...], op: str, fixed: dict[str, int]) -> Any:
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
            inner = index.shift if isinstance(index, _ValueShift) else index
            names.extend(v.name for v in ir.index_vars(inner) if v.name not in fixed)
    names = list(dict.fromkeys(names))
    extents = {}
    for n in names:
        if n in value.axes:
            extents[n] = backend.shape(value.data)[value.axes.index(n)]
        else:
            ext = info.extents.get(n)
            if ext is None:
                raise EvaluationError(f"the extent of index `{n}` is not known")
            extents[n] = ext
    stray = [a for a in value.axes if a not in names]
    if stray:
        raise EvaluationError(f"indices {', '.join(stray)} are left over on the right-hand side")
    data = expand_to(backend, value, tuple(names), extents)
    cells, targets, counts = _scatter_plan(indices, names, extents, shape, fixed, info.values)
    size = int(np.prod(shape))
    if targets.size == 0:
        return backend.zeros(shape)
    values = backend.take(backend.reshape(data, (-1,)), cells, 0)
    init = {"sum": 0.0, "avg": 0.0, "max": -np.inf, "min": np.inf}[op]
    out = backend.scatter("sum" if op == "avg" else op, size, targets, values, init)
    if op == "avg":
        out = out / backend.asarray(np.maximum(counts, 1))
    elif op != "sum":
        out = backend.where(backend.asarray(counts > 0) > 0, out, 0.0)  # untouched cells are 0
    return backend.reshape(backend.asarray(out), shape)


def _scatter_plan(indices: list, names: list[str], extents: dict[str, int],
                  shape: tuple[int, ...], fixed: dict[str, int], held: dict[str, tuple]):
    """Where each cell of the RHS (laid out over `names`) lands in the flat LHS,
    from shapes alone: the cells that land inside, their targets, and how many
    land in each target."""
    import numpy as np

    grid_shape = tuple(extents[n] for n in names)
    grids = np.meshgrid(*[np.arange(extents[n]) for n in names], indexing="ij") if names else []
    cells, flat = _landing(indices, dict(zip(names, grids)), grid_shape, extents, shape, fixed,
                           held)
    counts = np.bincount(flat, minlength=int(np.prod(shape)))
    return cells, flat, counts


def _landing(indices: list, env: dict[str, Any], grid_shape: tuple[int, ...],
             extents: dict[str, int], shape: tuple[int, ...], fixed: dict[str, int],
             held: dict[str, tuple]) -> tuple[Any, Any]:
    """Where the RHS's cells land in the flat LHS: `env` gives each variable's
    position at every cell (arrays of `grid_shape`); the cells that land inside,
    and their targets."""
    import numpy as np

    targets = []
    valid = np.ones(grid_shape, dtype=bool)
    valid = np.ones(grid_shape, dtype=bool)
    slices = 0
    for axis_size, index in zip(shape, indices):
        if isinstance(index, ir.IndexVar):
            pos = env[index.name] if index.name not in fixed else fixed[index.name]
        elif isinstance(index, ir.IndexConst):
            pos = int(index.value)
        elif isinstance(index, ir.IndexShift) and not held:
            pos = index.offset + sum(env[v.name] if v.name not in fixed else fixed[v.name]
                                     for v in index.terms)
        elif isinstance(index, (ir.IndexShift, _ValueShift)):
            shift = index.shift if isinstance(index, _ValueShift) else index
            total = shift.offset + sum(
                value_array(held.get(v.name), extents.get(v.name) or 0)[
                    env[v.name] if v.name not in fixed else fixed[v.name]]
                if v.name in held else (env[v.name] if v.name not in fixed else fixed[v.name])
                for v in shift.terms)
            pos = positions_of(index.values if isinstance(index, _ValueShift) else None,
                               axis_size, np.asarray(total))
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
    return cells, flat


# a head's scatter over a value of this many cells or more is planned from the
# value's non-zeros where the head is kept sparse (_sparse_scatter)
SPARSE_SCATTER_CELLS = 1 << 20


def _sparse_scatter(backend: Backend, info: StatementInfo, value: LArray, indices: list,
                    shape: tuple[int, ...], op: str, fixed: dict[str, int]) -> Any:
    """A head of constants and offsets kept sparse (`Later(e, t + 3600) =
    Event(e, t)` over timestamps) written from the value's non-zeros, not from
    a plan over every cell of its grid (20,000 events by 40,000 times: 6 GB of
    positions).  A sum only: a zero adds nothing to it, where `max=`, `min=` and
    `avg=` count every cell.  None for any other head or a small value."""
    import numpy as np

    from ..sparse.value import is_sparse, sp

    kinds = (ir.IndexVar, ir.IndexConst, ir.IndexShift, _ValueShift)
    if op != "sum" or not backend.sparse or (len(shape) != 2 and backend.name != "numpy") \
            or not all(isinstance(i, kinds) for i in indices):
        return None
    sizes = tuple(backend.shape(value.data))
    variables = {v.name for i in indices for v in ir.index_vars(
        i.shift if isinstance(i, _ValueShift) else i)} - set(fixed)
    if variables != set(value.axes) or len(value.axes) != len(sizes) \
            or math.prod(sizes) < SPARSE_SCATTER_CELLS:
        return None  # (an axis the value lacks broadcasts: the plain scatter)
    if is_sparse(value.data):
        entries = sp.coo_array(value.data.on_numpy().native())
        coords, data = entries.coords, entries.data
    else:
        dense = np.asarray(backend.to_numpy(value.data))
        coords = np.nonzero(dense)
        data = dense[coords]
    extents = dict(zip(value.axes, sizes))
    cells, flat = _landing(indices, dict(zip(value.axes, coords)), (len(data),), extents,
                           shape, fixed, info.values)
    at = np.unravel_index(flat, shape)
    return backend.sparse_from(sp.coo_array((data[cells], at), shape=shape))


def head_coverage(analysis: Analysis, info: StatementInfo,
                  shape: tuple[int, ...]) -> Any:
    """The cells of its tensor an equation writes, from its head alone: None for
    every cell (distinct variables), else a NumPy Boolean array (`D[0]`, `D[Bob]`,
    `X[i+1]`, `Y[i,1:3]`).  `max=`, `min=` and `avg=` combine a tensor's equations
    only over the equations that write a cell (LANGUAGE.md §6): a cell an
    equation leaves alone is not a 0 of that equation.  None also where the
    head's extents are not known before the run (the scatter then says why)."""
    stmt = info.stmt
    assert isinstance(stmt, ir.Equation)
    lhs = stmt.lhs
    if lhs.indices is None:
        return None
    indices = [_symbol_position(analysis, lhs.name, pos, i)
               for pos, i in enumerate(lhs.indices) if not isinstance(i, ir.IndexVirtual)]
    if len(indices) != len(shape):
        return None
    names: list[str] = []
    extents: dict[str, int] = {}
    slices = 0
    for index, size in zip(indices, shape):
        if isinstance(index, ir.IndexSlice):
            name = slice_name(slices)
            slices += 1
            start, stop = index.start or 0, size if index.stop is None else index.stop
            extents[name] = max(0, min(stop, size) - start)
            names.append(name)
            continue
        inner = index.shift if isinstance(index, _ValueShift) else index
        for var in ir.index_vars(inner):
            extent = info.extents.get(var.name)
            if extent is None:
                return None
            extents[var.name] = extent
            names.append(var.name)
    names = list(dict.fromkeys(names))
    if all(isinstance(i, ir.IndexVar) for i in indices) and len(names) == len(indices):
        return None
    _, _, counts = _scatter_plan(indices, names, extents, shape, {}, info.values)
    covered = counts.reshape(shape) > 0
    return None if covered.all() else covered


def takes_no_value(info: StatementInfo) -> bool:
    """Whether the equation's operator (`max=`, `min=`) projects an index that has no
    positions: it takes no value, so it writes no cell, and a tensor's other
    equations combine without it (docs/language.md, decision 22).  Alone, its cells
    are 0, as a cell nothing writes; `reduce` over no positions is 0 (Backend.reduce).
    (An `avg=` over none is the mean of nothing, NaN, as PyTorch's and NumPy's.)"""
    return any(op in ("max", "min") and info.extents.get(name) == 0
               for name, op in info.projected_at.get(0, {}).items())


def equation_op(stmt: ir.Equation) -> str:
    return "sum" if stmt.op in SUM_OPS else stmt.op[:-1]


def put_row(backend: Backend, value: Any, row: Any, shape: tuple[int, ...], position: int,
             step: int) -> Any:
    """`value` with its row `step` along axis `position` replaced by `row`, without
    writing in place (a framework's gradient flows through both).  A choice, not
    `value * (1 - mask) + row * mask`: an inf in any row made every row NaN (inf * 0),
    where NumPy's write in place keeps each row's own value."""
    import numpy as np

    mask_shape = [1] * len(shape)
    mask_shape[position] = shape[position]
    mask = np.zeros(mask_shape, dtype=bool)
    mask.reshape(-1)[step] = True
    row = backend.reshape(row, shape[:position] + (1,) + shape[position + 1:])
    return backend.where(mask, row, value)
