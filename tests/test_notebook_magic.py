"""The `%%fuse` magic's run options, its pictures, and the notebook without
pandas or polars (docs/notebooks.md; issue 31).

Each scenario runs its cells in an IPython shell of its own process (the
harness below: `%load_ext fuse_lang`, then the cells, each cell's printed text,
rich display and error recorded), so a test can make `import pandas` fail as it
fails where pandas is not installed, without touching this process."""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("IPython")  # the test extra holds it; `fuse-lang[notebook]` too

ROOT = Path(__file__).resolve().parent.parent

# argv: the JSON file to write, the modules made absent (comma-separated); the
# cells come as a JSON list on standard input
HARNESS = r'''
import importlib.abc, json, sys
absent = {m for m in sys.argv[2].split(",") if m}

class Absent(importlib.abc.MetaPathFinder):
    """`import pandas` fails as it does where pandas is not installed."""
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in absent:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent())
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

shell = InteractiveShell.instance()
# the cell's value is recorded (run.result), not printed as `Out[1]: ...`
shell.displayhook.write_output_prompt = lambda: None
shell.displayhook.write_format_data = lambda *args, **kwargs: None
shell.run_cell("%load_ext fuse_lang")
seen = []
for source in json.load(sys.stdin):
    with capture_output() as cap:
        run = shell.run_cell(source)
    shown = {}
    if run.result is not None:
        shown = shell.display_formatter.format(run.result)[0]
    error = run.error_in_exec or run.error_before_exec
    seen.append({"stdout": cap.stdout, "stderr": cap.stderr, "shown": shown,
                 "error": None if error is None else f"{type(error).__name__}: {error}"})
json.dump(seen, open(sys.argv[1], "w"))
'''


def run_cells(folder: Path, cells: list[str], absent: tuple[str, ...] = ()) -> list[dict]:
    """Each cell's {stdout, stderr, shown (mime -> data), error}, run in order in
    a fresh IPython shell whose current folder is `folder`."""
    out = folder / "seen.json"
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", HARNESS, str(out), ",".join(absent)],
                          input=json.dumps(cells), capture_output=True, text=True, cwd=folder,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def picture_bytes(page: str) -> list[tuple[str, bytes]]:
    """The (mime, bytes) of each picture embedded in an HTML page."""
    return [(mime, base64.b64decode(data)) for mime, data in
            re.findall(r'<img src="data:([^;]+);base64,([^"]+)"', page)]


CHAIN = "E(A,B)\nE(B,C)\nE(C,D)\nR(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\nexport R"

OPTION_CELLS = [
    # 0-3: --config: a JSON file, flags on the line over it, a variable
    "import json, numpy as np, fuse_lang\n"
    "json.dump({'precision': 'fp64', 'max-iterations': 1}, open('run.json', 'w'))\n"
    "json.dump({'speed': 'fast'}, open('unknown.json', 'w'))\n"
    "json.dump({'fixpoint': 'fastest'}, open('refused.json', 'w'))\n"
    "open('broken.json', 'w').write('{precision')",
    "%%fuse --config run.json\nA[i] = X[i]\nX[i] = \"x.npy\"\nexport A",
    "%%fuse --config run.json --precision fp32 --max-iterations 5\n" + CHAIN,
    "fast = fuse_lang.ExecutionConfig(precision='fp64')\nslow = {'fixpoint': 'naive'}\n"
    "print(R.shape, A.dtype if 'A' in dir() else None)",
    # 4-6
    "%%fuse --config fast\nB = const(2.0)\nexport B",
    "print(B.dtype)",
    "%%fuse --config slow --trace\n" + CHAIN,
    # 7-11: --config's refusals
    "%%fuse --config unknown.json\nB = const(2.0)",
    "%%fuse --config refused.json\nB = const(2.0)",
    "%%fuse --config broken.json\nB = const(2.0)",
    "%%fuse --config nowhere.json\nB = const(2.0)",
    "%%fuse --config np\nB = const(2.0)",
    # 12-13: the round limit from a flag; Monte Carlo's flags and its report
    "%%fuse --max-iterations 1\n" + CHAIN,
    "X = np.random.default_rng(0).normal(size=(4, 300))",
    # 14
    "%%fuse --input X --projection monte_carlo --samples 20 --seed 0\nY[i] = X[i,j] X[i,j]\n"
    "export Y",
    # 15-17: --why after the run (and one it cannot answer, the outputs still set)
    "%%fuse --why 'R(A, D)' --quiet\n" + CHAIN,
    "%%fuse --why 'Nope(A)' --out R=again\n" + CHAIN,
    "print(len(again))",
    # 18-20: malformed options say why and run nothing
    "%%fuse --why 'R(A'\n" + CHAIN,
    "%%fuse --time-limit -1\nB = const(1.0)\nexport B",
    "%%fuse --params model.npy\nB = const(1.0)\nexport B",
    # 21-23: weights from a manifest in place of a source's file; --compile on numpy
    "np.save('w.npy', np.arange(3.0))\n"
    "json.dump({'tensors': {'W': 'w.npy'}}, open('manifest.json', 'w'))",
    "%%fuse --weights manifest.json\nW[i] = \"not_here.npy\"\nV[i] = W[i] W[i]\nexport V",
    "%%fuse --compile\nB = const(1.0)\nexport B",
    # 24-26: a DataFrame without polars; --representation; --time-limit that is enough;
    # --threads
    "import pandas as pd\nparents = pd.DataFrame({'p': ['Ann', 'Bob'], 'c': ['Bob', 'Cy']})",
    "%%fuse --input P=parents --representation Anc=sparse --time-limit 60 --threads 2\n"
    "Anc(x,y) = P(x,y)\nAnc(x,z) = Anc(x,y) P(y,z)\nexport Anc",
    "print(type(Anc).__name__, sorted(map(tuple, Anc.itertuples(index=False))))",
    # 27-28: a configuration as ExecutionConfig.to_json writes it (every field) reads back
    "json.dump(fuse_lang.ExecutionConfig(precision='fp64', fixpoint='naive').to_json(), "
    "open('full.json', 'w'))",
    "%%fuse --config full.json --quiet\nC = const(2.0)\nexport C\n",
    "print(C.dtype)",
]


@pytest.fixture(scope="module")
def options_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("magic-options")
    import numpy as np

    np.save(folder / "x.npy", np.arange(3.0))
    # polars absent: a pandas DataFrame is read without it
    return run_cells(folder, OPTION_CELLS, absent=("polars",))


def test_config_from_a_json_file_with_flags_over_it(options_run):
    assert options_run[1]["stdout"] == "set A (3,)\n"
    # the file's max_iterations (1) is replaced by the line's 5, its precision by fp32
    assert options_run[2]["stdout"] == "set R (6 tuples)\n"
    assert options_run[3]["stdout"] == "(6, 2) float64\n"  # A ran in the file's fp64


def test_config_as_to_json_writes_it(options_run):
    assert options_run[28]["stdout"] == "" and options_run[28]["stderr"] == ""
    assert options_run[29]["stdout"] == "float64\n"


def test_config_from_a_notebook_variable(options_run):
    assert options_run[4]["stdout"] == "set B ()\n"
    assert options_run[5]["stdout"] == "float64\n"
    traced = options_run[6]["stdout"]  # slow: a dict naming the naive fixpoint
    assert "trace: fixpoint of R (naive)" in traced and "set R (6 tuples)" in traced


def test_a_config_that_cannot_be_used_says_why(options_run):
    assert options_run[7]["stderr"].startswith(
        "%%fuse: --config unknown.json: 'speed' is not a field of the execution "
        "configuration (those are: mode, fixpoint,")
    assert options_run[8]["stderr"] == (
        "cell: the execution configuration is refused: fixpoint must be one of 'semi_naive', "
        "'naive', not 'fastest'\n")
    assert options_run[9]["stderr"].startswith("%%fuse: --config broken.json: not JSON: ")
    assert options_run[10]["stderr"] == (
        "%%fuse: --config nowhere.json: cannot be read: No such file or directory (and no "
        "notebook variable has that name)\n")
    assert options_run[11]["stderr"] == ("%%fuse: --config np: the notebook variable is a "
                                         "module, not an ExecutionConfig or a dict\n")
    for seen in options_run[7:12]:
        assert seen["error"] is None and seen["shown"] == {} and seen["stdout"] == ""


def test_run_flags_reach_the_run(options_run):
    assert options_run[12]["stderr"].startswith(
        "cell: line 4: `R(x,y) = E(x,y)`: R did not reach a fixpoint in 1 round (the round limit")
    assert options_run[14]["stdout"] == (
        "set Y (4,)\nY  Monte Carlo over `j`: 20 of 300 values, standard error 127.7 "
        "(largest)\n")


def test_why_after_the_run(options_run):
    assert options_run[15]["stdout"] == (
        "why R(A, D):\n"
        "R(A, D)   by line 5: R(x,z) = R(x,y) E(y,z)   [x = A, z = D, y = C]\n"
        "  ├─ R(A, C)   by line 5: R(x,z) = R(x,y) E(y,z)   [x = A, z = C, y = B]\n"
        "  │  ├─ R(A, B)   by line 4: R(x,y) = E(x,y)   [x = A, y = B]\n"
        "  │  │  └─ E(A, B)   fact, line 1\n"
        "  │  └─ E(B, C)   fact, line 2\n"
        "  └─ E(C, D)   fact, line 3\n")
    unanswered = options_run[16]
    assert unanswered["stderr"] == ("cell: why Nope: `Nope` is not a tensor of this program "
                                    "(those are: E, R)\n")
    assert unanswered["stdout"] == "set again (6 tuples)\n"
    assert options_run[17]["stdout"] == "6\n"


def test_malformed_options_run_nothing(options_run):
    assert options_run[18]["stderr"].startswith("%%fuse: --why: 'R(A': ")
    assert options_run[19]["stderr"].startswith(
        "%%fuse: argument --time-limit: expected a positive number of seconds, not '-1'\n"
        "usage: %%fuse ")
    assert options_run[20]["stderr"] == ("%%fuse: --params takes a .safetensors checkpoint "
                                         "(as `fuse train --checkpoint` writes), not "
                                         "model.npy\n")
    for seen in options_run[18:21]:
        assert seen["stdout"] == "" and seen["shown"] == {} and seen["error"] is None


def test_weights_and_compile(options_run):
    assert options_run[22]["stdout"] == "set V (3,)\n"  # W's file is the manifest's
    assert options_run[22]["stderr"] == ""
    assert options_run[23]["stderr"] == ("cell: the numpy backend runs eagerly only; compiled "
                                         "runs need the jax or torch backend\n")


def test_a_dataframe_without_polars_and_a_sparse_relation(options_run):
    assert options_run[25]["stdout"] == "set Anc (3 tuples)\n"
    assert options_run[26]["stdout"] == (
        "DataFrame [('Ann', 'Bob'), ('Ann', 'Cy'), ('Bob', 'Cy')]\n")


PICTURE_CELLS = [
    # 0: without --plot nothing is drawn (matplotlib is not even imported)
    "import sys, numpy as np, fuse_lang\nX = np.arange(12.0).reshape(3, 4)\n"
    "fuse_lang.compile('S = const(1.0)').execute()._repr_html_()\n"
    "print('matplotlib' in sys.modules)",
    # 1: the cell's result with a picture per output (and one per query with variables)
    "%%fuse --input X --plot\nS[i] = X[i,j]\nE(A,B)\nE(B,C)\nR(x,y) = E(x,y)\n"
    "R(x,z) = R(x,y) E(y,z)\nR(A, x)?\nexport S, R",
    # 2: PNG
    "%%fuse --input X --plot --plot-format png --quiet\nS[i] = X[i,j]\nexport S",
    # 3-4: the Python API: fuse_lang.plot gives a copy with pictures
    "plain = fuse_lang.compile('T[i,j] = const([[1.0, 2.0], [3.0, 4.0]])\\nexport T')"
    ".execute()\nplain",
    "drawn = fuse_lang.plot(plain)\nprint(len(plain.pictures), [n for n, _ in "
    "drawn.pictures])\ndrawn",
]


@pytest.fixture(scope="module")
def picture_run(tmp_path_factory):
    return run_cells(tmp_path_factory.mktemp("magic-pictures"), PICTURE_CELLS)


def test_plot_shows_each_outputs_picture_in_the_result(picture_run):
    cell = picture_run[1]
    assert cell["stdout"] == "set S (3,), R (3 tuples)\n"
    page = cell["shown"]["text/html"]
    assert "<b>S</b> (3,)" in page  # the summary stays, the pictures follow it
    names = re.findall(r"<figcaption><code>([^<]+)</code>", page)
    assert names == ["S.svg", "R.svg", "R.graph.svg", "query-1.svg"]
    pictures = picture_bytes(page)
    assert [mime for mime, _ in pictures] == ["image/svg+xml"] * 4
    texts = [re.findall(r"<text[^>]*>([^<]*)<", data.decode()) for _, data in pictures]
    assert texts[0][-1] == "S  3" and "i" in texts[0]  # its title and its axis, as text
    assert {"A", "B", "C", "x", "y"} <= set(texts[1])  # R's symbols label its heatmap
    assert texts[3][-1].startswith("R(A, x)?")
    markdown = cell["shown"]["text/markdown"]
    assert "![S.svg](data:image/svg+xml;base64," in markdown


def test_plot_format_png(picture_run):
    pictures = picture_bytes(picture_run[2]["shown"]["text/html"])
    assert len(pictures) == 1 and pictures[0][0] == "image/png"
    assert pictures[0][1].startswith(b"\x89PNG\r\n\x1a\n")


def test_fuse_lang_plot_returns_a_copy_with_pictures(picture_run):
    assert "<img" not in picture_run[3]["shown"]["text/html"]
    drawn = picture_run[4]
    assert drawn["stdout"] == "0 ['T.svg']\n"
    assert [m for m, _ in picture_bytes(drawn["shown"]["text/html"])] == ["image/svg+xml"]


def test_without_plot_matplotlib_is_not_imported(picture_run):
    assert picture_run[0]["stdout"] == "False\n"


NO_FRAMES_CELLS = [
    "import pandas",
    "edges = {('A', 'B'), ('B', 'C'), ('C', 7)}",
    "%%fuse --input E=edges\nR(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\nexport R",
    "print(type(R).__name__, R.columns, R.tuples())",
    "R.to_pandas()",
    "R.to_polars()",
    "R",
    "import fuse_lang\nfuse_lang.compile('E(A,B)\\nexport E').execute()",
]


def test_without_pandas_or_polars_relations_come_back_as_relations(tmp_path):
    seen = run_cells(tmp_path, NO_FRAMES_CELLS, absent=("pandas", "polars"))
    assert seen[0]["error"] == "ModuleNotFoundError: No module named 'pandas'"
    assert seen[2]["stdout"] == (
        "set R (6 tuples; a Relation: neither pandas nor polars is installed)\n")
    assert "<b>R</b> 6 tuples" in seen[2]["shown"]["text/html"]
    assert seen[3]["stdout"] == ("Relation ('x', 'y') [('A', 7), ('A', 'B'), ('A', 'C'), "
                                 "('B', 7), ('B', 'C'), ('C', 7)]\n")
    assert seen[4]["error"] == ("ImportError: Relation.to_pandas needs pandas (pip install "
                                "pandas); Relation.tuples() gives the tuples without it")
    assert seen[5]["error"] == ("ImportError: Relation.to_polars needs polars (pip install "
                                "polars); Relation.tuples() gives the tuples without it")
    assert "<b>R</b> 6 tuples" in seen[6]["shown"]["text/html"]
    assert seen[6]["shown"]["text/plain"].startswith("Relation(R(x, y): 6 tuples")
    assert "E 1 tuple" in seen[7]["shown"]["text/html"].replace("</b>", "").replace("<b>", "")


def test_without_pandas_a_polars_dataframe_is_a_source_and_the_result(tmp_path):
    pytest.importorskip("polars")  # optional: not in the test extra
    seen = run_cells(tmp_path, [
        "import polars as pl\nedges = pl.DataFrame({'a': ['A', 'B'], 'b': ['B', 'C']})",
        "%%fuse --input E=edges\nR(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\nexport R",
        "print(type(R).__module__.split('.')[0], R.rows())"], absent=("pandas",))
    assert seen[1]["stdout"] == "set R (3 tuples)\n"
    assert seen[2]["stdout"] == "polars [('A', 'B'), ('A', 'C'), ('B', 'C')]\n"


def test_a_cells_result_answers_why_after_the_cell(tmp_path):
    # the cell's --input values are files of a folder of the run; it was removed when
    # the cell ended, so the result's why (which re-reads them) failed
    cells = ["import numpy as np\nedges = [('A', 'B'), ('B', 'C')]\nX = np.arange(6.0).reshape(2, 3)",
             "%%fuse --input Edge=edges --input X --quiet --why 'Reach(A, C)' --why 'X[1, 2]'\n"
             "Reach(x,y) = Edge(x,y)\nReach(x,z) = Reach(x,y) Edge(y,z)\nS[i] = X[i,j]\n"
             "export Reach, S",
             "r = _\nimport gc; gc.collect()\nd = r.why('Reach', ('A', 'C'))\n"
             "print(d.height, [c.text for c in d.children], r.why('S', (1,)).parts[0].total)\n"
             "print(d.children[1].place.file, '|', r.why('X', (1, 2)).note)"]
    seen = run_cells(tmp_path, cells)
    assert [s["error"] for s in seen] == [None, None, None], seen
    # --why cites a value's rows by the notebook variable, not the run's temporary file
    assert "  │  └─ Edge(A, B)   row 1 of the notebook variable `edges`\n" in seen[1]["stdout"]
    assert "  └─ Edge(B, C)   row 2 of the notebook variable `edges`\n" in seen[1]["stdout"]
    assert "X[1, 2] = 5\n  `X` is read from the notebook variable `X`\n" in seen[1]["stdout"]
    assert "fuse-cell-" not in seen[1]["stdout"]
    # and so does the result's why after the cell (it cited the temporary file)
    assert seen[2]["stdout"] == ("2 ['Reach(A, B)', 'Edge(B, C)'] 12.0\n"
                                 "the notebook variable `edges` | `X` is read from the "
                                 "notebook variable `X`\n"), seen[2]
