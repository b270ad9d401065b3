"""Hostile input through the real command line, in a subprocess: every case ends
with a clear message or diagnostic, the right exit status and no traceback.

The timeouts are hang guards, not timing assertions."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

HANG_GUARD = 120
BIG_HANG_GUARD = 300  # 5 MB programs: a guard against hangs on slow machines


def fuse(*args: str, cwd: Path | None = None, timeout: int = HANG_GUARD):
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", errors="replace", cwd=cwd,
                          timeout=timeout)
    assert "Traceback" not in proc.stdout, proc.stdout[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def check_json(path: Path, timeout: int = HANG_GUARD):
    proc = fuse("check", "--format", "json", str(path), timeout=timeout)
    data = json.loads(proc.stdout)
    return proc, data["diagnostics"]


def test_binary_file(tmp_path):
    path = tmp_path / "model.fuse"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 8)
    proc, diags = check_json(path)
    assert proc.returncode == 1
    assert [d["code"] for d in diags] == ["invalid-encoding"]
    assert "binary" in diags[0]["message"]
    text = fuse("check", str(path))
    assert text.returncode == 1
    assert "error[invalid-encoding]" in text.stdout


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.fuse"
    path.write_bytes("Y = A\n# caf\u00e9\n".encode("latin-1"))
    proc, diags = check_json(path)
    assert proc.returncode == 1
    (d,) = diags
    assert d["code"] == "invalid-encoding"
    assert "UTF-8" in d["message"]
    assert (d["line"], d["column"]) == (2, 6)


def test_utf8_with_bom_is_fine(tmp_path):
    path = tmp_path / "bom.fuse"
    path.write_bytes(b"\xef\xbb\xbfY = 1\nexport Y\n")
    proc, diags = check_json(path)
    assert proc.returncode == 0, diags
    assert [d for d in diags if d["severity"] == "error"] == []


def test_empty_file(tmp_path):
    path = tmp_path / "empty.fuse"
    path.write_bytes(b"")
    proc, diags = check_json(path)
    assert proc.returncode == 0 and diags == []
    text = fuse("check", str(path))
    assert text.returncode == 0
    assert "no problems" in text.stdout
    explain = fuse("explain", str(path))
    assert explain.returncode == 0


def _big_valid(path: Path, target: int) -> int:
    head = "axis i = 4\naxis j = 4\naxis k = 4\nW[i,k] = const([[1,2,3,4],[1,2,3,4],[1,2,3,4],[1,2,3,4]])\n"
    parts = [head]
    size = len(head)
    k = 0
    while size < target:
        line = f"T{k}[i,j] = W[i,k] W[k,j] + W[j,i]\n"
        parts.append(line)
        size += len(line)
        k += 1
    path.write_text("".join(parts), encoding="utf-8")
    return size


def test_five_megabytes_of_valid_statements_are_refused_with_the_limit(tmp_path):
    path = tmp_path / "big.fuse"
    assert _big_valid(path, 5_000_000) >= 5_000_000
    proc = fuse("check", str(path))
    assert proc.returncode == 2
    assert "5.0 MB" in proc.stderr and "up to 2 MB" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_megabyte_of_valid_statements_checks_clean(tmp_path):
    path = tmp_path / "big.fuse"
    assert _big_valid(path, 1_000_000) >= 1_000_000
    proc, diags = check_json(path, timeout=BIG_HANG_GUARD)
    errors = [d for d in diags if d["severity"] == "error"]
    assert errors == []
    assert proc.returncode == 0


def test_five_megabytes_of_garbage_are_refused_with_the_limit(tmp_path):
    path = tmp_path / "garbage.fuse"
    path.write_text(_garbage(5_000_000), encoding="utf-8")
    proc = fuse("check", str(path))
    assert proc.returncode == 2
    assert "MB" in proc.stderr and "Traceback" not in proc.stderr


def _garbage(size: int) -> str:
    rng = random.Random(1234)
    alphabet = "abcXYZ[](){}=+-*/^,.:;?#\"' \n0123456789@$\t"
    return "".join(rng.choice(alphabet) for _ in range(size))


def test_two_megabytes_of_garbage(tmp_path):
    path = tmp_path / "garbage.fuse"
    path.write_text(_garbage(2_000_000), encoding="utf-8")
    proc, diags = check_json(path, timeout=BIG_HANG_GUARD)
    assert proc.returncode == 1
    assert diags, "garbage must be reported"
    assert diags[-1]["code"] == "too-many-errors" or len(diags) < 250
    for d in diags[:50]:
        assert d["line"] >= 1 and d["column"] >= 1 and d["message"]
    text = fuse("check", str(path), timeout=BIG_HANG_GUARD)
    assert text.returncode == 1
    assert "checked:" in text.stdout


def test_file_over_the_size_limit(tmp_path):
    path = tmp_path / "huge.fuse"
    path.write_bytes(b"Y = 1\n" * (2 * 1024 * 1024))  # 12 MB
    proc = fuse("check", str(path))
    assert proc.returncode == 2
    assert "MB" in proc.stderr and str(path) in proc.stderr


def test_ten_thousand_nested_parentheses(tmp_path):
    path = tmp_path / "deep.fuse"
    path.write_text("Y = " + "(" * 10_000 + "1" + ")" * 10_000 + "\nZ = 2\n", encoding="utf-8")
    proc, diags = check_json(path)
    assert proc.returncode == 1
    assert [d["code"] for d in diags if d["severity"] == "error"] == ["nesting-too-deep"]
    assert diags[0]["line"] == 1
    text = fuse("check", str(path))
    assert text.returncode == 1 and "nesting-too-deep" in text.stdout
    explain = fuse("explain", str(path))
    assert explain.returncode == 1


def test_ten_thousand_unclosed_parentheses(tmp_path):
    path = tmp_path / "open.fuse"
    path.write_text("Y = " + "(" * 10_000 + "\n", encoding="utf-8")
    proc, diags = check_json(path)
    assert proc.returncode == 1
    assert diags and diags[0]["code"] in ("nesting-too-deep", "unclosed-bracket")


def test_deep_operator_chain(tmp_path):
    path = tmp_path / "chain.fuse"
    path.write_text("Y = " + "- " * 10_000 + "1\n" + "Z = " + "2^" * 10_000 + "1\n",
                    encoding="utf-8")
    proc, diags = check_json(path)
    assert proc.returncode in (0, 1)
    for d in diags:
        assert d["message"]
    assert fuse("explain", str(path)).returncode in (0, 1)


def test_unterminated_string(tmp_path):
    path = tmp_path / "str.fuse"
    path.write_text('A = 1\nW[i] = "weights.npy\nB = 2\n', encoding="utf-8")
    proc, diags = check_json(path)
    assert proc.returncode == 1
    errors = [d for d in diags if d["severity"] == "error"]
    assert [(d["code"], d["line"], d["column"]) for d in errors] == [("unterminated-string", 2, 8)]
    assert "closing" in errors[0]["message"]


def test_unterminated_bracket(tmp_path):
    path = tmp_path / "bracket.fuse"
    path.write_text("A = 1\nY[i] = sig(W[i,j] X[j]\nB = 2\n", encoding="utf-8")
    proc, diags = check_json(path)
    assert proc.returncode == 1
    errors = [d for d in diags if d["severity"] == "error"]
    assert [(d["code"], d["line"], d["column"]) for d in errors] == [("unclosed-bracket", 2, 11)]
    assert "never closed" in errors[0]["message"]


def test_directory_as_path(tmp_path):
    proc = fuse("check", str(tmp_path))
    assert proc.returncode == 2
    assert "folder" in proc.stderr and str(tmp_path) in proc.stderr
    proc = fuse("explain", str(tmp_path))
    assert proc.returncode == 2
    assert "folder" in proc.stderr


def test_missing_path(tmp_path):
    missing = tmp_path / "nope.fuse"
    proc = fuse("check", str(missing))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and str(missing) in proc.stderr
    proc = fuse("explain", str(missing))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr


def test_missing_path_among_good_ones(tmp_path):
    good = tmp_path / "good.fuse"
    good.write_text("Y = 1\nexport Y\n", encoding="utf-8")
    proc = fuse("check", "--format", "json", str(good), str(tmp_path / "nope.fuse"))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr
    assert json.loads(proc.stdout)["diagnostics"] == []


def test_no_arguments():
    proc = fuse()
    assert proc.returncode == 2
    assert "usage" in proc.stderr.lower()
    assert "check" in proc.stderr


def test_check_without_paths():
    proc = fuse("check")
    assert proc.returncode == 2
    assert "PATH" in proc.stderr


def test_explain_without_path():
    proc = fuse("explain")
    assert proc.returncode == 2
    assert "PATH" in proc.stderr


def test_bad_format(tmp_path):
    path = tmp_path / "a.fuse"
    path.write_text("Y = 1\n", encoding="utf-8")
    for command in ("check", "explain"):
        proc = fuse(command, "--format", "xml", str(path))
        assert proc.returncode == 2
        assert "xml" in proc.stderr and "json" in proc.stderr
        assert proc.stdout == ""


def test_unknown_command():
    proc = fuse("frobnicate")
    assert proc.returncode == 2
    assert "frobnicate" in proc.stderr


def test_unknown_option(tmp_path):
    path = tmp_path / "a.fuse"
    path.write_text("Y = 1\n", encoding="utf-8")
    proc = fuse("check", "--colour", str(path))
    assert proc.returncode == 2
    assert "--colour" in proc.stderr


@pytest.mark.parametrize("payload", [
    "\u2028Y = 1\u2029\n",           # unicode line separators
    "Y = A\u00a0+ B\n",               # no-break space
    "\r\r\r\nY = 1\r",                # bare carriage returns
    "Y = \U0001F600\n",               # emoji (astral plane)
    "\t\t\t",                         # whitespace only
])
def test_odd_text(tmp_path, payload):
    path = tmp_path / "odd.fuse"
    path.write_text(payload, encoding="utf-8", newline="")
    proc, diags = check_json(path)
    assert proc.returncode in (0, 1)
    assert (proc.returncode == 1) == any(d["severity"] == "error" for d in diags)
    text = fuse("check", str(path))
    assert text.returncode == proc.returncode
