"""Hover over stdio: tensors (kind, shape by axis, dtype, definitions, data),
indices (extent, domain, role), equations (the projection), builtins."""
from __future__ import annotations

import numpy as np
from lsprotocol import types

from .conftest import open_doc

PROGRAM = """\
X[p,d] = "x.npy"
W[e,d] = "w.npy"
H[p,e] = relu(W[e,d] X[p,d])
M[e] max= H[p,e]
export M
"""


def at(text: str, needle: str, delta: int = 0) -> types.Position:
    offset = text.index(needle) + delta
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def hover(client, uri, position):
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position))


def write_data(folder):
    np.save(folder / "x.npy", np.zeros((6, 4), np.float32))
    np.save(folder / "w.npy", np.zeros((3, 4), np.float32))


async def test_hover_on_a_tensor_shows_kind_shape_axes_and_definitions(vscode, tmp_path):
    write_data(tmp_path)
    uri = open_doc(vscode, tmp_path / "h.fuse", PROGRAM)
    result = await hover(vscode, uri, at(PROGRAM, "H[p,e] = relu"))
    text = result.contents.value
    assert "H[p:6, e:3]" in text
    assert "**dense** · shape `(6, 3)` · float32" in text
    assert "| 0 | `p` | 6 |" in text and "| 1 | `e` | 3 |" in text
    assert "Defined at line 3." in text
    assert result.range == types.Range(start=types.Position(line=2, character=0),
                                       end=types.Position(line=2, character=1))


async def test_hover_on_a_source_names_its_file(neovim, tmp_path):
    write_data(tmp_path)
    uri = open_doc(neovim, tmp_path / "h.fuse", PROGRAM)
    result = await hover(neovim, uri, at(PROGRAM, "X[p,d] ="))
    assert "**source**" in result.contents.value
    assert "Data from `x.npy`." in result.contents.value


async def test_hover_on_an_index_shows_its_role(vscode, tmp_path):
    write_data(tmp_path)
    uri = open_doc(vscode, tmp_path / "h.fuse", PROGRAM)
    d = (await hover(vscode, uri, at(PROGRAM, "d] X[p,d]"))).contents.value
    assert "extent 4" in d and "**projected** by `sum` in a call argument" in d
    assert "**joins** W, X" in d
    p = (await hover(vscode, uri, at(PROGRAM, "p,d])"))).contents.value
    assert "**output**" in p and "extent 6" in p
    in_max = (await hover(vscode, uri, at(PROGRAM, "p,e]\nexport"))).contents.value
    assert "**projected** by `max` in the right-hand side" in in_max


async def test_hover_on_the_operator_explains_the_projection(vscode, tmp_path):
    write_data(tmp_path)
    uri = open_doc(vscode, tmp_path / "h.fuse", PROGRAM)
    result = await hover(vscode, uri, at(PROGRAM, "max="))
    text = result.contents.value
    assert "**Projection** of `M` (max=)" in text
    assert "projected (max)" in text and "reduce max over p" in text  # a reduction, as the run
    assert result.range.start == types.Position(line=3, character=5)


async def test_hover_on_a_builtin_shows_its_signature(neovim, tmp_path):
    write_data(tmp_path)
    uri = open_doc(neovim, tmp_path / "h.fuse", PROGRAM)
    text = (await hover(neovim, uri, at(PROGRAM, "relu"))).contents.value
    assert "relu(x)" in text and "max(x, 0)" in text


async def test_no_hover_on_empty_space_and_utf16_columns(vscode, tmp_path):
    text = "# ünïcödé 😀 comment\nA[i] = const([1, 2]) # 😀\nB[i] = A[i]\nexport B\n"
    uri = open_doc(vscode, tmp_path / "u.fuse", text)
    assert await hover(vscode, uri, types.Position(line=0, character=3)) is None
    result = await hover(vscode, uri, types.Position(line=2, character=7))
    assert result is not None and "A[i:2]" in result.contents.value


async def test_columns_follow_the_negotiated_encoding(utf8, tmp_path):
    text = 'A[i] = const([1, 2])\nB = "ä€😀"; C[i] = A[i]\nexport C\n'
    uri = open_doc(utf8, tmp_path / "enc.fuse", text)
    assert utf8.position_encoding == types.PositionEncodingKind.Utf8
    # `A` of `A[i]` on line 2 is after 2+3+4 = 9 UTF-8 bytes for 3 characters
    column = len('B = "ä€😀"; C[i] = '.encode("utf-8"))
    result = await hover(utf8, uri, types.Position(line=1, character=column))
    assert result is not None and "A[i:2]" in result.contents.value
    assert result.range.start == types.Position(line=1, character=column)


TRAINED = """\
X[p,d] = "x.npy"
param W[e,d]
H[p,e] = relu(W[e,d] X[p,d])
L = H[p,e] H[p,e]
train L
"""


async def test_hover_on_the_loss_lists_the_params_and_data_it_reaches(vscode, tmp_path):
    write_data(tmp_path)
    uri = open_doc(vscode, tmp_path / "t.fuse", TRAINED)
    loss = (await hover(vscode, uri, at(TRAINED, "train L", 6))).contents.value
    assert "**Loss** (`train L`): reaches the params `W`; data: `X`." in loss
    param = (await hover(vscode, uri, at(TRAINED, "W[e,d]"))).contents.value
    assert "Learned by `fuse train` against the loss `L`." in param


async def test_hover_on_an_axis_declaration_shows_its_extent_and_what_it_sizes(vscode, tmp_path):
    text = "axis d = 4, x = same\nX[p,d] = const([[1,2,3,4]])\nY[p] = X[p,d]\nexport Y\n"
    uri = open_doc(vscode, tmp_path / "axis.fuse", text)
    result = await hover(vscode, uri, at(text, "d = 4"))
    assert "**axis** · extent **4** wherever an index is named `d`" in result.contents.value
    assert "sizes an axis of `X`" in result.contents.value
    assert result.range == types.Range(start=types.Position(line=0, character=5),
                                       end=types.Position(line=0, character=6))
    padded = await hover(vscode, uri, at(text, "x = same"))
    assert "windows over it are centred (`same`)" in padded.contents.value


async def test_hover_on_case_and_when_tells_each_form(vscode, tmp_path):
    """`case` and `when` are selects in the IR; their hovers told select's doc."""
    text = ("axis i = 3, j = 3\nA[i,j] = const([[1,2,3],[4,5,6],[7,8,9]])\n"
            "Y[i] = case { (i < 1) -> A[i,j]; default -> 0 }\nZ[i] = A[i,j] when (j < i)\n"
            "export Y, Z\n")
    uri = open_doc(vscode, tmp_path / "choices.fuse", text)
    case = (await hover(vscode, uri, at(text, "case"))).contents.value
    assert case.startswith("```fuse\ncase { c1 -> a; c2 -> b; default -> d }\n```")
    when = (await hover(vscode, uri, at(text, "when"))).contents.value
    assert when.startswith("```fuse\ne when c\n```") and "select(c, e, 0)" in when
