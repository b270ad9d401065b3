"""`fuse check`, `fuse explain` and `fuse-lsp --check` as a user runs them."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 120

LINE_RE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): "
                     r"(?P<severity>error|warning|information|hint)\[(?P<code>[a-z-]+)\]: (?P<message>.+)$")


def run(module: str, *args: str, cwd: Path | None = None):
    proc = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          encoding="utf-8", cwd=cwd, timeout=TIMEOUT)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def fuse(*args: str, cwd: Path | None = None):
    return run("fuse_lang.cli", *args, cwd=cwd)


def fuse_lsp(*args: str, cwd: Path | None = None):
    return run("fuse_lsp.cli", *args, cwd=cwd)


GOOD = """\
A[i] = const([1, 2, 3])
B[i,j] = const([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
Y[j] = A[i] B[i,j]
export Y
"""

UNDEFINED = """\
A[i] = const([1, 2, 3])
Y[i] = A[i] + Missing[i]
export Y
"""

ATTENTION = """\
axis p = 4
axis d = 8
axis dk = 2
X[p,d] = const([[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8]])
WQ[dk,d] = const([[1,0,0,0,0,0,0,0],[0,1,0,0,0,0,0,0]])
Query[p,dk] = WQ[dk,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Query[p',dk])
export Comp
"""


@pytest.fixture
def files(tmp_path):
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path
    write("good.fuse", GOOD)
    write("undefined.fuse", UNDEFINED)
    write("syntax.fuse", "Y[i] = W[i,j] +\nZ[i j] = A[i]\n")
    write("tabs.fuse", "A[i] = const([1, 2])\n\tY[i] =\tA[i] +\tNope[i]\nexport Y\n")
    write("attention.fuse", ATTENTION)
    return tmp_path


# ------------------------------------------------------------------ check: text


def test_check_clean_file(files):
    proc = fuse("check", "good.fuse", cwd=files)
    assert proc.returncode == 0
    assert [line for line in proc.stdout.splitlines() if LINE_RE.match(line)
            and "error" in line] == []
    assert proc.stdout.splitlines()[-1].startswith("1 file checked")
    assert proc.stderr == ""


def test_check_text_format(files):
    proc = fuse("check", "undefined.fuse", cwd=files)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    m = LINE_RE.match(lines[0])
    assert m, lines[0]
    assert m["path"] == "undefined.fuse"
    assert (m["line"], m["col"]) == ("2", "15")
    assert m["severity"] == "error" and m["code"] == "undefined-tensor"
    assert "Missing" in m["message"]
    # the source line, then a caret line under the offending column
    assert lines[1] == "2 | Y[i] = A[i] + Missing[i]"
    caret = lines[2]
    assert caret.index("^") == lines[1].index("Missing")
    assert caret.strip() == "^" * len("Missing")
    assert lines[-1] == "1 file checked: 1 error"


def test_caret_lines_up_after_tabs(files):
    proc = fuse("check", "tabs.fuse", cwd=files)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    k = next(n for n, line in enumerate(lines) if LINE_RE.match(line)
             and "undefined-tensor" in line)
    m = LINE_RE.match(lines[k])
    assert (m["line"], m["col"]) == ("2", "16")
    source, caret = lines[k + 1], lines[k + 2]
    # the same tabs before the caret as before the name, so any tab width lines up
    assert caret.expandtabs(8).index("^") == source.expandtabs(8).index("Nope")
    assert caret.expandtabs(4).index("^") == source.expandtabs(4).index("Nope")


def test_check_syntax_errors_text(files):
    proc = fuse("check", "syntax.fuse", cwd=files)
    assert proc.returncode == 1
    heads = [LINE_RE.match(line) for line in proc.stdout.splitlines()]
    heads = [m for m in heads if m]
    assert [(m["line"], m["col"], m["code"]) for m in heads] == [
        ("1", "16", "syntax-error"), ("2", "3", "invalid-index")]
    assert heads[0]["message"] == "missing an operand after the operator"


def test_check_several_paths(files):
    proc = fuse("check", "good.fuse", "undefined.fuse", "syntax.fuse", cwd=files)
    assert proc.returncode == 1
    paths = [LINE_RE.match(line)["path"] for line in proc.stdout.splitlines()
             if LINE_RE.match(line) and " error[" in line]
    assert "undefined.fuse" in paths and "syntax.fuse" in paths
    assert "good.fuse" not in paths
    assert paths.index("undefined.fuse") < paths.index("syntax.fuse")
    assert proc.stdout.splitlines()[-1].startswith("3 files checked: ")


def test_check_exit_status_zero_when_only_warnings_or_hints(files):
    path = files / "unused.fuse"
    path.write_text("A[i] = const([1, 2])\nB[i] = A[i]\n", encoding="utf-8")
    proc = fuse("check", "--format", "json", "unused.fuse", cwd=files)
    diags = json.loads(proc.stdout)["diagnostics"]
    assert all(d["severity"] != "error" for d in diags)
    assert proc.returncode == 0


# ------------------------------------------------------------------ check: json


def test_check_json_format(files):
    proc = fuse("check", "--format", "json", "undefined.fuse", cwd=files)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert list(data) == ["diagnostics"]
    (d,) = [d for d in data["diagnostics"] if d["severity"] == "error"]
    for key in ("path", "line", "column", "end_line", "end_column", "severity", "code",
                "message"):
        assert key in d
    assert d["path"] == "undefined.fuse"
    assert (d["line"], d["column"], d["end_line"], d["end_column"]) == (2, 15, 2, 22)
    assert d["code"] == "undefined-tensor"


def test_check_json_is_one_based(files):
    path = files / "first.fuse"
    path.write_text("@\n", encoding="utf-8")
    proc = fuse("check", "--format", "json", "first.fuse", cwd=files)
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert (d["line"], d["column"], d["end_line"], d["end_column"]) == (1, 1, 1, 2)
    assert d["code"] == "invalid-character"


def test_check_json_matches_text(files):
    text = fuse("check", "syntax.fuse", "undefined.fuse", cwd=files)
    js = fuse("check", "--format", "json", "syntax.fuse", "undefined.fuse", cwd=files)
    assert text.returncode == js.returncode == 1
    heads = [LINE_RE.match(line) for line in text.stdout.splitlines()]
    from_text = [(m["path"], int(m["line"]), int(m["col"]), m["severity"], m["code"], m["message"])
                 for m in heads if m]
    from_json = [(d["path"], d["line"], d["column"], d["severity"], d["code"], d["message"])
                 for d in json.loads(js.stdout)["diagnostics"]]
    assert from_text == from_json


def test_check_json_clean(files):
    proc = fuse("check", "--format", "json", "good.fuse", cwd=files)
    assert proc.returncode == 0
    assert [d for d in json.loads(proc.stdout)["diagnostics"] if d["severity"] == "error"] == []


def test_check_usage_errors(files):
    assert fuse("check", cwd=files).returncode == 2
    assert fuse("check", "--format", "yaml", "good.fuse", cwd=files).returncode == 2
    proc = fuse("check", "nope.fuse", cwd=files)
    assert proc.returncode == 2 and "nope.fuse" in proc.stderr


def test_help_exits_zero():
    proc = fuse("--help")
    assert proc.returncode == 0
    assert "check" in proc.stdout and "explain" in proc.stdout
    proc = fuse("check", "--help")
    assert proc.returncode == 0 and "--format" in proc.stdout


# ------------------------------------------------------------------ explain


def test_explain_text(files):
    proc = fuse("explain", "attention.fuse", cwd=files)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("Tensors\n")
    table = out.split("\n\n")[0].splitlines()
    assert table[1].split() == ["tensor", "shape"]
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in table[3:]}
    assert rows["Query"] == "(4, 2)"
    assert rows["Comp"] == "(4, 4)"
    assert rows["X"] == "(4, 8)"
    assert "Evaluation order" in out
    assert "line 6: Query[p,dk] = WQ[dk,d] X[p,d]" in out
    assert "einsum " in out
    assert "(WQ[dk,d] X[p,d] -> [p,dk])" in out
    assert re.search(r"^\s+d\s+8\s+D\d+\s+projected \(sum\) in right-hand side", out, re.M)
    assert "argument of softmax" in out
    assert "Total: " in out


def test_explain_json(files):
    proc = fuse("explain", "--format", "json", "attention.fuse", cwd=files)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for key in ("equations", "order", "shapes", "diagnostics"):
        assert key in data
    shapes = {name: shape for name, shape in data["shapes"]}
    assert shapes["Query"] == [4, 2] and shapes["Comp"] == [4, 4]
    order = [name for group in data["order"] for name in group]
    assert order.index("Query") < order.index("Comp")
    (query,) = [e for e in data["equations"] if e["tensor"] == "Query"]
    assert query["line"] == 6
    assert query["output"] == ["p", "dk"]
    assert [p[:2] for p in query["projected"]] == [["d", "sum"]]
    (comp,) = [e for e in data["equations"] if e["tensor"] == "Comp"]
    assert [p[0] for p in comp["projected"]] == ["dk"]
    assert data["diagnostics"] == [] or all(d["severity"] != "error"
                                            for d in data["diagnostics"])


def test_explain_with_errors(files):
    proc = fuse("explain", "undefined.fuse", cwd=files)
    assert proc.returncode == 1
    assert "undefined-tensor" in proc.stderr
    proc = fuse("explain", "--format", "json", "undefined.fuse", cwd=files)
    assert proc.returncode == 1
    codes = [d["code"] for d in json.loads(proc.stdout)["diagnostics"]]
    assert "undefined-tensor" in codes


def test_explain_takes_one_path(files):
    proc = fuse("explain", "good.fuse", "undefined.fuse", cwd=files)
    assert proc.returncode == 2


# ------------------------------------------------------------------ fuse-lsp --check


@pytest.mark.parametrize("names", [["undefined.fuse"], ["good.fuse", "syntax.fuse", "tabs.fuse"]])
def test_lsp_check_json_equals_fuse_check(files, names):
    lsp = fuse_lsp("--check", "--format", "json", *names, cwd=files)
    cli = fuse("check", "--format", "json", *names, cwd=files)
    assert lsp.returncode == cli.returncode
    assert json.loads(lsp.stdout) == json.loads(cli.stdout)
    assert lsp.stdout == cli.stdout


def test_lsp_check_text_equals_fuse_check(files):
    lsp = fuse_lsp("--check", "undefined.fuse", "syntax.fuse", cwd=files)
    cli = fuse("check", "undefined.fuse", "syntax.fuse", cwd=files)
    assert lsp.returncode == cli.returncode == 1
    assert lsp.stdout == cli.stdout


def test_lsp_check_usage(files):
    proc = fuse_lsp("--check", cwd=files)
    assert proc.returncode == 2 and "PATH" in proc.stderr
    proc = fuse_lsp("--check", "nope.fuse", cwd=files)
    assert proc.returncode == 2 and "nope.fuse" in proc.stderr
    proc = fuse_lsp("--check", "--format", "xml", "good.fuse", cwd=files)
    assert proc.returncode == 2


def test_installed_scripts(files):
    import shutil
    exe = shutil.which("fuse")
    if exe is None:
        pytest.skip("the fuse script is not on PATH")
    proc = subprocess.run([exe, "check", "--format", "json", "undefined.fuse"], cwd=files,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == json.loads(
        fuse("check", "--format", "json", "undefined.fuse", cwd=files).stdout)


def test_a_large_report_reaches_a_pipe_whole_and_a_closed_pipe_is_no_error(tmp_path):
    # `fuse check` ends without tearing the interpreter down: what it printed must
    # still all arrive, and a reader that stops early must not cause a traceback
    text = "".join(f"U{k}[i] = Missing{k}[i]\n" for k in range(400))
    (tmp_path / "many.fuse").write_text(text, encoding="utf-8")
    proc = fuse("check", "many.fuse", cwd=tmp_path)
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if LINE_RE.match(line)]
    assert len(lines) >= 400
    assert proc.stdout.rstrip().splitlines()[-1].startswith("1 file checked: 400 errors")
    data = json.loads(fuse("check", "--format", "json", "many.fuse", cwd=tmp_path).stdout)
    assert len(data["diagnostics"]) == len(lines)
    head = subprocess.run(f'"{sys.executable}" -m fuse_lang.cli check many.fuse | head -n 1',
                          shell=True, cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert LINE_RE.match(head.stdout.strip())
    assert "Traceback" not in head.stderr and "Exception" not in head.stderr
