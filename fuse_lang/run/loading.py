"""Reading a program from a file (`fuse_lang.load`) and where relative paths
resolve (`compile`'s `base_dir`): docs/notebooks.md, "The Python API".

- `load(path)`: the file's text, compiled with relative source, sink and import
  paths resolved against the file's folder.
- `compile(text, base_dir=None)`: relative paths resolve against `base_dir`;
  None means the folder of `path=` when given, else the current folder.
- `compile("attn.fuse")`: a string that looks like a file's path rather than a
  program says to use `fuse_lang.load`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..check import Analysis
from ..front.arguments import instance_argument, path_argument, text_argument
from ..front.program_size import MAX_PROGRAM_BYTES
from ..front.syntax import decode
from ..io.source_files import SourceError, open_regular
from .results import FuseError


def base_folder(path: str | os.PathLike | None, base_dir: str | os.PathLike | None) -> Path:
    """Where a program's relative paths resolve: `base_dir` when given, else the
    folder of its `path`, else the current folder."""
    if base_dir is not None:
        return Path(base_dir)
    if path is not None:
        return Path(path).parent
    return Path(".")


def refuse_a_path(source_text: str, path: Any = None, base_dir: Any = None,
                  analysis: Any = None) -> None:
    """FuseError when `compile` is handed what looks like a program file's path
    (one line, no `=`, ending in `.fuse`) instead of the program; TypeError for
    arguments of the wrong type (a pathlib.Path for the text: `load` reads it)."""
    text_argument("fuse_lang.compile", source_text)
    path_argument("fuse_lang.compile", "path", path)
    path_argument("fuse_lang.compile", "base_dir", base_dir)
    if analysis is not None:
        instance_argument("fuse_lang.compile's analysis=", analysis, Analysis,
                          "the Analysis of the same text (fuse_lang.analyze) or None")
    text = source_text.strip()
    if "\n" in text or "=" in text or not text.lower().endswith(".fuse"):
        return
    raise FuseError(f"compile takes a program's text, and {text!r} looks like the path of a "
                    f"file: use fuse_lang.load({text!r}) to read and compile a .fuse file "
                    f"(its relative paths resolve against its folder)")


def read_text(path: str | os.PathLike) -> str:
    """A program file's text; FuseError for a file that cannot be read or is
    not text (its diagnostic attached)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"fuse_lang.load takes a .fuse file's path (a str or a pathlib.Path), "
                        f"not {'None' if path is None else type(path).__name__}")
    if not os.fspath(path):  # (Path("") is the current folder)
        raise FuseError("an empty path names no .fuse file")
    where = Path(path)
    if where.is_dir():
        raise FuseError(f"{where} is a folder, not a .fuse file")
    try:  # a regular file only, read no further than the limit
        with open_regular(where) as fp:
            data = fp.read(MAX_PROGRAM_BYTES + 1)
    except FileNotFoundError:
        raise FuseError(f"{where}: no such file") from None
    except (OSError, SourceError) as err:
        raise FuseError(f"{where}: {getattr(err, 'strerror', None) or err}") from None
    if len(data) > MAX_PROGRAM_BYTES:
        raise FuseError(f"{where} is larger than the {MAX_PROGRAM_BYTES // (1024 * 1024)} MB "
                        f"Fuse reads as a program (keep data in source files)")
    text, bad = decode(data)
    if bad is not None:
        raise FuseError(f"{where}: {bad.message}", (bad,))
    return text
