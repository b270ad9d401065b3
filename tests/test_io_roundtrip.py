"""Round trips through files: what a sink writes, a source reads back as the same
values, shapes and kinds (LANGUAGE.md §9, §14; docs/language.md "Files",
"Relation files"); and a malformed file is the same diagnostic to `fuse check`
and `fuse run`.  Every case here was a difference an audit of sinks and sources
found (a value lost, a file the engine wrote and could not read, a check that
passed what the run refused)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fuse_lang
from fuse_lang.cli.main import main as cli_main

TEXT_SINKS = (".csv", ".tsv", ".json", ".jsonl")


def run(text: str, folder):
    return fuse_lang.compile(text, base_dir=folder).execute()


def errors(text: str, folder) -> list[str]:
    return [d.code for d in fuse_lang.analyze(text, base_dir=folder).diagnostics
            if d.severity.name == "ERROR"]


def round_trip(folder, tuples: list[tuple], suffix: str) -> set[tuple]:
    """The relation of `tuples` (from a .json file) written by a sink to `suffix`
    and read back by a source."""
    arity = len(tuples[0])
    (folder / "in.json").write_text(json.dumps([list(t) for t in tuples]))
    xs = ", ".join("xyzw"[:arity])
    run(f'R({xs}) = "in.json"\n"out{suffix}" = R({xs})\n', folder)
    return run(f'S({xs}) = "out{suffix}"\nexport S\n', folder).relation("S").to_set()


# ------------------------------------------------- relations: values kept

@pytest.mark.parametrize("suffix", TEXT_SINKS)
def test_strings_with_line_breaks_come_back(tmp_path, suffix):
    # a .csv/.tsv sink quotes a string with a line break; the reader read a line at
    # a time and refused its own file ("a quoted field is not closed")
    tuples = [("a\nb", "c\rd"), ("e\r\nf", "tab\there"), ("\u2028", 'q"\n"')]
    assert round_trip(tmp_path, tuples, suffix) == set(tuples)


@pytest.mark.parametrize("suffix", TEXT_SINKS)
def test_a_value_alone_on_its_line_comes_back(tmp_path, suffix):
    # a line holding only U+00A0, U+3000, a form feed or NEL was taken for a blank
    # line and dropped; `()` alone on a line is Soufflé's nullary tuple, so quoted
    values = ["\u00a0", "\u3000", "\x0c", "\x85", "()", " ", "", "x"]
    assert round_trip(tmp_path, [(v,) for v in values], suffix) == {(v,) for v in values}


def test_a_facts_sink_refuses_a_lone_nullary_spelling(tmp_path):
    (tmp_path / "in.json").write_text('[["()"], ["a"]]')
    with pytest.raises(fuse_lang.FuseError, match=r"\.facts.*\.tsv"):
        run('R(x) = "in.json"\n"out.facts" = R(x)\n', tmp_path)
    (tmp_path / "in2.json").write_text('[["()", "b"]]')  # beside another value: as is
    run('R(x, y) = "in2.json"\n"out.facts" = R(x, y)\n', tmp_path)
    assert (tmp_path / "out.facts").read_text() == "()\tb\n"


@pytest.mark.parametrize("suffix", (*TEXT_SINKS, ".facts", ".npy"))
@pytest.mark.parametrize("truth", [True, False])
def test_a_nullary_relation_comes_back(tmp_path, suffix, truth):
    # a true nullary relation was written as an empty line (.csv/.tsv/.facts), which
    # reads as no tuple; and `[[]]`, the one empty tuple, was read as false
    fact = "Bob" if truth else "Carl"
    run(f'A(Bob)\nQ() = A({fact})\n"q{suffix}" = Q()\n', tmp_path)
    back = run(f'P() = "q{suffix}"\nexport P\n', tmp_path).relation("P").to_set()
    assert back == ({()} if truth else set())


def test_a_nullary_relation_is_written_as_souffle_writes_it(tmp_path):
    run('A(Bob)\nQ() = A(Bob)\n"q.facts" = Q()\n"q.csv" = Q()\n', tmp_path)
    assert (tmp_path / "q.facts").read_text() == (tmp_path / "q.csv").read_text() == "()\n"
    (tmp_path / "r.facts").write_text("()\n")
    assert run('R() = "r.facts"\nexport R\n', tmp_path).relation("R").to_set() == {()}


_VALUE = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=6),
    st.text(alphabet='",\t\n\r a1().-e\u00a0', max_size=5),  # what quoting is about
    st.sampled_from(["1", "-7", "0.5", "1e5", "()", "a,b", 'q"', " x", "Ann", "ann"]),
)


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(_VALUE, _VALUE) | st.tuples(_VALUE), min_size=1, max_size=6),
       suffix=st.sampled_from((*TEXT_SINKS, ".facts")))
def test_any_values_come_back_from_every_text_sink(tmp_path_factory, rows, suffix):
    folder = tmp_path_factory.mktemp("values")
    rows = [tuple(0.0 if type(v) is float and v == 0 else v for v in r) for r in rows
            if len(r) == len(rows[0])]
    want = {tuple(_kind(v) for v in r) for r in rows}
    try:
        got = round_trip(folder, rows, suffix)
    except fuse_lang.FuseError as err:  # .facts has no quoting: refused, never changed
        assert suffix == ".facts" and "cannot be written to a .facts file" in str(err)
        return
    assert {tuple(_kind(v) for v in r) for r in got} == want


def _kind(value):
    """A value with its kind: 1 and 1.0 and "1" are three values."""
    return (type(value).__name__, value)


# ---------------------------------------------------- dense: what comes back

@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_nan_written_as_null_reads_back_as_nan(tmp_path, suffix):
    # docs/language.md: a .json/.jsonl sink writes NaN as null, and "read back by a
    # source, null is NaN"; the checker refused the null ("holds None, not a number")
    np.save(tmp_path / "x.npy", np.array([np.nan, 1.5, -2.0], dtype=np.float32))
    run(f'X[i] = "x.npy"\n"y{suffix}" = X[i]\n', tmp_path)
    assert errors(f'Y[i] = "y{suffix}"\nexport Y\n', tmp_path) == []
    back = run(f'Y[i] = "y{suffix}"\nexport Y\n', tmp_path).outputs["Y"]
    assert math.isnan(back[0]) and back[1:].tolist() == [1.5, -2.0]


@pytest.mark.parametrize("name, data, lhs", [
    ("m.csv", "1,2\r\n3,4\r\n", "X[i,j]"), ("m.tsv", "1\t2\n3\t4\n", "X[i,j]"),
    ("m.json", "[[1, 2], [3, 4]]", "X[i,j]"), ("m.jsonl", "[1, 2]\n[3, 4]\n", "X[i,j]"),
    ("r.json", '[["A", 1], ["B", 2]]', "R(x,y)"),
])
def test_a_byte_order_mark_is_read_past(tmp_path, name, data, lhs):
    # "UTF-8 with or without a byte-order mark": a dense .csv/.tsv read '\ufeff1' as
    # no number, and .json/.jsonl (dense, or a relation in .json) as no JSON
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + data.encode())
    program = f'{lhs} = "{name}"\nexport {lhs[0]}\n'
    assert errors(program, tmp_path) == []
    result = run(program, tmp_path)
    if lhs[0] == "X":
        assert result.outputs["X"].tolist() == [[1, 2], [3, 4]]
    else:
        assert result.relation("R").to_set() == {("A", 1), ("B", 2)}


@pytest.mark.parametrize("sink", ["y.json", "r.json", "top.json"])
def test_a_json_sink_ends_its_line(tmp_path, sink):
    run('Y[i] = const([3, 1, 2])\nR(Ann, Bob)\n"y.json" = Y[i]\n"r.json" = R(x, y)\n'
        '"top.json" = topk(Y[i], k=2)\n', tmp_path)
    text = (tmp_path / sink).read_text()
    assert text.endswith("]\n") and text.count("\n") == 1
    json.loads(text)


# ------------------------------------ malformed files: one answer, no traceback

@pytest.mark.parametrize("data, lhs", [
    (np.arange(3.0), "R(x, y)"),  # 1 axis into a relation of 2
    (np.ones((2, 3)), "R(x)"),    # 2 axes into a relation of 1
])
def test_an_array_into_a_relation_of_another_arity_is_a_check_error(tmp_path, capsys,
                                                                    data, lhs):
    # `fuse check` passed it and the run stopped with "holds shape (3,), expected (3, 0)"
    np.save(tmp_path / "r.npy", data)
    (tmp_path / "p.fuse").write_text(f'{lhs} = "r.npy"\nexport R\n')
    assert cli_main(["check", str(tmp_path / "p.fuse")]) == 1
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr()
    both = out.out + out.err
    assert both.count("error[arity-mismatch]") == 2 and "Traceback" not in both


@pytest.mark.parametrize("data", ["[true, false]", "3.5", "[1, 2]"])
def test_json_that_is_no_list_of_tuples_is_refused_by_check_and_run_alike(tmp_path, data):
    # `fuse check` read it as a dense shape and passed it; the run refused it
    (tmp_path / "r.json").write_text(data)
    program = 'R(x) = "r.json"\nexport R\n'
    assert errors(program, tmp_path) == ["unreadable-source"]
    with pytest.raises(fuse_lang.FuseError, match="list of lists"):
        run(program, tmp_path)


def test_not_utf8_names_the_byte_and_its_line(tmp_path):
    (tmp_path / "r.csv").write_bytes(b"a,b\nc,\xff\n")
    (d,) = fuse_lang.analyze('R(x, y) = "r.csv"\n', base_dir=tmp_path).diagnostics
    assert d.code == "unreadable-source" and "0xff on line 2" in d.message


def test_an_unclosed_quote_is_named_at_its_line_however_long_the_file(tmp_path):
    # a quoted field may span lines; one never closed is an error at its first line,
    # found in one pass (not a rescan per line joined)
    (tmp_path / "r.csv").write_text("a,b\n\"c,d\n" + "e,f\n" * 200_000)
    (d,) = fuse_lang.analyze('R(x, y) = "r.csv"\n', base_dir=tmp_path).diagnostics
    assert d.code == "unreadable-source" and "line 2: a quoted field is not closed" \
        in d.message


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".tsv", ".json", ".jsonl"])
def test_a_numeric_tensor_over_ids_reads_back_beside_its_relation(tmp_path, suffix):
    # an .npy sink lays an axis of integer values out by value (ids 0, 5, 7: rows 0, 5,
    # 7); the text sinks wrote the same tensor by position (3 rows), which the program
    # that wrote it could not read back (extent-conflict: position 7 outside 3)
    (tmp_path / "e.tsv").write_text("0\t5\n5\t7\n7\t0\n")
    run(f'E(x,y) = "e.tsv"\nC[x] = E(x,y) * 2\n"c{suffix}" = C[x]\n', tmp_path)
    program = f'E(x,y) = "e.tsv"\nC[x] = "c{suffix}"\nD[x] = C[x] E(x,y)\nexport D\n'
    assert errors(program, tmp_path) == []
    assert run(program, tmp_path).outputs["D"].tolist() == [2, 0, 0, 0, 0, 2, 0, 2]


def test_a_numeric_tensor_over_negative_ids_says_which_sink_holds_it(tmp_path):
    (tmp_path / "e.tsv").write_text("-3\t5\n5\t-3\n")
    with pytest.raises(fuse_lang.FuseError, match=r"no array positions.*\.facts"):
        run('E(x,y) = "e.tsv"\nC[x] = E(x,y) * 2\n"c.csv" = C[x]\n', tmp_path)
    run('E(x,y) = "e.tsv"\nC[x] = E(x,y) * 2\n"c.facts" = C[x]\n', tmp_path)
    assert (tmp_path / "c.facts").read_text() == "-3\t2.0\n5\t2.0\n"


def test_a_txt_sink_writes_a_token_text_or_refuses(tmp_path):
    # the .txt sink wrote the second column's tokens whatever the relation held: a
    # token with a blank, a number, gaps or two tokens at a position read back as
    # another relation, silently
    (tmp_path / "w.txt").write_text("the cat sat on the mat\n")
    run('T(p,w) = "w.txt"\n"o.txt" = T(p,w)\n', tmp_path)
    back = run('T(p,w) = "o.txt"\nexport T\n', tmp_path).relation("T").to_set()
    assert back == set(enumerate("the cat sat on the mat".split()))
    for program, words in [
        ('T(p,w) = "w.txt"\nU(p,w) = T(p,w) (p > 2)\n"u.txt" = U(p,w)\n', "positions"),
        ('R(0, "a b")\nR(1, C)\n"u.txt" = R(p,w)\n', 'token "a b"'),
        ('R(0, 5)\nR(1, C)\n"u.txt" = R(p,w)\n', "token 5"),
        ('R(0, B)\nR(0, C)\n"u.txt" = R(p,w)\n', "positions"),
    ]:
        with pytest.raises(fuse_lang.FuseError, match=f"{words}.*\\.tsv"):
            run(program, tmp_path)
        assert not (tmp_path / "u.txt").exists()


@pytest.mark.parametrize("sink", ["out.xlsx", "out.safetensors", "results", "out.csv.bak"])
def test_check_refuses_the_sinks_the_run_refuses(tmp_path, capsys, sink):
    # `fuse check` passed a sink with a suffix no sink writes, and the run refused it
    (tmp_path / "p.fuse").write_text(f'Y[i] = const([1, 2])\n"{sink}" = Y[i]\n')
    assert cli_main(["check", str(tmp_path / "p.fuse")]) == 1
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 1
    both = capsys.readouterr()
    assert (both.out + both.err).count("error[unwritable-sink]") == 2
    assert list(tmp_path.iterdir()) == [tmp_path / "p.fuse"]


@pytest.mark.parametrize("name, data", [
    ("m.csv", "a,b\n1,2\n3,4\n"), ("m.tsv", "a\tb\n1\t2\n3\t4\n"),
    ("m.jsonl", '["a", "b"]\n[1, 2]\n[3, 4]\n'), ("m.json", '[["a", "b"], [1, 2], [3, 4]]'),
])
def test_a_numeric_table_skips_its_header_when_told(tmp_path, name, data):
    # header=1 was read only for relations: a numeric table's header was still a
    # row "not a number", and one without a header lost no row, silently
    (tmp_path / name).write_text(data)
    program = f'X[i,j] = source("{name}", header=1)\nexport X\n'
    assert errors(program, tmp_path) == []
    assert run(program, tmp_path).outputs["X"].tolist() == [[1, 2], [3, 4]]
    (tmp_path / name).write_text(data.replace("a", "5").replace("b", "6"))
    assert run(program, tmp_path).outputs["X"].tolist() == [[1, 2], [3, 4]]


def test_a_header_option_on_an_array_file_is_an_error(tmp_path):
    np.save(tmp_path / "w.npy", np.ones(3))
    (d,) = fuse_lang.analyze('X[i] = source("w.npy", header=1)\n', base_dir=tmp_path).diagnostics
    assert d.code == "invalid-statement" and "w.npy" in d.message
    (tmp_path / "m.csv").write_text("a,b\n1,2\n")
    (d,) = fuse_lang.analyze('X[i,j] = "m.csv"\n', base_dir=tmp_path).diagnostics
    assert d.code == "unreadable-source" and "header=1" in d.message


def test_an_input_of_a_text_file_says_what_an_input_takes(tmp_path, capsys):
    # it said "not a .npy file (bad magic bytes)"
    (tmp_path / "x.csv").write_text("1,2\n")
    (tmp_path / "p.fuse").write_text('X[i] = "x.csv"\nexport X\n')
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--input",
                     f"X={tmp_path / 'x.csv'}"]) == 2
    assert "an input is an array file (.npy, .npz or .safetensors), not .csv" \
        in capsys.readouterr().err


def test_a_nullary_line_reads_alike_in_a_large_file(tmp_path):
    # the whole-file reader of large plain files read a `()` line as the symbol ()
    (tmp_path / "r.tsv").write_text("a\n" * 40_000 + "()\n" + "b\n" * 10)
    (d,) = fuse_lang.analyze('R(x) = "r.tsv"\n', base_dir=tmp_path).diagnostics
    assert d.code == "unreadable-source" and "line 40001 has 0 fields" in d.message
