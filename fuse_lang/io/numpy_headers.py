"""NumPy's file headers, read without numpy (LANGUAGE.md §8-9, docs/limits.md).

An `.npy` header (`read_npy_header`), a `.npz` member's header, and a
scipy.sparse `save_npz` archive's (its members' headers and its tiny `format`
and `shape` members).  An `.npy` header is read up to MAX_NPY_HEADER_BYTES and
must agree with the bytes the file holds; only plain number types are read.
The checker reads these through `io.sources`, the run through `io.source_data`.
"""
from __future__ import annotations

import ast
import functools
import re
import struct
from pathlib import Path
from typing import BinaryIO, Iterable

from ..speed.fastinit import frozen_dataclass
from .source_files import SourceError, open_regular

MAX_NPY_HEADER_BYTES = 64 * 1024  # numpy itself writes headers of a few hundred bytes


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


# the type codes numpy writes ('<f8', '|b1', '>i4'): bool, signed, unsigned, float
_NUMBER_DESCR = re.compile(r"[<>|=]?([biuf])([0-9]{1,4})")
_ITEM_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8)}
# the axes of an array file (numpy's NPY_MAXDIMS was 32 before numpy 2, 64 since:
# the smaller, so that a file checked here loads under either)
MAX_NPY_DIMENSIONS = 32
_KIND_WORDS = {"c": "complex numbers",
               "M": "dates and times", "m": "time spans", "S": "byte strings",
               "a": "byte strings", "U": "text", "O": "Python objects",
               "V": "raw records"}


def read_npy_header(fp: BinaryIO, available: int) -> NpyHeader:
    """The header of the `.npy` stream `fp` of `available` bytes in all, checked:
    a plain number type, and no more data than the stream holds."""
    shape, descr, fortran_order, consumed = _npy_fields(fp)
    parsed = _NUMBER_DESCR.fullmatch(descr) if isinstance(descr, str) else None
    if parsed is None or int(parsed.group(2)) not in _item_sizes(parsed.group(1)):
        raise SourceError(f"it holds {_dtype_words(descr)}")
    found = NpyHeader(shape, descr, fortran_order, int(parsed.group(2)))
    left = available - consumed
    if found.nbytes > left:
        raise SourceError(f"its header claims shape {shape} ({found.nbytes} bytes of data) "
                          f"but the file holds {max(left, 0)} bytes after the header")
    return found


def _item_sizes(kind: str) -> tuple[int, ...]:
    """The sizes of `kind` numpy reads here: a float of 12 or 16 bytes is the C long
    double, which numpy reads only where the platform's long double has that size."""
    if kind != "f":
        return _ITEM_SIZES[kind]
    return _ITEM_SIZES["f"] + tuple(n for n in (_long_double_size(),) if n > 8)


@functools.lru_cache(maxsize=1)
def _long_double_size() -> int:
    import ctypes  # here: only a header of a 12- or 16-byte float asks

    return ctypes.sizeof(ctypes.c_longdouble)


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
    raw = _exactly(fp, length)
    try:
        header = ast.literal_eval(raw.decode("utf8" if major == 3 else "latin1"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError,
            UnicodeDecodeError) as err:
        raise SourceError(f"the .npy header cannot be read ({err})") from None
    shape, descr, fortran_order = _header_fields(header)
    return shape, descr, fortran_order, 6 + len(version) + (2 if major == 1 else 4) + length


def _header_fields(header: object) -> tuple[tuple[int, ...], object, bool]:
    """The header's dictionary checked as numpy checks it when it loads the file
    (numpy.lib.format): exactly the keys descr, fortran_order and shape; a tuple of
    integers for the shape (never a float: (2.7,) is not (2,)), a bool for the order."""
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        keys = sorted(map(repr, header)) if isinstance(header, dict) else None
        raise SourceError("the .npy header is not a dictionary of descr, fortran_order and "
                          f"shape (found {', '.join(keys) if keys else repr(header)[:60]})")
    shape, order = header["shape"], header["fortran_order"]
    if not isinstance(shape, tuple) or not all(isinstance(n, int) for n in shape):
        raise SourceError(f"the .npy header's shape {shape!r:.60} is not a tuple of integers")
    if not isinstance(order, bool):
        raise SourceError(f"the .npy header's fortran_order {order!r:.60} is not True or False")
    if any(extent < 0 for extent in shape):
        raise SourceError(f"its header claims a negative extent {shape}")
    if len(shape) > MAX_NPY_DIMENSIONS:
        raise SourceError(f"its header claims {len(shape)} axes; Fuse reads at most "
                          f"{MAX_NPY_DIMENSIONS} (as numpy before 2.0)")
    return tuple(int(n) for n in shape), header["descr"], order


def _exactly(fp: BinaryIO, count: int) -> bytes:
    data = fp.read(count)
    if len(data) != count:
        raise SourceError("the .npy header is cut short")
    return data


def _dtype_words(descr: object) -> str:
    if not isinstance(descr, str):
        return f"records with fields (dtype {descr!r:.40})"
    kind = descr.lstrip("<>|=")[:1]
    if descr.lstrip("<>|=") in ("f12", "f16"):
        return (f"a {descr.lstrip('<>|=')[1:]}-byte long double (dtype {descr!r:.40}), which numpy "
                f"reads only where the C long double has that size (here "
                f"{_long_double_size()} bytes); save it as float64")
    only = "; Fuse reads only bool, integer or float numbers"
    if kind in _ITEM_SIZES:
        return f"numbers of a size numpy does not read (dtype {descr!r:.40}){only}"
    return f"{_KIND_WORDS.get(kind, 'values that are not numbers')} (dtype {descr!r:.40}){only}"


def npz_errors() -> tuple[type[BaseException], ...]:
    """What reading an `.npz` archive raises when it is not one or is damaged: a bad
    zip, a member whose compressed data does not inflate (zlib, lzma), one cut
    short, or a compression Python does not read."""
    import zipfile
    import zlib

    errors: tuple[type[BaseException], ...] = (zipfile.BadZipFile, zlib.error, EOFError,
                                               NotImplementedError)
    try:
        import lzma
    except ImportError:  # a Python built without it
        return errors
    return (*errors, lzma.LZMAError)


def npz_problem(err: BaseException) -> str:
    """Why an `.npz` archive cannot be read, in words (err: one of npz_errors())."""
    if str(err) == "File is not a zip file":
        return "not a .npz archive"
    if isinstance(err, NotImplementedError):
        return f"its compression is not one Python reads ({err})"
    return f"the .npz archive is damaged ({err or type(err).__name__})"


def read_npz_member_header(path: Path, tensor: str) -> NpyHeader:
    """The header of the array `tensor` of a `.npz` archive of plain arrays (its
    only array when it holds one)."""
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
    except npz_errors() as err:
        raise SourceError(npz_problem(err)) from None


# ------------------------------------------------- scipy.sparse archives

# the members scipy.sparse.save_npz writes: format, shape, data and the positions
SPARSE_NPZ_FORMATS = {"csr": ("indices", "indptr"), "csc": ("indices", "indptr"),
                      "coo": ("row", "col")}
_TEXT_DESCR = re.compile(r"[<>|=]?([SU])([0-9]{1,4})")
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
    except npz_errors() as err:
        raise SourceError(npz_problem(err)) from None


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
