"""`:FuseWhy` in a real, headless Neovim (as tests/editors/test_neovim.py runs it): the
derivation in `fuse://why/<file>`, and <CR> on a line jumping to the line it cites."""
from __future__ import annotations

from pathlib import Path

from .test_neovim import run_nvim, write

DOC = Path(__file__).resolve().parents[2] / "docs" / "why.md"

PROGRAM = """\
Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
export Ancestor
"""


def test_fuse_why_shows_the_tree_and_jumps_to_the_cited_line(tmp_path):
    file = write(tmp_path, "family.fuse", PROGRAM)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local done = wait_user('FuseWhyDone')
        vim.cmd('FuseWhy Ancestor(Alice, Carol)')
        local ev = done()
        out.ok = ev.result.ok
        out.lines = lines(ev.buf)
        out.name = vim.api.nvim_buf_get_name(ev.buf)
        vim.api.nvim_set_current_win(vim.fn.bufwinid(ev.buf))
        for number, text in ipairs(out.lines) do
          if text:find('Parent%(Bob, Carol%)') then
            vim.api.nvim_win_set_cursor(0, { number, 0 })
          end
        end
        vim.cmd('execute "normal \\\\<CR>"')
        out.jumped_to = vim.api.nvim_buf_get_name(0)
        out.cursor = vim.api.nvim_win_get_cursor(0)[1]
        local failed = wait_user('FuseWhyDone')
        vim.cmd('FuseWhy Ancestor(Alice')
        out.failed = lines(failed().buf)
    """)
    assert data["ok"] is True and data["name"] == "fuse://why/family.fuse"
    assert data["lines"][0].startswith("Ancestor(Alice, Carol)   by line 4: ")
    assert any("Parent(Bob, Carol)   fact, line 2" in line for line in data["lines"])
    assert data["jumped_to"].endswith("family.fuse") and data["cursor"] == 2
    assert data["failed"][0].startswith("Fuse why failed: ")
    assert "expected" in data["failed"][0]

    # docs/why.md shows this buffer as it is
    doc = DOC.read_text(encoding="utf-8")
    block = doc[doc.index("<!-- neovim-why -->"):].split("```")[1].strip("\n")
    assert [line for line in data["lines"] if line.strip()] == block.splitlines()


def test_a_line_citing_an_imported_file_jumps_to_that_file(tmp_path):
    # `fact, lib/l.fuse:2` and `by lib/l.fuse:3: ...` (a statement of an imported file)
    # cited nothing a jump could follow
    file = write(tmp_path, "main.fuse", 'import "lib/l.fuse" as l\nexport l::Up\n')
    data = run_nvim(tmp_path, file, """
        local fuse = require('fuse')
        out.fact = fuse.why_place('     └─ l::Base(A)   fact, lib/l.fuse:2')
        out.rule = fuse.why_place('  └─ l::Up(A)   by lib/l.fuse:3: l::Up(x) = l::Base(x)   [x = A]')
        out.part = fuse.why_place('  lib/l.fuse:8: l::W[i] = const([1, 2, 3])')
        out.own = fuse.why_place('  └─ E(A, B)   fact, line 2')
    """)
    assert data["fact"] == {"file": "lib/l.fuse", "line": 2}
    assert data["rule"] == {"file": "lib/l.fuse", "line": 3}
    assert data["part"] == {"file": "lib/l.fuse", "line": 8}
    assert data["own"] == {"line": 2}
