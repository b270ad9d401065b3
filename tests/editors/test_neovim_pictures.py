""":FusePlot and :FuseGraph in a real, headless Neovim (helpers of
test_neovim.py): the pictures are written by the server and opened with
vim.ui.open, stubbed here to record what it was given."""
from __future__ import annotations

from pathlib import Path

import pytest

from .test_neovim import GOOD, run_nvim, write

pytest.importorskip("matplotlib")

STUB_OPEN = """
        local opened = {}
        vim.ui.open = function(path) opened[#opened + 1] = path end
"""


def test_fuse_plot_opens_the_pictures_of_the_last_run(tmp_path):
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, STUB_OPEN + """
        wait_client()
        local early = wait_user('FusePlotDone')
        vim.cmd('FusePlot')
        out.early = early().result
        local ran = wait_user('FuseRunDone')
        vim.cmd('FuseRun')
        ran()
        local plotted = wait_user('FusePlotDone')
        vim.cmd('FusePlot')
        out.result = plotted().result
        out.opened = vim.deepcopy(opened)
        local one = wait_user('FusePlotDone')
        vim.cmd('FusePlot Y')
        out.one = one().result
        out.opened_after = #opened
    """)
    assert "error" not in data, data
    assert data["early"]["ok"] is False and "not been run yet" in data["early"]["error"]
    assert data["result"]["ok"] is True
    assert data["opened"] == data["result"]["pictures"]
    assert [Path(p).name for p in data["opened"]] == ["Y.svg"]
    assert Path(data["opened"][0]).read_text().lstrip().startswith("<?xml")
    assert [Path(p).name for p in data["one"]["pictures"]] == ["Y.svg"]
    assert data["opened_after"] == 2


def test_fuse_graph_opens_the_program_picture(tmp_path):
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, STUB_OPEN + """
        wait_client()
        local done = wait_user('FuseGraphDone')
        vim.cmd('FuseGraph')
        out.result = done().result
        out.opened = vim.deepcopy(opened)
    """)
    assert "error" not in data, data
    assert data["result"]["ok"] is True
    assert data["opened"] == [data["result"]["path"]]
    svg = Path(data["opened"][0]).read_text()
    assert "<text" in svg and ">Y<" in svg.replace("\n", "")
