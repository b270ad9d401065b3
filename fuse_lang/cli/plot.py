"""`fuse plot RESULT.npz [--out DIR] [--format svg|png] [--program PATH]
[--slice-along INDEX]`: the pictures of saved results (docs/pictures.md)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..check import analyze
from ..speed.fastinit import frozen_dataclass
from .pictures import check_plot_folder, write_pictures_of
from .reading import read_program
from .status import EXIT_OK, EXIT_USAGE, fail


@frozen_dataclass
class PlotOptions:
    """`fuse plot`'s options: the results file, the pictures' folder (None: beside
    the file), their format, the program that made the results, and the index a
    3-D+ tensor is sliced along."""
    result: str
    out: str | None
    format: str
    program: str | None
    slice_along: str | None

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> PlotOptions:
        """The options of a parsed `fuse plot` command line."""
        return cls(result=ns.result, out=ns.out, format=ns.format, program=ns.program,
                   slice_along=ns.slice_along)

    @property
    def folder(self) -> str:
        """Where the pictures go: `--out`, else RESULT-pictures beside the file."""
        if self.out is not None:
            return self.out
        return str(Path(self.result).with_suffix("")) + "-pictures"


def cmd_plot(options: PlotOptions) -> int:
    """`fuse plot RESULT.npz`: the pictures of saved results, labelled from the
    program (`--program`) when given; CommandFailed after saying why not."""
    from ..ide.picture_files import read_results
    from ..ide.plots import PictureError

    try:
        outputs = read_results(Path(options.result))
    except PictureError as err:
        fail(f"fuse: {err}", EXIT_USAGE)
    analysis = None
    if options.program:
        analysis = analyze(read_program(options.program), options.program)
    check_plot_folder(options.folder, "--out" if options.out is not None else None)
    for path in write_pictures_of(options.folder, options.format, options.slice_along,
                                  outputs, analysis):
        print(f"wrote {path}")
    return EXIT_OK
