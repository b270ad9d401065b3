"""A tensor's base: what it holds before its equations add to it.

That is a runtime input, a source file (dense, or a Boolean relation file
read as 0/1, its values at their positions in their domains), a param's starting values, or
its facts; a Boolean source is the union of its file and its facts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..check import INPUT_KINDS, SOURCE_KINDS, Analysis, TensorKind
from ..check.param_roles import ParamStart
from ..check.value_tables import column_positions, constant_position, domain_values
from ..front import ir
from ..io.source_data import load_dense, load_sparse_npz, relation_tuples_file
from ..io.sources import split_member
from .backends.base import Backend
from .interpret.evaluate import EvaluationError
from .param_init import initial_param
from .results import FuseError
from .sparse.csr import SparseTensor, from_rows
from .sparse.nd import SparseRelation

# sources that hold an array (a Boolean one read as 0/1), not a relation's tuples
ARRAY_SUFFIXES = (".npy", ".npz", ".safetensors")


def input_items(inputs: Any) -> list[tuple[str, Any]]:
    """The (name, value) pairs of a run's inputs (None: none), a value that is no
    array (a list of numbers, a number) made a NumPy array; FuseError for inputs
    that are not a mapping of names to values, or a value that is no array (None,
    a str, a dict, a ragged list)."""
    if inputs is None:
        return []
    if not isinstance(inputs, Mapping):
        raise FuseError(f"a run's inputs are a mapping of source or param names to arrays "
                        f"({{'X': x}}), not {type(inputs).__name__}")
    return [(name, value if hasattr(value, "shape") else _array(name, value))
            for name, value in inputs.items()]


def _array(name: Any, value: Any) -> np.ndarray:
    """A value given as an input that is not an array, as one: a number or (nested)
    lists of numbers; FuseError for what holds no array (the checker would call
    it an array of no axes, "the input has 0 axes", whatever its axes)."""
    what = "None" if value is None else f"a {type(value).__name__}"
    if value is None or isinstance(value, (str, bytes, Mapping, set, frozenset)):
        raise FuseError(f"the input for `{name}` is {what}, not an array: give a NumPy "
                        f"array (or a number, or lists of numbers)")
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as err:  # a ragged list
        raise FuseError(f"the input for `{name}` is {what} that makes no rectangular "
                        f"array of numbers (NumPy: {str(err).split('. ')[0]})") from None


def given_inputs(inputs: Any, backend: str) -> dict[str, Any]:
    """A run's inputs by name: a framework tensor of the run's own framework as it is
    (moved to the device once, when read), anything else as a NumPy array.  A torch
    tensor given to another backend is read off torch first (detached, bfloat16 as
    float32: NumPy has no bfloat16); a nested list that is not rectangular is a
    FuseError, never NumPy's ValueError (input_items)."""
    given = {}
    for name, value in input_items(inputs):
        if type(value).__module__.startswith("torch") and backend != "torch" \
                and hasattr(value, "detach"):
            value = value.detach().cpu()
            value = (value.float() if str(value.dtype) == "torch.bfloat16" else value).numpy()
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            value = np.asarray(value)  # (an array-like with a shape: lists are made above)
        given[name] = value
    return given


def _host_dtype(backend: Backend) -> Any:
    """The NumPy type positions are gathered in before a backend takes them sparse
    (its own float type where NumPy knows it: no conversion on NumPy)."""
    try:
        return np.dtype(backend.dtype)
    except TypeError:  # a torch dtype
        return np.float64


def load_base(analysis: Analysis, backend: Backend, base_dir: Path, given: Mapping[str, Any],
              name: str, shape: tuple[int, ...], sparse: bool = False,
              start: ParamStart | None = None) -> tuple[Any, bool]:
    """The input, source, param and facts of a tensor as one backend array, and
    whether it has any (None, False when it has none).  `sparse`: the plan keeps
    it sparse (a 2-D tensor; the backend has `sparse_from`), read without a
    dense intermediate where its form allows.  `start`: how a param starts
    (RunPlan.param_starts)."""
    info = analysis.tensors[name]
    if name in given:
        data = given[name]
        _refuse_non_numbers(name, data)
        if sparse:
            if info.boolean:
                refuse_nan(f"the input for `{name}`", name, data)
            data = backend.sparse_from(data)
            return (backend.step(data) if info.boolean else data), True
        if hasattr(data, "toarray"):  # a scipy.sparse input for a dense tensor
            data = data.toarray()
        if info.boolean:
            refuse_nan(f"the input for `{name}`", name, data)
            data = (data > 0)
        return _host_or_backend(backend, data), True
    statements = analysis.program.statements
    facts = [statements[k] for k in info.statements if isinstance(statements[k], ir.Fact)]
    file, key = split_member(info.source_path or "")
    if sparse and info.boolean and info.kind in SOURCE_KINDS \
            and Path(file).suffix.lower() not in ARRAY_SUFFIXES:
        rows = _relation_positions(analysis, name, base_dir / file)
        if facts:
            rows = np.concatenate([rows, np.array([fact_position(analysis, name, f.atom)
                                                   for f in facts], dtype=np.int64)])
        return backend.sparse_from(sparse_rows(shape, rows, _host_dtype(backend))), True
    if sparse and facts and info.kind not in INPUT_KINDS:
        rows = [fact_position(analysis, name, fact.atom) for fact in facts]
        return backend.sparse_from(sparse_rows(shape, rows, _host_dtype(backend))), True
    if info.kind in SOURCE_KINDS and \
            Path(info.source_path or "").suffix.lower() == ".npz":
        matrix = load_sparse_npz(base_dir / (info.source_path or ""), _host_dtype(backend))
        if matrix is not None:  # a scipy.sparse archive: straight into the sparse form
            return _sparse_file_base(analysis, backend, name, matrix, shape, facts, sparse), True
    if info.kind in SOURCE_KINDS:
        path = base_dir / file
        if (info.boolean and path.suffix.lower() not in ARRAY_SUFFIXES) \
                or (path.suffix.lower() == ".txt" and key is None):  # tokens, on ( ) or [ ]
            data = _relation(analysis, name, path, shape)
        else:
            # over a mesh a plain .npy or a safetensors tensor is memory-mapped: the
            # placement reads each process's slices only (run/backends/jax_sharding.py)
            data = load_dense(path, name, np.float64, key,
                              mapped=backend.sharded and not info.boolean and not facts,
                              header=_source_header(analysis, name))
            if data.shape != shape:
                raise EvaluationError(f"{info.source_path} holds shape {data.shape}, "
                                      f"expected {shape}")
            if info.boolean:
                refuse_nan(info.source_path or file, name, data)
                data = (data > 0).astype(np.float64)
        if facts:  # a Boolean tensor is the union of its facts and its relation file
            data = np.array(data, dtype=np.float64)
            for fact in facts:
                data[fact_position(analysis, name, fact.atom)] = 1.0
        if sparse:
            return backend.sparse_from(data), True
        return _host_or_backend(backend, data), True
    if info.kind == TensorKind.PARAM:
        return backend.asarray(initial_param(name, shape, None, start)), True
    if facts:
        out = np.zeros(shape)
        for fact in facts:
            out[fact_position(analysis, name, fact.atom)] = 1.0
        return backend.asarray(out), True
    return None, False


def fact_cover(analysis: Analysis, given: Mapping[str, Any], name: str,
               shape: tuple[int, ...]) -> np.ndarray | None:
    """The cells a tensor's facts write, where facts alone are its base (no input,
    source or param, which give every cell): a fact is a head with constants, and
    for `max=`/`min=`/`avg=` it leaves the other cells alone (docs/language.md,
    decision 22).  None where the base gives every cell, or there are no facts."""
    info = analysis.tensors[name]
    if name in given or info.kind in INPUT_KINDS:
        return None
    statements = analysis.program.statements
    facts = [statements[k] for k in info.statements if isinstance(statements[k], ir.Fact)]
    if not facts:
        return None
    cover = np.zeros(shape, dtype=bool)
    for fact in facts:
        cover[fact_position(analysis, name, fact.atom)] = True
    return cover


def _host_or_backend(backend: Backend, data: Any) -> Any:
    """A dense base as the backend's array; over a mesh (`sharded`) left on the host,
    where the placement takes it from (each process its own slices)."""
    if backend.sharded and (isinstance(data, np.ndarray) or getattr(data, "host_slices", False)):
        return data
    return backend.asarray(data)


def _sparse_file_base(analysis: Analysis, backend: Backend, name: str, matrix: Any,
                      shape: tuple[int, ...], facts: list, sparse: bool) -> Any:
    """A scipy.sparse file's matrix (and a Boolean tensor's facts) as the base: kept
    sparse when the plan says so, else read dense (a small or compiled run)."""
    if tuple(matrix.shape) != tuple(shape):
        raise EvaluationError(f"{analysis.tensors[name].source_path} holds shape "
                              f"{tuple(matrix.shape)}, expected {shape}")
    value = SparseTensor(matrix)
    if analysis.tensors[name].boolean:
        refuse_nan(analysis.tensors[name].source_path or name, name, matrix)
        value = value.step(matrix.dtype)
        if facts:
            rows = np.array([fact_position(analysis, name, f.atom) for f in facts])
            value = value + sparse_rows(shape, rows, matrix.dtype)
            value = value.step(matrix.dtype)
    if sparse:
        return backend.sparse_from(value)
    return backend.asarray(value.toarray())


def refuse_nan(where: str, name: str, data: Any) -> None:
    """A NaN read into a Boolean tensor is refused (EvaluationError naming `where`,
    a file or an input): a relation holds 0/1, and NaN is neither true nor false,
    where `> 0` would make it false without a word (docs/language.md, "Files").
    A scipy.sparse matrix or a SparseRelation: its stored values; a framework
    tensor: as it is."""
    stored = hasattr(data, "tocoo") or isinstance(data, SparseRelation)
    values = data.data if stored else data
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "fc":
            return
        nan = np.isnan(values)
        if not nan.any():
            return
        count = int(nan.sum())
        at = "" if stored or not values.ndim else \
            f" at {tuple(int(i) for i in np.argwhere(nan)[0])}"
        raise EvaluationError(
            f"{where} holds NaN{at} ({count:,} value{'' if count == 1 else 's'} in all), read "
            f"into the Boolean tensor `{name}`: a relation holds 0 or 1, and NaN is neither "
            f"true nor false; replace it (numpy.nan_to_num) or read the file into a numeric "
            f"tensor `{name}[...]`")
    try:  # torch, jax: NaN is the value unequal to itself
        has_nan = bool((values != values).any())
    except TypeError:  # a value jax traces (a jitted training step) has none to look at
        return
    if has_nan:
        raise EvaluationError(f"{where} holds NaN, read into the Boolean tensor `{name}`: a "
                              f"relation holds 0 or 1, and NaN is neither true nor false")


def _refuse_non_numbers(name: str, data: Any) -> None:
    """A NumPy input of complex numbers, dates, text or records is refused: converting
    it would lose its imaginary part or make numbers of dates, silently."""
    dtype = getattr(data, "dtype", None)
    if getattr(dtype, "is_complex", False):  # a torch tensor of complex numbers
        words = str(dtype).removeprefix("torch.")  # said as NumPy's dtype is
        raise EvaluationError(f"the input for `{name}` holds {words} values; Fuse reads "
                              f"only bool, integer or float numbers")
    kind = getattr(dtype, "kind", None)
    if isinstance(data, np.ndarray) and kind not in ("b", "i", "u", "f"):
        raise EvaluationError(f"the input for `{name}` holds {data.dtype} values; Fuse reads "
                              f"only bool, integer or float numbers")


def fact_position(analysis: Analysis, name: str, atom: ir.Ref) -> tuple[int, ...]:
    """The position a fact sets: each constant's place among its domain's values."""
    info = analysis.tensors[name]
    return tuple(constant_position(analysis, info.axes[pos].domain, index.value)  # type: ignore[union-attr]
                 for pos, index in enumerate(atom.indices or ()))


def _relation(analysis: Analysis, name: str, path: Path, shape: tuple[int, ...]) -> np.ndarray:
    """A relation file as a 0/1 array."""
    out = np.zeros(shape)
    positions = _relation_positions(analysis, name, path)
    if len(positions):  # (a true nullary relation: one tuple of no positions)
        out[tuple(positions.T)] = 1.0
    return out


def _relation_positions(analysis: Analysis, name: str, path: Path) -> np.ndarray:
    """A relation file's tuples as positions: each column's values looked up in its
    domain (whole columns at once; check.value_tables)."""
    info = analysis.tensors[name]
    relation = relation_tuples_file(path, _source_header(analysis, name), name)
    if not relation.rows:  # an empty file (or blank lines only): the empty relation
        return np.empty((0, len(info.axes)), dtype=np.int64)
    if len(relation.columns) != len(info.axes):
        raise EvaluationError(f"{path.name} holds {len(relation.columns)} columns, `{name}` "
                              f"has {len(info.axes)}")
    out = np.empty((relation.rows, len(info.axes)), dtype=np.int64)
    for pos, column in enumerate(relation.columns):
        out[:, pos] = column_positions(domain_values(analysis, info.axes[pos].domain), column)
    if (out < 0).any():  # (the checker numbered every value of the file)
        raise EvaluationError(f"{path.name} changed since it was checked; check it again")
    return out


def _source_header(analysis: Analysis, name: str) -> bool | None:
    statements = analysis.program.statements
    for k in analysis.tensors[name].statements:
        if isinstance(statements[k], ir.Source):
            return statements[k].header  # type: ignore[union-attr]
    return None


def sparse_rows(shape: tuple[int, ...], rows: Any, dtype: Any) -> Any:
    """A 0/1 sparse tensor from positions: CSR for two axes, a SparseRelation for more."""
    if len(shape) != 2:
        return SparseRelation.from_positions(shape, rows, dtype)
    return from_rows(shape, rows, dtype)  # type: ignore[arg-type]
