"""Writing sinks (LANGUAGE.md §9) and a run's outputs (`fuse run --out`).

Sinks are all checked before a run starts (`check_sink_path`) and written
atomically (a temporary file in the same folder, then a rename), so a failure
never leaves a half-written file; a sink outside the program's folder is
refused unless the caller allows it.  A sparse value is written sparse
(scipy.sparse's `.npz`, tuples) where the format allows, and dense elsewhere
only when its dense form fits the limit the caller gives (docs/scale.md,
"Sparse files").
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

import numpy as np

from ..front.numbers import format_bytes
from .source_files import FileProblem

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
               symbols: Sequence[Sequence[str] | None], dense_limit: int) -> None:
    """Write one array (or a Boolean tensor's tuples) to `path`, atomically.  A
    scipy.sparse array is written sparse where the format allows (`write_sparse`);
    elsewhere dense, unless its dense form would take more than `dense_limit`
    bytes (the run gives its memory guard's default: half the memory free)."""
    suffix = path.suffix.lower()
    if hasattr(array, "tocoo"):
        if write_sparse(path, array, boolean, symbols):
            return
        _refuse_dense_form(path, array, dense_limit)
        array = array.toarray()
    buffer = io.BytesIO()
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


def write_sparse(path: Path, matrix: Any, boolean: bool,
                 symbols: Sequence[Sequence[str] | None] = ()) -> bool:
    """Write a scipy.sparse matrix without its dense form, atomically: `.npz` as
    `scipy.sparse.save_npz` writes it (CSR, uncompressed; `scipy.sparse.load_npz`
    and a Fuse source read it back), `.tsv`/`.csv` as its non-zero tuples (a
    numeric one with its value last), a Boolean one to `.json`/`.jsonl` as
    tuples.  False when the format holds only a dense array (`.npy`, `.txt`, a
    numeric `.json`): the caller writes it dense."""
    suffix = path.suffix.lower()
    if suffix == ".npz":
        from scipy.sparse import save_npz

        with atomic_writer(path) as out:  # straight to the file: no copy in memory
            save_npz(out, matrix.tocsr(), compressed=False)
        return True
    if suffix in (".csv", ".tsv"):
        with atomic_writer(path) as out:
            _write_tuples(out, matrix, boolean, symbols, "\t" if suffix == ".tsv" else ",")
        return True
    if boolean and suffix in (".json", ".jsonl"):
        rows = [[_symbol(symbols, a, int(p)) for a, p in enumerate(pos)]
                for pos in _true_positions(matrix)]
        text = json.dumps(rows) if suffix == ".json" else \
            "".join(json.dumps(r) + "\n" for r in rows)
        atomic_write(path, text.encode("utf-8"))
        return True
    return False


TUPLES_PER_WRITE = 1 << 16  # rows formatted at a time: the text in memory stays small


def _write_tuples(out: BinaryIO, matrix: Any, boolean: bool,
                  symbols: Sequence[Sequence[str] | None], delimiter: str) -> None:
    """The non-zeros, row by row: one line per tuple, a symbol's name where its axis
    has names (as relation sources read them), then the value for numbers."""
    coo = matrix.tocoo()
    keep = coo.data > 0 if boolean else coo.data != 0
    rows, cols, values = coo.row[keep], coo.col[keep], coo.data[keep]
    order = np.lexsort((cols, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    names = [names_by_position(symbols, axis, extent) for axis, extent in enumerate(matrix.shape)]
    text = io.TextIOWrapper(out, encoding="utf-8", newline="")
    writer = csv.writer(text, delimiter=delimiter, lineterminator="\n")
    for start in range(0, rows.size, TUPLES_PER_WRITE):
        part = slice(start, start + TUPLES_PER_WRITE)
        columns = [named[at[part]].tolist() if named is not None else at[part].tolist()
                   for named, at in zip(names, (rows, cols))]
        if not boolean:
            columns.append([repr(v) for v in values[part].astype(np.float64).tolist()])
        writer.writerows(zip(*columns))
    text.flush()
    text.detach()  # the caller closes the file


def names_by_position(symbols: Sequence[Sequence[str] | None], axis: int, extent: int
              ) -> np.ndarray | None:
    """An axis' names as an array to index by position (positions past the names
    stay numbers, as `_symbol` writes them); None for an axis without names.
    Reading many tuples' names is then one indexing in C."""
    names = symbols[axis] if axis < len(symbols) else None
    if not names:
        return None
    table = np.empty(extent, dtype=object)
    table[:] = range(extent)
    shown = min(len(names), extent)
    table[:shown] = list(names)[:shown]
    return table


def write_results(where: str, outputs: dict[str, Any]) -> list[Path]:
    """`fuse run --out`: a run's outputs, atomically, each sparse one kept sparse.
    A folder (one that exists, or a path ending in a separator) gets one file per
    output: NAME.npz as `scipy.sparse.save_npz` writes it, or NAME.npy for a dense
    one.  A file gets one `.npz` archive: of every output by name when all are
    dense, the `save_npz` archive of the output when it is the only one and
    sparse; several outputs with a sparse one are refused (FileProblem): an
    archive holds one sparse matrix, so they go to a folder."""
    target = Path(where)  # (a Path drops the trailing separator that names a folder)
    if target.is_dir() or where.endswith(("/", os.sep)):
        written = []
        for name, value in outputs.items():
            if hasattr(value, "tocoo"):
                written.append(target / f"{name}.npz")
                write_sparse(written[-1], value, boolean=False)
            else:
                buffer = io.BytesIO()
                np.save(buffer, np.asarray(value), allow_pickle=False)
                written.append(target / f"{name}.npy")
                atomic_write(written[-1], buffer.getvalue())
        return written
    sparse = [name for name, value in outputs.items() if hasattr(value, "tocoo")]
    if sparse and len(outputs) > 1:
        raise FileProblem(f"{', '.join(sparse)} {'is' if len(sparse) == 1 else 'are'} sparse "
                          f"and an .npz archive holds one sparse matrix, not "
                          f"{len(outputs)} outputs; give --out a folder (ending in /)")
    if sparse:
        with atomic_writer(target) as out:
            from scipy.sparse import save_npz

            save_npz(out, outputs[sparse[0]].tocsr(), compressed=False)
        return [target]
    atomic_write(target, npz_bytes(outputs))
    return [target]


def _refuse_dense_form(path: Path, matrix: Any, limit: int) -> None:
    """A sparse value written to a dense-only format: refused when its dense form
    would take more than `limit` bytes (the memory at hand)."""
    needed = int(np.prod(matrix.shape, dtype=object)) * matrix.dtype.itemsize
    if needed > limit:
        raise FileProblem(f"{path.name} would hold the dense form of a sparse value "
                          f"({format_bytes(needed)}, more than the memory at hand); "
                          f"write it to .npz or .tsv, which keep it sparse")


def write_topk_pairs(path: Path, rows: list[list[list]]) -> None:
    """topk's (index, score) pairs: a .jsonl line per row, or one .json list of rows."""
    if path.suffix.lower() == ".json":
        text = json.dumps(rows)
    else:
        text = "".join(json.dumps(row) + "\n" for row in rows)
    atomic_write(path, text.encode("utf-8"))


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
    """Write `data` to `path` whole or not at all (see `atomic_writer`)."""
    with atomic_writer(path) as out:
        out.write(data)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path` through, whole or not at all: a temporary file
    beside it, renamed over it when the block ends without an error (removed
    when it raises).  The file gets the mode any file the user writes gets
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
            yield out
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
