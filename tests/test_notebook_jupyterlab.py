"""examples/notebook.ipynb in a real JupyterLab (docs/notebooks.md, "Screenshots"):
docs/shots/jupyterlab_shots.py starts JupyterLab headless, runs every cell from
Chromium and checks what the page shows (the "set" lines, the Datalog cell's
tables, the error, both pictures drawn).  Its screenshots go to a temporary
folder here (the script itself writes docs/images/).

Runs with FUSE_E2E=1 (JupyterLab and a browser take a minute; the extra
`jupyterlab` and Debian's chromium are needed), as the editors' end-to-end tests."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docs" / "shots" / "jupyterlab_shots.py"
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    os.environ.get("FUSE_E2E") != "1",
    reason="the JupyterLab end-to-end test runs with FUSE_E2E=1 (pip install -e '.[jupyterlab]')")


def test_the_example_notebook_runs_and_shows_its_results_in_jupyterlab(tmp_path):
    missing = [m for m in ("jupyterlab", "playwright") if importlib.util.find_spec(m) is None]
    if missing or not Path(CHROMIUM).exists():
        pytest.skip(f"needs {', '.join(missing) or CHROMIUM} (pip install -e '.[jupyterlab]')")
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("jupyterlab-datalog.png", "jupyterlab-attention.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 20_000, name
