"""What a source file holds, read without loading its data (LANGUAGE.md §8-9).

`.npy` and `.npz` shapes come from the array headers; relation files
(`.csv`/`.tsv`/`.jsonl`/`.json` for Boolean tensors, `.txt` token files) are
scanned for their tuples' symbols, which the checker numbers per domain.
No numpy import: checking a program must start fast.  The checker reads each
source through `read_declared_source`: what the file holds, or the diagnostic why not.
"""
from __future__ import annotations

import ast
import json
import struct
from pathlib import Path

from ..fastinit import frozen_dataclass
from ..front import ir
from ..front.diagnostics import Diagnostic, make


class SourceError(Exception):
    """The file exists but cannot be understood; the message says why."""


@frozen_dataclass
class SourceInfo:
    """Shape of a dense source, or the columns of a relation source."""

    shape: tuple[int, ...] | None = None
    # relation sources: per column, the values in order of first appearance
    # (str symbols or int positions)
    columns: tuple[tuple[object, ...], ...] | None = None
    rows: int = 0
    # (column, value) in the order a reader meets them, row by row: symbols are
    # numbered in this order
    first_seen: tuple[tuple[int, object], ...] = ()


SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".txt", ".json", ".jsonl")


def npy_header_shape(fp) -> tuple[int, ...]:
    magic = fp.read(6)
    if magic != b"\x93NUMPY":
        raise SourceError("not a .npy file (bad magic bytes)")
    major = fp.read(2)[0]
    if major == 1:
        (length,) = struct.unpack("<H", fp.read(2))
    elif major in (2, 3):
        (length,) = struct.unpack("<I", fp.read(4))
    else:
        raise SourceError(f"unsupported .npy format version {major}")
    try:
        header = ast.literal_eval(fp.read(length).decode("latin1"))
        shape = tuple(int(n) for n in header["shape"])
        descr = header["descr"]
    except (ValueError, SyntaxError, KeyError, TypeError) as err:
        raise SourceError(f"the .npy header cannot be read ({err})") from None
    if isinstance(descr, str) and descr.lstrip("<>|=")[:1] in ("O", "V"):
        raise SourceError("the array holds Python objects or records, not numbers")
    return shape


def read_source_info(path: Path, tensor: str, boolean: bool) -> SourceInfo:
    """Shape or symbols of a source file; raises OSError or SourceError."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        with path.open("rb") as fp:
            return SourceInfo(shape=npy_header_shape(fp))
    if suffix == ".npz":
        import zipfile  # here: most programs read no .npz, and it is slow to import

        try:
            with zipfile.ZipFile(path) as zf:
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
                    return SourceInfo(shape=npy_header_shape(fp))
        except zipfile.BadZipFile:
            raise SourceError("not a .npz archive") from None
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        rows = [line.split(sep) for line in _text_lines(path)]
        if boolean:
            return _relation(rows)
        return SourceInfo(shape=_matrix_shape(rows))
    if suffix == ".jsonl":
        rows = []
        for k, line in enumerate(_text_lines(path), 1):
            try:
                item = json.loads(line)
            except json.JSONDecodeError as err:
                raise SourceError(f"line {k} is not JSON ({err.msg})") from None
            rows.append(item if isinstance(item, list) else [item])
        if boolean:
            return _relation(rows)
        return SourceInfo(shape=_nested_shape(rows))
    if suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise SourceError(f"not JSON ({err})") from None
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
    if suffix == ".txt":
        tokens = path.read_text(encoding="utf-8").split()
        vocab = tuple(dict.fromkeys(tokens))
        return SourceInfo(columns=(tuple(range(len(tokens))), vocab), rows=len(tokens),
                          first_seen=tuple((1, v) for v in vocab) + (
                              ((0, len(tokens) - 1),) if tokens else ()),
                          shape=(len(tokens), len(vocab)))
    raise SourceError(f"unknown file type {suffix or '(none)'}; use one of {', '.join(SUFFIXES)}")


def _text_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SourceError("not UTF-8 text") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _cell(text: str) -> object:
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return text


def _relation(rows: list) -> SourceInfo:
    if not rows:
        return SourceInfo(columns=(), rows=0)
    width = len(rows[0])
    columns: list[dict[object, None]] = [dict() for _ in range(width)]
    seen: list[tuple[int, object]] = []
    for k, row in enumerate(rows, 1):
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} fields, the first row has {width}")
        for c, (col, cell) in enumerate(zip(columns, row)):
            value = _cell(cell)
            if value not in col:
                col[value] = None
                seen.append((c, value))
    return SourceInfo(columns=tuple(tuple(c) for c in columns), rows=len(rows),
                      first_seen=tuple(seen))


def _matrix_shape(rows: list[list[str]]) -> tuple[int, ...]:
    if not rows:
        return (0,)
    width = len(rows[0])
    for k, row in enumerate(rows, 1):
        if len(row) != width:
            raise SourceError(f"row {k} has {len(row)} numbers, the first row has {width}")
        for cell in row:
            try:
                float(cell)
            except ValueError:
                raise SourceError(f"row {k} holds {cell.strip()!r}, not a number") from None
    return (len(rows), width) if width > 1 else (len(rows),)


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
    path = base_dir / src.path.value
    try:
        if not path.exists():
            raise FileNotFoundError(path)
        return read_source_info(path, tensor, boolean)
    except FileNotFoundError:
        return make("missing-source", f"`{src.path.value}` does not exist (looked for {path})",
                    src.path.span)
    except IsADirectoryError:
        return make("unreadable-source", f"`{src.path.value}` is a folder, not a file",
                    src.path.span)
    except (OSError, SourceError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        return make("unreadable-source", f"`{src.path.value}` cannot be read: {reason}",
                    src.path.span)
