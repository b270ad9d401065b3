"""The notebook's edges (docs/notebooks.md): notebook values of every kind as
`--input`s, diagnostics that stay in the cell's own lines, results shown and
given back (escaped Markdown, nullary relations, sparse tensors), whys that
name the notebook variable, and option values that are refused with a reason.

The cells run in one IPython shell of their own process (test_notebook_magic's
harness: `%%fuse` cells, each cell's printed text, rich display and error)."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("IPython")
pytest.importorskip("pandas")

from test_notebook_magic import run_cells  # noqa: E402 - (tests/ is on the path)

import fuse_lang  # noqa: E402

CELLS = [
    # 0: the values
    "import numpy as np, pandas as pd, glob, tempfile, gc, fuse_lang\n"
    "flags = np.array([True, False, True])\nwide = np.arange(3, dtype=np.int64)\n"
    "half = np.arange(3, dtype=np.float16)\nstrided = np.arange(12.0).reshape(3, 4)[:, ::2]\n"
    "empty = np.zeros((0,))\nscalar = np.array(2.0)\nwords = ['Ann', 'Bob']\n"
    "gaps = pd.DataFrame({'a': ['x', None]})\nnans = [('a', float('nan'))]\n"
    "huge = [('a', 10**30)]\nunit = [('()',), ('a',)]\nw = np.arange(3.0)\n"
    "headerish = pd.DataFrame({'a': ['A', 'B'], 'b': ['B', 7]})",
    # 1-4: arrays of every dtype, a strided view, an empty one reach the run as numbers
    "%%fuse --input F=flags --input I=wide --input H=half --input S=strided --quiet\n"
    "Y[i] = F[i] + I[i] + H[i]\nT[j,i] = S[i,j]\nexport Y, T",
    "print(Y.tolist(), T.tolist())",
    "%%fuse --input E=empty\nY[i] = E[i]\nexport Y",
    "%%fuse --input S=scalar\nY = S\nexport Y",
    # 5-6: a list of strings is a relation of single values
    "%%fuse --input W=words\nR(x) = W(x)\nexport R",
    "print(R.values.tolist())",
    # 7-9: cells that would not read back as themselves are refused with their row
    "%%fuse --input G=gaps\nR(x) = G(x)\nexport R",
    "%%fuse --input N=nans\nR(x,y) = N(x,y)\nexport R",
    "%%fuse --input N=huge\nR(x,y) = N(x,y)\nexport R",
    # 10-11: `()` alone in a cell is the symbol, not the nullary tuple
    "%%fuse --input U=unit\nR(x) = U(x)\nexport R",
    "print(R.values.tolist())",
    # 12: a first row that looks like a header is data: no warning about the run's file
    "%%fuse --input E=headerish\nR(x,y) = E(x,y)\nexport R",
    # 13-14: a note about an --input's declaration names the --input, not line 3
    "%%fuse --input S=strided\nY[i] = S[i]\nexport Y",
    "%%fuse --input V=w\nV(x) = A(x)\nA(Ann)\nexport V",
    # 15-17: refused names and lines
    "%%fuse --input export=w\nY[i] = export[i]\nexport Y",
    "%%fuse --input X=w --input X=flags\nY[i] = X[i]\nexport Y",
    '%%fuse --input "X=w\nY[i] = X[i]\nexport Y',
    # 18: --config holding a value of the wrong kind says why
    "bad = {'estimate': 5}",
    "%%fuse --config bad\nB = const(1.0)\nexport B",
    # 20-21: a source the cell declares, given an array: its why names the variable
    '%%fuse --input W=w --why "W[1]" --quiet\nW[i] = "no_such_file.npy"\nV[i] = W[i] W[i]\n'
    "export V",
    "print(_.why('W', (2,)).note)",
    # 22-23: a tensor kept sparse is said so; a nullary relation keeps its truth
    "%%fuse --input X=strided --representation Y=sparse\nY[i,j] = X[i,j] X[i,j]\nexport Y",
    "%%fuse\nA(Ann)\nYes() = A(x)\nNo() = A(Bob)\nexport Yes, No",
    "print(Yes.shape, No.shape)",
    # 25-26: symbols with HTML and Markdown marks display as text
    "marks = [('<script>alert(1)</script>', 'b|c'), ('b|c', '*x*')]",
    "%%fuse --input E=marks\nR(x,y) = E(x,y)\nexport R",
    # 27-29: an error after a good cell runs nothing and keeps what the good one set
    "%%fuse --input X=w --quiet\nKeep[i] = X[i]\nexport Keep",
    "%%fuse --input X=w\nKeep[i] = X[i] X[i]\nZ[i] = Keep[i] Missing[i]\nexport Keep, Z",
    "print(Keep, 'Z' in dir())",
    # 30-33: a cell that runs nothing leaves no folder of its run (one that ran keeps
    # its folder while its result lives: its why reads it; the test looks after exit)
    "before = set(glob.glob(tempfile.gettempdir() + '/fuse-cell-*'))",
    "%%fuse --input X=w\nY[i] = X[i] Missing[i]\nexport Y",
    "%%fuse --input N=nans\nR(x,y) = N(x,y)\nexport R",
    "print(set(glob.glob(tempfile.gettempdir() + '/fuse-cell-*')) - before, len(before) > 0)",
    # 36 (below): the extents of two values that do not agree, named by their variables
    # 34-35: a sparse tensor a cell gave back is a source of the next (it was refused as
    # 'a csr_array of object is not numbers')
    "%%fuse --input X=Y --why 'X[1, 0]' --quiet\nR[i] = X[i,j]\nexport R",
    "print(R.tolist())",
    "%%fuse --input A=w --input B=empty\nY[i] = A[i] B[i]\nexport Y",
    # 37: nullary relations given back are sources again, true and false
    "%%fuse --input T=Yes --input F=No --quiet\nBoth() = T() F()\nEither() = T()\n"
    "Either() = F()\nBoth()?\nEither()?",
    # 38: an output set as a Python keyword could never be read
    "%%fuse --out Y=class\nY = const(1.0)\nexport Y",
]


@pytest.fixture(scope="module")
def temporary(tmp_path_factory):
    """The shell's temporary folder (TMPDIR): the runs' folders go there."""
    return tmp_path_factory.mktemp("notebook-audit-tmp")


@pytest.fixture(scope="module")
def seen(tmp_path_factory, temporary):
    folder = tmp_path_factory.mktemp("notebook-audit")
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(temporary)
    try:
        return run_cells(folder, CELLS, absent=("polars",))
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old


def test_arrays_of_every_dtype_and_layout_reach_the_run(seen):
    assert seen[1]["stdout"] == "" and seen[1]["stderr"] == ""
    assert seen[2]["stdout"] == ("[1.0, 2.0, 5.0] [[0.0, 4.0, 8.0], [2.0, 6.0, 10.0]]\n")
    assert seen[3]["stdout"] == "set Y (0,)\n"
    assert seen[4]["stderr"] == ("%%fuse: --input S: a single number is not a tensor here; "
                                 "write it in the cell as `S = const(2.0)`\n")


def test_a_list_of_strings_is_a_relation(seen):
    assert seen[5]["stdout"] == "set R (2 tuples)\n"
    assert seen[6]["stdout"] == "[['Ann'], ['Bob']]\n"


def test_values_a_relation_cannot_hold_are_refused_with_their_row(seen):
    assert seen[7]["stderr"] == (
        "%%fuse: --input G: row 2: the number nan is not finite (a missing value?); a "
        "relation's values are symbols, ints of 64 bits and finite floats\n")
    assert seen[8]["stderr"].startswith("%%fuse: --input N: row 1: the number nan is not finite")
    assert seen[9]["stderr"].startswith(
        "%%fuse: --input N: row 1: the integer 1000000000…000000 (31 digits) does not fit in "
        "64 bits")
    for cell in seen[7:10]:
        assert cell["stdout"] == "" and cell["shown"] == {} and cell["error"] is None
    assert seen[10]["stdout"] == "set R (2 tuples)\n"
    assert seen[11]["stdout"] == "[['()'], ['a']]\n"


def test_a_first_row_like_a_header_is_data(seen):
    assert seen[12]["stdout"] == "set R (2 tuples)\n" and seen[12]["stderr"] == ""


def test_diagnostics_name_the_input_not_lines_the_cell_lacks(seen):
    assert seen[13]["stdout"] == (
        "cell:1:8: error[arity-mismatch]: `S` has 2 axes (from its first definition) but is "
        "written here with 1\n"
        "1 | Y[i] = S[i]\n"
        "           ^^^^\n"
        "  --input S: note: first defined here\n"
        "cell: 1 error; nothing ran\n")
    printed = seen[14]["stdout"]
    assert "--input V: error[kind-conflict]: `V` is defined as Boolean `( )` first" in printed
    assert "  cell:1:1: note: first defined here\n" in printed
    assert "fuse-cell-" not in printed and "cell:4:" not in printed


def test_extents_that_conflict_are_named_by_the_variables(seen):
    assert seen[36]["stdout"] == (
        "cell:1:8: error[extent-conflict]: extents conflict where `A` is used: `i` has extent "
        "0 in this equation (from the shape of the notebook variable `empty`) but indexes axis "
        "0 of `A`, of extent 3 (from the shape of the notebook variable `w`)\n"
        "1 | Y[i] = A[i] B[i]\n"
        "           ^^^^\n"
        "  --input B: note: extent 0 from the shape of the notebook variable `empty`\n"
        "  --input A: note: extent 3 from the shape of the notebook variable `w`\n"
        "cell: 1 error; nothing ran\n")


def test_refused_names_and_lines(seen):
    assert seen[15]["stderr"] == (
        "%%fuse: --input export: `export` is a keyword of Fuse, not a name a source can "
        "have; give the source another name (`--input OTHER=VARIABLE`)\n")
    assert seen[16]["stderr"] == "%%fuse: --input X is given twice\n"
    assert seen[17]["stderr"] == "%%fuse: the line cannot be read: No closing quotation\n"
    assert seen[19]["stderr"].startswith(
        "cell: the execution configuration is refused: estimate is a tuple of tensor names")
    assert seen[38]["stderr"] == ("%%fuse: --out Y=class: `class` is a keyword of Python, "
                                  "not a notebook variable (name another: Y=VARIABLE)\n")
    for cell in seen[15:20] + seen[38:39]:
        assert cell["error"] is None


def test_a_why_names_the_variable_an_array_came_from(seen):
    assert seen[20]["stdout"] == (
        "why W[1]:\nW[1] = 1\n  `W` is an input of the run: the notebook variable `w`\n")
    assert seen[21]["stdout"] == "`W` is an input of the run: the notebook variable `w`\n"


def test_sparse_tensors_and_nullary_relations_come_back_as_said(seen):
    assert seen[22]["stdout"] == "set Y (3, 2) as a SciPy sparse array\n"
    assert seen[23]["stdout"].endswith("set Yes (1 tuple), No (0 tuples)\n")
    assert seen[24]["stdout"] == "(1, 0) (0, 0)\n"
    page = seen[23]["shown"]["text/html"]
    assert "<b>Yes</b> yes <code>float32</code></div>" in page and "<tr></tr>" not in page


def test_a_sparse_tensor_given_back_is_a_source_again(seen):
    assert seen[34]["stderr"] == ""
    assert seen[34]["stdout"] == ("why X[1, 0]:\nX[1, 0] = 16\n"
                                  "  `X` is read from the notebook variable `Y`\n")
    assert seen[35]["stdout"] == "[4.0, 52.0, 164.0]\n"


def test_nullary_relations_given_back_are_sources_again(seen):
    assert seen[37]["stderr"] == ""
    assert "<code>Both()?</code> no" in seen[37]["shown"]["text/html"]
    assert "<code>Either()?</code> yes" in seen[37]["shown"]["text/html"]


def test_symbols_display_as_text(seen):
    shown = seen[26]["shown"]
    assert "<script>" not in shown["text/html"] and "&lt;script&gt;" in shown["text/html"]
    assert "<script>" not in shown["text/markdown"]


def test_an_error_after_a_good_cell_keeps_the_good_cells_values(seen):
    assert seen[28]["stdout"].endswith("cell: 1 error; nothing ran\n")
    assert seen[29]["stdout"] == "[0. 1. 2.] False\n"


def test_no_folder_of_a_run_is_left_behind(seen, temporary):
    assert seen[33]["stdout"] == "set() True\n"  # the cells that ran nothing left none
    assert list(temporary.glob("fuse-cell-*")) == []  # and the others went at exit


def test_a_relations_markdown_escapes_its_values():
    result = fuse_lang.compile('E("<b>x</b>", "a|b")\nE("*y*", "c\\\\d")\nexport E').execute()
    markdown = result.relation("E")._repr_markdown_()
    assert "| &lt;b&gt;x&lt;/b&gt; | a\\|b |" in markdown
    assert "| \\*y\\* | c\\\\d |" in markdown
    done = fuse_lang.compile("A(Ann)\nDone() = A(x)\nexport Done").execute().relation("Done")
    assert done._repr_markdown_() == "**Done** 1 tuple (true)"
    assert len(done.to_pandas()) == 1 and repr(done) == "Relation(Done(): 1 tuple: [()])"


def test_a_configuration_of_the_wrong_kind_is_refused():
    with pytest.raises(fuse_lang.FuseError, match="estimate is a tuple of tensor names"):
        fuse_lang.compile("B = const(1.0)", config=fuse_lang.ExecutionConfig(estimate=5))
