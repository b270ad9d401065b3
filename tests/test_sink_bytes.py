"""Sinks format tuples in bulk (io/tuple_bytes.py); the bytes are those of the
one-cell-at-a-time rule: each value as `cell_text` writes it, tuples sorted
by value (LANGUAGE.md §14), one line each."""
from __future__ import annotations

import random

import numpy as np
import pytest

import fuse_lang
from fuse_lang.io.relation_tuples import value_key
from fuse_lang.io.sinks import cell_text, write_sparse


def _expected(rows: set[tuple], delimiter: str) -> str:
    ordered = sorted(rows, key=lambda row: tuple(value_key(v) for v in row))
    return "".join(delimiter.join(cell_text(v, delimiter) for v in row) + "\n"
                   for row in ordered)


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_ids_of_every_size_and_sign_are_written_as_the_cell_rule_writes_them(tmp_path,
                                                                          suffix):
    rng = random.Random(4)
    ids = [rng.choice([-1, 1]) * rng.randrange(10 ** rng.randrange(1, 19)) for _ in range(400)]
    ids += [0, -1, 9, 10, -10, 2**63 - 1, -(2**63) + 1]
    rows = {(rng.choice(ids), rng.choice(ids)) for _ in range(3000)}
    (tmp_path / "r.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    text = f'R(x, y) = "r.tsv"\nS(x, y) = R(x, y)\n"out{suffix}" = S(x, y)\n'
    for form in ("dense", "sparse"):
        fuse_lang.compile(text, base_dir=tmp_path, representation={"R": form, "S": form}
                          ).execute()
        written = (tmp_path / f"out{suffix}").read_text()
        assert written == _expected(rows, "\t" if suffix == ".tsv" else ","), form


def test_symbols_that_need_quotes_and_wide_characters_round_trip(tmp_path):
    names = ["plain", "two words", "tab\there", 'quote"d', "1", "", "ünïcødé", "日本", " pad",
             "comma,here", "-3"]
    rows = {(a, b) for a in names for b in names[:4]}
    (tmp_path / "r.csv").write_text(_expected(rows, ","), encoding="utf-8")
    text = 'R(x, y) = "r.csv"\nS(x, y) = R(x, y)\n"out.tsv" = S(x, y)\n"out.csv" = S(x, y)\n'
    fuse_lang.compile(text, base_dir=tmp_path, representation={"R": "sparse", "S": "sparse"}
                      ).execute()
    assert (tmp_path / "out.tsv").read_text(encoding="utf-8") == _expected(rows, "\t")
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == _expected(rows, ",")
    back = fuse_lang.compile('T(x, y) = "out.tsv"\nT(x, y)?\n', base_dir=tmp_path).execute()
    assert set(back.queries[0].tuples) == rows


def test_numeric_non_zeros_are_written_with_their_numbers_last(tmp_path):
    import scipy.sparse as sp

    matrix = sp.csr_array(np.array([[0, 1.5, 0], [-2.25, 0, 1e-30]]))
    assert write_sparse(tmp_path / "w.tsv", matrix, boolean=False)
    assert (tmp_path / "w.tsv").read_text() == "0\t1\t1.5\n1\t0\t-2.25\n1\t2\t1e-30\n"


def test_texts_with_a_nul_byte_take_the_byte_by_byte_path_and_both_paths_agree():
    from fuse_lang.io.tuple_bytes import encoded, encoded_ints, lines_bytes

    rng = np.random.default_rng(5)
    words = ["", "a", "bc", "日本", "x\0y", "\0", "last"]
    for trial in range(60):
        columns = []
        for _ in range(int(rng.integers(1, 4))):
            texts = encoded_ints(rng.integers(-10**6, 10**6, 9)) if rng.random() < 0.5 \
                else encoded(rng.choice(words, 5).tolist() if trial % 2 else words[:4])
            columns.append((texts, rng.integers(0, texts[0].size, 40)))
        want = "".join(
            "\t".join(bytes(texts[1][c][:texts[0][c]]).decode() for texts, codes in columns
                      for c in [codes[t]]) + "\n"
            for t in range(40))
        assert lines_bytes(columns, "\t").decode() == want, trial


def _ordered_ids_program(tmp_path, rows: set[tuple], suffix: str, form: str) -> str:
    """A program that copies relation `rows` (ids: numbered in order, so a sink
    reads it block by block) to `out<suffix>`, held `form`."""
    (tmp_path / "r.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    text = f'R(x, y) = "r.tsv"\nS(x, y) = R(x, y)\n"out{suffix}" = S(x, y)\n'
    fuse_lang.compile(text, base_dir=tmp_path, representation={"R": form, "S": form}).execute()
    return (tmp_path / f"out{suffix}").read_text()


@pytest.mark.parametrize("form", ["dense", "sparse"])
def test_relations_written_block_by_block_equal_the_cell_rule(tmp_path, monkeypatch, form):
    import fuse_lang.io.sinks as sinks

    rng = random.Random(7)
    rows = {(rng.randrange(60), rng.randrange(-5, 60)) for _ in range(900)}
    rows |= {(59, 0), (0, 59)}  # a block boundary may fall inside one row's tuples
    for per_block in (1, 7, 64, 1 << 18):
        monkeypatch.setattr(sinks, "TUPLES_PER_WRITE", per_block)
        assert _ordered_ids_program(tmp_path, rows, ".tsv", form) == _expected(rows, "\t")
        assert _ordered_ids_program(tmp_path, rows, ".csv", form) == _expected(rows, ",")


def test_numeric_and_uncanonical_matrices_written_in_blocks_keep_their_order(
        tmp_path, monkeypatch):
    import scipy.sparse as sp

    import fuse_lang.io.sinks as sinks

    monkeypatch.setattr(sinks, "TUPLES_PER_WRITE", 2)
    matrix = sp.csr_array(np.array([[0, 1.5, 0], [-2.25, 0, 1e-30], [0, 0, 4.0]]))
    assert write_sparse(tmp_path / "w.tsv", matrix, boolean=False)
    assert (tmp_path / "w.tsv").read_text() == \
        "0\t1\t1.5\n1\t0\t-2.25\n1\t2\t1e-30\n2\t2\t4.0\n"
    # columns out of order within a row and a repeated entry: read whole, sorted
    uncanonical = sp.csr_array((np.array([1.0, 1.0, 1.0]), np.array([2, 0, 2]),
                                np.array([0, 3, 3])), shape=(2, 3))
    assert write_sparse(tmp_path / "u.tsv", uncanonical, boolean=True)
    assert (tmp_path / "u.tsv").read_text() == "0\t0\n0\t2\n0\t2\n"


def test_a_large_relation_is_written_in_the_memory_of_one_block(tmp_path, monkeypatch):
    """The sink of a relation of many tuples holds one block of them at a time
    (relation_tuple_chunks), not every tuple's codes and text at once."""
    import tracemalloc

    import scipy.sparse as sp

    import fuse_lang.io.sinks as sinks
    from fuse_lang.io.sinks import write_sink

    monkeypatch.setattr(sinks, "TUPLES_PER_WRITE", 1 << 14)
    matrix = sp.random_array((1000, 1000), density=0.5, rng=np.random.default_rng(0),
                             format="csr")
    matrix.data[:] = 1.0
    as_int64_pairs = matrix.nnz * 16  # the tuples' positions alone, all at once
    for value in (matrix, matrix.toarray() > 0):
        tracemalloc.start()
        try:
            write_sink(tmp_path / "big.tsv", "R", value, True, [], dense_limit=1 << 40)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < as_int64_pairs / 4, (type(value), peak, as_int64_pairs)
    rows, cols = matrix.nonzero()
    assert (tmp_path / "big.tsv").read_text() == "".join(
        f"{a}\t{b}\n" for a, b in sorted(zip(rows.tolist(), cols.tolist())))
