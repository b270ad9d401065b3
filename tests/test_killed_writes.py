"""A sink's write killed outright (SIGKILL) leaves its target whole (the old file
or none) and, once the target is written again, no temporary beside it: with
unnamed temporaries (Linux's O_TMPFILE) and with named ones (the fallback)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuse_lang.io.atomic_files import atomic_write, remove_stale_temporaries, temporary_prefix

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"),
                                reason="watches the writer through /proc")

ROWS = 50_000
PROGRAM = 'E(x, y) = "edges.tsv"\nR(x, y) = E(x, y)\n"out.tsv" = R(x, y)\n'

# `fuse run`, its sink's lines written 1,000 at a time with a pause between:
# a write that lasts seconds, to be killed in the middle.  "named": as on a
# system without O_TMPFILE.
SLOW_RUN = """
import os, sys, time
if sys.argv[1] == "named":
    del os.O_TMPFILE
import fuse_lang.io.sinks as sinks
from fuse_lang.cli.main import main
sinks.TUPLES_PER_WRITE = 1000
tuples_text = sinks._tuples_text
def slowly(*args, **kwargs):
    time.sleep(0.05)
    return tuples_text(*args, **kwargs)
if sys.argv[3] == "slow":
    sinks._tuples_text = slowly
sys.exit(main(["run", "--format", "json", sys.argv[2]]))
"""


def expected_text() -> str:
    return "".join(f"{i}\t{(i * 7919) % ROWS}\n" for i in range(ROWS))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "edges.tsv").write_text(expected_text())
    (tmp_path / "prog.fuse").write_text(PROGRAM)
    return tmp_path


def start(folder: Path, mode: str, speed: str = "slow") -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", SLOW_RUN, mode, str(folder / "prog.fuse"),
                             speed], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def writing(pid: int, folder: Path) -> bool:
    """Whether process `pid` holds a file in `folder` open for writing, with
    something written in it already."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            flags = next(int(line.split()[1], 8) for line in
                         open(f"/proc/{pid}/fdinfo/{fd}") if line.startswith("flags:"))
            size = os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except (OSError, StopIteration):
            continue
        if target.startswith(str(folder)) and flags & 0o3 != os.O_RDONLY and size > 0:
            return True
    return False


def kill_while_writing(folder: Path, mode: str) -> None:
    proc = start(folder, mode)
    deadline = time.monotonic() + 120
    while not writing(proc.pid, folder):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the sink's write never started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    proc.stderr.close()


def temporaries(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n not in ("edges.tsv", "prog.fuse",
                                                             "out.tsv"))


@pytest.mark.parametrize("mode", ["unnamed", "named"])
def test_a_sink_write_killed_midway_leaves_nothing_once_written_again(folder, mode):
    kill_while_writing(folder, mode)
    assert not (folder / "out.tsv").exists()  # never a partial target
    left = temporaries(folder)
    if mode == "named":  # the killed write's temporary, recognisable as out.tsv's
        assert len(left) == 1 and left[0].startswith(".out.tsv.fuse-"), left
    else:
        assert left == []  # an unnamed temporary goes with its process
    proc = start(folder, mode, "fast")
    assert proc.wait(120) == 0, proc.stderr.read().decode()
    proc.stderr.close()
    assert temporaries(folder) == []
    assert (folder / "out.tsv").read_text() == expected_text()


def test_kills_at_random_moments_never_leave_a_partial_target_or_a_temporary(folder):
    expected = expected_text()
    (folder / "out.tsv").write_text(expected)  # the last good write
    rng = random.Random(28)
    for attempt in range(6):
        mode = ("unnamed", "named")[attempt % 2]
        proc = start(folder, mode, "fast")
        time.sleep(rng.uniform(0.2, 2.5))  # before, during or after the write
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stderr.close()
        assert (folder / "out.tsv").read_text() == expected  # old or new, whole
    proc = start(folder, "named", "fast")
    assert proc.wait(120) == 0, proc.stderr.read().decode()
    proc.stderr.close()
    assert temporaries(folder) == []
    assert (folder / "out.tsv").read_text() == expected


def test_only_the_targets_temporaries_of_dead_writers_here_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs, as after kill -9
    target = tmp_path / "out.npy"
    prefix = temporary_prefix(target)
    made = {
        "dead": f"{prefix}{dead.pid}@{_host_part()}-0123abcd.tmp",
        "older Fuse's": f"{prefix}{dead.pid}-4567cdef.tmp",
        "live": f"{prefix}{os.getpid()}@{_host_part()}-89ab0123.tmp",
        "another host's": f"{prefix}{dead.pid}@{_host_part()}.elsewhere-0000aaaa.tmp",
        "another target's": f"{temporary_prefix(tmp_path / 'other.npy')}{dead.pid}-1111bbbb.tmp",
    }
    for name in made.values():
        (tmp_path / name).write_bytes(b"half a write")
    removed = remove_stale_temporaries(target)
    assert sorted(p.name for p in removed) == sorted([made["dead"], made["older Fuse's"]])
    atomic_write(target, b"whole")
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["out.npy", made["live"], made["another host's"], made["another target's"]])


def test_a_long_target_name_gets_a_temporary_the_file_system_accepts(tmp_path):
    target = tmp_path / ("t" * 250 + ".tsv")
    atomic_write(target, b"whole")
    assert target.read_bytes() == b"whole"
    assert len(temporary_prefix(target)) < 150


def test_an_unnamed_temporary_that_cannot_be_named_is_copied(tmp_path, monkeypatch):
    from fuse_lang.io import atomic_files

    monkeypatch.setattr(atomic_files, "_NAMING", [True])
    real_link = os.link

    def refused(source, *args, **kwargs):
        if str(source).startswith("/proc/self/fd/"):
            raise PermissionError(1, "linkat through /proc refused")
        return real_link(source, *args, **kwargs)

    monkeypatch.setattr(os, "link", refused)
    monkeypatch.setattr(os, "supports_dir_fd", os.supports_dir_fd | {refused})
    target = tmp_path / "out.npy"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    for data in (b"first " * 100_000, b"second"):
        atomic_write(target, data)
        assert target.read_bytes() == data
        assert os.listdir(tmp_path) == ["out.npy"]
        assert os.stat(target).st_mode & 0o777 == 0o640
    assert atomic_files._NAMING == [False]


def _host_part() -> str:
    from fuse_lang.io import atomic_files

    return atomic_files._host()
