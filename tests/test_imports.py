"""`import "file.fuse" as ns` (docs/language.md, Imports) through the API and the CLI:
names `ns::Name`, files read once, a diamond shared, nested namespaces, paths from
the imported file's folder, what an imported file keeps to itself, and errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import fuse_lang
from fuse_lang.check import Analyzer
from fuse_lang.check.imports import ImportCache

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def fuse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=env)


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def codes(analysis: fuse_lang.Analysis) -> list[str]:
    return [d.code for d in analysis.diagnostics if d.severity is fuse_lang.Severity.ERROR]


def answers(result) -> dict[str, list]:
    return {q.text: sorted(q.tuples) for q in result.queries}


LIB = """\
fn reach(e(x,y)) -> p(x,y) {
  p(x,y) = e(x,y)
  p(x,z) = p(x,y) e(y,z)
}
Road(Paris, Lyon)
Road(Lyon, Nice)
Linked(x,y) = Road(x,y)
Linked(x,z) = Linked(x,y) Road(y,z)
Linked(Paris, x)?
"linked.tsv" = Linked(x,y)
export Linked
"""


def test_a_library_s_relations_and_functions_through_the_api(tmp_path):
    write(tmp_path, {"lib/graph.fuse": LIB})
    text = ('import "lib/graph.fuse" as g\nEdge(A, B)\nEdge(B, C)\n'
            'Reach(x,y) = g::reach(Edge(x,y))\ng::Road(Nice, Rome)\n'
            'Reach(A, x)?\ng::Linked(Paris, x)?\n')
    result = fuse_lang.compile(text, base_dir=tmp_path).execute()
    got = answers(result)
    assert [t for t in got["Reach(A, x)?"]] == [("B",), ("C",)]
    # the program's fact joins the library's relation (the library's rule reads it)
    assert got["g::Linked(Paris, x)?"] == [("Lyon",), ("Nice",), ("Rome",)]
    # the library's own query, sink and export are its own: not run by the importer
    assert len(result.queries) == 2
    assert not (tmp_path / "linked.tsv").exists() and not (tmp_path / "lib/linked.tsv").exists()
    assert "g::Linked" not in result.outputs


def test_the_examples_import_one_library(tmp_path):
    for name, query, expected in [
            ("flights", "Reach(Oslo, x)?", [("Bergen",)]),
            ("flights", "FromHub(Oslo, x)?", [("Bergen",)]),
            ("dependencies", "AllNeeds(App, x)?",
             [("Crypto",), ("Http",), ("Log",), ("Tls",), ("Web",)]),
            ("dependencies", "Cyclic(x)?", [("Crypto",), ("Tls",)])]:
        path = EXAMPLES / f"{name}.fuse"
        result = fuse_lang.compile(path.read_text(), path=str(path),
                                   base_dir=EXAMPLES).execute(write_sinks=False)
        assert answers(result)[query] == expected, (name, query)
    proc = fuse("run", str(EXAMPLES / "flights.fuse"))
    assert proc.returncode == 0, proc.stderr
    assert "FromHub(Oslo, x)?  Bergen" in proc.stdout
    # (Paris is the library's hub; Oslo the program's)
    assert "(Paris, Rome)" in proc.stdout.split("FromHub")[1]


def test_check_and_explain_through_the_cli(tmp_path):
    write(tmp_path, {"lib/graph.fuse": LIB,
                     "main.fuse": 'import "lib/graph.fuse" as g\nY(x) = g::Linked(Paris, x)\n'
                                  'export Y\n'})
    proc = fuse("check", "--format", "json", str(tmp_path / "main.fuse"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [d for d in json.loads(proc.stdout)["diagnostics"] if d["severity"] == "error"] == []
    explain = fuse("explain", str(tmp_path / "main.fuse"))
    assert explain.returncode == 0, explain.stderr
    # the imported equations with their origin (the line is the import statement's)
    assert "line 1: g::Linked(x,z) = g::Linked(x,y) g::Road(y,z)   (from lib/graph.fuse:8)" \
        in explain.stdout
    run = fuse("run", str(tmp_path / "main.fuse"))
    assert run.returncode == 0, run.stderr
    assert "(Lyon)" in run.stdout and "(Nice)" in run.stdout


def test_a_diamond_is_one_file_read_once(tmp_path):
    write(tmp_path, {
        "base.fuse": "Seen(Ann)\nCount[i] = const([1, 2, 3])\n",
        "left.fuse": 'import "base.fuse" as base\nL(x) = base::Seen(x)\nbase::Seen(Bob)\n',
        "right.fuse": 'import "base.fuse" as b\nR(x) = b::Seen(x)\n'})
    text = ('import "left.fuse" as left\nimport "right.fuse" as right\n'
            'import "base.fuse" as base\n'
            'All(x) = left::L(x) right::R(x)\nS = base::Count[i]\nT = left::base::Count[i]\n'
            'All(x)?\nexport S, T\n')
    cache = ImportCache()
    analysis = Analyzer(remember=False, import_cache=cache).analyze(text, str(tmp_path / "m.fuse"))
    assert codes(analysis) == []
    assert cache.parses == 3  # base.fuse once, whichever way it is reached
    assert [n for n in analysis.tensors if n.endswith("Seen")] == ["base::Seen"]
    result = fuse_lang.compile(text, base_dir=tmp_path, path=str(tmp_path / "m.fuse")).execute()
    # left's fact about base::Seen is seen by right too: one relation
    assert answers(result)["All(x)?"] == [("Ann",), ("Bob",)]
    assert float(result.outputs["S"]) == float(result.outputs["T"]) == 6.0


def test_nested_namespaces_and_a_parent_folder(tmp_path):
    write(tmp_path, {"shared/inner.fuse": "W[i] = const([1, 2])\n",
                     "shared/outer.fuse": 'import "inner.fuse" as inner\n'
                                          'V[i] = inner::W[i] + 1\n',
                     "app/main.fuse": 'import "../shared/outer.fuse" as o\n'
                                      'Y[i] = o::V[i] o::inner::W[i]\nexport Y\n'})
    path = tmp_path / "app" / "main.fuse"
    result = fuse_lang.compile(path.read_text(), path=str(path), base_dir=path.parent).execute()
    np.testing.assert_allclose(result.outputs["Y"], [2.0, 6.0])


def test_sources_and_axes_of_an_imported_file_are_its_own(tmp_path):
    (tmp_path / "lib" / "data").mkdir(parents=True)
    np.save(tmp_path / "lib" / "data" / "w.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    write(tmp_path, {"lib/model.fuse": 'axis d = 3\nW[o,d] = "data/w.npy"\n'
                                       'B[d] = const([1, 1, 1])\nOut[o] = W[o,d] B[d]\n',
                     "main.fuse": 'import "lib/model.fuse" as m\naxis d = 2\n'
                                  'X[d] = const([10, 20])\nY[o] = m::Out[o] X[d]\nexport Y\n'})
    path = tmp_path / "main.fuse"
    analysis = fuse_lang.analyze(path.read_text(), str(path))
    assert codes(analysis) == []
    assert analysis.tensors["m::W"].shape == (2, 3)
    result = fuse_lang.compile(path.read_text(), path=str(path), base_dir=tmp_path).execute()
    np.testing.assert_allclose(result.outputs["Y"], [3.0 * 30, 12.0 * 30])


def test_mistakes_are_said_where_the_program_imports(tmp_path):
    write(tmp_path, {"lib.fuse": "Road(Paris, Lyon)\nBad[i] = = 1\n"})
    text = 'import "lib.fuse" as lib\nY(x) = lib::Rod(Paris, x)\nZ(x) = lb::Road(x, y)\n'
    analysis = fuse_lang.analyze(text, str(tmp_path / "main.fuse"))
    by_code = {d.code: d for d in analysis.diagnostics}
    error = by_code["import-error"]
    assert analysis.lines.position(error.span.start) == (0, 0)
    assert "in `lib.fuse` line 2" in error.message and "[syntax-error]" in error.message
    assert error.related[0].path == str(tmp_path / "lib.fuse")
    assert error.related[0].position[0] == 1
    undefined = by_code["undefined-tensor"]
    assert "did you mean `lib::Road`?" in undefined.message
    assert undefined.fixes[0].edits[0].new_text == "lib::Road"
    assert "`lb` is not a namespace here" in by_code["unknown-namespace"].message
    assert "did you mean `lib`?" in by_code["unknown-namespace"].message
    # nothing else about the two names: one diagnostic each
    assert codes(analysis).count("undefined-tensor") == 1
    assert "unknown-function" not in codes(analysis)


def test_an_edit_of_the_program_does_not_parse_its_imports_again(tmp_path):
    write(tmp_path, {"lib.fuse": LIB})
    cache = ImportCache()
    analyzer = Analyzer(import_cache=cache)
    main = str(tmp_path / "main.fuse")
    for k in range(3):
        text = f'import "lib.fuse" as g\nY(x) = g::Linked(Paris, x)\nZ = const({k})\nexport Y\n'
        assert codes(analyzer.analyze(text, main)) == []
    assert cache.parses == 1
    (tmp_path / "lib.fuse").write_text(LIB + "Broken[i] = Nothing[i]\n")
    analysis = analyzer.analyze(text, main)
    assert cache.parses == 2 and codes(analysis) == ["import-error"]
    # an editor's unsaved text of the imported file is read instead of the disk's
    cache.open_texts[str(tmp_path / "lib.fuse")] = LIB
    assert codes(analyzer.analyze(text, main)) == []


def test_compile_from_a_string_with_base_dir(tmp_path):
    write(tmp_path, {"lib/graph.fuse": LIB})
    program = fuse_lang.compile('import "lib/graph.fuse" as g\nY(x) = g::Linked(Paris, x)\n'
                                'export Y\n', base_dir=tmp_path)
    result = program.execute()
    assert result.outputs["Y"].sum() == 2


def test_an_error_inside_an_import_through_the_cli(tmp_path):
    write(tmp_path, {"lib/broken.fuse": "Road(Paris, Lyon)\nUnused[i] = const([1])\n"
                                        "Bad(x) = Road(x, y) Missing(y)\n",
                     "main.fuse": 'import "lib/broken.fuse" as b\nY(x) = b::Road(Paris, x)\n'
                                  'export Y\n'})
    proc = fuse("check", "--format", "json", str(tmp_path / "main.fuse"))
    assert proc.returncode == 1
    (error,) = json.loads(proc.stdout)["diagnostics"]  # (the file's hints are its own)
    assert (error["code"], error["line"], error["column"]) == ("import-error", 1, 1)
    assert "in `lib/broken.fuse` line 3: `Missing` is not defined" in error["message"]
    assert error["related"][0]["path"] == str(tmp_path / "lib" / "broken.fuse")
    assert (error["related"][0]["line"], error["related"][0]["column"]) == (3, 21)
    text = fuse("check", str(tmp_path / "main.fuse")).stdout
    assert f"{tmp_path / 'lib' / 'broken.fuse'}:3:21: note:" in text


def test_a_library_with_blocks_and_lets_gives_its_block_results_and_keeps_its_lets(tmp_path):
    write(tmp_path, {
        "lib.fuse": "axis i = 3\nlet Base[i] = const([1, 2, 3])\n"
                    "{ let h[i] = Base[i] * 2; Out[i] = h[i] + 1 }\n"
                    "fn twice(x[i]) -> y[i] { let t[i] = x[i]; y[i] = t[i] + t[i] }\n",
        "main.fuse": 'import "lib.fuse" as L\nA[i] = L::Out[i]\nB[i] = L::twice(L::Out[i])\n'
                     "Y[i] = A[i] when (i > 0 && !(i == 2))\nexport A, B, Y\n"})
    result = fuse_lang.compile((tmp_path / "main.fuse").read_text(), base_dir=tmp_path).run()
    assert result["A"].tolist() == [3, 5, 7] and result["B"].tolist() == [6, 10, 14]
    assert result["Y"].tolist() == [0, 5, 0]
    (tmp_path / "peek.fuse").write_text('import "lib.fuse" as L\nC[i] = L::Base[i]\nexport C\n')
    proc = fuse("check", str(tmp_path / "peek.fuse"))
    assert proc.returncode == 1 and "error[local-out-of-scope]" in proc.stdout
    assert "`Base` is local to `lib.fuse`" in proc.stdout


def test_fuse_run_refuses_a_program_whose_import_has_errors_at_the_import(tmp_path):
    write(tmp_path, {"libbad.fuse": 'axis i = 2\nQ[i] = "nothere.npy"\n',
                     "bad.fuse": 'import "libbad.fuse" as B\nY[i] = B::Q[i]\nexport Y\n'})
    proc = fuse("run", str(tmp_path / "bad.fuse"))
    assert proc.returncode == 1
    assert "bad.fuse:1:1: error[import-error]" in proc.stderr + proc.stdout
    assert "unknown-namespace" not in proc.stderr + proc.stdout


def test_a_file_read_while_it_is_written_is_read_again(tmp_path, monkeypatch):
    """A file whose size changed between its stat and its read (a save going on)
    was kept under the stat's size and time: when the save ended within the same
    tick at that size, the half-written text stayed the file's for good."""
    write(tmp_path, {"lib.fuse": LIB})
    cache = ImportCache()
    analyzer = Analyzer(import_cache=cache)
    text = 'import "lib.fuse" as g\nY(x) = g::Linked(Paris, x)\nexport Y\n'
    real_stat = os.stat

    def mid_save(path, *args, **kwargs):  # the size the save will end at, not yet written
        found = real_stat(path, *args, **kwargs)
        if str(path).endswith("lib.fuse"):
            return os.stat_result((*found[:6], found.st_size + 7, *found[7:]))
        return found
    monkeypatch.setattr("fuse_lang.check.imports.os.stat", mid_save)
    assert codes(analyzer.analyze(text, str(tmp_path / "main.fuse"))) == []
    once = cache.parses
    assert once >= 1 and codes(analyzer.analyze(text, str(tmp_path / "main.fuse"))) == []
    assert cache.parses == 2 * once  # not kept: read again
    monkeypatch.setattr("fuse_lang.check.imports.os.stat", real_stat)
    before = cache.parses
    analyzer.analyze(text, str(tmp_path / "main.fuse"))
    analyzer.analyze(text, str(tmp_path / "main.fuse"))
    assert cache.parses == before + 1  # kept once its size is the one read
