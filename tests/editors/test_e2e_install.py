"""The VS Code end-to-end test's installer (e2e_install.py), on stand-in steps:
a step's output goes to the log and a failure's end to the message; stop() (the
session's end) and a step's timeout end the step with every process it started;
hurry() takes a background step off the lowest priority and starts its timeout's
clock."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from . import e2e_install
from .e2e_install import Installer, Missing, is_live

# a step that starts a grandchild (as npm starts node-gyp, make, the compilers),
# says its pid and then waits
STEP = ["sh", "-c", "sleep 300 & echo grandchild $!; wait"]


@pytest.fixture(autouse=True)
def log_here(tmp_path, monkeypatch):
    monkeypatch.setattr(e2e_install, "INSTALL_LOG", tmp_path / "install.log")
    return tmp_path / "install.log"


@pytest.fixture
def started(log_here):
    """The stand-in step's grandchild, ended after the test whatever it found."""
    pids = []
    yield lambda: pids.append(_grandchild(log_here)) or pids[-1]
    for pid in pids:
        if is_live(pid):
            os.kill(pid, signal.SIGKILL)


def _grandchild(log: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in (log.read_text() if log.exists() else "").splitlines():
            if line.startswith("grandchild "):
                return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError("the step did not start")


def _in_thread(installer: Installer, args: list, **kwargs) -> dict:
    outcome = {}

    def run():
        try:
            installer.sh(args, what="a stand-in step", **kwargs)
        except Missing as missing:
            outcome["missing"] = missing.why
    outcome["thread"] = threading.Thread(target=run)
    outcome["thread"].start()
    return outcome


def test_a_failing_step_is_missing_with_the_end_of_its_output(log_here):
    with pytest.raises(Missing) as raised:
        Installer(background=False).sh(["sh", "-c", "echo first; echo last >&2; exit 3"],
                                       what="a stand-in step")
    assert "a stand-in step exited 3" in raised.value.why
    assert "first\nlast" in raised.value.why and str(log_here) in raised.value.why
    assert "a stand-in step: exit 3 after" in log_here.read_text()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_stop_ends_the_step_and_what_it_started(started):
    installer = Installer(background=True)
    outcome = _in_thread(installer, STEP)
    grandchild = started()
    assert is_live(grandchild)
    installer.stop()
    outcome["thread"].join(timeout=30)
    assert not outcome["thread"].is_alive()
    assert "the session ended" in outcome["missing"]
    assert not is_live(grandchild)
    with pytest.raises(Missing, match="not run, the session ended"):  # and nothing after it
        installer.sh(["true"], what="a next step")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_step_past_its_timeout_is_ended_with_what_it_started(started):
    installer = Installer(background=False)
    outcome = _in_thread(installer, STEP, timeout=2)
    grandchild = started()
    outcome["thread"].join(timeout=30)
    assert "timed out after 2 s" in outcome["missing"]
    assert not is_live(grandchild)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_background_steps_timeout_counts_from_when_the_test_waits(started):
    """At the lowest priority a step may be starved while the suite runs: its clock
    starts at hurry()."""
    installer = Installer(background=True)
    outcome = _in_thread(installer, STEP, timeout=1)
    grandchild = started()
    time.sleep(2.5)
    assert is_live(grandchild) and "missing" not in outcome
    installer.hurry()
    outcome["thread"].join(timeout=30)
    assert "timed out after 1 s" in outcome["missing"]
    assert not is_live(grandchild)


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/proc/self/stat").exists(),
                    reason="lowering a niceness needs root")
def test_hurry_takes_a_background_step_off_the_lowest_priority(started):
    installer = Installer(background=True)
    outcome = _in_thread(installer, STEP)
    grandchild = started()
    try:
        assert os.getpriority(os.PRIO_PROCESS, grandchild) == 19
        installer.hurry()
        assert os.getpriority(os.PRIO_PROCESS, grandchild) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        installer.stop()
        outcome["thread"].join(timeout=30)
    assert not is_live(grandchild)
