"""A second audit of the notebook (issue 31; docs/notebooks.md): notebook values
read by their name alone where the name is lower case and read as a relation
(`rows(x,y)`, which the checker alone takes for a call), a jax.Array read as a
tensor, a number read by its name told how to write it, re-running a cell after the variable it reads changed, exports that
replace notebook variables, a cell of comments only, and symbols holding HTML
shown escaped.

The cells run in one IPython shell of their own process (test_notebook_magic's
harness)."""
from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("IPython")
pytest.importorskip("pandas")

from test_notebook_magic import run_cells  # noqa: E402 - (tests/ is on the path)

HAS_JAX = importlib.util.find_spec("jax") is not None

CELLS = [
    # 0: the values
    "import numpy as np, pandas as pd\nx = np.arange(3.0)\n"
    "df = pd.DataFrame({'a': ['A', 'B'], 'b': ['B', 'C']})\n"
    "rows = [('A', 'B'), ('B', 'C')]\nlookup = {'A': 'B'}\nR = 'python'\n"
    "tags = pd.DataFrame({'a': ['<script>alert(1)</script>', 'a&b'], 'b': ['B', 'C']})",
    # 1-4: a lower-case DataFrame and list of tuples read as relations by their names
    "%%fuse\nR(x,y) = df(x,y)\nR(x,z) = R(x,y) df(y,z)\nexport R",
    "print(type(R).__name__, sorted(map(tuple, R.values.tolist())))",
    "%%fuse --quiet\nS(x,y) = rows(x,y)\nexport S",
    "print(sorted(map(tuple, S.values.tolist())))",
    # 5: a dict is no source: an error with a hint, nothing set, no traceback
    "%%fuse\nT(x,y) = lookup(x,y)\nexport T",
    # 6-9: re-running a cell after the variable it reads changed reads the new value
    "%%fuse --quiet\nY[i] = x[i] * 2\nexport Y",
    "print(Y.tolist())",
    "x = np.arange(3.0) + 10",
    "%%fuse --quiet\nY[i] = x[i] * 2\nexport Y",
    "print(Y.tolist())",
    # 11: a cell of comments only runs nothing and sets nothing
    "%%fuse\n# only a comment\n# and another",
    # 12: symbols holding HTML are escaped in the rich display
    "%%fuse --input Tg=tags --quiet\nQ(x,y) = Tg(x,y)\nexport Q",
    # 13-16: a number read by its name is told how to write it; a bool, an int past
    # 64 bits get the plain hint (and no traceback)
    "alpha = 0.5\nlr = np.float64(1e-05)\nflag = True\nbig = 10**30",
    "%%fuse\nY[i] = x[i] * alpha * lr\nexport Y",
    "%%fuse\nY[i] = x[i] * flag\nexport Y",
    "%%fuse\nY[i] = x[i] * big\nexport Y",
]
if HAS_JAX:
    CELLS += [
        # 17-19: a jax.Array read as a tensor by its name
        "import jax.numpy as jnp\nja = jnp.arange(4.0)",
        "%%fuse --quiet\nJ[i] = ja[i] * 3\nexport J",
        "print(type(J).__name__, J.tolist())",
    ]


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    return run_cells(tmp_path_factory.mktemp("nb"), CELLS)


def test_lower_case_relations_read_by_name(seen):
    assert seen[1]["error"] is None and seen[1]["stdout"] == "set R (3 tuples)\n"
    assert seen[2]["stdout"] == "DataFrame [('A', 'B'), ('A', 'C'), ('B', 'C')]\n"
    assert seen[3]["error"] is None and seen[3]["stdout"] == ""
    assert seen[4]["stdout"] == "[('A', 'B'), ('B', 'C')]\n"


def test_a_dict_gets_a_hint_and_no_traceback(seen):
    out = seen[5]["stdout"]
    assert seen[5]["error"] is None and "Traceback" not in out
    assert "cell:1:10: error[unknown-builtin]" in out
    assert ("hint: `lookup` is a notebook variable, but a dict is no source: a cell reads "
            "a NumPy array, a DataFrame or a set of tuples by its name") in out
    assert out.endswith("cell: 1 error; nothing ran\n")
    assert seen[5]["shown"] == {}


def test_rerun_reads_the_changed_variable(seen):
    assert seen[7]["stdout"] == "[0.0, 2.0, 4.0]\n"
    assert seen[10]["stdout"] == "[20.0, 22.0, 24.0]\n"


def test_comments_only_cell(seen):
    assert seen[11]["error"] is None and seen[11]["stdout"] == ""
    assert seen[11]["shown"]["text/plain"] == "RunResult(outputs: none)"
    assert "nothing to show" in seen[11]["shown"]["text/html"]


def test_html_in_symbols_is_escaped(seen):
    page = seen[12]["shown"]["text/html"]
    assert "<script>" not in page
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in page
    assert "<td>a&amp;b</td>" in page


def test_a_number_gets_a_const_hint(seen):
    out = seen[14]["stdout"]
    assert seen[14]["error"] is None and out.endswith("cell: 2 errors; nothing ran\n")
    assert ("  hint: `alpha` is a notebook variable, but a single number is no source; "
            "write it in the cell as `alpha = const(0.5)`\n") in out
    assert ("  hint: `lr` is a notebook variable, but a single number is no source; "
            "write it in the cell as `lr = const(1e-05)`\n") in out
    for k, name, kind in ((15, "flag", "a bool"), (16, "big", "an int")):
        assert seen[k]["error"] is None and "Traceback" not in seen[k]["stdout"]
        assert (f"  hint: `{name}` is a notebook variable, but {kind} is no source: a cell "
                f"reads a NumPy array") in seen[k]["stdout"]


@pytest.mark.skipif(not HAS_JAX, reason="jax is not installed")
def test_a_jax_array_is_read_by_name(seen):
    assert seen[18]["error"] is None and seen[18]["stdout"] == ""
    assert seen[19]["stdout"] == "ndarray [0.0, 3.0, 6.0, 9.0]\n"
