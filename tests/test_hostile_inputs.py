"""Issue 28, item 2: no traceback from any input.  A path no file system takes
(a NUL byte, a lone surrogate) is `unreadable-source` through analyze, the
planner and compile; every `.npy` header the checker passes, numpy loads (or
the checker says why not); a huge compared number neither raises nor passes in
silence; a diagonal read of a huge sparse relation stays sparse, and a run out of
memory is said in words."""
from __future__ import annotations

import contextlib
import ctypes
import io
import struct

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli.main import main
from fuse_lang.ide.hover import hover_at
from fuse_lang.run.sparse.csr import SparseTensor

BAD_PATHS = {"\0data/likes.tsv": "NUL byte", "data/likes.tsv\0": "NUL byte",
             "data/\ud800.tsv": "encoding", "\ud800.npy": "encoding", "\0x.npz": "NUL byte",
             "\0w.safetensors": "NUL byte", "\0data/likes.tsv:X": "NUL byte"}


def codes(analysis):
    return [d.code for d in analysis.diagnostics]


@pytest.mark.parametrize("lhs", ["R(x,y)", "R[x,y]"])
@pytest.mark.parametrize("path", list(BAD_PATHS))
def test_a_path_no_file_system_takes_is_unreadable_source_everywhere(tmp_path, path, lhs):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "likes.tsv").write_text("a\tb\n")
    text = f'{lhs} = "{path}"\nS{lhs[1]}x{lhs[-1]} = {lhs.replace(",y", ", y")}\nexport S\n'
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    assert codes(analysis) == ["unreadable-source"]
    assert BAD_PATHS[path] in analysis.diagnostics[0].message
    fuse_lang.plan_program(analysis)  # (os.stat raised ValueError here)
    hover_at(analysis, 1)
    with pytest.raises(fuse_lang.FuseError, match="unreadable-source"):
        fuse_lang.compile(text, base_dir=tmp_path)


@pytest.mark.parametrize("sink", ["\0e.npy", "e\ud800.npy"])
def test_a_sink_path_no_file_system_takes_fails_the_run_in_words(tmp_path, sink):
    # refused by the check itself (`unwritable-sink`), as no run could write it
    text = f'E(1,2)\n"{sink}" = E(x,y)\nexport E\n'
    (diag,) = fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
    assert diag.code == "unwritable-sink"
    with pytest.raises(fuse_lang.FuseError,
                       match="line 2, column 1: the sink .*(NUL byte|encoding).*unwritable-sink"):
        fuse_lang.compile(text, base_dir=tmp_path)


# ------------------------------------------------------------ .npy headers

def npy(path, header: str, data: bytes = b"\0" * 64) -> None:
    raw = header.encode("latin1")
    pad = 64 - (10 + len(raw) + 1) % 64
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw) + pad + 1) + raw
                     + b" " * pad + b"\n" + data)


REFUSED_HEADERS = {
    "{'descr': '<f12', 'fortran_order': False, 'shape': (2,), }": "12-byte long double",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2.7,), }": "not a tuple of integers",
    "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }": "not a tuple of integers",
    "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }": "not True or False",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}": "descr, fortran_order",
    "['<f4', False, (2,)]": "not a dictionary",
    "{'descr': '<f%s', 'fortran_order': False, 'shape': (2,), }" % ("9" * 5000):
        "numbers of a size numpy does not read",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (%s,), }" % ("9" * 5000): "4300 digits",
}


@pytest.mark.parametrize("header", list(REFUSED_HEADERS), ids=lambda h: h[:48])
def test_an_npy_header_numpy_cannot_load_is_refused_by_the_check(tmp_path, header):
    npy(tmp_path / "x.npy", header)
    with pytest.raises(ValueError):
        np.load(tmp_path / "x.npy")
    analysis = fuse_lang.analyze('X[i] = "x.npy"\nexport X\n', base_dir=tmp_path)
    assert codes(analysis) == ["unreadable-source"]
    assert REFUSED_HEADERS[header] in analysis.diagnostics[0].message


def test_an_array_of_more_axes_than_numpy_1_reads_is_refused(tmp_path):
    npy(tmp_path / "x.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }"
        % ("1," * 40))
    analysis = fuse_lang.analyze('X = "x.npy"\nexport X\n', base_dir=tmp_path)
    assert codes(analysis) == ["unreadable-source"]
    assert "40 axes" in analysis.diagnostics[0].message


def test_a_long_double_file_is_read_where_the_platform_has_one(tmp_path):
    size = ctypes.sizeof(ctypes.c_longdouble)
    npy(tmp_path / "x.npy", f"{{'descr': '<f{size}', 'fortran_order': False, 'shape': (2,), }}")
    text = 'X[i] = "x.npy"\nexport X\n'
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    if size <= 8:  # a float64 by another name: an ordinary file
        assert codes(analysis) == []
        return
    assert codes(analysis) == []
    assert np.load(tmp_path / "x.npy").shape == (2,)
    assert fuse_lang.compile(text, base_dir=tmp_path).run()["X"].tolist() == [0.0, 0.0]


def test_a_plain_header_still_reads(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(6, dtype=">i2").reshape(2, 3))
    text = 'X[i,j] = "x.npy"\nexport X\n'
    assert codes(fuse_lang.analyze(text, base_dir=tmp_path)) == []
    assert fuse_lang.compile(text, base_dir=tmp_path).run()["X"].tolist() == \
        [[0, 1, 2], [3, 4, 5]]


# ------------------------------------------------------- huge numbers compared

H = "9" * 310
COMPARED = [
    f"N(0)\nN(n) = N(m) (n == m + {H}) (m < 5)\nexport N\n",
    "N(0)\nN(n) = N(m) (n == m + 1e400 - 1e400) (m < 5)\nexport N\n",
    "N(0)\nN(1)\nM(m, k) = N(m) (k == 1e400 - 1e400)\nexport M\n",
    "N(0)\nN(1)\nM(m, k) = N(m) (k == 0 * 1e400)\nexport M\n",
    f"N(0)\nN(m + 1) = N(m) (m < 5) (m != {H})\nexport N\n",
    "E(1,2)\nQ(n,m) = E(n,m) (n == m + 1e400)\nQ(n,m)?\nexport Q\n",
    f"axis i = 4\nY[i] = (i < {H})\nexport Y\n",
    "axis i = 4\nY[i] = (i == 1e400 - 1e400)\nexport Y\n",
]


@pytest.mark.parametrize("text", COMPARED)
def test_a_huge_compared_number_is_a_warning_and_nothing_raises(text):
    analysis = fuse_lang.analyze(text)
    assert "number-overflow" in codes(analysis)
    fuse_lang.plan_program(analysis)
    if not any(d.severity is fuse_lang.Severity.ERROR for d in analysis.diagnostics):
        fuse_lang.compile(text).run()  # (NumPy's "invalid value" is a warning, said at the line)


# ------------------------------------------------------- sparse diagonals, memory

HUGE_DIAGONAL = """\
axis x = 1000000, y = 1000000
Edge(0, 999999)
Edge(5, 5)
"e.npy" = Edge(x, x)
"""


@pytest.mark.parametrize("representation", [{"Edge": "sparse"}, None])
def test_a_diagonal_of_a_huge_sparse_relation_stays_sparse(tmp_path, representation):
    program = fuse_lang.compile(HUGE_DIAGONAL, base_dir=tmp_path, representation=representation)
    program.run()  # (3.6 TB dense: numpy's MemoryError before)
    written = np.load(tmp_path / "e.npy")
    assert written.shape == (1_000_000,) and written.sum() == 1 and written[5] == 1


def test_a_diagonal_reads_the_same_sparse_and_dense():
    text = """R(1,1,2)\nR(3,3,0)\nR(2,4,1)\nR(5,5,3)\nR(2,2,2)\nE(2,2)\nE(1,3)\nE(3,3)
D(x, z) = R(x, x, z)\nF(x, z) = R(x, y, y) E(y, z)\nG(x) = E(x, x)\nH(x) = R(x, x, x)
export D, F, G, H\n"""
    dense = fuse_lang.compile(text, representation={"R": "dense", "E": "dense"}).run()
    sparse = fuse_lang.compile(text, representation={"R": "sparse", "E": "sparse"}).run()
    for name in "DFGH":
        got = sparse[name]
        got = got.toarray() if hasattr(got, "toarray") else np.asarray(got)
        assert np.array_equal(np.asarray(dense[name]), got), name


def test_a_run_out_of_memory_is_said_in_words(tmp_path, monkeypatch, capsys):
    def refuse(*_args):
        raise MemoryError("Unable to allocate 3.64 TiB for an array with shape "
                          "(1000000, 1000000) and data type float32")

    monkeypatch.setattr(SparseTensor, "diagonal", refuse)
    program = fuse_lang.compile(HUGE_DIAGONAL, base_dir=tmp_path,
                                representation={"Edge": "sparse"})
    with pytest.raises(fuse_lang.FuseError, match=r"line 4: sink 'e.npy': the run ran out of "
                       r"memory \(Unable to allocate 3.64 TiB"):
        program.run()
    (tmp_path / "p.fuse").write_text(HUGE_DIAGONAL)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["run", "--representation", "Edge=sparse", str(tmp_path / "p.fuse")]) == 1
    assert "ran out of memory" in err.getvalue() and "internal error" not in err.getvalue()


# ------------------------------------------ found by running mutated programs (more seeds)

@pytest.mark.parametrize("path", ["\0lib.fuse", "lib\ud800.fuse"])
def test_an_import_path_no_file_system_takes_is_import_not_found(tmp_path, path):
    """`import` asked os.stat of a path with a NUL byte or a lone surrogate, which
    raises ValueError, not OSError: a traceback through analyze."""
    analysis = fuse_lang.analyze(f'import "{path}" as lib\nY = lib::X\n', base_dir=tmp_path)
    (found,) = [d for d in analysis.diagnostics if d.code == "import-not-found"]
    assert "NUL byte" in found.message or "encoding" in found.message


def test_a_source_call_without_a_path_is_an_invalid_statement(tmp_path, capsys):
    """`Y[i] = source(X[i])` looks like a source with options but names no file:
    `fuse check` ended in an AttributeError."""
    (tmp_path / "s.fuse").write_text("X = const([1])\nY[i] = source( X[i])\n")
    assert main(["check", str(tmp_path / "s.fuse")]) == 1
    out = capsys.readouterr().out
    assert "error[invalid-statement]" in out and "as a quoted path" in out


def test_an_equation_of_the_wrong_arity_in_a_recurrence_is_only_its_arity_error():
    """`X[] = 1` beside a recurrence `X[i] = X[i-1] + 1`: the check of the
    recurrence's writes read past the left-hand side's indices."""
    analysis = fuse_lang.analyze("axis i = 3\nX[i] = X[i-1] + 1\nX[] = 1\n")
    assert [c for c in codes(analysis) if c != "recursion"] == ["arity-mismatch"]


def test_a_gather_of_one_argument_is_planned_and_reported(tmp_path, capsys):
    """`gather(Emb[c,d] X[n,p], axis=c)` (the comma lost): `argument-count`, and
    explain's plan of the program with errors no longer indexes a second argument."""
    (tmp_path / "g.fuse").write_text(
        "axis c = 5, d = 3, n = 2, p = 4\nparam Emb[c,d]\nX[n,p] = const([[0,1,2,3],[4,3,2,1]])\n"
        "X0[n,p,d] = gather(Emb[c,d] X[n,p], axis=c)\nexport X0\n")
    assert main(["explain", str(tmp_path / "g.fuse")]) == 1
    assert "error[argument-count]" in capsys.readouterr().err


def test_a_number_literal_past_the_largest_float_is_a_warning_anywhere():
    # not only in a comparison: `Y = 1e400` ran as inf without a word
    text = "Y = 1e400\nX[i] = const([1.0, 2.0]) * -1e999 + 3\nexport Y, X\n"
    (first, second) = [d for d in fuse_lang.analyze(text).diagnostics]
    assert (first.code, first.span) == ("number-overflow", fuse_lang.Span(4, 9))
    assert first.message == ("`1e400` is past the largest float (about 1.8e308): it is "
                             "read as infinity")
    assert second.code == "number-overflow" and "`1e999`" in second.message
    # said once in a comparison, with what it does there
    (said,) = fuse_lang.analyze("E(1,2)\nQ(n,m) = E(n,m) (n == m + 1e400)\nexport Q\n").diagnostics
    assert said.message.endswith("so `==` gives the same answer for every value (a column "
                                 "holds 64-bit integers, up to 2^63-1)")
