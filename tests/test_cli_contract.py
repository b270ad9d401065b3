"""What docs/cli.md promises of the command line, checked as a client written
from it relies on it: usage lines, `--out`'s forms, `fuse cache` on a bad
folder, the JSON document of a refused run (the CLI audit)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuse_lang.cli import main

PROGRAM = "A[i] = const([1, 2, 3])\nY[i] = A[i] * 2\nexport Y\n"


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "p.fuse"
    path.write_text(PROGRAM)
    return path


def test_an_unknown_option_is_said_with_the_commands_own_usage_line(program, capsys):
    assert main(["explain", str(program), "--trace"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --trace" in err
    assert "usage: fuse explain" in err  # not the top parser's `fuse [-h] COMMAND ...`
    assert main(["run", str(program), "--bogus", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert "usage: fuse run" in err
    # argparse could not read it, and --format json still gets its one document (issue 27)
    assert json.loads(out) == {"outputs": {}, "queries": [], "sinks": [],
                               "error": "fuse: unrecognized arguments: --bogus",
                               "diagnostics": []}


@pytest.mark.parametrize("name", ["o.txt", "o.csv", "o"])
def test_out_refuses_a_file_that_is_neither_npz_nor_npy(program, tmp_path, capsys, name):
    assert main(["run", str(program), "--out", str(tmp_path / name), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert "--out takes FILE.npz, FILE.npy or a folder" in err
    document = json.loads(out)
    assert document["outputs"] == {} and document["error"].startswith("fuse: --out takes")
    assert not (tmp_path / name).exists()  # said before the run, nothing written


def test_out_keeps_its_three_forms(program, tmp_path, capsys):
    import numpy as np

    assert main(["run", str(program), "--out", str(tmp_path / "a.npz")]) == 0
    assert main(["run", str(program), "--out", str(tmp_path / "a.npy")]) == 0
    assert main(["run", str(program), "--out", str(tmp_path / "d") + "/"]) == 0
    assert np.load(tmp_path / "a.npy").tolist() == [2, 4, 6]
    assert np.load(tmp_path / "d" / "Y.npy").tolist() == [2, 4, 6]
    with np.load(tmp_path / "a.npz") as archive:
        assert archive["Y"].tolist() == [2, 4, 6]


@pytest.mark.parametrize("words", [
    ["run", "{p}", "--weights", ""], ["run", "{p}", "--params", ""], ["check", "{p}", "--weights", ""],
    ["train", "{p}", "--checkpoint", ""], ["train", "{p}", "--resume", ""],
    ["train", "{p}", "--vocab", ""], ["export", "{p}", "--out", ""],
    ["export", "{p}", "--params", "", "--out", "x.pt2"], ["generate", "{p}", "--vocab", ""],
    ["generate", "{p}", "--params", ""], ["plot", "r.npz", "--program", ""]])
def test_an_empty_file_name_is_a_usage_error(program, capsys, words):
    """An option that names a file, given an empty name, is refused (exit 2): it was
    read as no option at all (`--weights ""` ran without weights) or as the current
    folder (`--params ""`: "the weights manifest `.` ... is a folder")."""
    assert main([w.format(p=program) for w in words]) == 2
    err = capsys.readouterr().err
    option = next(w for w, given in zip(words, words[1:]) if given == "")
    assert f"argument {option}: expected a file's name, not an empty one" in err
    assert "Traceback" not in err


def test_an_empty_out_is_a_usage_error(program, capsys):
    assert main(["run", str(program), "--out", "", "--format", "json"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document["error"] == ("fuse: --out: give a file (FILE.npz, FILE.npy) or a folder "
                                 "DIR/ (an empty name names none)")


@pytest.mark.parametrize("action", ["info", "clear"])
def test_fuse_cache_on_a_file_is_a_usage_error(program, capsys, action):
    assert main(["cache", action, "--cache-dir", str(program)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err
    assert program.read_text() == PROGRAM  # nothing of it touched


MAX_JOIN = ("A[i,j] = const([[1, 2, 3, 4], [5, 6, 7, 8], [9, 1, 2, 3], [4, 5, 6, 7]])\n"
            "M[i,k] max= A[i,j] A[j,k]\nexport M\n")


def test_explain_counts_a_blocked_join_as_the_memory_guard_does(tmp_path, capsys):
    """`--block-size`: the run's guard counts the join by its blocks (docs/
    execution.md, "Blocked contraction"); explain's memory says the same.  The
    4x4x4 join splits along a kept index of 4 values, so a block holds 16 elements
    (block_size 8 cannot be met: one index is not cut finer than its values)."""
    path = tmp_path / "m.fuse"
    path.write_text(MAX_JOIN)
    assert main(["explain", str(path), "--format", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)["run"]["memory"]
    assert whole["largest intermediate"] == 4 ** 3 * 4  # the 4x4x4 join, float32
    assert main(["explain", str(path), "--format", "json", "--block-size", "8"]) == 0
    blocked = json.loads(capsys.readouterr().out)["run"]["memory"]
    assert blocked["largest intermediate"] == 16 * 4 and blocked["tensors"] == whole["tensors"]
    assert main(["explain", str(path), "--block-size", "8"]) == 0
    assert "plus 64 B while computing M" in capsys.readouterr().out


BIG = ("axis i = 1000\naxis j = 1000\naxis k = 1000\nparam A[i,j] = normal(0.1)\n"
       "param B[j,k] = normal(0.1)\nY[i,k] = A[i,j] B[j,k]\nexport Y\n")


def test_backend_auto_keeps_the_gpu_device_it_was_given(monkeypatch):
    """`backend="auto"` with `device="cuda:1"` for a large program picks that GPU
    (it picked `cuda`, the first one, whatever was asked).  torch is told a GPU is
    there; the refusal of the device it cannot see names the device picked."""
    torch = pytest.importorskip("torch")
    import fuse_lang

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for asked, picked in (("cuda:1", "'cuda:1'"), ("auto", "'cuda'")):
        with pytest.raises(fuse_lang.FuseError, match=picked):
            fuse_lang.compile(BIG, backend="auto", device=asked)


def test_an_input_given_twice_is_a_usage_error(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "s.fuse"
    path.write_text('B[j] = "b.npy"\nY[j] = B[j] * 2\nexport Y\n')
    np.save(tmp_path / "b.npy", np.ones(3, np.float32))
    np.save(tmp_path / "c.npy", np.zeros(3, np.float32))
    assert main(["run", str(path), "--input", f"B={tmp_path / 'c.npy'}"]) == 0
    capsys.readouterr()
    assert main(["run", str(path), "--input", f"B={tmp_path / 'b.npy'}",
                 "--input", f"B={tmp_path / 'c.npy'}", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert "--input B=... is given twice" in err
    assert json.loads(out)["outputs"] == {}  # the last one did not silently win


@pytest.mark.parametrize("flags, said", [
    (["--plot-format", "png"], "--plot-format needs --plot DIR"),
    (["--slice-along", "i", "--plot-format", "svg"], "--plot-format and --slice-along need"),
    (["--adapter", "style"], "--adapter NAME needs --weights MANIFEST.json"),
])
def test_a_flag_that_needs_another_is_refused_not_ignored(program, capsys, flags, said):
    assert main(["run", str(program), *flags]) == 2
    out, err = capsys.readouterr()
    assert said in err and out == ""


def test_plot_format_with_plot_draws_in_that_format(program, tmp_path, capsys):
    assert main(["run", str(program), "--plot", str(tmp_path / "pics"),
                 "--plot-format", "png"]) == 0
    assert [p.name for p in (tmp_path / "pics").iterdir()] == ["Y.png"]


CHAIN = ("Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Carol, Dave)\n"
         "Anc(x,y) = Parent(x,y)\nAnc(x,z) = Anc(x,y) Parent(y,z)\nexport Anc\n")


@pytest.mark.parametrize("strategy, said", [
    ("semi_naive", "did not reach a fixpoint in 1 round (the round limit"),
    ("naive", "did not reach a fixpoint in 1 round (the round limit"),
])
def test_a_round_limit_says_which_flag_raises_it(tmp_path, capsys, strategy, said):
    path = tmp_path / "chain.fuse"
    path.write_text(CHAIN)
    assert main(["run", str(path), "--max-iterations", "1", "--fixpoint", strategy]) == 1
    err = capsys.readouterr().err
    assert said in err and "fuse run --max-iterations N" in err


def test_the_round_limit_counts_semi_naive_rounds_after_the_first(tmp_path, capsys):
    # paths of 1 to 3 edges: naive takes a round for each length and one that
    # finds nothing new; semi-naive's round 0 (all rules on the facts) is not counted
    path = tmp_path / "chain.fuse"
    path.write_text(CHAIN)
    for strategy, enough in (("semi_naive", 3), ("naive", 4)):
        assert main(["run", str(path), "--max-iterations", str(enough - 1),
                     "--fixpoint", strategy]) == 1
        assert f"did not reach a fixpoint in {enough - 1} rounds" in capsys.readouterr().err
        assert main(["run", str(path), "--max-iterations", str(enough),
                     "--fixpoint", strategy]) == 0


def test_representation_sparse_is_kept_for_a_tensor_of_one_dense_equation(tmp_path, capsys):
    """`--representation C=sparse` where C's one equation joins dense values: the
    output is sparse as asked (it came back dense, the flag silently ignored)."""
    import scipy.sparse

    path = tmp_path / "c.fuse"
    path.write_text("A[i,j] = const([[0, 1, 2], [3, 0, 5]])\nC[i,j] = A[i,j] A[i,j]\n"
                    "export C\n")
    assert main(["run", str(path), "--representation", "C=sparse", "--format", "json",
                 "--out", str(tmp_path / "c.npz")]) == 0
    c = json.loads(capsys.readouterr().out)["outputs"]["C"]
    assert c["representation"] == "sparse"
    assert c["nonzeros"] == [[0, 1, 1.0], [0, 2, 4.0], [1, 0, 9.0], [1, 2, 25.0]]
    assert scipy.sparse.load_npz(tmp_path / "c.npz").toarray().tolist() == [[0, 1, 4],
                                                                           [9, 0, 25]]


@pytest.mark.parametrize("flag, said", [
    ("Y=bogus", "--representation Y=bogus: 'bogus' is not one of dense, sparse"),
    ("Y", "--representation takes NAME=dense or NAME=sparse, not 'Y'"),
    ("=sparse", "--representation takes NAME=dense or NAME=sparse, not '=sparse'")])
def test_a_representation_that_is_neither_dense_nor_sparse_is_a_usage_error(
        program, capsys, flag, said):
    """`--representation Y=bogus` is a malformed flag (exit 2, said before the
    program is compiled), as `Y` alone is; it exited 1 as if the program were at
    fault."""
    assert main(["run", str(program), "--representation", flag]) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err


def test_out_folder_of_a_run_without_outputs_is_made(tmp_path, capsys):
    """A query-only --target run has no output: `--out DIR/` says `wrote DIR/`, and
    the folder is there (it said so with nothing made)."""
    path = tmp_path / "q.fuse"
    path.write_text("Parent(Alice, Bob)\nAnc(x,y) = Parent(x,y)\nAnc(Alice, x)?\n"
                    "export Anc\n")
    out = tmp_path / "answers"
    assert main(["run", str(path), "--target", "Anc(Alice, x)?", "--out", f"{out}/"]) == 0
    assert f"wrote {out}/" in capsys.readouterr().out
    assert out.is_dir() and not any(out.iterdir())


def test_fuse_cache_clear_json_is_what_info_said(tmp_path, capsys):
    """`fuse cache clear --format json` (accepted, and printed text before)."""
    folder = tmp_path / "cache"
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / "graph.bin").write_bytes(b"12345")
    assert main(["cache", "info", "--cache-dir", str(folder), "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert main(["cache", "clear", "--cache-dir", str(folder), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == info
    assert info["backends"]["torch"] == {"entries": 0, "files": 1, "bytes": 5}
    assert not (folder / "torch").exists()


def test_a_refusal_of_what_backend_auto_picked_says_it_was_the_pick(program, capsys):
    """`--backend auto --compile` on a small program: NumPy was picked and cannot
    compile; the message says auto picked it and why (it only said `the numpy
    backend runs eagerly only`, a backend the user never named)."""
    assert main(["run", str(program), "--backend", "auto", "--compile"]) == 1
    err = capsys.readouterr().err
    assert 'backend="auto" picked numpy on cpu (small program' in err
    assert "the numpy backend runs eagerly only" in err


def test_an_unknown_extent_says_how_to_give_it(tmp_path, capsys):
    """docs/cli.md, "What runs": a param's extent only an input gives.  The
    refusal says what to do (it only said the extent was not known)."""
    import numpy as np

    path = tmp_path / "w.fuse"
    path.write_text("param W[i]\nY[i] = W[i] * 2\nexport Y\n")
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "the extent of `W`'s axis i is not known" in err
    assert "fuse run --input W=FILE.npy" in err and "`axis i = N`" in err
    np.save(tmp_path / "w.npy", np.ones(2, np.float32))
    assert main(["run", str(path), "--input", f"W={tmp_path / 'w.npy'}"]) == 0


@pytest.mark.parametrize("command", [
    ["train", "--format", "json"],
    ["generate", "--format", "json", "--prompt-ids", "1"],
    ["explain", "--format", "json"],
    ["why", "--format", "json", "{path}", "Y[0]"],
])
def test_a_failed_command_still_writes_one_json_document(tmp_path, capsys, command):
    """`--format json` of a program with errors: a client reads
    `{"error", "diagnostics"}` on stdout, the diagnostics in `fuse check`'s shape
    (train, generate and why wrote nothing on stdout)."""
    path = tmp_path / "bad.fuse"
    path.write_text("Y[i] = X[i\n")
    argv = [part.format(path=path) for part in command]
    if "{path}" not in command:
        argv.append(str(path))
    assert main(argv) == 1
    document = json.loads(capsys.readouterr().out)
    if command[0] == "explain":  # explain shows what it can plan, and the diagnostics
        assert "equations" in document
    else:
        assert document["error"] is None
    assert [d["code"] for d in document["diagnostics"]] == ["unclosed-bracket"]
    assert document["diagnostics"][0]["line"] == 1


def test_a_missing_program_is_said_in_every_json_document(tmp_path, capsys):
    """A path that cannot be read: the reason is in the document (`error`), not
    only on stderr; `fuse check` keeps its one-key document (a shape relied on)
    and says it by its exit status."""
    missing = str(tmp_path / "nowhere.fuse")
    good = tmp_path / "p.fuse"
    good.write_text(PROGRAM)
    assert main(["check", "--format", "json", str(good), missing]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"diagnostics": []}
    assert err.strip() == f"fuse: {missing}: no such file"
    for command in (["explain"], ["train"], ["why", missing, "Y"]):
        argv = [command[0], "--format", "json", *(command[1:] or [missing])]
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert json.loads(out) == {"error": f"fuse: {missing}: no such file", "diagnostics": []}
        assert err.strip() == f"fuse: {missing}: no such file"


def test_a_failed_training_says_why_in_its_json(program, capsys):
    assert main(["train", "--format", "json", str(program)]) == 1
    document = json.loads(capsys.readouterr().out)
    assert "names no loss" in document["error"] and document["diagnostics"] == []


def test_out_never_replaces_a_file_the_run_read(tmp_path, capsys, monkeypatch):
    """`--out` naming the program's source file (or a folder where an output's
    file is a source's) replaced the data with the result; it is refused (exit 2)
    and nothing is written, as `fuse export` refuses it."""
    import numpy as np

    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "X.npy", np.arange(3.0))
    (tmp_path / "p.fuse").write_text('X[i] = "X.npy"\nY[i] = X[i] * 2\nexport X, Y\n')
    for out in ("X.npy", "./", str(tmp_path / "X.npy")):
        assert main(["run", "p.fuse", "--out", out]) == 2
        err = capsys.readouterr().err
        assert f"--out {out} would replace a source of the program" in err
        assert np.load(tmp_path / "X.npy").tolist() == [0.0, 1.0, 2.0]
        assert not (tmp_path / "Y.npy").exists()
    assert main(["run", "p.fuse", "--out", "results/"]) == 0
    assert np.load(tmp_path / "results" / "Y.npy").tolist() == [0.0, 2.0, 4.0]
