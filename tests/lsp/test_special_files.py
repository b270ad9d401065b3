"""Special files over stdio (issue 19, item 9): a FIFO or a device named as a
source, or lying in the workspace as a .fuse file, is refused without being
read; the server goes on answering every document."""
from __future__ import annotations

import asyncio
import os

import pytest
from lsprotocol import types

from .conftest import WAIT_S, open_doc

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")

TIMEOUT = WAIT_S  # a server blocked on a FIFO would never answer


async def pull(client, uri):
    return await asyncio.wait_for(client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))),
        TIMEOUT)


async def test_a_fifo_source_is_a_diagnostic_and_other_documents_still_answer(neovim, tmp_path):
    os.mkfifo(tmp_path / "w.npy")
    uri = open_doc(neovim, tmp_path / "fifo.fuse", 'W[i] = "w.npy"\nexport W\n')
    report = await pull(neovim, uri)
    assert [(d.code, "FIFO" in d.message) for d in report.items] == [("unreadable-source", True)]
    other = open_doc(neovim, tmp_path / "other.fuse", "A[i] = const([1, 2])\nexport A\n")
    assert list((await pull(neovim, other)).items) == []


async def test_workspace_symbols_skip_special_files(neovim, tmp_path):
    os.mkfifo(tmp_path / "pipe.fuse")
    if os.path.exists("/dev/zero"):
        (tmp_path / "zero.fuse").symlink_to("/dev/zero")
    (tmp_path / "real.fuse").write_text("Real = const(1)\n")
    got = await asyncio.wait_for(neovim.workspace_symbol_async(
        types.WorkspaceSymbolParams(query="")), TIMEOUT)
    assert sorted(s.name for s in got) == ["Real"]
