"""Real data in and out, a second audit (docs/language.md "Files", "Relation
files"; docs/limits.md "Sinks"): files as other tools leave them, where `fuse
check` and `fuse run` must agree (what the checker accepts the run reads; what
it refuses is a coded diagnostic naming why), no value is silently changed, and
a run's sinks are written all or none.  Each case is one a probe found wrong."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli.main import main as cli_main
from fuse_lang.front.diagnostics import Severity


def errors(text: str, folder) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in fuse_lang.analyze(text, base_dir=folder).diagnostics
            if d.severity is Severity.ERROR]


def agree(text: str, folder, capsys) -> tuple[int, int, str]:
    """`fuse check` and `fuse run` of a program: both exit codes and what they said."""
    (folder / "p.fuse").write_text(text)
    checked = cli_main(["check", str(folder / "p.fuse")])
    ran = cli_main(["run", str(folder / "p.fuse")])
    out = capsys.readouterr()
    said = out.out + out.err
    assert "Traceback" not in said and "internal error" not in said, said
    return checked, ran, said


# ------------------------------------------------ line ends and encodings

@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".facts"])
def test_old_mac_line_ends_are_refused_not_read_as_one_tuple(tmp_path, capsys, suffix):
    # before: `a\rb\rc\r` was one tuple, the symbol "a\rb\rc", at check and run alike
    (tmp_path / f"r{suffix}").write_bytes(b"a\rb\rc\r")
    checked, ran, said = agree(f'R(x) = "r{suffix}"\nR(x)?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1)
    assert "unreadable-source" in said and "line 1 holds a carriage return" in said


def test_a_carriage_return_in_quotes_or_before_a_line_feed_stays_readable(tmp_path):
    (tmp_path / "r.csv").write_bytes(b'a,"x\ry"\r\nb,"p\r\nq"\r\n')
    result = fuse_lang.compile('R(x, y) = "r.csv"\nR(x, y)?\n', base_dir=tmp_path).execute()
    assert set(result.queries[0].tuples) == {("a", "x\ry"), ("b", "p\r\nq")}


@pytest.mark.parametrize("data", [
    "a,b\nc,d\n".encode("utf-16"),  # with its byte-order mark
    "a,b\nc,d\n".encode("utf-16-le"),  # without one: valid UTF-8, a NUL every other byte
], ids=["with-mark", "without-mark"])
def test_utf16_relation_files_are_refused(tmp_path, capsys, data):
    (tmp_path / "r.csv").write_bytes(data)
    checked, ran, said = agree('R(x, y) = "r.csv"\nR(x, y)?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1)
    assert "unreadable-source" in said and "UTF-16" in said


def test_a_utf16_text_is_no_tokens_holding_nuls(tmp_path, capsys):
    # before: the tokens "t\0h\0e\0", "\0c\0a\0t\0" and "\0"
    (tmp_path / "t.txt").write_bytes("the cat\n".encode("utf-16-le"))
    checked, ran, said = agree('X(p, t) = "t.txt"\nX(p, t)?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1) and "UTF-16 text without a byte-order mark" in said


def test_a_value_holding_a_nul_still_round_trips(tmp_path):
    # a NUL is a character a value may hold (JSON's \u0000); only UTF-16's pattern,
    # a NUL every other byte, is refused
    (tmp_path / "in.jsonl").write_text('["a\\u0000b", "x"]\n["\\u0000", "y"]\n')
    fuse_lang.compile('R(v, w) = "in.jsonl"\n"o.csv" = R(v, w)\n', base_dir=tmp_path).execute()
    back = fuse_lang.compile('S(v, w) = source("o.csv", header=0)\nS(v, w)?\n',
                             base_dir=tmp_path).execute()
    assert set(back.queries[0].tuples) == {("a\0b", "x"), ("\0", "y")}


def test_a_byte_order_mark_inside_a_joined_file_is_named(tmp_path, capsys):
    # `cat a.csv b.csv`: the second file's mark would start the value "\ufeffc"
    (tmp_path / "r.csv").write_text("\ufeffa,b\n\ufeffc,d\n", encoding="utf-8")
    checked, ran, said = agree('R(x, y) = "r.csv"\nR(x, y)?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1)
    assert "line 2 starts with a byte-order mark" in said


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_a_string_that_starts_with_a_byte_order_mark_round_trips(tmp_path, suffix):
    # before: written unquoted first in the file, it was read back without its mark
    (tmp_path / "in.csv").write_text('"\ufeffc",k\n"\ufeffd",m\n', encoding="utf-8")
    fuse_lang.compile(f'R(x, y) = source("in.csv", header=0)\n"o{suffix}" = R(x, y)\n',
                      base_dir=tmp_path).execute()
    back = fuse_lang.compile(f'S(x, y) = source("o{suffix}", header=0)\nS(x, y)?\n',
                             base_dir=tmp_path).execute()
    assert set(back.queries[0].tuples) == {("\ufeffc", "k"), ("\ufeffd", "m")}


# ------------------------------------------------------------------ JSON

@pytest.mark.parametrize("name, text, program", [
    ("x.json", '{"X": [1, 2], "X": [3]}', 'X[i] = "x.json"\nX[i]?\n'),
    ("r.json", '{"R": [["a"]], "R": [["b"]]}', 'R(x) = "r.json"\nR(x)?\n'),
], ids=["dense", "relation"])
def test_a_json_key_given_twice_is_refused(tmp_path, capsys, name, text, program):
    # before: the last entry won and the first one's data was dropped without a word
    (tmp_path / name).write_text(text)
    checked, ran, said = agree(program, tmp_path, capsys)
    assert (checked, ran) == (1, 1)
    assert "unreadable-source" in said and "names 'X' twice" in said.replace("'R'", "'X'")


# ------------------------------------------------------------------- .npz

def _damaged_npz(path) -> None:
    """A compressed archive whose member's deflated data is garbled past its header."""
    np.savez_compressed(path, X=np.random.default_rng(0).random(5000))
    data = bytearray(path.read_bytes())
    for k in range(2000, 2400):
        data[k] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_damaged_compressed_npz_is_a_diagnostic_not_a_traceback(tmp_path, capsys):
    _damaged_npz(tmp_path / "x.npz")
    checked, ran, said = agree('X[i] = "x.npz"\nX[i]?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1)
    assert "unreadable-source" in said and "the .npz archive is damaged" in said


def test_a_crc_failure_is_named_as_damage_at_the_run(tmp_path, capsys):
    np.savez(tmp_path / "x.npz", X=np.arange(1000.0))  # stored: the header reads, the CRC fails
    data = bytearray((tmp_path / "x.npz").read_bytes())
    data[500] ^= 0xFF
    (tmp_path / "x.npz").write_bytes(bytes(data))
    with zipfile.ZipFile(tmp_path / "x.npz") as archive:
        assert archive.testzip() == "X.npy"
    checked, ran, said = agree('X[i] = "x.npz"\nX[i]?\n', tmp_path, capsys)
    assert (checked, ran) == (0, 1)  # the checker reads headers only (docs/language.md)
    assert "Bad CRC-32 for file 'X.npy'" in said and "not a .npz archive" not in said


def test_a_damaged_npz_input_exits_2_saying_so(tmp_path, capsys):
    _damaged_npz(tmp_path / "in.npz")
    (tmp_path / "p.fuse").write_text('X[i] = "x.npy"\nX[i]?\n')
    np.save(tmp_path / "x.npy", np.zeros(5000))
    assert cli_main(["run", "--input", f"X={tmp_path / 'in.npz'}", str(tmp_path / "p.fuse")]) == 2
    assert "the .npz archive is damaged" in capsys.readouterr().err


# ------------------------------------------------------- empty relation files

@pytest.mark.parametrize("files, program, shape", [
    ({"r.csv": ""}, 'R(x, y) = "r.csv"\nY[y] = R(x, y)\nY[y]?\n', (0,)),
    ({"e.json": "[]"}, 'E(x, y) = "e.json"\nN[y] = E(x, y)\nN[y]?\n', (0,)),
    ({"r.csv": "a,b\n"}, 'R(x, y) = source("r.csv", header=1)\nY[y] = R(x, y)\nY[y]?\n', (0,)),
    ({"t.txt": ""}, 'X[p, t] = "t.txt"\nX[p, t]?\n', (0, 0)),
    ({"t.txt": ""}, 'X(p, t) = "t.txt"\nY[t] = X(p, t)\nY[t]?\n', (0,)),
], ids=["csv", "json", "header-only", "txt-numeric", "txt-boolean"])
def test_an_empty_relation_file_read_by_a_numeric_equation_runs(tmp_path, files, program,
                                                                  shape):
    # before: `fuse check` said no problems, the run stopped: "the extent of `R`'s axis
    # y is not known"
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert errors(program, tmp_path) == []
    result = fuse_lang.compile(program, base_dir=tmp_path).execute()
    assert np.asarray(result.queries[0].value).shape == shape


def test_an_empty_relation_file_keeps_another_sources_extent(tmp_path):
    (tmp_path / "e.csv").write_text("")
    np.save(tmp_path / "w.npy", np.ones(4))
    program = 'E(x, y) = "e.csv"\nW[x] = "w.npy"\nN[x] = E(x, y) W[x]\nN[x]?\n'
    result = fuse_lang.compile(program, base_dir=tmp_path).execute()
    assert np.asarray(result.queries[0].value).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_an_empty_relation_files_column_takes_facts_values(tmp_path):
    (tmp_path / "e.csv").write_text("")
    program = 'E(x, y) = "e.csv"\nE(A, B)\nN[x] = E(x, y)\nN[x]?\n'
    result = fuse_lang.compile(program, base_dir=tmp_path).execute()
    assert np.asarray(result.queries[0].value).tolist() == [1.0]


# ------------------------------------------------------------ sinks: all or none

def test_a_failing_sink_leaves_every_sink_as_it_was(tmp_path, capsys):
    # before: o.csv and o.json were written, then the .facts sink failed the run
    (tmp_path / "o.csv").write_text("old\n")
    program = ('R("  sp ", B)\n"o.csv" = R(x, y)\n"o.json" = R(x, y)\n'
               '"o.facts" = R(x, y)\n')
    (tmp_path / "p.fuse").write_text(program)
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 1
    err = capsys.readouterr().err
    assert "cannot be written to a .facts file" in err
    assert (tmp_path / "o.csv").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv", "p.fuse"]  # no temporaries


def test_sinks_that_succeed_are_all_written(tmp_path):
    program = 'R("  sp ", B)\n"o.csv" = R(x, y)\n"o.json" = R(x, y)\n"o.tsv" = R(x, y)\n'
    fuse_lang.compile(program, base_dir=tmp_path).execute()
    assert (tmp_path / "o.csv").read_text() == '"  sp ",B\n'
    assert json.loads((tmp_path / "o.json").read_text()) == [["  sp ", "B"]]
    assert (tmp_path / "o.tsv").read_text() == '"  sp "\tB\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv", "o.json", "o.tsv"]


def test_a_trailing_delimiter_is_named_in_the_arity_mismatch(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("a,b,\nc,d,\n")
    checked, ran, said = agree('R(x, y) = "r.csv"\nR(x, y)?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1) and "arity-mismatch" in said
    assert "holds 3, its last one empty on every line (a delimiter at each line's end?)" in said


def test_quoted_numbers_in_a_numeric_table_say_so(tmp_path, capsys):
    # before: "a header row? header=1 skips it", for every quoted cell of row 1
    (tmp_path / "x.csv").write_text('"1","2"\n"3","4"\n')
    checked, ran, said = agree('X[i, j] = "x.csv"\nX[i, j]?\n', tmp_path, capsys)
    assert (checked, ran) == (1, 1) and "a table of numbers has no quoting" in said
    assert "header row" not in said


def test_two_sinks_of_one_file_are_refused_before_the_run(tmp_path, capsys):
    # before: both were written, the second over the first, and R's tuples were lost
    checked, ran, said = agree('R(A)\nS(B)\n"o.csv" = R(x)\n"./o.csv" = S(x)\n', tmp_path,
                               capsys)
    assert (checked, ran) == (1, 1) and "error[sink-twice]" in said
    assert "p.fuse:4:1" in said and "p.fuse:3:1: note: the earlier sink of this file" in said
    assert not (tmp_path / "o.csv").exists()


def test_out_never_replaces_a_sinks_file(tmp_path, capsys):
    # before: --out o.npz wrote an archive of no arrays over the sink's o.npz
    (tmp_path / "p.fuse").write_text('X[i] = const([1, 2])\n"o.npz" = X[i]\n')
    assert cli_main(["run", "--out", str(tmp_path / "o.npz"), str(tmp_path / "p.fuse")]) == 2
    assert "would replace the file of one of the program's sinks" in capsys.readouterr().err
    with np.load(tmp_path / "o.npz") as archive:
        assert archive["X"].tolist() == [1.0, 2.0]


@pytest.mark.parametrize("json_format", [False, True], ids=["text", "json"])
def test_a_json_string_holding_a_lone_surrogate_is_refused(tmp_path, capsys, json_format):
    # before: check passed; the run stopped printing it (a traceback with --format
    # json), or writing it to a sink
    (tmp_path / "r.jsonl").write_text('["\\ud800"]\n["ok"]\n')
    (tmp_path / "p.fuse").write_text('R(x) = "r.jsonl"\nR(x)?\n"o.tsv" = R(x)\n')
    fmt = ["--format", "json"] if json_format else []
    assert cli_main(["check", *fmt, str(tmp_path / "p.fuse")]) == 1
    assert cli_main(["run", *fmt, str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "unreadable-source" in out.out + out.err
    assert "a lone surrogate (\\ud800)" in (out.out + out.err).replace("\\\\", "\\")
    assert not (tmp_path / "o.tsv").exists()


def test_a_lone_surrogate_in_a_programs_constant_is_no_traceback_at_the_sink(tmp_path):
    with pytest.raises(fuse_lang.FuseError, match="a value holds .*ud800, half of a UTF-16 "
                                                  "pair alone"):
        fuse_lang.compile('R("\ud800")\n"o.csv" = R(x)\n', base_dir=tmp_path).execute()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, text, program, said", [
    ("r.csv", "a;b\nc;d\n", 'R(x, y) = "r.csv"\nR(x, y)?\n', "splits at semicolons into 2"),
    ("r.tsv", "a b\nc d\n", 'R(x, y) = "r.tsv"\nR(x, y)?\n', "splits at spaces into 2"),
    ("r.tsv", "a,b,c\n", 'R(x, y, z) = "r.tsv"\nR(x, y, z)?\n', "splits at commas into 3"),
], ids=["semicolons", "spaces", "commas"])
def test_another_separator_is_named_in_the_arity_mismatch(tmp_path, capsys, name, text,
                                                          program, said):
    (tmp_path / name).write_text(text)
    checked, ran, out = agree(program, tmp_path, capsys)
    assert (checked, ran) == (1, 1) and "arity-mismatch" in out
    assert f"holds 1, and every cell of it {said}" in out


def test_a_sink_over_the_programs_own_source_is_a_warning(tmp_path, capsys):
    # the run replaced the data it had read, silently (a second run read the doubled values)
    np.save(tmp_path / "x.npy", np.arange(3.0))
    (tmp_path / "link.npy").symlink_to(tmp_path / "x.npy")
    for sink in ("x.npy", "./link.npy"):
        path = tmp_path / "p.fuse"
        path.write_text(f'X[i] = "x.npy"\n"{sink}" = 2 X[i]\n', encoding="utf-8")
        assert cli_main(["check", str(path)]) == 0
        said = capsys.readouterr().out
        assert f"p.fuse:2:1: warning[sink-over-source]: this sink writes `{sink}`, the file " \
               f"`X` is read from" in said
        assert "p.fuse:1:8: note: `X` read from it" in said
    path.write_text('X[i] = "x.npy"\n"y.npy" = 2 X[i]\n', encoding="utf-8")
    assert cli_main(["check", str(path)]) == 0
    assert "sink-over-source" not in capsys.readouterr().out
