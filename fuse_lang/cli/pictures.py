"""`fuse run --plot`, `fuse plot` and `fuse explain --graph`: the pictures'
files written, or a message and the usage exit status (docs/pictures.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..check import Analysis

EXIT_USAGE = 2  # as fuse_lang.cli's


def check_plot_folder(folder: str) -> int | None:
    from ..ide.picture_files import check_folder

    problem = check_folder(Path(folder))
    if problem is None:
        return None
    print(f"fuse: --plot {folder}: {problem}", file=sys.stderr)
    return EXIT_USAGE


def write_pictures_of(args: argparse.Namespace, outputs: dict, analysis: Analysis | None,
                    queries: Sequence[Any] = ()) -> list[str] | int:
    """Draw and write the pictures of `outputs` into args.plot: the paths written,
    or the exit status after saying why not (docs/pictures.md)."""
    try:
        from ..ide.picture_files import result_pictures, write_pictures
        from ..ide.plots import PictureError

        pictures = result_pictures(outputs, analysis, args.plot_format, queries,
                                   args.slice_along)
        return write_pictures(Path(args.plot), pictures)
    except ImportError as err:
        print(f"fuse: pictures need matplotlib ({err}); pip install matplotlib",
              file=sys.stderr)
    except PictureError as err:
        print(f"fuse: {err}", file=sys.stderr)
    except OSError as err:
        print(f"fuse: {args.plot}: cannot be written: {err.strerror or err}", file=sys.stderr)
    return EXIT_USAGE


def write_graph(target: str, analysis: Analysis, plan: Any) -> int | None:
    """`fuse explain --graph FILE`: the program's dataflow drawn into FILE."""
    fmt = Path(target).suffix.lower().lstrip(".")
    if fmt not in ("svg", "png"):
        print(f"fuse: --graph {target}: the picture is written as .svg or .png",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        from ..ide.graph_picture import render_graph
        from ..plan.dataflow import dataflow
        from ..io.sinks import atomic_write

        data = render_graph(dataflow(analysis, plan), Path(analysis.path or "").name, fmt)
        atomic_write(Path(target), data)
    except ImportError as err:
        print(f"fuse: pictures need matplotlib ({err}); pip install matplotlib",
              file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:
        print(f"fuse: --graph {target}: cannot be written: {err.strerror or err}",
              file=sys.stderr)
        return EXIT_USAGE
    return None
