"""The compiled-artifact cache (`cache_dir`, `fuse run --cache-dir`, `fuse cache`)
and export (`program.export`, `fuse export`): issue 14, items 5 and 6."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, FuseError
from fuse_lang.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRANSFORMER = ROOT / "examples" / "transformer.fuse"
jax = pytest.importorskip("jax")

PROGRAM = """# a small chain
X[i,j] = "x.npy"
W[j,k] = "w.npy"
H[i,k] = relu(X[i,j] W[j,k])
Y[i] = H[i,k] * 2
export Y
"""


@pytest.fixture(autouse=True)
def framework_caches_restored(monkeypatch):
    """cache_dir sets process-wide settings of jax and Inductor: put them back."""
    before = jax.config.jax_compilation_cache_dir
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""))
    if not os.environ["TORCHINDUCTOR_CACHE_DIR"]:
        monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    yield
    if jax.config.jax_compilation_cache_dir != before:
        from jax.experimental.compilation_cache import compilation_cache

        jax.config.update("jax_compilation_cache_dir", before)
        compilation_cache.reset_cache()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(3, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", rng.normal(size=(4, 5)).astype(np.float32))
    return tmp_path


def _cached(text: str, folder: Path, backend: str = "jax", **keywords) -> fuse_lang.CompiledProgram:
    return fuse_lang.compile(text, backend=backend, base_dir=folder,
                             config=ExecutionConfig(cache_dir=str(folder / "cache")), **keywords)


def _fuse(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=env)


def test_a_cache_dir_that_is_not_a_path_is_refused():
    with pytest.raises(FuseError, match="cache_dir must be a folder's path"):
        fuse_lang.compile("A[i] = const([1.0])\nexport A", config=ExecutionConfig(cache_dir=5))


def test_the_index_keys_by_definition_not_by_layout(folder):
    reference = fuse_lang.compile(PROGRAM, base_dir=folder).run()["Y"]
    first = _cached(PROGRAM, folder)
    np.testing.assert_allclose(first.run()["Y"], reference, rtol=1e-5, atol=1e-6)
    assert list(first.cache_entries.values()) == [False]  # new: compiled and noted
    index = json.loads((folder / "cache" / "index.json").read_text())
    assert list(index["entries"]) == list(first.cache_entries)
    assert any((folder / "cache" / "jax").iterdir())  # jax's persistent cache has files
    # the same definition with other spaces and comments: the same key, known
    relaid = PROGRAM.replace("H[i,k] = relu(", "H[i,k]   =   relu(  # spaced\n    ") \
        .replace("# a small chain", "# another comment\n\n")
    again = _cached(relaid, folder)
    again.run()
    assert again.cache_entries == {k: True for k in first.cache_entries}
    # a changed definition is a new key, and its result is its own, never a stale one
    changed = _cached(PROGRAM.replace("* 2", "* 3"), folder)
    y = changed.run()["Y"]
    assert list(changed.cache_entries.values()) == [False]
    assert set(changed.cache_entries).isdisjoint(first.cache_entries)
    np.testing.assert_allclose(y, reference * 1.5, rtol=1e-5, atol=1e-6)
    # other input shapes: another key too
    shaped = _cached(PROGRAM, folder)
    shaped.run({"X": np.ones((2, 4), np.float32)})
    assert list(shaped.cache_entries.values()) == [False]


def test_a_second_process_reuses_the_cache_and_fuse_cache_shows_and_clears_it(folder):
    program = folder / "chain.fuse"
    program.write_text(PROGRAM)
    cache = folder / "c"
    for _ in range(2):
        done = _fuse("run", str(program), "--backend", "jax", f"--cache-dir={cache}",
                     "--format", "json")
        assert done.returncode == 0, done.stderr
    index = json.loads((cache / "index.json").read_text())
    (entry,) = index["entries"].values()
    assert entry["uses"] == 2 and entry["backend"] == "jax"  # the second process knew it
    info = _fuse("cache", "info", "--cache-dir", str(cache), "--format", "json")
    data = json.loads(info.stdout)
    assert data["entries"] == 1 and data["backends"]["jax"]["entries"] == 1
    assert data["backends"]["jax"]["files"] > 0 and data["bytes"] > 0
    text = _fuse("cache", "info", "--cache-dir", str(cache)).stdout
    assert "1 entries" in text and "jax: 1 entries" in text
    (cache / "mine.txt").write_text("not Fuse's")
    cleared = _fuse("cache", "clear", "--cache-dir", str(cache))
    assert cleared.returncode == 0 and "1 entries" in cleared.stdout
    assert sorted(p.name for p in cache.iterdir()) == ["mine.txt"]  # only Fuse's went


def test_the_default_cache_dir_follows_xdg_cache_home(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FUSE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["cache", "info"]) == 0
    assert str(tmp_path / "fuse") in capsys.readouterr().out
    monkeypatch.setenv("FUSE_CACHE_DIR", str(tmp_path / "mine"))
    assert main(["cache", "info"]) == 0
    assert str(tmp_path / "mine") in capsys.readouterr().out


def test_compiled_torch_keeps_inductors_cache_in_the_folder(folder):
    pytest.importorskip("torch")
    program = _cached(PROGRAM, folder, backend="torch", compiled=True)
    y = program.run()["Y"]
    np.testing.assert_allclose(y, fuse_lang.compile(PROGRAM, base_dir=folder).run()["Y"],
                               rtol=1e-5, atol=1e-6)
    assert list(program.cache_entries.values()) == [False]
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str((folder / "cache" / "torch").resolve())
    assert any((folder / "cache" / "torch").rglob("*"))


# ------------------------------------------------------------------ export
def _transformer() -> fuse_lang.CompiledProgram:
    return fuse_lang.compile(TRANSFORMER.read_text(), base_dir=TRANSFORMER.parent)


def test_jax_export_runs_as_run_does_and_its_stablehlo_round_trips():
    expected = _transformer().run()
    exported = _transformer().export("jax")
    assert exported.outputs == ("Y", "Comp")
    for name, value in exported.run().items():
        np.testing.assert_allclose(value, expected[name], rtol=2e-4, atol=2e-5)
    assert "stablehlo.dot_general" in exported.stablehlo
    assert "stablehlo.exponential" in exported.stablehlo  # the softmax
    if importlib.util.find_spec("flatbuffers") is None:  # jax's serialization needs it
        return
    loaded = jax.export.deserialize(exported.jax_export.serialize())
    kwargs = {exported.arguments[n]: exported.example_inputs[n] for n in exported.inputs}
    results = loaded.call(**kwargs)
    assert set(results) == {"Y", "Comp"}
    for name, value in results.items():
        np.testing.assert_allclose(np.asarray(value), expected[name], rtol=2e-4, atol=2e-5)


def test_fuse_export_torch_writes_a_pt2_that_loads_back_to_the_same_numbers(tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "transformer.pt2"
    done = _fuse("export", str(TRANSFORMER), "--format", "torch", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "outputs Y, Comp" in done.stdout
    loaded = torch.export.load(str(out))
    exported = _transformer().export("torch")
    assert isinstance(exported.artifact, torch.export.ExportedProgram)
    kwargs = {exported.arguments[n]: torch.as_tensor(exported.example_inputs[n])
              for n in exported.inputs}
    expected = _transformer().run()
    results = loaded.module()(**kwargs)
    assert set(results) == {"Y", "Comp"}
    for name, value in results.items():
        np.testing.assert_allclose(value.numpy(), expected[name], rtol=2e-4, atol=2e-5)


def test_fuse_export_stablehlo_writes_the_text(tmp_path):
    out = tmp_path / "t.mlir"
    done = _fuse("export", str(TRANSFORMER), "--format", "stablehlo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.lstrip().startswith(("module", "#loc")) and "stablehlo." in text


def test_recursion_cannot_be_exported_and_says_which_tensor():
    datalog = (ROOT / "examples" / "datalog.fuse")
    program = fuse_lang.compile(datalog.read_text(), base_dir=datalog.parent)
    with pytest.raises(FuseError, match=r"`Ancestor` is recursive Datalog.*one straight graph"):
        program.export("jax")
    numeric = fuse_lang.compile("X[i] = const([1.0, 2.0])\nV[i] = 0.5 * V[i] + X[i]\nexport V")
    with pytest.raises(FuseError, match=r"`V` is recursive: it runs to a fixpoint"):
        numeric.export("torch")
    with pytest.raises(FuseError, match="export format must be one of"):
        numeric.export("onnx")


def test_fuse_export_of_datalog_is_one_clear_line(tmp_path):
    out = tmp_path / "d.mlir"
    done = _fuse("export", str(ROOT / "examples" / "datalog.fuse"), "--format", "stablehlo",
                 "--out", str(out))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot be exported" not in done.stderr or "Ancestor" in done.stderr
    assert "`Ancestor` is recursive Datalog" in done.stderr
    assert not out.exists()


# ------------------------------------------------- jax graphs as jax.export artifacts
CHILD = r"""
import json, sys
from pathlib import Path
import fuse_lang
path, cache = Path(sys.argv[1]), sys.argv[2]
program = fuse_lang.compile(path.read_text(), backend="jax", base_dir=path.parent,
                            config=fuse_lang.ExecutionConfig(cache_dir=cache))
result = program.run()
print(json.dumps({"traced": program.compilations, "hits": list(program.cache_entries.values()),
                  "result": {k: v.tolist() for k, v in result.items()}}))
"""


def _process(program: Path, cache: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(program), str(cache)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _artifacts(cache: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((cache / "jax-export").glob("*.bin"))}


needs_flatbuffers = pytest.mark.skipif(importlib.util.find_spec("flatbuffers") is None,
                                       reason="jax serializes exports with flatbuffers")


@needs_flatbuffers
def test_a_second_process_runs_the_stored_graph_without_tracing(tmp_path):
    cache = tmp_path / "c"
    cold = _process(TRANSFORMER, cache)
    assert cold["hits"] == [False] and cold["traced"] == 1
    stored = _artifacts(cache)
    (key,) = json.loads((cache / "index.json").read_text())["entries"]
    assert len(stored) == 1 and all(name.startswith(key) for name in stored)
    warm = _process(TRANSFORMER, cache)
    assert warm["hits"] == [True] and warm["traced"] == 0  # the stored graph ran, untraced
    assert _artifacts(cache) == stored
    assert warm["result"] == cold["result"]  # the same graph: the same numbers
    info = json.loads(_fuse("cache", "info", "--cache-dir", str(cache), "--format",
                            "json").stdout)
    assert info["backends"]["jax"]["files"] >= 1 + len(list((cache / "jax").iterdir()))
    _fuse("cache", "clear", "--cache-dir", str(cache))
    assert not (cache / "jax-export").exists()


@needs_flatbuffers
def test_a_changed_definition_never_runs_a_stored_graph(folder):
    first = _cached(PROGRAM, folder)
    first.run()
    changed = _cached(PROGRAM.replace("* 2", "* 3"), folder)
    y = changed.run()["Y"]
    assert changed.compilations == 1  # traced anew: its key names another file
    np.testing.assert_allclose(y, first.run()["Y"] * 1.5, rtol=1e-5, atol=1e-6)
    assert len(_artifacts(folder / "cache")) == 2


@needs_flatbuffers
def test_a_corrupt_stored_graph_is_traced_again_and_replaced(tmp_path):
    cache = tmp_path / "c"
    cold = _process(TRANSFORMER, cache)
    (path,) = (cache / "jax-export").glob("*.bin")
    good = path.read_bytes()
    path.write_bytes(b"not an export" + good[:40])
    again = _process(TRANSFORMER, cache)
    assert again["traced"] == 1 and again["result"] == cold["result"]
    assert path.read_bytes() == good  # made again, whole
    assert [p.name for p in (cache / "jax-export").iterdir()] == [path.name]  # no temporary
    path.write_bytes(b"")
    assert _process(TRANSFORMER, cache)["traced"] == 1
