"""`fuse run`'s answers as a person reads them (issue 27, point 6): a relation as its
tuples of values sorted by value (text: the first 20 and "... and K more"; JSON:
all, with their count), query answers sorted by value, one JSON document even
when the program has errors, and a 3-column sink of a relation read from a file."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import fuse_lang
from fuse_lang.cli.main import main
from fuse_lang.cli.run_output import RELATION_SHOWN
from fuse_lang.ide.run_summary import RESULT_TUPLES, summarize_run
from fuse_lang.ide.value_hover import value_markdown
from fuse_lang.run.outputs import relation_axes

TIMEOUT = 120


def fuse(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=TIMEOUT)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


FAMILY = """\
Parent(Dan, Bob)
Parent(Dan, Cat)
Parent(Ann, Dan)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Ann, x)?
Ancestor(x, Cat)?
Ancestor(Ann, Bob)?
export Ancestor
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_relation_prints_as_its_tuples_sorted_by_value(tmp_path):
    proc = fuse("run", str(write(tmp_path, "family.fuse", FAMILY)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Ancestor  5 tuples",
        "  (Ann, Bob)", "  (Ann, Cat)", "  (Ann, Dan)", "  (Dan, Bob)", "  (Dan, Cat)",
        "Ancestor(Ann, x)?  Bob; Cat; Dan",  # by value, not in order of appearance
        "Ancestor(x, Cat)?  Ann; Dan",
        "Ancestor(Ann, Bob)?  yes",
    ]


def test_a_long_relation_prints_its_first_tuples_and_how_many_more(tmp_path):
    facts = "".join(f"Edge(N{k:02d}, {k})\n" for k in reversed(range(RELATION_SHOWN + 7)))
    proc = fuse("run", str(write(tmp_path, "long.fuse", facts + "export Edge\n")))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Edge  {RELATION_SHOWN + 7} tuples"
    assert lines[1:RELATION_SHOWN + 1] == [f"  (N{k:02d}, {k})" for k in range(RELATION_SHOWN)]
    assert lines[RELATION_SHOWN + 1] == "  ... and 7 more"
    assert len(lines) == RELATION_SHOWN + 2


def test_values_of_mixed_types_sort_numbers_first_and_strings_are_written_as_constants(
        tmp_path):
    text = 'S(Bob)\nS(3)\nS(-1)\nS("ann")\nS("1")\nS(Al)\nS(x)?\nexport S\n'
    proc = fuse("run", str(write(tmp_path, "mixed.fuse", text)))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # numbers by magnitude, then strings by text; "1" and "ann" are quoted as a program
    # writes them (a bare name starting with an uppercase letter is a symbol as is)
    assert lines[1:7] == ["  (-1)", "  (3)", '  ("1")', "  (Al)", "  (Bob)", '  ("ann")']
    assert lines[7] == 'S(x)?  -1; 3; "1"; Al; Bob; "ann"'
    data = json.loads(fuse("run", "--format", "json", str(tmp_path / "mixed.fuse")).stdout)
    assert data["outputs"]["S"]["tuples"] == [[-1], [3], ["1"], ["Al"], ["Bob"], ["ann"]]


def test_json_gives_a_relation_as_its_tuples_and_count(tmp_path):
    proc = fuse("run", "--format", "json", str(write(tmp_path, "family.fuse", FAMILY)))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    ancestor = data["outputs"]["Ancestor"]
    assert ancestor["relation"] is True and ancestor["count"] == 5
    assert ancestor["tuples"] == [["Ann", "Bob"], ["Ann", "Cat"], ["Ann", "Dan"],
                                  ["Dan", "Bob"], ["Dan", "Cat"]]
    assert "values" not in ancestor  # never the dense 0/1 matrix
    assert ancestor["shape"] == [4, 4] and ancestor["dtype"] == "float32"
    first, second, closed = data["queries"]
    assert first["tuples"] == [["Bob"], ["Cat"], ["Dan"]] and first["count"] == 3
    assert second["tuples"] == [["Ann"], ["Dan"]]
    assert closed["tuples"] == [[]] and closed["count"] == 1
    assert "values" not in first
    assert {d["code"] for d in data["diagnostics"]} == {"recursion"}  # information only


def test_json_of_a_program_with_errors_is_one_document_with_its_diagnostics(tmp_path):
    path = write(tmp_path, "bad.fuse", "Y[i] = W[i,j] +\nZ[i] = Missing[i]\nexport Y, Z\n")
    proc = fuse("run", "--format", "json", str(path))
    assert proc.returncode == 1
    data = json.loads(proc.stdout)  # exactly one document
    assert data["outputs"] == {} and data["queries"] == [] and data["sinks"] == []
    by_code = {d["code"]: d for d in data["diagnostics"]}
    assert set(by_code) >= {"syntax-error", "undefined-tensor"}
    missing = by_code["undefined-tensor"]
    assert missing["severity"] == "error" and "`Missing` is not defined" in missing["message"]
    assert (missing["line"], missing["column"], missing["end_line"], missing["end_column"]) \
        == (2, 8, 2, 15)
    assert "error[undefined-tensor]" in proc.stderr  # the text still goes to stderr


def test_json_of_a_run_that_fails_says_why_in_one_document(tmp_path):
    path = write(tmp_path, "grow.fuse", "axis i = 2\nX[i] = X[i] + 1\nexport X\n")
    proc = fuse("run", "--format", "json", "--max-iterations", "5", str(path))
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["outputs"] == {} and data["error"]
    assert "line 2" in data["error"] or data["diagnostics"]
    missing = fuse("run", "--format", "json", str(tmp_path / "nope.fuse"))
    assert missing.returncode == 2
    assert json.loads(missing.stdout)["error"] == f"fuse: {tmp_path / 'nope.fuse'}: no such file"


def test_a_3_column_sink_of_a_relation_read_from_a_file_round_trips(tmp_path):
    rng = random.Random(7)
    rows: set[tuple] = set()
    while len(rows) < 2000:
        rows.add((f"N{rng.randrange(400)}", rng.randrange(-60, 60), f"F{rng.randrange(40)}"))
    (tmp_path / "r.tsv").write_text("".join(f"{a}\t{b}\t{c}\n" for a, b, c in rows))
    write(tmp_path, "copy.fuse", 'R(a, b, c) = "r.tsv"\n"out.tsv" = R(a, b, c)\n'
                                 '"out.json" = R(a, b, c)\n')
    proc = fuse("run", "--representation", "R=sparse", str(tmp_path / "copy.fuse"))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {tmp_path / 'out.tsv'}" in proc.stdout.splitlines()
    written = (tmp_path / "out.tsv").read_text().splitlines()
    want = sorted(rows)  # (str, int, str): by text, by number, by text
    assert written == [f"{a}\t{b}\t{c}" for a, b, c in want]  # values, sorted by value
    assert [tuple(r) for r in json.loads((tmp_path / "out.json").read_text())] == want
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # atomic
    # read back, the file means the same relation
    write(tmp_path, "back.fuse", 'R(a, b, c) = "out.tsv"\nexport R\n')
    back = json.loads(fuse("run", "--format", "json", str(tmp_path / "back.fuse")).stdout)
    assert back["outputs"]["R"]["count"] == 2000
    assert [tuple(r) for r in back["outputs"]["R"]["tuples"]] == want


def test_a_sink_quotes_a_string_that_would_read_back_as_a_number(tmp_path):
    path = write(tmp_path, "q.fuse", 'S("1", 1)\nS("a b", 2)\nS(Bob, 3)\n"s.tsv" = S(x, y)\n')
    assert main(["run", str(path)]) == 0
    assert (tmp_path / "s.tsv").read_text() == '"1"\t1\nBob\t3\na b\t2\n'
    write(tmp_path, "back.fuse", 'S(x, y) = "s.tsv"\nS(x, y)?\n')
    back = fuse_lang.compile((tmp_path / "back.fuse").read_text(), base_dir=tmp_path).execute()
    assert back.queries[0].tuples == [("1", 1), ("Bob", 3), ("a b", 2)]


def test_the_editor_summary_and_hover_give_a_relations_tuples_as_values():
    program = fuse_lang.compile(FAMILY)
    result = program.execute()
    summary = summarize_run(result, analysis=program.analysis).to_json()
    ancestor = summary["outputs"]["Ancestor"]
    assert ancestor["relation"] is True and ancestor["count"] == 5
    assert ancestor["tuples"][:2] == [["Ann", "Bob"], ["Ann", "Cat"]]
    assert summary["queries"][0]["tuples"] == [["Bob"], ["Cat"], ["Dan"]]
    assert "Ancestor 5 tuples" in summary["message"]
    axes = relation_axes(program.analysis, "Ancestor")
    hover = value_markdown("Ancestor", result.outputs["Ancestor"], False, None, axes)
    assert "`Ancestor` shape `(4, 4)`, `float32`, 5 tuples" in hover
    assert "`(Ann, Bob)`" in hover and "preview" not in hover


def test_the_editor_sends_a_long_relations_first_tuples_and_its_count():
    facts = "".join(f"E({k}, {k + 1})\n" for k in range(RESULT_TUPLES + 50))
    program = fuse_lang.compile(facts + "export E\n")
    summary = summarize_run(program.execute(), analysis=program.analysis).to_json()
    edges = summary["outputs"]["E"]
    assert edges["count"] == RESULT_TUPLES + 50 and len(edges["tuples"]) == RESULT_TUPLES
    assert edges["tuples"][:3] == [[0, 1], [1, 2], [2, 3]]


def test_out_named_npy_holds_the_one_dense_output_and_refuses_several(tmp_path):
    import numpy as np

    np.save(tmp_path / "a.npy", np.array([1.0, 2.0, 3.0]))
    (tmp_path / "one.fuse").write_text('A[i] = "a.npy"\nB[i] = A[i] * 2\nexport B\n')
    proc = fuse("run", str(tmp_path / "one.fuse"), "--out", str(tmp_path / "b.npy"))
    assert proc.returncode == 0, proc.stderr
    assert np.load(tmp_path / "b.npy").tolist() == [2.0, 4.0, 6.0]  # the array, no archive

    (tmp_path / "two.fuse").write_text('A[i] = "a.npy"\nB[i] = A[i] * 2\nexport A, B\n')
    proc = fuse("run", str(tmp_path / "two.fuse"), "--out", str(tmp_path / "ab.npy"))
    assert proc.returncode == 2
    assert "an .npy file holds one array" in proc.stderr and "A, B" in proc.stderr
    assert not (tmp_path / "ab.npy").exists()

    (tmp_path / "rel.fuse").write_text("E(A,B)\nE(B,C)\nP(x,y) = E(x,y)\nexport P\n")
    proc = fuse("run", "--representation", "P=sparse", str(tmp_path / "rel.fuse"),
                "--out", str(tmp_path / "p.npy"))
    assert proc.returncode == 2 and "is sparse" in proc.stderr, proc.stderr
    assert not (tmp_path / "p.npy").exists()


def test_an_output_under_a_file_says_which_file_is_in_the_way(tmp_path, capsys):
    """`--out`, a folder `--out` and `--graph` under a path whose folder is a file:
    mkdir said only "File exists" or "Not a directory"; now the file is named."""
    program = tmp_path / "p.fuse"
    program.write_text("X = const([1, 2])\nexport X\n", encoding="utf-8")
    blocker = tmp_path / "afile"
    blocker.write_text("mine\n", encoding="utf-8")
    for args in (["run", "--out", str(blocker / "x.npy")], ["run", "--out", f"{blocker}/sub/"],
                 ["explain", "--graph", str(blocker / "g.svg")]):
        assert main([*args, str(program)]) == 2, args
        err = capsys.readouterr().err
        assert f"{blocker} is a file, not a folder" in err, err
    assert blocker.read_text(encoding="utf-8") == "mine\n"  # nothing lost
