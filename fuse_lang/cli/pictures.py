"""`fuse run --plot`, `fuse plot` and `fuse explain --graph`: the pictures'
files written, or a message and CommandFailed with the usage exit status
(docs/pictures.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..check import Analysis
from .status import EXIT_USAGE, fail


def check_plot_folder(folder: str, flag: str | None = "--plot") -> None:
    """CommandFailed (after saying why) for a folder the pictures cannot be written
    into, named by the `flag` that gave it (`--plot`, `fuse plot`'s `--out`; None:
    a default folder); an empty name (which names none) included."""
    from ..ide.picture_files import check_folder

    given = f"{flag} {folder}" if flag else folder
    if not folder:
        fail(f"fuse: {flag}: give the pictures' folder (an empty name names none)", EXIT_USAGE)
    problem = check_folder(Path(folder))
    if problem is not None:
        fail(f"fuse: {given}: {problem}", EXIT_USAGE)


def check_slice_along(analysis: Analysis, index: str | None) -> None:
    """CommandFailed (after saying why) for a `--slice-along` that no 3-D or larger
    tensor of the program has: said before the run, as a folder --plot cannot use."""
    if index is None:
        return
    axes = {name: [a.index or f"axis {k}" for k, a in
                   enumerate(a for a in t.axes if not a.virtual)]
            for name, t in analysis.tensors.items()}
    sliced = {name: names for name, names in axes.items() if len(names) >= 3}
    if not sliced:  # it would do nothing, as without --plot
        fail(f"fuse: --slice-along {index}: the program has no 3-D or larger tensor to "
             f"slice", EXIT_USAGE)
    if not any(index in names for names in sliced.values()):
        theirs = "; ".join(f"{n}: {', '.join(names)}" for n, names in sliced.items())
        fail(f"fuse: --slice-along {index}: no 3-D or larger tensor has that index "
             f"(theirs: {theirs})", EXIT_USAGE)


def write_pictures_of(folder: str, picture_format: str, slice_along: str | None,
                      outputs: dict, analysis: Analysis | None,
                      queries: Sequence[Any] = ()) -> list[str]:
    """Draw and write the pictures of `outputs` into `folder` as `picture_format`
    (svg or png; a 3-D+ tensor as slices along `slice_along`): the paths written,
    or CommandFailed after saying why not (docs/pictures.md)."""
    try:
        from ..ide.picture_files import result_pictures, write_pictures
        from ..ide.plots import PictureError

        pictures = result_pictures(outputs, analysis, picture_format, queries, slice_along)
        return write_pictures(Path(folder), pictures)
    except ImportError as err:
        fail(f"fuse: pictures need matplotlib ({err}); pip install matplotlib", EXIT_USAGE)
    except PictureError as err:
        fail(f"fuse: {err}", EXIT_USAGE)
    except OSError as err:
        fail(f"fuse: {folder}: cannot be written: {err.strerror or err}", EXIT_USAGE)


def write_graph(target: str, analysis: Analysis, plan: Any) -> None:
    """`fuse explain --graph FILE`: the program's dataflow drawn into FILE;
    CommandFailed after saying why not."""
    fmt = Path(target).suffix.lower().lstrip(".")
    if not target:
        fail("fuse: --graph: give the picture's file (FILE.svg or FILE.png)", EXIT_USAGE)
    if fmt not in ("svg", "png"):
        fail(f"fuse: --graph {target}: the picture is written as .svg or .png", EXIT_USAGE)
    try:
        from ..ide.graph_picture import render_graph
        from ..io.sinks import atomic_write
        from ..plan.dataflow import dataflow

        data = render_graph(dataflow(analysis, plan), Path(analysis.path or "").name, fmt)
        atomic_write(Path(target), data)
    except ImportError as err:
        fail(f"fuse: pictures need matplotlib ({err}); pip install matplotlib", EXIT_USAGE)
    except OSError as err:
        fail(f"fuse: --graph {target}: cannot be written: {err.strerror or err}", EXIT_USAGE)
