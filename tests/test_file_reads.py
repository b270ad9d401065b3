"""Large relation files read whole, once per compile (check.whole_files,
check.file_reads; docs/execution.md "Demand mode", docs/scale.md).

A plain file of 64 KiB or more is split by numpy and its symbols numbered in
bulk: the numbering must be the row-by-row reader's, whatever the program says
about the symbols first; and a compile that analyses the program twice (demand
mode's rewrite) splits the file once."""
from __future__ import annotations

import random

import pytest

import fuse_lang
from fuse_lang.io import whole_files

PROGRAM = """Parent(x,y) = "parent.tsv"
Parent(Zed, P3)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(P5, x)?
Ancestor(x, P7)?
"""


def _tree(folder, size: int, seed: int, spaced: bool = False) -> None:
    rng = random.Random(seed)
    lines = [f"P{rng.randrange(max(k // 2, 1)) if k > 1 else 0}\tP{k}" for k in range(1, size)]
    if spaced:  # a cell with a space around it: the row-by-row reader strips it
        lines[size // 3] = lines[size // 3].replace("\t", " \t", 1)
    (folder / "parent.tsv").write_text("\n".join(lines) + "\n")


def _row_by_row(monkeypatch):
    monkeypatch.setattr(whole_files, "WHOLE_FILE_BYTES", 1 << 60)


@pytest.mark.parametrize("spaced", [False, True])
def test_a_file_read_whole_is_numbered_as_row_by_row(tmp_path, monkeypatch, spaced):
    _tree(tmp_path, 12_000, seed=3, spaced=spaced)
    assert (tmp_path / "parent.tsv").stat().st_size > whole_files.WHOLE_FILE_BYTES
    whole = fuse_lang.analyze(PROGRAM, base_dir=tmp_path)
    _row_by_row(monkeypatch)
    rows = fuse_lang.analyze(PROGRAM, base_dir=tmp_path)
    assert not [d for d in whole.diagnostics if d.severity.name == "ERROR"]
    assert whole.domain_symbols == rows.domain_symbols
    # the fact's constants come first, then the file's symbols as met row by row (a
    # query's constants are looked up, not added)
    symbols = whole.domain_symbols[whole.tensors["Parent"].axes[0].domain]
    assert symbols[:3] == ("Zed", "P3", "P0") and len(symbols) == 12_001


@pytest.mark.parametrize("mode", ["forward", "demand"])
def test_answers_do_not_depend_on_how_the_file_is_read(tmp_path, monkeypatch, mode):
    _tree(tmp_path, 6_000, seed=5)
    config = fuse_lang.ExecutionConfig(mode=mode)
    whole = fuse_lang.compile(PROGRAM, base_dir=tmp_path, config=config).execute()
    _row_by_row(monkeypatch)
    rows = fuse_lang.compile(PROGRAM, base_dir=tmp_path, config=config).execute()
    assert [set(q.tuples) for q in whole.queries] == [set(q.tuples) for q in rows.queries]
    assert whole.queries[0].tuples and whole.queries[1].tuples


def test_demand_mode_splits_a_file_once_per_compile(tmp_path, monkeypatch):
    _tree(tmp_path, 20_000, seed=7)
    splits = []
    split = whole_files.split_relation
    monkeypatch.setattr(whole_files, "split_relation",
                        lambda text, sep, quoted: splits.append(sep) or split(text, sep, quoted))
    program = fuse_lang.compile(PROGRAM, base_dir=tmp_path,
                                config=fuse_lang.ExecutionConfig(mode="demand"))
    assert program.demand is not None  # the rewrite was analysed too
    first = program.execute()
    second = program.execute()
    assert len(splits) == 1  # two analyses and two runs: one split
    assert [q.tuples for q in first.queries] == [q.tuples for q in second.queries]
    fuse_lang.analyze(PROGRAM, base_dir=tmp_path)  # outside compile nothing is kept
    assert len(splits) == 2


def test_a_file_changed_between_compiles_is_read_again(tmp_path):
    text = 'Parent(x,y) = "parent.tsv"\nParent(P1, x)?\n'
    _tree(tmp_path, 12_000, seed=1)
    before = fuse_lang.compile(text, base_dir=tmp_path).execute().queries[0].tuples
    lines = (tmp_path / "parent.tsv").read_text().splitlines()
    (tmp_path / "parent.tsv").write_text("\n".join(lines + ["P1\tQnew"]) + "\n")
    after = fuse_lang.compile(text, base_dir=tmp_path).execute().queries[0].tuples
    assert set(after) == set(before) | {("Qnew",)}


@pytest.mark.parametrize("odd", ["-4", "42", "\u00e9t\u00e9"])
def test_a_large_file_with_numbers_or_non_ascii_among_symbols(tmp_path, monkeypatch, odd):
    lines = [f"a{k}\tb{k}" for k in range(9000)] + [f"a1\t{odd}"]
    (tmp_path / "e.tsv").write_text("\n".join(lines) + "\n")
    text = 'E(x, y) = "e.tsv"\nE(a1, y)?\n'
    whole = fuse_lang.analyze(text, base_dir=tmp_path)
    answer = fuse_lang.compile(text, base_dir=tmp_path).execute().queries[0].tuples
    _row_by_row(monkeypatch)
    rows = fuse_lang.analyze(text, base_dir=tmp_path)
    assert whole.domain_symbols == rows.domain_symbols
    assert [d.message for d in whole.diagnostics] == [d.message for d in rows.diagnostics]
    assert set(answer) == set(fuse_lang.compile(text, base_dir=tmp_path).execute()
                              .queries[0].tuples)
