"""Shapes that programs outside the project rely on, as the issues state them,
pinned where no other test held them: the ExecutionConfig fields as `fuse run`
flags (issue 13), `--format json`'s one document even for a command line that
cannot be read (issue 27), the rich display of a why's answer and
`fuse_lang.explain` of a program's text (issue 31), `where` and `masked_fill`
(issue 35), and the `%%fuse` cell reading notebook names as sources and giving
tensors back as the chosen backend's arrays (issue 31).  Each through a public
entry point: `fuse_lang.cli.main`, `fuse_lsp.cli.main`, the `fuse_lang` API, an
IPython shell in a process of its own."""
from __future__ import annotations

import dataclasses
import html
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fuse_lang
from fuse_lang.cli import main

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = "A[i] = const([1, 2, 3])\nY[i] = A[i] * 2\nexport Y\n"
DATALOG = ("Parent(Alice, Bob)\nParent(Bob, Cat)\nAncestor(x,y) = Parent(x,y)\n"
           "Ancestor(x,z) = Ancestor(x,y) Parent(y,z)\nexport Ancestor\n")


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "p.fuse"
    path.write_text(PROGRAM)
    return path


def _flags(capsys, command: str) -> set[str]:
    assert main([command, "--help"]) == 0
    return {word.strip(",[]") for word in capsys.readouterr().out.split()
            if word.startswith("--")}


def test_every_execution_config_field_is_a_fuse_run_flag(capsys):
    # issue 13: "every field also a `fuse run` flag"
    flags = _flags(capsys, "run")
    fields = [f.name for f in dataclasses.fields(fuse_lang.ExecutionConfig)]
    assert {"mode", "fixpoint", "max_iterations", "tolerance", "block_size", "projection",
            "samples", "seed", "trace", "backend", "device", "precision",
            "cache_dir"} <= set(fields)
    assert [f for f in fields if "--" + f.replace("_", "-") not in flags] == []


UNREADABLE = [
    (["run", "{p}", "--format", "json", "--time-limit", "-1"],
     {"outputs": {}, "queries": [], "sinks": [], "diagnostics": [],
      "error": "fuse: argument --time-limit: expected a positive number of seconds, not '-1'"}),
    (["run", "{p}", "--format=json", "--bogus"],
     {"outputs": {}, "queries": [], "sinks": [], "diagnostics": [],
      "error": "fuse: unrecognized arguments: --bogus"}),
    (["check", "--format", "json"], {"diagnostics": []}),
    (["check", "--format", "json", "{p}", "--bogus"], {"diagnostics": []}),
    (["explain", "{p}", "--format", "json", "--max-iterations", "x"],
     {"error": "fuse: argument --max-iterations: invalid int value: 'x'", "diagnostics": []}),
    (["why", "--format", "json", "{p}"],
     {"error": "fuse: the following arguments are required: TARGET", "diagnostics": []}),
]


@pytest.mark.parametrize(("argv", "document"), UNREADABLE)
def test_format_json_writes_one_document_even_for_a_line_argparse_cannot_read(
        program, capsys, argv, document):
    # issue 27: "`--format json` always writes one JSON document (... exit code unchanged)"
    assert main([word.format(p=program) for word in argv]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == document
    assert err.startswith("fuse: ") and "usage: fuse " in err


def test_a_line_without_format_json_still_writes_nothing_on_stdout(program, capsys):
    assert main(["run", str(program), "--bogus"]) == 2
    assert capsys.readouterr().out == ""
    assert main(["plot", "--format", "json", "r.npz"]) == 2  # plot's --format is a picture's
    assert capsys.readouterr().out == ""
    assert main(["export", "--format", "json", "--out", "x", str(program)]) == 2  # an artifact's
    assert capsys.readouterr().out == ""


def test_fuse_lsp_check_writes_fuse_checks_document_for_an_unreadable_line(program, capsys):
    # issue 4: `fuse-lsp --check` prints the same JSON and exits the same way as `fuse check`
    from fuse_lsp.cli import main as lsp_main

    for argv in (["--check", "--format", "json"],
                 ["--check", "--format", "json", str(program), "--bogus"]):
        assert lsp_main(argv) == 2
        assert json.loads(capsys.readouterr().out) == {"diagnostics": []}
        assert main(["check", *argv[1:]]) == 2
        assert json.loads(capsys.readouterr().out) == {"diagnostics": []}


def test_a_whys_answer_has_rich_display_as_fuse_why_prints_it(tmp_path, capsys):
    # issue 31: "... and a derivation ... have `_repr_html_`/`_repr_markdown_`"
    path = tmp_path / "d.fuse"
    path.write_text(DATALOG + "X[i] = const([1, 2])\nS = X[i]\nexport S\n")
    result = fuse_lang.load(path).execute()
    for name, values, target in (("Ancestor", ("Alice", "Cat"), "Ancestor(Alice, Cat)"),
                                 ("Ancestor", ("Cat", "Alice"), "Ancestor(Cat, Alice)"),
                                 ("S", (), "S")):
        answer = result.why(name, values)
        assert main(["why", str(path), target]) == 0
        printed = capsys.readouterr().out.rstrip("\n")
        assert answer._repr_html_() == f'<pre class="fuse-why">{html.escape(printed)}</pre>'
        assert answer._repr_markdown_() == f"```text\n{printed}\n```"
    assert type(result.why("Ancestor", ("Alice", "Cat"))).__name__ == "Derivation"
    assert type(result.why("Ancestor", ("Cat", "Alice"))).__name__ == "WhyNot"
    assert type(result.why("S", ())).__name__ == "NumberWhy"


def test_explain_takes_a_compiled_program_or_a_programs_text():
    # issue 31: `fuse_lang.explain(...)`
    from_text = fuse_lang.explain(PROGRAM)
    assert str(from_text) == str(fuse_lang.explain(fuse_lang.compile(PROGRAM)))
    assert from_text._repr_html_() and from_text._repr_markdown_()
    with pytest.raises(TypeError, match="takes a CompiledProgram .* not NoneType"):
        fuse_lang.explain(None)
    with pytest.raises(fuse_lang.FuseError, match="`Z` is not defined"):
        fuse_lang.explain("Y = Z\nexport Y\n")


def test_where_and_masked_fill_are_selects():
    # issue 35: "`masked_fill`/`where` over a condition"
    text = ("X[i] = const([1, -2, 3])\n"
            "W[i] = where(X[i] > 0, X[i], -1)\n"
            "S[i] = select(X[i] > 0, X[i], -1)\n"
            "M[i] = masked_fill(X[i], X[i] > 0, 0)\n"
            "K[i] = masked_fill(x=X[i], mask=X[i] > 0, value=0)\n"
            "L[i] = log(where(X[i] > 0, X[i], 1))\n"
            "export W, S, M, K, L\n")
    for backend in ("numpy", "torch", "jax"):
        if backend != "numpy" and importlib.util.find_spec(backend) is None:
            continue
        out = fuse_lang.compile(text, backend=backend).run()
        assert out["W"].tolist() == out["S"].tolist() == [1.0, -1.0, 3.0], backend
        assert out["M"].tolist() == out["K"].tolist() == [0.0, -2.0, 0.0], backend
        assert out["L"].tolist() == pytest.approx([0.0, 0.0, 1.0986123]), backend
    [d] = [d for d in fuse_lang.analyze("X[i] = const([1])\nW[i] = where(X[i] > 0, X[i])\n"
                                        "export W\n").diagnostics if d.severity.value == "error"]
    assert (d.code, d.message) == ("argument-count", "`where` takes 3 arguments, not 2 "
                                   "(signature: where(c, a, b))")


# the cells run in an IPython shell of their own process; each cell's printed
# text and the notebook variables asked for are written back as JSON
HARNESS = r'''
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

shell = InteractiveShell.instance()
shell.displayhook.write_output_prompt = lambda: None
shell.displayhook.write_format_data = lambda *args, **kwargs: None
shell.run_cell("%load_ext fuse_lang")
seen = []
for source, names in json.load(sys.stdin):
    with capture_output() as cap:
        run = shell.run_cell(source)
    values = {}
    for name in names:
        value = shell.user_ns.get(name)
        values[name] = None if value is None else [
            type(value).__module__.split(".")[0], type(value).__name__,
            value.values.tolist() if hasattr(value, "itertuples") else
            __import__("numpy").asarray(value).tolist()]
    error = run.error_in_exec or run.error_before_exec
    seen.append({"stdout": cap.stdout, "stderr": cap.stderr, "values": values,
                 "error": None if error is None else repr(error)})
json.dump(seen, sys.stdout)
'''


def _cells(folder: Path, cells: list[tuple[str, list[str]]]) -> list[dict]:
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    done = subprocess.run([sys.executable, "-c", HARNESS], input=json.dumps(cells),
                          capture_output=True, text=True, cwd=folder, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_cell_reads_notebook_names_as_sources(tmp_path):
    # issue 31: "Names from the notebook's namespace are sources: a NumPy array (dense
    # tensor), a pandas ... DataFrame (a relation ...), a Python set of tuples"
    pytest.importorskip("IPython")
    pytest.importorskip("pandas")
    seen = _cells(tmp_path, [
        ("import numpy as np, pandas as pd\nx = np.arange(3.0)\nf = len\n"
         "Parent = pd.DataFrame({'a': ['Ann', 'Bob'], 'b': ['Bob', 'Cid']})\n"
         "E = {('a', 'b'), ('b', 'c')}", []),
        ("%%fuse\nY[i] = x[i] * 2\nexport Y\n", ["Y"]),
        ("%%fuse\nAnc(p,q) = Parent(p,q)\nAnc(p,r) = Anc(p,q) Parent(q,r)\nexport Anc\n",
         ["Anc"]),
        ("%%fuse\nR(p,q) = E(p,q)\nexport R\n", ["R"]),
        ("%%fuse --input x=x\nZ[i] = x[i] + 1\nexport Z\n", ["Z"]),
        ("%%fuse\nV = f\nexport V\n", ["V"]),
    ])
    assert [s["error"] for s in seen] == [None] * 6
    assert seen[1]["values"] == {"Y": ["numpy", "ndarray", [0.0, 2.0, 4.0]]}
    assert seen[1]["stdout"].startswith("set Y (3,)\n")
    assert seen[2]["values"] == {"Anc": ["pandas", "DataFrame",
                                         [["Ann", "Bob"], ["Ann", "Cid"], ["Bob", "Cid"]]]}
    assert seen[3]["values"] == {"R": ["pandas", "DataFrame", [["a", "b"], ["b", "c"]]]}
    assert seen[4]["values"] == {"Z": ["numpy", "ndarray", [1.0, 2.0, 3.0]]}
    # a notebook variable that is not data is no source: the hint says how to give one
    assert seen[5]["values"] == {"V": None}
    assert seen[5]["stdout"] == (
        "cell:1:5: error[undefined-tensor]: `f` is not defined\n1 | V = f\n        ^\n"
        "  hint: `f` is a notebook variable, but a builtin_function_or_method is no source: "
        "a cell reads a NumPy array, a DataFrame or a set of tuples by its name\n"
        "cell: 1 error; nothing ran\n")


def test_a_cells_tensors_come_back_as_the_chosen_backends_arrays(tmp_path):
    # issue 31: "Exports come back as notebook variables ..., tensors as arrays of the
    # chosen backend"
    pytest.importorskip("IPython")
    cells = [("import numpy as np\nx = np.arange(3.0)", []),
             ("%%fuse\nY[i] = x[i] * 3\nS = x[i]\nexport Y, S\n", ["Y", "S"])]
    expected = [["numpy", "ndarray", [0.0, 3.0, 6.0]]]
    for backend, kind in (("torch", ["torch", "Tensor"]), ("jax", ["jaxlib", None])):
        try:
            __import__(backend)
        except ImportError:
            continue
        cells.append((f"%%fuse --backend {backend}\nY[i] = x[i] * 3\nS = x[i]\nexport Y, S\n",
                      ["Y", "S"]))
        expected.append([*kind, [0.0, 3.0, 6.0]])
    seen = _cells(tmp_path, cells)
    got = [s["values"]["Y"] for s in seen[1:]]
    assert [[m, n if e[1] else None, v] for (m, n, v), e in zip(got, expected)] == expected
    # a scalar stays a scalar (shape ()), on every backend
    assert [s["values"]["S"][2] for s in seen[1:]] == [3.0] * len(expected)


def test_every_public_method_of_every_public_class_has_a_docstring():
    # issue 31: "every public class and function has a docstring" (test_python_api
    # holds CompiledProgram, RunResult and Relation; here every class of __all__)
    import inspect

    undocumented = []
    for name in fuse_lang.__all__:
        cls = getattr(fuse_lang, name)
        if not inspect.isclass(cls):
            continue
        for attr, member in vars(cls).items():
            if attr.startswith("_"):
                continue
            function = member.fget if isinstance(member, property) else \
                getattr(member, "__func__", member)
            if inspect.isfunction(function) and not inspect.getdoc(function):
                undocumented.append(f"{name}.{attr}")
    assert undocumented == []


def test_hover_on_where_and_masked_fill_shows_their_own_signatures():
    from fuse_lang.ide.hover import hover_at

    text = ("X[i] = const([1, -2])\nW[i] = where(X[i] > 0, X[i], -1)\n"
            "M[i] = masked_fill(X[i], X[i] > 0, 0)\nexport W, M\n")
    analysis = fuse_lang.analyze(text)
    for name in ("where", "masked_fill"):
        hover = hover_at(analysis, text.index(name) + 1)
        signature = {"where": "where(c, a, b)", "masked_fill": "masked_fill(x, mask, value)"}
        assert hover.markdown.splitlines()[:3] == ["```fuse", signature[name], "```"]
