"""fuse.plot and fuse.graph over stdio: the pictures of a document's last run
and of its program, written as files whose paths come back."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import open_doc

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
