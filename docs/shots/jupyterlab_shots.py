"""Screenshots of examples/notebook.ipynb run in a real JupyterLab (docs/notebooks.md).

    pip install -e ".[jupyterlab]"        # jupyterlab, playwright, ipykernel, pandas
    python docs/shots/jupyterlab_shots.py [--out docs/images] [--chromium /usr/bin/chromium]

It copies the example notebook (and the files its cells read) into a temporary
folder, so the repository's notebook stays without outputs; starts JupyterLab
there, headless, on a free port with a random token, its kernel importing this
checkout's fuse_lang; opens the notebook in Chromium (Debian's, through
Playwright's Python package: no browser download), runs every cell with
JupyterLab's own "Run All Cells" command, waits until each cell has run, checks
what the outputs show, and saves two PNG screenshots:

- `jupyterlab-datalog.png`: JupyterLab's window down to the `%%fuse` Datalog
  cell and its rich tables;
- `jupyterlab-attention.png`: the attention cell with `--plot`: its summary and
  the heatmaps of `Attn` and `Comp`.

It exits 1, saying what it did not see, where a check fails (the screenshot is
still written, to look at).  Not part of the pytest suite (JupyterLab and a
browser take a minute to start); tests/test_notebook_jupyterlab.py runs it with
FUSE_E2E=1.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1100, "height": 2200}  # tall: the cells shot fit without scrolling

# JupyterLab's user settings for the shots: no news or update toasts over the
# notebook, every cell rendered (no windowing), the light theme
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/themes.jupyterlab-settings":
        {"theme": "JupyterLab Light"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(folder: Path) -> None:
    """`folder/served`: the notebook and the files its cells read
    (datalog_file.fuse reads data/); `folder/.settings`: JupyterLab's settings."""
    served = folder / "served"
    served.mkdir()
    shutil.copy(EXAMPLES / "notebook.ipynb", served / "notebook.ipynb")
    shutil.copy(EXAMPLES / "datalog_file.fuse", served / "datalog_file.fuse")
    shutil.copytree(EXAMPLES / "data", served / "data")
    settings = folder / ".settings"
    for name, value in SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def start_lab(folder: Path, token: str, log: Path, tries: int = 3
              ) -> tuple[subprocess.Popen, int]:
    """JupyterLab serving `folder` on a free port, and that port; its kernels import
    this checkout's fuse_lang.  A port free when probed may be taken by another
    process before JupyterLab binds it: it is told not to move to another port
    (where this script would not look), exits, and the next try takes another."""
    for _ in range(tries):
        port = free_port()
        lab = _lab_on(folder, port, token, log)
        if lab is not None:
            return lab, port
    raise SystemExit(f"JupyterLab found its port taken {tries} times:\n{_tail(log)}")


def _lab_on(folder: Path, port: int, token: str, log: Path) -> subprocess.Popen | None:
    """JupyterLab on `port` once it answers there; None when the port was taken."""
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths),
           "JUPYTERLAB_SETTINGS_DIR": str(folder / ".settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(folder / ".workspaces"),
           "JUPYTER_RUNTIME_DIR": str(folder / ".runtime"), "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={folder / 'served'}", "--LabApp.expose_app_in_browser=True",
               "--ServerApp.allow_root=True"]
    lab = subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                           start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if lab.poll() is not None:
            if any(said in _tail(log) for said in ("already in use", "is not available")):
                return None  # (jupyter_server's words for a port taken)
            raise SystemExit(f"JupyterLab exited ({lab.returncode}):\n{_tail(log)}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}",
                                   timeout=2)
            return lab
        except OSError:
            time.sleep(0.5)
    stop_lab(lab)  # (its own session: nothing else would end it)
    raise SystemExit(f"JupyterLab did not answer on port {port} in 120 s:\n{_tail(log)}")


def _tail(log: Path) -> str:
    """The end of JupyterLab's log (its folder goes when the script ends)."""
    try:
        return log.read_text(errors="replace")[-3000:]
    except OSError:
        return "(no log)"


def stop_lab(lab: subprocess.Popen) -> None:
    """End JupyterLab and its kernels (its own process group)."""
    if lab.poll() is None:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()


CELL_BY_TEXT = """(start) => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  return cells.findIndex(c => (c.querySelector('.jp-InputArea-editor')?.innerText || '')
                               .trim().startsWith(start));
}"""

ALL_RAN = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.innerText));
}"""


def run_notebook(page, url: str) -> None:
    """Open the notebook, wait for its kernel, run every cell, wait for them all."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_function(
        "() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=60_000)
    # the kernel is up when the status bar says "Python 3 (ipykernel) | Idle"
    page.wait_for_function(
        "() => /\\|\\s*Idle/.test(document.querySelector('#jp-main-statusbar')?.innerText"
        " || '')", timeout=120_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_RAN, timeout=240_000)
    # the file browser closed: the notebook takes the window's width
    page.evaluate("window.jupyterapp.shell.collapseLeft()")
    page.wait_for_timeout(1500)  # the last outputs' layout


def shoot_window(page, start: str, path: Path) -> None:
    """A screenshot of JupyterLab's window from its top (menu, tab, toolbar) to the
    end of the cell whose source starts with `start` (with its outputs)."""
    index = page.evaluate(CELL_BY_TEXT, start)
    if index < 0:
        raise SystemExit(f"no cell starting with {start!r}")
    page.locator(".jp-Notebook .jp-Cell").first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = page.locator(".jp-Notebook .jp-Cell").nth(index).bounding_box()
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": VIEWPORT["width"],
                                          "height": box["y"] + box["height"] + 6})


def shoot_cells(page, starts: list[str], path: Path) -> None:
    """A screenshot of the cells from the one whose source starts with starts[0]
    to the one starting with starts[-1] (with their outputs)."""
    first, last = (page.evaluate(CELL_BY_TEXT, s) for s in (starts[0], starts[-1]))
    if first < 0 or last < 0:
        raise SystemExit(f"no cell starting with {starts!r}")
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.nth(first).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    top, bottom = cells.nth(first).bounding_box(), cells.nth(last).bounding_box()
    left = page.locator(".jp-NotebookPanel").first.bounding_box()
    clip = {"x": left["x"], "y": top["y"] - 8, "width": min(left["width"], 1100),
            "height": bottom["y"] + bottom["height"] - top["y"] + 16}
    page.screenshot(path=str(path), clip=clip)


def check(page) -> list[str]:
    """What the executed notebook should show; the problems seen."""
    problems = []
    text = page.locator(".jp-Notebook").inner_text()
    for expected in ("set Ancestor (8 tuples)", "Ancestor 8 tuples", "set Attn (6, 4), Comp (6, 6)",
                     "cell:2:13: error[undefined-tensor]: `Missing` is not defined",
                     "Attn.svg", "Comp.svg", "Reach 20 tuples"):
        if expected not in text:
            problems.append(f"the notebook does not show {expected!r}")
    images = page.evaluate(
        "() => [...document.querySelectorAll('.fuse-pictures img')].map(i => i.naturalWidth)")
    if len(images) != 2 or not all(width > 0 for width in images):
        problems.append(f"the attention cell's two pictures are not drawn (widths {images})")
    tables = page.locator(".fuse-result table").count()
    if tables < 2:
        problems.append(f"the Datalog cell's rich tables are missing ({tables} tables)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"), help="where the PNGs go")
    parser.add_argument("--chromium", default=CHROMIUM, help="the Chromium to drive")
    options = parser.parse_args(argv)
    # a timeout's SIGTERM still ends JupyterLab and its kernel (the finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from playwright.sync_api import sync_playwright

    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fuse-lab-") as tmp:
        folder = Path(tmp)
        prepare(folder)
        token = secrets.token_hex(16)
        lab, port = start_lab(folder, token, folder / "lab.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=options.chromium,
                                             args=["--no-sandbox"])
                page = browser.new_page(viewport=VIEWPORT)
                run_notebook(page, f"http://127.0.0.1:{port}/lab/tree/notebook.ipynb"
                                   f"?token={token}")
                problems = check(page)
                shoot_window(page, "%%fuse --input Parent=parents",
                             out / "jupyterlab-datalog.png")
                shoot_cells(page, ["%%fuse --input X --input WQ"],
                            out / "jupyterlab-attention.png")
                browser.close()
        finally:
            stop_lab(lab)
            if os.environ.get("FUSE_SHOTS_LOG"):
                print((folder / "lab.log").read_text(), file=sys.stderr)
    for problem in problems:
        print(f"jupyterlab_shots: {problem}", file=sys.stderr)
    print(f"wrote {out / 'jupyterlab-datalog.png'} and {out / 'jupyterlab-attention.png'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
