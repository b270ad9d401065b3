"""`fuse run` as a user runs it: output, --format json, --out, --input, exit codes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

TIMEOUT = 120


def fuse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", cwd=cwd, timeout=TIMEOUT)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


PROGRAM = """\
Parent(Alice, Bob)
Parent(Bob, Carol)
Parent(Carol, Dave)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
W[i,j] = "data/w.npy"
X[j] = "data/x.npy"
Y[i] = W[i,j] X[j]
Ancestor(Alice, x)?
Ancestor(Alice, Dave)?
Ancestor(Dave, Alice)?
Y?
export Y, Ancestor
"""

W = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
X = np.array([1.0, 1.0, 2.0])


@pytest.fixture
def program(tmp_path) -> Path:
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "w.npy", W)
    np.save(tmp_path / "data" / "x.npy", X)
    path = tmp_path / "prog.fuse"
    path.write_text(PROGRAM)
    return path


def test_text_output_lists_exports_and_query_answers(program):
    proc = fuse("run", str(program))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    y = next(line for line in lines if line.startswith("Y "))
    assert "shape (2,)" in y and "float32" in y and "[3, -1]" in y
    anc = next(line for line in lines if line.startswith("Ancestor "))
    assert anc == "Ancestor  6 tuples"  # a relation: its tuples of values, sorted by value
    at = lines.index(anc)
    assert lines[at + 1:at + 7] == ["  (Alice, Bob)", "  (Alice, Carol)", "  (Alice, Dave)",
                                    "  (Bob, Carol)", "  (Bob, Dave)", "  (Carol, Dave)"]
    assert lines.index(y) < lines.index(anc)  # in export order
    down = next(line for line in lines if line.startswith("Ancestor(Alice, x)?"))
    assert down.split("?", 1)[1].split() == ["Bob;", "Carol;", "Dave"]
    assert next(line for line in lines if line.startswith("Ancestor(Alice, Dave)?")) \
        .endswith("yes")
    assert next(line for line in lines if line.startswith("Ancestor(Dave, Alice)?")) \
        .endswith("no")
    assert any(line.startswith("Y?") and "[3, -1]" in line for line in lines)


def test_json_output(program):
    proc = fuse("run", "--format", "json", str(program))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data["outputs"]) == ["Y", "Ancestor"]
    assert data["outputs"]["Y"]["shape"] == [2]
    assert data["outputs"]["Y"]["dtype"] == "float32"
    np.testing.assert_allclose(data["outputs"]["Y"]["values"], W @ X)
    ancestor = data["outputs"]["Ancestor"]  # a relation: its tuples of values and their count
    assert ancestor["shape"] == [4, 4] and "values" not in ancestor
    assert ancestor["count"] == 6 and ancestor["tuples"] == [
        ["Alice", "Bob"], ["Alice", "Carol"], ["Alice", "Dave"], ["Bob", "Carol"],
        ["Bob", "Dave"], ["Carol", "Dave"]]
    queries = {q["query"]: q for q in data["queries"]}
    down = queries["Ancestor(Alice, x)?"]
    assert down["tensor"] == "Ancestor" and down["free"] == ["x"]
    assert down["tuples"] == [["Bob"], ["Carol"], ["Dave"]]
    assert queries["Ancestor(Alice, Dave)?"]["tuples"] == [[]]
    assert queries["Ancestor(Dave, Alice)?"]["tuples"] == []
    assert "tuples" not in queries["Y?"]
    assert queries["Y?"]["values"] == [3.0, -1.0]
    assert data["sinks"] == []


def test_out_writes_one_npz_keyed_by_export_names(program, tmp_path):
    out = tmp_path / "results" / "all.npz"
    proc = fuse("run", str(program), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    with np.load(out) as archive:
        assert sorted(archive.files) == ["Ancestor", "Y"]
        np.testing.assert_allclose(archive["Y"], W @ X)
        assert archive["Ancestor"].shape == (4, 4)
    assert not [p for p in out.parent.iterdir() if p.name != "all.npz"]  # no temporary left


def test_input_overrides_a_source_file(program, tmp_path):
    given = tmp_path / "other_x.npy"
    np.save(given, np.array([0.0, 1.0, 0.0]))
    proc = fuse("run", str(program), "--input", f"X={given}", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(json.loads(proc.stdout)["outputs"]["Y"]["values"], [2.0, 1.0])


def test_inputs_of_a_new_shape(program, tmp_path):
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(5, 4)), rng.normal(size=4)
    np.save(tmp_path / "w5.npy", w)
    np.save(tmp_path / "x4.npy", x)
    proc = fuse("run", str(program), "--input", f"W={tmp_path / 'w5.npy'}",
                "--input", f"X={tmp_path / 'x4.npy'}", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    y = json.loads(proc.stdout)["outputs"]["Y"]
    assert y["shape"] == [5]
    np.testing.assert_allclose(y["values"], w @ x, rtol=1e-5)


def test_input_from_an_npz(program, tmp_path):
    np.savez(tmp_path / "in.npz", X=np.array([1.0, 0.0, 0.0]), Other=np.zeros(7))
    proc = fuse("run", str(program), "--input", f"X={tmp_path / 'in.npz'}", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(json.loads(proc.stdout)["outputs"]["Y"]["values"], [1.0, 0.0])


def test_sources_and_sinks_are_relative_to_the_program_file(program, tmp_path):
    program.write_text(PROGRAM + '"out/y.npy" = Y[i]\n"out/anc.tsv" = Ancestor(x,y)\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = fuse("run", str(program), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), W @ X)
    rows = (tmp_path / "out" / "anc.tsv").read_text().splitlines()
    assert "Alice\tDave" in rows and len(rows) == 6
    assert "wrote" in proc.stdout
    assert not list(elsewhere.iterdir())


def test_relative_program_path(program):
    proc = fuse("run", program.name, cwd=program.parent)
    assert proc.returncode == 0, proc.stderr
    assert "[3, -1]" in proc.stdout


# ------------------------------------------------------------------ exit status 1


def _one_paragraph(stderr: str) -> str:
    text = stderr.strip()
    assert text and "\n\n" not in text, stderr
    return text


def test_program_with_errors_exits_1_with_diagnostics(tmp_path):
    path = tmp_path / "bad.fuse"
    path.write_text("A[i] = const([1, 2])\nY[i] = Missing[i]\nexport Y\n")
    proc = fuse("run", str(path))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"{path}:2:8: error[undefined-tensor]" in proc.stderr


def test_non_convergence_exits_1_naming_the_statement_and_line(tmp_path):
    path = tmp_path / "grow.fuse"
    path.write_text("axis i = 2\nOne[i] = 1\nGrow[i] = 2 Grow[i] + One[i]\nexport Grow\n")
    proc = fuse("run", str(path))
    assert proc.returncode == 1
    message = _one_paragraph(proc.stderr)
    assert message.startswith("fuse: ")
    assert "line 3" in message and "Grow[i] = 2 Grow[i] + One[i]" in message
    assert "did not converge" in message and "last change" in message


def test_an_unknown_extent_is_an_error_of_check_and_of_run(tmp_path):
    # what the run refuses before computing, `fuse check` reports as an error
    path = tmp_path / "extent.fuse"
    path.write_text("A[i] = const([1, 2])\nB[i,k] = A[i]\nexport B\n")
    checked = fuse("check", str(path))
    assert checked.returncode == 1
    assert f"{path}:2:1: error[unsized-tensor]: `B`'s axis `k`" in checked.stdout
    proc = fuse("run", str(path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{path}:2:1: error[unsized-tensor]" in proc.stderr
    assert "2 | B[i,k] = A[i]" in proc.stderr


def test_a_recursion_of_unknown_extent_is_an_error_of_check(tmp_path):
    path = tmp_path / "grow.fuse"
    path.write_text("X[i] = X[i] + 1\n")
    checked = fuse("check", "--format", "json", str(path))
    assert checked.returncode == 1
    codes = {(d["code"], d["severity"]) for d in json.loads(checked.stdout)["diagnostics"]}
    assert ("unsized-tensor", "error") in codes
    assert fuse("run", str(path)).returncode == 1


def test_an_extent_an_input_gives_is_no_error_of_check(tmp_path):
    # W's extent comes from the input given for it: the run given it accepts the file
    path = tmp_path / "param.fuse"
    path.write_text("param W[i]\nY[i] = W[i] * 2\nexport Y\n")
    assert fuse("check", str(path)).returncode == 0
    np.save(tmp_path / "w.npy", np.ones(3))
    proc = fuse("run", str(path), "--input", f"W={tmp_path / 'w.npy'}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Y  shape (3,)")


BROKEN_ASIDE = """\
axis i = 3
A[i] = const([1,2,3])
B[i] = A[i] * 2
C[i] = Nope[i] + 1
D = 1 +* 2
export B
"""


def test_the_whole_document_runs_its_exports_past_an_unrelated_error(tmp_path):
    path = tmp_path / "aside.fuse"
    path.write_text(BROKEN_ASIDE)
    proc = fuse("run", str(path))
    assert proc.returncode == 1  # the program has errors
    assert proc.stdout.startswith("B  shape (3,)  float32  [2, 4, 6]")
    assert f"fuse: {path}: not run (errors): C, D = 1 +* 2" in proc.stderr
    assert f"fuse: {path}:4: C was not run: `Nope` is not defined [undefined-tensor]" \
        in proc.stderr
    data = json.loads(fuse("run", str(path), "--format", "json").stdout)
    assert data["outputs"]["B"]["values"] == [2.0, 4.0, 6.0]
    assert [(n["what"], n["line"]) for n in data["not_run"]] == [("C", 4), ("D = 1 +* 2", 5)]
    assert data["not_run"][0]["reason"] == "`Nope` is not defined [undefined-tensor]"


def test_an_error_the_exports_need_still_refuses_the_run(tmp_path):
    path = tmp_path / "needed.fuse"
    path.write_text(BROKEN_ASIDE.replace("export B", "export B, C"))
    proc = fuse("run", str(path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{path}:4:8: error[undefined-tensor]" in proc.stderr
    assert f"{path}:5:" in proc.stderr  # every error is still shown


def test_a_document_without_exports_is_every_tensor(tmp_path):
    path = tmp_path / "all.fuse"
    path.write_text(BROKEN_ASIDE.replace("export B\n", ""))
    proc = fuse("run", str(path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert "`Nope` is not defined" in proc.stderr


def test_sink_outside_the_folder_exits_1(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    path = folder / "p.fuse"
    path.write_text('A[i] = const([1, 2])\n"../escape.npy" = A[i]\n')
    proc = fuse("run", str(path))
    assert proc.returncode == 1
    message = _one_paragraph(proc.stderr)
    assert "line 2" in message and "outside" in message and "--allow-outside-sinks" in message
    assert not (tmp_path / "escape.npy").exists()
    # allowed explicitly, as the message says (LANGUAGE.md §9)
    proc = fuse("run", "--allow-outside-sinks", str(path))
    assert proc.returncode == 0, proc.stderr
    assert np.load(tmp_path / "escape.npy").tolist() == [1, 2]


def test_a_failed_run_writes_no_out_file(tmp_path):
    path = tmp_path / "grow.fuse"
    path.write_text("axis i = 2\nOne[i] = 1\nGrow[i] = 2 Grow[i] + One[i]\nexport Grow\n")
    proc = fuse("run", str(path), "--out", str(tmp_path / "o.npz"))
    assert proc.returncode == 1
    assert not (tmp_path / "o.npz").exists()


# ------------------------------------------------------------------ exit status 2


@pytest.mark.parametrize("make_args", [
    lambda p, t: ["run", str(t / "nope.fuse")],
    lambda p, t: ["run", str(t)],  # a folder
    lambda p, t: ["run", str(p), "--input", "X"],
    lambda p, t: ["run", str(p), "--input", "=x.npy"],
    lambda p, t: ["run", str(p), "--input", f"X={t / 'missing.npy'}"],
    lambda p, t: ["run", str(p), "--input", f"X={t}"],
    lambda p, t: ["run", str(p), "--input", f"X={t / 'garbage.npy'}"],
    lambda p, t: ["run", str(p), "--input", f"Y={t / 'data' / 'x.npy'}"],  # not a source
    lambda p, t: ["run", str(p), "--input", f"Nope={t / 'data' / 'x.npy'}"],
    lambda p, t: ["run", str(p), "--format", "yaml"],
    lambda p, t: ["run", str(p), "--no-such-option"],
    lambda p, t: ["run"],
    lambda p, t: ["run", str(p), "--out", str(t / "blocker" / "o.npz")],
], ids=["missing-program", "folder", "input-no-equals", "input-no-name", "input-missing-file",
        "input-folder", "input-garbage", "input-not-a-source", "input-unknown-name",
        "bad-format", "unknown-option", "no-path", "out-unwritable"])
def test_usage_and_io_problems_exit_2(program, tmp_path, make_args):
    (tmp_path / "garbage.npy").write_text("not an array")
    (tmp_path / "blocker").write_text("a file, not a folder")
    proc = fuse(*make_args(program, tmp_path))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("fuse: "), proc.stderr
    lines = proc.stderr.strip().splitlines()
    # one line, and for a usage problem the command's usage after it
    assert len(lines) == 1 or lines[1].startswith("usage: fuse"), proc.stderr


def test_input_not_a_source_names_the_sources(program):
    proc = fuse("run", str(program), "--input", f"Y={program.parent / 'data' / 'x.npy'}")
    assert proc.returncode == 2
    assert "`Y`" in proc.stderr and "W" in proc.stderr and "X" in proc.stderr


def test_help_exits_0():
    proc = fuse("run", "--help")
    assert proc.returncode == 0
    assert "--input" in proc.stdout and "--out" in proc.stdout


def test_out_with_export_names_that_are_savez_arguments(tmp_path):
    path = tmp_path / "names.fuse"
    path.write_text("file = const(1)\nallow_pickle = const([2, 3])\n"
                    '"n.npz" = file\nexport file, allow_pickle\n')
    proc = fuse("run", str(path), "--out", str(tmp_path / "o.npz"))
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as archive:
        assert sorted(archive.files) == ["allow_pickle", "file"]
        assert float(archive["file"]) == 1.0
        np.testing.assert_array_equal(archive["allow_pickle"], [2, 3])
    with np.load(tmp_path / "n.npz") as archive:
        assert archive.files == ["file"]


def test_a_malformed_importance_flag_is_a_usage_error(tmp_path, capsys):
    from fuse_lang.cli import main

    path = tmp_path / "mc.fuse"
    path.write_text("axis i = 3, j = 4\nparam A[i,j], B[j]\nY[i] = A[i,j] B[j]\nexport Y\n",
                    encoding="utf-8")
    assert main(["run", str(path), "--projection", "monte_carlo", "--importance", "bad"]) == 2
    err = capsys.readouterr().err
    assert "--importance takes TENSOR=WEIGHTS, not 'bad'" in err
    assert "internal error" not in err


def test_a_numeric_query_over_values_says_which_value_each_number_is(tmp_path):
    """`Count[x]?` over names, or over ints that are values (§14), gives each number
    after its key in the text, and the keys by position in the JSON; a query over
    positions stays as it was."""
    path = tmp_path / "count.fuse"
    path.write_text("E(Bob, Carol)\nE(Alice, Bob)\nE(Alice, Carol)\nN(10, 1)\nN(-3, 1)\n"
                    "Count[x] = E(x, y)\nCount[x]?\nPair[x,y] = 2 E(x,y)\nPair[Alice,y]?\n"
                    "Ids[n] = N(n, m)\nIds[n]?\nX[i] = const([1,2,3])\nX[i]?\n")
    text = fuse("run", str(path)).stdout.splitlines()
    # (by position along the axis: a symbol's is where it first appears)
    assert "Count[x]?  shape (2,)  [Bob: 1, Alice: 2]" in text
    assert "Pair[Alice,y]?  shape (2,)  [Carol: 2, Bob: 2]" in text
    assert "Ids[n]?  shape (2,)  [-3: 1, 10: 1]" in text
    assert "X[i]?  shape (3,)  [1, 2, 3]" in text
    queries = json.loads(fuse("run", "--format", "json", str(path)).stdout)["queries"]
    count, pair, ids, plain = queries
    assert count["keys"] == {"x": ["Bob", "Alice"]} and count["values"] == [1.0, 2.0]
    assert pair["keys"] == {"y": ["Carol", "Bob"]} and ids["keys"] == {"n": [-3, 10]}
    assert "keys" not in plain
    result = fuse_lang.compile(path.read_text()).execute()
    assert [list(k) for k in result.queries[0].keys] == [["Bob", "Alice"]]
    assert result.queries[-1].keys is None
