"""Sparse products over several threads (ExecutionConfig.threads, `fuse run
--threads`; run/sparse/threads.py): the same relations as on one thread, the
trace says which products were split, and the count is checked and defaults
to what the environment allows."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig
from fuse_lang.run.results import FuseError

CLOSURE = """Edge(x, y) = "edge.tsv"
Path(x, y) = Edge(x, y)
Path(x, z) = Path(x, y) Edge(y, z)
Two(x, z) = Edge(x, y) Edge(y, z)
"path.tsv" = Path(x, y)
Two(x, z)?
"""


def _graph(folder, nodes: int = 300, edges: int = 700, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, nodes, size=(edges, 2))}
    (folder / "edge.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(pairs)))


def _run(folder, threads: int | None):
    program = fuse_lang.compile(
        CLOSURE, base_dir=folder, representation={"Edge": "sparse", "Path": "sparse"},
        config=ExecutionConfig(threads=threads, trace=True))
    result = program.execute()
    return result, (folder / "path.tsv").read_text()


def _products(trace: dict) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for fixpoint in trace["fixpoints"]:
        for entry in fixpoint["rounds"]:
            for rule in entry.get("rules", ()):
                for kind, n in rule["products"].items():
                    kinds[kind] = kinds.get(kind, 0) + n
    return kinds


def test_products_split_over_threads_give_the_relations_of_one_thread(tmp_path, monkeypatch):
    import fuse_lang.run.sparse.threads as threads

    _graph(tmp_path)
    one, written = _run(tmp_path, 1)
    assert set(_products(one.trace)) == {"sparse"}
    monkeypatch.setattr(threads, "PARALLEL_FLOPS", 1)  # every product split, however small
    for count in (2, 3, 5):
        many, again = _run(tmp_path, count)
        assert again == written
        kinds = _products(many.trace)
        assert kinds.get(f"sparse on {count} threads", 0) > 0, kinds
        assert many.queries[0].tuples == one.queries[0].tuples  # (a product not in a fixpoint)


def test_small_products_stay_on_one_thread(tmp_path):
    _graph(tmp_path, nodes=40, edges=60)
    result, _ = _run(tmp_path, 2)
    assert set(_products(result.trace)) == {"sparse"}  # under PARALLEL_FLOPS: not split


@pytest.mark.parametrize("threads", [0, -2])
def test_a_thread_count_below_one_is_refused_before_running(tmp_path, threads):
    _graph(tmp_path, nodes=10, edges=10)
    with pytest.raises(FuseError, match="threads must be a whole number of at least 1"):
        fuse_lang.compile(CLOSURE, base_dir=tmp_path, config=ExecutionConfig(threads=threads))
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "--threads",
                           str(threads), "prog.fuse"], cwd=tmp_path, capture_output=True,
                          text=True, input="")
    assert done.returncode != 0 and "Traceback" not in done.stderr


def test_the_default_is_what_the_environment_allows(monkeypatch):
    from fuse_lang.run.sparse.threads import default_threads, using_threads

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() == 3
    with using_threads(None) as count:
        assert count == 3
    with using_threads(2) as count:
        assert count == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "many")  # not a count: the cores
    assert default_threads() >= 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert default_threads() >= 1


def test_fuse_run_threads_flag_runs_and_explain_shows_it(tmp_path):
    _graph(tmp_path, nodes=30, edges=50)
    (tmp_path / "prog.fuse").write_text(CLOSURE)
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "--threads", "2",
                           "prog.fuse"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    one = (tmp_path / "path.tsv").read_text()
    assert one and one == _run(tmp_path, 1)[1]
    shown = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--threads", "2",
                            "prog.fuse"], cwd=tmp_path, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "threads=2" in shown.stdout


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_a_forked_child_runs_products_on_threads_of_its_own(tmp_path, monkeypatch):
    """A process forked after products ran on threads has none of its parent's
    threads: its own products must not wait on them."""
    import multiprocessing

    import fuse_lang.run.sparse.threads as threads

    _graph(tmp_path)
    monkeypatch.setattr(threads, "PARALLEL_FLOPS", 1)
    _, written = _run(tmp_path, 2)  # the parent's pool now exists
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        child = pool.apply_async(_child_run, (str(tmp_path),))
        assert child.get(timeout=60) == written


def _child_run(folder: str) -> str:
    from pathlib import Path

    return _run(Path(folder), 2)[1]
