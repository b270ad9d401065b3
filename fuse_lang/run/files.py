"""Reading sources and writing sinks (LANGUAGE.md §9).

Arrays load with `allow_pickle=False`; relation files become 0/1 tensors
with symbols numbered per domain; sinks are written atomically (a temporary
file in the same folder, then a rename), so a failure never leaves a
half-written file; a sink outside the program's folder is refused unless the
caller allows it.
"""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np


class FileProblem(Exception):
    """A source or sink that cannot be read or written; the message says why."""


def load_dense(path: Path, tensor: str, dtype) -> np.ndarray:
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False).astype(dtype)
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                names = list(archive.files)
                if tensor in names:
                    return archive[tensor].astype(dtype)
                if len(names) == 1:
                    return archive[names[0]].astype(dtype)
                raise FileProblem(f"{path.name} holds no array named {tensor} "
                                  f"(arrays: {', '.join(names)})")
        if suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            rows = [line.split(sep) for line in _lines(path)]
            data = np.array([[float(c) for c in row] for row in rows], dtype=dtype)
            return data[:, 0] if data.ndim == 2 and data.shape[1] == 1 else data
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                data = data[tensor] if tensor in data else next(iter(data.values()))
            return np.asarray(data, dtype=dtype)
        if suffix == ".jsonl":
            return np.asarray([json.loads(line) for line in _lines(path)], dtype=dtype)
    except (OSError, ValueError, KeyError, StopIteration) as err:
        raise FileProblem(f"{path.name} cannot be read: {err}") from None
    raise FileProblem(f"{path.name}: unknown file type {suffix!r}")


def relation_rows(path: Path) -> list[list[object]]:
    """The tuples of a relation file: symbols as str, integers as int."""
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            return [[_cell(c) for c in line.split(sep)] for line in _lines(path)]
        if suffix == ".jsonl":
            rows = [json.loads(line) for line in _lines(path)]
            return [[_cell(c) for c in (r if isinstance(r, list) else [r])] for r in rows]
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                data = next(iter(data.values()))
            return [[_cell(c) for c in row] for row in data]
        if suffix == ".txt":
            return [[k, token] for k, token in enumerate(path.read_text(encoding="utf-8").split())]
    except (OSError, ValueError) as err:
        raise FileProblem(f"{path.name} cannot be read: {err}") from None
    raise FileProblem(f"{path.name}: a Boolean relation reads .csv, .tsv, .json, .jsonl or .txt")


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _cell(text: object) -> object:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return int(text)
    text = str(text).strip()
    return int(text) if text.lstrip("-").isdigit() else text


# ------------------------------------------------------------------ sinks


def check_sink_path(base_dir: Path, target: str, allow_outside: bool) -> Path:
    path = (base_dir / target).resolve()
    root = base_dir.resolve()
    if not allow_outside and root != path and root not in path.parents:
        raise FileProblem(f"the sink {target!r} is outside the program's folder {root}; "
                          f"writing there must be allowed explicitly")
    return path


def write_sink(path: Path, name: str, array: np.ndarray, boolean: bool,
               symbols: Sequence[Sequence[str] | None]) -> None:
    """Write one array (or a Boolean tensor's tuples) to `path`, atomically."""
    suffix = path.suffix.lower()
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
            for position in zip(*np.nonzero(array > 0)):
                writer.writerow([_symbol(symbols, axis, int(p)) for axis, p in enumerate(position)])
        else:
            for row in np.atleast_2d(array) if array.ndim <= 2 else array.reshape(
                    array.shape[0], -1):
                writer.writerow([repr(float(v)) for v in np.atleast_1d(row)])
        buffer.write(text.getvalue().encode("utf-8"))
    elif suffix in (".json", ".jsonl"):
        if boolean:
            rows = [[_symbol(symbols, a, int(p)) for a, p in enumerate(pos)]
                    for pos in zip(*np.nonzero(array > 0))]
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
        raise FileProblem(f"{path.name}: a sink writes .npy, .npz, .csv, .tsv, .json, .jsonl "
                          f"or .txt")
    atomic_write(path, buffer.getvalue())


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
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
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
