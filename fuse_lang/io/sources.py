"""What a source file holds, read without loading its data (LANGUAGE.md §8-9).

The checker reads each source through `read_declared_source`: what the file
holds, or the diagnostic why not.  `read_source_info` dispatches by suffix: a
`.safetensors` header through `io.safetensors_header`, `.npy`/`.npz` headers
(a scipy.sparse `.npz` too) through `io.numpy_headers`, text sources through
`io.text_sources`; every file is opened and read as `io.source_files` allows
(regular files only, bounded reads: docs/limits.md).  No numpy import:
checking a program must start fast.  The run (`io/source_data.py`) reads its
files' data through the same functions.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from .numpy_headers import read_npy_header, read_npz_member_header, read_sparse_npz_header
from .source_files import SourceError, SourceInfo, open_regular, path_problem
from .text_sources import delimited_info, json_info, json_lines_info, tokens_info

SAFETENSORS = ".safetensors"  # read by safetensors_header, imported for such a file only
SUFFIXES = (".npy", ".npz", ".safetensors", ".csv", ".tsv", ".facts", ".txt", ".json",
            ".jsonl")


def split_member(value: str) -> tuple[str, str | None]:
    """A source path and the key after `.safetensors:` (a tensor of the file) or
    `.txt:` (the vocabulary its token ids index: io.token_ids); None without one."""
    for suffix in (SAFETENSORS, ".txt"):
        marker = suffix + ":"
        at = value.lower().rfind(marker)
        if at >= 0:
            return value[:at + len(suffix)], value[at + len(marker):]
    return value, None


def read_source_info(path: Path, tensor: str, boolean: bool, key: str | None = None,
                     header: bool | None = None) -> SourceInfo:
    """Shape or values of a source file; raises OSError or SourceError.  `key`:
    the tensor of a safetensors file (`model.safetensors:key`), or the vocabulary
    of a text read as token ids (`corpus.txt:vocab.json`); `header`: a
    relation file's first row is a header (True), data (False), or data that is
    reported if it looks like a header (None)."""
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
        return SourceInfo(shape=read_npz_member_header(path, tensor).shape)
    if suffix in (".csv", ".tsv", ".facts"):
        return delimited_info(path, "," if suffix == ".csv" else "\t", boolean, header)
    if suffix == ".jsonl":
        return json_lines_info(path, boolean, header)
    if suffix == ".json":
        return json_info(path, tensor, boolean, header)
    if suffix == ".txt" and key is not None:
        if boolean:
            raise SourceError(f"a text with a vocabulary (`:{key}`) gives token ids, numbers: "
                              f"read them into a numeric tensor of one axis, written with [ ]")
        from .token_ids import read_token_ids

        return SourceInfo(shape=(len(read_token_ids(path, key)[0]),))
    if suffix == ".txt":
        return tokens_info(path)
    raise SourceError(f"unknown file type {suffix or '(none)'}; use one of {', '.join(SUFFIXES)}")


def read_declared_source(base_dir: Path, src: ir.Source, tensor: str, boolean: bool
                         ) -> SourceInfo | Diagnostic:
    """What the file a source statement names holds (`base_dir`: where its path
    starts), or the diagnostic that says why it cannot be read."""
    file, key = split_member(src.path.value)
    path = base_dir / file
    problem = path_problem(path)
    if problem:
        shown = src.path.value.replace("\0", "\\0").encode("utf-8", "backslashreplace")
        return make("unreadable-source", f"`{shown.decode('utf-8')}` cannot be read: {problem}",
                    src.path.span)
    try:
        if path.is_dir():
            raise IsADirectoryError(path)
        if not path.exists():
            raise FileNotFoundError(path)
        return read_source_info(path, tensor, boolean, key, src.header)
    except FileNotFoundError:
        return make("missing-source", f"`{src.path.value}` does not exist (looked for {path})",
                    src.path.span)
    except IsADirectoryError:
        what = f"`{src.path.value}` is a folder" if file else "the path is empty: it names " \
            "the program's folder"
        return make("unreadable-source", f"{what}, not a file", src.path.span)
    except (OSError, SourceError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        return make("unreadable-source", f"`{src.path.value}` cannot be read: {reason}",
                    src.path.span)


def header_row(src: ir.Source, header: tuple[str, ...]) -> Diagnostic:
    """`header-row`: a relation file's first row looks like a header and is read as
    data; the fixes say which it is (`source("f.tsv", header=1)` or `header=0`)."""
    # its fields as a user reads them, not as a repr (a CSV file's 'name\tage' was
    # shown with a tab it does not have)
    shown = ", ".join(header) if len(header) < 6 else ", ".join(header[:5]) + ", …"
    path = src.path.value.replace("\\", "\\\\").replace('"', '\\"')
    return make(
        "header-row", f"the first row of `{src.path.value}` ({shown}) looks like a header, "
        f"and is read as a tuple of `{src.lhs.name}`; say `source(\"{path}\", header=1)` to "
        f"skip it, or `header=0` if it is data", src.path.span,
        fixes=(Fix("Skip the header row", (TextEdit(src.path.span,
                                                     f'source("{path}", header=1)'),)),
               Fix("Read the first row as data", (TextEdit(src.path.span,
                                                            f'source("{path}", header=0)'),))))
