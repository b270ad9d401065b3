"""What formatting a selection costs beside formatting the whole file (the
language server's range formatting, which Neovim's `gq` asks for and gives half a
second by default): `format_lines` formats only the paragraphs around the lines
asked, so its cost should stay flat as the file grows, where the whole file's
formatting grows with it.

The program is benchmarks/gen_program.py's (blocks of nine equations, a comment
line between blocks), with its `=` signs unspaced so that every line has an
edit; the selection is one line near the middle. Each is timed by the median of
interleaved repeats (CPU time), and the edits are checked equal to those the
whole file's formatting gives for that line.

    python benchmarks/format_range.py [--small]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times  # noqa: E402
from gen_program import generate  # noqa: E402

from fuse_lang.ide.formatting import format_lines, format_text  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small files, one repeat")
    args = parser.parse_args()
    sizes = (200, 1_000) if args.small else (1_000, 10_000, 50_000)
    with tempfile.TemporaryDirectory() as folder:
        for lines in sizes:
            text = generate(lines, Path(folder)).replace(" = ", "=")
            middle = text.index("\n", len(text) // 2) + 1  # a line's start
            line_end = text.index("\n", middle)
            whole = format_text(text)
            edits = format_lines(text, middle, middle)
            expected = whole.splitlines(keepends=True)[text.count("\n", 0, middle)]
            assert [new for _, new in edits] == [expected], (edits, expected)
            assert edits[0][0].start == middle and edits[0][0].end == line_end + 1
            times = median_times({"selection": lambda t=text, m=middle: format_lines(t, m, m),
                                  "whole file": lambda t=text: format_text(t)},
                                 repeats=1 if args.small else 3, warmup=0, clock="cpu")
            print(f"{lines:>6} lines  one line's range {times['selection'] * 1e3:8.1f} ms  "
                  f"whole file {times['whole file'] * 1e3:8.1f} ms  "
                  f"ratio {times['whole file'] / times['selection']:7.1f}")


if __name__ == "__main__":
    main()
