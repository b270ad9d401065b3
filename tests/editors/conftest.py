"""The editor tests' shared set-up.

- The VS Code end-to-end test (test_vscode_e2e.py) runs last, and its
  prerequisites (minutes of downloads and native builds on a fresh clone,
  e2e_install.py) are installed in the background from the moment the session
  has collected it, beside the rest of the suite.  Only where it runs
  (FUSE_E2E=1 or FUSE_REQUIRE_EDITORS=1) and is selected, and not for
  --collect-only.
- `npm ci` of editors/vscode runs once per session (`vscode_npm_ci`), for
  test_vscode.py and the end-to-end test's .vsix, and so does `npm run package`
  (`vscode_package`): test_vscode.py packages (its test), the end-to-end test
  installs that .vsix, or packages where that test did not run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import e2e_install

E2E_MODULE = "test_vscode_e2e.py"
EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"


def _is_e2e(item: pytest.Item) -> bool:
    return item.path.name == E2E_MODULE and item.path.parent == Path(__file__).parent


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end test last (in its own order), so that its installation has the
    whole run to happen in."""
    if e2e_install.enabled():
        items[:] = [i for i in items if not _is_e2e(i)] + [i for i in items if _is_e2e(i)]


def pytest_collection_finish(session: pytest.Session) -> None:
    if e2e_install.enabled() and not session.config.option.collectonly \
            and any(_is_e2e(item) for item in session.items):
        e2e_install.start_in_background()


def pytest_sessionfinish() -> None:
    """A session that ends before the end-to-end test (Ctrl+C, -x) leaves no install
    running."""
    e2e_install.stop_background()


def npm_env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["FUSE_PYTHON"] = sys.executable
    return env


@pytest.fixture(scope="session")
def vscode_npm_ci() -> subprocess.CompletedProcess | None:
    """`npm ci` in editors/vscode, once per session; None where there is no npm (each
    user says what that means for it)."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    return _npm_run(npm, "ci", "--no-audit", "--no-fund")


def _npm_run(npm: str, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([npm, *args], cwd=EXTENSION, env=npm_env(), capture_output=True,
                              text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([npm, *args], 124, "",
                                           f"npm {' '.join(args)}: timed out after 600 s")


class VsixPackager:
    """`npm run package` (fuse-lang.vsix), run once per session unless asked afresh."""

    target = EXTENSION / "fuse-lang.vsix"

    def __init__(self):
        self.made: tuple[int, int] | None = None  # the .vsix's (mtime_ns, size) once packaged

    def package(self, npm: str, *, fresh: bool) -> subprocess.CompletedProcess:
        if not fresh and self.made is not None and self.target.exists() \
                and (self.target.stat().st_mtime_ns, self.target.stat().st_size) == self.made:
            return subprocess.CompletedProcess(["npm", "run", "package"], 0,
                                               "packaged earlier in this session", "")
        self.made = None
        done = _npm_run(npm, "run", "package")
        if done.returncode == 0 and self.target.exists():
            self.made = (self.target.stat().st_mtime_ns, self.target.stat().st_size)
        return done


@pytest.fixture(scope="session")
def vscode_package() -> VsixPackager:
    return VsixPackager()
