"""What a command line names, read: a program file (`load`, and `read_program`
that says why there is none), and `--input NAME=FILE.npy` (`.npz`,
`.safetensors[:KEY]`) arrays."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ..front.diagnostics import Diagnostic
from ..front.program_size import MAX_PROGRAM_BYTES
from ..front.span import LineIndex
from ..front.syntax import decode
from ..io.source_files import SourceError, open_regular
from .render import render_text
from .status import EXIT_ERRORS, EXIT_USAGE, fail

MAX_FILE_BYTES = MAX_PROGRAM_BYTES  # the language server applies the same limit


def load(path: str) -> tuple[str, Diagnostic | None]:
    """Read a program file: its text, or a diagnostic for a file that is not text."""
    if not path:  # (Path("") is the current folder)
        raise OSError("an empty path names no .fuse file")
    p = Path(path)
    if path == "-" and not p.exists():  # (the Unix spelling of standard input)
        raise OSError("-: no such file (Fuse reads a program from a .fuse file, not from "
                      "standard input)")
    if p.is_dir():
        raise OSError(f"{path} is a folder, not a .fuse file")
    try:  # a regular file only, read no further than the limit (a FIFO would block)
        with open_regular(p) as fp:
            data = fp.read(MAX_FILE_BYTES + 1)
            size = max(len(data), os.fstat(fp.fileno()).st_size)
    except SourceError as err:
        raise OSError(f"{path}: {err}") from None
    if size > MAX_FILE_BYTES:
        raise OSError(f"{path} is {size / 1e6:.1f} MB; Fuse reads programs up to "
                      f"{MAX_FILE_BYTES // (1024 * 1024)} MB (keep large fact sets and weights "
                      f"in source files such as .tsv or .npy)")
    return decode(data)


def unreadable(path: str, err: OSError) -> str:
    """The one line saying why `load` could not read `path`: `fuse: PATH: reason`."""
    if err.strerror:  # (the system's words: `Permission denied`, `File name too long`)
        return f"fuse: {path}: {err.strerror[:1].lower()}{err.strerror[1:]}"
    return f"fuse: {err}"


def read_program(path: str) -> str:
    """The text of one program; CommandFailed after saying why there is none (exit
    2 for a file that cannot be read, 1 for one that is not text)."""
    try:
        text, bad = load(path)
    except FileNotFoundError:
        fail(f"fuse: {path}: no such file", EXIT_USAGE)
    except OSError as err:
        fail(unreadable(path, err), EXIT_USAGE)
    if bad is not None:
        fail(render_text(path, LineIndex(text), bad), EXIT_ERRORS)
    return text


def read_inputs(items: Sequence[str], flag: str = "--input") -> dict[str, Any]:
    """`--input NAME=FILE.npy` (or the `flag` that gave them) (or an .npz holding NAME or one array, or
    `FILE.safetensors[:KEY]`: its tensor KEY, else NAME, else its only one) as arrays by
    name; CommandFailed (exit 2) after saying why one cannot be read.  Read as
    sources are: a regular file, a header that agrees with the file's size, a
    plain number type."""
    from ..io.source_data import load_array_file
    from ..io.sources import split_member

    inputs = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            fail(f"fuse: {flag} takes NAME=FILE.npy (or .npz, or .safetensors[:KEY]), not "
                 f"{item!r}", EXIT_USAGE)
        if name in inputs:  # two values for one name: neither silently wins
            fail(f"fuse: --input {name}=... is given twice; give each source or param "
                 f"one value", EXIT_USAGE)
        try:
            path, key = split_member(file)
            inputs[name] = load_array_file(Path(path), name, key)
        except (OSError, ValueError, TypeError, SourceError, MemoryError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else err
            if isinstance(err, MemoryError):
                reason = "the array does not fit in memory"
            fail(f"fuse: {flag} {item}: cannot read {file}: {reason}", EXIT_USAGE)
    return inputs


def files_read(program_path: str, analysis: Any, inputs: Sequence[str] = (),
               weights: str | None = None, manifest: Any = None) -> dict[Path, str]:
    """The files a run or an export of the program reads, each with what it is in
    words: the program, its sources' files, the `--input` files, the `--params`
    or `--weights` file and the files its manifest names."""
    from ..io.sources import split_member

    base = Path(program_path).parent
    read: dict[Path, str] = {Path(program_path): "the program"}
    for item in inputs:
        read.setdefault(Path(split_member(item.partition("=")[2])[0]), "an --input file")
    if weights:
        read.setdefault(Path(weights), "the --params or --weights file")
    if manifest is not None:
        refs = [*(r for e in manifest.tensors for r in e.shards),
                *(v for e in manifest.tensors if e.quantization
                  for v in (e.quantization.scale, e.quantization.zero_point)),
                *(r for a in manifest.adapters for p in a.pairs for r in (p.a, p.b))]
        for ref in refs:
            if hasattr(ref, "file"):
                read.setdefault(manifest.base_dir / ref.file, "a file of the weights")
    for info in analysis.tensors.values():  # (a file given in a source's place is that)
        if info.source_path:
            read.setdefault(base / split_member(info.source_path.partition("#")[0])[0],
                            "a source of the program")
    return read


def overwritten(targets: Sequence[Path], read: dict[Path, str]) -> str | None:
    """What of `read` (files_read) writing `targets` would replace, in words
    (`the program`, `a source of the program`, ...); None when nothing."""
    resolved: dict[Path, str] = {}
    for path, what in read.items():  # (the first name of a file says what it is)
        resolved.setdefault(path.resolve(), what)
    return next((resolved[t.resolve()] for t in targets if t.resolve() in resolved), None)

