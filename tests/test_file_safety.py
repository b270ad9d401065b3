"""Sources and sinks that a hostile or careless user gives (issue 19, items 4-7, 9, 15):
special files, lying or odd `.npy` headers, huge text files, NUL bytes in paths,
sinks that cannot all be written, leftovers of killed writes, file modes.
Every case ends quickly with a clear message, never a traceback or a hang."""
from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import FuseError

TIMEOUT = 60  # a FIFO or /dev/zero that were read would block or run far past this


def fuse(*args: str, umask: int | None = None) -> subprocess.CompletedProcess:
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=TIMEOUT, preexec_fn=preexec)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "internal error" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def source_program(tmp_path: Path, file: str) -> Path:
    program = tmp_path / "prog.fuse"
    program.write_text(f'W[i] = "{file}"\nexport W\n')
    return program


def lying_npy(path: Path, shape: tuple[int, ...], descr: str = "<f8") -> None:
    """An .npy whose header claims `shape` but which holds 16 bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": descr, "fortran_order": False, "shape": shape})
    path.write_bytes(header.getvalue() + b"\0" * 16)


def codes(tmp_path: Path, program: Path) -> list[str]:
    analysis = fuse_lang.analyze(program.read_text(), str(program), tmp_path)
    return [d.code for d in analysis.diagnostics]


# ------------------------------------------------------------ special files

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


@needs_fifo
def test_a_fifo_source_is_refused_by_check_and_run_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "w.npy")
    program = source_program(tmp_path, "w.npy")
    assert codes(tmp_path, program) == ["unreadable-source"]
    check = fuse("check", str(program))
    assert check.returncode == 1 and "FIFO" in check.stdout, check.stdout
    run = fuse("run", str(program))
    assert run.returncode == 1 and "unreadable-source" in run.stderr, run.stderr
    with pytest.raises(FuseError, match="FIFO"):
        fuse_lang.compile(program.read_text(), base_dir=tmp_path).run()


@needs_fifo
def test_a_fifo_given_to_input_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "in.npy")
    program = tmp_path / "prog.fuse"
    program.write_text("param W[i]\naxis i = 2\nexport W\n")
    proc = fuse("run", str(program), "--input", f"W={tmp_path / 'in.npy'}")
    assert proc.returncode == 2 and "FIFO" in proc.stderr, proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".json", ".txt"])
def test_a_link_to_dev_zero_is_refused_not_read(tmp_path, suffix):
    (tmp_path / f"w{suffix}").symlink_to("/dev/zero")
    program = source_program(tmp_path, f"w{suffix}")
    assert codes(tmp_path, program) == ["unreadable-source"]
    proc = fuse("check", str(program))
    assert proc.returncode == 1 and "character device" in proc.stdout, proc.stdout


def test_a_text_source_over_the_size_limit_is_refused(tmp_path):
    from fuse_lang.io.source_files import MAX_TEXT_SOURCE_BYTES

    with open(tmp_path / "w.csv", "wb") as big:
        big.truncate(MAX_TEXT_SOURCE_BYTES + 1)  # sparse: costs no disk
    program = source_program(tmp_path, "w.csv")
    proc = fuse("check", str(program))
    assert proc.returncode == 1 and "the limit for a text source" in proc.stdout, proc.stdout


def test_json_nested_too_deeply_is_a_diagnostic(tmp_path):
    (tmp_path / "w.json").write_text("[" * 100_000 + "]" * 100_000)
    program = source_program(tmp_path, "w.json")
    proc = fuse("check", str(program))
    assert proc.returncode == 1 and "nests too deeply" in proc.stdout, proc.stdout


# ------------------------------------------------------------ .npy headers and types


def test_input_whose_header_claims_a_huge_shape_is_refused_before_allocating(tmp_path):
    lying_npy(tmp_path / "in.npy", (10**12,))
    program = tmp_path / "prog.fuse"
    program.write_text("param W[i]\nexport W\n")
    proc = fuse("run", str(program), "--input", f"W={tmp_path / 'in.npy'}")
    assert proc.returncode == 2, proc.stderr
    assert "header claims shape (1000000000000,)" in proc.stderr
    assert "the file holds 16 bytes" in proc.stderr


def test_a_source_whose_header_claims_more_than_the_file_holds(tmp_path):
    lying_npy(tmp_path / "w.npy", (1000,))
    program = source_program(tmp_path, "w.npy")
    proc = fuse("check", str(program))
    assert proc.returncode == 1 and "unreadable-source" in proc.stdout, proc.stdout
    assert "the file holds 16 bytes" in proc.stdout


@pytest.mark.parametrize("descr", ["<f0", "<i3", "|b2"])
def test_a_header_with_a_number_type_numpy_does_not_read(tmp_path, descr):
    lying_npy(tmp_path / "in.npy", (2,), descr)
    program = tmp_path / "prog.fuse"
    program.write_text("param W[i]\nexport W\n")
    proc = fuse("run", str(program), "--input", f"W={tmp_path / 'in.npy'}")
    assert proc.returncode == 2 and "a size numpy does not read" in proc.stderr, proc.stderr
    check = fuse("check", str(source_program(tmp_path, "in.npy")))
    assert check.returncode == 1 and "unreadable-source" in check.stdout, check.stdout


NON_NUMBERS = {
    "complex": (np.array([1 + 2j, 3j]), "complex numbers"),
    "datetime": (np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]"),
                 "dates and times"),
    "structured": (np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]), "records with fields"),
    "text": (np.array(["a", "b"]), "text"),
}


@pytest.mark.parametrize("kind", sorted(NON_NUMBERS))
def test_npy_that_does_not_hold_plain_numbers_is_refused_everywhere(tmp_path, kind):
    array, words = NON_NUMBERS[kind]
    np.save(tmp_path / "w.npy", array)
    np.savez(tmp_path / "w.npz", W=array)
    for file in ("w.npy", "w.npz"):
        program = source_program(tmp_path, file)
        check = fuse("check", str(program))
        assert check.returncode == 1 and words in check.stdout, check.stdout
        assert "unreadable-source" in check.stdout
    program = tmp_path / "param.fuse"
    program.write_text("param W[i]\nexport W\n")
    run = fuse("run", str(program), "--input", f"W={tmp_path / 'w.npy'}")
    assert run.returncode == 2 and words in run.stderr, run.stderr
    with pytest.raises(FuseError, match="Fuse reads only bool, integer or float"):
        fuse_lang.compile(program.read_text(), base_dir=tmp_path).run({"W": array})


def test_plain_number_types_still_load(tmp_path):
    for dtype in ("bool", "int8", "uint16", "int64", "float16", "float64"):
        np.save(tmp_path / "w.npy", np.array([1, 0, 1], dtype=dtype))
        program = source_program(tmp_path, "w.npy")
        out = fuse_lang.compile(program.read_text(), base_dir=tmp_path).run()
        np.testing.assert_array_equal(out["W"], [1, 0, 1])
    np.save(tmp_path / "w.npy", np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    program = tmp_path / "two.fuse"
    program.write_text('W[i,j] = "w.npy"\nexport W\n')
    out = fuse_lang.compile(program.read_text(), base_dir=tmp_path).run()
    np.testing.assert_array_equal(out["W"], np.arange(6.0).reshape(2, 3))


# ------------------------------------------------------------ NUL bytes in paths

PADDING = "# " + "x" * 9000 + "\n"  # the NUL lies past the first 8 KB of the file


def test_a_sink_path_with_a_nul_byte_is_refused_clearly(tmp_path):
    program = tmp_path / "prog.fuse"
    program.write_text(PADDING + 'A[i] = const([1, 2])\n"o\0ut.npy" = A[i]\n', encoding="utf-8")
    proc = fuse("run", str(program))
    assert proc.returncode == 1 and "NUL byte" in proc.stderr, proc.stderr
    with pytest.raises(FuseError, match="NUL byte"):
        fuse_lang.compile(program.read_text(), base_dir=tmp_path).run()


def test_a_source_path_with_a_nul_byte_is_a_diagnostic(tmp_path):
    program = tmp_path / "prog.fuse"
    program.write_text(PADDING + 'W[i] = "w\0.npy"\nexport W\n', encoding="utf-8")
    proc = fuse("check", str(program))
    assert proc.returncode == 1 and "unreadable-source" in proc.stdout, proc.stdout
    assert "NUL byte" in proc.stdout


# ------------------------------------------------------------ sinks

# (a suffix no sink writes, `"out.xlsx"`, is `fuse check`'s error too: the run never
# starts; tests/test_io_roundtrip.py)
@pytest.mark.parametrize("bad_sink, refusal", [('"../escape.npy"', "line 3: sink"),
                                               ('"out.xlsx"', "3:1: error[unwritable-sink]"),
                                               ('"folder.npy"', "line 3: sink")])
def test_no_sink_is_written_when_a_later_sink_is_refused(tmp_path, bad_sink, refusal):
    (tmp_path / "folder.npy").mkdir()
    program = tmp_path / "prog.fuse"
    program.write_text(f'A[i] = const([1, 2])\n"first.npy" = A[i]\n{bad_sink} = A[i]\n')
    proc = fuse("run", str(program))
    assert proc.returncode == 1 and refusal in proc.stderr, proc.stderr
    assert not (tmp_path / "first.npy").exists()
    assert not (tmp_path.parent / "escape.npy").exists()
    with pytest.raises(FuseError, match="line 3"):
        fuse_lang.compile(program.read_text(), base_dir=tmp_path).run()
    assert not (tmp_path / "first.npy").exists()


def test_temporaries_of_killed_writes_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs, as after kill -9
    stale = tmp_path / f".out.npy.fuse-{dead.pid}-0123abcd.tmp"
    stale.write_bytes(b"half a write")
    live = tmp_path / f".out.npy.fuse-{os.getpid()}-4567cdef.tmp"  # a write under way
    live.write_bytes(b"being written")
    other = tmp_path / f".other.npy.fuse-{dead.pid}-89ab0123.tmp"  # another target's
    other.write_bytes(b"not ours")
    program = tmp_path / "prog.fuse"
    program.write_text('A[i] = const([1, 2])\n"out.npy" = A[i]\n')
    proc = fuse("run", str(program))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), [1, 2])
    assert [t.name for t in tmp_path.glob(".out.npy.fuse-*.tmp")] == [live.name]
    assert other.exists()


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_sinks_honour_the_umask(tmp_path, umask, mode):
    program = tmp_path / "prog.fuse"
    program.write_text('A[i] = const([1, 2])\n"out.npy" = A[i]\n"out.csv" = A[i]\n')
    proc = fuse("run", str(program), "--out", str(tmp_path / "all.npz"), umask=umask)
    assert proc.returncode == 0, proc.stderr
    for name in ("out.npy", "out.csv", "all.npz"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_a_sink_rewritten_keeps_the_mode_its_owner_gave_it(tmp_path):
    program = tmp_path / "prog.fuse"
    program.write_text('A[i] = const([1, 2])\n"out.npy" = A[i]\n')
    assert fuse("run", str(program), umask=0o022).returncode == 0
    (tmp_path / "out.npy").chmod(0o640)
    assert fuse("run", str(program), umask=0o022).returncode == 0
    assert stat.S_IMODE((tmp_path / "out.npy").stat().st_mode) == 0o640


@needs_fifo
@pytest.mark.parametrize("command", ["check", "explain", "run"])
def test_a_program_file_that_is_a_fifo_or_a_device_is_refused(tmp_path, command):
    os.mkfifo(tmp_path / "pipe.fuse")
    proc = fuse(command, str(tmp_path / "pipe.fuse"))
    assert proc.returncode == 2 and "FIFO" in proc.stderr, proc.stderr
    if os.path.exists("/dev/zero"):
        (tmp_path / "zero.fuse").symlink_to("/dev/zero")
        proc = fuse(command, str(tmp_path / "zero.fuse"))
        assert proc.returncode == 2 and "character device" in proc.stderr, proc.stderr
