"""Inlay hints over stdio: the inferred shape after each equation's and
source's left-hand side, only within the requested range, UTF-16 columns."""
from __future__ import annotations

import numpy as np
from lsprotocol import types

from .conftest import open_doc

PROGRAM = """\
X[p,d] = "x.npy"
S = const(2)
H[p,e] = relu(W[e,d]
              X[p,d])
param W[e,d]
axis e = 3
"é😀.npy" = H[p,e]; G[p] max= H[p,e]
H[p,e] += X[p,d] W[e,d]
export G
"""


def pos(line, character):
    return types.Position(line=line, character=character)


async def hints(client, uri, start, end):
    return await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=start, end=end)))


async def test_shapes_after_each_lhs(neovim, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((6, 4), dtype=np.float32))
    uri = open_doc(neovim, tmp_path / "h.fuse", PROGRAM)
    got = await hints(neovim, uri, pos(0, 0), pos(9, 0))
    assert [(h.position, h.label, h.kind) for h in got] == [
        (pos(0, 6), ": (6, 4)", types.InlayHintKind.Type),
        (pos(1, 1), ": ()", types.InlayHintKind.Type),
        (pos(2, 6), ": (6, 3)", types.InlayHintKind.Type),
        # after the path "é😀.npy" on the same line: Neovim negotiates UTF-8
        # columns, in which é is two bytes and 😀 four
        (pos(6, 27), ": (6,)", types.InlayHintKind.Type),
        (pos(7, 6), ": (6, 3)", types.InlayHintKind.Type),
    ]
    assert got[0].tooltip == "X: source [p:6, d:4]"
    assert got[3].tooltip == "G: dense [p:6]"


async def test_only_within_the_range(neovim, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((6, 4), dtype=np.float32))
    uri = open_doc(neovim, tmp_path / "h.fuse", PROGRAM)
    got = await hints(neovim, uri, pos(1, 0), pos(6, 20))
    assert [h.position for h in got] == [pos(1, 1), pos(2, 6)]
    assert list(await hints(neovim, uri, pos(4, 0), pos(5, 10))) == []
    # range ends are in the negotiated (UTF-8) units too: G's LHS ends at 27
    assert [h.label for h in await hints(neovim, uri, pos(6, 0), pos(6, 27))] == [": (6,)"]
    assert list(await hints(neovim, uri, pos(6, 0), pos(6, 26))) == []


async def test_unknown_extents_show_a_question_mark(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "u.fuse", "Y[i,j] = Z[i] + 1\n")
    got = await hints(neovim, uri, pos(0, 0), pos(1, 0))
    assert [(h.position, h.label) for h in got] == [(pos(0, 6), ": (?, ?)")]
