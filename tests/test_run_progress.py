"""Progress of a run: the engine's reports (run.limits.RunProgress), `fuse run`'s
bar on a terminal (and nothing on a pipe), and Ctrl-C leaving no sink file."""
from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import sys
import time

import fuse_lang

# a recurrence of many steps: several seconds on numpy
SLOW = """\
axis i = 2
axis t = {steps}
W[i,j] = const([[0.5, 0], [0, 0.5]])
U[j,t] = 1
X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])
"slow.npy" = X[i,*t]
export X
"""


def test_the_engine_reports_groups_and_iterations():
    seen = []
    program = fuse_lang.compile(SLOW.format(steps=3000).replace('"slow.npy" = X[i,*t]\n', ""))
    program.progress = seen.append
    program.execute()
    assert [(p.done, p.total, p.tensors) for p in seen[:3]] == [
        (0, 3, ("W",)), (1, 3, ("U",)), (2, 3, ("X",))]
    assert all(p.iteration <= 3000 for p in seen)
    assert seen[-1].message().startswith("group 3/3 (`X`)")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_run_draws_a_bar_on_a_terminal(tmp_path, monkeypatch, capsys):
    from fuse_lang import cli
    from fuse_lang.cli import progress as cli_progress

    monkeypatch.setattr(cli_progress, "SHOW_AFTER_S", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    path = tmp_path / "slow.fuse"
    path.write_text(SLOW.format(steps=3000))
    assert cli.main(["run", str(path)]) == 0
    drawn = terminal.getvalue()
    assert "fuse run" in drawn and "group 3/3 (`X`)" in drawn, drawn
    assert "fuse run" not in capsys.readouterr().out


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    out = b""
    end = time.monotonic() + timeout
    while needle not in out and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 4096)
            except OSError:  # the other end closed
                break
    return out


def _read_while_running(fd: int, proc: subprocess.Popen, timeout: float) -> bytes:
    """What the terminal gets until `proc` exits, read all along (a pseudo-terminal
    that nobody reads fills up and blocks the bar's next write)."""
    out = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 4096)
            except OSError:  # the other end closed: it has exited
                break
        elif proc.poll() is not None:
            break
    return out


def _as_a_shell_runs_it() -> None:
    # A foreground job gets Ctrl-C; a test run started in the background by a
    # non-interactive shell has SIGINT ignored, which its children would inherit.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_on_a_terminal_the_bar_shows_and_ctrl_c_writes_no_sink(tmp_path):
    path = tmp_path / "slow.fuse"
    path.write_text(SLOW.format(steps=300_000))
    terminal, its_end = pty.openpty()  # stderr on a pseudo-terminal, as in a shell
    proc = subprocess.Popen([sys.executable, "-m", "fuse_lang.cli", "run", str(path)],
                            stdout=subprocess.PIPE, stderr=its_end,
                            preexec_fn=_as_a_shell_runs_it)
    os.close(its_end)
    try:
        drawn = _read_until(terminal, b"iteration", 60)
        assert b"fuse run:" in drawn and b"group 3/3 (`X`): iteration" in drawn, drawn
        proc.send_signal(signal.SIGINT)
        drawn += _read_while_running(terminal, proc, 60)
        stdout, _ = proc.communicate(timeout=10)
    finally:
        proc.kill()
        os.close(terminal)
    assert proc.returncode == 130
    assert b"the run was stopped (Ctrl-C); no sink file was written" in drawn
    assert stdout == b""
    assert list(tmp_path.iterdir()) == [path]  # neither slow.npy nor a temporary file


def test_nothing_is_drawn_on_a_pipe(tmp_path):
    path = tmp_path / "slow.fuse"
    path.write_text(SLOW.format(steps=30_000))
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert (tmp_path / "slow.npy").exists()
