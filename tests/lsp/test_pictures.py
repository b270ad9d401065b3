"""fuse.plot and fuse.graph over stdio: the pictures of a document's last run
and of its program, written as files whose paths come back."""
from __future__ import annotations

import asyncio
import base64
import re
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import SERVER, WAIT_S, open_doc

pytest.importorskip("matplotlib")

PROGRAM = """\
Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
W[i,j] = const([[1, 2], [3, 4]])
V[i] = W[i,j]
export Ancestor, V
"""


async def execute(client, command: str, *arguments):
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


def texts(path: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", t) for t in
                    re.findall(r"<text\b.*?</text>", Path(path).read_text(), re.S))


async def test_plot_draws_the_last_run(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "family.fuse", PROGRAM)
    before = await execute(vscode, "fuse.plot", uri, {})
    assert before["ok"] is False and "has not been run yet" in before["error"]
    assert (await execute(vscode, "fuse.run", uri, {}))["ok"] is True
    folder = tmp_path / "pictures"
    result = await execute(vscode, "fuse.plot", uri, {"folder": str(folder)})
    assert result["ok"] is True and result["stale"] is False
    names = sorted(Path(p).name for p in result["pictures"])
    assert names == ["Ancestor.graph.svg", "Ancestor.svg", "V.svg"]
    assert "Alice" in texts(str(folder / "Ancestor.svg"))
    one = await execute(vscode, "fuse.plot", uri, {"tensor": "V", "format": "png"})
    assert one["ok"] is True and [Path(p).name for p in one["pictures"]] == ["V.png"]
    assert Path(one["pictures"][0]).read_bytes()[:4] == b"\x89PNG"
    unknown = await execute(vscode, "fuse.plot", uri, {"tensor": "Nope"})
    assert unknown["ok"] is False and "has no value 'Nope'" in unknown["error"]


async def test_graph_draws_the_program(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "family.fuse", PROGRAM)
    result = await execute(vscode, "fuse.graph", uri, {})
    assert result["ok"] is True and result["path"].endswith("family.graph.svg")
    drawn = texts(result["path"])
    for word in ("Parent", "Ancestor", "W", "V", "Σ j", "Σ y", "recursive: fixpoint"):
        assert word in drawn, word


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def vscode_named(lsp_client: LanguageClient, tmp_path):
    """VS Code as it introduces itself: its name tells the server it renders images."""
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        client_info=types.ClientInfo(name="Visual Studio Code", version="1.95.0"),
        root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


async def hover_text(client, uri: str, line: int, character: int) -> str:
    found = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character)))
    return found.contents.value if found else ""


async def test_hover_after_a_run_shows_the_value_and_a_picture(vscode_named, tmp_path):
    uri = open_doc(vscode_named, tmp_path / "family.fuse", PROGRAM)
    assert "Last run" not in await hover_text(vscode_named, uri, 5, 0)  # V, before a run
    assert (await execute(vscode_named, "fuse.run", uri, {}))["ok"] is True
    text = ""
    deadline = time.monotonic() + WAIT_S  # a bound, not a speed target
    while time.monotonic() < deadline:  # the picture is drawn in a thread after the run
        text = await hover_text(vscode_named, uri, 5, 0)
        if "data:image/png;base64," in text:
            break
        await asyncio.sleep(0.1)
    assert "**Last run**: `V` shape `(2,)`, `float32`" in text
    assert "min 3, max 7, mean 5" in text and "preview `[3, 7]`" in text
    image = re.search(r"!\[V\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", text)
    assert image and base64.b64decode(image.group(1))[:4] == b"\x89PNG"
    vscode_named.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=PROGRAM + "\n")]))
    assert "**Last run** (stale: the program changed since)" in \
        await hover_text(vscode_named, uri, 5, 0)


async def test_hover_after_a_run_is_text_where_images_are_not_shown(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "family.fuse", PROGRAM)
    assert (await execute(neovim, "fuse.run", uri, {}))["ok"] is True
    await asyncio.sleep(0.5)
    text = await hover_text(neovim, uri, 2, 0)  # Ancestor
    assert "**Last run**: `Ancestor` shape `(3, 3)`" in text and "data:image" not in text
    # a relation's last value is its tuples of values, sorted by value
    assert "`float32`, 3 tuples  \n`(Alice, Bob)`  \n`(Alice, Carol)`  \n`(Bob, Carol)`" in text
