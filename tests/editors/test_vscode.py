"""The VS Code extension: its own test suites (grammar, manifest, the compiled
extension against the real server) and an offline .vsix, run through npm.

npm packages are installed here (`npm ci`, once per session: conftest.py's
`vscode_npm_ci`, which the end-to-end test shares), so the README's two commands
stay all it takes.  With FUSE_REQUIRE_NODE=1 (CI) a missing Node.js fails instead
of skipping.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("FUSE_REQUIRE_NODE") == "1":
            pytest.fail("npm is not on PATH, and FUSE_REQUIRE_NODE=1")
        pytest.skip("npm is not on PATH (Node.js is needed for the VS Code extension)")
    return npm


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["FUSE_PYTHON"] = sys.executable
    return subprocess.run([_npm(), *args], cwd=EXTENSION, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(vscode_npm_ci):
    _npm()  # no npm: skip, or fail under FUSE_REQUIRE_NODE=1
    done = vscode_npm_ci
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_grammar_manifest_and_helpers(installed):
    done = _run("test")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^\S* ?fail 0$", done.stdout, re.M), done.stdout[-2000:]


def test_the_compiled_extension_against_the_real_server(installed):
    done = _run("run", "test:server")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^\S* ?fail 0$", done.stdout, re.M), done.stdout[-2000:]


def test_packages_a_vsix_offline(installed, vscode_package):
    target = EXTENSION / "fuse-lang.vsix"
    if target.exists():
        target.unlink()
    done = vscode_package.package(_npm(), fresh=True)  # the end-to-end test installs it
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert target.exists() and target.stat().st_size > 10_000
