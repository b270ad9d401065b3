"""The pictures of a run's results as files: one per export (and per query with
free variables), named after it, written atomically into a folder.  Used by
`fuse run --plot` and `fuse plot`; an editor gets the same bytes from
`result_pictures`.
"""
from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .plots import (
    FORMATS,
    MAX_GRAPH_NODES,
    AxisLabel,
    PictureError,
    axis_labels,
    dense_for_picture,
    is_relation_graph,
    relation_graph,
    render_array,
)

if TYPE_CHECKING:
    from ..check import Analysis


def result_pictures(outputs: Mapping[str, Any], analysis: Analysis | None = None,
                    fmt: str = "svg", queries: Sequence[Any] = (),
                    slice_along: str | None = None) -> list[tuple[str, bytes]]:
    """(file name, bytes) of each picture: `NAME.svg` per output, `NAME.graph.svg`
    for a Boolean relation over one set of symbols, `query-K.svg` per query
    answer with free variables.  Labels (index names, symbols) come from the
    analysis when there is one."""
    if fmt not in FORMATS:
        raise PictureError(f"unknown picture format {fmt!r} (svg or png)")
    pictures = []
    sliced: dict[str, list[str]] = {}  # the 3-D+ outputs' index names
    for name, array in outputs.items():
        labels = axis_labels(analysis, name) if analysis is not None else ()
        boolean = bool(analysis is not None and name in analysis.tensors
                       and analysis.tensors[name].boolean)
        # the index to slice along where this value has it (`axis K` without labels)
        names = [lab.index or f"axis {k}" for k, lab in enumerate(labels)] + [
            f"axis {k}" for k in range(len(labels), np.ndim(array))]
        along = slice_along if slice_along in names else None
        if np.ndim(array) >= 3:
            sliced[name] = names
        stem = _file_stem(name)
        pictures.append((f"{stem}.{fmt}", render_array(array, name, labels, fmt, boolean, along)))
        # (a graph of its own symbols only: a result `fuse plot --program` labels from a
        # program whose data changed since may hold other symbols; its heatmap is drawn)
        symbols = (labels[0].symbols or ()) if labels else ()
        if analysis is not None and is_relation_graph(analysis, name) \
                and np.shape(array) == (len(symbols), len(symbols)) \
                and len(symbols) <= MAX_GRAPH_NODES:
            pictures.append((f"{stem}.graph.{fmt}", relation_graph(array, name, symbols, fmt)))
    if slice_along is not None and not sliced:  # it would do nothing
        raise PictureError(f"no output is 3-D or larger: there is nothing to slice along "
                           f"{slice_along!r}")
    if slice_along is not None and \
            not any(slice_along in names for names in sliced.values()):
        theirs = "; ".join(f"{n}: {', '.join(names)}" for n, names in sliced.items())
        raise PictureError(f"no 3-D or larger output has the index {slice_along!r} to slice "
                           f"along (their indices: {theirs})")
    for k, query in enumerate(queries, 1):
        value = np.asarray(query.value)
        if value.ndim == 0:
            continue  # a closed query's answer is a word, printed already
        labels = _query_labels(analysis, query, value.shape)
        pictures.append((f"query-{k}.{fmt}", render_array(
            value, query.text, labels, fmt, query.tuples is not None)))
    return _distinct_names(pictures)


def _distinct_names(pictures: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The pictures, a file name that an earlier one took (`g::R` and `g__R`, or an
    archive's `a/b` and `a_b`, are both `..._R.svg`) given a `-2`, `-3`... before
    its suffix: no picture is written over another."""
    taken: set[str] = set()
    named = []
    for file_name, data in pictures:
        stem, dot, suffix = file_name.partition(".")
        unique, k = file_name, 1
        while unique.lower() in taken:  # (lower: one file on a case-blind disk)
            k += 1
            unique = f"{stem}-{k}{dot}{suffix}"
        taken.add(unique.lower())
        named.append((unique, data))
    return named


def _query_labels(analysis: Analysis | None, query: Any, shape: tuple[int, ...]
                  ) -> tuple[AxisLabel, ...]:
    """A query answer's axes: its variables, with the symbols of the queried
    tensor's axis each ranges over (`Cyclic(x)?`: x over the cities)."""
    from ..front import ir

    found = [] if analysis is None else [
        s for s in analysis.program.statements if isinstance(s, ir.Query)
        and analysis.text[s.span.start:s.span.end] == query.text]
    tensor = axis_labels(analysis, query.tensor) if found else ()
    indices = found[0].atom.indices if found else None
    labels = []
    for k, free in enumerate(query.free):
        at = [p for p, ix in enumerate(indices) if isinstance(ix, ir.IndexVar)
              and ix.name == free] if indices is not None else [k]
        symbols = tensor[at[0]].symbols if at and at[0] < len(tensor) else None
        fits = symbols is not None and k < len(shape) and len(symbols) == shape[k]
        labels.append(AxisLabel(free, symbols if fits else None))
    return tuple(labels)


def write_pictures(folder: Path, pictures: Sequence[tuple[str, bytes]]) -> list[str]:
    """Write each picture into `folder` (made if missing), atomically; the paths."""
    from ..io.sinks import atomic_write

    written = []
    for file_name, data in pictures:
        path = folder / file_name
        atomic_write(path, data)
        written.append(str(path))
    return written


def check_folder(folder: Path) -> str | None:
    """Why pictures could not be written into `folder`, or None: checked before a
    run, so a long run is not lost to a typo."""
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def read_results(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a saved result (`fuse run --out FILE.npz`, or one .npy); a
    PictureError that says why for a file that is not one.  Never unpickles."""
    try:
        with open(path, "rb") as fp:
            magic = fp.read(6)
        # (an archive of no arrays is a zip of its end record alone: PK\x05\x06)
        if magic[:4] not in (b"PK\x03\x04", b"PK\x05\x06") and magic != b"\x93NUMPY":
            raise PictureError(f"{path} is not a result file: neither an .npz archive "
                               f"nor an .npy array (as `fuse run --out` writes)")
        if magic == b"\x93NUMPY":
            return {path.stem: np.load(path, allow_pickle=False)}
        sparse = _sparse_result(path)
        if sparse is not None:
            return sparse
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise PictureError(f"{path} holds one array, not an .npz archive")
            arrays = {name: archive[name] for name in archive.files}
    except PictureError:
        raise
    except FileNotFoundError:
        raise PictureError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PictureError(f"{path} is a folder, not a result file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise PictureError(f"{path} is not a result file (.npz or .npy of numbers): "
                           f"{reason}") from None
    if not arrays:
        raise PictureError(f"{path} holds no arrays")
    return arrays


def _sparse_result(path: Path) -> dict[str, np.ndarray] | None:
    """A sparse output (`fuse run --out` writes it as scipy.sparse.save_npz does),
    read dense for its picture, named by the file; None for an archive of arrays."""
    from ..io.source_data import load_sparse_npz
    from ..io.source_files import FileProblem

    try:
        matrix = load_sparse_npz(path)
    except FileProblem as err:
        raise PictureError(str(err)) from None
    if matrix is None:
        return None
    return {path.stem: dense_for_picture(matrix, str(path))}


def _file_stem(name: str) -> str:
    """A tensor's name as a file name (names are identifiers; anything else is
    replaced, so a picture never lands outside its folder)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "value"
