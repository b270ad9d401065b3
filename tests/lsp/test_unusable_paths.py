"""A source path with a NUL byte over stdio (issue 28): `unreadable-source`, and
hover, inlay hints, code lenses and `fuse.run` answer (the planner once ended in
`os.stat`'s ValueError for it); a run of a program whose Boolean source holds
NaN is refused in words."""
from __future__ import annotations

import asyncio

import numpy as np
from lsprotocol import types

from .conftest import WAIT_S, open_doc

TIMEOUT = WAIT_S
# a NUL among a document's first 8 KB says it is not text (`invalid-encoding`): the
# path comes after a page of comments
COMMENTS = "# a comment line of the program, long enough to fill a page quickly\n" * 130
PROGRAM = COMMENTS + 'R(x,y) = "\0data/likes.tsv"\nS(x) = R(x, y)\nexport S\n'
LINE = 130  # the source's line


async def test_a_nul_byte_in_a_source_path_is_a_diagnostic_and_every_feature_answers(
        neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "nul.fuse", PROGRAM)
    document = types.TextDocumentIdentifier(uri=uri)
    report = await asyncio.wait_for(neovim.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=document)), TIMEOUT)
    assert [d.code for d in report.items] == ["unreadable-source"]
    assert "NUL byte" in report.items[0].message
    for line, character in ((LINE, 1), (LINE, 7), (LINE + 1, 3)):
        await asyncio.wait_for(neovim.text_document_hover_async(types.HoverParams(
            text_document=document, position=types.Position(line=line, character=character))),
            TIMEOUT)
    await asyncio.wait_for(neovim.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=document, range=types.Range(start=types.Position(line=0, character=0),
                                                  end=types.Position(line=LINE + 3, character=0)))),
        TIMEOUT)
    await asyncio.wait_for(neovim.text_document_code_lens_async(types.CodeLensParams(
        text_document=document)), TIMEOUT)
    result = await asyncio.wait_for(neovim.workspace_execute_command_async(
        types.ExecuteCommandParams(command="fuse.run", arguments=[uri, {}])), TIMEOUT)
    assert result["ok"] is False and "NUL byte" in result["error"]
    await asyncio.sleep(0.2)  # (a handler's failure is logged, not answered)
    failed = [m.message for m in neovim.log_messages if m.type == types.MessageType.Error]
    assert not failed, failed[0][-2000:]


async def test_nan_in_a_boolean_source_is_refused_by_a_run(neovim, tmp_path):
    np.save(tmp_path / "r.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    uri = open_doc(neovim, tmp_path / "nan.fuse", 'R(x,y) = "r.npy"\nexport R\n')
    result = await asyncio.wait_for(neovim.workspace_execute_command_async(
        types.ExecuteCommandParams(command="fuse.run", arguments=[uri, {}])), TIMEOUT)
    assert result["ok"] is False
    assert "r.npy holds NaN at (0, 1)" in result["error"]
