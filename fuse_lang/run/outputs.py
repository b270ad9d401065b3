"""What a run hands back: its outputs as arrays, its queries' answers, its sinks' files."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Collection, Mapping

import numpy as np

from ..check import Analysis
from ..check.symbols import slice_name
from ..check.value_tables import constant_position
from ..front import ir
from ..front.wildcards import is_wildcard
from ..io.relation_tuples import AxisValues, relation_tuples, stored_entries
from ..io.sinks import check_sink_path, write_sink, write_topk_pairs
from ..io.source_files import FileProblem
from .backends.base import Backend
from .interpret.evaluate import EvaluationError, Evaluator, StatementInfo
from .interpret.labelled import LArray
from .memory import default_limit, failure_words
from .results import FuseError, QueryAnswer
from .sparse.csr import SparseTensor
from .sparse.value import is_sparse


def output_names(analysis: Analysis, deps: Mapping[str, set[str]]) -> list[str]:
    """The exports; with none, each tensor nothing reads (none when there are queries)."""
    names = list(dict.fromkeys(analysis.exports))
    if names:
        return names
    if any(isinstance(s, ir.Query) for s in analysis.program.statements):
        return []
    read: set[str] = set()
    for reads in deps.values():
        read |= reads
    return [n for n in analysis.tensors if n not in read]


def outputs(backend: Backend, values: Mapping[str, Any], names: list[str],
            constants: Collection[str], native: bool) -> dict[str, Any]:
    """The named values as NumPy arrays of their own (`native`: the backend's tensors)."""
    out = {}
    for n in names:
        if n in values and is_sparse(values[n]):  # handed back sparse, never densified
            # scipy.sparse; `native`: the framework's own (torch.sparse, BCOO)
            out[n] = values[n].native() if native else values[n].on_numpy().native()
        elif n in values and native and backend.name != "numpy":
            out[n] = backend.asarray(values[n])
        elif n in values:
            array = np.asarray(backend.to_numpy(values[n]))
            # never hand out a value the program keeps (a constant) to be written
            if not (array.flags.owndata and array.flags.writeable) or n in constants:
                array = array.copy()  # never hand out a view of an input or a broadcast
            out[n] = array
    return out


def tensor_axes(analysis: Analysis, name: str) -> list[AxisValues]:
    """Each axis of a tensor's value (a virtual axis is not one): its domain's
    values by position, or None where the axis is positional."""
    tensor = analysis.tensors.get(name)
    if tensor is None:
        return []
    return [analysis.domain_symbols.get(axis.domain) for axis in tensor.axes
            if not axis.virtual]


def relation_axes(analysis: Analysis, name: str) -> list[AxisValues] | None:
    """A Boolean tensor's axes as `io.relation_tuples` reads them: per axis of its
    value (a virtual axis is not one) the values of its domain by position, or
    None where the axis is positional; None for a tensor that is not Boolean.
    Its tuples as values: `relation_tuples(value, relation_axes(analysis, name))`."""
    tensor = analysis.tensors.get(name)
    if tensor is None or not tensor.boolean:
        return None
    return tensor_axes(analysis, name)


def answer(analysis: Analysis, backend: Backend, info: StatementInfo, values: Mapping[str, Any],
           stmt: ir.Query) -> QueryAnswer:
    """A query's answer: the tensor with its constants selected, and for a Boolean
    tensor the matching tuples as values, sorted by value (io.relation_tuples)."""
    atom = stmt.atom
    text = analysis.text[stmt.span.start:stmt.span.end]
    tensor = analysis.tensors[atom.name]
    value = values[atom.name]
    starts: list[int] = []  # per answer axis: the position its 0 is (a slice's start)
    if atom.indices is None and is_sparse(value):  # `Reach?`: every tuple
        free = tuple(a.index or f"#{p}" for p, a in enumerate(tensor.axes))
        selected, free, axes = _relation_answer(analysis, value, atom) \
            if getattr(value, "ndim", 2) > 2 else \
            _sparse_answer(analysis, value.on_numpy(), atom, free)
    elif atom.indices is None:
        selected = np.asarray(backend.to_numpy(value)).copy()
        free = tuple(a.index or f"#{p}" for p, a in enumerate(tensor.axes) if not a.virtual)
        axes = list(range(selected.ndim))
    elif any(not isinstance(ix, (ir.IndexVar, ir.IndexConst)) for ix in atom.indices):
        selected, free, axes, starts = _read(analysis, backend, info, values, atom)
    elif is_sparse(value) and getattr(value, "ndim", 2) > 2:
        selected, free, axes = _relation_answer(analysis, value, atom)
    elif is_sparse(value):
        selected, free, axes = _sparse_answer(analysis, value.on_numpy(), atom)
    else:
        selected, free, axes = _select(analysis, np.asarray(backend.to_numpy(value)), atom)
    tuples = keys = None
    starts = starts or [0] * len(axes)
    if tensor.boolean and any(is_wildcard(name) for name in free):  # `R(x, _)?`: any value
        selected, free, axes, starts = _wildcards_projected(selected, free, axes, starts)
    shape = tuple(selected.shape)
    columns = [_axis_values(analysis.domain_symbols.get(tensor.axes[axis].domain), start,
                            shape[k]) for k, (axis, start) in enumerate(zip(axes, starts))]
    if tensor.boolean:
        tuples = relation_tuples(selected, columns).rows()
    elif isinstance(selected, np.ndarray) and any(
            analysis.domain_symbols.get(tensor.axes[axis].domain) is not None for axis in axes):
        keys = tuple(columns)  # (`Count[x]?` over names: which name each number is)
    return QueryAnswer(text, atom.name, selected, free, tuples, keys)


def _wildcards_projected(selected: Any, free: tuple[str, ...], axes: list[int], starts: list[int]
                         ) -> tuple[Any, tuple[str, ...], list[int], list[int]]:
    """A Boolean answer without its `_` axes (LANGUAGE.md §13: `_` is any value):
    1 where some value of them holds, as Datalog's anonymous variable."""
    kept = [k for k, name in enumerate(free) if not is_wildcard(name)]
    if isinstance(selected, np.ndarray):
        dropped = tuple(k for k in range(len(free)) if k not in kept)
        selected = np.asarray(selected.max(axis=dropped, initial=0))
    else:  # a scipy.sparse answer: its entries, the kept axes' repeats combined
        from .sparse.nd import value_of_entries

        coords, data = stored_entries(selected, True)
        shape = tuple(selected.shape[k] for k in kept)
        selected = value_of_entries(shape, [coords[k] for k in kept], data, selected.dtype,
                                    op="max")
        selected = selected.native() if len(shape) >= 2 else selected
    return (selected, tuple(free[k] for k in kept), [axes[k] for k in kept],
            [starts[k] for k in kept])


def _axis_values(symbols: AxisValues, start: int, extent: int) -> AxisValues:
    """An answer axis' values by position, where its 0 is the tensor's `start`."""
    if not start:
        return symbols
    return symbols[start:] if symbols else range(start, start + extent)


def _sparse_answer(analysis: Analysis, value: SparseTensor, atom: ir.Ref,
                   free: tuple[str, ...] = ()) -> tuple[Any, tuple[str, ...], list[int]]:
    """A query of a sparse tensor, read off its non-zeros: `R(x,y)?` (or `R?`, whose
    axes are named `free`) answers with a scipy sparse array, `R(A,y)?` with the
    (dense) row, `R(A,B)?` with the cell; with its variables and the tensor's
    axis each is."""
    fixed = {pos: _constant_position(analysis, atom.name, pos, ix)
             for pos, ix in enumerate(atom.indices or ()) if isinstance(ix, ir.IndexConst)}
    names = [ix.name for ix in atom.indices or () if isinstance(ix, ir.IndexVar)] or list(free)
    rows, cols, stored = _nonzeros(value)
    keep = np.ones(rows.shape[0], dtype=bool)
    for pos, position in fixed.items():
        keep &= (rows if pos == 0 else cols) == position
    found = np.stack([rows[keep], cols[keep]], axis=1)
    stored = stored[keep]
    free_axes = [pos for pos in range(2) if pos not in fixed]
    if len(names) == 2 and names[0] == names[1]:  # `R(x,x)?`: the diagonal
        diagonal = found[:, 0] == found[:, 1]
        found, stored = found[diagonal], stored[diagonal]
        free_axes = [0]
        names = names[:1]
    shape = [value.shape[pos] for pos in free_axes]
    if len(free_axes) == 2:
        selected: Any = value.matrix.copy()
    elif not free_axes:  # a closed query: the one cell
        selected = np.asarray(stored[0] if len(found) else 0.0, dtype=value.dtype)
    else:
        selected = np.zeros(shape, dtype=value.dtype)
        selected[tuple(found[:, pos] for pos in free_axes)] = stored
    return selected, tuple(names), free_axes


def _nonzeros(value: SparseTensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored (row, column, value) of a sparse tensor, row by row."""
    coo = value.matrix.tocoo()
    real = coo.data != 0
    rows, cols, data = coo.row[real], coo.col[real], coo.data[real]
    order = np.lexsort((cols, rows))
    return rows[order], cols[order], data[order]


def _relation_answer(analysis: Analysis, value: Any, atom: ir.Ref
                     ) -> tuple[Any, tuple[str, ...], list[int]]:
    """A query of a sparse relation of 3 axes or more (run/sparse/nd.py), read off its
    tuples: as the value a scipy.sparse COO array (two free axes or more), a dense
    vector (one) or the cell (none); with its variables and the tensor's axis each is."""
    from .sparse.nd import value_of_entries

    tensor = analysis.tensors[atom.name]
    value = value.on_numpy()
    coords = value.coords()
    keep = value.data > 0
    free: list[int] = []
    names: list[str] = []
    indices = atom.indices if atom.indices is not None else (None,) * len(coords)
    for pos, ix in enumerate(indices):  # (a bare `R?`: every axis free)
        if isinstance(ix, ir.IndexConst):
            keep &= coords[pos] == _constant_position(analysis, atom.name, pos, ix)
        elif isinstance(ix, ir.IndexVar) and ix.name in names:  # `R(x, x, y)?`
            keep &= coords[pos] == coords[free[names.index(ix.name)]]
        else:
            free.append(pos)
            names.append(ix.name if ix is not None else  # type: ignore[union-attr]
                         tensor.axes[pos].index or f"#{pos}")
    found = [coords[pos][keep] for pos in free]
    shape = tuple(value.shape[pos] for pos in free)
    selected = value_of_entries(shape, found, value.data[keep], value.dtype) if free else \
        np.asarray(1.0 if keep.any() else 0.0, dtype=value.dtype)
    if len(free) >= 2:
        selected = selected.native()
    return selected, tuple(names), free


def _read(analysis: Analysis, backend: Backend, info: StatementInfo, values: Mapping[str, Any],
          atom: ir.Ref) -> tuple[np.ndarray, tuple[str, ...], list[int], list[int]]:
    """`Y[t+1]?`, `Y[1:3]?`: read like any reference (shifted, sliced), as a sink
    does; the answer's axes, the tensor axis each is, and where each starts."""
    read = Evaluator(backend, analysis, info, values).scope(atom, 0)
    selected = np.asarray(backend.to_numpy(read.data))
    where: dict[str, tuple[int, int]] = {}  # axis of the answer -> (tensor axis, start)
    slices = 0
    for pos, ix in enumerate(atom.indices or ()):
        if isinstance(ix, ir.IndexSlice):
            where[slice_name(slices)] = (pos, ix.start or 0)
            slices += 1
        else:
            for v in ir.index_vars(ix):
                where.setdefault(v.name, (pos, 0))
    axes = [where.get(name, (0, 0))[0] for name in read.axes]
    starts = [where.get(name, (0, 0))[1] for name in read.axes]
    return selected, tuple(read.axes), axes, starts


def _select(analysis: Analysis, value: np.ndarray, atom: ir.Ref
            ) -> tuple[np.ndarray, tuple[str, ...], list[int]]:
    """`Path(Alice, y)?`: the constants selected, the variables left as axes."""
    index: list[Any] = []
    axes = []
    names = []
    indices = atom.indices if atom.indices is not None else (None,) * value.ndim
    for pos, ix in enumerate(indices):  # (a bare `R?`: every axis free)
        if isinstance(ix, ir.IndexConst):
            index.append(_constant_position(analysis, atom.name, pos, ix))
        else:
            index.append(slice(None))
            axes.append(pos)
            names.append(ir.index_vars(ix)[0].name if ir.index_vars(ix) else f"#{pos}")
    inside = all(not isinstance(i, int) or 0 <= i < value.shape[p] for p, i in enumerate(index))
    if inside:
        selected = np.array(value[tuple(index)])  # a copy: never a view of a value
    else:  # a constant outside the axis reads 0 (LANGUAGE.md §3): the answer is no
        selected = np.zeros([value.shape[p] for p in axes], dtype=value.dtype)
    unique = list(dict.fromkeys(names))
    if len(unique) < len(names):  # `Path(x, x)?`: a repeated variable is the diagonal
        letters = {n: chr(ord("a") + k) for k, n in enumerate(unique)}
        selected = np.einsum("".join(letters[n] for n in names) + "->" +
                             "".join(letters[n] for n in unique), selected).copy()
        axes = [axes[names.index(n)] for n in unique]
        names = unique
    return selected, tuple(names), axes


def _constant_position(analysis: Analysis, name: str, pos: int, ix: ir.IndexConst) -> int:
    return constant_position(analysis, analysis.tensors[name].axes[pos].domain, ix.value)


def write(analysis: Analysis, backend: Backend, info: StatementInfo, values: Mapping[str, Any],
          stmt: ir.Sink, base_dir: Path, allow_outside: bool) -> str:
    """Write a sink's value to its file; returns the path written."""
    evaluator = Evaluator(backend, analysis, info, values)
    target = _sink_target(analysis, stmt, base_dir, allow_outside)
    rhs = stmt.rhs
    try:
        if isinstance(rhs, ir.Call) and rhs.name == "topk" \
                and target.suffix.lower() in (".json", ".jsonl"):
            rows = _topk_pairs(backend, evaluator.arg(rhs.args[0]), rhs)
            if getattr(backend, "writes_files", True):  # process 0 of a group
                write_topk_pairs(target, rows)
            return str(target)
        value: LArray = evaluator.scope(rhs, 0)
    except (EvaluationError, FileProblem, FloatingPointError, ValueError, RuntimeError,
            MemoryError) as err:
        raise FuseError(f"{_where(analysis, stmt)}: {failure_words(err)}") from None
    except OSError as err:
        raise FuseError(f"{_where(analysis, stmt)} cannot be written: "
                        f"{err.strerror or err}") from None
    data = _sink_data(backend, value.data)
    boolean = False
    symbols: list = []
    name = "value"
    if isinstance(stmt.rhs, ir.Ref) and stmt.rhs.name in analysis.tensors:
        tensor = analysis.tensors[stmt.rhs.name]
        boolean = tensor.boolean
        # one list of names per axis of the value (its free indices, in its order):
        # `R(Alice, y)` writes y's names, from R's second axis
        by_var: dict[str, Any] = {}
        for pos, ix in enumerate(stmt.rhs.indices or ()):
            if isinstance(ix, ir.IndexVar) and pos < len(tensor.axes):
                by_var.setdefault(ix.name, analysis.domain_symbols.get(tensor.axes[pos].domain))
        if stmt.rhs.indices is None:
            symbols = [analysis.domain_symbols.get(ax.domain) for ax in tensor.axes]
        else:
            symbols = [by_var.get(axis) for axis in value.axes]
        name = stmt.rhs.name
    else:  # an expression: its free indices' values
        symbols = [info.values.get(axis) for axis in value.axes]
    if not getattr(backend, "writes_files", True):
        return str(target)  # another process of the group (process 0) writes it
    try:
        write_sink(target, name, data, boolean, symbols, dense_limit=default_limit())
    except FileProblem as err:
        raise FuseError(f"{_where(analysis, stmt)}: {err}") from None
    except UnicodeEncodeError as err:  # a lone surrogate, from a program given as a str
        bad = err.object[err.start:err.end].encode("utf-8", "backslashreplace").decode()
        raise FuseError(f"{_where(analysis, stmt)} cannot be written: a value holds {bad}, "
                        f"half of a UTF-16 pair alone, which UTF-8 cannot write") from None
    except OSError as err:
        where = f" ({err.filename})" if getattr(err, "filename", None) else ""
        raise FuseError(f"{_where(analysis, stmt)} cannot be written: "
                        f"{err.strerror or err}{where}") from None
    return str(target)


def _sink_data(backend: Backend, data: Any) -> Any:
    """A sink's value as NumPy: a dense array, or a sparse one as scipy.sparse (CSR
    for two axes, an N-D COO array for a relation of more), never densified."""
    if not is_sparse(data):
        return np.asarray(backend.to_numpy(data))
    data = data.on_numpy()
    return data.matrix if isinstance(data, SparseTensor) else data.native()


def _topk_pairs(backend: Backend, x: LArray, call: ir.Call) -> list[list[list]]:
    """`"top.jsonl" = topk(X[p,t], k=5)`: per row along the last axis, the k largest
    as (index, score) pairs, descending, ties to the lower index (as the seed DSL
    writes them); k is capped at the row's length."""
    count = next(kw.value for kw in call.kwargs if kw.name == "k")
    k = int(count.text) if isinstance(count, ir.Number) and count.text.isdigit() else 1
    data = np.asarray(x.data.on_numpy().toarray() if is_sparse(x.data)
                      else backend.to_numpy(x.data), dtype=np.float64)
    rows = np.atleast_2d(data).reshape(-1, data.shape[-1] if data.ndim else 1)
    out = []
    for row in rows:
        order = np.argsort(-row, kind="stable")[:k]
        out.append([[int(i), float(row[i])] for i in order])
    return out


def check_sinks(analysis: Analysis, base_dir: Path, allow_outside: bool) -> None:
    """Refuse the run (FuseError) before anything runs when one of its sinks
    could not be written: no sink is written unless every sink can be."""
    for stmt in analysis.program.statements:
        if isinstance(stmt, ir.Sink):
            _sink_target(analysis, stmt, base_dir, allow_outside)


def _sink_target(analysis: Analysis, stmt: ir.Sink, base_dir: Path, allow_outside: bool
                 ) -> Path:
    try:
        return check_sink_path(base_dir, stmt.path.value, allow_outside)
    except FileProblem as err:
        raise FuseError(f"{_where(analysis, stmt)}: {err}") from None
    except OSError as err:  # resolving the path failed (a loop of links, say)
        raise FuseError(f"{_where(analysis, stmt)} cannot be written: "
                        f"{err.strerror or err}") from None


def _where(analysis: Analysis, stmt: ir.Sink) -> str:
    line = analysis.lines.position(stmt.span.start)[0] + 1
    return f"line {line}: sink {stmt.path.value!r}"
