"""Pictures audited against issue 16 (docs/pictures.md, docs/cli.md): every kind of
value gives a valid SVG and PNG of the right content, bad paths are said in words
with exit 2 (never a traceback, nothing half written), and the program graph
draws programs with sinks, functions, imports and mutual recursion.

Cell colours are read from the image matplotlib embeds in the SVG (one pixel
block per cell, stored bottom row first: `transform="scale(1 -1)"`)."""
from __future__ import annotations

import base64
import html
import io
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from fuse_lang.cli import main
from fuse_lang.ide.picture_files import result_pictures
from fuse_lang.ide.plots import render_array

VIRIDIS_LOW = np.array([0.267, 0.005, 0.329])  # viridis(0)
VIRIDIS_HIGH = np.array([0.993, 0.906, 0.144])  # viridis(1)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def svg_texts(data: bytes | str | Path) -> list[str]:
    """The text of every <text> element, entities unescaped."""
    if isinstance(data, Path):
        data = data.read_bytes()
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return [html.unescape(re.sub(r"<[^>]+>", "", t)).strip()
            for t in re.findall(r"<text\b.*?</text>", text, re.S)]


def embedded_cells(svg: bytes | Path, rows: int, cols: int, k: int = 0) -> np.ndarray:
    """The RGB colour at the centre of each cell of the k-th heatmap of an SVG,
    row 0 at the top as the picture shows it."""
    import matplotlib.image as mpimg

    text = (svg.read_bytes() if isinstance(svg, Path) else svg).decode("utf-8")
    images = re.findall(r"<image\b[^>]*?data:image/png;base64,([A-Za-z0-9+/=\s]+)\"([^>]*)>",
                        text, re.S)
    encoded, attributes = images[k]
    image = mpimg.imread(io.BytesIO(base64.b64decode(encoded)))[..., :3]
    if "scale(1 -1)" in attributes:
        image = image[::-1]
    height, width = image.shape[:2]
    return np.array([[image[int((i + 0.5) * height / rows), int((j + 0.5) * width / cols)]
                      for j in range(cols)] for i in range(rows)])


def near(colour: np.ndarray, expected: np.ndarray) -> bool:
    return bool(np.abs(colour - expected).max() < 0.05)


def dark(cells: np.ndarray) -> list[list[int]]:
    """1 where a Boolean heatmap's cell is black (true), 0 where white."""
    return (cells.max(axis=-1) < 0.5).astype(int).tolist()


def run_fuse(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return status, out, err


# ------------------------------------------------------------------ values


def test_values_past_1e300_are_drawn_in_units_of_a_power_of_ten(tmp_path, capsys):
    # matplotlib's scales overflowed (1e308 - -1e308): `fuse plot` ended in a traceback
    # ("Axis limits cannot be NaN or Inf")
    np.savez(tmp_path / "r.npz", M=np.array([[1e308, -1e308], [0.0, 1.0]]),
             V=np.array([1e308, -1e308, np.inf]), C=np.full((2, 2, 2), -1.5e308))
    status, out, _ = run_fuse(capsys, "plot", str(tmp_path / "r.npz"))
    assert status == 0
    folder = tmp_path / "r-pictures"
    assert out.splitlines() == [f"wrote {folder / n}.svg" for n in ("M", "V", "C")]
    assert "values in units of 1e+308" in svg_texts(folder / "M.svg")
    texts = svg_texts(folder / "V.svg")
    assert "values in units of 1e+308" in texts and "1 value not finite (left blank)" in texts
    assert "values in units of 1e+308" in " ".join(svg_texts(folder / "C.svg"))
    cells = embedded_cells(folder / "M.svg", 2, 2)
    assert near(cells[0, 0], VIRIDIS_HIGH) and near(cells[0, 1], VIRIDIS_LOW)
    assert not near(cells[1, 0], VIRIDIS_LOW) and not near(cells[1, 0], VIRIDIS_HIGH)


def test_float32_extremes_are_drawn_without_overflow_warnings():
    matrix = np.array([[3.4e38, -3.4e38], [0, 1]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was "overflow encountered in subtract"
        svg = render_array(matrix, "M")
        assert render_array(matrix, "M", fmt="png").startswith(PNG_SIGNATURE)
        render_array(matrix[0], "V")
    assert "values in units" not in " ".join(svg_texts(svg))  # float32 is drawn as it is
    cells = embedded_cells(svg, 2, 2)
    assert near(cells[0, 0], VIRIDIS_HIGH) and near(cells[0, 1], VIRIDIS_LOW)


KINDS = {
    "scalar NaN": (np.float32(np.nan), "S (a scalar)", "nan"),
    "scalar inf": (np.float64(-np.inf), "S (a scalar)", "-inf"),
    "scalar fp16": (np.float16(1.5), "S (a scalar)", "1.5"),
    "scalar bool": (np.bool_(True), "S (a scalar)", "1"),
    "fp16 vector with inf": (np.array([1, 2, np.inf], dtype=np.float16), "S  3",
                             "1 value not finite (left blank)"),
    "all-NaN matrix": (np.full((3, 3), np.nan), "S  3x3", "9 values not finite (left blank)"),
    "int8 matrix": (np.array([[1, -128], [127, 0]], dtype=np.int8), "S  2x2", None),
    "uint64 matrix": (np.array([[2**64 - 1, 0], [1, 2]], dtype=np.uint64), "S  2x2", None),
    "1x1": (np.ones((1, 1)), "S  1x1", None),
    "one long row": (np.arange(600.0).reshape(1, 600), "S  1x600",
                     "summarised: 1x600 shown as 1x200 block means of 1x3"),
    "5-D": (np.arange(720.0).reshape(2, 3, 4, 5, 6), "S  2x3x4x5x6",
            "summarised: the first 16 of 24 slices"),
    "empty vector": (np.zeros(0), "S 0 (empty)", "no values"),
    "long Boolean vector": (np.zeros(5000, dtype=bool), "S  5000",
                            "summarised: 5000 values shown as 1667 block maxima of 3"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_value_is_a_valid_svg_and_png_that_says_what_it_shows(kind):
    value, head, note = KINDS[kind]
    svg = render_array(value, "S")
    ET.fromstring(svg)  # well-formed XML
    # (a 3-D+ grid's title is one text of several lines)
    texts = [line for t in svg_texts(svg) for line in t.splitlines()]
    assert head in texts, texts
    if note is not None:
        assert note in texts, texts
    png = render_array(value, "S", fmt="png")
    import matplotlib.image as mpimg

    assert png.startswith(PNG_SIGNATURE)
    image = mpimg.imread(io.BytesIO(png))
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50


# ------------------------------------------------------------------ relations


def test_a_relation_over_values_and_symbols_is_drawn_cell_for_tuple(tmp_path, capsys):
    program = tmp_path / "ages.fuse"
    program.write_text("Age(Ann, 30)\nAge(Bob, 45)\nAge(Cid, -7)\nexport Age\n")
    status, _, _ = run_fuse(capsys, "run", str(program), "--plot", str(tmp_path / "p"))
    assert status == 0
    picture = tmp_path / "p" / "Age.svg"
    # ticks: the column's values (sorted), then the symbols down the rows
    assert svg_texts(picture)[:8] == ["-7", "30", "45", "axis 1", "Ann", "Bob", "Cid", "axis 0"]
    assert dark(embedded_cells(picture, 3, 3)) == [[0, 1, 0], [0, 0, 1], [1, 0, 0]]


def test_a_sparse_relation_of_three_axes_is_drawn(tmp_path, capsys):
    # a scipy coo_array of 3 axes: `fuse run --plot` ended in "too many values to unpack"
    (tmp_path / "t.tsv").write_text("A\tB\tC\nA\tC\tB\nB\tA\tA\n")
    program = tmp_path / "t.fuse"
    program.write_text('T(x,y,z) = "t.tsv"\nexport T\n')
    status, out, _ = run_fuse(capsys, "run", str(program), "--representation", "T=sparse",
                              "--plot", str(tmp_path / "p"))
    assert status == 0 and "T  3 tuples" in out
    picture = tmp_path / "p" / "T.svg"
    texts = svg_texts(picture)
    assert texts[:10] == ["C", "B", "A", "z", "B", "C", "A", "y", "x=A", "C"]
    assert "x=B" in texts
    assert dark(embedded_cells(picture, 3, 3, 0)) == [[1, 0, 0], [0, 1, 0], [0, 0, 0]]
    assert dark(embedded_cells(picture, 3, 3, 1)) == [[0, 0, 0], [0, 0, 0], [0, 0, 1]]


def test_a_sparse_tensor_too_large_to_draw_is_said_after_the_results(tmp_path, capsys):
    (tmp_path / "t.tsv").write_text("".join(f"A{k}\tB{k}\tC{k}\n" for k in range(500)))
    program = tmp_path / "t.fuse"
    program.write_text('T(x,y,z) = "t.tsv"\nexport T\n')
    status, out, err = run_fuse(capsys, "run", str(program), "--representation", "T=sparse",
                                "--plot", str(tmp_path / "p"))
    assert status == 2 and "T  500 tuples" in out
    assert "fuse: T is a sparse 500 x 500 x 500 tensor, too large to draw" in err
    assert not (tmp_path / "p").exists()


def test_symbols_and_file_names_are_text_never_mathtext(tmp_path, capsys):
    # "$x$" was drawn as x, and "$\frac$" ended in a mathtext ParseSyntaxException
    program = tmp_path / "$p$.fuse"
    program.write_text('E("$x$", "a<b")\nE("a<b", "$\\\\frac$")\nE("$\\\\frac$", "cost $5")\n'
                       'R(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\n"$o$.tsv" = R(x,y)\n'
                       'export R\nR("$x$", y)?\n')
    status, _, _ = run_fuse(capsys, "run", str(program), "--plot", str(tmp_path / "p"))
    assert status == 0
    symbols = ["$x$", "a<b", "$\\frac$", "cost $5"]
    assert svg_texts(tmp_path / "p" / "R.svg")[:4] == symbols
    assert svg_texts(tmp_path / "p" / "R.graph.svg")[:4] == symbols
    assert 'R("$x$", y)?  4' in svg_texts(tmp_path / "p" / "query-1.svg")
    status, _, _ = run_fuse(capsys, "explain", str(program), "--graph", str(tmp_path / "g.svg"))
    assert status == 0
    assert {"$o$.tsv", "$p$.fuse"} <= set(svg_texts(tmp_path / "g.svg"))


def test_pictures_whose_file_names_meet_are_all_written(tmp_path, capsys):
    # `a/b` and `a_b` are both a_b.svg: the second was written over the first
    np.savez(tmp_path / "r.npz", **{"a/b": np.eye(2), "a_b": np.full((2, 2), 5.0)})
    status, out, _ = run_fuse(capsys, "plot", str(tmp_path / "r.npz"), "--out",
                              str(tmp_path / "p"))
    assert status == 0
    assert out.splitlines() == [f"wrote {tmp_path / 'p' / 'a_b.svg'}",
                                f"wrote {tmp_path / 'p' / 'a_b-2.svg'}"]
    assert "a/b  2x2" in svg_texts(tmp_path / "p" / "a_b.svg")
    assert "a_b  2x2" in svg_texts(tmp_path / "p" / "a_b-2.svg")
    # a name met case-blind (one file on such a disk), and a relation's graph
    names = [name for name, _ in result_pictures({"X": np.eye(2), "x": np.eye(2)})]
    assert names == ["X.svg", "x-2.svg"]


def test_fuse_plot_labels_from_a_program_whose_data_changed_since(tmp_path, capsys):
    # the 81 x 81 result was refused whole: "R relates 81 symbols; a graph is drawn up to
    # 60", the program's file now holding 2 symbols
    (tmp_path / "e.tsv").write_text("".join(f"N{k}\tN{k + 1}\n" for k in range(80)))
    program = tmp_path / "p.fuse"
    program.write_text('E(x,y) = "e.tsv"\nR(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\n'
                       'export R\n')
    assert run_fuse(capsys, "run", str(program), "--out", str(tmp_path / "r.npz"))[0] == 0
    (tmp_path / "e.tsv").write_text("A\tB\n")
    status, out, _ = run_fuse(capsys, "plot", str(tmp_path / "r.npz"), "--program", str(program))
    assert status == 0 and out == f"wrote {tmp_path / 'r-pictures' / 'R.svg'}\n"
    assert "R  81x81" in svg_texts(tmp_path / "r-pictures" / "R.svg")


def test_query_pictures_are_numbered_among_every_query(tmp_path, capsys):
    # as the VS Code panel finds them (query-<its index + 1>): a closed query counts
    program = tmp_path / "q.fuse"
    program.write_text("E(A, B)\nE(B, C)\nE(A, B)?\nE(A, x)?\n")
    status, out, _ = run_fuse(capsys, "run", str(program), "--plot", str(tmp_path / "p"))
    assert status == 0 and out.endswith(f"wrote {tmp_path / 'p' / 'query-2.svg'}\n")
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["query-2.svg"]
    assert "E(A, x)?  2" in svg_texts(tmp_path / "p" / "query-2.svg")


# ------------------------------------------------------------------ paths


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "e.fuse"
    path.write_text("E(A, B)\nE(B, C)\nexport E\n")
    return path


def test_empty_names_are_refused_not_ignored(program, tmp_path, capsys):
    # each was ignored: no pictures (exit 0), or the default folder
    for args, said in [
            (["run", str(program), "--plot", ""], "fuse: --plot: give the pictures' folder"),
            (["run", str(program), "--plot", "", "--plot-format", "png"],
             "fuse: --plot: give the pictures' folder"),
            (["explain", str(program), "--graph", ""],
             "fuse: --graph: give the picture's file (FILE.svg or FILE.png)")]:
        status, out, err = run_fuse(capsys, *args)
        assert status == 2 and said in err, err
        assert "E  2 tuples" not in out
    np.savez(tmp_path / "r.npz", M=np.eye(2))
    status, _, err = run_fuse(capsys, "plot", str(tmp_path / "r.npz"), "--out", "")
    assert status == 2 and "fuse: --out: give the pictures' folder" in err
    assert not (tmp_path / "r-pictures").exists()


def test_fuse_plot_names_its_own_flag_for_a_bad_folder(tmp_path, capsys):
    np.savez(tmp_path / "r.npz", M=np.eye(2))
    (tmp_path / "a-file").write_text("x")
    status, _, err = run_fuse(capsys, "plot", str(tmp_path / "r.npz"), "--out",
                              str(tmp_path / "a-file" / "sub"))
    assert status == 2
    assert f"fuse: --out {tmp_path / 'a-file' / 'sub'}: {tmp_path / 'a-file'} is a file, " \
           f"not a folder" in err  # was "--plot ...", a flag fuse plot does not have
    (tmp_path / "r-pictures").write_text("x")  # the default folder, a file
    status, _, err = run_fuse(capsys, "plot", str(tmp_path / "r.npz"))
    assert status == 2 and f"fuse: {tmp_path / 'r-pictures'}: " in err


def test_graph_paths(program, tmp_path, capsys):
    folder = tmp_path / "a-folder.svg"
    folder.mkdir()
    for target, said in [(folder, "cannot be written: Is a directory"),
                         (tmp_path / "g", "the picture is written as .svg or .png"),
                         (tmp_path / "g.pdf", "the picture is written as .svg or .png")]:
        status, _, err = run_fuse(capsys, "explain", str(program), "--graph", str(target))
        assert status == 2 and said in err, err
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "a-folder.svg", "e.fuse"]
    nested = tmp_path / "new" / "deeper" / "G.PNG"  # folders made, the suffix read case-blind
    status, _, _ = run_fuse(capsys, "explain", str(program), "--graph", str(nested))
    assert status == 0 and nested.read_bytes().startswith(PNG_SIGNATURE)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_place_that_cannot_be_written_is_said_in_words(program, capsys):
    # /proc takes no new files, whoever runs the test: refused before the run where the
    # permission check says so, else when written after it (root passes that check)
    status, out, err = run_fuse(capsys, "run", str(program), "--plot", "/proc/fuse-audit")
    assert status == 2
    if "E  2 tuples" in out:  # the results still show
        assert "fuse: /proc/fuse-audit: cannot be written:" in err
    else:
        assert "fuse: --plot /proc/fuse-audit: /proc is not writable" in err
    status, _, err = run_fuse(capsys, "explain", str(program), "--graph", "/proc/fuse-audit.svg")
    assert status == 2 and "fuse: --graph /proc/fuse-audit.svg: cannot be written:" in err


def test_pictures_are_written_whole_or_not_at_all(tmp_path, capsys):
    folder = tmp_path / "p"
    np.savez(tmp_path / "good.npz", M=np.eye(3))
    assert run_fuse(capsys, "plot", str(tmp_path / "good.npz"), "--out", str(folder))[0] == 0
    before = (folder / "M.svg").read_bytes()
    assert sorted(p.name for p in folder.iterdir()) == ["M.svg"]  # no temporary left
    # one array cannot be drawn: none is written, the old picture is kept
    np.savez(tmp_path / "mixed.npz", M=np.zeros((3, 3)), S=np.array(["a", "b"]))
    status, out, err = run_fuse(capsys, "plot", str(tmp_path / "mixed.npz"), "--out",
                                str(folder))
    assert status == 2 and out == "" and "fuse: S holds <U1 values, not real numbers" in err
    assert sorted(p.name for p in folder.iterdir()) == ["M.svg"]
    assert (folder / "M.svg").read_bytes() == before


# ------------------------------------------------------------------ the program graph


def test_graph_of_facts_read_by_a_sink_only(tmp_path, capsys):
    # `E` reads nothing and only a sink reads it: min() of an empty sequence (a traceback)
    program = tmp_path / "p.fuse"
    program.write_text('E(A, B)\n"o.tsv" = E(x,y)\n')
    status, _, _ = run_fuse(capsys, "explain", str(program), "--graph", str(tmp_path / "g.svg"))
    assert status == 0
    assert svg_texts(tmp_path / "g.svg")[:4] == ["E", "[1, 1]", "o.tsv", "p.fuse"]
    from fuse_lang import analyze
    from fuse_lang.plan.dataflow import dataflow
    from fuse_lang.plan.planner import plan_program

    analysis = analyze(program.read_text(), str(program))
    graph = dataflow(analysis, plan_program(analysis))
    assert [(n.name, n.kind, n.layer) for n in graph.nodes] == [("E", "facts", 0),
                                                                 ("o.tsv", "sink", 1)]


def test_graph_of_functions_imports_and_mutual_recursion(tmp_path, capsys):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "graph.fuse").write_text(
        "Edge(A, B)\nEdge(B, C)\nReach(x,y) = Edge(x,y)\nReach(x,z) = Reach(x,y) Edge(y,z)\n")
    program = tmp_path / "p.fuse"
    program.write_text(
        'import "lib/graph.fuse" as g\n'
        "fn lin(w[i,j], v[j]) -> out[i] { out[i] = w[i,j] v[j] }\n"
        "W = const([[1,2],[3,4]])\nV = const([1,1])\nY[i] = lin(W[i,j], V[j])\n"
        "R(x,y) = g::Reach(x,y)\nZero(0)\nSmall(0)\nSmall(1)\nSmall(2)\nSmall(3)\n"
        "Even(n) = Zero(n)\nEven(m) = Odd(n) (m == n + 1) Small(m)\n"
        "Odd(m) = Even(n) (m == n + 1) Small(m)\n"
        '"out.tsv" = R(x,y)\nexport Y, R, Even\n')
    status, _, err = run_fuse(capsys, "explain", str(program), "--graph", str(tmp_path / "g.png"))
    assert status == 0, err
    assert (tmp_path / "g.png").read_bytes().startswith(PNG_SIGNATURE)
    assert run_fuse(capsys, "explain", str(program), "--graph", str(tmp_path / "g.svg"))[0] == 0
    texts = svg_texts(tmp_path / "g.svg")
    assert texts.count("recursive: fixpoint") == 2
    for name in ("g::Edge", "g::Reach", "out@lin.1", "Y", "R", "Even", "Odd", "out.tsv"):
        assert name in texts, name
    from fuse_lang import analyze
    from fuse_lang.plan.dataflow import dataflow
    from fuse_lang.plan.planner import plan_program

    analysis = analyze(program.read_text(), str(program))
    graph = dataflow(analysis, plan_program(analysis))
    assert sorted(graph.groups) == [("Even", "Odd"), ("g::Reach",)]
    edges = {(e.source, e.target): e.projection for e in graph.edges}
    assert edges[("W", "out@lin.1")] == edges[("V", "out@lin.1")] == "Σ j"
    assert edges[("g::Reach", "g::Reach")] == "Σ y" and edges[("Odd", "Even")] == "Σ n"
    assert edges[("R", "out.tsv")] == "" and edges[("out@lin.1", "Y")] == ""
    kinds = {n.name: n.kind for n in graph.nodes}
    assert kinds["g::Edge"] == kinds["Small"] == "facts" and kinds["out.tsv"] == "sink"
