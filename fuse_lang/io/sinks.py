"""Writing sinks (LANGUAGE.md §9) and a run's outputs (`fuse run --out`).

Sinks are all checked before a run starts (`check_sink_path`) and written
atomically (a temporary file in the same folder, then a rename:
io.atomic_files), so a failure never leaves a half-written file, and a killed
write no temporary for long; a sink outside the program's folder is refused
unless the caller allows it.  A sparse value is written sparse
(scipy.sparse's `.npz`, tuples) where the format allows, and dense elsewhere
only when its dense form fits the limit the caller gives (docs/scale.md,
"Sparse files").
"""
from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Sequence

import numpy as np

from ..front.numbers import format_bytes, strict_json
from .array_values import by_value
from .atomic_files import atomic_write, atomic_writer, make_folder
from .cells import value_text
from .relation_tuples import AxisValues, RelationTuples, relation_tuple_chunks, relation_tuples
from .sink_paths import SINK_SUFFIXES, suffix_problem
from .source_files import FileProblem, path_problem
from .tuple_bytes import Texts, encoded, encoded_ints, lines_bytes

# the text sinks that write a numeric tensor as its dense array (rows of numbers,
# nested lists), indexed by position like an .npy
DENSE_TEXT = (".csv", ".tsv", ".json", ".jsonl", ".txt")


def check_sink_path(base_dir: Path, target: str, allow_outside: bool) -> Path:
    """Where a sink writes, refused (FileProblem) when no write could succeed
    there: a NUL byte, a suffix no sink writes, a folder, outside the program's
    folder unless allowed.  Every sink is checked so before a run starts."""
    problem = path_problem(base_dir / target)
    if problem:
        raise FileProblem(problem)
    path = (base_dir / target).resolve()
    root = base_dir.resolve()
    if not allow_outside and root != path and root not in path.parents:
        raise FileProblem(f"the sink {target!r} is outside the program's folder {root}; "
                          f"writing there must be allowed explicitly (`fuse run "
                          f"--allow-outside-sinks`, or allow_outside_sinks=True in the API)")
    problem = suffix_problem(str(path))  # (as `fuse check` says: io.sink_paths)
    if problem:
        raise FileProblem(problem)
    if path.is_dir():
        raise FileProblem(f"{path} is a folder")
    return path


def write_sink(path: Path, name: str, array: np.ndarray, boolean: bool,
               symbols: Sequence[AxisValues], dense_limit: int) -> None:
    """Write one array (or a Boolean tensor's tuples, as values sorted by value:
    io.relation_tuples) to `path`, atomically; `symbols`: each axis' values by
    position (None: positional).  A scipy.sparse array is written sparse where
    the format allows (`write_sparse`); elsewhere dense, unless its dense form
    would take more than `dense_limit` bytes (the run gives its memory guard's
    default: half the memory free)."""
    suffix = path.suffix.lower()
    if suffix in (".npy", ".npz"):  # an array file holds positions: values laid out
        array = by_value(name, array, symbols)  # as positions (io.array_values)
    if hasattr(array, "tocoo"):
        if write_sparse(path, array, boolean, symbols):
            return
        _refuse_dense_form(path, array, dense_limit)
        array = array.toarray()
    if not boolean and suffix in DENSE_TEXT:  # a matrix of numbers holds positions too,
        array = by_value(name, array, symbols)  # as a numeric source reads it back
    buffer = io.BytesIO()
    if suffix == ".npy":
        np.save(buffer, array, allow_pickle=False)
    elif suffix == ".npz":
        buffer.write(npz_bytes({name: array}))
    elif suffix in (".csv", ".tsv") and boolean:
        with atomic_writer(path) as out:  # block by block: no text of every tuple in memory
            _write_tuples(out, relation_tuple_chunks(array, symbols, True, TUPLES_PER_WRITE),
                          True, "\t" if suffix == ".tsv" else ",")
        return
    elif suffix == ".facts":
        _write_facts(path, array, boolean, symbols)
        return
    elif suffix in (".csv", ".tsv"):
        import csv  # (numbers only: a relation's tuples are written without it)

        text = io.StringIO()
        writer = csv.writer(text, delimiter="\t" if suffix == ".tsv" else ",",
                            lineterminator="\n")
        # a vector one number a line: what a .csv source reads back as a vector (and
        # np.loadtxt too); a matrix a row a line, more axes flattened after the first
        rows = array.reshape(-1, 1) if array.ndim == 1 else np.atleast_2d(array) \
            if array.ndim <= 2 else array.reshape(array.shape[0], -1)
        for row in rows:
            writer.writerow([repr(float(v)) for v in np.atleast_1d(row)])
        buffer.write(text.getvalue().encode("utf-8"))
    elif suffix in (".json", ".jsonl"):
        rows = [list(t) for t in relation_tuples(array, symbols).rows()] if boolean \
            else strict_json(array.tolist())  # NaN and infinities as null (docs/language.md)
        if suffix == ".json":
            buffer.write(json.dumps(rows).encode("utf-8") + b"\n")  # (a text file's last line)
        else:
            items = rows if isinstance(rows, list) else [rows]
            buffer.write("".join(json.dumps(r) + "\n" for r in items).encode("utf-8"))
    elif suffix == ".txt":
        if boolean and array.ndim == 2:
            # the inverse of a .txt source: a position x token matrix -> the tokens in order
            text = " ".join(_token_words(path, array, symbols)) + "\n"
        else:
            rows = np.atleast_2d(array) if array.ndim <= 2 else array.reshape(array.shape[0], -1)
            text = "".join(" ".join(repr(float(v)) for v in row) + "\n" for row in rows)
        buffer.write(text.encode("utf-8"))
    else:
        raise FileProblem(f"{path.name}: a sink writes {', '.join(SINK_SUFFIXES[:-1])} "
                          f"or {SINK_SUFFIXES[-1]}")
    atomic_write(path, buffer.getvalue())


def write_sparse(path: Path, matrix: Any, boolean: bool,
                 symbols: Sequence[AxisValues] = ()) -> bool:
    """Write a scipy.sparse array (of any number of axes) without its dense form,
    atomically: a 2-D one to `.npz` as `scipy.sparse.save_npz` writes it (CSR,
    uncompressed; `scipy.sparse.load_npz` and a Fuse source read it back),
    `.tsv`/`.csv` as its non-zero tuples of values (a numeric one with its
    number last), a Boolean one to `.json`/`.jsonl` as tuples.  False when the
    format holds only a dense array (`.npy`, `.txt`, a numeric `.json`, an
    `.npz` of other than two axes): the caller writes it dense."""
    suffix = path.suffix.lower()
    if suffix == ".npz" and matrix.ndim == 2:
        from scipy.sparse import save_npz

        with atomic_writer(path) as out:  # straight to the file: no copy in memory
            save_npz(out, matrix.tocsr(), compressed=False)
        return True
    if suffix in (".csv", ".tsv"):
        with atomic_writer(path) as out:
            _write_tuples(out, relation_tuple_chunks(matrix, symbols, boolean, TUPLES_PER_WRITE),
                          boolean, "\t" if suffix == ".tsv" else ",")
        return True
    if suffix == ".facts":
        _write_facts(path, matrix, boolean, symbols)
        return True
    if boolean and suffix in (".json", ".jsonl"):
        rows = [list(t) for t in relation_tuples(matrix, symbols).rows()]
        text = json.dumps(rows) + "\n" if suffix == ".json" else \
            "".join(json.dumps(r) + "\n" for r in rows)
        atomic_write(path, text.encode("utf-8"))
        return True
    return False


def _write_facts(path: Path, value: Any, boolean: bool, symbols: Sequence[AxisValues]) -> None:
    """Soufflé's `.facts` (LANGUAGE.md §14): a Boolean tensor's tuples, tab-separated,
    without quoting (a numeric tensor's non-zeros, each with its number last).  A
    string `.facts` cannot hold as itself (one that would read back as a number,
    `"1"`, or holds a tab, a line break or blanks at its ends) is refused, naming
    `.tsv`, which quotes it: the file never means another relation when read
    again.  A double quote is a character like any other there (Soufflé writes
    `c"d` as is, and a `.facts` source reads no quoting)."""
    def checked(chunks: Iterable[RelationTuples]) -> Iterable[RelationTuples]:
        for tuples in chunks:
            alone = boolean and tuples.arity == 1  # a value a line: `()` is the nullary tuple
            for table in tuples.values:
                for v in table.tolist():
                    if type(v) is str and cell_text(v, "\t", alone, quotes=False) != v:
                        raise FileProblem(
                            f"{path.name}: the value {value_text(v)} cannot be written "
                            f"to a .facts file, which has no quoting (it would read back as "
                            f"another value); write the sink to .tsv, which quotes it")
            yield tuples

    with atomic_writer(path) as out:
        _write_tuples(out, checked(relation_tuple_chunks(value, symbols, boolean,
                                                         TUPLES_PER_WRITE)), boolean, "\t",
                      quotes=False)


TUPLES_PER_WRITE = 1 << 18  # rows formatted at a time: the text in memory stays small


def _write_tuples(out: BinaryIO, chunks: Iterable[RelationTuples], boolean: bool,
                  delimiter: str, quotes: bool = True) -> None:
    """The tuples (`relation_tuple_chunks`: in order, sharing their tables),
    sorted by value: one line per tuple, each cell a value as a relation source
    reads it back (`cell_text`), then the number for a numeric tensor's
    non-zeros; `quotes=False`: a `.facts` file, where `"` is no quote."""
    shown: list[Texts] | None = None  # each column's texts, encoded for the first chunk
    made: dict = {}  # each column's records, made for the first lines
    for tuples in chunks:
        if shown is None:
            shown = _shown(tuples, delimiter, boolean and tuples.arity == 1, quotes)
        for start in range(0, tuples.count, TUPLES_PER_WRITE):
            out.write(_tuples_text(tuples, boolean, delimiter, start,
                                   start + TUPLES_PER_WRITE, shown, made))


def _tuples_text(tuples: RelationTuples, boolean: bool, delimiter: str, start: int,
                 stop: int, shown: Sequence[Texts], made: dict | None) -> bytes:
    """Lines of tuples `start` to `stop` (see `_write_tuples`), UTF-8."""
    stop = min(stop, tuples.count)
    if stop <= start:
        return b""
    if not tuples.arity and boolean:  # a true 0-ary relation: Soufflé's `()` line
        return b"()\n" * (stop - start)
    part = slice(start, stop)
    columns = [(texts, codes[part]) for texts, codes in zip(shown, tuples.codes)]
    if not boolean:
        weights = [repr(v) for v in tuples.weights[part].astype(np.float64).tolist()]
        columns.append((encoded(weights), np.arange(stop - start)))
        made = None  # (a chunk's own numbers: nothing of them to keep for the next)
    return lines_bytes(columns, delimiter, made)


def _shown(tuples: RelationTuples, delimiter: str, alone: bool,
           quotes: bool = True) -> list[Texts]:
    """Each column's distinct values as cells (`cells_text`; `alone`: each a line of
    its own), encoded once: a column of ints (ids, say) by arithmetic, any other
    through its texts."""
    out: list[Texts] = []
    texts_of: dict[int, Texts] = {}  # columns of one domain share its int64 table
    for k, table in enumerate(tuples.values):
        numbers = tuples.numbers[k] if k < len(tuples.numbers) else None
        if numbers is not None:  # ints already as an int64 array
            if id(numbers) not in texts_of:
                texts_of[id(numbers)] = encoded_ints(numbers)
            out.append(texts_of[id(numbers)])
            continue
        values = table.tolist()
        if set(map(type, values)) == {int}:
            try:
                out.append(encoded_ints(np.array(values, dtype=np.int64)))
                continue
            except OverflowError:  # past 64 bits: as texts
                pass
        out.append(encoded(cells_text(values, delimiter, alone, quotes)))
    return out


_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


def cell_text(value: Any, delimiter: str = "\t", alone: bool = False,
              quotes: bool = True) -> str:
    """A value as a cell of a `.tsv`/`.csv` sink that a relation source reads back
    as the same value (LANGUAGE.md §14): a number as written, a string as is, or
    quoted (`"1"`, `"a\tb"`, `""`) when it would read as a number, is empty, or
    holds the delimiter, a quote, a line break or blanks at its ends, or starts
    with a byte-order mark (a reader takes one off a file's start); `alone`
    (the only cell of its line): also `()`, which on a line of its own is the
    tuple of a true nullary relation (Soufflé's); `quotes=False` (a `.facts`
    file, which reads no quoting): a quote inside is no reason to quote."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    if not isinstance(value, str):
        return str(value)
    if _plain(value, delimiter, alone, quotes):
        return value
    return '"' + value.replace('"', '""') + '"'


def _plain(value: str, delimiter: str, alone: bool, quotes: bool = True) -> bool:
    """Whether a string reads back as itself from a cell unquoted (`cell_text`)."""
    return bool(value) and not _NUMBER.match(value) and value.strip(" \t") == value \
        and not any(ch in value for ch in (delimiter, "\n", "\r")) \
        and not (quotes and '"' in value) \
        and not (alone and value == "()") and not value.startswith(_BOM)


_BOM = "\ufeff"  # a value that starts with one: quoted, as a reader takes it off a file


def cells_text(values: Sequence[Any], delimiter: str = "\t", alone: bool = False,
               quotes: bool = True) -> list[str]:
    """`cell_text` of each value, in bulk where a column is all ints or all
    plain strings (a sink of a million tuples formats each value once, fast)."""
    kinds = set(map(type, values))
    if kinds == {int}:
        return list(map(str, values))
    if kinds == {str}:
        special = re.compile("[" + '"' * quotes + "\n\r" + re.escape(delimiter) + "]")
        return [v if v and v.strip(" \t") == v and not special.search(v)
                and not _NUMBER.match(v) and not (alone and v == "()")
                and not v.startswith(_BOM) else cell_text(v, delimiter, alone, quotes)
                for v in values]
    return [cell_text(v, delimiter, alone, quotes) for v in values]


def write_results(where: str, outputs: dict[str, Any],
                  axes: dict[str, Sequence[AxisValues]] | None = None) -> list[Path]:
    """`fuse run --out`: a run's outputs, atomically, each sparse one kept sparse.
    A folder (one that exists, or a path ending in a separator) gets one file per
    output: NAME.npz as `scipy.sparse.save_npz` writes it, or NAME.npy for a dense
    one.  A file gets one `.npz` archive: of every output by name when all are
    dense, the `save_npz` archive of the output when it is the only one and
    sparse (a file named `.npy`: the one dense output as that array); several outputs with a sparse one are refused (FileProblem): an
    archive holds one sparse matrix, so they go to a folder.  `axes`: each
    output's axes' values (an axis of values is laid out by value:
    io.array_values)."""
    outputs = {name: by_value(name, value, (axes or {}).get(name, ()))
               for name, value in outputs.items()}
    for name, value in outputs.items():  # refused before anything is written
        if hasattr(value, "tocoo") and value.ndim != 2:
            raise FileProblem(f"{name} is sparse with {value.ndim} axes and an .npz holds "
                              f"a sparse matrix of 2; write it with a sink to .tsv")
    target = Path(where)  # (a Path drops the trailing separator that names a folder)
    if target.is_dir() or where.endswith(("/", os.sep)):
        make_folder(target)  # (made even for no output: it was asked)
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
    if target.suffix.lower() == ".npy":
        return [_write_one_npy(target, outputs, sparse)]
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


def _write_one_npy(target: Path, outputs: dict[str, Any], sparse: list[str]) -> Path:
    """`--out FILE.npy`: the one dense output as that array (an .npy holds one
    array, so several outputs, or a sparse one, are refused before writing)."""
    if len(outputs) != 1:
        raise FileProblem(f"an .npy file holds one array, and this run has {len(outputs)} "
                          f"outputs ({', '.join(outputs) or 'none'}); give --out an .npz "
                          f"archive or a folder (ending in /)")
    if sparse:
        raise FileProblem(f"{sparse[0]} is sparse and an .npy file holds a dense array; "
                          f"give --out an .npz file, which keeps it sparse")
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(next(iter(outputs.values()))), allow_pickle=False)
    atomic_write(target, buffer.getvalue())
    return target


def write_topk_pairs(path: Path, rows: list[list[list]]) -> None:
    """topk's (index, score) pairs: a .jsonl line per row, or one .json list of rows."""
    rows = strict_json(rows)  # type: ignore[assignment]  (a NaN score: null)
    if path.suffix.lower() == ".json":
        text = json.dumps(rows) + "\n"
    else:
        text = "".join(json.dumps(row) + "\n" for row in rows)
    atomic_write(path, text.encode("utf-8"))


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


def _token_words(path: Path, array: Any, symbols: Sequence[AxisValues]) -> list[str]:
    """A position x token relation as the words of a text that a `.txt` source reads
    back as the same relation: positions 0, 1, 2, ... each with one token, a string
    with no blank in it.  Any other relation is refused (FileProblem), naming
    `.tsv`, which holds any tuples: a text would read back as another relation."""
    positions, tokens = relation_tuples(array, symbols).columns() or ([], [])
    if positions != list(range(len(positions))):
        problem = "its first axis is not the positions 0, 1, 2, ... each with one token"
    else:
        bad = next((t for t in tokens if type(t) is not str or t.split() != [t]), None)
        if bad is None:
            return tokens
        problem = f"the token {value_text(bad)} would not read back as itself"
    raise FileProblem(f"{path.name}: a .txt sink writes a text's tokens, and {problem}; "
                      f"write the sink to .tsv, which holds any tuples")
