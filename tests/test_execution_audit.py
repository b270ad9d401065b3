"""Execution controls, targets and pictures at their edges (an audit of
docs/execution.md, docs/cli.md "fuse run" and docs/pictures.md): a value the
configuration or a run hook cannot use is refused in words before running, a
targeted run gives its target the whole run's values, and a picture counts
what it leaves blank and summarises a huge tensor without copying it whole."""
from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig
from fuse_lang.cli import main
from fuse_lang.run.results import FuseError

SQUARES = "X[i] = const([1.0, 2.0, 3.0])\nY[i] = X[i] X[i]\nexport Y\n"

# two tensors estimated by Monte Carlo projection, Y1 first in evaluation order
ESTIMATED = """A[i,j] = "a.npy"
B[j] = "b.npy"
Y1[i] = A[i,j] B[j]
Y2[i] = A[i,j] A[i,j]
export Y1
export Y2
"""


def _estimated(folder):
    rng = np.random.default_rng(1)
    np.save(folder / "a.npy", rng.normal(size=(3, 400)).astype(np.float32))
    np.save(folder / "b.npy", rng.normal(size=400).astype(np.float32))
    path = folder / "mc.fuse"
    path.write_text(ESTIMATED)
    return path


def test_an_estimate_that_is_not_a_list_of_names_is_refused_in_words():
    # a config file's `"estimate": 5` raised TypeError ('int' object is not iterable)
    with pytest.raises(FuseError, match="estimate is a tuple of tensor names"):
        fuse_lang.compile(SQUARES, config=ExecutionConfig(
            projection="monte_carlo", samples=2, estimate=5))


@pytest.mark.parametrize("limit", [-1, 0, math.nan, "1GB", True])
def test_a_memory_limit_that_is_not_a_positive_number_is_refused(limit):
    # NaN switched the memory guard off, a string failed inside it with a TypeError,
    # and 0 or -1 were run and said to be exceeded
    with pytest.raises(FuseError, match="the memory limit must be a positive number of bytes"):
        fuse_lang.compile(SQUARES, memory_limit=limit)
    program = fuse_lang.compile(SQUARES)
    with pytest.raises(FuseError, match="the memory limit must be a positive number of bytes"):
        program.memory_limit = limit


@pytest.mark.parametrize("hook", ["progress", "interrupt", "operation_check"])
def test_a_run_hook_that_is_not_a_function_is_refused_when_set(hook):
    # it was taken, and the next run failed inside with TypeError ('int' object is
    # not callable)
    program = fuse_lang.compile(SQUARES)
    with pytest.raises(FuseError, match=f"`{hook}` is a function \\(or None\\), not 5"):
        setattr(program, hook, 5)
    setattr(program, hook, None)
    assert program.execute().outputs["Y"].tolist() == [1.0, 4.0, 9.0]


def test_a_positive_memory_limit_still_guards_and_runs():
    program = fuse_lang.compile(SQUARES, memory_limit=1e9)
    assert program.execute().outputs["Y"].tolist() == [1.0, 4.0, 9.0]
    program.memory_limit = 8
    with pytest.raises(FuseError, match="over the limit of 8 B; nothing was run"):
        program.execute()


def test_explain_refuses_what_run_refuses_in_the_program(tmp_path, capsys):
    # `fuse explain` printed a plan (exit 0) for an estimate or importance weights
    # that `fuse run` refuses; docs/execution.md: explain exits 2
    path = str(_estimated(tmp_path))
    mc = ["--projection", "monte_carlo", "--samples", "5"]
    assert main(["explain", path, *mc, "--estimate", "Nope"]) == 2
    assert "estimate names `Nope`" in capsys.readouterr().err
    assert main(["explain", path, *mc, "--importance", "Y1=Nope"]) == 2
    assert "importance weights `Nope` for `Y1`" in capsys.readouterr().err
    assert main(["explain", path, *mc, "--estimate", "Y1"]) == 0
    assert "Y1: Monte Carlo over `j`" in capsys.readouterr().out


def test_a_targeted_monte_carlo_run_draws_what_the_whole_run_draws(tmp_path):
    # one generator per run, in evaluation order: a run of Y2 alone drew Y1's
    # indices for Y2 and gave another estimate than the whole run with the same seed
    _estimated(tmp_path)
    config = ExecutionConfig(projection="monte_carlo", samples=20, seed=3)
    whole = fuse_lang.compile(ESTIMATED, base_dir=tmp_path, config=config).execute()
    alone = fuse_lang.compile(ESTIMATED, base_dir=tmp_path, config=config,
                              targets=["Y2"]).execute()
    assert list(alone.outputs) == ["Y2"]
    np.testing.assert_array_equal(alone.outputs["Y2"], whole.outputs["Y2"])
    np.testing.assert_array_equal(alone.estimates["Y2"]["standard_error"],
                                  whole.estimates["Y2"]["standard_error"])
    # and estimating only Y2 draws for it what estimating both does
    only = fuse_lang.compile(ESTIMATED, base_dir=tmp_path, config=ExecutionConfig(
        projection="monte_carlo", samples=20, seed=3, estimate=("Y2",))).execute()
    np.testing.assert_array_equal(only.outputs["Y2"], whole.outputs["Y2"])


def _svg_text(data: bytes) -> str:
    import re

    return " ".join(re.sub(r"<[^>]+>", "", t) for t in
                    re.findall(r"<text\b.*?</text>", data.decode("utf-8"), re.S))


def test_a_grid_of_slices_counts_the_values_not_finite_of_every_slice():
    pytest.importorskip("matplotlib")
    from fuse_lang.ide.plots import render_array

    # the note counted the last slice drawn only: a NaN in slice 0 went unsaid
    cube = np.ones((3, 4, 5))
    cube[0, 0, 0] = np.nan
    cube[1, 2, 3] = np.inf
    assert "2 values not finite (left blank)" in _svg_text(render_array(cube, "T"))
    four = np.ones((2, 3, 4, 5), dtype=np.float32)
    four[0, 1, 0, 0] = np.nan
    assert "1 value not finite (left blank)" in _svg_text(render_array(four, "F"))


def test_a_huge_tensor_is_summarised_without_copying_it_whole():
    pytest.importorskip("matplotlib")
    from fuse_lang.ide.plots import render_array

    big = np.random.default_rng(0).random((3000, 3000), dtype=np.float32)
    cube = big.reshape(25, 6, 250, 240)
    render_array(np.ones((2, 2)), "warm")  # matplotlib's first import is not counted
    for value, note in ((big, "3000x3000 shown as 250x250 block means of 12x12"),
                        (cube, "the first 16 of 150 slices")):
        tracemalloc.start()
        try:
            picture = render_array(value, "Big")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert note in _svg_text(picture)
        # it made a float64 copy of the whole tensor (and a padded one): 4x its bytes
        assert peak < big.nbytes, (peak, big.nbytes)


def test_fuse_plot_of_an_archive_of_no_arrays_says_so(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    np.savez(tmp_path / "none.npz")
    assert main(["plot", str(tmp_path / "none.npz")]) == 2
    assert "none.npz holds no arrays" in capsys.readouterr().err


def test_backend_auto_refuses_a_device_that_is_none():
    # `--backend auto --device banana` ran on the cpu (and on a large program would
    # have run on `cuda`): the device was never looked at
    with pytest.raises(FuseError, match="runs on the device cpu, cuda, cuda:N or auto, "
                                        "not 'banana'"):
        fuse_lang.compile(SQUARES, backend="auto", device="banana")
    for device in ("cpu", "auto", "cuda:1"):  # small: NumPy on the cpu, whatever is named
        program = fuse_lang.compile(SQUARES, backend="auto", device=device)
        assert program.backend_choice["backend"] == "numpy"


def test_a_time_limit_stops_a_fixpoint_jax_would_loop_inside_one_graph():
    # jax ran the rounds inside one while-loop graph, where the time limit is not
    # checked: the run went on to its round limit (10^9 rounds: half a minute)
    # and said that, not the time limit
    pytest.importorskip("jax")
    program = fuse_lang.compile("B[i] = const([1.0, 1.0])\nX[i] = B[i] - X[i]\nexport X\n",
                                backend="jax", max_iterations=10**9)
    with pytest.raises(FuseError, match="stopped at its time limit of 0.5 s"):
        program.execute(time_limit=0.5)
    # without a limit the loop stays inside the graph, and its round limit is said
    short = fuse_lang.compile("B[i] = const([1.0, 1.0])\nX[i] = B[i] - X[i]\nexport X\n",
                              backend="jax", max_iterations=50)
    with pytest.raises(FuseError, match="did not converge in 50 iterations"):
        short.execute()


def test_an_out_under_a_file_is_refused_before_the_run(tmp_path, capsys):
    # it ran, then said `cannot be written: File exists` (the folder made over a file)
    program = tmp_path / "p.fuse"
    program.write_text(SQUARES)
    (tmp_path / "afile").write_text("x")
    for out in ("afile/r.npz", "afile/", "afile/sub/r.npy"):
        assert main(["run", str(program), "--out", f"{tmp_path}/{out}"]) == 2
        seen = capsys.readouterr()
        assert seen.out == ""  # refused before the run: nothing printed
        assert "afile is a file, not a folder" in seen.err
    assert main(["run", str(program), "--out", str(tmp_path / "new" / "r.npz")]) == 0
    assert np.load(tmp_path / "new" / "r.npz")["Y"].tolist() == [1.0, 4.0, 9.0]


def test_a_cache_dir_over_a_file_says_so(tmp_path):
    # it said `cannot be made: File exists`
    pytest.importorskip("jax")
    (tmp_path / "afile").write_text("x")
    for folder in ("afile", "afile/sub"):
        with pytest.raises(FuseError, match="cannot be made: .*afile is a file, not a folder"):
            fuse_lang.compile(SQUARES, backend="jax",
                              config=ExecutionConfig(cache_dir=str(tmp_path / folder)))


def test_slice_along_with_nothing_to_slice_is_refused(tmp_path, capsys):
    # with no 3-D or larger tensor `--slice-along zz` did nothing and said nothing
    # (as `--slice-along` without `--plot`, which exits 2)
    pytest.importorskip("matplotlib")
    program = tmp_path / "p.fuse"
    program.write_text(SQUARES)
    assert main(["run", str(program), "--plot", str(tmp_path / "p"),
                 "--slice-along", "zz"]) == 2
    seen = capsys.readouterr()
    assert seen.out == "" and not (tmp_path / "p").exists()
    assert "--slice-along zz: the program has no 3-D or larger tensor to slice" in seen.err
    np.save(tmp_path / "v.npy", np.arange(4.0))
    assert main(["plot", str(tmp_path / "v.npy"), "--slice-along", "zz"]) == 2
    assert "no output is 3-D or larger: there is nothing to slice along 'zz'" in \
        capsys.readouterr().err


def test_a_picture_that_cannot_be_drawn_loses_no_result(tmp_path, capsys):
    """A sparse output too large to draw exited 2 before the results were shown:
    the run's answers were lost (text and JSON). Now they show, then it is said."""
    (tmp_path / "big.tsv").write_text("".join(f"{k}\t{k}\n" for k in range(8200)))
    program = tmp_path / "big.fuse"
    program.write_text('R(x,y) = "big.tsv"\nS(x,y) = R(x,y)\nexport S\n')
    assert main(["run", "--plot", str(tmp_path / "plots"), str(program)]) == 2
    out, err = capsys.readouterr()
    assert "S  8200 tuples" in out and "too large to draw" in err
    assert main(["run", "--format", "json", "--plot", str(tmp_path / "plots"),
                 str(program)]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["outputs"]["S"]["count"] == 8200 and "too large to draw" in err
