"""Rich display of the run layer's objects (`RunResult`, `Relation`, a why's answer) without
an upward import: the renderers live in the `ide` layer (ide/notebook_html.py,
built on ide/run_summary.py) and register here when loaded; the package root
loads them with the engine.  Until one is registered, `_repr_html_` answers
None and a notebook shows the object's text repr."""
from __future__ import annotations

from typing import Any, Callable

Renderer = Callable[[Any, str], "str | None"]

_RENDERERS: dict[str, Renderer] = {}  # by class name: "RunResult", "Relation", "Derivation", ...


def register(kind: str, renderer: Renderer) -> None:
    """Use `renderer(obj, mime)` for objects whose class is named `kind`."""
    _RENDERERS[kind] = renderer


def rich(obj: Any, mime: str) -> str | None:
    """`obj` rendered as `mime` ("text/html" or "text/markdown"), or None."""
    renderer = _RENDERERS.get(type(obj).__name__)
    return None if renderer is None else renderer(obj, mime)
