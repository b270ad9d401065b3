"""The public API's arguments of the wrong type, said in words: `analyze(3)`,
`compile(Path("a.fuse"))`, `plan_program("text")` raise a TypeError naming the
function, what it takes and what it was given, rather than an AttributeError
from deep inside (docs/notebooks.md, "The Python API")."""
from __future__ import annotations

import os
from typing import Any


def _given(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def text_argument(function: str, text: Any) -> None:
    """TypeError unless `text` is a program's text (a str)."""
    if isinstance(text, str):
        return
    if isinstance(text, os.PathLike):
        raise TypeError(f"{function} takes a program's text (a str), not a {_given(text)}: "
                        f"to read and compile a .fuse file, use "
                        f"fuse_lang.load({os.fspath(text)!r})")
    if isinstance(text, (bytes, bytearray)):
        raise TypeError(f"{function} takes a program's text (a str), not {_given(text)}: "
                        f"fuse_lang.decode(data) gives the text of a file's bytes")
    raise TypeError(f"{function} takes a program's text (a str), not {_given(text)}")


def path_argument(function: str, name: str, value: Any) -> None:
    """TypeError unless `value` is None or a path (a str or an os.PathLike)."""
    if value is None or isinstance(value, (str, os.PathLike)):
        return
    raise TypeError(f"{function}'s {name} is a path (a str or a pathlib.Path) or None, "
                    f"not {_given(value)}")


def bytes_argument(function: str, data: Any) -> None:
    """TypeError unless `data` is bytes (a file's contents: bytes or a bytearray)."""
    if isinstance(data, (bytes, bytearray)):
        return
    hint = ": it is text already" if isinstance(data, str) else ""
    raise TypeError(f"{function} takes a file's bytes, not {_given(data)}{hint}")


def instance_argument(function: str, value: Any, kind: type, what: str) -> None:
    """TypeError unless `value` is a `kind` (described to the caller as `what`)."""
    if not isinstance(value, kind):
        raise TypeError(f"{function} takes {what}, not {_given(value)}")
