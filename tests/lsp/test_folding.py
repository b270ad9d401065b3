"""Folding ranges over stdio: runs of two or more whole-line comments, and
statements that span several lines."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc

PROGRAM = """\
# A header of
# three lines
# about the program
A[i,j] = const([[1, 2],
                [3, 4]])
# a lone comment
B[j] = const([1, 1])  # trailing
Y[i] = relu(A[i,j]
            # a comment inside the statement
            # and another
            B[j])
export Y
"""

EXPECTED = [
    (0, 2, types.FoldingRangeKind.Comment),
    (3, 4, types.FoldingRangeKind.Region),
    (7, 10, types.FoldingRangeKind.Region),
    (8, 9, types.FoldingRangeKind.Comment),
]


async def folds(client, uri):
    got = await client.text_document_folding_range_async(types.FoldingRangeParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return [(f.start_line, f.end_line, f.kind) for f in got]


async def test_comment_runs_and_multiline_statements_vscode(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "f.fuse", PROGRAM)
    assert await folds(vscode, uri) == EXPECTED


async def test_comment_runs_and_multiline_statements_neovim(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "f.fuse", PROGRAM)
    assert await folds(neovim, uri) == EXPECTED


async def test_nothing_to_fold(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "g.fuse", "# one\nY = const(1)\n\n# two\n")
    assert await folds(neovim, uri) == []
