"""Reading sources' data (LANGUAGE.md §9): dense arrays and relations' tuples.

Sources are read as the checker reads them (`io.sources`): regular files only,
text up to a size limit, `.npy` headers checked against the bytes the file
holds and refused unless they hold bool, integer or float numbers; no pickle is
ever loaded.  Relation files are read as their columns of values, as the checker
read them (the run numbers the values per domain), a scipy.sparse `.npz` source straight into CSR (docs/scale.md,
"Sparse files").  A file that cannot be read is a FileProblem saying why.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .numpy_headers import (
    SPARSE_NPZ_FORMATS,
    is_sparse_archive,
    npz_errors,
    npz_problem,
    read_npy_header,
    sparse_archive_header,
)
from .relation_files import RelationFile, json_entry
from .safetensors_header import SafetensorsProblem, load_tensor
from .source_files import FileProblem, SourceError, open_regular, read_text
from .sources import SAFETENSORS, SUFFIXES
from .text_sources import parse_json, relation_file, text_lines

TEXT_SUFFIXES = tuple(s for s in SUFFIXES if s not in (".npy", ".npz", SAFETENSORS))


def load_dense(path: Path, tensor: str, dtype, key: str | None = None,
               mapped: bool = False, header: bool | None = None) -> np.ndarray:
    """A dense source's array (`key`: the tensor of a safetensors file, or the
    vocabulary of a text's token ids).  `mapped`:
    an `.npy` file or a safetensors tensor memory-mapped as it is stored, not read
    nor converted to `dtype` (a process of a group then reads only the slices its
    devices hold)."""
    suffix = path.suffix.lower()
    try:
        if suffix == SAFETENSORS:
            with open_regular(path):  # a regular file only, as every source
                pass
            tensor_data = load_tensor(path, key, tensor, mapped)
            return tensor_data if mapped else tensor_data.astype(dtype)
        if suffix == ".npy":
            return load_npy(path, mapped) if mapped else load_npy(path).astype(dtype)
        if suffix == ".npz":
            matrix = load_sparse_npz(path, dtype)  # a sparse archive, read dense when asked
            return matrix.toarray() if matrix is not None else \
                load_npz_member(path, tensor).astype(dtype)
        skip = 1 if header else 0  # `source("m.csv", header=1)`: its first row skipped
        if suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            rows = [line.split(sep) for line in text_lines(path)[skip:]]
            data = np.array([[float(c) for c in row] for row in rows], dtype=dtype)
            return data[:, 0] if data.ndim == 2 and data.shape[1] == 1 else data
        if suffix == ".json":
            data = json_entry(parse_json(read_text(path)), tensor)
            return np.asarray(data[skip:] if isinstance(data, list) else data, dtype=dtype)
        if suffix == ".jsonl":
            rows = [parse_json(line, f"line {k} ") for k, line in enumerate(text_lines(path), 1)]
            return np.asarray(rows[skip:], dtype=dtype)
        if suffix == ".txt" and key is not None:  # token ids (io.token_ids)
            from .token_ids import read_token_ids

            return np.asarray(read_token_ids(path, key)[0], dtype=dtype)
    except (OSError, ValueError, KeyError, TypeError, StopIteration, SourceError,
            SafetensorsProblem) as err:
        raise FileProblem(f"{path.name} cannot be read: {_reason(err)}") from None
    raise FileProblem(f"{path.name}: unknown file type {suffix!r}")


def load_array_file(path: Path, name: str, key: str | None = None) -> np.ndarray:
    """An `.npy` file's array, or from an `.npz` archive (told by its first bytes,
    whatever its name) the array `name` or its only one, or from a `.safetensors`
    file the tensor `key` (without one: named `name`, or its only one).  Raises
    SourceError, OSError."""
    if path.suffix.lower() in TEXT_SUFFIXES:  # (not "bad magic bytes": what it takes)
        raise SourceError(f"an input is an array file (.npy, .npz or .safetensors), not "
                          f"{path.suffix.lower()}; a text file is read by a source of "
                          f"the program")
    if path.suffix.lower() == SAFETENSORS:
        with open_regular(path):  # a regular file only, as every source
            pass
        try:
            return load_tensor(path, key, name)
        except SafetensorsProblem as err:
            raise SourceError(str(err)) from None
    with open_regular(path) as fp:
        is_zip = fp.read(4) == b"PK\x03\x04"
    if not is_zip:
        return load_npy(path)
    matrix = load_sparse_npz(path)  # scipy.sparse.save_npz's archive: kept sparse
    return matrix if matrix is not None else load_npz_member(path, name)


def load_npy(path: Path, mapped: bool = False) -> np.ndarray:
    """An `.npy` file's array, its header checked before any data is read (a plain
    number type; no more data than the file holds); `mapped`: memory-mapped, read
    only (nothing read until a slice is).  Raises SourceError, OSError."""
    with open_regular(path) as fp:
        if mapped:
            read_npy_header(fp, os.fstat(fp.fileno()).st_size)
            return np.load(path, mmap_mode="r", allow_pickle=False)
        return _npy_array(fp, os.fstat(fp.fileno()).st_size)


def load_npz_member(path: Path, tensor: str) -> np.ndarray:
    """The array named `tensor` in an `.npz` archive (or its only array)."""
    import zipfile

    try:
        with open_regular(path) as raw, zipfile.ZipFile(raw) as archive:
            names = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
            if tensor not in names and len(names) != 1:
                raise SourceError(f"it holds no array named {tensor} "
                                  f"(arrays: {', '.join(names) or 'none'})")
            member = f"{tensor if tensor in names else names[0]}.npy"
            with archive.open(member) as fp:
                return _npy_array(fp, archive.getinfo(member).file_size)
    except npz_errors() as err:
        raise SourceError(npz_problem(err)) from None


def load_sparse_npz(path: Path, dtype: Any = None) -> Any:
    """A scipy.sparse `.npz` (as `save_npz` writes it: csr, csc or coo) as a canonical
    `scipy.sparse.csr_array` of `dtype` (the file's own when None); None when the
    archive holds plain arrays.  The members are read as `.npy` sources are (no
    pickle; headers checked against the bytes) and the positions checked against
    the shape, so a malformed file is a FileProblem, never a wrong matrix."""
    import zipfile

    try:
        with open_regular(path) as raw, zipfile.ZipFile(raw) as archive:
            if not is_sparse_archive(archive.namelist()):
                return None
            header = sparse_archive_header(archive)
            arrays = {}
            for member in ("data", *SPARSE_NPZ_FORMATS[header.format]):
                with archive.open(f"{member}.npy") as fp:
                    arrays[member] = _npy_array(fp, archive.getinfo(f"{member}.npy").file_size)
    except npz_errors() as err:
        raise FileProblem(f"{path.name} cannot be read: {npz_problem(err)}") from None
    except (OSError, ValueError, SourceError) as err:
        raise FileProblem(f"{path.name} cannot be read: {_reason(err)}") from None
    problem = _sparse_positions_problem(header.format, header.shape, arrays)
    if problem:
        raise FileProblem(f"{path.name} cannot be read: {problem}")
    return _canonical_csr(header.format, header.shape, arrays, dtype)


def _sparse_positions_problem(fmt: str, shape: tuple[int, ...], arrays: dict) -> str:
    """Why the stored positions do not describe a matrix of `shape` ('' when they do)."""
    if fmt == "coo":
        for member, extent in (("row", shape[0]), ("col", shape[1])):
            at = arrays[member]
            if at.size and (at.min() < 0 or at.max() >= extent):
                return f"its `{member}` positions go outside the shape {shape}"
        return ""
    indptr, indices = arrays["indptr"], arrays["indices"]
    if indptr[0] != 0 or indptr[-1] != indices.size or (np.diff(indptr) < 0).any():
        return f"its `indptr` does not run from 0 up to {indices.size}"
    extent = shape[1] if fmt == "csr" else shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= extent):
        return f"its `indices` go outside the shape {shape}"
    return ""


def _canonical_csr(fmt: str, shape: tuple[int, ...], arrays: dict, dtype: Any) -> Any:
    import scipy.sparse as sp

    data = arrays["data"] if dtype is None else arrays["data"].astype(dtype, copy=False)
    if fmt == "coo":
        matrix = sp.csr_array((data, (arrays["row"], arrays["col"])), shape=shape)
    else:
        kind = sp.csr_array if fmt == "csr" else sp.csc_array
        matrix = sp.csr_array(kind((data, arrays["indices"], arrays["indptr"]), shape=shape))
    matrix.sum_duplicates()  # sorted, no repeats: what SparseTensor holds
    matrix.eliminate_zeros()
    return matrix


def _npy_array(fp: BinaryIO, available: int) -> np.ndarray:
    header = read_npy_header(fp, available)
    # read into an array of our own (writable, one copy); the header was checked
    # against the file's size, so this allocates no more than the file holds
    array = np.empty(header.nbytes // header.itemsize, dtype=np.dtype(header.descr))
    buffer, filled = memoryview(array).cast("B"), 0
    while filled < header.nbytes:
        got = fp.readinto(buffer[filled:])
        if not got:
            raise SourceError("the file is shorter than its header says")
        filled += got
    return array.reshape(header.shape, order="F" if header.fortran_order else "C")


def _reason(err: Exception) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def relation_tuples_file(path: Path, header: bool | None = None, tensor: str | None = None
                         ) -> RelationFile:
    """A relation file's columns of values (io.relation_files), as the checker read
    them (once per compile); a `.txt` token file as (position, token) tuples."""
    try:
        if path.suffix.lower() == ".txt":
            tokens = read_text(path).split()
            return RelationFile((tuple(range(len(tokens))), tuple(tokens)), len(tokens))
        return relation_file(path, header, tensor)
    except (OSError, SourceError) as err:
        raise FileProblem(f"{path.name} cannot be read: {_reason(err)}") from None
