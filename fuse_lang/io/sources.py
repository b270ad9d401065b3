"""What a source file holds, read without loading its data (LANGUAGE.md §8-9).

`.npy` and `.npz` shapes come from the array headers (a scipy.sparse `.npz`:
its members' headers and its tiny `format` and `shape` members); relation files
(`.csv`/`.tsv`/`.jsonl`/`.json` for Boolean tensors, `.txt` token files) are
scanned for their tuples' symbols, which the checker numbers per domain.
No numpy import: checking a program must start fast.  The checker reads each
source through `read_declared_source`: what the file holds, or the diagnostic why not.

Every read is bounded (docs/limits.md): only regular files are opened (a FIFO
or a device would block or never end), text sources are read up to
MAX_TEXT_SOURCE_BYTES, an `.npy` header up to MAX_NPY_HEADER_BYTES, and an
array's header must agree with the bytes the file holds.  The run
(`io/source_data.py`) reads its files through the same functions.
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat
import struct
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from ..front import ir
from ..front.diagnostics import Diagnostic, make
from ..speed.fastinit import frozen_dataclass

MAX_TEXT_SOURCE_BYTES = 64 * 1024 * 1024  # .csv/.tsv/.json/.jsonl/.txt
MAX_NPY_HEADER_BYTES = 64 * 1024  # numpy itself writes headers of a few hundred bytes


class SourceError(Exception):
    """The file exists but cannot be understood; the message says why."""


class FileProblem(Exception):
    """A source or sink that cannot be read or written; the message says why
    (`io.source_data` reads sources, `io.sinks` writes sinks)."""


@frozen_dataclass
class SourceInfo:
    """Shape of a dense source, or the columns of a relation source."""

    shape: tuple[int, ...] | None = None
    # relation sources: per column, the values in order of first appearance
    # (str symbols or int positions)
    columns: tuple[tuple[object, ...], ...] | None = None
    rows: int = 0
    # (column, value) in the order a reader meets them, row by row: symbols are
    # numbered in this order (a large file's integer column: its largest only)
    first_seen: tuple[tuple[int, object], ...] = ()
    # a large plain file read whole (io.whole_files): its symbols are not in
    # first_seen but here, per column, with the order they are met in row by row
    ranked_symbols: Any = None  # a io.whole_files.RankedSymbols
    # a scipy.sparse `.npz`: its stored non-zeros (from a header, never the data)
    nonzeros: int | None = None


@frozen_dataclass
class NpyHeader:
    """An `.npy` header: `descr` is a plain number type such as '<f8' or '|b1'."""

    shape: tuple[int, ...]
    descr: str
    fortran_order: bool
    itemsize: int

    @property
    def nbytes(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent  # exact: Python integers do not wrap
        return count * self.itemsize


SAFETENSORS = ".safetensors"  # read by safetensors_header, imported for such a file only
SUFFIXES = (".npy", ".npz", ".safetensors", ".csv", ".tsv", ".txt", ".json", ".jsonl")

# the type codes numpy writes ('<f8', '|b1', '>i4'): bool, signed, unsigned, float
_NUMBER_DESCR = re.compile(r"[<>|=]?([biuf])([0-9]+)")
_ITEM_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8, 12, 16)}
_KIND_WORDS = {"c": "complex numbers",
               "M": "dates and times", "m": "time spans", "S": "byte strings",
               "a": "byte strings", "U": "text", "O": "Python objects",
               "V": "raw records"}
_SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISDIR, "a folder"))


def split_member(value: str) -> tuple[str, str | None]:
    """A source path and the key after `.safetensors:` (None without one)."""
    marker = SAFETENSORS + ":"
    at = value.lower().rfind(marker)
    if at < 0:
        return value, None
    return value[:at + len(SAFETENSORS)], value[at + len(marker):]


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, refused (SourceError) unless it is a regular file.
    Opened without blocking, so a FIFO is seen for what it is instead of waiting
    for a writer; a link is followed (a link to /dev/zero is a device)."""
    if "\0" in str(path):
        raise SourceError("the path holds a NUL byte, which no file system accepts")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = next((words for test, words in _SPECIAL_FILES if test(mode)),
                        "not a regular file")
            raise SourceError(f"it is {what}; Fuse reads only regular files")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path, limit: int = MAX_TEXT_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (SourceError past it)."""
    with open_regular(path) as fp:
        data = fp.read(limit + 1)  # the file may grow after a stat: read, then judge
    if len(data) > limit:
        raise SourceError(f"it is over {limit // (1024 * 1024)} MB, the limit for a text "
                          f"source; store a large array as .npy")
    return data


def read_text(path: Path) -> str:
    """A text source's contents (bounded; SourceError when it is not UTF-8)."""
    try:
        return read_bounded(path).decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError("not UTF-8 text") from None


def read_npy_header(fp: BinaryIO, available: int) -> NpyHeader:
    """The header of the `.npy` stream `fp` of `available` bytes in all, checked:
    a plain number type, and no more data than the stream holds."""
    shape, descr, fortran_order, consumed = _npy_fields(fp)
    parsed = _NUMBER_DESCR.fullmatch(descr) if isinstance(descr, str) else None
    if parsed is None or int(parsed.group(2)) not in _ITEM_SIZES[parsed.group(1)]:
        raise SourceError(f"it holds {_dtype_words(descr)}; Fuse reads only bool, integer "
                          f"or float numbers")
    found = NpyHeader(shape, descr, fortran_order, int(parsed.group(2)))
    left = available - consumed
    if found.nbytes > left:
        raise SourceError(f"its header claims shape {shape} ({found.nbytes} bytes of data) "
                          f"but the file holds {max(left, 0)} bytes after the header")
    return found


def _npy_fields(fp: BinaryIO) -> tuple[tuple[int, ...], object, bool, int]:
    """An `.npy` header's shape, descr and order (unchecked type), and its length."""
    magic = fp.read(6)
    if magic != b"\x93NUMPY":
        raise SourceError("not a .npy file (bad magic bytes)")
    version = fp.read(2)
    major = version[0] if version else 0
    if major == 1:
        (length,) = struct.unpack("<H", _exactly(fp, 2))
    elif major in (2, 3):
        (length,) = struct.unpack("<I", _exactly(fp, 4))
    else:
        raise SourceError(f"unsupported .npy format version {major}")
    if length > MAX_NPY_HEADER_BYTES:
        raise SourceError(f"its header claims {length} bytes, over the limit of "
                          f"{MAX_NPY_HEADER_BYTES}")
    try:
        header = ast.literal_eval(_exactly(fp, length).decode("latin1"))
        shape = tuple(int(n) for n in header["shape"])
        descr, fortran_order = header["descr"], bool(header["fortran_order"])
    except (ValueError, SyntaxError, KeyError, TypeError, MemoryError,
            RecursionError) as err:
        raise SourceError(f"the .npy header cannot be read ({err})") from None
    if any(extent < 0 for extent in shape):
        raise SourceError(f"its header claims a negative extent {shape}")
    return shape, descr, fortran_order, 6 + len(version) + (2 if major == 1 else 4) + length


def _exactly(fp: BinaryIO, count: int) -> bytes:
    data = fp.read(count)
    if len(data) != count:
        raise SourceError("the .npy header is cut short")
    return data


def _dtype_words(descr: object) -> str:
    if not isinstance(descr, str):
        return f"records with fields (dtype {descr!r})"
    kind = descr.lstrip("<>|=")[:1]
    if kind in _ITEM_SIZES:
        return f"numbers of a size numpy does not read (dtype {descr!r})"
    return f"{_KIND_WORDS.get(kind, 'values that are not numbers')} (dtype {descr!r})"


def read_source_info(path: Path, tensor: str, boolean: bool, key: str | None = None
                     ) -> SourceInfo:
    """Shape or symbols of a source file; raises OSError or SourceError.  `key`:
    the tensor of a safetensors file (`model.safetensors:key`)."""
    suffix = path.suffix.lower()
    if suffix == SAFETENSORS:
        from .safetensors_header import SafetensorsProblem, read_entry

        with open_regular(path):  # a FIFO or a device is refused before the library maps it
            pass
        try:
            return SourceInfo(shape=read_entry(path, key, tensor).shape)
        except SafetensorsProblem as err:
            raise SourceError(str(err)) from None
    if suffix == ".npy":
        with open_regular(path) as fp:
            return SourceInfo(shape=read_npy_header(fp, os.fstat(fp.fileno()).st_size).shape)
    if suffix == ".npz":
        sparse = read_sparse_npz_header(path)
        if sparse is not None:
            return SourceInfo(shape=sparse.shape, nonzeros=sparse.nonzeros)
        return SourceInfo(shape=_npz_member_header(path, tensor).shape)
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        if boolean:
            from .file_reads import remembered

            whole = remembered(path, ("relation", sep), lambda: _whole_relation(path, sep))
            if whole is not None:
                return whole
        rows = (line.split(sep) for line in _lines(read_text(path)))
        return _relation(rows) if boolean else SourceInfo(shape=_matrix_shape(rows))
    if suffix == ".jsonl":
        rows = (item if isinstance(item, list) else [item] for item in _json_lines(path))
        return _relation(rows) if boolean else SourceInfo(shape=_nested_shape(list(rows)))
    if suffix == ".json":
        return _json_info(path, tensor, boolean)
    if suffix == ".txt":
        tokens = read_text(path).split()
        vocab = tuple(dict.fromkeys(tokens))
        return SourceInfo(columns=(tuple(range(len(tokens))), vocab), rows=len(tokens),
                          first_seen=tuple((1, v) for v in vocab) + (
                              ((0, len(tokens) - 1),) if tokens else ()),
                          shape=(len(tokens), len(vocab)))
    raise SourceError(f"unknown file type {suffix or '(none)'}; use one of {', '.join(SUFFIXES)}")


def file_columns(path: Path, sep: str) -> list | None:
    """io.whole_files.split_columns of the file at `path`, once per file version
    inside a compile (io.file_reads); raises OSError or SourceError as reading does."""
    from .file_reads import remembered
    from .whole_files import split_columns

    return remembered(path, ("columns", sep), lambda: split_columns(read_text(path), sep))


def _whole_relation(path: Path, sep: str) -> SourceInfo | None:
    """A plain relation file read whole, column by column (io.whole_files);
    None when it is small or not plain."""
    from .whole_files import WHOLE_FILE_BYTES, relation_of_columns

    if path.stat().st_size < WHOLE_FILE_BYTES:  # (read row by row: no need to split it)
        return None
    columns = file_columns(path, sep)
    whole = relation_of_columns(columns) if columns is not None else None
    if whole is None:
        return None
    return SourceInfo(columns=whole[0], rows=whole[1], first_seen=whole[2],
                      ranked_symbols=whole[3])


def _npz_member_header(path: Path, tensor: str) -> NpyHeader:
    import zipfile  # here: most programs read no .npz, and it is slow to import

    try:
        with open_regular(path) as raw, zipfile.ZipFile(raw) as zf:
            names = [n for n in zf.namelist() if n.endswith(".npy")]
            wanted = f"{tensor}.npy"
            if wanted in names:
                member = wanted
            elif len(names) == 1:
                member = names[0]
            else:
                listed = ", ".join(n[:-4] for n in names) or "none"
                raise SourceError(f"holds no array named {tensor} (arrays: {listed})")
            with zf.open(member) as fp:
                return read_npy_header(fp, zf.getinfo(member).file_size)
    except zipfile.BadZipFile:
        raise SourceError("not a .npz archive") from None


# ------------------------------------------------- scipy.sparse archives

# the members scipy.sparse.save_npz writes: format, shape, data and the positions
SPARSE_NPZ_FORMATS = {"csr": ("indices", "indptr"), "csc": ("indices", "indptr"),
                      "coo": ("row", "col")}
_TEXT_DESCR = re.compile(r"[<>|=]?([SU])([0-9]+)")
_INTEGER_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}


@frozen_dataclass
class SparseNpzHeader:
    """A scipy.sparse `save_npz` archive, read from its members' headers only."""

    format: str  # "csr", "csc" or "coo"
    shape: tuple[int, ...]
    descr: str  # the stored values' number type
    nonzeros: int


def is_sparse_archive(names: Iterable[str]) -> bool:
    """Whether an archive's members are those scipy.sparse.save_npz writes."""
    return {"format.npy", "shape.npy", "data.npy"} <= set(names)


def read_sparse_npz_header(path: Path) -> SparseNpzHeader | None:
    """The header of a scipy.sparse `.npz` file; None for an archive of plain arrays.
    Only the members' headers are read, and the two tiny members `format` and
    `shape`; a malformed or unsupported archive raises SourceError."""
    import zipfile

    try:
        with open_regular(path) as raw, zipfile.ZipFile(raw) as archive:
            if not is_sparse_archive(archive.namelist()):
                return None
            return sparse_archive_header(archive)
    except zipfile.BadZipFile:
        raise SourceError("not a .npz archive") from None


def sparse_archive_header(archive) -> SparseNpzHeader:  # a zipfile.ZipFile
    """The header of an open scipy.sparse archive (see `read_sparse_npz_header`)."""
    names = set(archive.namelist())
    fmt = _member_text(archive, "format.npy")
    if fmt not in SPARSE_NPZ_FORMATS:
        raise SourceError(f"it is a scipy.sparse archive of format {fmt!r}; Fuse reads "
                          f"{', '.join(SPARSE_NPZ_FORMATS)}")
    if "coords.npy" in names or f"{SPARSE_NPZ_FORMATS[fmt][0]}.npy" not in names:
        raise SourceError(f"its {fmt} arrays are not those of a 2-D sparse array "
                          f"(members: {', '.join(sorted(n[:-4] for n in names))})")
    shape = _member_shape(archive)
    data = _member_header(archive, "data.npy")
    if len(data.shape) != 1:
        raise SourceError(f"its data array has shape {data.shape}, not one row of values")
    nonzeros = data.shape[0]
    positions = SPARSE_NPZ_FORMATS[fmt]
    lengths = {"indices": nonzeros, "row": nonzeros, "col": nonzeros,
               "indptr": shape[0 if fmt == "csr" else 1] + 1}
    for member in positions:
        if f"{member}.npy" not in names:
            raise SourceError(f"it has no `{member}` array, which a {fmt} archive holds")
        header = _member_header(archive, f"{member}.npy")
        if header.descr.lstrip("<>|=")[:1] not in "iu" or header.shape != (lengths[member],):
            raise SourceError(f"its `{member}` array holds {header.shape} of {header.descr}; "
                              f"a {fmt} array of shape {shape} with {nonzeros} values needs "
                              f"({lengths[member]},) integers")
    return SparseNpzHeader(fmt, shape, data.descr, nonzeros)


def _member_header(archive, name: str) -> NpyHeader:
    try:
        with archive.open(name) as fp:
            return read_npy_header(fp, archive.getinfo(name).file_size)
    except SourceError as err:
        raise SourceError(f"its `{name[:-4]}` array: {err}") from None


def _member_text(archive, name: str) -> str:
    """A 0-d text member (`format`: b'csr')."""
    with archive.open(name) as fp:
        shape, descr, _, _ = _npy_fields(fp)
        parsed = _TEXT_DESCR.fullmatch(descr) if isinstance(descr, str) else None
        if parsed is None or shape != () or int(parsed.group(2)) > 16:
            raise SourceError(f"its `format` member is not a format name ({descr!r})")
        size = int(parsed.group(2)) * (1 if parsed.group(1) == "S" else 4)
        raw = fp.read(size)
    if parsed.group(1) == "U":
        raw = raw.decode("utf-32-be" if descr.startswith(">") else "utf-32-le", "replace")
        return raw.rstrip("\0")
    return raw.rstrip(b"\0").decode("ascii", "replace")


def _member_shape(archive) -> tuple[int, ...]:
    """The `shape` member's numbers: 2 non-negative integers."""
    header = _member_header(archive, "shape.npy")
    kind = header.descr.lstrip("<>|=")[:1]
    if kind not in "iu" or len(header.shape) != 1:
        raise SourceError(f"its `shape` member holds {header.descr} of shape {header.shape}")
    if header.shape != (2,):
        raise SourceError(f"it holds a {header.shape[0]}-D sparse array; Fuse reads 2-D ones")
    with archive.open("shape.npy") as fp:
        _npy_fields(fp)
        raw = fp.read(header.nbytes)
    code = _INTEGER_CODES[header.itemsize]
    order = ">" if header.descr.startswith(">") else "<"
    shape = struct.unpack(order + (code if kind == "i" else code.upper()) * 2, raw)
    if any(extent < 0 for extent in shape):
        raise SourceError(f"its shape {shape} has a negative extent")
    return tuple(shape)


def _json_info(path: Path, tensor: str, boolean: bool) -> SourceInfo:
    data = parse_json(read_text(path))
    if isinstance(data, dict):
        if tensor in data:
            data = data[tensor]
        elif len(data) == 1:
            data = next(iter(data.values()))
        else:
            raise SourceError(f"holds no entry named {tensor}")
    if boolean and isinstance(data, list) and all(isinstance(r, list) for r in data):
        return _relation(data)
    return SourceInfo(shape=_nested_shape(data))


def parse_json(text: str, where: str = "") -> object:
    """JSON text as Python data; SourceError (`where`: "line 3 ") when it is not JSON
    or nests too deeply to read."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SourceError(f"{where}is not JSON ({err.msg})" if where else
                          f"not JSON ({err})") from None
    except RecursionError:
        raise SourceError(f"{where or 'the JSON '}nests too deeply to read") from None


def _json_lines(path: Path) -> Iterator[object]:
    for k, line in enumerate(text_lines(path), 1):
        yield parse_json(line, f"line {k} ")


def text_lines(path: Path) -> list[str]:
    """The non-blank lines of a text source, stripped (bounded, UTF-8)."""
    return _lines(read_text(path))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _cell(text: str) -> object:
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return text


def _relation(rows: Iterable[list]) -> SourceInfo:
    """The columns' values of a relation's rows (read one by one: a large file's
    rows are never all held at once)."""
    width = -1
    columns: list[dict[object, None]] = []
    seen: list[tuple[int, object]] = []
    k = 0
    for k, row in enumerate(rows, 1):
        if width < 0:
            width = len(row)
            columns = [dict() for _ in range(width)]
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} fields, the first row has {width}")
        for c, (col, cell) in enumerate(zip(columns, row)):
            value = _cell(cell)
            if value not in col:
                col[value] = None
                seen.append((c, value))
    if width < 0:
        return SourceInfo(columns=(), rows=0)
    return SourceInfo(columns=tuple(tuple(c) for c in columns), rows=k,
                      first_seen=tuple(seen))


def _matrix_shape(rows: Iterable[list[str]]) -> tuple[int, ...]:
    width, k = -1, 0
    for k, row in enumerate(rows, 1):
        if width < 0:
            width = len(row)
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} numbers, the first row has {width}")
        for cell in row:
            try:
                float(cell)
            except ValueError:
                raise SourceError(f"row {k} holds {cell.strip()!r}, not a number") from None
    if width < 0:
        return (0,)
    return (k, width) if width > 1 else (k,)


def _nested_shape(data: object) -> tuple[int, ...]:
    shape: list[int] = []
    level = [data]
    while level and all(isinstance(x, list) for x in level):
        lengths = {len(x) for x in level}
        if len(lengths) != 1:
            raise SourceError("the nested lists are not rectangular")
        shape.append(lengths.pop())
        level = [y for x in level for y in x]  # type: ignore[union-attr]
    for x in level:
        if not isinstance(x, (int, float, bool)):
            raise SourceError(f"holds {x!r}, not a number")
    return tuple(shape)


def read_declared_source(base_dir: Path, src: ir.Source, tensor: str, boolean: bool
                         ) -> SourceInfo | Diagnostic:
    """What the file a source statement names holds (`base_dir`: where its path
    starts), or the diagnostic that says why it cannot be read."""
    file, key = split_member(src.path.value)
    path = base_dir / file
    if "\0" in src.path.value:
        shown = src.path.value.replace("\0", "\\0")
        return make("unreadable-source", f"`{shown}` cannot be read: the path holds a NUL "
                    f"byte, which no file system accepts", src.path.span)
    try:
        if path.is_dir():
            raise IsADirectoryError(path)
        if not path.exists():
            raise FileNotFoundError(path)
        return read_source_info(path, tensor, boolean, key)
    except FileNotFoundError:
        return make("missing-source", f"`{src.path.value}` does not exist (looked for {path})",
                    src.path.span)
    except IsADirectoryError:
        return make("unreadable-source", f"`{src.path.value}` is a folder, not a file",
                    src.path.span)
    except (OSError, SourceError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        return make("unreadable-source", f"`{src.path.value}` cannot be read: {reason}",
                    src.path.span)
