"""The picture commands: `fuse.plot` draws the values of a document's last run
(fuse_lang.ide.picture_files), `fuse.graph` its program's dataflow
(fuse_lang.plan.dataflow, fuse_lang.ide.graph_picture).  Both write files and
answer with their paths, for the editor to open; matplotlib draws off the
event loop.

    fuse.plot  [uri, {tensor?, format?: "svg"|"png", folder?}]
               -> {ok, pictures: [path], stale} | {ok: false, error}
    fuse.graph [uri, {format?: "svg"|"png", path?}] -> {ok, path} | {ok: false, error}
               (format: given, else the path's suffix, else svg; a path must end in it)

Without a folder or path they go to a folder of this server's own under the
system's temporary folder.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from ..running import document_name
from ..state import Command, DocumentTooLarge, DocumentUnavailable, FuseServer

PLOT = "fuse.plot"
GRAPH = "fuse.graph"


def _arguments(command: str, args: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """The document's uri and the options, `format` filled in: given, else the suffix
    of a `path` (fuse.graph) when it is .svg or .png, else svg.  A path whose suffix
    is another, or that contradicts the format, is refused: its file would hold a
    picture of another kind than its name says."""
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams(f"{command} takes [uri, {{...}}]")
    extra = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    for key in ("tensor", "folder", "path"):
        if extra.get(key) is not None and not isinstance(extra[key], str):
            raise JsonRpcInvalidParams(f"{command}: {key} is a string, not "
                                       f"{type(extra[key]).__name__}")
    suffix = Path(extra["path"]).suffix.lower().lstrip(".") if extra.get("path") else None
    fmt = extra.get("format") or suffix or "svg"
    if fmt not in ("svg", "png"):
        raise JsonRpcInvalidParams(f"{command}: format is svg or png, not {fmt!r}")
    if suffix is not None and suffix != fmt:
        raise JsonRpcInvalidParams(f"{command}: path {extra['path']!r} should end in "
                                   f".{fmt} (the picture is {fmt})")
    return args[0], {**extra, "format": fmt}


def _default_folder(uri: str) -> Path:
    """A folder of this server's own per document: two programs of one name in
    two folders (a/p.fuse, b/p.fuse) never write over each other's pictures."""
    stem = Path(document_name(uri)).stem or "program"
    digest = hashlib.sha256(uri.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"fuse-pictures-{os.getpid()}" / f"{stem}-{digest}"


async def plot(ls: FuseServer, *args: Any) -> dict[str, Any]:
    uri, extra = _arguments(PLOT, args)
    last = ls.last_runs.get(uri)
    name = document_name(uri)
    if last is None:
        return {"ok": False, "error": f"{name} has not been run yet: run it first (fuse.run)"}
    outputs, queries = last.outputs, last.queries
    tensor = extra.get("tensor")
    if tensor:
        if tensor not in outputs:
            shown = ", ".join(outputs) or "none"
            return {"ok": False, "error": f"the last run of {name} has no value {tensor!r} "
                                          f"(it has: {shown})"}
        outputs, queries = {tensor: outputs[tensor]}, ()
    folder = Path(extra.get("folder") or _default_folder(uri))
    try:
        paths = await asyncio.to_thread(_write_plots, outputs, last.analysis, extra["format"],
                                        queries, folder)
    except (OSError, ValueError, ImportError) as error:
        return {"ok": False, "error": f"{name}: the pictures could not be written: {error}"}
    current = ls.workspace.get_text_document(uri).version
    return {"ok": True, "pictures": paths, "stale": current != last.version}


def _write_plots(outputs, analysis, fmt: str, queries, folder: Path) -> list[str]:
    from fuse_lang.ide.picture_files import result_pictures, write_pictures

    return write_pictures(folder, result_pictures(outputs, analysis, fmt, queries))


async def graph(ls: FuseServer, *args: Any) -> dict[str, Any]:
    uri, extra = _arguments(GRAPH, args)
    name = document_name(uri)
    try:
        analysis, _ = ls.analysis(uri)
    except DocumentTooLarge as oversized:
        return {"ok": False, "error": oversized.diagnostic.message}
    except DocumentUnavailable as error:
        return {"ok": False, "error": f"{name}: {error}"}
    # (in a folder of its own: a relation named as its program, `edge` of edge.fuse, has
    # its own `edge.graph.svg` among the values' pictures)
    target = Path(extra.get("path") or _default_folder(uri) / "program" /
                  f"{Path(name).stem or 'program'}.graph.{extra['format']}")
    try:
        await asyncio.to_thread(_write_graph, analysis, name, extra["format"], target)
    except (OSError, ValueError, ImportError) as error:
        return {"ok": False, "error": f"{name}: the graph could not be written: {error}"}
    return {"ok": True, "path": str(target)}


def _write_graph(analysis, title: str, fmt: str, target: Path) -> None:
    from fuse_lang.ide.graph_picture import render_graph
    from fuse_lang.io.sinks import atomic_write
    from fuse_lang.plan.dataflow import dataflow
    from fuse_lang.plan.planner import plan_program

    atomic_write(target, render_graph(dataflow(analysis, plan_program(analysis)), title, fmt))


COMMANDS = (Command(PLOT, plot), Command(GRAPH, graph))
