"""The Python API as a notebook user meets it (issue 31, docs/notebooks.md "The
Python API"): `fuse_lang.load` reads a file with its paths beside it, `compile`'s
`base_dir` default, a path handed to `compile`, `help(fuse_lang)` and the
docstrings of the public API, a relation's tuples as values (`result.relation`,
`Relation.tuples`/`to_pandas`) and the rich display of a result and a relation."""
from __future__ import annotations

import inspect
import os
import pydoc
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

ROOT = Path(__file__).resolve().parent.parent

CLOSURE = """Parent(x,y) = "parent.tsv"
Anc(x,y) = Parent(x,y)
Anc(x,z) = Anc(x,y) Parent(y,z)
Anc(Alice, x)?
export Anc
"""


def family(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "parent.tsv").write_text("Alice\tBob\nBob\tCarol\nCarol\tDave\n")
    program = folder / "family.fuse"
    program.write_text(CLOSURE)
    return program


def test_load_reads_the_programs_paths_beside_the_file(tmp_path, monkeypatch):
    program = family(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = fuse_lang.load(program).execute()
    assert result.relation("Anc").tuples() == [
        ("Alice", "Bob"), ("Alice", "Carol"), ("Alice", "Dave"), ("Bob", "Carol"),
        ("Bob", "Dave"), ("Carol", "Dave")]
    # a relative path to the file works the same
    monkeypatch.chdir(tmp_path)
    assert len(fuse_lang.load("project/family.fuse").execute().relation("Anc")) == 6


def test_compile_resolves_relative_paths_beside_path_else_the_current_folder(
        tmp_path, monkeypatch):
    program = family(tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    # path given, base_dir not: beside the path
    result = fuse_lang.compile(CLOSURE, path=str(program)).execute()
    assert len(result.relation("Anc")) == 6
    # neither: the current folder, which has no parent.tsv
    with pytest.raises(fuse_lang.FuseError, match="parent.tsv"):
        fuse_lang.compile(CLOSURE).execute()
    monkeypatch.chdir(program.parent)
    assert len(fuse_lang.compile(CLOSURE).execute().relation("Anc")) == 6


def test_compile_given_a_path_says_to_use_load():
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile("models/attn.fuse")
    assert "fuse_lang.load('models/attn.fuse')" in str(err.value)
    # a program is never taken for a path
    assert fuse_lang.compile("A = const(1.0) \nexport A").exports == ("A",)


def test_load_of_a_missing_file_or_a_folder_says_so(tmp_path):
    with pytest.raises(fuse_lang.FuseError, match="no such file"):
        fuse_lang.load(tmp_path / "nothing.fuse")
    with pytest.raises(fuse_lang.FuseError, match="is a folder"):
        fuse_lang.load(tmp_path)


def test_help_lists_the_public_api_and_every_public_name_has_a_docstring():
    text = pydoc.render_doc(fuse_lang, renderer=pydoc.plaintext)
    for name in ("compile", "load", "Relation", "RunResult", "CompiledProgram", "analyze",
                 "load_ipython_extension"):
        assert re.search(rf"\b{name}\b", text), name
    undocumented = [name for name in fuse_lang.__all__
                    if (inspect.isclass(getattr(fuse_lang, name))
                        or inspect.isfunction(getattr(fuse_lang, name)))
                    and not inspect.getdoc(getattr(fuse_lang, name))]
    assert not undocumented
    for cls in (fuse_lang.CompiledProgram, fuse_lang.RunResult, fuse_lang.Relation):
        public = [n for n, m in vars(cls).items() if not n.startswith("_")
                  and (inspect.isfunction(m) or isinstance(m, property)) and not m.__doc__]
        assert not public, (cls.__name__, public)


def test_importing_fuse_lang_imports_neither_ipython_nor_numpy():
    code = ("import sys, fuse_lang; fuse_lang.load_ipython_extension; "
            "print(sorted(m for m in ('IPython', 'numpy', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_relation_comes_back_with_its_symbols(tmp_path):
    result = fuse_lang.load(family(tmp_path)).execute()
    anc = result.relation("Anc")
    assert anc.columns == ("x", "y") and anc.arity == 2 and anc.count == 6
    assert anc.tuples(2) == [("Alice", "Bob"), ("Alice", "Carol")]
    assert ("Bob", "Dave") in anc and ("Dave", "Bob") not in anc
    assert set(result.relations()) == {"Anc"}
    pd = pytest.importorskip("pandas")
    frame = anc.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["x", "y"]
    assert frame.iloc[-1].tolist() == ["Carol", "Dave"]


def test_relation_of_a_tensor_or_an_unknown_name_says_why():
    result = fuse_lang.compile("A = const(2.0)\nB(x) = Ok(x)\nOk(Yes)\nexport A, B",
                               ).execute()
    with pytest.raises(fuse_lang.FuseError, match=r"not a relation .*outputs\['A'\]"):
        result.relation("A")
    with pytest.raises(fuse_lang.FuseError, match="not among this run's outputs"):
        result.relation("Nope")
    assert result.relation("B").tuples() == [("Yes",)]


def test_a_result_and_a_relation_display_as_html_and_markdown(tmp_path):
    result = fuse_lang.load(family(tmp_path)).execute()
    page = result._repr_html_()
    assert "Anc</b> 6 tuples" in page and "<td>Carol</td><td>Dave</td>" in page
    assert "<code>Anc(Alice, x)?</code> 3 answers" in page
    assert "Ran family.fuse" in page or "Ran program" in page
    assert "- `Anc(Alice, x)?` 3 answers" in result._repr_markdown_()
    relation = result.relation("Anc")
    assert "<th>x</th><th>y</th>" in relation._repr_html_()
    assert "| Alice | Bob |" in relation._repr_markdown_()
    assert "RunResult(outputs: Anc (4, 4); queries: Anc(Alice, x)?)" == repr(result)


def test_a_large_relation_shows_its_count_and_its_first_rows(tmp_path):
    edges = "".join(f"N{i}\tN{i + 1}\n" for i in range(3000))
    (tmp_path / "edge.tsv").write_text(edges)
    (tmp_path / "big.fuse").write_text('E(x,y) = "edge.tsv"\nR(x,y) = E(x,y)\nexport R\n')
    result = fuse_lang.load(tmp_path / "big.fuse").execute()
    relation = result.relation("R")
    assert len(relation) == 3000
    page = relation._repr_html_()
    assert "3000 tuples" in page and "2980 more tuples" in page
    assert page.count("<tr>") == 21  # the header and the first 20 tuples
    assert len(result._repr_html_()) < 20_000


def test_a_tensor_output_displays_its_figures():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = fuse_lang.compile('X[i,j] = "x.npy"\nY[i] = X[i,j]\nexport Y').execute({"X": x})
    page = result._repr_html_()
    assert "<b>Y</b> (2,)" in page and "min 3 · max 12 · mean 7.5" in page


def test_explain_shows_the_plan_a_run_executes(tmp_path):
    program = fuse_lang.load(family(tmp_path))
    explained = fuse_lang.explain(program)
    text = str(explained)
    assert "Evaluation order" in text and "Anc" in text
    assert explained._repr_markdown_().startswith("## Plan of `family.fuse`")
    assert explained._repr_html_().startswith('<pre class="fuse-explain">Tensors')
