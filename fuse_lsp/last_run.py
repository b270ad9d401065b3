"""Each document's last successful run, kept by the server: the values that
`fuse.plot` draws, that a tensor's hover shows and that `fuse.why` explains (with a small picture where
the client renders Markdown images, drawn off the event loop after the run)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .state import FuseServer


@dataclass
class LastRun:
    outputs: dict[str, Any]  # NumPy arrays by name
    queries: tuple[Any, ...]
    analysis: Any  # the analysis of the text that ran
    version: int | None  # the document's version when it ran (newer: the values are stale)
    # name -> a data URI of its small picture, filled in by a worker after the run
    thumbnails: dict[str, str] = field(default_factory=dict)
    # what `fuse.why` asks (fuse_lang.run.why.explainer.Explainer; None: nothing kept)
    explainer: Any = None
    seconds: float = 0.0  # how long the run took (a hover asks why only after a short one)


def remember(ls: FuseServer, uri: str, last: LastRun) -> None:
    """Keep `last` as the document's last run; draw its hover pictures in a thread
    when the client shows Markdown images."""
    ls.last_runs[uri] = last
    if getattr(ls, "markdown_images", False) and last.outputs:
        threading.Thread(target=_draw_thumbnails, args=(ls, last), daemon=True).start()


def _draw_thumbnails(ls: FuseServer, last: LastRun) -> None:
    from fuse_lang.ide.plots import axis_labels
    from fuse_lang.ide.value_hover import thumbnail_uri

    for name, array in last.outputs.items():
        try:
            info = last.analysis.tensors.get(name)
            last.thumbnails[name] = thumbnail_uri(array, name, axis_labels(last.analysis, name),
                                                  bool(info and info.boolean))
        except Exception as error:  # noqa: BLE001 - a picture is never worth a crash
            ls.log_error("hover picture", error)


def stale(ls: FuseServer, uri: str, last: LastRun) -> bool:
    return ls.workspace.get_text_document(uri).version != last.version

