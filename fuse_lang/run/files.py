"""Reading sources and writing sinks (LANGUAGE.md §9).

Sources are read as the checker reads them (`check.sources`): regular files
only, text up to a size limit, `.npy` headers checked against the bytes the
file holds and refused unless they hold bool, integer or float numbers; no
pickle is ever loaded.  Relation files become 0/1 tensors with symbols
numbered per domain.  Sinks are all checked before a run starts (`check_sink_path`)
and written atomically (a temporary file in the same folder, then a rename),
so a failure never leaves a half-written file; a sink outside the program's
folder is refused unless the caller allows it.
"""
from __future__ import annotations

import csv
import io
import json
import os
import secrets
import stat
import warnings
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence

import numpy as np

from ..check.sources import (SourceError, open_regular, parse_json, read_npy_header, read_text,
                             text_lines)
from ..check.whole_files import split_columns


class FileProblem(Exception):
    """A source or sink that cannot be read or written; the message says why."""


def load_dense(path: Path, tensor: str, dtype) -> np.ndarray:
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return load_npy(path).astype(dtype)
        if suffix == ".npz":
            return load_npz_member(path, tensor).astype(dtype)
        if suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            rows = [line.split(sep) for line in text_lines(path)]
            data = np.array([[float(c) for c in row] for row in rows], dtype=dtype)
            return data[:, 0] if data.ndim == 2 and data.shape[1] == 1 else data
        if suffix == ".json":
            data = parse_json(read_text(path))
            if isinstance(data, dict):
                data = data[tensor] if tensor in data else next(iter(data.values()))
            return np.asarray(data, dtype=dtype)
        if suffix == ".jsonl":
            rows = [parse_json(line, f"line {k} ") for k, line in enumerate(text_lines(path), 1)]
            return np.asarray(rows, dtype=dtype)
    except (OSError, ValueError, KeyError, TypeError, StopIteration, SourceError) as err:
        raise FileProblem(f"{path.name} cannot be read: {_reason(err)}") from None
    raise FileProblem(f"{path.name}: unknown file type {suffix!r}")


def load_array_file(path: Path, name: str) -> np.ndarray:
    """An `.npy` file's array, or from an `.npz` archive (told by its first bytes,
    whatever its name) the array `name` or its only one."""
    with open_regular(path) as fp:
        is_zip = fp.read(4) == b"PK\x03\x04"
    return load_npz_member(path, name) if is_zip else load_npy(path)


def load_npy(path: Path) -> np.ndarray:
    """An `.npy` file's array, its header checked before any data is read (a plain
    number type; no more data than the file holds).  Raises SourceError, OSError."""
    with open_regular(path) as fp:
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
    except zipfile.BadZipFile:
        raise SourceError("not a .npz archive") from None


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


def relation_rows(path: Path) -> list[list[object]]:
    """The tuples of a relation file: symbols as str, integers as int."""
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            return [[_cell(c) for c in line.split(sep)] for line in text_lines(path)]
        if suffix == ".jsonl":
            rows = [parse_json(line, f"line {k} ") for k, line in enumerate(text_lines(path), 1)]
            return [[_cell(c) for c in (r if isinstance(r, list) else [r])] for r in rows]
        if suffix == ".json":
            data = parse_json(read_text(path))
            if isinstance(data, dict):
                data = next(iter(data.values()))
            return [[_cell(c) for c in row] for row in data]
        if suffix == ".txt":
            return [[k, token] for k, token in enumerate(read_text(path).split())]
    except (OSError, ValueError, TypeError, SourceError) as err:
        raise FileProblem(f"{path.name} cannot be read: {_reason(err)}") from None
    raise FileProblem(f"{path.name}: a Boolean relation reads .csv, .tsv, .json, .jsonl or .txt")


def relation_columns(path: Path, arity: int) -> list | None:
    """A plain .tsv/.csv relation's columns (check.whole_files.split_columns:
    integers as int64, ASCII symbols as bytes, others as str); None for any other file (then
    `relation_rows` reads it, and says what is wrong with it)."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv") or arity < 1:
        return None
    try:
        columns = split_columns(read_text(path), "\t" if suffix == ".tsv" else ",")
    except (OSError, SourceError):
        return None
    if columns is None or len(columns) != arity:
        return None
    for column in columns:  # integers among symbols: cell by cell
        if isinstance(column, np.ndarray) and column.dtype.kind == "i":
            continue
        distinct = np.unique(column).astype("U").tolist() if isinstance(column, np.ndarray) \
            else set(column)
        if any(map(str.isdigit, distinct)) or any(v.startswith("-") for v in distinct):
            return None
    return columns


def integer_relation(path: Path, arity: int) -> np.ndarray | None:
    """A .tsv/.csv relation of integers only, read in C (rows x arity); None when
    it holds anything else (symbols, ragged rows): `relation_rows` reads it then."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv") or arity < 1:
        return None
    try:
        text = read_text(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty file: no rows, no warning
            rows = np.loadtxt(io.StringIO(text), dtype=np.int64, ndmin=2,
                              delimiter="\t" if suffix == ".tsv" else ",")
    except (OSError, ValueError, SourceError):
        return None
    if rows.size == 0:
        return None
    return rows if rows.shape[1] == arity else None


def _cell(text: object) -> object:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return int(text)
    text = str(text).strip()
    return int(text) if text.lstrip("-").isdigit() else text


# ------------------------------------------------------------------ sinks


SINK_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".json", ".jsonl", ".txt")


def check_sink_path(base_dir: Path, target: str, allow_outside: bool) -> Path:
    """Where a sink writes, refused (FileProblem) when no write could succeed
    there: a NUL byte, a suffix no sink writes, a folder, outside the program's
    folder unless allowed.  Every sink is checked so before a run starts."""
    if "\0" in target:
        raise FileProblem("the path holds a NUL byte, which no file system accepts")
    path = (base_dir / target).resolve()
    root = base_dir.resolve()
    if not allow_outside and root != path and root not in path.parents:
        raise FileProblem(f"the sink {target!r} is outside the program's folder {root}; "
                          f"writing there must be allowed explicitly")
    if path.suffix.lower() not in SINK_SUFFIXES:
        raise FileProblem(f"{path.name}: a sink writes {', '.join(SINK_SUFFIXES[:-1])} "
                          f"or {SINK_SUFFIXES[-1]}")
    if path.is_dir():
        raise FileProblem(f"{path} is a folder")
    return path


def write_sink(path: Path, name: str, array: np.ndarray, boolean: bool,
               symbols: Sequence[Sequence[str] | None]) -> None:
    """Write one array (or a Boolean tensor's tuples) to `path`, atomically.  A
    scipy.sparse array goes to `.npz` as `scipy.sparse.save_npz` writes it, to the
    tuple formats from its non-zeros; elsewhere it is written dense."""
    suffix = path.suffix.lower()
    buffer = io.BytesIO()
    if hasattr(array, "tocoo"):
        if suffix == ".npz":
            from scipy.sparse import save_npz

            save_npz(buffer, array.tocsr(), compressed=False)
            atomic_write(path, buffer.getvalue())
            return
        if not (boolean and suffix in (".csv", ".tsv", ".json", ".jsonl")):
            array = array.toarray()
    if suffix == ".npy":
        np.save(buffer, array, allow_pickle=False)
    elif suffix == ".npz":
        buffer.write(npz_bytes({name: array}))
    elif suffix in (".csv", ".tsv"):
        text = io.StringIO()
        writer = csv.writer(text, delimiter="\t" if suffix == ".tsv" else ",",
                            lineterminator="\n")
        if boolean:
            for position in _true_positions(array):
                writer.writerow([_symbol(symbols, axis, int(p)) for axis, p in enumerate(position)])
        else:
            for row in np.atleast_2d(array) if array.ndim <= 2 else array.reshape(
                    array.shape[0], -1):
                writer.writerow([repr(float(v)) for v in np.atleast_1d(row)])
        buffer.write(text.getvalue().encode("utf-8"))
    elif suffix in (".json", ".jsonl"):
        if boolean:
            rows = [[_symbol(symbols, a, int(p)) for a, p in enumerate(pos)]
                    for pos in _true_positions(array)]
        else:
            rows = array.tolist()
        if suffix == ".json":
            buffer.write(json.dumps(rows).encode("utf-8"))
        else:
            items = rows if isinstance(rows, list) else [rows]
            buffer.write("".join(json.dumps(r) + "\n" for r in items).encode("utf-8"))
    elif suffix == ".txt":
        if boolean and array.ndim == 2:
            # the inverse of a .txt source: a position x token matrix -> the tokens in order
            words = [str(_symbol(symbols, 1, int(tok))) for pos, tok in zip(*np.nonzero(array > 0))]
            text = " ".join(words) + "\n"
        else:
            rows = np.atleast_2d(array) if array.ndim <= 2 else array.reshape(array.shape[0], -1)
            text = "".join(" ".join(repr(float(v)) for v in row) + "\n" for row in rows)
        buffer.write(text.encode("utf-8"))
    else:
        raise FileProblem(f"{path.name}: a sink writes {', '.join(SINK_SUFFIXES[:-1])} "
                          f"or {SINK_SUFFIXES[-1]}")
    atomic_write(path, buffer.getvalue())


def _true_positions(array) -> Iterator[tuple]:
    """The positions where a Boolean array holds 1, row by row (a scipy sparse
    array read off its non-zeros)."""
    if hasattr(array, "tocoo"):
        coo = array.tocoo()
        keep = coo.data > 0
        rows, cols = coo.row[keep], coo.col[keep]
        order = np.lexsort((cols, rows))
        return zip(rows[order], cols[order])
    return zip(*np.nonzero(array > 0))


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz archive of `arrays`, keyed by name. (Not `np.savez(**arrays)`: a tensor
    may be called `file` or `allow_pickle`, which savez takes as its own arguments.)"""
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for key, value in arrays.items():
            with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def _symbol(symbols: Sequence[Sequence[str] | None], axis: int, position: int) -> object:
    names = symbols[axis] if axis < len(symbols) else None
    if names and position < len(names):
        return names[position]
    return position


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all: into a temporary file beside it,
    then renamed over it.  The file gets the mode any file the user writes gets
    (0666 less the umask; an existing file keeps its own).  Temporaries left by
    writes that were killed (their writer's process is gone) are removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    tmp, fd = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                os.fchmod(out.fileno(), stat.S_IMODE(os.stat(path).st_mode))
            except (FileNotFoundError, AttributeError):
                pass  # a new file: the mode os.open gave it, under the umask
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# A temporary is named `.<target>.fuse-<pid>-<random>.tmp`: the writer's process id
# tells a write still under way (in this or another live process) from a killed one.
_TEMPORARY_INFIX = ".fuse-"


def _create_temporary(path: Path) -> tuple[Path, int]:
    while True:
        tmp = path.parent / f".{path.name}{_TEMPORARY_INFIX}{os.getpid()}-" \
                            f"{secrets.token_hex(4)}.tmp"
        try:
            # 0o666: the kernel applies the umask, as for any file the user writes
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _remove_stale_temporaries(path: Path) -> None:
    prefix = f".{path.name}{_TEMPORARY_INFIX}"
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _process_alive(int(pid)):
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass


def _process_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # (on Windows os.kill would end it)
        return True  # another thread of this process may be writing the same target
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's), or we cannot tell: keep its file
    return True
