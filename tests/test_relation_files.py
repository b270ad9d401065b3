"""Relation files as users have them, and what a cell means (io.cells,
io.relation_files; docs/language.md "Values in relations", "Relation files").

One reading of a cell everywhere: the checker, the line reader, the whole-file
reader, .jsonl and the run agree; each case a fuzz campaign found wrong answers
right, or a clear diagnostic at `fuse check`."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings, strategies as st

import fuse_lang
from fuse_lang.cli.main import main as cli_main
from fuse_lang.io import whole_files
from fuse_lang.io.cells import cell_value
from fuse_lang.io.relation_files import read_relation
from fuse_lang.io.source_files import SourceError


def answers(text: str, folder) -> list[set]:
    result = fuse_lang.compile(text, base_dir=folder).execute()
    return [set(q.tuples) for q in result.queries]


def codes(text: str, folder) -> list[str]:
    return [d.code for d in fuse_lang.analyze(text, base_dir=folder).diagnostics]


# ------------------------------------------------------------- a cell's value

@pytest.mark.parametrize("text, value", [
    ("-7", -7), ("+1", 1), ("007", 7), (" 42 ", 42), ("3000000000", 3000000000),
    ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)),
    ("9223372036854775808", "9223372036854775808"),  # past 64 bits: a symbol
    ("1.5", 1.5), ("1e300", 1e300), ("1e400", "1e400"), ("nan", "nan"),
    ("²", "²"), ("③", "③"), ("--5", "--5"), ("1#a", "1#a"), ("#", "#"), ("ann", "ann"),
    ("5" * 5000, "5" * 5000),
])
def test_what_a_cell_means(text, value):
    got = cell_value(text)
    assert got == value and type(got) is type(value)


def test_a_quoted_cell_is_a_string():
    assert cell_value("1", quoted=True) == "1"


# ------------------------------------------------ the two readers agree

_CELLS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["a", "bb", "abcdefgh", "abcdefghabcdefgh", "x" * 24, "-", "+", "e", "1e5",
                     "0.5", "+3", "-0", "é", "ü²", "③", "--5", "1#a", '"q"', "a b", ""]),
    st.text(alphabet="abAB01-+.", min_size=1, max_size=9),
)


def _write(path, rows: list[list[str]], ending: str = "\n") -> None:
    path.write_bytes(ending.join("\t".join(r) for r in rows).encode() + ending.encode())


def _both(path):
    """The relation by the whole-file reader and by the line reader (or the error)."""
    out = []
    for whole in (True, False):
        try:
            out.append(read_relation(path, None, whole=whole).tuples())
        except SourceError as err:
            out.append(("error", type(err)))
    return out


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 40), width=st.integers(1, 4), data=st.data())
def test_the_whole_file_reader_and_the_line_reader_agree(tmp_path_factory, rows, width, data):
    folder = tmp_path_factory.mktemp("agree")
    cells = [[data.draw(_CELLS) for _ in range(width)] for _ in range(rows)]
    # repeated past the whole-file threshold: sizes just under and over it too
    target = data.draw(st.sampled_from([0, whole_files.WHOLE_FILE_BYTES - 200,
                                        whole_files.WHOLE_FILE_BYTES + 200]))
    line = len("\t".join(cells[0])) + 1
    repeat = max(1, target // max(sum(len("\t".join(r)) + 1 for r in cells), 1))
    body = cells * repeat
    assert line  # (a row has a line)
    if data.draw(st.booleans()):  # a ragged row somewhere
        body.insert(len(body) // 2, body[0] + ["z"])
    _write(folder / "r.tsv", body, data.draw(st.sampled_from(["\n", "\r\n"])))
    whole, by_line = _both(folder / "r.tsv")
    assert whole == by_line


@pytest.mark.parametrize("width", [8, 16, 24])
def test_a_large_file_whose_widest_cell_is_a_multiple_of_eight(tmp_path, width):
    rng = random.Random(width)
    rows = [f"{'s' * (width - 6)}{rng.randrange(10**5):06d}\tn{k}" for k in range(7000)]
    (tmp_path / "r.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert (tmp_path / "r.tsv").stat().st_size > whole_files.WHOLE_FILE_BYTES
    whole, by_line = _both(tmp_path / "r.tsv")
    assert whole == by_line
    text = 'R(x, y) = "r.tsv"\nR(x, "n0")?\n'
    assert codes(text, tmp_path) == []
    assert len(answers(text, tmp_path)[0]) == 1


# ------------------------------------------ the fuzz campaign's wrong answers

@pytest.mark.parametrize("lines, want", [
    (["a\t-1", "b\t2"], {("a", -1), ("b", 2)}),             # negative integers wrapped
    (["a\t0", "b\tc"], {("a", 0), ("b", "c")}),              # a column of ints and symbols
    (["a\t1", "b\tc"], {("a", 1), ("b", "c")}),
    (["+1\t0", "+0\t1"], {(1, 0), (0, 1)}),                  # `+1` is the integer 1
    (["\ufeffAnn\tBob", "Ann\tCid"], {("Ann", "Bob"), ("Ann", "Cid")}),  # a BOM
    (["1#a\t²", "③\t--5"], {("1#a", "²"), ("③", "--5")}),
    (["k\t" + "7" * 5000], {("k", "7" * 5000)}),
])
def test_relation_file_cells_answer_right(tmp_path, lines, want):
    (tmp_path / "r.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = 'R(x, y) = "r.tsv"\nR(x, y)?\n'
    assert [c for c in codes(text, tmp_path) if c not in ("header-row",)] == []
    assert answers(text, tmp_path) == [want]


def test_jsonl_values(tmp_path):
    (tmp_path / "r.jsonl").write_text('[0, "p"]\n[1, 0.0]\n[-1, "1"]\n[2, 1]\n')
    text = 'R(x, y) = "r.jsonl"\nR(x, y)?\nR(x, "1")?\nR(x, 1)?\n'
    assert codes(text, tmp_path) == []
    every, quoted, number = answers(text, tmp_path)
    assert every == {(0, "p"), (1, 0.0), (-1, "1"), (2, 1)}
    assert quoted == {(-1,)} and number == {(2,)}  # "1" and 1 are different values


@pytest.mark.parametrize("line, words", [
    ("[1, 1e999]", "not finite"), ("[1, 123456789012345678901234]", "64 bits"),
    ("[1, [2]]", "a list"), ("[1, null]", "null"),
])
def test_jsonl_cells_that_are_no_values_are_clear_errors(tmp_path, line, words):
    (tmp_path / "r.jsonl").write_text("[0, 1]\n" + line + "\n")
    (diag,) = fuse_lang.analyze('R(x, y) = "r.jsonl"\n', base_dir=tmp_path).diagnostics
    assert diag.code == "unreadable-source" and words in diag.message and "line 2" in diag.message


def test_quoted_fields_crlf_and_blank_lines(tmp_path):
    (tmp_path / "r.csv").write_bytes(b'"New York",1\r\n"1",2\r\n"a ""b""",3\r\n\r\n\r\n')
    text = 'R(x, y) = "r.csv"\nR(x, y)?\nR("New York", y)?\n'
    assert codes(text, tmp_path) == []
    every, york = answers(text, tmp_path)
    assert every == {("New York", 1), ("1", 2), ('a "b"', 3)} and york == {(1,)}


def test_souffle_facts_files(tmp_path):
    (tmp_path / "edge.facts").write_text("1\t2\n2\t3\n3\t-4\n", encoding="utf-8")
    text = 'Edge(x, y) = "edge.facts"\nPath(x, y) = Edge(x, y)\n' \
           'Path(x, z) = Path(x, y) Edge(y, z)\nPath(1, y)?\n'
    assert "unreadable-source" not in codes(text, tmp_path)
    assert answers(text, tmp_path) == [{(2,), (3,), (-4,)}]
    (tmp_path / "x.facts").write_text("1\t2\n")
    (diag,) = [d for d in fuse_lang.analyze('X[i, j] = "x.facts"\n', base_dir=tmp_path)
               .diagnostics if d.code == "unreadable-source"]
    assert "Boolean relation" in diag.message


# ------------------------------------------------------------- header rows

def test_a_header_row_is_a_warning_with_fixes(tmp_path):
    (tmp_path / "parent.tsv").write_text("parent\tchild\nAnn\tBob\nBob\tCid\n")
    text = 'Parent(x, y) = "parent.tsv"\nParent(x, y)?\n'
    (diag,) = [d for d in fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
               if d.code == "header-row"]
    assert diag.severity.name == "WARNING" and "(parent, child) looks like a header" \
        in diag.message
    skip, keep = diag.fixes
    edit = skip.edits[0]
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert fixed.startswith('Parent(x, y) = source("parent.tsv", header=1)')
    assert codes(fixed, tmp_path) == []
    assert answers(fixed, tmp_path) == [{("Ann", "Bob"), ("Bob", "Cid")}]
    edit = keep.edits[0]
    as_data = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert codes(as_data, tmp_path) == []
    assert ("parent", "child") in answers(as_data, tmp_path)[0]


def test_a_header_over_numbers_and_a_large_file(tmp_path):
    rows = ["src\tdst"] + [f"{k}\t{k + 1}" for k in range(12_000)]
    (tmp_path / "e.tsv").write_text("\n".join(rows) + "\n")
    assert (tmp_path / "e.tsv").stat().st_size > whole_files.WHOLE_FILE_BYTES
    text = 'E(x, y) = source("e.tsv", header=1)\nE(5, y)?\n'
    assert codes(text, tmp_path) == []
    assert answers(text, tmp_path) == [{(6,)}]
    assert "header-row" in codes('E(x, y) = "e.tsv"\n', tmp_path)


def test_data_that_only_looks_lowercase_is_no_header(tmp_path):
    (tmp_path / "r.tsv").write_text("ann\tbob\nbob\tcid\n")
    assert codes('R(x, y) = "r.tsv"\n', tmp_path) == []


def test_a_bad_source_option_is_an_error(tmp_path):
    (tmp_path / "r.tsv").write_text("a\tb\n")
    (diag,) = fuse_lang.analyze('R(x, y) = source("r.tsv", skip=1)\n',
                                base_dir=tmp_path).diagnostics
    assert diag.code == "invalid-statement" and "header=1" in diag.message


# -------------------------------------------------- 64-bit identifiers

def test_a_closure_over_64_bit_and_negative_ids(tmp_path):
    rng = random.Random(11)
    ids = [rng.choice([-1, 1]) * rng.randrange(2**62) for _ in range(300)] + [-7, 2**63 - 1]
    edges = {(rng.choice(ids), rng.choice(ids)) for _ in range(500)}
    (tmp_path / "edge.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(edges)))
    text = ('Edge(x, y) = "edge.tsv"\nPath(x, y) = Edge(x, y)\n'
            'Path(x, z) = Path(x, y) Edge(y, z)\nPath(x, y)?\n')
    assert answers(text, tmp_path) == [_closure(edges)]
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    used = {v for e in edges for v in e}
    # memory in proportion to the facts: the extent is the count of distinct ids
    assert analysis.tensors["Path"].shape == (len(used), len(used))


def _closure(edges: set) -> set:
    """The plain Python reference: new paths extended by one edge until none is new."""
    after: dict = {}
    for a, b in edges:
        after.setdefault(a, []).append(b)
    reach, new = set(edges), set(edges)
    while new:
        new = {(a, c) for a, b in new for c in after.get(b, ())} - reach
        reach |= new
    return reach


def test_a_large_file_of_ids_with_a_symbol_among_them(tmp_path):
    # past the whole-file threshold, ids in a narrow range (numbered by a table over
    # the range, io.whole_files), and a fact that puts a symbol in their domain:
    # numbered in order of first appearance, then answers as from a plain reading
    rng = random.Random(5)
    # (forward within blocks of 30 ids: a closure of a few hundred thousand pairs)
    edges = {(a, b) for a in range(9000) for b in (a + rng.randrange(1, 5),)
             if b // 30 == a // 30} | {(rng.randrange(9000), 29) for _ in range(2000)}
    text = "".join(f"{a}\t{b}\n" for a, b in sorted(edges, key=lambda e: rng.random()))
    assert len(text) > whole_files.WHOLE_FILE_BYTES
    (tmp_path / "edge.tsv").write_text(text)
    program = ('Edge(x, y) = "edge.tsv"\nEdge("root", 17)\nPath(x, y) = Edge(x, y)\n'
               'Path(x, z) = Path(x, y) Edge(y, z)\nPath("root", y)?\nPath(x, 40)?\n')
    reach = _closure(edges | {("root", 17)})
    assert answers(program, tmp_path) == [{(b,) for a, b in reach if a == "root"},
                                          {(a,) for a, b in reach if b == 40}]


_ID_COLUMNS = st.sampled_from([(0, 40), (-5, 5), (-(2**63), 2**63 - 1), (10**12, 10**12 + 99)]) \
    .flatmap(lambda span: st.integers(1, 3).flatmap(lambda width: st.lists(
        st.lists(st.integers(*span), min_size=width, max_size=width), min_size=1, max_size=150)))


@settings(max_examples=60, deadline=None)
@given(rows=_ID_COLUMNS, data=st.data())
def test_columns_of_ids_are_numbered_by_first_appearance(rows, data):
    np = pytest.importorskip("numpy")
    columns = [np.array(column, dtype=np.int64) for column in zip(*rows)]
    values, count, ranked = whole_files.relation_of_columns(columns)
    assert count == len(rows)
    assert values == tuple(tuple(dict.fromkeys(column)) for column in zip(*rows))
    # the columns of one domain: their values row by row, each where it first appears
    chosen = tuple(sorted(data.draw(st.sets(st.sampled_from(range(len(columns))),
                                            min_size=1))))
    base = ranked.base_after(0)
    numbered = ranked.numbered(chosen, None)
    first = list(dict.fromkeys(row[c] for row in rows for c in chosen))
    assert list(numbered) == first
    numbers = [numbered[v][0] for v in first]
    assert numbers == sorted(numbers) and numbers[0] >= base


@settings(max_examples=60, deadline=None)
@given(values=st.sets(st.integers(-50, 3000), min_size=1, max_size=400),
       wanted=st.lists(st.integers(-100, 3100) | st.integers(-(2**63), 2**63 - 1), max_size=60))
def test_ids_are_found_at_their_positions(values, wanted):
    # (ids in a narrow range are looked up in a table over it: check.value_tables)
    np = pytest.importorskip("numpy")
    from fuse_lang.check.value_tables import column_positions

    domain = tuple(sorted(values))
    got = column_positions(domain, np.array(wanted, dtype=np.int64))
    assert got.tolist() == [domain.index(w) if w in values else -1 for w in wanted]


def test_the_cli_checks_and_runs_a_file_of_big_ids(tmp_path, capsys):
    (tmp_path / "r.tsv").write_text("3000000000\t-7\n-7\t5\n")
    (tmp_path / "p.fuse").write_text('R(x, y) = "r.tsv"\nR(3000000000, y)?\n')
    assert cli_main(["check", str(tmp_path / "p.fuse")]) == 0
    capsys.readouterr()
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 0
    out = capsys.readouterr().out
    assert "-7" in out and "GB" not in out


def test_a_json_object_holds_a_relation_per_tensor(tmp_path):
    (tmp_path / "db.json").write_text(json.dumps({"R": [[1, "a"], [2, "b"]], "S": [["a"]]}))
    text = 'R(x, y) = "db.json"\nS(y) = "db.json"\nT(x) = R(x, y) S(y)\nT(x)?\n'
    assert codes(text, tmp_path) == []
    assert answers(text, tmp_path) == [{(1,)}]


def test_an_array_sink_is_indexed_by_value(tmp_path):
    import numpy as np

    (tmp_path / "e.tsv").write_text("2\t5\n5\t9\n")
    text = 'E(x, y) = "e.tsv"\nN[x] = E(x, y)\n"n.npy" = N[x]\n"e.npy" = E(x, y)\n'
    fuse_lang.compile(text, base_dir=tmp_path).run()
    n = np.load(tmp_path / "n.npy")
    assert n.shape == (6,) and n[2] == 1 and n[5] == 1 and n.sum() == 2  # rows 2 and 5
    e = np.load(tmp_path / "e.npy")
    assert e.shape == (6, 10) and e[2, 5] == 1 and e[5, 9] == 1 and e.sum() == 2


def test_an_array_sink_of_negative_ids_says_to_write_tuples(tmp_path, capsys):
    (tmp_path / "e.tsv").write_text("-7\t3000000000\n")
    (tmp_path / "p.fuse").write_text('E(x, y) = "e.tsv"\n"e.npy" = E(x, y)\n')
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 1
    err = capsys.readouterr().err
    assert "no array positions" in err and ".tsv" in err and "Traceback" not in err
    assert not (tmp_path / "e.npy").exists()


@pytest.mark.parametrize("text", [
    "N(1" + "0" * 310 + ")\ne() = N(n) N(m) (n == m + m)",
    "N(0)\nN(n + 1" + "0" * 310 + ") = N(n)",
    "X[t] = Y[t - 1" + "0" * 30 + "]",
])
def test_integers_past_64_bits_are_diagnostics(text):
    (diag,) = [d for d in fuse_lang.analyze(text).diagnostics if d.severity.name == "ERROR"]
    assert diag.code == "invalid-index" and "64 bits" in diag.message
