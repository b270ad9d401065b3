"""The docs audit, continued (tests/test_docs_claims.py has the method and the
other pages): docs/execution.md, docs/generation.md, docs/training.md,
docs/notebooks.md, docs/diagnostics.md, docs/pictures.md and docs/lsp.md, run as
a reader would run them.  Where a page shows a program, a command's output or a
message, the expected text is read from the page itself; the other claims (a
value, an exit status, a message, a key) are asserted as the page states them.
Everything goes through public entry points: the `fuse` command (in process),
`fuse-lsp --check`, the `fuse_lang` API and the `%%fuse` magic in an IPython
shell."""
from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_docs_claims import (  # examples: the fixture, examples/ copied
    DOCS,
    ROOT,
    block_starting,
    examples,  # noqa: F401
    fenced_blocks,
    fuse,
)

import fuse_lang
from fuse_lang import ExecutionConfig, compile
from fuse_lang.cli import main
from fuse_lang.front.diagnostics import CODES
from fuse_lang.run.program import FuseError

PAGES = ("execution", "generation", "training", "notebooks", "diagnostics", "pictures", "lsp")
LAYERS = "speed|front|io|check|plan|run|ide|cli|notebook"


# ---------------------------------------------------------------- every page


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for attribute in parts[k:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES)
def test_every_python_name_and_file_a_page_cites_exists(page):
    text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    names = set(re.findall(r"\b(?:fuse_lang|fuse_lsp)(?:\.[A-Za-z_]\w*)+", text))
    names |= {"fuse_lang." + n for n in re.findall(rf"`((?:{LAYERS})(?:\.[A-Za-z_]\w*)+)", text)}
    assert [n for n in sorted(names) if not _resolves(n)] == []
    paths = set(re.findall(r"\b((?:fuse_lang|fuse_lsp|benchmarks|tests|examples|docs)"
                           r"/[\w/.-]*\w)", text))
    paths |= {"fuse_lang/" + p for p in re.findall(rf"(?<![\w/])((?:{LAYERS})/[\w/]*\w\.py)", text)}
    assert [p for p in sorted(paths) if not (ROOT / p).exists()] == []


# ---------------------------------------------------------------- docs/diagnostics.md

DIAGNOSTICS = DOCS / "diagnostics.md"


def _sections() -> dict[str, str]:
    text = DIAGNOSTICS.read_text(encoding="utf-8")
    return {part.split("\n", 1)[0].strip(): part.split("\n", 1)[1]
            for part in re.split(r"^## ", text, flags=re.MULTILINE)[1:]}


def _example(code: str) -> str | None:
    """The section's program: its first plain fenced block."""
    found = re.search(r"^```\s*\n(.*?)^```", _sections()[code], flags=re.MULTILINE | re.DOTALL)
    return found.group(1) if found else None


def test_every_code_has_its_section_with_its_severity_and_no_other():
    sections = _sections()
    assert set(sections) == set(CODES)
    for code, (severity, _summary) in CODES.items():
        # its default first (a section may add when it is reported lower)
        assert re.search(rf"^\*\*Severity:\*\* {severity.value}\b", sections[code],
                         flags=re.MULTILINE), code


# examples that elide what they stand for (`...`): built below as they describe
ELIDED = {"nesting-too-deep", "number-too-long", "invalid-encoding", "too-many-errors",
          "file-too-large", "extent-too-large"}
# reported by another entry point than `fuse check` of one file: tested below
ELSEWHERE = {"import-cycle", "import-error", "unreadable-source", "generate-no-tokens",
             "generate-no-logits", "weights-bad-manifest", "weights-missing-file"}
PLAIN = sorted(c for c in CODES if c not in ELIDED | ELSEWHERE and _example(c) is not None)


def _lines_of(text: str, analysis, code: str) -> set[int]:
    return {text.count("\n", 0, d.span.start) + 1 for d in analysis.diagnostics if d.code == code}


def _commented_lines(text: str) -> set[int]:
    return {k + 1 for k, line in enumerate(text.splitlines())
            if "#" in line and not line.lstrip().startswith("#")}


# files an example names in its text ("with a 2-d w.npy"), made as it says
FILES = {"arity-mismatch": {"w.npy": (2, 2)}, "virtual-step": {"w.npy": (3, 2, 2)},
         "extent-conflict": {f"w{x}.npy": (4, 2, 3) for x in "qkvo"}}
# comments that explain the example rather than point at the code
EXPLAINING = {("gradient-blocked", 3), ("gradient-blocked", 4)}


@pytest.mark.parametrize("code", PLAIN)
def test_a_codes_example_gives_that_code_where_its_comments_stand(code, tmp_path, monkeypatch):
    """Each example gives its code on every line whose comment points at a problem;
    a line whose comment says `clean` gives nothing."""
    monkeypatch.chdir(tmp_path)
    for name, shape in FILES.get(code, {}).items():
        np.save(tmp_path / name, np.zeros(shape))
    text = _example(code)
    analysis = fuse_lang.analyze(text, str(tmp_path / "example.fuse"))
    lines = _lines_of(text, analysis, code)
    assert lines, f"the example of {code} does not give it"
    told = {text.count("\n", 0, d.span.start) + 1 for d in analysis.diagnostics}
    for line in sorted(_commented_lines(text)):
        comment = text.splitlines()[line - 1].split("#", 1)[1].strip()
        if comment.startswith("... "):  # the comment of the line above, continued
            continue
        if comment.startswith("clean"):
            assert line not in told, (code, line)
        elif (code, line) not in EXPLAINING:
            assert line in lines, (code, line, comment)


def _check(capsys, path: Path, *flags: str) -> tuple[int, str]:
    status, out, err = fuse(capsys, "check", *flags, str(path))
    return status, out + err


def test_elided_examples_built_as_they_describe(tmp_path, capsys):
    cases = {
        "nesting-too-deep": "Y = " + "(" * 201 + "1" + ")" * 201 + "\n",
        "number-too-long": "param X[i]\nY = X[" + "9" * 5000 + "]\n",
        "too-many-errors": "Y = = 1\n" * 250,
        "extent-too-large": _example("extent-too-large").splitlines()[0] + "\n",
    }
    for code, text in cases.items():
        path = tmp_path / f"{code}.fuse"
        path.write_text(text, encoding="utf-8")
        status, out = _check(capsys, path)
        assert status == 1 and f"[{code}]" in out, (code, out[-400:])
    # invalid-encoding: the example's own words for the byte and its offset
    shown = _example("invalid-encoding").splitlines()
    words = re.search(r"# (.*)$", shown[1]).group(1)
    path = tmp_path / "bytes.fuse"
    path.write_bytes(shown[0].encode() + b"\nZ = \xff\n")
    status, out = _check(capsys, path)
    assert status == 1 and f"error[invalid-encoding]: {words}" in out


def test_unreadable_source_and_imports_examples(tmp_path, capsys):
    # unreadable-source: "table.csv ... with a row "A,B": row 2 holds 'A', not a number"
    line = _example("unreadable-source").splitlines()[0]
    (tmp_path / "table.csv").write_text("1,2\nA,B\n", encoding="utf-8")
    (tmp_path / "u.fuse").write_text(line + "\n", encoding="utf-8")
    status, out = _check(capsys, tmp_path / "u.fuse")
    assert status == 1 and "[unreadable-source]" in out and "row 2 holds 'A', not a number" in out
    # import-cycle: the two files as the example shows them, the chain as its comment says
    files = re.split(r"^# (\S+\.fuse)\n", _example("import-cycle"), flags=re.MULTILINE)[1:]
    for name, text in zip(files[::2], files[1::2]):
        (tmp_path / name).write_text(text, encoding="utf-8")
    chain = re.search(r"cycle: (.*)$", files[3].splitlines()[0]).group(1)
    status, out = _check(capsys, tmp_path / "a.fuse")
    assert status == 1 and "[import-cycle]" in out and chain in out
    # import-error: a syntax error on line 2 of lib/broken.fuse, told at the import
    line = _example("import-error").splitlines()[0]
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "broken.fuse").write_text("Y = 1\nZ = = 2\n", encoding="utf-8")
    (tmp_path / "i.fuse").write_text(line + "\n", encoding="utf-8")
    status, out = _check(capsys, tmp_path / "i.fuse")
    said = re.search(r"# (in `lib/broken.fuse` line 2: )", line).group(1)
    assert status == 1 and f"error[import-error]: {said}" in out and "[syntax-error]" in out


def test_weights_manifest_examples(tmp_path, capsys):
    (tmp_path / "w.fuse").write_text("param W[i]\nY = W[i]\nexport Y\n", encoding="utf-8")
    for code, needle in (("weights-bad-manifest", "unknown field 'path'"),
                         ("weights-missing-file", "`gone.safetensors` (for `W`) does not exist")):
        manifest = _example(code).split("#")[0].strip()
        (tmp_path / "m.json").write_text(manifest, encoding="utf-8")
        status, out = _check(capsys, tmp_path / "w.fuse", "--weights", str(tmp_path / "m.json"))
        assert status == 1 and f"error[{code}]" in out and needle in out, out


def test_generation_codes_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "onehot.npy", np.zeros((1, 4, 3)))
    np.save(tmp_path / "ids.npy", np.zeros((2, 8), dtype=np.int64))
    for code in ("generate-no-tokens", "generate-no-logits"):
        text = _example(code)
        program = fuse_lang.compile(text, base_dir=tmp_path)
        with pytest.raises(FuseError) as refused:
            program.generate([1, 2], 2, temperature=0)
        line = next(k for k in _commented_lines(text))
        assert f"line {line}, column 1:" in str(refused.value) and f"[{code}]" in str(refused.value)


# ---------------------------------------------------------------- docs/execution.md

CHAIN = "Edge(A,B)\nEdge(B,C)\nEdge(C,D)\nPath(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\n" \
        "export Path\n"


def test_execution_rounds_of_a_chain_and_the_round_limit_messages():
    # "a chain of 3 edges needs 3 semi-naive rounds and 4 naive ones"
    text = (DOCS / "execution.md").read_text(encoding="utf-8")
    assert "a chain of 3 edges needs 3 semi-naive rounds and 4 naive ones" in text
    for strategy, rounds, last in (("semi_naive", 3, "the last round added 1 fact"),
                                   ("naive", 4, "the last round still changed it")):
        result = compile(CHAIN, config=ExecutionConfig(fixpoint=strategy, trace=True)).execute()
        assert result.rounds == {("Path",): rounds}
        (fixpoint,) = result.trace["fixpoints"]
        assert [r["iteration"] for r in fixpoint["rounds"]] == list(range(1, rounds + 1))
        with pytest.raises(FuseError) as stopped:
            compile(CHAIN, config=ExecutionConfig(fixpoint=strategy, max_iterations=2)).execute()
        assert f"Path did not reach a fixpoint in 2 rounds (the round limit; {last})" \
            in str(stopped.value)
    with pytest.raises(FuseError, match=r"X did not converge in 3 iterations \(the last change "
                                        r"was [0-9.]+\)"):
        compile("X = X / 2 + 3\nexport X\n", max_iterations=3).execute()


def test_execution_run_plan_and_trace_as_the_page_shows_them():
    program = compile(CHAIN)
    plan = program.run_plan()
    assert {g.how for g in plan.schedule(True).groups} <= {"equation", "tensor", "recurrence",
                                                           "fixpoint"}
    assert plan.fixpoints[("Path",)].strategy in ("semi_naive", "naive", "closure")
    memory = plan.schedule(True).memory
    assert all(hasattr(memory, part) for part in ("params", "inputs", "activations"))
    result = program.execute()
    assert result.plan is plan and result.rounds == {("Path",): 3}
    trace = compile(CHAIN, config=ExecutionConfig(trace=True)).execute().trace
    shown = "\n".join(block_starting(DOCS / "execution.md", '{"phases"'))
    assert [p["phase"] for p in trace["phases"]] == re.findall(r'"phase": "(\w+)"', shown)
    assert set(trace) == {"phases", "equations", "fixpoints", "recurrences"}
    assert {"tensor", "seconds", "shape", "nonzeros"} <= set(trace["equations"][-1])
    assert set(trace["fixpoints"][0]) == {"group", "strategy", "rounds"}
    assert {"iteration", "facts_added", "seconds", "held", "rules"} <= \
        set(trace["fixpoints"][0]["rounds"][0])
    assert trace["equations"][-1]["recursive"] is True
    (rule, *_) = trace["fixpoints"][0]["rounds"][0]["rules"]
    assert set(rule) == {"statement", "line", "delta_of", "delta_tuples", "tuples", "seconds",
                         "products"}
    naive = compile(CHAIN, config=ExecutionConfig(trace=True, fixpoint="naive")).execute().trace
    assert "change" in naive["fixpoints"][0]["rounds"][0]  # the largest change, not facts
    assert compile(CHAIN).execute().trace is None


REFUSED = [dict(mode="backward"), dict(block_size=-4), dict(max_iterations=0), dict(samples=0),
           dict(threads=0), dict(tolerance=-1.0), dict(samples=3), dict(seed=1),
           dict(importance={"Y": "X"}), dict(estimate=("Y",)), dict(projection="monte_carlo")]


@pytest.mark.parametrize("fields", REFUSED, ids=lambda f: ",".join(f))
def test_execution_compile_refuses_what_the_page_lists(fields):
    with pytest.raises(FuseError, match="the execution configuration is refused"):
        compile("X = const([1,2])\nY = X[i] X[i]\nexport Y\n", config=ExecutionConfig(**fields))


def test_execution_other_refusals_and_the_hooks():
    with pytest.raises(FuseError, match="contradicts"):
        compile("Y = 1\nexport Y\n", max_iterations=3, config=ExecutionConfig(max_iterations=5))
    for keyword, field in ((dict(tolerance=1e-3), dict(tolerance=1e-4)),
                           (dict(device="cpu"), dict(device="cuda"))):
        with pytest.raises(FuseError, match="contradicts"):
            compile("Y = 1\nexport Y\n", config=ExecutionConfig(**field), **keyword)
    # a field at its default counts as not given: the keyword wins
    assert compile("Y = 1\nexport Y\n", precision="fp64",
                   config=ExecutionConfig(precision="fp32")).config.precision == "fp64"
    with pytest.raises(FuseError, match="compiled=True"):
        compile("Y = 1\nexport Y\n", compiled=True, config=ExecutionConfig(trace=True))
    program = compile("Y = 1\nexport Y\n")
    for attribute in ("analysis", "backend"):
        with pytest.raises(AttributeError, match="does not change"):
            setattr(program, attribute, None)
    for hook, value in (("interrupt", 3), ("progress", "x"), ("operation_check", 1),
                        ("memory_limit", -1)):
        with pytest.raises(FuseError):
            setattr(program, hook, value)
    program.interrupt, program.progress, program.memory_limit = None, print, 10**6
    assert program.execute().outputs["Y"] == 1


def test_execution_cli_statuses_auto_backend_demand_and_not_run(tmp_path, capsys):
    chain = tmp_path / "chain.fuse"
    chain.write_text(CHAIN.replace("export Path\n", "Path(A, x)?\n"), encoding="utf-8")
    # a refused configuration: `fuse run` exits 1 with the message, `fuse explain` 2
    assert fuse(capsys, "run", str(chain), "--samples", "3")[0] == 1
    assert fuse(capsys, "explain", str(chain), "--samples", "3")[0] == 2
    status, out, _ = fuse(capsys, "run", str(chain), "--backend", "auto")
    assert status == 0
    assert "backend: numpy on cpu (relational program (Boolean tensors): NumPy)" in out
    status, out, _ = fuse(capsys, "explain", str(chain), "--mode", "demand")
    assert status == 0 and "Execution: mode=demand" in out
    assert "fixpoint of Path: semi-naive (" in out and "; a linear closure: " in out
    assert "run plan (numpy):" in out
    status, out, _ = fuse(capsys, "explain", str(chain), "--mode", "demand", "--format", "json")
    explained = json.loads(out)
    assert "demand" in explained["execution"] and "memory" in explained["run"]
    broken = tmp_path / "broken.fuse"
    broken.write_text("A = const([1,2])\nB[i] = A[i] * 2\nC[i] = Nope[i]\nexport B\n")
    status, _, err = fuse(capsys, "run", str(broken), "--target", "B")
    assert status == 0 and f"{broken}:3: C was not run: " in err
    status, out, _ = fuse(capsys, "run", str(broken), "--target", "B", "--format", "json")
    assert "not_run" in json.loads(out)


# ---------------------------------------------------------------- docs/generation.md

LM = """axis c = 5
axis d = 4
axis p = 6
param Emb[c,d], Pos[p,d], Out[c,d]
X[n,p] = "ids.npy"
H[n,p,d] = gather(Emb[c,d], X[n,p], axis=c) + Pos[p,d]
Logits[n,p,c] = Out[c,d] H[n,p,d]
export Logits
"""


@pytest.fixture
def lm(tmp_path):
    np.save(tmp_path / "ids.npy", np.zeros((2, 6), dtype=np.int64))
    return fuse_lang.compile(LM, base_dir=tmp_path)


def test_generation_results_vocabulary_and_reuse(lm):
    vocabulary = ["a", "b", "c", "dd", ""]
    result = lm.generate("abdd", 3, temperature=0.8, top_k=2, seed=0, vocabulary=vocabulary)
    # the longest entries that match, from the left: a, b, dd
    assert result.text.startswith("abdd") and result.text == "abdd" + result.new_text
    assert len(result.generated) == 3 and result.tokens_per_s > 0
    again = lm.generate("abdd", 3, temperature=0.8, top_k=2, seed=0, vocabulary=vocabulary)
    assert again.text == result.text  # the same seed gives the same text
    ids = lm.generate([1, 2], 3, temperature=0)  # ids in, ids out
    assert ids.ids[:2] == [1, 2] and len(ids.ids) == 5
    assert lm.generate([1, 2], 3, temperature=0, reuse=False).ids == ids.ids


@pytest.mark.parametrize("change, words", [
    (dict(steps=-1), "steps"), (dict(steps=1.5), "steps"), (dict(top_k=0), "top_k"),
    (dict(seed=-1), "seed"), (dict(temperature=float("nan")), "temperature"),
    (dict(temperature=-1), "temperature"), (dict(prompt=[1.7]), "whole numbers"),
    (dict(prompt="abz", vocabulary=["a", "b", "c", "dd", ""]), "'z'"),
    (dict(prompt="ab", vocabulary=["a", "b", "c", "dd"]), "another model")])
def test_generation_refusals_say_which(lm, change, words):
    arguments = dict(prompt=[1, 2], steps=2, temperature=1.0) | change
    with pytest.raises(FuseError, match=re.escape(words)):
        lm.generate(arguments.pop("prompt"), arguments.pop("steps"), **arguments)


# ---------------------------------------------------------------- docs/training.md


def test_training_page_program_and_its_refusals(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    text = "\n".join(block_starting(DOCS / "training.md", 'X[n,j] = "x.npy"')) + "\n"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3))
    t = x @ np.array([1.0, 2.0, 3.0]) + 0.5
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", t)
    with pytest.raises(FuseError, match="torch or jax"):  # NumPy refuses, naming both
        fuse_lang.compile(text, backend="numpy", base_dir=tmp_path).train(steps=1)
    program = fuse_lang.compile(text, backend="torch", base_dir=tmp_path)
    for refused in (dict(steps=2, epochs=1), dict(steps=2, checkpoint="out/reg.ckpt"),
                    dict(steps=2, weight_decay=-1.0), dict(steps=2.5),
                    dict(steps=2, init={"Nope": "normal(0.01)"})):
        with pytest.raises(FuseError):
            program.train(**refused)
    seen = []
    result = program.train(optimizer="adam", learning_rate=0.05, steps=3, seed=0,
                           batch={"n": 16}, validation={"X": x[:8], "T": t[:8]},
                           checkpoint=str(tmp_path / "out" / "reg.safetensors"),
                           progress=seen.append)
    assert len(result.losses) == 3 and result.validation and result.params["W"].shape == (3,)
    assert [p.done for p in seen] == [1, 2, 3]
    assert all(hasattr(seen[0], field)
               for field in ("done", "total", "loss", "elapsed_s", "validation"))
    assert (tmp_path / "out" / "reg.optimizer.safetensors").exists()
    from safetensors import safe_open
    with safe_open(tmp_path / "out" / "reg.safetensors", "np") as stored:
        meta = stored.metadata()
    assert {"fuse.step", "fuse.loss", "fuse.optimizer", "fuse.backend", "fuse.learning_rate",
            "fuse.seed", "fuse.schedule", "fuse.steps"} <= set(meta)
    loss, grads = program.gradients({"W": np.zeros(3), "B": np.zeros(())})
    assert np.isfinite(float(loss)) and set(grads) == {"W", "B"}
    full = program.train(steps=1, batch={"n": 5000})
    assert any("larger than the data" in w for w in full.warnings)


# ---------------------------------------------------------------- docs/notebooks.md


@pytest.fixture
def shell():
    pytest.importorskip("IPython")
    pytest.importorskip("pandas")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fuse_lang")
    return shell


def _cell(shell, capsys, line: str, body: str) -> tuple[object, str]:
    value = shell.run_cell_magic("fuse", line, body)
    out, err = capsys.readouterr()
    return value, out + err


def test_notebooks_cells_as_the_page_shows_them(shell, capsys):
    import pandas as pd
    page = DOCS / "notebooks.md"
    shell.user_ns["parents"] = pd.DataFrame({"parent": ["Alice", "Bob", "Bob", "Carol"],
                                             "child": ["Bob", "Carol", "Dave", "Eve"]})
    datalog = block_starting(page, "%%fuse --input Parent=parents")
    _, out = _cell(shell, capsys, datalog[0][len("%%fuse "):], "\n".join(datalog[1:]) + "\n")
    assert out.strip() == "set Ancestor (8 tuples)"
    assert list(shell.user_ns["Ancestor"].columns) == ["x", "y"]
    assert len(shell.user_ns["Ancestor"]) == 8
    # a cell with an error runs nothing: its output, as the page prints it
    erring = next(b for b in fenced_blocks(page) if b and b[0] == "%%fuse --input X")
    shell.user_ns["X"] = np.ones((3, 2))
    shell.user_ns.pop("Y", None)
    value, out = _cell(shell, capsys, "--input X", "\n".join(erring[1:]) + "\n")
    printed = block_starting(page, "cell:2:13: error[undefined-tensor]")
    assert out.strip().splitlines() == printed
    assert value is None and "Y" not in shell.user_ns and "Z" not in shell.user_ns


def test_notebooks_messages_the_page_quotes(shell, capsys):
    import pandas as pd
    shell.user_ns["E"] = pd.DataFrame({"a": [1.0, float("nan")], "b": [2.0, 3.0]})
    _, out = _cell(shell, capsys, "--input E", "R(x,y) = E(x,y)\nexport R\n")
    assert "--input E: row 2: the number nan is not finite (a missing value?)" in out
    _, out = _cell(shell, capsys, "--input export=E", "Y = 1\nexport Y\n")
    assert "`export` is a keyword" in out
    shell.user_ns["settings"] = {"fixpoint": "wobble"}
    _, out = _cell(shell, capsys, "--config settings", "Y = 1\nexport Y\n")
    assert "cell: the execution configuration is refused: fixpoint must be one of" in out
    _, out = _cell(shell, capsys, "--target Reach",
                   "Road(A,B)\nReach(x,y) = Road(x,y)\nBad[i] = Nope[i]\nexport Reach\n")
    assert "cell: 1 error; running only Reach" in out and "Reach" in shell.user_ns
    shell.user_ns["f"] = len
    _, out = _cell(shell, capsys, "", "Y[i] = f[i]\nexport Y\n")
    assert ("`f` is a notebook variable, but a builtin_function_or_method is no source: a cell "
            "reads a NumPy array, a DataFrame or a set of tuples by its name") in out
    shell.user_ns["x"] = np.arange(3.0)
    _cell(shell, capsys, "--quiet", "Y[i] = x[i] * 2\nexport Y\n")
    assert shell.user_ns["Y"].tolist() == [0.0, 2.0, 4.0]
    _, out = _cell(shell, capsys, "--representation Y=sparse", "A(1,2)\nY[i,j] = A(i,j)\nexport Y\n")
    assert "as a SciPy sparse array" in out


# ---------------------------------------------------------------- docs/pictures.md


def test_pictures_names_titles_and_notes(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "graph.fuse").write_text(
        "Road(A,B)\nRoad(B,C)\nReach(x,y) = Road(x,y)\nReach(x,z) = Reach(x,y) Road(y,z)\n"
        "R(x,y) = Road(x,y)\n", encoding="utf-8")
    program = tmp_path / "p.fuse"
    program.write_text('import "lib/graph.fuse" as g\ng__R(x,y) = g::R(x,y)\n'
                       "export g::Reach, g::R, g__R\n", encoding="utf-8")
    assert fuse(capsys, "run", str(program), "--plot", str(tmp_path / "a"))[0] == 0
    # `g::Reach` is `g__Reach.svg`; `g::R` and `g__R` clash: the second gets -2
    assert {p.name for p in (tmp_path / "a").iterdir()} == {
        "g__Reach.svg", "g__Reach.graph.svg", "g__R.svg", "g__R.graph.svg",
        "g__R-2.svg", "g__R-2.graph.svg"}
    assert fuse(capsys, "run", str(program), "--plot", str(tmp_path / "b"))[0] == 0
    same = (tmp_path / "b" / "g__Reach.svg").read_bytes()
    assert same == (tmp_path / "a" / "g__Reach.svg").read_bytes()  # the same value, same bytes
    page = (DOCS / "pictures.md").read_text(encoding="utf-8")
    summarised = re.search(r"`(summarised: 512x512 [^`]*)`", page).group(1)
    units = re.search(r"`(values in units of [^`]*)`", page).group(1)
    np.savez(tmp_path / "res.npz", A=np.random.default_rng(0).random((512, 512)),
             B=np.array([1.0, np.inf, 2.0]), C=np.array([[1e308, -1e308], [0.0, 1.0]]))
    assert fuse(capsys, "plot", str(tmp_path / "res.npz"), "--out", str(tmp_path / "c"))[0] == 0
    assert summarised in (tmp_path / "c" / "A.svg").read_text(encoding="utf-8")
    assert "1 value not finite (left blank)" in (tmp_path / "c" / "B.svg").read_text()
    assert units in (tmp_path / "c" / "C.svg").read_text(encoding="utf-8")
    # an empty tensor is a line saying so; complex or text values are refused in words
    np.savez(tmp_path / "odd.npz", E=np.zeros((0, 3)))
    assert fuse(capsys, "plot", str(tmp_path / "odd.npz"), "--out", str(tmp_path / "d"))[0] == 0
    assert "(empty)" in (tmp_path / "d" / "E.svg").read_text(encoding="utf-8")
    for name, value, words in (("Z", np.array([1 + 2j]), "complex128"),
                               ("S", np.array(["a"]), "<U1")):
        np.savez(tmp_path / "bad.npz", **{name: value})
        status, _, err = fuse(capsys, "plot", str(tmp_path / "bad.npz"))
        assert status == 2 and f"{name} holds {words} values, not real numbers" in err


# ---------------------------------------------------------------- docs/lsp.md


def test_lsp_check_prints_what_fuse_check_prints(tmp_path, capsys):
    from fuse_lsp.cli import main as lsp_main
    assert "fuse-lsp --check [--format text|json] PATH..." in "\n".join(
        line for block in fenced_blocks(DOCS / "lsp.md") for line in block)
    path = tmp_path / "model.fuse"
    path.write_text("Y[i] = Nope[i]\nZ = 1\n", encoding="utf-8")
    for flags in ((), ("--format", "json")):
        checked = fuse(capsys, "check", *flags, str(path))
        status = lsp_main(["--check", *flags, str(path)])
        out, err = capsys.readouterr()
        assert (status, out, err) == checked and status == 1
    # exits 2 for usage or I/O problems, as `fuse check` does
    assert lsp_main(["--check", str(tmp_path / "missing.fuse")]) == 2
    assert "missing.fuse" in capsys.readouterr().err
    assert lsp_main(["--help"]) == 0
    assert "--log-file FILE" in capsys.readouterr().out


def test_fuse_check_exit_statuses_the_diagnostics_page_states(tmp_path, capsys):
    good = tmp_path / "good.fuse"
    good.write_text("Y = 1\nexport Y\n", encoding="utf-8")
    assert main(["check", "--format", "json", str(good)]) == 0
    assert json.loads(capsys.readouterr().out) == {"diagnostics": []}
    assert main(["check", str(tmp_path / "missing.fuse")]) == 2
    capsys.readouterr()


def test_an_unsized_param_names_its_axes_in_one_sentence(tmp_path):
    np.save(tmp_path / "ids.npy", np.zeros((2, 8), dtype=np.int64))
    program = fuse_lang.compile('param Emb[c,d]\nX[n,p] = "ids.npy"\n'
                                "X0[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)\nexport X0\n",
                                base_dir=tmp_path)
    with pytest.raises(FuseError, match=r"the extents of `Emb`'s axes c, d are not known; "):
        program.run()


def test_execution_fields_table_is_the_config_and_the_flags(capsys):
    import dataclasses
    rows = [line.split("|")[1:5] for line in (DOCS / "execution.md").read_text().splitlines()
            if re.match(r"\| `\w+` \| `--", line)]
    fields = {f.name: f for f in dataclasses.fields(ExecutionConfig)}
    assert [r[0].strip(" `") for r in rows] == list(fields)
    assert main(["run", "--help"]) == 0
    run_help = capsys.readouterr().out
    assert main(["explain", "--help"]) == 0
    explain_help = capsys.readouterr().out
    for name, flag, default, _what in rows:
        flag = re.match(r" `(--[a-z-]+)", flag).group(1)
        assert flag in run_help, flag
        # explain takes the same flags, backend, device, precision, trace and cache_dir apart
        apart = name.strip(" `") in ("backend", "device", "precision", "trace", "cache_dir")
        assert (re.search(rf"{flag}\b", explain_help) is None) == apart, flag
        shown = re.fullmatch(r" `([\w.-]+)` ", default)
        if shown and not shown.group(1).isupper():
            value = fields[name.strip(" `")].default
            assert (value == float(shown.group(1)) if isinstance(value, float)
                    else str(value) == shown.group(1)), name
    assert ExecutionConfig().to_json()["max_iterations"] is None


def test_execution_estimates_backend_blocks_targets_progress_demand():
    text = ("A = const([[1.0,2,3,4,5,6],[1,1,1,1,1,1]])\nB = const([1.0,2,3,4,5,6])\n"
            "P = const([1.0,1,1,1,1,2])\nY[i] = A[i,j] B[j]\nexport Y\n")
    sampled = compile(text, config=ExecutionConfig(projection="monte_carlo", samples=3, seed=0,
                                                   importance={"Y": "P"})).execute()
    assert set(sampled.estimates["Y"]) == {"index", "samples", "extent", "weights",
                                           "standard_error", "max_standard_error"}
    assert sampled.backend is None  # the backend was named
    assert set(compile(text, backend="auto").execute().backend) == {"backend", "device", "why"}
    with pytest.raises(FuseError, match="importance weights `Nope`"):
        compile(text, config=ExecutionConfig(projection="monte_carlo", samples=3,
                                             importance={"Y": "Nope"}))
    joined = ("axis i = 200\naxis j = 200\naxis k = 200\nA[i,j] = i + j\nB[j,k] = j - k\n"
              "M[i,k] max= A[i,j] B[j,k]\nexport M\n")
    whole = compile(joined)
    whole.memory_limit = 20_000_000
    with pytest.raises(FuseError, match=r"plus 32\.0 MB while computing M"):
        whole.execute()
    blocked = compile(joined, config=ExecutionConfig(block_size=100_000))
    blocked.memory_limit = 20_000_000
    assert blocked.execute().outputs["M"].shape == (200, 200)
    result = compile("A = const([1,2])\nB[i] = A[i]\nC[i] = Nope[i]\n", targets=["B"]).execute()
    (left_out,) = result.not_run
    assert (left_out.what, left_out.line) == ("C", 3) and "[undefined-tensor]" in left_out.reason
    seen = []
    counting = compile("X = X / 2 + 3\nexport X\n")
    counting.progress = seen.append
    counting.execute()
    assert all(hasattr(seen[0], f) for f in ("done", "total", "tensors", "iteration"))
    chain = CHAIN.replace("Path", "Anc").replace("export Anc\n", "Anc(A, x)?\n")
    with pytest.raises(FuseError, match="Anc_bf is demand mode's copy of Anc for the queries "
                                        "that bind its arguments as bf"):
        compile(chain, config=ExecutionConfig(mode="demand", max_iterations=1)).execute()


def test_execution_cache_clear_removes_what_the_page_says(tmp_path, capsys):
    folder = tmp_path / "cache"
    for part in ("jax", "torch/fuse-train", "jax-export", "mine"):
        (folder / part).mkdir(parents=True)
    (folder / "index.json").write_text("{}", encoding="utf-8")
    (folder / "mine" / "keep").write_text("", encoding="utf-8")
    assert fuse(capsys, "cache", "clear", "--cache-dir", str(folder))[0] == 0
    assert sorted(p.name for p in folder.iterdir()) == ["mine"]


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_generation_logits_not_finite_and_the_temperatures(lm, tmp_path):
    infinite = fuse_lang.compile(LM.replace("H[n,p,d]\n", "H[n,p,d] / 0\n"), base_dir=tmp_path)
    for temperature in (0, 1.0):
        with pytest.raises(FuseError, match="not finite numbers"):
            infinite.generate([1, 2], 2, temperature=temperature)
    greedy = lm.generate([1, 2], 2, temperature=0).ids
    assert lm.generate([1, 2], 2, temperature=1e-320, seed=0).ids == greedy
    assert len(lm.generate([1, 2], 2, temperature=float("inf"), seed=0).ids) == 4
    assert lm.generate([1, 2], 0, temperature=0).ids == [1, 2]


def test_lsp_configuration_table_is_the_servers_options():
    from fuse_lsp.state import Options
    rows = [[cell.strip() for cell in line.split("|")[1:5]]
            for line in (DOCS / "lsp.md").read_text(encoding="utf-8").splitlines()
            if re.match(r"\| `[a-z][A-Za-z]+` \| ", line)]
    options = Options()
    snake = {re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key.strip("`")): default
             for key, default, _accepted, _meaning in rows}
    assert sorted(snake) == sorted(options.__dataclass_fields__)
    for name, default in snake.items():
        value = getattr(options, name)
        if name == "memory_limit":
            assert value is None and default == "half the free memory"
        else:
            assert json.loads(default.strip("`")) == value, name
    for key, _default, accepted, _meaning in rows:
        key = key.strip("`")
        bounds = re.search(r"(\S+) to (\S+)$", accepted)
        if bounds and key != "trainLearningRate":
            high = {"2^60": 2**60, "10^7": 10**7, "2^32-1": 2**32 - 1}.get(
                bounds.group(2), None) or int(bounds.group(2))
            low = int(bounds.group(1))
            assert Options().update({key: high}) == [] and Options().update({key: low}) == []
            assert len(Options().update({key: high + 1})) == 1
            assert len(Options().update({key: low - 1})) == 1
        for choice in re.findall(r"`(\w+)`", accepted) if "," in accepted else ():
            assert Options().update({key: choice}) == [], (key, choice)
        # a bad value is one warning naming the key, the value before kept
        warnings = Options().update({key: object()})
        assert len(warnings) == 1 and warnings[0].startswith(f"fuse settings: {key} = ")


def test_notebooks_usage_errors_and_nullary_relations(shell, capsys):
    page = (DOCS / "notebooks.md").read_text(encoding="utf-8")
    _, out = _cell(shell, capsys, "--input Nope", "Y = 1\nexport Y\n")
    said = re.search(r"`(%%fuse: --input: no notebook variable named 'Nope')`", page).group(1)
    assert out.strip() == said
    _, out = _cell(shell, capsys, "--fixpoint wobble", "Y = 1\nexport Y\n")
    assert "invalid choice: 'wobble'" in out and "usage: %%fuse" in out
    _, out = _cell(shell, capsys, "--input X --input X", "Y = 1\nexport Y\n")
    assert "--input X is given twice" in out
    # a nullary relation: no column, one row when it holds, none when it does not
    _cell(shell, capsys, "", "Road(A,B)\nDone() = Road(A,B)\nNot() = Road(B,A)\nexport Done, Not\n")
    assert shell.user_ns["Done"].shape == (1, 0) and len(shell.user_ns["Not"]) == 0
    _cell(shell, capsys, "--input Done", "Y() = Done()\nexport Y\n")
    assert len(shell.user_ns["Y"]) == 1


def test_notebooks_python_api_as_listed():
    with pytest.raises(FuseError, match=re.escape("use fuse_lang.load('model.fuse')")):
        fuse_lang.compile("model.fuse")
    result = fuse_lang.compile("Road(A,B)\nRoad(B,C)\nexport Road\n").execute()
    road = result.relation("Road")
    assert road.tuples() == [("A", "B"), ("B", "C")] and road.to_set() == {("A", "B"), ("B", "C")}
    assert road.columns == ("c0", "c1") and road.count == len(road) == 2
    assert ("A", "B") in road and list(road) == road.tuples() and set(result.relations()) == {"Road"}
    assert result.seconds >= 0
    assert fuse_lang.explain("Y = 1\nexport Y\n").text().startswith("Tensors")
    pytest.importorskip("matplotlib")
    drawn = fuse_lang.plot(result)
    assert drawn is not result and drawn.pictures and not result.pictures  # a copy


def _shell_commands(block: list[str]) -> list[list[str]]:
    """A bash block's commands, continuations joined and comments dropped."""
    import shlex
    joined = "\n".join(block).replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def test_training_page_commands_run_as_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    from safetensors import safe_open
    monkeypatch.chdir(tmp_path)
    page = DOCS / "training.md"
    (tmp_path / "reg.fuse").write_text(
        "\n".join(block_starting(page, 'X[n,j] = "x.npy"')) + "\n", encoding="utf-8")
    x = np.random.default_rng(1).normal(size=(32, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "t.npy", x @ np.array([1.0, 2.0, 3.0]))
    commands = _shell_commands(block_starting(page, "fuse train reg.fuse"))
    assert [c[:3] for c in commands] == [["fuse", "train", "reg.fuse"]] * 3
    for command in commands:  # a few steps where the page says hundreds
        command = [{"200": "2", "400": "4"}.get(word, word) for word in command[1:]]
        status, out, err = fuse(capsys, *command)
        assert status == 0, err
        assert "warning" not in err, err  # the resumed run is the uninterrupted one
    with safe_open("out/reg.safetensors", "np") as stored:
        assert stored.metadata()["fuse.step"] == "4"
    # "fuse train prints both (first step ..., then ... a step (median)) and its JSON holds them"
    status, out, err = fuse(capsys, "train", "reg.fuse", "--steps", "2", "--batch", "n=5000")
    assert status == 0 and re.search(r"first step [0-9.]+ s \(the step captured or compiled\), "
                                     r"then [0-9.]+ ms a step \(median\)", out + err)
    assert "larger than the data" in err  # the batch larger than the data: a warning on stderr
    status, out, _ = fuse(capsys, "train", "reg.fuse", "--steps", "2", "--batch", "n=5000",
                          "--format", "json")
    trained = json.loads(out)
    assert {"first_step_seconds", "step_seconds", "warnings"} <= set(trained)
    assert any("larger than the data" in w for w in trained["warnings"])


def test_pictures_module_table_signatures_and_summaries():
    import inspect
    table = [line for line in (DOCS / "pictures.md").read_text(encoding="utf-8").splitlines()
             if line.startswith("| `fuse_lang/")]
    checked = 0
    for line in table:
        module = re.match(r"\| `(fuse_lang/[\w/]+)\.py`", line).group(1).replace("/", ".")
        for name, params in re.findall(r"`(\w+)\(([^`]*?)\)(?: -> [^`]*)?`", line):
            function = getattr(importlib.import_module(module), name)
            real = list(inspect.signature(function).parameters.values())
            given = [p.strip() for p in params.split(",") if p.strip() not in ("", "...")]
            # the page's arguments come first, the rest have defaults
            assert len(given) <= len(real), name
            if "..." not in params:  # `f(array, ...)`: more arguments, not told
                assert all(p.default is not inspect.Parameter.empty
                           for p in real[len(given):]), name
            assert [p.name for p in real[1:len(given)]] == given[1:], name
            checked += 1
    assert checked >= 8
    pytest.importorskip("matplotlib")
    from fuse_lang.ide.plots import render_array
    line = render_array(np.arange(5000.0), "L", [], "svg", False, None).decode()
    assert "summarised: 5000 values shown as 1667 block means of 3" in line  # at most 2,048
    relation = np.zeros((600, 600), dtype=bool)
    relation[599, 0] = True
    heat = render_array(relation, "R", [], "svg", True, None).decode()
    assert "summarised: 600x600 shown as 200x200 block maxima of 3x3" in heat


def test_execution_a_deep_chain_takes_32_rounds_then_one_search(tmp_path, capsys):
    path = tmp_path / "long.fuse"
    path.write_text("".join(f"Edge(N{k},N{k + 1})\n" for k in range(45))
                    + "Anc(x,y) = Edge(x,y)\nAnc(x,z) = Anc(x,y) Edge(y,z)\nAnc(N0, x)?\n",
                    encoding="utf-8")
    result = fuse_lang.load(path, config=ExecutionConfig(trace=True)).execute()
    rounds = result.trace["fixpoints"][0]["rounds"]
    assert result.rounds == {("Anc",): 45} and len(rounds) == 45  # the rounds' own count
    assert [bool(r.get("searched")) for r in rounds] == [False] * 32 + [True] * 13
    status, out, _ = fuse(capsys, "run", str(path), "--trace")
    assert status == 0 and re.search(r"^33-45 \(searched\) ", out, flags=re.MULTILINE)


def test_generation_a_program_that_is_not_causal_runs_whole_and_says_why(tmp_path, capsys):
    np.save(tmp_path / "ids.npy", np.zeros((2, 6), dtype=np.int64))
    text = LM.replace("Logits[n,p,c] = Out[c,d] H[n,p,d]",
                      "M[n,d] = H[n,p,d]\nLogits[n,p,c] = Out[c,d] H[n,p,d] + Out[c,d] M[n,d]")
    (tmp_path / "nc.fuse").write_text(text, encoding="utf-8")
    result = fuse_lang.load(tmp_path / "nc.fuse").generate([1, 2], 2, temperature=0)
    assert "not causal" in result.reuse_note
    status, out, err = fuse(capsys, "generate", str(tmp_path / "nc.fuse"), "--prompt-ids", "1,2",
                            "--steps", "2", "--temperature", "0")
    assert status == 0 and out.split() == [str(i) for i in result.ids]  # ids in, ids out
    assert "not causal" in err
    status, _, err = fuse(capsys, "generate", str(tmp_path / "nc.fuse"), "--prompt", "ab")
    assert status == 1 and "no vocabulary to read the prompt with" in err


def test_execution_explain_of_a_program_with_errors_and_the_json_backend(tmp_path, capsys):
    broken = tmp_path / "broken.fuse"
    broken.write_text("A = const([1,2])\nB[i] = A[i] * 2\nC[i] = Nope[i]\nexport B\n")
    status, out, _ = fuse(capsys, "explain", str(broken))
    assert status == 1 and "Tensors" in out and "run plan" not in out
    chain = tmp_path / "chain.fuse"
    chain.write_text(CHAIN, encoding="utf-8")
    status, out, _ = fuse(capsys, "run", str(chain), "--backend", "auto", "--format", "json")
    assert json.loads(out)["backend"] == {
        "backend": "numpy", "device": "cpu", "why": "relational program (Boolean tensors): NumPy"}


def test_lsp_outline_tokens_and_hints_as_the_page_says():
    from fuse_lang.front.builtins import KEYWORDS
    from fuse_lang.ide import inlay_hints, outline, semantic_tokens
    text = (DOCS / "lsp.md").read_text(encoding="utf-8")
    tokens = text[text.index("- **Semantic tokens**"):text.index("- **Inlay hints**")]
    types = tokens[:tokens.index("Modifiers:")]
    outside, depth = [], 0  # the words outside parentheses: the types themselves
    for character in types[types.index("Types:"):]:
        depth += (character == "(") - (character == ")")
        outside.append(character if depth == 0 else " ")
    assert re.findall(r"`(\w+)`", "".join(outside)) == list(semantic_tokens.TOKEN_TYPES)
    assert set(re.search(r"`keyword` \(`([^`]+)`\)", types).group(1).split()) == KEYWORDS
    modifiers = tokens[tokens.index("Modifiers:"):]
    assert set(re.findall(r"`(\w+)`", modifiers)) == set(semantic_tokens.TOKEN_MODIFIERS)
    program = ("axis p = 6\naxis d = 4\nparam W[p,d], V[k]\nY[p,d] = W[p,d]\nS = 2\n"
               "R(x) = Q(x) not T(x)\nQ(A)\nT(B)\nexport Y, S, R, V\n")
    analysis = fuse_lang.analyze(program)
    groups = {g.label: {s.name: s.detail for s in g.symbols}
              for g in outline.document_outline(analysis)}
    assert list(groups) == ["params", "Boolean relations", "dense tensors"]
    assert groups["params"] == {"W": "[p:6, d:4]", "V": "[k:?]"}
    assert groups["dense tensors"] == {"Y": "[p:6, d:4]", "S": "scalar"}
    hints = {h.tensor: h.label for h in inlay_hints.shape_hints(analysis)}
    assert hints["Y"] == ": (6, 4)" and hints["S"] == ": ()"
    keywords = {program[t.span.start:t.span.end] for t in semantic_tokens.semantic_tokens(analysis)
                if t.type == "keyword"}
    assert {"axis", "param", "not", "export"} <= keywords


def test_diagnostics_json_example_is_what_fuse_check_writes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.fuse").write_text(_example("likely-typo-index"), encoding="utf-8")
    np.save(tmp_path / "w.npy", np.zeros((2, 3)))
    np.save(tmp_path / "x.npy", np.zeros((4, 3)))
    status, out, _ = fuse(capsys, "check", "--format", "json", "model.fuse")
    shown = json.loads("\n".join(block_starting(DIAGNOSTICS, '{"diagnostics": [')))
    assert status == 0 and json.loads(out) == shown


def test_notebooks_synopsis_is_the_magics_usage_and_tensors_come_back_natively(shell, capsys):
    page = DOCS / "notebooks.md"
    synopsis = "\n".join(block_starting(page, "%load_ext fuse_lang"))
    usage = shell.find_cell_magic("fuse").__doc__  # what `%%fuse?` prints
    usage = usage[:usage.index("options:")] if "options:" in usage else usage
    assert set(re.findall(r"--[a-z][a-z-]*", synopsis)) | {"--no-compile"} == \
        set(re.findall(r"--[a-z][a-z-]*", usage)) - {"--help"}
    # every option of the table is in the usage too
    table = [line for line in page.read_text(encoding="utf-8").splitlines()
             if line.startswith("| `--")]
    assert set(re.findall(r"`(--[a-z][a-z-]*)", "\n".join(table))) <= set(
        re.findall(r"--[a-z][a-z-]*", usage))
    pytest.importorskip("torch")
    import torch
    _, out = _cell(shell, capsys, "--backend torch", "Y = const([1.0, 2.0])\nexport Y\n")
    assert isinstance(shell.user_ns["Y"], torch.Tensor) and out.strip() == "set Y (2,)"


def test_notebooks_rich_display_as_the_table_says():
    facts = "".join(f"E(N{k},N{k + 1})\n" for k in range(25))
    result = fuse_lang.compile(facts + "D() = E(N0,N1)\nF() = E(N1,N0)\nexport E, D, F\n").execute()
    edges = result.relation("E")
    assert "… 5 more tuples" in edges._repr_html_() and "… 5 more tuples" in edges._repr_markdown_()
    assert "1 tuple (true)" in result.relation("D")._repr_html_()
    assert "0 tuples (false)" in result.relation("F")._repr_markdown_()
    marked = fuse_lang.compile('R("<script>", "a|b")\nexport R\n').execute().relation("R")
    assert "| &lt;script&gt; | a\\|b |" in marked._repr_markdown_()
    assert fuse_lang.explain("Y = 1\nexport Y\n")._repr_html_().startswith("<pre")
    assert "```" in result.why("E", ("N0", "N1"))._repr_markdown_()


def test_generation_the_vocabulary_travels_in_the_checkpoint(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    from safetensors import safe_open
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "ids.npy", np.zeros((2, 6), dtype=np.int64))
    np.save(tmp_path / "t.npy", np.zeros((2, 6), dtype=np.int64))
    (tmp_path / "lm.fuse").write_text(LM.replace(
        'X[n,p] = "ids.npy"\n', 'X[n,p] = "ids.npy"\nT[n,p] = "t.npy"\n')
        + "L avg= cross_entropy(Logits[n,p,c], T[n,p], axis=c)\ntrain L\n", encoding="utf-8")
    (tmp_path / "v2.json").write_text('["a", "b"]', encoding="utf-8")
    (tmp_path / "v5.json").write_text('["a", "b", "c", "d", "e"]', encoding="utf-8")
    # a vocabulary of another length is refused before the first step
    status, out, err = fuse(capsys, "train", "lm.fuse", "--steps", "2", "--vocab", "v2.json",
                            "--checkpoint", "lm2.safetensors")
    assert status == 1 and "another model" in err and "step 1" not in out
    assert not (tmp_path / "lm2.safetensors").exists()
    assert fuse(capsys, "train", "lm.fuse", "--steps", "2", "--vocab", "v5.json",
                "--checkpoint", "lm.safetensors")[0] == 0
    with safe_open(tmp_path / "lm.safetensors", "np") as stored:
        assert json.loads(stored.metadata()["fuse.vocabulary"]) == list("abcde")
    # `fuse generate --params CKPT` reads it from there: a text prompt, text out
    status, out, _ = fuse(capsys, "generate", "lm.fuse", "--params", "lm.safetensors",
                          "--prompt", "ab", "--steps", "3", "--seed", "0")
    assert status == 0 and re.fullmatch(r"ab[a-e]{3}", out.splitlines()[0])


def test_execution_run_what_can_run(tmp_path, capsys):
    text = 'A = const([1,2])\nB[i] = A[i] * 2\nC[i] = Nope[i]\n"b.npy" = B[i]\nexport B\n'
    with pytest.raises(FuseError, match=r"\[undefined-tensor\]"):  # without targets: refused
        compile(text, base_dir=tmp_path)
    # past_errors: the cones of the exports and sinks; not_run lists what an error left out
    result = compile(text, past_errors=True, base_dir=tmp_path).execute()
    assert [(n.what, n.line) for n in result.not_run] == [("C", 3)]
    assert (tmp_path / "b.npy").exists()
    (tmp_path / "b.npy").unlink()
    # a targeted run writes no sinks, and says what the target did not need
    result = compile(text, targets=["B"], base_dir=tmp_path).execute()
    assert ("C", 3) in [(n.what, n.line) for n in result.not_run]
    assert any(n.reason == "not needed by the target" for n in result.not_run)
    assert not (tmp_path / "b.npy").exists()
    # a program without exports, queries, sinks or loss: every tensor, refused on any error
    with pytest.raises(FuseError, match=r"\[undefined-tensor\]"):
        compile(text.replace('"b.npy" = B[i]\nexport B\n', ""), past_errors=True)
    # explain: Monte Carlo's share of the work saved; a block size the index cannot split to
    path = tmp_path / "blocked.fuse"
    path.write_text("axis i = 4\naxis j = 4\naxis k = 4\nA[i,j] = i + j\nB[j,k] = j - k\n"
                    "M[i,k] max= A[i,j] B[j,k]\nexport M\n", encoding="utf-8")
    status, out, _ = fuse(capsys, "explain", str(path), "--block-size", "1")
    assert status == 0 and "M: intermediate of 64 elements in 4 blocks; peak 16 elements" in out
    path.write_text("A = const([1.0,2,3,4,5,6])\nB = const([1.0,2,3,4,5,6])\nY = A[j] B[j]\n"
                    "export Y\n", encoding="utf-8")
    status, out, _ = fuse(capsys, "explain", str(path), "--projection", "monte_carlo",
                          "--samples", "3")
    assert status == 0 and "Monte Carlo over `j`: 3 of 6 values drawn uniformly; 50.0% of the " \
                           "contraction's work saved" in out


def test_every_flag_a_page_names_exists(shell, capsys):
    """Each `--flag` of these pages is a flag of a `fuse` command, of `%%fuse`, of
    `fuse-lsp` or of the benchmark or script the page runs it with."""
    from fuse_lsp.cli import main as lsp_main
    known = set()
    for command in ("check", "explain", "run", "train", "generate", "why", "plot", "cache",
                    "export"):
        assert main([command, "--help"]) == 0
        known |= set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out))
    assert lsp_main(["--help"]) == 0
    known |= set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out))
    known |= set(re.findall(r"--[a-z][a-z-]*", shell.find_cell_magic("fuse").__doc__))
    scripts = [*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "benchmarks").glob("*.sh"),
               ROOT / "docs" / "shots" / "jupyterlab_shots.py"]
    known |= {f for s in scripts for f in re.findall(r"--[a-z][a-z-]*", s.read_text("utf-8"))}
    for page in PAGES:
        named = re.findall(r"(?<![\w-])--[a-z][a-z-]*", (DOCS / f"{page}.md").read_text("utf-8"))
        assert sorted(set(named) - known) == [], page


def test_pictures_slices_are_titled_by_position_or_symbol(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "t.fuse"
    path.write_text("P(Alice)\nP(Bob)\naxis i = 2\naxis j = 3\nT[x,i,j] = P(x) + i + j\n"
                    "export T\n", encoding="utf-8")
    assert fuse(capsys, "run", str(path), "--plot", str(tmp_path / "a"))[0] == 0
    drawn = (tmp_path / "a" / "T.svg").read_text(encoding="utf-8")
    assert ">x=Alice<" in drawn and ">x=Bob<" in drawn  # the first axis by default
    assert fuse(capsys, "run", str(path), "--plot", str(tmp_path / "b"),
                "--slice-along", "i")[0] == 0
    drawn = (tmp_path / "b" / "T.svg").read_text(encoding="utf-8")
    assert ">i=0<" in drawn and ">i=1<" in drawn and ">x=Alice<" not in drawn


def test_training_refusals_come_before_the_first_step(tmp_path):
    pytest.importorskip("torch")
    text = "\n".join(block_starting(DOCS / "training.md", 'X[n,j] = "x.npy"')) + "\n"
    np.save(tmp_path / "x.npy", np.ones((8, 3)))
    np.save(tmp_path / "t.npy", np.ones(8))
    (tmp_path / "file").write_text("", encoding="utf-8")
    program = fuse_lang.compile(text, backend="torch", base_dir=tmp_path)
    for refused, words in ((dict(checkpoint=str(tmp_path / "file" / "ck.safetensors")),
                            "its folder cannot be made"),
                           (dict(seed=-1), "seed"), (dict(batch={"n": 0}), "batch size"),
                           (dict(learning_rate=float("nan")), "learning rate"),
                           (dict(init={"W": "normal(-1)"}), "standard deviation")):
        steps = []
        with pytest.raises(FuseError, match=words):
            program.train(steps=2, progress=steps.append, **refused)
        assert steps == [], refused


def test_notebooks_values_in_and_whys_that_cite_the_variable(shell, capsys):
    import pandas as pd
    shell.user_ns["names"] = ["ann", "bob"]  # a list holding strings: a relation
    _, out = _cell(shell, capsys, "--input S=names", "R(x) = S(x)\nexport R\n")
    assert out.strip() == "set R (2 tuples)"
    shell.user_ns["numbers"] = [1.0, 2.0, 3.0]  # a list of numbers: an array
    _cell(shell, capsys, "--quiet --input V=numbers", "Y[i] = V[i] * 2\nexport Y\n")
    assert shell.user_ns["Y"].tolist() == [2.0, 4.0, 6.0]
    for value, words in (({(2**70, 1)}, "does not fit in 64 bits"), ({(True, 1)}, "(bool)")):
        shell.user_ns["bad"] = value
        _, out = _cell(shell, capsys, "--input B=bad", "R(x,y) = B(x,y)\nexport R\n")
        assert "--input B: row 1: " in out and words in out
    shell.user_ns["parents"] = pd.DataFrame({"parent": ["Alice", "Bob"], "child": ["Bob", "Carol"]})
    _, out = _cell(shell, capsys, "--input Parent=parents --why Ancestor(Alice,Carol)",
                   "Ancestor(x,y) = Parent(x,y)\nAncestor(x,z) = Ancestor(x,y) Parent(y,z)\n"
                   "export Ancestor\n")
    assert "row 2 of the notebook variable `parents`" in out
    shell.user_ns["w"] = np.ones(3)
    _, out = _cell(shell, capsys, "--input W=w --why W[1]",
                   'W[i] = "w.npy"\nY[i] = W[i] * 2\nexport Y\n')
    assert "`W` is an input of the run: the notebook variable `w`" in out


def test_lsp_lines_end_where_the_page_says_in_fuse_check_too(tmp_path, capsys):
    cases = {b"Y = 1\rZ = Nope\r": ":2:5: error[undefined-tensor]",  # a lone CR ends a line
             b"Y = 1\r\nZ = Nope\r\n": ":2:5: error[undefined-tensor]",
             "Y = 1  # a\u2028b\nZ = Nope\n".encode(): ":2:5: error[undefined-tensor]",  # not U+2028
             b"Y = 1\x0bZ = Nope\n": ":1:6: error[invalid-character]",  # nor \v
             b"Y = 1\n\x00\n": ":2:1: error[invalid-encoding]"}  # a NUL: the one diagnostic
    for k, (data, told) in enumerate(cases.items()):
        path = tmp_path / f"lines{k}.fuse"
        path.write_bytes(data)
        status, out = _check(capsys, path)
        assert status == 1 and out.startswith(f"{path}{told}"), (data, out)


def test_execution_demand_rewrite_as_the_page_shows_it(tmp_path, capsys):
    page = DOCS / "execution.md"
    shown = [line.split("#")[0].strip() for line in block_starting(page, "Ancestor(Alice, x)?")]
    path = tmp_path / "family.fuse"
    path.write_text("Parent(Alice,Bob)\nParent(Bob,Carol)\nAncestor(x,y) = Parent(x,y)\n"
                    "Ancestor(x,z) = Ancestor(x,y) Parent(y,z)\nAncestor(Alice, x)?\n",
                    encoding="utf-8")
    status, out, _ = fuse(capsys, "explain", str(path), "--mode", "demand")
    added = out[out.index("demand: rules added:"):].splitlines()[1:]
    added = [line.strip() for line in added if line.startswith("    ")]
    assert shown[1:4] == added[:3]
    assert f"demand: the query {shown[0]} reads {shown[4]}" in out
    tie = re.search(r"`(Magic_Ancestor_bf_tie\(b0, b1\) = [^`]*)`", page.read_text()).group(1)
    assert " ".join(tie.split()) in added


def test_execution_demand_sideways_passing_and_pinned_symbols(tmp_path, capsys):
    text = (DOCS / "execution.md").read_text(encoding="utf-8")
    facts = "Road(A,B)\nRoad(B,Oslo)\nReach(x,y) = Road(x,y)\nReach(x,z) = Reach(x,y) Road(y,z)\n"
    for far, quoted in (("Far(x,z) = Reach(x,y) Reach(y,z)\n", ["Magic_Reach_bf(y) = "]),
                        ("Far(x,z) = Reach(x,Oslo) Reach(x,y) Reach(y,z)\n",
                         ["Magic_Reach_bb(x, b0) = ", "Magic_Reach_bb_pin(b0) = "])):
        path = tmp_path / "far.fuse"
        path.write_text(facts + far + "Far(A, x)?\n", encoding="utf-8")
        status, out, _ = fuse(capsys, "explain", str(path), "--mode", "demand")
        for start in quoted:
            rule = re.search(rf"`({re.escape(start)}[^`]*)`", text).group(1)
            assert f"    {' '.join(rule.split())}\n" in out, rule


def test_generation_no_reuse_gives_the_same_tokens_on_the_command_line(tmp_path, capsys):
    np.save(tmp_path / "ids.npy", np.zeros((2, 6), dtype=np.int64))
    (tmp_path / "lm.fuse").write_text(LM, encoding="utf-8")
    command = ["generate", str(tmp_path / "lm.fuse"), "--prompt-ids", "1,2", "--steps", "6",
               "--temperature", "0.8", "--top-k", "3", "--seed", "1"]
    status, reused, err = fuse(capsys, *command)
    assert status == 0 and "computed the new position only" in err
    status, whole, err = fuse(capsys, *command, "--no-reuse")
    assert status == 0 and whole == reused  # past the window of 6 too


def test_pictures_of_the_examples_the_page_shows(examples, capsys):  # noqa: F811
    pytest.importorskip("matplotlib")
    page = (DOCS / "pictures.md").read_text(encoding="utf-8")
    for command, names in (("fuse run examples/datalog_file.fuse --plot DIR",
                            {"Reach.svg", "Reach.graph.svg"}),
                           ("fuse run examples/transformer.fuse --plot DIR", {"Comp.svg"})):
        assert f"`{command}`" in page
        words = command.replace("DIR", "pictures").split()[1:]
        assert fuse(capsys, *words)[0] == 0
        assert names <= {p.name for p in (examples / "pictures").iterdir()}
    drawn = (examples / "pictures" / "Reach.svg").read_text(encoding="utf-8")
    assert ">Amsterdam<" in drawn  # ticks with the cities' names
