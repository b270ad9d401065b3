"""The user documentation's examples, run as a reader would run them (the docs
audit): README.md, docs/cli.md, docs/language.md, docs/limits.md, docs/why.md,
docs/scale.md, docs/backends.md and docs/weights.md.  Where a page shows a
command and what it prints (`$ fuse ...` then its output), the expected text is
read from the page itself, so the page and the program cannot drift apart; the
other claims (a value, an exit status, a message, a JSON key) are asserted as the
page states them.  Everything goes through public entry points: the `fuse`
command (in process through `fuse_lang.cli.main`, and once as a subprocess) and
the `fuse_lang` API."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_why import PEOPLE

import fuse_lang
from fuse_lang.cli import main
from fuse_lang.run.program import FuseError

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"


# ---------------------------------------------------------------- the pages


def fenced_blocks(page: Path) -> list[list[str]]:
    """Every fenced block of a Markdown page, as its lines (indentation of the
    fence removed)."""
    blocks, lines, inside, indent = [], page.read_text(encoding="utf-8").splitlines(), None, 0
    for line in lines:
        fence = re.match(r"^(\s*)```", line)
        if fence and inside is None:
            inside, indent = [], len(fence.group(1))
        elif fence:
            blocks.append(inside)
            inside = None
        elif inside is not None:
            inside.append(line[indent:])
    return blocks


def shown_output(page: Path, command: str) -> list[str]:
    """The lines a page shows under `$ COMMAND`, up to the next `$ ` line or the
    end of its block."""
    for block in fenced_blocks(page):
        for k, line in enumerate(block):
            if line == f"$ {command}":
                out = []
                for rest in block[k + 1:]:
                    if rest.startswith("$ "):
                        break
                    out.append(rest)
                while out and not out[-1].strip():
                    out.pop()
                return out
    raise AssertionError(f"{page.name} shows no `$ {command}`")


def block_starting(page: Path, first_line: str) -> list[str]:
    """The first fenced block whose first line starts with `first_line`."""
    for block in fenced_blocks(page):
        if block and block[0].startswith(first_line):
            return block
    raise AssertionError(f"{page.name} has no block starting {first_line!r}")


def contiguous_in(part: list[str], whole: list[str]) -> bool:
    return any(whole[k:k + len(part)] == part for k in range(len(whole) - len(part) + 1))


def fuse(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def examples(tmp_path: Path, monkeypatch) -> Path:
    """A copy of examples/ in a scratch folder, the working directory: the
    README's commands run as written, and what they write stays out of the tree."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------- README.md


def test_readme_first_run_commands(examples, capsys):
    status, out, _ = fuse(capsys, "check", "examples/attention.fuse")
    assert status == 0 and out.strip() == "1 file checked: no problems"
    status, out, _ = fuse(capsys, "explain", "examples/attention.fuse")
    assert status == 0 and "Tensors" in out and "einsum" in out and "flops" in out
    paths = sorted(str(p.relative_to(examples)) for p in (examples / "examples").glob("*.fuse"))
    status, out, _ = fuse(capsys, "check", "--format", "json", *paths)
    assert status == 0 and list(json.loads(out)) == ["diagnostics"]
    status, out, _ = fuse(capsys, "run", "examples/datalog.fuse", "--plot", "pictures")
    assert status == 0
    assert "Ancestor(Alice, x)?  Bob; Carol; Dave; Eve" in out
    assert {p.name for p in (examples / "pictures").iterdir()} == {
        "Ancestor.svg", "Ancestor.graph.svg", "query-1.svg"}
    status, _, _ = fuse(capsys, "explain", "examples/transformer.fuse", "--graph",
                        "transformer.svg")
    assert status == 0 and (examples / "transformer.svg").read_text().lstrip().startswith("<")


def test_readme_python_lines(examples):
    prog = fuse_lang.load("examples/attention.fuse")
    assert set(prog.run()) == {"Attn", "Comp"}
    reach = fuse_lang.load("examples/datalog_file.fuse").execute().relation("Reach")
    assert reach.tuples()[:2] == [("Amsterdam", "Berlin"), ("Amsterdam", "Bern")]


def test_readme_check_exit_statuses(tmp_path, capsys):
    good, bad = tmp_path / "good.fuse", tmp_path / "bad.fuse"
    good.write_text("Y = 1\nexport Y\n")
    bad.write_text("Y[i] = Nope[i]\n")
    assert fuse(capsys, "check", str(good))[0] == 0
    assert fuse(capsys, "check", str(bad))[0] == 1
    assert fuse(capsys, "check", str(tmp_path / "missing.fuse"))[0] == 2


# ---------------------------------------------------------------- docs/cli.md

CLI = DOCS / "cli.md"
COMMANDS = ("check", "explain", "run", "train", "generate", "why", "plot", "cache", "export")


def help_flags(capsys, command: str) -> set[str]:
    # `-h` / `--help` works on every command and exits with 0
    assert main([command, "--help"]) == 0
    return set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out)) - {"--help"}


def test_every_flag_of_the_help_is_in_cli_md_and_the_synopsis_in_the_help(capsys):
    text = CLI.read_text(encoding="utf-8")
    documented = set(re.findall(r"--[a-z][a-z-]*", text))
    synopsis = "\n".join(fenced_blocks(CLI)[0])
    for command in COMMANDS:
        flags = help_flags(capsys, command)
        assert flags <= documented, (command, sorted(flags - documented))
        # the synopsis's lines for this command (up to the next `fuse X`)
        part = re.search(rf"^fuse {command}\b(.*?)(?=^fuse[ -]|\Z)", synopsis, re.S | re.M)
        assert part, command
        named = set(re.findall(r"--[a-z][a-z-]*", part.group(1)))
        assert named <= flags, (command, sorted(named - flags))


def test_cli_md_syntax_errors_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "syntax.fuse").write_text("Y[i] = W[i,j] +\nZ[i j] = A[i]\n")
    status, out, _ = fuse(capsys, "check", "syntax.fuse")
    assert status == 1
    assert out.rstrip("\n").splitlines() == shown_output(CLI, "fuse check syntax.fuse")


def test_cli_md_json_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "undefined.fuse").write_text("A[i] = const([1, 2, 3])\nY[i] = A[i] + Missing[i]\n")
    status, out, _ = fuse(capsys, "check", "--format", "json", "undefined.fuse")
    assert status == 1
    shown = "\n".join(shown_output(CLI, "fuse check --format json undefined.fuse"))
    assert json.loads(out) == json.loads(shown)


def test_cli_md_explain_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matvec.fuse").write_text(
        "A[i] = const([1, 2, 3])\nB[i,j] = const([[1, 0, 0], [0, 1, 0], [0, 0, 1]])\n"
        "Y[j] = A[i] B[i,j]\n")
    status, out, _ = fuse(capsys, "explain", "matvec.fuse")
    assert status == 0
    lines = out.splitlines()
    shown = shown_output(CLI, "fuse explain matvec.fuse")
    cut = shown.index("  ...")  # the page elides the first two equations' tables
    assert lines[:cut] == shown[:cut]
    assert contiguous_in(shown[cut + 1:], lines[cut:])


def test_cli_md_run_plan_of_the_datalog_example(examples, capsys):
    status, out, _ = fuse(capsys, "explain", "examples/datalog.fuse")
    assert status == 0
    assert contiguous_in(block_starting(CLI, "run plan (numpy):"), out.splitlines())


def test_cli_md_explain_json_keys(examples, capsys):
    status, out, _ = fuse(capsys, "explain", "--format", "json", "examples/attention.fuse")
    assert status == 0
    plan = json.loads(out)
    assert set(plan) == {"path", "equations", "order", "recursive_groups", "shapes",
                         "total_flops", "recursion", "representations", "execution",
                         "parameters", "diagnostics", "run"}
    query = next(e for e in plan["equations"] if e["tensor"] == "Query")
    assert query["output"] == ["p", "dk"]
    assert query["projected"] == [["d", "sum", "right-hand side"]]
    assert set(plan["run"]["memory"]) >= {"tensors", "largest intermediate", "params",
                                          "inputs", "activations"}


def test_cli_md_run_example_and_json_shape(examples, capsys):
    status, out, _ = fuse(capsys, "run", "examples/datalog.fuse")
    assert status == 0
    assert out.rstrip("\n").splitlines() == shown_output(CLI, "fuse run examples/datalog.fuse")
    (examples / "j.fuse").write_text(
        "Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Carol, Dave)\nParent(Bob, Eve)\n"
        "Ancestor(x,y) = Parent(x,y)\nAncestor(x,z) = Ancestor(x,y) Parent(y,z)\n"
        "Y[i] = const([3, -1])\nAncestor(Alice, x)?\nY?\nexport Y, Ancestor\n")
    status, out, _ = fuse(capsys, "run", "j.fuse", "--format", "json")
    document = json.loads(out)
    assert status == 0 and set(document) == {"outputs", "queries", "sinks", "diagnostics"}
    assert document["outputs"]["Y"] == {"shape": [2], "dtype": "float32", "values": [3.0, -1.0]}
    ancestor = document["outputs"]["Ancestor"]
    assert ancestor["relation"] is True and ancestor["count"] == 8
    assert ancestor["tuples"][0] == ["Alice", "Bob"]
    assert document["queries"] == [
        {"query": "Ancestor(Alice, x)?", "tensor": "Ancestor", "free": ["x"], "count": 4,
         "tuples": [["Bob"], ["Carol"], ["Dave"], ["Eve"]]},
        {"query": "Y?", "tensor": "Y", "free": ["i"], "values": [3.0, -1.0]}]


def test_cli_md_nonfinite_values_are_null_and_counted(tmp_path, capsys):
    path = tmp_path / "nf.fuse"
    path.write_text("A[i] = const([0, 1, -1, 2])\nZ[i] = log(A[i]) / A[i]\nexport Z\n")
    with pytest.warns(RuntimeWarning):
        status, out, _ = fuse(capsys, "run", str(path), "--format", "json")
    z = json.loads(out)["outputs"]["Z"]
    assert status == 0 and z["nonfinite"] == {"nan": 1, "inf": 0, "-inf": 1}
    assert z["values"][0] is None and z["values"][2] is None


def test_cli_md_reading_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    assert fuse(capsys, "check", "nope.fuse")[::2] == (2, "fuse: nope.fuse: no such file\n")
    assert fuse(capsys, "check", "src")[::2] == (2, "fuse: src is a folder, not a .fuse file\n")
    (tmp_path / "big.fuse").write_text("A[i] = const([1, 2, 3])\n" * 100_000)
    status, _, err = fuse(capsys, "check", "big.fuse")
    assert status == 2 and "2.4 MB" in err and "up to 2 MB" in err
    (tmp_path / "bin.fuse").write_bytes(b"A[i] = const([1,2])\x00\n")
    status, out, _ = fuse(capsys, "check", "bin.fuse")
    assert status == 1 and "error[invalid-encoding]" in out
    (tmp_path / "bom.fuse").write_bytes(b"\xef\xbb\xbfA[i] = const([1,2])\n")
    assert fuse(capsys, "check", "bom.fuse")[0] == 0


def test_cli_md_json_failures_are_one_document(examples, capsys):
    # `fuse explain --format json` with an index no tensor has: the document, exit 2
    status, out, err = fuse(capsys, "explain", "--format", "json", "examples/attention.fuse",
                            "--shard", "q=data")
    assert status == 2 and "`q` names no tensor's axis" in err
    assert json.loads(out) == {"error": err.strip(), "diagnostics": []}
    status, out, _ = fuse(capsys, "why", "--format", "json", "nope.fuse", "A[0]")
    assert status == 2 and json.loads(out) == {"error": "fuse: nope.fuse: no such file",
                                               "diagnostics": []}
    status, out, _ = fuse(capsys, "run", "--format", "json", "examples/datalog.fuse",
                          "--out", "results.csv")
    document = json.loads(out)
    assert status == 2 and document["outputs"] == {} and document["error"].startswith(
        "fuse: --out takes FILE.npz, FILE.npy or a folder")


def test_cli_md_imports_checked_with_the_program(tmp_path, capsys):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "bad.fuse").write_text("A[i] = const([1,2])\nB[i] = A[i] + Nope[i]\n")
    (tmp_path / "lib" / "g.fuse").write_text(
        "Road(A, B)\nRoad(B, C)\nLinked(x,y) = Road(x,y)\nLinked(x,z) = Linked(x,y) Road(y,z)\n")
    program = tmp_path / "p.fuse"
    program.write_text('import "lib/bad.fuse" as b\nY[i] = b::A[i]\nexport Y\n')
    status, out, _ = fuse(capsys, "check", "--format", "json", str(program))
    [diagnostic] = json.loads(out)["diagnostics"]
    assert status == 1 and diagnostic["code"] == "import-error" and diagnostic["line"] == 1
    # a related place in another file names it (docs/cli.md, "JSON output")
    [related] = diagnostic["related"]
    assert related["line"] == 2 and Path(related["path"]).name == "bad.fuse"
    program.write_text('import "lib/g.fuse" as graph\ngraph::Linked(A, x)?\n')
    status, out, _ = fuse(capsys, "explain", str(program))
    assert status == 0 and "graph::Linked(x,y) = graph::Road(x,y)   (from lib/g.fuse:3)" in out
    status, out, _ = fuse(capsys, "run", str(program))
    assert status == 0 and out.strip() == "graph::Linked(A, x)?  B; C"


def test_cli_md_no_command_is_a_usage_line(capsys):
    status, out, err = fuse(capsys)
    assert status == 2 and out == ""
    assert err.startswith("fuse: ") and "usage: fuse" in err


def test_cli_md_out_forms(tmp_path, capsys):
    two, one = tmp_path / "two.fuse", tmp_path / "one.fuse"
    two.write_text("A[i] = const([1, 2])\nB[i] = A[i] * 2\nexport A, B\n")
    one.write_text("A[i] = const([1, 2])\nexport A\n")
    assert fuse(capsys, "run", str(two), "--out", str(tmp_path / "r.npz"))[0] == 0
    assert sorted(np.load(tmp_path / "r.npz")) == ["A", "B"]
    assert fuse(capsys, "run", str(one), "--out", str(tmp_path / "a.npy"))[0] == 0
    assert np.load(tmp_path / "a.npy").tolist() == [1.0, 2.0]
    status, _, err = fuse(capsys, "run", str(two), "--out", str(tmp_path / "b.npy"))
    assert status == 2 and "an .npy file holds one array" in err
    assert not (tmp_path / "b.npy").exists()
    assert fuse(capsys, "run", str(two), "--out", f"{tmp_path / 'dir'}/")[0] == 0
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == ["A.npy", "B.npy"]
    assert fuse(capsys, "run", str(one), "--out", str(one))[0] == 2
    assert one.read_text() == "A[i] = const([1, 2])\nexport A\n"


def test_cli_md_input_and_param_extent(tmp_path, capsys):
    program = tmp_path / "p.fuse"
    program.write_text("param W[i]\nY = W[i] W[i]\nexport Y\n")
    status, _, err = fuse(capsys, "run", str(program))
    assert status == 1 and "the extent of `W`'s axis i is not known" in err
    np.save(tmp_path / "w.npy", np.array([1, 2, 3], dtype=np.float32))
    status, out, _ = fuse(capsys, "run", str(program), "--input", f"W={tmp_path / 'w.npy'}")
    assert status == 0 and "[14]" in out
    status, _, err = fuse(capsys, "run", str(program), "--input", f"W={tmp_path / 'w.npy'}",
                          "--input", f"W={tmp_path / 'w.npy'}")
    assert status == 2 and "given twice" in err


def test_cli_md_what_runs_past_an_error(tmp_path, capsys):
    path = tmp_path / "a.fuse"
    path.write_text("A[i] = const([1, 2])\nC[i] = A[i] + Nope[i]\nexport A\n")
    status, out, err = fuse(capsys, "run", str(path), "--format", "json")
    document = json.loads(out)
    assert status == 1 and list(document["outputs"]) == ["A"]
    assert document["not_run"] == [{"what": "C", "line": 2,
                                    "reason": "`Nope` is not defined [undefined-tensor]"}]
    assert "not run (errors): C" in err
    assert fuse(capsys, "run", str(path), "--target", "A")[0] == 0  # the run asked for was done


def test_cli_md_run_prints_with_a_sink_and_no_export(tmp_path, capsys):
    path = tmp_path / "s.fuse"
    path.write_text('A[i] = const([1, 2])\nB[i] = A[i] * 2\nC[i] = B[i] + 1\n"c.npy" = B[i]\n')
    status, out, _ = fuse(capsys, "run", str(path))
    assert status == 0 and out.splitlines() == [f"wrote {tmp_path / 'c.npy'}"]


def test_cli_md_outside_sinks_and_time_limit(tmp_path, capsys):
    folder = tmp_path / "sub"
    folder.mkdir()
    path = folder / "o.fuse"
    path.write_text('A[i] = const([1, 2])\n"../out.csv" = A[i]\n')
    status, _, err = fuse(capsys, "run", str(path))
    assert status == 1 and "--allow-outside-sinks" in err and not (tmp_path / "out.csv").exists()
    assert fuse(capsys, "run", str(path), "--allow-outside-sinks")[0] == 0
    assert (tmp_path / "out.csv").exists()
    status, _, err = fuse(capsys, "run", str(path), "--time-limit", "0")
    assert status == 2 and "expected a positive number of seconds" in err


def test_cli_md_help_of_the_cache_folder_names_the_whole_default(capsys):
    assert main(["cache", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "$FUSE_CACHE_DIR, else $XDG_CACHE_HOME/fuse, else ~/.cache/fuse" in text


# ---------------------------------------------------------------- docs/language.md

LANGUAGE = DOCS / "language.md"


def run_values(text: str, **kwargs) -> dict:
    return fuse_lang.compile(text, **kwargs).run()


def test_language_projection_of_parenthesised_sums():
    out = run_values("A[i,j] = const([[1, 2, 3], [4, 5, 6]])\nB[i] = const([10, 20])\n"
                     "C[i] = const([100, 200])\nP1[i] = (A[i,j] + B[i]) + C[i]\n"
                     "P2[i] = -(A[i,j] + B[i])\nP3[i] = 2 * (A[i,j] + B[i])\n"
                     "export P1, P2, P3\n")
    assert out["P1"].tolist() == [116, 235]  # B[i] counted once
    assert out["P2"].tolist() == [-16, -35]
    assert out["P3"].tolist() == [72, 150]  # the product: B[i] times j's extent


def test_language_choices_and_conditions():
    text = ("A[i,j] = const([[1, 2, 3], [4, 5, 6]])\n"
            + "\n".join(block_starting(LANGUAGE, "Y[i,j] = select(A[i,j] > 2")[:6])
            + "\nX[i] = const([1, 7, 3, 9, 2])\nQ[i,j] = const([[1,2,3],[4,5,6],[7,8,9]])\n"
              "G1[i] = Q[i,j] when (j < i)\nG2[i] = Q[i,j] (j < i)\n"
              "C[i] = X[i] (i > 0 && i < 4)\nM[i] = X[i] when !(X[i] > 5)\n"
              "export Y, Z, G1, G2, C, M\n")
    out = run_values(text)
    assert out["Y"].tolist() == [[-1, -1, 3], [4, 5, 6]]
    assert out["Z"].tolist() == [[10, 2, 3], [0, 0, 0]]
    assert out["G1"].tolist() == out["G2"].tolist() == [0, 4, 15]
    assert out["C"].tolist() == [0, 7, 3, 9, 0]
    assert out["M"].tolist() == [1, 0, 3, 0, 2]


def test_language_select_takes_no_nan_from_the_branch_not_taken():
    with pytest.warns(RuntimeWarning):  # both branches are computed (docs/language.md)
        out = run_values("X[i] = const([0.5, 3])\nS[i] = select(X[i] > 1, log(X[i] - 1), 0)\n"
                         "export S\n")
    assert out["S"][0] == 0 and out["S"][1] == pytest.approx(np.log(2))


def test_language_offset_recurrence_adds_its_constant_position():
    # `X[0] = 1` with `X[i] = X[i-1] + 1` is [2, 3, 4]
    out = run_values("axis i = 3\nX[0] = 1\nX[i] = X[i-1] + 1\nexport X\n")
    assert out["X"].tolist() == [2, 3, 4]


def test_language_empty_relation_and_aggregates():
    answers = fuse_lang.compile("\n".join(block_starting(LANGUAGE, "X(A, B)"))).execute()
    assert [q.text for q in answers.queries] == ["Y(a, b)?"]
    assert not answers.queries[0].tuples
    block = block_starting(LANGUAGE, "Parent(Ann, Bob)")
    out = run_values("\n".join(block) + "\nexport Children, Total, Largest, Smallest, Mean\n")
    assert out["Children"].tolist() == [2]
    assert out["Total"].tolist() == [4, 7]
    assert out["Largest"].tolist() == [3, 5]
    assert out["Smallest"].tolist() == [0, 0]
    assert out["Mean"].tolist() == pytest.approx([4 / 3, 7 / 3])


def test_language_values_in_relations():
    block = block_starting(LANGUAGE, "Age(Ann, 25)")
    text = "\n".join(block) + "\nV(3)\nV(5)\nX[i,j] = const([[1,2,3],[4,5,6],[7,8,9]])\n" \
        "export Adult, Older, A, N, P, Succ, Y\n"
    result = fuse_lang.compile(text).execute()
    tuples = {name: result.relation(name).tuples() for name in ("Adult", "Older", "A", "N",
                                                                "P", "Succ")}
    assert tuples["Adult"] == [("Ann",), ("Bob",)]
    assert tuples["Older"] == [("Bob", "Ann")]
    assert tuples["A"] == [(1, 2, 3)]  # a head computes: A(1, 2, 3)
    assert tuples["N"] == [(n,) for n in range(26)]  # counts 0 .. 25
    assert tuples["P"] == [(n,) for n in range(11)]  # `==` computes n: 0 .. 10
    assert tuples["Succ"] == [(2, 3), (4, 5)]
    assert result.outputs["Y"].tolist() == [0, 4, 15]


def test_language_negation_and_wildcards():
    result = fuse_lang.compile(
        "V(3)\nV(5)\nV(9)\nMin(x) = V(x) not (V(y) (y < x))\n"
        "Person(Ann)\nPerson(Bob)\nPerson(Cy)\nBanned(Bob, Spam)\n"
        "Ok(x) = Person(x) not Banned(x, _)\nParent(Ann, Bob)\nParent(Bob, Cy)\n"
        "Root(x) = Parent(x, _) not Parent(_, x)\nOther(x) = Person(x) (x != Ann)\n"
        "Root(_)?\nexport Min, Ok, Root, Other\n").execute()
    assert result.relation("Min").tuples() == [(3,)]
    assert result.relation("Ok").tuples() == [("Ann",), ("Cy",)]
    assert result.relation("Root").tuples() == [("Ann",)]
    assert result.relation("Other").tuples() == [("Bob",), ("Cy",)]
    assert result.queries[0].tuples == [()]  # `_` is no column of the answer: yes


def test_language_decisions_slices_reduce_avg(tmp_path):
    np.save(tmp_path / "v.npy", np.array([1, 5], dtype=np.float32))
    out = run_values("W[i,j] = const([[1,2,3,4],[5,6,7,8]])\nY[i] = W[i, 2:] W[i, :2]\n"
                     "Y2[i,:] = W[i, 2:] W[i, 0:2]\nA[i,j] = const([[1,5],[7,2]])\n"
                     "C[j] = const([10, 20])\nR[i] = reduce(max, j) A[i,j] + C[j]\n"
                     'V[i] = "v.npy"\nV[i] avg= 3\nexport Y, Y2, R, V\n', base_dir=tmp_path)
    assert out["Y"].tolist() == [11, 83]  # decision 4: joined and summed
    assert out["Y2"].tolist() == [[3, 8], [35, 48]]  # kept
    assert out["R"].tolist() == [35, 37]  # decision 19: max_j A[i,j] + sum_j C[j]
    assert out["V"].tolist() == [2, 4]  # decision 22: a source counts as one of the values


def test_language_builtin_keywords_and_their_errors(tmp_path, capsys):
    out = run_values("X[i] = const([-1, 2, -3])\nM1[i] = max(b=0, a=X[i])\n"
                     "P[i] = pow(X[i], n=2)\nZ[i,j] = const([[1, 5, 3], [2, 2, 9]])\n"
                     "Top[i,j] = topk(Z[i,j], k=2)\nW[0,h] = const([[1, 2, 3]])\n"
                     "export M1, P, Top, W\n")
    assert out["M1"].tolist() == [0, 2, 0] and out["P"].tolist() == [1, 4, 9]
    assert out["Top"].tolist() == [[5, 3], [9, 2]] and out["W"].tolist() == [[1, 2, 3]]
    cases = {"Y[i] = sig(X[i], T=1, T=2)": "bad-argument", "Y[i] = pow(X[i], x=2)": "bad-argument",
             "Y[i] = pow(n=2)": "bad-argument", "Y[i] = sig(X[i], Q=2)": "unknown-keyword",
             "Y[i] = relu(X[i], X[i])": "argument-count", "Y[i] = unknownf(X[i])":
             "unknown-builtin", "Y[i] = W[i; 0]": "unclosed-bracket",
             "Ancestor(x,z) :- Parent(x,y), Ancestor(y,z).": "datalog-syntax"}
    for line, code in cases.items():
        path = tmp_path / "e.fuse"
        path.write_text(f"X[i] = const([1, 2])\n{line}\n")
        status, out, _ = fuse(capsys, "check", str(path))
        assert status == 1 and f"error[{code}]" in out, line


def test_language_function_calls_with_bare_names(tmp_path, capsys):
    out = run_values("fn add(a, b) -> s { s = a + b }\nA = const(1)\nB = const(2)\n"
                     "S = add(A, B)\nexport S\n")
    assert float(out["S"]) == 3
    path = tmp_path / "f.fuse"  # a bare name is a scalar: not an argument for `x[i]`
    path.write_text("fn add(x[i], y[i]) -> z[i] { z[i] = x[i] + y[i] }\n"
                    "A[i] = const([1, 2])\nS[i] = add(A, A)\nexport S\n")
    status, out, _ = fuse(capsys, "check", str(path))
    assert status == 1 and "error[fn-rank]" in out


def test_language_example_programs_shapes(capsys):
    status, out, _ = fuse(capsys, "explain", str(EXAMPLES / "cnn.fuse"))
    assert re.search(r"^  Pooled\s+\(4, 4\)$", out, re.M)  # x gets the image's 7
    status, out, _ = fuse(capsys, "explain", str(EXAMPLES / "rnn.fuse"))
    assert re.search(r"^  X\s+\(4,\)$", out, re.M)  # the virtual axis dropped


# ---------------------------------------------------------------- docs/limits.md


def test_limits_numbers_nesting_extents(tmp_path, capsys):
    path = tmp_path / "e.fuse"

    def check(text: str) -> str:
        path.write_text(text)
        return fuse(capsys, "check", str(path))[1]

    assert "error[number-too-long]" in check("Y = " + "1" * 1001 + "\n")
    said = check("Y = " + "1" * 1000 + "\n")  # within the length, past the largest float
    assert "number-too-long" not in said and "1 file checked: 1 warning" in said
    assert "warning[number-overflow]" in said and "read as infinity" in said
    assert "no problems" in check("Y = " + "1" * 300 + "\n")
    assert "error[nesting-too-deep]" in check("Y = " + "(" * 201 + "1" + ")" * 201 + "\n")
    assert "no problems" in check("Y = " + "(" * 199 + "1" + ")" * 199 + "\n")
    assert "error[nesting-too-deep]" in check("Y = " + "tanh(" * 101 + "1" + ")" * 101 + "\n")
    assert "error[nesting-too-deep]" in check("Y = " + "-" * 10_000 + "1\n")
    assert "no problems" in check("Y = " + "(1 + " * 150 + "1" + ")" * 150 + "\n")
    assert "error[extent-too-large]" in check("axis i = 9007199254740993\nX[i] = 1\n")
    assert "no problems" in check("axis i = 9007199254740992\nX[i] = 1\nexport X\n")


def test_limits_memory_guard_refuses_before_allocating(tmp_path, capsys):
    path = tmp_path / "e.fuse"
    path.write_text("axis i = 4294967296, j = 4294967296\nW[i,j] = 1\nexport W\n")
    status, _, err = fuse(capsys, "run", str(path))
    assert status == 1 and "7.38e19 bytes" in err and "nothing was run" in err


def test_limits_npy_header_and_dtype(tmp_path, capsys):
    import numpy.lib.format as npy_format

    np.save(tmp_path / "cplx.npy", np.array([1 + 2j]))
    with open(tmp_path / "liar.npy", "wb") as handle:
        npy_format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False,
                                                   "shape": (10 ** 12,)})
        handle.write(b"\0" * 16)
    for name, said in (("cplx.npy", "complex numbers"), ("liar.npy", "its header claims")):
        path = tmp_path / "e.fuse"
        path.write_text(f'X[i] = "{name}"\nexport X\n')
        status, out, _ = fuse(capsys, "check", str(path))
        assert status == 1 and "error[unreadable-source]" in out and said in out


def test_limits_sinks_and_recursion(tmp_path, capsys):
    path = tmp_path / "e.fuse"
    path.write_text('A[i] = const([1, 2])\n"out.xyz" = A[i]\n')
    status, _, err = fuse(capsys, "run", str(path))  # a program's errors go to stderr
    assert status == 1 and "error[unwritable-sink]" in err
    path.write_text("axis i = 2\nX[i] = X[i] * 1.5 + 1\nexport X\n")
    status, _, err = fuse(capsys, "run", str(path), "--max-iterations", "5")
    assert status == 1 and "did not converge in 5 iterations (the last change was" in err


# ---------------------------------------------------------------- docs/why.md

WHY = DOCS / "why.md"  # (its program: test_why.PEOPLE)


def test_why_md_command_line_examples(examples, capsys):
    (examples / "people.fuse").write_text(PEOPLE)
    for command in ("fuse why people.fuse 'Allowed(Ann)'", "fuse why people.fuse 'Allowed(Cy)'",
                    "fuse why examples/attention.fuse 'Attn[5, 2]' --top 3"):
        args = [a.strip("'") for a in re.findall(r"'[^']*'|\S+", command)][1:]
        status, out, _ = fuse(capsys, *args)
        assert status == 0, command
        assert out.rstrip("\n").splitlines() == shown_output(WHY, command), command


def test_why_md_python_lines():
    result = fuse_lang.compile(PEOPLE).execute()
    tree = result.why("Ancestor", ("Ann", "Dee"))
    assert (tree.height, tree.place.line) == (3, 10)
    assert dict(tree.bindings) == {"x": "Ann", "y": "Cy", "z": "Dee"}
    assert type(result.why("Ancestor", ("Dee", "Ann"))).__name__ == "WhyNot"
    number = fuse_lang.compile("A[i,j] = const([[1,2],[3,4]])\nX[j] = const([1,1])\n"
                               "Y[i] = A[i,j] X[j]\nexport Y\n").execute().why("Y", (1,))
    assert type(number).__name__ == "NumberWhy" and number.value == 7
    assert [f.text for f in number.parts[0].terms[0].factors] == ["A[1, 1]", "X[1]"]
    for bad in ({"limit": 0}, {"top": 0}):
        with pytest.raises(FuseError, match="a whole number of 1 or more"):
            result.why("Ancestor", ("Ann", "Dee"), **bad)


# ---------------------------------------------------------------- scale, backends


def test_scale_md_sparse_decision_and_override(tmp_path, capsys):
    path = tmp_path / "chain.fuse"
    path.write_text("\n".join(f"E({k}, {k + 1})" for k in range(300))
                    + "\nR(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\nexport R\n")
    status, out, _ = fuse(capsys, "explain", "--format", "json", str(path))
    kinds = {row[0]: row[1:] for row in json.loads(out)["representations"]}
    assert kinds["E"] == ["sparse", 300, 90601, "facts; density 0.33%"]
    assert kinds["R"][0] == "sparse"
    one = tmp_path / "one.fuse"
    one.write_text("A[i] = const([1, 2])\nexport A\n")
    status, _, err = fuse(capsys, "run", str(one), "--representation", "A=sparse")
    assert status == 1 and "only tensors of 2 axes or more are kept sparse" in err


def test_scale_md_shard_without_jax_is_a_usage_error(examples, capsys):
    status, _, err = fuse(capsys, "run", "examples/attention.fuse", "--shard", "p=data")
    assert status == 2 and "--backend jax" in err
    status, out, _ = fuse(capsys, "explain", "examples/attention.fuse", "--shard", "p=data",
                          "--mesh", "data=4")
    assert status == 0 and "Mesh: data=4; sharded: p->data" in out
    assert "which the mesh axis `data` (4 devices) does not divide" in out


def test_backends_md_numpy_refusals():
    text = (EXAMPLES / "attention.fuse").read_text()
    for kwargs, said in (({"precision": "bf16"}, "supports fp32 and fp64"),
                         ({"shard": {"p": "data"}}, "needs the jax backend"),
                         ({"device": "cuda"}, "cpu only"),
                         ({"compiled": True}, "runs eagerly only")):
        with pytest.raises(FuseError, match=said):
            fuse_lang.compile(text, backend="numpy", base_dir=EXAMPLES, **kwargs)


# ---------------------------------------------------------------- docs/weights.md


def test_weights_md_manifest_shards_int8_and_adapter(tmp_path, capsys):
    import hashlib

    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    save = safetensors_numpy.save_file
    save({"layers.0.wq": np.array([[1, 2], [3, 4]], np.float32),
          "W1.A": np.array([[1, 0]], np.float32), "W1.B": np.array([[1], [0]], np.float32)},
         str(tmp_path / "model.safetensors"))
    np.save(tmp_path / "emb-0.npy", np.ones((1, 2), np.float32))
    save({"E": 2 * np.ones((2, 2), np.float32)}, str(tmp_path / "emb-1.safetensors"))
    save({"q8": np.array([[10, 20], [30, 40]], np.int8)}, str(tmp_path / "q.safetensors"))
    sha = hashlib.sha256((tmp_path / "model.safetensors").read_bytes()).hexdigest()
    manifest = {"tensors": {
        "W1": {"file": "model.safetensors", "key": "layers.0.wq", "dtype": "float32",
               "shape": [2, 2], "sha256": sha},
        "E": {"shards": [{"file": "emb-0.npy"}, "emb-1.safetensors:E"], "axis": "v",
              "shape": [3, 2]},
        "W2": {"file": "q.safetensors", "key": "q8", "dtype": "int8",
               "quantization": {"scale": [0.5, 0.25], "zero_point": 0, "axis": "o"}}},
        "adapters": {"style": {"scale": 0.5, "targets": {"W1": {
            "A": "model.safetensors:W1.A", "B": "model.safetensors:W1.B"}}}}}
    (tmp_path / "weights.json").write_text(json.dumps(manifest))
    program = tmp_path / "m.fuse"
    program.write_text('W1[o,d] = "w1.npy"\nE[v,d] = "e.npy"\nW2[o,d] = "w2.npy"\n'
                       "Y[o] = W1[o,d] + W2[o,d]\nZ[v] = E[v,d]\nexport Y, Z\n")
    weights = str(tmp_path / "weights.json")
    status, out, _ = fuse(capsys, "run", str(program), "--weights", weights, "--format", "json")
    outputs = json.loads(out)["outputs"]
    assert status == 0 and outputs["Y"]["values"] == [18.0, 24.5]  # (q - 0) * scale per o
    assert outputs["Z"]["values"] == [2.0, 4.0, 4.0]  # the shards joined along v
    status, out, _ = fuse(capsys, "run", str(program), "--weights", weights, "--adapter",
                          "style", "--format", "json")
    assert status == 0 and json.loads(out)["outputs"]["Y"]["values"] == [18.5, 24.5]
    assert fuse(capsys, "run", str(program), "--weights", weights, "--adapter", "nope")[0] == 1
    assert fuse(capsys, "run", str(program), "--adapter", "style")[0] == 2
    manifest["tensors"]["W1"]["sha256"] = "0" * 64
    (tmp_path / "bad.json").write_text(json.dumps(manifest))
    bad = str(tmp_path / "bad.json")
    assert fuse(capsys, "check", str(program), "--weights", bad)[0] == 0  # a check never hashes
    status, _, err = fuse(capsys, "run", str(program), "--weights", bad)
    assert status == 1 and "error[weights-checksum]" in err


# ---------------------------------------------------------------- the command itself


def test_the_fuse_module_runs_as_a_process(examples):
    """`python -m fuse_lang.cli` (docs/cli.md): the README's check, as a process."""
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check",
                           "examples/attention.fuse"], capture_output=True, text=True,
                          cwd=examples, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "1 file checked: no problems"
