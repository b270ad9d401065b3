"""Pictures of results and of programs (docs/pictures.md): what is drawn is
checked in the images themselves (pixels of a PNG read back, text of an SVG),
through the command line (`fuse run --plot`, `fuse plot`, `fuse explain
--graph`) and the pure functions an editor calls."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from fuse_lang.ide.plots import AxisLabel, PictureError, relation_graph, render_array

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TIMEOUT = 120
VIRIDIS_LOW = np.array([0.267, 0.005, 0.329])  # viridis(0)
VIRIDIS_HIGH = np.array([0.993, 0.906, 0.144])  # viridis(1)


def fuse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", cwd=cwd, timeout=TIMEOUT)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def svg_texts(data: bytes | str) -> list[str]:
    """The text of every <text> element (text stays text: svg.fonttype none)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return [re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<text\b.*?</text>", text,
                                                                  re.S)]


def heatmap_cells(png: Path, rows: int, cols: int) -> np.ndarray:
    """The colour at the centre of each cell of the one heatmap in a PNG: the
    heatmap is the leftmost block of columns holding viridis' end colours."""
    import matplotlib.image as mpimg

    image = mpimg.imread(png)[..., :3]
    near = lambda colour: np.abs(image - colour).max(axis=-1) < 0.02
    mask = near(VIRIDIS_LOW) | near(VIRIDIS_HIGH)
    columns = np.nonzero(mask.any(axis=0))[0]
    gaps = np.nonzero(np.diff(columns) > 1)[0]
    x0, x1 = columns[0], columns[gaps[0]] if len(gaps) else columns[-1]
    ys = np.nonzero(mask[:, x0:x1 + 1].any(axis=1))[0]
    y0, y1 = ys[0], ys[-1]
    centres_y = y0 + (np.arange(rows) + 0.5) * (y1 - y0 + 1) / rows
    centres_x = x0 + (np.arange(cols) + 0.5) * (x1 - x0 + 1) / cols
    return np.array([[image[int(y), int(x)] for x in centres_x] for y in centres_y])


def is_high(colour: np.ndarray) -> bool:
    return bool(np.abs(colour - VIRIDIS_HIGH).max() < 0.05)


def is_low(colour: np.ndarray) -> bool:
    return bool(np.abs(colour - VIRIDIS_LOW).max() < 0.05)


def test_a_known_matrix_gives_its_pixel_pattern(tmp_path):
    # identity plus one cell above the diagonal: the diagonal and (0, 3) are bright,
    # every other cell dark, row 0 at the top
    matrix = np.eye(5)
    matrix[0, 3] = 1
    np.savez(tmp_path / "result.npz", M=matrix)
    out = fuse("plot", str(tmp_path / "result.npz"), "--out", str(tmp_path / "pics"),
               "--format", "png")
    assert out.returncode == 0, out.stderr
    cells = heatmap_cells(tmp_path / "pics" / "M.png", 5, 5)
    for i in range(5):
        for j in range(5):
            bright = i == j or (i, j) == (0, 3)
            assert (is_high if bright else is_low)(cells[i, j]), (i, j, cells[i, j])


def test_run_plot_labels_axes_with_index_and_symbol_names(tmp_path):
    out = fuse("run", str(EXAMPLES / "datalog_file.fuse"), "--plot", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert f"wrote {tmp_path / 'Reach.svg'}" in out.stdout
    texts = svg_texts((tmp_path / "Reach.svg").read_bytes())
    for name in ("Amsterdam", "Berlin", "Athens", "x", "y"):
        assert name in texts, (name, texts)
    assert any(t.startswith("Reach") and "9x9" in t for t in texts)
    # a Boolean relation over one set of cities is drawn as a graph too
    graph = svg_texts((tmp_path / "Reach.graph.svg").read_bytes())
    assert {"Amsterdam", "Berlin", "Bern", "Paris", "Oslo"} <= set(graph)
    assert any("9 symbols" in t for t in graph)
    # 1-D export and the queries' answers
    assert "Cyclic" in " ".join(svg_texts((tmp_path / "Cyclic.svg").read_bytes()))
    assert (tmp_path / "query-1.svg").exists()
    assert "<image" not in (tmp_path / "Cyclic.svg").read_text()  # bars are vectors


def test_run_plot_png_and_json_lists_the_pictures(tmp_path):
    out = fuse("run", str(EXAMPLES / "transformer.fuse"), "--plot", str(tmp_path / "p"),
               "--plot-format", "png", "--format", "json")
    assert out.returncode == 0, out.stderr
    import json

    pictures = json.loads(out.stdout)["pictures"]
    assert sorted(Path(p).name for p in pictures) == ["Comp.png", "Y.png"]
    assert (tmp_path / "p" / "Comp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_big_tensors_are_summarised_and_say_so():
    svg = render_array(np.random.default_rng(0).random((512, 512)), "Attn",
                       (AxisLabel("p"), AxisLabel("q")))
    texts = " ".join(svg_texts(svg))
    assert "summarised: 512x512 shown as 256x256 block means of 2x2" in texts
    assert len(svg) < 400_000  # one embedded image, not a quarter of a million cells
    line = " ".join(svg_texts(render_array(np.arange(5000.0), "L", (AxisLabel("t"),))))
    assert "summarised: 5000 values shown as 1667 block means of 3" in line


def test_boolean_summary_keeps_a_true_cell_visible(tmp_path):
    relation = np.zeros((600, 600), dtype=bool)
    relation[300, 301] = True
    png = tmp_path / "r.png"
    png.write_bytes(render_array(relation, "R", fmt="png"))
    import matplotlib.image as mpimg

    image = mpimg.imread(png)[..., :3]
    assert (image.max(axis=-1) < 0.1).any()  # the one true block is drawn black


def test_shapes_scalar_slices_and_chosen_slicing_index():
    scalar = svg_texts(render_array(np.float64(2.5), "Loss"))
    assert "2.5" in scalar and "Loss (a scalar)" in scalar
    cube = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    labels = (AxisLabel("b"), AxisLabel("i"), AxisLabel("j", ("u", "v", "w", "z")))
    texts = " ".join(svg_texts(render_array(cube, "T", labels)))
    assert "slices along b" in texts and "b=0" in texts and "b=1" in texts
    texts = " ".join(svg_texts(render_array(cube, "T", labels, slice_axis="j")))
    assert "slices along j" in texts and "j=z" in texts  # a slice named by its symbol
    with pytest.raises(PictureError, match="no index 'k'"):
        render_array(cube, "T", labels, slice_axis="k")
    with pytest.raises(PictureError, match="unknown picture format"):
        render_array(cube, "T", labels, fmt="gif")


def test_relation_graph_draws_symbols_as_nodes():
    relation = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 1]])
    texts = svg_texts(relation_graph(relation, "Edge", ("a", "b", "c")))
    assert {"a", "b", "c"} <= set(texts) and "Edge: 3 symbols, 3 pairs" in texts


def test_explain_graph_names_every_tensor_and_projection(tmp_path):
    target = tmp_path / "transformer.svg"
    out = fuse("explain", str(EXAMPLES / "transformer.fuse"), "--graph", str(target))
    assert out.returncode == 0, out.stderr
    texts = " ".join(svg_texts(target.read_bytes()))
    for name in ("X", "WQ", "WK", "WV", "WO", "W1", "B1", "W2", "Query", "Key", "Val",
                 "Comp", "Attn", "H", "F", "Y", "Mask", "Dk"):
        assert re.search(rf"(^|\s){name}(\s|$)", texts), name
    for projection in ("Σ d", "Σ dk", "Σ p'", "Σ dv", "Σ h"):
        assert projection in texts, projection
    assert "[6, 8]" in texts  # shapes


def test_explain_graph_marks_recursion_sources_and_sinks(tmp_path):
    program = tmp_path / "p.fuse"
    program.write_text('Road(x,y) = "roads.tsv"\nReach(x,y) = Road(x,y)\n'
                       'Reach(x,z) = Reach(x,y) Road(y,z)\n"reach.tsv" = Reach(x,y)\n')
    (tmp_path / "roads.tsv").write_text("a\tb\nb\tc\n")
    target = tmp_path / "g.svg"
    out = fuse("explain", str(program), "--graph", str(target))
    assert out.returncode == 0, out.stderr
    texts = svg_texts(target.read_bytes())
    assert "recursive: fixpoint" in texts and "reach.tsv" in texts
    from fuse_lang import analyze
    from fuse_lang.plan.dataflow import dataflow
    from fuse_lang.plan.planner import plan_program

    analysis = analyze(program.read_text(), str(program))
    graph = dataflow(analysis, plan_program(analysis))
    kinds = {n.name: n.kind for n in graph.nodes}
    assert kinds == {"Road": "source", "Reach": "computed", "reach.tsv": "sink"}
    assert graph.groups == (("Reach",),)
    loop = [e for e in graph.edges if e.source == e.target == "Reach"]
    assert loop and loop[0].projection == "Σ y" and loop[0].lines == (3,)


def test_clear_errors_never_a_traceback(tmp_path):
    program = str(EXAMPLES / "datalog.fuse")
    out = fuse("run", program, "--plot", str(tmp_path), "--plot-format", "gif")
    assert out.returncode == 2 and "invalid choice: 'gif'" in out.stderr
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    out = fuse("run", program, "--plot", str(a_file))
    assert out.returncode == 2 and "is a file, not a folder" in out.stderr
    assert "Ancestor" not in out.stdout  # refused before the run
    out = fuse("plot", str(a_file))
    assert out.returncode == 2 and "is not a result file" in out.stderr
    np.save(tmp_path / "objects.npy", np.array([{}], dtype=object), allow_pickle=True)
    out = fuse("plot", str(tmp_path / "objects.npy"))
    assert out.returncode == 2 and "is not a result file" in out.stderr
    out = fuse("plot", str(tmp_path / "missing.npz"))
    assert out.returncode == 2 and "no such file" in out.stderr
    out = fuse("explain", program, "--graph", str(tmp_path / "g.gif"))
    assert out.returncode == 2 and ".svg or .png" in out.stderr
    out = fuse("explain", program, "--graph", str(a_file / "g.svg"))
    assert out.returncode == 2 and "cannot be written" in out.stderr


def test_fuse_plot_labels_from_the_program(tmp_path):
    saved = tmp_path / "r.npz"
    out = fuse("run", str(EXAMPLES / "datalog.fuse"), "--out", str(saved))
    assert out.returncode == 0, out.stderr
    out = fuse("plot", str(saved), "--program", str(EXAMPLES / "datalog.fuse"))
    assert out.returncode == 0, out.stderr
    picture = tmp_path / "r-pictures" / "Ancestor.svg"
    assert f"wrote {picture}" in out.stdout
    assert {"Alice", "Bob", "Eve"} <= set(svg_texts(picture.read_bytes()))
    out = fuse("plot", str(saved), "--out", str(tmp_path / "bare"))
    assert "axis 0" in svg_texts((tmp_path / "bare" / "Ancestor.svg").read_bytes())


def test_fuse_plot_slices_along_a_chosen_axis(tmp_path):
    np.savez(tmp_path / "cube.npz", T=np.arange(24.0).reshape(2, 3, 4))
    out = fuse("plot", str(tmp_path / "cube.npz"), "--slice-along", "axis 2")
    assert out.returncode == 0, out.stderr
    texts = " ".join(svg_texts((tmp_path / "cube-pictures" / "T.svg").read_bytes()))
    assert "slices along axis 2" in texts and "axis 2=3" in texts


def test_importing_fuse_lang_does_not_import_matplotlib():
    code = ("import sys, fuse_lang, fuse_lang.cli, fuse_lang.ide.plots, "
            "fuse_lang.ide.graph_picture, fuse_lang.ide.picture_files;"
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_values_that_cannot_be_drawn_as_numbers_say_so():
    texts = svg_texts(render_array(np.zeros((2, 0, 3)), "E"))
    assert "E 2x0x3 (empty)" in texts
    texts = " ".join(svg_texts(render_array(np.array([np.inf, 1.0, np.nan]), "N")))
    assert "2 values not finite (left blank)" in texts
    with pytest.raises(PictureError, match="complex128 values, not real numbers"):
        render_array(np.array([1j]), "C")


def test_a_slicing_index_no_tensor_has_is_refused(tmp_path):
    # `--slice-along zz` (a typo) sliced along the first axis and said nothing
    np.save(tmp_path / "c.npy", np.arange(24.0).reshape(2, 3, 4))
    program = tmp_path / "cube.fuse"
    program.write_text('C[b,i,j] = "c.npy"\nD[b,i,j] = C[b,i,j] C[b,i,j]\nexport D\n')
    out = fuse("run", str(program), "--plot", str(tmp_path / "p"), "--slice-along", "zz")
    assert out.returncode == 2 and out.stdout == "" and not (tmp_path / "p").exists()
    assert ("--slice-along zz: no 3-D or larger tensor has that index (theirs: C: b, i, j; "
            "D: b, i, j)") in out.stderr
    out = fuse("run", str(program), "--plot", str(tmp_path / "p"), "--slice-along", "i")
    assert out.returncode == 0 and "i=2" in svg_texts((tmp_path / "p" / "D.svg").read_bytes())
    assert fuse("run", str(program), "--out", str(tmp_path / "r.npz")).returncode == 0
    out = fuse("plot", str(tmp_path / "r.npz"), "--slice-along", "i")  # (no --program)
    assert out.returncode == 2 and "no 3-D or larger output has the index 'i'" in out.stderr
    assert "(their indices: D: axis 0, axis 1, axis 2)" in out.stderr


def test_a_query_answers_axes_are_ticked_with_its_symbols(tmp_path):
    # `Cyclic(x)?` was drawn over positions 0..8, its export `Cyclic` over the cities
    program = tmp_path / "q.fuse"
    program.write_text("E(A, B)\nE(B, C)\nE(C, A)\nE(C, D)\nP(x, y) = E(x, y)\n"
                       "P(x, z) = P(x, y) E(y, z)\nP(C, x)?\nP(x, _)?\nP(y, x)?\nW[x] = P(x, y)\n"
                       "W[x]?\n")
    out = fuse("run", str(program), "--plot", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    texts = [svg_texts((tmp_path / "p" / f"query-{k}.svg").read_bytes()) for k in (1, 2, 3, 4)]
    for k, variables in enumerate([["x"], ["x"], ["y", "x"], ["x"]]):
        assert texts[k][:4] == ["A", "B", "C", "D"], texts[k]
        assert set(variables) <= set(texts[k])
    assert texts[2][:10] == ["A", "B", "C", "D", "x", "A", "B", "C", "D", "y"]


def test_an_axis_without_an_index_name_is_sliced_along_by_its_axis_name(tmp_path):
    # a relation of facts has no index names: `--slice-along "axis 1"` (the name its
    # picture gives the axis) was ignored, and the first axis sliced
    program = tmp_path / "t.fuse"
    program.write_text("T(Ann, Red, 1)\nT(Bob, Blue, 2)\nT(Ann, Blue, 3)\nexport T\n")
    out = fuse("run", str(program), "--plot", str(tmp_path / "p"), "--slice-along", "axis 1")
    assert out.returncode == 0, out.stderr
    texts = svg_texts((tmp_path / "p" / "T.svg").read_bytes())
    assert "slices along axis 1" in texts[-1] and {"axis 1=Red", "axis 1=Blue"} <= set(texts)
    out = fuse("run", str(program), "--plot", str(tmp_path / "p"), "--slice-along", "c1")
    assert out.returncode == 2 and "(theirs: T: axis 0, axis 1, axis 2)" in out.stderr
