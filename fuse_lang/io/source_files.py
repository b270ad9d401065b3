"""A source file, opened safely: what every reader of one shares (docs/limits.md).

Only regular files are opened (a FIFO or a device would block or never end),
and a text source is read up to MAX_TEXT_SOURCE_BYTES.  Here too are what the
checker learns of a source (`SourceInfo`) and the errors of reading one
(`SourceError`) or of reading or writing a file at all (`FileProblem`).  The
headers are read in `io.numpy_headers` and `io.text_sources`, dispatched by
suffix in `io.sources`; the data in `io.source_data`.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

from ..speed.fastinit import frozen_dataclass

MAX_TEXT_SOURCE_BYTES = 64 * 1024 * 1024  # .csv/.tsv/.json/.jsonl/.txt


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
    # (io.cells: int, float or str; a .txt token file's positions: int positions)
    columns: tuple[tuple[object, ...], ...] | None = None
    rows: int = 0
    # (column, value) in the order a reader meets them, row by row: values are
    # numbered in this order (a .txt token file's positions: the largest only)
    first_seen: tuple[tuple[int, object], ...] = ()
    # a large plain file read whole (io.whole_files): its values are not in
    # first_seen but here, per column, with the order they are met in row by row
    ranked_symbols: Any = None  # a io.whole_files.RankedSymbols
    # a scipy.sparse `.npz`: its stored non-zeros (from a header, never the data)
    nonzeros: int | None = None
    # a relation file's first row, read as data, when it looks like a header
    header: tuple[str, ...] | None = None


_SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISDIR, "a folder"))


def path_problem(path: str | os.PathLike) -> str | None:
    """Why no file system call can take `path` (a NUL byte; a character the file
    system's encoding cannot write, such as a lone surrogate that an editor or
    the API may hand over), or None.  Every reader and writer of a user's path
    asks first: `os.stat` and `open` would raise ValueError, not OSError."""
    text = os.fspath(path)
    if "\0" in text:
        return "the path holds a NUL byte, which no file system accepts"
    try:
        os.fsencode(text)
    except UnicodeError:
        return (f"the path holds a character the file system's encoding "
                f"({sys.getfilesystemencoding()}) cannot write")
    return None


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, refused (SourceError) unless it is a regular file.
    Opened without blocking, so a FIFO is seen for what it is instead of waiting
    for a writer; a link is followed (a link to /dev/zero is a device)."""
    problem = path_problem(path)
    if problem:
        raise SourceError(problem)
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
    """A text source's contents (bounded; SourceError when it is not UTF-8, naming
    the first byte that is not), without a leading byte-order mark: UTF-8 with or
    without one reads alike, for every text source (docs/language.md, "Files")."""
    data = read_bounded(path)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise SourceError("UTF-16 text (it starts with a UTF-16 byte-order mark), not UTF-8: "
                          "save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SourceError(f"not UTF-8 text (byte {data[err.start]:#04x} on line {line})"
                          ) from None
    if b"\0" in data[:2] and _utf16_without_mark(data[:_UTF16_SAMPLE]):
        raise SourceError("UTF-16 text without a byte-order mark (a NUL byte every other "
                          "byte), not UTF-8: save it as UTF-8")
    return text[1:] if text.startswith("\ufeff") else text


_UTF16_SAMPLE = 1024  # the bytes looked at for UTF-16's pattern


def _utf16_without_mark(sample: bytes) -> bool:
    """Whether bytes look like UTF-16 text of ASCII characters (which decodes as
    UTF-8 whole, a NUL beside each character): every other byte a NUL.  A value
    may hold a NUL (JSON's \\u0000, written back by a sink); a text is never half NULs."""
    sample = sample[:len(sample) - len(sample) % 2]
    return len(sample) >= 8 and (not any(sample[1::2]) or not any(sample[0::2]))


class DuplicateKey(ValueError):
    """A key twice in one JSON object: JSON keeps the last without a word, and the
    first's data would be lost (a relation file's, a weights manifest's)."""


def json_unique_keys(text: str) -> Any:
    """`json.loads(text)`, DuplicateKey for an object that names a key twice."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out
