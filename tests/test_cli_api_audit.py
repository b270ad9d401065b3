"""The command line and the Python API used as docs/cli.md and docs/notebooks.md
("The Python API") describe them, at their edges (the CLI/API audit): arguments
of the wrong type to the public functions are a TypeError in words (never an
AttributeError from deep inside), `load("")`, `Relation.tuples`' limit, a
stopped reader of `fuse check` keeps the diagnostics' exit status, and an
abbreviated `--format json` on a refused command line still gets its document."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fuse_lang
from fuse_lang.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "A[i] = const([1, 2, 3])\nexport A\n"
FAMILY = "Parent(Alice, Bob)\nParent(Bob, Carol)\nAnc(x,y) = Parent(x,y)\n" \
         "Anc(x,z) = Anc(x,y) Parent(y,z)\nexport Anc\n"


@pytest.mark.parametrize("call, words", [
    (lambda: fuse_lang.compile(3), "fuse_lang.compile takes a program's text (a str), not int"),
    (lambda: fuse_lang.compile(None), "fuse_lang.compile takes a program's text (a str), not None"),
    (lambda: fuse_lang.compile(b"A[i] = const([1])"), "fuse_lang.decode(data)"),
    (lambda: fuse_lang.compile(PROGRAM, base_dir=3), "compile's base_dir is a path"),
    (lambda: fuse_lang.compile(PROGRAM, path=3), "compile's path is a path"),
    (lambda: fuse_lang.compile(PROGRAM, analysis="A[i] = const([1])"),
     "compile's analysis= takes the Analysis"),
    (lambda: fuse_lang.analyze(3), "fuse_lang.analyze takes a program's text (a str), not int"),
    (lambda: fuse_lang.analyze(b"A[i] = B[i]"), "fuse_lang.decode(data)"),
    (lambda: fuse_lang.analyze(PROGRAM, 3), "analyze's path is a path"),
    (lambda: fuse_lang.analyze(PROGRAM, "a.fuse", base_dir=3), "analyze's base_dir is a path"),
    (lambda: fuse_lang.parse(None), "fuse_lang.parse takes a program's text (a str), not None"),
    (lambda: fuse_lang.decode("A[i] = B[i]"), "fuse_lang.decode takes a file's bytes, not str"),
    (lambda: fuse_lang.decode(memoryview(b"A")),
     "fuse_lang.decode takes a file's bytes, not memoryview"),
    (lambda: fuse_lang.plan_program(PROGRAM), "fuse_lang.plan_program takes a program's "
                                               "Analysis (fuse_lang.analyze(text, path)), not str"),
    (lambda: fuse_lang.plan_program(None), "not None"),
    (lambda: fuse_lang.plot(None), "fuse_lang.plot takes a RunResult"),
    (lambda: fuse_lang.load(3), "fuse_lang.load takes a .fuse file's path (a str or a "
                                "pathlib.Path), not int"),
    (lambda: fuse_lang.load(None), "not None"),
    (lambda: fuse_lang.load(b"a.fuse"), "not bytes"),
])
def test_an_argument_of_the_wrong_type_is_a_type_error_in_words(call, words):
    # (each was an AttributeError or a TypeError from inside: 'int' object has no
    # attribute 'strip', 'str' object has no attribute 'order', argument of type 'int'
    # is not iterable)
    with pytest.raises(TypeError) as err:
        call()
    assert words in str(err.value)


def test_a_path_object_handed_to_compile_says_to_use_load(tmp_path):
    # docs/notebooks.md: a string that looks like a path says to use load; a
    # pathlib.Path said "'PosixPath' object has no attribute 'strip'"
    path = tmp_path / "p.fuse"
    path.write_text(PROGRAM)
    with pytest.raises(TypeError, match=r"use fuse_lang\.load\("):
        fuse_lang.compile(path)
    assert fuse_lang.load(path).execute().outputs["A"].tolist() == [1, 2, 3]


def test_the_right_types_still_work_through_every_entry(tmp_path):
    analysis = fuse_lang.analyze(PROGRAM, tmp_path / "p.fuse", base_dir=tmp_path)
    assert analysis.diagnostics == () or all(
        d.severity is not fuse_lang.Severity.ERROR for d in analysis.diagnostics)
    assert fuse_lang.plan_program(analysis).equations
    assert fuse_lang.parse(PROGRAM).diagnostics == ()
    assert fuse_lang.decode(b"A[i] = B[i]\n")[0] == "A[i] = B[i]\n"
    program = fuse_lang.compile(PROGRAM, analysis=fuse_lang.analyze(PROGRAM), base_dir=tmp_path)
    assert program.execute().outputs["A"].tolist() == [1, 2, 3]


def test_load_of_an_empty_path_says_so_as_fuse_check_does(tmp_path, monkeypatch, capsys):
    # (it said ". is a folder, not a .fuse file": Path("") is the current folder)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(fuse_lang.FuseError, match="^an empty path names no .fuse file$"):
        fuse_lang.load("")
    assert main(["check", ""]) == 2
    assert capsys.readouterr().err == "fuse: an empty path names no .fuse file\n"


@pytest.mark.parametrize("limit, error", [(-1, ValueError), ("3", TypeError),
                                          (2.5, TypeError), (True, TypeError)])
def test_relation_tuples_refuses_a_limit_that_is_no_count(limit, error):
    # -1 gave [] silently; "3" and 2.5 a TypeError from a comparison or a slice
    relation = fuse_lang.compile(FAMILY).execute().relation("Anc")
    with pytest.raises(error, match="limit is a whole number of 0 or more"):
        relation.tuples(limit)


def test_relation_tuples_takes_a_count_or_none():
    relation = fuse_lang.compile(FAMILY).execute().relation("Anc")
    every = [("Alice", "Bob"), ("Alice", "Carol"), ("Bob", "Carol")]
    assert relation.tuples() == relation.tuples(None) == every
    assert relation.tuples(0) == [] and relation.tuples(2) == every[:2]


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("command", [["fuse_lang.cli", "check"], ["fuse_lsp", "--check"]])
def test_a_stopped_reader_keeps_the_exit_status_of_the_diagnostics(tmp_path, fmt, command):
    # docs/cli.md, "Exit status": 1 when a diagnostic is an error.  A reader that
    # stopped early (`fuse check many.fuse | head`) made it 0, so a pipeline with
    # pipefail passed a program full of errors
    (tmp_path / "many.fuse").write_text("".join(f"Y{i}[j] = Q{i}[j]\n" for i in range(3000)))
    (tmp_path / "fine.fuse").write_text("".join(f"Y{i}[j] = const([1])\n" for i in range(3000)))
    for name, status in (("many.fuse", 1), ("fine.fuse", 0)):
        proc = subprocess.Popen([sys.executable, "-m", *command, "--format", fmt, name],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
        proc.stdout.close()
        _, err = proc.communicate(timeout=120)
        assert (proc.returncode, err) == (status, b"")


@pytest.mark.parametrize("spelling", [["--form", "json"], ["--fo=json"], ["--forma", "json"]])
def test_an_abbreviated_format_json_on_a_refused_line_still_gets_its_document(
        tmp_path, capsys, spelling):
    # argparse reads `--form json` as `--format json`: a refused line wrote no document
    program = tmp_path / "p.fuse"
    program.write_text(PROGRAM)
    assert main(["run", str(program), *spelling, "--bogus"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"outputs": {}, "queries": [], "sinks": [],
                               "error": "fuse: unrecognized arguments: --bogus",
                               "diagnostics": []}
    assert "usage: fuse run" in err
    assert main(["check", *spelling, "--bogus", str(program)]) == 2
    assert json.loads(capsys.readouterr().out) == {"diagnostics": []}
    assert main(["explain", *spelling, "--bogus", str(program)]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "error": "fuse: unrecognized arguments: --bogus", "diagnostics": []}


NAMES = 'Parent("Zoë", "Bob")\nParent("Bob", "Éva")\nAnc(x,y) = Parent(x,y)\n' \
        'Anc(x,z) = Anc(x,y) Parent(y,z)\nAnc("Zoë", x)?\nexport Anc\n'


def fuse(*args: str, cwd: Path, encoding: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if encoding is not None:
        env["PYTHONIOENCODING"] = encoding
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("args", [
    ["run", "é.fuse"], ["run", "--why", 'Anc("Zoë", "Éva")', "é.fuse"],
    ["why", "é.fuse", 'Anc("Zoë", "Éva")'], ["why", "--format", "json", "é.fuse",
                                              'Anc("Zoë", "Éva")'],
    ["explain", "--format", "json", "é.fuse"], ["run", "--format", "json", "é.fuse"]])
def test_a_terminal_that_cannot_hold_a_character_gets_an_escape_not_a_traceback(tmp_path, args):
    # (an ASCII or cp1252 standard output: `fuse run` printing the value "Éva", `fuse
    # explain --format json` of é.fuse and `fuse why` were each a UnicodeEncodeError
    # traceback; docs/cli.md: no input makes the commands print a traceback)
    (tmp_path / "é.fuse").write_text(NAMES, encoding="utf-8")
    proc = fuse(*args, cwd=tmp_path, encoding="ascii")
    assert proc.returncode == 0, proc.stderr.decode("ascii", "replace")
    assert b"Traceback" not in proc.stderr
    text = proc.stdout.decode("ascii")  # (every byte ASCII)
    if "json" in args:
        document = json.loads(text)  # the same JSON, its characters escaped
        said = "é.fuse" if args[0] == "explain" else "Éva"  # (explain's path; the values)
        assert said in json.dumps(document, ensure_ascii=False)
    else:
        assert "\\xc9va" in text


@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8")
@pytest.mark.parametrize("command", ["check", "explain", "run"])
def test_json_output_stays_utf8_for_a_file_name_that_is_not(tmp_path, command):
    # a file name's byte 0xff (a lone surrogate to Python) was written back raw by a
    # surrogateescape standard output: a JSON document that is not UTF-8 text, which
    # a strict reader (json.loads of the decoded bytes) refuses
    name = os.fsdecode(b"\xff.fuse")
    (tmp_path / name).write_text("A[i] = const([1, 2])\nB[i] = A[i] + Nope[i]\nexport B\n")
    proc = fuse(command, "--format", "json", name, cwd=tmp_path, encoding="utf-8:surrogateescape")
    assert proc.returncode == 1
    document = json.loads(proc.stdout.decode("utf-8"))
    paths = [d["path"] for d in document["diagnostics"]]
    assert paths and all(os.fsencode(p) == b"\xff.fuse" for p in paths)


def fuse_lsp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lsp", *args], cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("args, said", [
    (["--tcp", "127.0.0.1:99999"], "fuse-lsp: --tcp takes HOST:PORT with a port from 1 to 65535"),
    (["--tcp", "localhost:http"], "fuse-lsp: --tcp takes HOST:PORT"),
    (["--log-file", "logs"], "fuse-lsp: --log-file logs: cannot be written: "),
    (["--tcp", "nosuchhost.invalid:2087"], "fuse-lsp: cannot serve on nosuchhost.invalid:2087"),
])
def test_fuse_lsp_says_a_server_it_cannot_start_in_one_line(tmp_path, args, said):
    # (each was a traceback: OverflowError from bind(), IsADirectoryError from the
    # log's FileHandler, socket.gaierror)
    (tmp_path / "logs").mkdir()
    proc = fuse_lsp(*args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(said) and proc.stderr.count("\n") == 1, proc.stderr


def test_fuse_lsp_says_a_port_in_use_in_one_line(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = fuse_lsp("--tcp", f"127.0.0.1:{port}", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"fuse-lsp: cannot serve on 127.0.0.1:{port}: ")


SOURCE = 'X[i] = "x.npy"\nY[i] = X[i] * 2\nexport Y\n'


@pytest.mark.parametrize("value, said", [
    (None, "the input for `X` is None, not an array"),
    ("1 2 3", "the input for `X` is a str, not an array"),
    ({"a": 1}, "the input for `X` is a dict, not an array"),
    ({1, 2, 3}, "the input for `X` is a set, not an array"),
    ([[1], [2, 3]], "the input for `X` is a list that makes no rectangular array of numbers"),
])
def test_an_input_that_is_no_array_says_so(tmp_path, value, said):
    # (None, a str and a dict said "the input for `X` has 0 axes but `X` has 1"; a
    # ragged list was NumPy's ValueError)
    import numpy as np

    np.save(tmp_path / "x.npy", np.arange(3, dtype=np.float32))
    program = fuse_lang.compile(SOURCE, base_dir=tmp_path)
    with pytest.raises(fuse_lang.FuseError) as err:
        program.execute({"X": value}, write_sinks=False)
    assert str(err.value).startswith(said)
    # numbers and lists of numbers are still arrays
    assert program.execute({"X": [1, 2, 5]}).outputs["Y"].tolist() == [2, 4, 10]


@pytest.mark.parametrize("args", [["explain", "big.fuse"], ["explain", "--format", "json",
                                                              "big.fuse"], ["run", "big.fuse"]])
def test_a_stopped_reader_of_explain_or_run_keeps_the_errors_and_their_status(tmp_path, args):
    # `fuse explain big.fuse | head`: the reader stopped while the plan was printed,
    # and the command said nothing of the program's error and exited 0
    # (every Y exported: `fuse run` prints them and says Z was not run, exit 1)
    (tmp_path / "big.fuse").write_text("".join(f"Y{k}[i] = const([1, 2, 3])\nexport Y{k}\n"
                                               for k in range(3000)) + "Z[i] = Nope[i]\n")
    proc = subprocess.Popen([sys.executable, "-m", "fuse_lang.cli", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert b"Traceback" not in err
    if "json" not in args:
        assert b"`Nope` is not defined" in err


def test_out_names_the_file_of_its_folder_that_cannot_be_written(tmp_path, capsys):
    # (`--out od/` where od/Y.npy is a folder said "--out od/: cannot be written: Is a
    # directory", of the folder it was asked to write into)
    program = tmp_path / "p.fuse"
    program.write_text("A[i] = const([1, 2, 3])\nY[i] = A[i] * 2\nexport Y\n")
    (tmp_path / "od" / "Y.npy").mkdir(parents=True)
    out = f"{tmp_path / 'od'}/"
    assert main(["run", str(program), "--out", out]) == 2
    assert capsys.readouterr().err == (f"fuse: --out {out}: cannot be written: "
                                       f"{tmp_path / 'od' / 'Y.npy'}: Is a directory\n")
    assert sorted(p.name for p in (tmp_path / "od").iterdir()) == ["Y.npy"]  # no temporary


def test_a_manifest_that_is_not_text_says_so_in_words(tmp_path, capsys):
    # (an .npy given to --weights said "cannot be read: 'utf-8' codec can't decode
    # byte 0x93 in position 0: invalid start byte", Python's words)
    import numpy as np

    program = tmp_path / "p.fuse"
    program.write_text('X[i] = "x.npy"\nY[i] = X[i] * 2\nexport Y\n')
    np.save(tmp_path / "x.npy", np.arange(3, dtype=np.float32))
    assert main(["check", "--weights", str(tmp_path / "x.npy"), str(program)]) == 1
    out = capsys.readouterr().out
    assert "error[weights-bad-manifest]: the weights manifest " in out
    assert "is not UTF-8 text (byte 0x93 at offset 0): a manifest is a JSON file; a " \
           "checkpoint is given as a .safetensors file" in out
    with pytest.raises(fuse_lang.FuseError, match="is not UTF-8 text"):
        fuse_lang.load(program, weights=tmp_path / "x.npy")


@pytest.mark.skipif(sys.platform != "linux", reason="a process started without a stdout")
@pytest.mark.parametrize("args, status", [(["check", "syntax.fuse"], 1),
                                          (["check", "--format", "json", "syntax.fuse"], 1),
                                          (["explain", "--format", "json", "p.fuse"], 0),
                                          (["run", "--format", "json", "p.fuse"], 0)])
def test_a_closed_standard_output_is_no_traceback(tmp_path, args, status):
    # (`fuse check a.fuse >&-`: Python gives a process without a stdout None for
    # sys.stdout, and sys.stdout.write was an AttributeError traceback)
    (tmp_path / "syntax.fuse").write_text("Y[i] = W[i,j] +\n")
    (tmp_path / "p.fuse").write_text(PROGRAM)
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], cwd=tmp_path,
                          stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1),
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert (proc.returncode, proc.stderr) == (status, b"")


SINKING = 'X[i] = "x.npy"\nY[i] = X[i] * 2\n"z.npy" = X[i] + 1\nexport Y\n'


def test_an_out_over_a_source_is_refused_before_the_run_writes_its_sinks(tmp_path, capsys):
    # docs/cli.md: an --out that would replace a file the run read "exits 2 and writes
    # nothing"; the run had written its sink z.npy before --out was refused
    import numpy as np

    np.save(tmp_path / "x.npy", np.arange(3, dtype=np.float32))
    (tmp_path / "p.fuse").write_text(SINKING)
    assert main(["run", str(tmp_path / "p.fuse"), "--out", str(tmp_path / "x.npy")]) == 2
    assert "would replace a source of the program" in capsys.readouterr().err
    assert not (tmp_path / "z.npy").exists()
    assert np.load(tmp_path / "x.npy").tolist() == [0, 1, 2]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_sinks_a_run_wrote_are_said_when_its_out_then_fails(tmp_path, capsys, fmt):
    # (the sink z.npy was on disk, and the text said no `wrote` line, the JSON
    # document "sinks": [])
    import numpy as np

    np.save(tmp_path / "x.npy", np.arange(3, dtype=np.float32))
    (tmp_path / "p.fuse").write_text(SINKING)
    (tmp_path / "od" / "Y.npy").mkdir(parents=True)
    assert main(["run", str(tmp_path / "p.fuse"), "--out", f"{tmp_path / 'od'}/",
                 "--format", fmt]) == 2
    out, err = capsys.readouterr()
    sink = str((tmp_path / "z.npy").resolve())
    assert np.load(sink).tolist() == [1, 2, 3]
    assert "cannot be written" in err
    if fmt == "json":
        document = json.loads(out)
        assert document["sinks"] == [sink] and document["outputs"] == {}
        assert document["error"].startswith(f"fuse: --out {tmp_path / 'od'}/: cannot be written")
    else:
        assert out == f"wrote {sink}\n"


@pytest.mark.parametrize("command", [["check"], ["run", "--format", "json"], ["explain"]])
def test_a_dash_is_said_not_to_be_standard_input(tmp_path, monkeypatch, capsys, command):
    # (`echo ... | fuse check -` said only "-: no such file")
    monkeypatch.chdir(tmp_path)
    assert main([*command, "-"]) == 2
    assert capsys.readouterr().err == ("fuse: -: no such file (Fuse reads a program from a "
                                       ".fuse file, not from standard input)\n")
    (tmp_path / "-").write_text(PROGRAM)  # a file named so is read
    assert main(["check", "-"]) == 0


def test_a_run_past_errors_reports_the_documents_diagnostics_in_json(tmp_path, capsys):
    # (its "diagnostics" were [] : those of the part that ran, without the document's
    # error and without the hint about U that `fuse check` and a clean run report)
    program = tmp_path / "p.fuse"
    program.write_text("A[i] = const([1, 2, 3])\nU[i] = const([1])\nB[i] = A[i] + Nope[i]\n"
                       "C[i] = A[i]\nexport C\n")
    assert main(["check", "--format", "json", str(program)]) == 1
    checked = json.loads(capsys.readouterr().out)["diagnostics"]
    assert main(["run", "--format", "json", str(program)]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["outputs"]["C"]["values"] == [1, 2, 3]
    assert [n["what"] for n in document["not_run"]] == ["B"]
    assert document["diagnostics"] == checked
    assert [d["code"] for d in checked] == ["unused-tensor", "unused-tensor", "undefined-tensor"]
