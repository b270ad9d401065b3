"""The largest program Fuse analyses, for `fuse check` (files) and the language
server (documents) alike (docs/limits.md, "Program size")."""
from __future__ import annotations

from .diagnostics import Diagnostic, make
from .span import Span

MAX_PROGRAM_BYTES = 2 * 1024 * 1024  # about 60,000 lines; checking is linear


def too_large(text: str) -> Diagnostic | None:
    """The `file-too-large` diagnostic for a document over the limit, else None."""
    if len(text) * 4 <= MAX_PROGRAM_BYTES:
        return None  # under the limit whatever the characters (at most 4 bytes each)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_PROGRAM_BYTES:
        return None
    first_line = text.find("\n")
    return make("file-too-large", f"this document is {size / 1e6:.1f} MB; Fuse analyses "
                f"programs up to {MAX_PROGRAM_BYTES // (1024 * 1024)} MB, so nothing in it is "
                f"checked (keep large fact sets and weights in source files such as .tsv or "
                f".npy)", Span(0, first_line if first_line >= 0 else min(len(text), 200)))
