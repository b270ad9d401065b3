"""`fuse check` and `fuse-lsp --check` held to docs/cli.md and docs/lsp.md, and to
each other: the same output and exit status on the same paths, summary counts
that agree with the diagnostics, JSON of exactly `{"diagnostics": [...]}`, and
no traceback whatever standard output can encode."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIXED = (  # an error, a warning, two hints and (through the recurrence) information
    "W[k,d] = const([[1,2],[3,4]])\n"
    "X[p,d] = const([[1,2],[3,4]])\n"
    "T[k,p] = W[k,d] X[p,dd]\n"
    "R[i] = const([1,2,3])\n"
    "S[i] = R[i] + S[i-1]\n"
    "Y[i] = Missing[i]\n"
    "export R\n"
)


def tool(which: str, *args: str, cwd: Path, env: dict | None = None
         ) -> subprocess.CompletedProcess:
    """`fuse check ARGS` (which="fuse") or `fuse-lsp --check ARGS` (which="lsp")."""
    command = ["fuse_lang.cli", "check"] if which == "fuse" else ["fuse_lsp", "--check"]
    return subprocess.run([sys.executable, "-m", *command, *args], capture_output=True,
                          cwd=cwd, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout


def test_both_tools_print_the_same_and_the_summary_counts_what_is_printed(tmp_path):
    (tmp_path / "mixed.fuse").write_text(MIXED)
    (tmp_path / "bom.fuse").write_bytes(b"\xef\xbb\xbfY[i] = Nope[i]\r\nZ = 1\r\n")
    (tmp_path / "clean.fuse").write_text("X[i] = const([1,2])\nexport X\n")
    paths = ["mixed.fuse", "nope.fuse", "bom.fuse", "clean.fuse"]
    text = tool("fuse", *paths, cwd=tmp_path)
    data = tool("fuse", "--format", "json", *paths, cwd=tmp_path)
    for mine, theirs in ((text, tool("lsp", *paths, cwd=tmp_path)),
                         (data, tool("lsp", "--format", "json", *paths, cwd=tmp_path))):
        assert mine.stdout == theirs.stdout and mine.returncode == theirs.returncode == 2
        assert mine.stderr.replace(b"fuse:", b"fuse-lsp:", 1) == theirs.stderr
        no_traceback(mine)
    assert text.stderr.decode() == data.stderr.decode() == "fuse: nope.fuse: no such file\n"
    document = json.loads(data.stdout)
    assert list(document) == ["diagnostics"]
    diagnostics = document["diagnostics"]
    # the text's first lines are the JSON's, in the same order (files as given, then places)
    heads = [line for line in text.stdout.decode().splitlines()
             if re.match(r"\S+:\d+:\d+: \w+\[", line)]
    assert heads == [f"{d['path']}:{d['line']}:{d['column']}: {d['severity']}[{d['code']}]: "
                     f"{d['message']}" for d in diagnostics]
    assert [d["path"] for d in diagnostics] == sorted(
        (d["path"] for d in diagnostics), key=["mixed.fuse", "bom.fuse"].index)
    for path in ("mixed.fuse", "bom.fuse"):
        places = [(d["line"], d["column"]) for d in diagnostics if d["path"] == path]
        assert places == sorted(places)
    counts = Counter(d["severity"] for d in diagnostics)
    assert set(counts) == {"error", "warning", "information", "hint"}
    assert text.stdout.decode().splitlines()[-1] == (
        f"3 files checked: {counts['error']} errors, {counts['warning']} warning, "
        f"{counts['information']} information, {counts['hint']} hints")
    # a BOM and CRLF: lines and columns of the text as an editor shows it (no BOM, no \r)
    [bom] = [d for d in diagnostics if d["path"] == "bom.fuse"]
    assert (bom["code"], bom["line"], bom["column"], bom["end_column"]) == \
        ("undefined-tensor", 1, 8, 12)
    assert "bom.fuse:1:8: error[undefined-tensor]: `Nope` is not defined\n" \
        "1 | Y[i] = Nope[i]\n           ^^^^\n" in text.stdout.decode()


@pytest.mark.parametrize("which", ["fuse", "lsp"])
def test_a_character_stdout_cannot_encode_is_escaped_not_a_traceback(tmp_path, which):
    (tmp_path / "u.fuse").write_text('Y = "é" + Qé\n', encoding="utf-8")
    ascii_out = {"PYTHONIOENCODING": "ascii"}
    text = tool(which, "u.fuse", cwd=tmp_path, env=ascii_out)
    no_traceback(text)
    assert text.returncode == 1 and b"'\\xe9' is not part of the Fuse language" in text.stdout
    assert text.stdout.endswith(b"1 file checked: 1 error\n")
    data = tool(which, "--format", "json", "u.fuse", cwd=tmp_path, env=ascii_out)
    no_traceback(data)
    [diagnostic] = json.loads(data.stdout)["diagnostics"]  # (escaped as JSON: \u00e9)
    assert data.returncode == 1 and "'é'" in diagnostic["message"]


@pytest.mark.skipif(sys.platform != "linux", reason="a file name of any bytes")
def test_a_file_name_that_is_not_utf8_is_no_traceback(tmp_path):
    (tmp_path / os.fsdecode(b"x\xff.fuse")).write_text("Y[i] = Q[i]\n")
    strict = {"PYTHONIOENCODING": "utf-8"}
    for which in ("fuse", "lsp"):
        text = tool(which, os.fsdecode(b"x\xff.fuse"), cwd=tmp_path, env=strict)
        no_traceback(text)
        assert text.returncode == 1 and text.stdout.startswith(b"x\\udcff.fuse:1:8: error")
        data = tool(which, "--format", "json", os.fsdecode(b"x\xff.fuse"), cwd=tmp_path,
                    env=strict)
        no_traceback(data)
        assert json.loads(data.stdout)["diagnostics"][0]["code"] == "undefined-tensor"


def test_an_imported_file_over_the_size_limit_is_not_read(tmp_path):
    # (docs/limits.md: a program is at most 2 MB; an imported file is one)
    (tmp_path / "big.fuse").write_text("X = 1\n" + ("#" * 99 + "\n") * 22_000)
    (tmp_path / "main.fuse").write_text('import "big.fuse" as b\nY = b::X\nexport Y\n')
    proc = tool("fuse", "--format", "json", "main.fuse", cwd=tmp_path)
    [error] = json.loads(proc.stdout)["diagnostics"]
    assert proc.returncode == 1 and error["code"] == "import-not-found"
    assert "it is 2.2 MB; Fuse reads programs up to 2 MB" in error["message"]


def test_json_names_an_imported_file_as_the_text_does(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "bad.fuse").write_text("A[i] = const([1,2])\nB[i] = A[i] + Nope[i]\n")
    (tmp_path / "main.fuse").write_text('import "lib/bad.fuse" as b\nY[i] = b::A[i]\nexport Y\n')
    text = tool("lsp", "main.fuse", cwd=tmp_path).stdout.decode()
    [error] = json.loads(tool("lsp", "--format", "json", "main.fuse", cwd=tmp_path).stdout
                         )["diagnostics"]
    assert error["code"] == "import-error" and (error["line"], error["column"]) == (1, 1)
    [related] = error["related"]
    assert (related["path"], related["line"], related["column"]) == ("lib/bad.fuse", 2, 15)
    assert "  lib/bad.fuse:2:15: note: `Nope` is not defined" in text


def test_usage_errors_of_fuse_lsp_say_why_then_the_usage_line(tmp_path):
    for args, reason in ((["--check", "--format", "xml", "a.fuse"], "argument --format"),
                         (["--bogus"], "unrecognized arguments: --bogus"),
                         (["--format", "json"], "--format is only for --check"),
                         (["--check"], "--check needs at least one PATH")):
        proc = subprocess.run([sys.executable, "-m", "fuse_lsp", *args], capture_output=True,
                              text=True, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2 and proc.stdout == ""
        assert lines[0].startswith(f"fuse-lsp: {reason}"), proc.stderr
        assert (len(lines) > 1 and lines[1].startswith("usage: fuse-lsp")) == \
            (args[0] != "--format")


@pytest.mark.parametrize("which", ["fuse", "lsp"])
def test_paths_that_name_no_program(tmp_path, which):
    (tmp_path / "src").mkdir()
    prog = "fuse" if which == "fuse" else "fuse-lsp"
    proc = tool(which, "", "src", "x" * 300 + ".fuse", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().splitlines() == [
        f"{prog}: an empty path names no .fuse file",
        f"{prog}: src is a folder, not a .fuse file",
        f"{prog}: {'x' * 300}.fuse: file name too long"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_reader_that_stops_early_is_no_traceback(tmp_path, fmt):
    # (`fuse-lsp --check ... | head`: far more than a pipe holds, so the write fails)
    (tmp_path / "many.fuse").write_text("".join(f"Y{i}[j] = Q{i}[j]\n" for i in range(3000)))
    proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--check", "--format", fmt,
                             "many.fuse"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    # (the status is still the diagnostics': 1, as docs/cli.md's table says)
    assert proc.returncode == 1 and err == b""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    # its output fills the pipe, unread: it is stopped while it prints
    (tmp_path / "many.fuse").write_text("".join(f"Y{i}[j] = Q{i}[j]\n" for i in range(3000)))
    proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--check", "many.fuse"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.readline().startswith(b"many.fuse:1:")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and b"Traceback" not in err


def test_a_long_line_is_cut_around_the_span(tmp_path):
    # a program on one line: each of its diagnostics quoted it whole (1 GB of output
    # for a 1 MB file with a thousand errors)
    program = "; ".join(f"Y{i}[j] = Q{i}[j]" for i in range(400)) + "\n"
    (tmp_path / "one.fuse").write_text(program)
    out = tool("fuse", "one.fuse", cwd=tmp_path).stdout.decode().splitlines()
    heads = [n for n, line in enumerate(out) if line.startswith("one.fuse:")]
    assert out[-1] == "1 file checked: 400 errors" and len(heads) == 400
    for k, n in enumerate(heads):
        head, quoted, carets = out[n:n + 3]
        column = program.index(f"Q{k}[")
        assert head.startswith(f"one.fuse:1:{column + 1}: error[undefined-tensor]: `Q{k}` ")
        assert len(quoted) <= len("1 | ...") + 240 + len("...")
        cut_before, cut_after = quoted.startswith("1 | ..."), quoted.endswith("...")
        assert cut_before or quoted.startswith(f"1 | {program[:200]}")
        assert cut_after or program.endswith(quoted[-50:] + "\n")
        start = carets.index("^")
        assert carets[start:] == "^" * len(f"Q{k}") and quoted[start:].startswith(f"Q{k}[")
