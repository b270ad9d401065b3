"""fuse.plot and fuse.graph over stdio, audited (issue 16): a value whose range
overflows float64 is drawn, options of the wrong type are invalid params (not an
internal error), and a graph's file is of the kind its name says."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from .conftest import open_doc

pytest.importorskip("matplotlib")

PROGRAM = ("W[i,j] = const([[1e308, -1e308], [0, 1]])\nV[i] = const([1, 2])\n"
           "export W, V\n")


async def execute(client, command: str, *arguments):
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


def texts(path: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t).strip() for t in
            re.findall(r"<text\b.*?</text>", Path(path).read_text(), re.S)]


async def test_plot_draws_values_past_1e300_and_refuses_options_of_the_wrong_type(
        vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "p.fuse", PROGRAM)
    assert (await execute(vscode, "fuse.run", uri, {"precision": "fp64"}))["ok"] is True
    # was {"ok": false, "error": "...: Axis limits cannot be NaN or Inf"}
    result = await execute(vscode, "fuse.plot", uri, {"folder": str(tmp_path / "pics")})
    assert result["ok"] is True, result
    assert sorted(Path(p).name for p in result["pictures"]) == ["V.svg", "W.svg"]
    assert "values in units of 1e+308" in texts(str(tmp_path / "pics" / "W.svg"))
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    into_a_file = await execute(vscode, "fuse.plot", uri, {"folder": str(a_file)})
    assert into_a_file["ok"] is False and "could not be written" in into_a_file["error"]
    # each was a JsonRpcInternalError (a TypeError inside the server)
    for command, extra, said in [("fuse.plot", {"folder": 5}, "folder is a string, not int"),
                                 ("fuse.plot", {"tensor": ["W"]}, "tensor is a string, not list"),
                                 ("fuse.graph", {"path": 5}, "path is a string, not int")]:
        with pytest.raises(JsonRpcInvalidParams, match=said):
            await execute(vscode, command, uri, extra)


async def test_graph_file_is_the_kind_its_name_says(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "p.fuse", PROGRAM)
    # a .png path without a format held SVG text
    png = await execute(vscode, "fuse.graph", uri, {"path": str(tmp_path / "g.png")})
    assert png == {"ok": True, "path": str(tmp_path / "g.png")}
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = await execute(vscode, "fuse.graph", uri, {"path": str(tmp_path / "G.SVG")})
    assert svg["ok"] is True and (tmp_path / "G.SVG").read_bytes().startswith(b"<?xml")
    for extra, said in [({"path": str(tmp_path / "g.gif")}, "format is svg or png, not 'gif'"),
                        ({"path": str(tmp_path / "g")}, r"should end in \.svg"),
                        ({"path": str(tmp_path / "h.svg"), "format": "png"},
                         r"should end in \.png")]:
        with pytest.raises(JsonRpcInvalidParams, match=said):
            await execute(vscode, "fuse.graph", uri, extra)
    assert not (tmp_path / "g.gif").exists() and not (tmp_path / "h.svg").exists()


async def test_two_programs_of_one_name_keep_their_own_pictures(vscode, tmp_path):
    # both were drawn into <tmp>/fuse-pictures-<pid>/p/: the second run's Y.svg over the first's
    uris = []
    for folder, values in (("a", "[1, 2]"), ("b", "[3, 4, 5]")):
        (tmp_path / folder).mkdir()
        uri = open_doc(vscode, tmp_path / folder / "p.fuse",
                       f"Y[i] = const({values})\nexport Y\n")
        assert (await execute(vscode, "fuse.run", uri, {}))["ok"] is True
        uris.append(uri)
    first, second = [await execute(vscode, "fuse.plot", uri, {}) for uri in uris]
    assert Path(first["pictures"][0]).parent != Path(second["pictures"][0]).parent
    assert Path(first["pictures"][0]).parent.name.startswith("p-")
    assert "Y  2" in texts(first["pictures"][0]) and "Y  3" in texts(second["pictures"][0])
    graphs = [await execute(vscode, "fuse.graph", uri, {}) for uri in uris]
    assert graphs[0]["path"] != graphs[1]["path"]
    assert all(g["path"].endswith("p.graph.svg") for g in graphs)


async def test_a_relation_named_as_its_program_keeps_its_graph_apart(vscode, tmp_path):
    # edge.fuse's relation `edge` and the program were both drawn as edge.graph.svg, in one
    # folder: the later picture replaced the earlier
    uri = open_doc(vscode, tmp_path / "edge.fuse",
                   "edge(A, B)\nedge(B, C)\nreach(x,y) = edge(x,y)\n"
                   "reach(x,z) = reach(x,y) edge(y,z)\nexport edge\n")
    assert (await execute(vscode, "fuse.run", uri, {}))["ok"] is True
    plotted = await execute(vscode, "fuse.plot", uri, {})
    program = await execute(vscode, "fuse.graph", uri, {})
    relation = [p for p in plotted["pictures"] if p.endswith("edge.graph.svg")]
    assert len(relation) == 1 and program["path"] != relation[0]
    assert "edge: 3 symbols, 2 pairs" in texts(relation[0])  # not the program's graph
    assert "reach" in texts(program["path"])
