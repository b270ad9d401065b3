"""Fuse in a real Jupyter kernel (issue 31; docs/notebooks.md): examples/notebook.ipynb
executed by nbclient on ipykernel — `%load_ext fuse_lang`, a Datalog cell from a
DataFrame, an attention cell from NumPy arrays, a cell with an error, the Python
API — and its outputs checked: the text printed, the HTML shown, the variables set.
Cells the test appends after the example's look at the kernel's variables and at
the magic's usage errors."""
from __future__ import annotations

import json
import os
from pathlib import Path

import nbclient  # the test extra holds nbclient, nbformat, ipykernel and pandas:
import nbformat  # the test runs wherever the README's install ran, never skips
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "notebook.ipynb"

CHECKS = [
    # what the cells set, as the kernel sees it
    "import json\n"
    "print(json.dumps({'Ancestor': [type(Ancestor).__name__, sorted(map(list, "
    "Ancestor.itertuples(index=False)))], 'Attn': [type(Attn).__name__, list(Attn.shape)],"
    " 'Z': 'Z' in dir(), 'Y': 'Y' in dir()}))",
    # usage errors print a reason and run nothing
    "%%fuse --input Nope\nA = const(1.0)\nexport A",
    "%%fuse --bogus\nA = const(1.0)",
    "%%fuse --input Parent=parents --out Ancestor=anc --quiet\n"
    "Ancestor(x,y) = Parent(x,y)\nexport Ancestor\n",
    "print(len(anc), list(anc.columns))",
    # a set of tuples as a relation (values of mixed kinds), and --target past an error
    "edges = {('a', 'b'), ('b', 'c'), ('c', 7)}",
    "%%fuse --input Edge=edges --target Reach\n"
    "Reach(x,y) = Edge(x,y)\nReach(x,z) = Reach(x,y) Edge(y,z)\nBad[i] = Nope[i]\nexport Reach",
    "print(sorted(map(tuple, Reach.itertuples(index=False)), key=str))",
    # a source the cell declares with a file takes an array as a runtime input
    "w = np.arange(3.0)",
    '%%fuse --input W=w\nW[i] = "no_such_file.npy"\nV[i] = W[i] W[i]\nexport V',
    "print(V.tolist())",
]


def texts(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def data(cell, mime: str) -> str:
    found = [o["data"][mime] for o in cell.outputs
             if o.output_type in ("execute_result", "display_data") and mime in o["data"]]
    assert len(found) == 1, cell.outputs
    return found[0]


def by_source(nb, start: str):
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]
    assert len(cells) == 1, start
    return cells[0]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(EXAMPLE, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "examples/notebook.ipynb is kept without outputs"
    nb.cells += [nbformat.v4.new_code_cell(source) for source in CHECKS]
    # the kernel imports this checkout's fuse_lang (the kernel's folder is examples/,
    # so a relative PYTHONPATH would not find it)
    paths = [str(ROOT)] + [str(Path(p).resolve()) for p in
                           os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                     resources={"metadata": {"path": str(EXAMPLE.parent)}})
    client.execute(env=env)
    return nb


def test_the_datalog_cell_reads_a_dataframe_and_sets_a_dataframe(executed):
    cell = by_source(executed, "%%fuse --input Parent=parents\n")
    assert texts(cell) == "set Ancestor (8 tuples)\n"
    page = data(cell, "text/html")
    assert "<b>Ancestor</b> 8 tuples" in page
    assert "<th>x</th><th>y</th>" in page and "<td>Carol</td><td>Eve</td>" in page
    assert "<code>Ancestor(Alice, x)?</code> 4 answers" in page
    assert "Ancestor(Alice, x)? 4 answers" in data(cell, "text/markdown")
    shown = data([c for c in executed.cells if c.source == "Ancestor"][0], "text/plain")
    assert "Alice" in shown and "Eve" in shown


def test_the_attention_cell_reads_arrays_and_sets_arrays(executed):
    cell = by_source(executed, "%%fuse --input X --input WQ")
    assert texts(cell) == "set Attn (6, 4), Comp (6, 6)\n"
    page = data(cell, "text/html")
    assert "<b>Attn</b> (6, 4)" in page and "mean" in page and "std" in page
    # --plot: a heatmap of each output under the summary, embedded as an SVG data URI
    assert page.count('<img src="data:image/svg+xml;base64,') == 2
    assert "<figcaption><code>Attn.svg</code></figcaption>" in page
    assert "<figcaption><code>Comp.svg</code></figcaption>" in page
    shapes = by_source(executed, "Attn.shape")
    assert data(shapes, "text/plain") == "((6, 4), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])"


def test_a_cell_with_an_error_prints_it_with_the_cells_lines_and_runs_nothing(executed):
    cell = by_source(executed, "%%fuse --input X\nY[i]")
    assert texts(cell) == ("cell:2:13: error[undefined-tensor]: `Missing` is not defined\n"
                           "2 | Z[i] = Y[i] Missing[i]\n"
                           "                ^^^^^^^\n"
                           "cell: 1 error; nothing ran\n")
    assert not [o for o in cell.outputs if o.output_type == "execute_result"]


def test_the_variables_the_cells_set(executed):
    seen = json.loads(texts(by_source(executed, "import json")))
    assert seen["Ancestor"] == ["DataFrame", [
        ["Alice", "Bob"], ["Alice", "Carol"], ["Alice", "Dave"], ["Alice", "Eve"],
        ["Bob", "Carol"], ["Bob", "Dave"], ["Bob", "Eve"], ["Carol", "Eve"]]]
    assert seen["Attn"] == ["ndarray", [6, 4]]
    assert seen == {**seen, "Z": False, "Y": False}  # the cell with an error set nothing


def test_the_python_api_cells_display_a_result_and_a_relation(executed):
    result = by_source(executed, "result = fuse_lang.load")
    assert "Reach 20 tuples, Cyclic 3 tuples" in data(result, "text/html")
    relation = by_source(executed, 'result.relation("Reach")')
    page = data(relation, "text/html")
    assert "<b>Reach</b> 20 tuples" in page and "<td>Amsterdam</td><td>Berlin</td>" in page
    assert data(relation, "text/plain").startswith("Relation(Reach(x, y): 20 tuples")


def test_usage_errors_say_why(executed):
    missing = by_source(executed, "%%fuse --input Nope")
    assert "--input: no notebook variable named 'Nope'" in texts(missing)
    bogus = by_source(executed, "%%fuse --bogus")
    assert "unrecognized arguments: --bogus" in texts(bogus)
    quiet = by_source(executed, "%%fuse --input Parent=parents --out")
    assert texts(quiet) == ""
    assert texts(by_source(executed, "print(len(anc)")) == "4 ['x', 'y']\n"


def test_a_why_and_an_explanation_display(executed):
    why = by_source(executed, 'result.why("Reach"')
    assert data(why, "text/html").startswith(
        '<pre class="fuse-why">Reach(Amsterdam, Oslo)   by line 7: Reach(x,z) = Reach(x,y) '
        'Road(y,z)')
    explained = by_source(executed, "fuse_lang.explain(")
    assert data(explained, "text/markdown").startswith("## Plan of `datalog_file.fuse`")
    assert "Evaluation order" in data(explained, "text/html")


def test_a_set_of_tuples_and_a_target_past_an_error(executed):
    cell = by_source(executed, "%%fuse --input Edge=edges --target Reach")
    assert texts(cell) == ("cell:3:10: error[undefined-tensor]: `Nope` is not defined\n"
                           "3 | Bad[i] = Nope[i]\n"
                           "             ^^^^\n"
                           "cell: 1 error; running only Reach\n"
                           "set Reach (6 tuples)\n")
    assert "not run: Bad (line 3" in data(cell, "text/html")
    assert texts(by_source(executed, "print(sorted(map(tuple, Reach")) == (
        "[('a', 'b'), ('a', 'c'), ('a', 7), ('b', 'c'), ('b', 7), ('c', 7)]\n")


def test_a_declared_source_takes_an_array_at_run_time(executed):
    assert texts(by_source(executed, '%%fuse --input W=w')) == "set V (3,)\n"
    assert texts(by_source(executed, "print(V.tolist())")) == "[0.0, 1.0, 4.0]\n"


def test_the_doc_quotes_what_the_cells_print(executed):
    doc = (ROOT / "docs" / "notebooks.md").read_text(encoding="utf-8")
    for start in ("%%fuse --input X\nY[i]", "%%fuse --input Parent=parents\n",
                  "%%fuse --input X --input WQ"):
        cell = by_source(executed, start)
        assert cell.source in doc
        printed = texts(cell)
        assert printed in doc or f"prints `{printed.strip()}`" in doc, printed
    why = data(by_source(executed, 'result.why("Reach"'), "text/html")
    assert why.removeprefix('<pre class="fuse-why">').removesuffix("</pre>") in doc
