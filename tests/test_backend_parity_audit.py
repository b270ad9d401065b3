"""Backend parity, audited with fresh programs (docs/backends.md, "Conformance"): the
NumPy reference against eager and compiled torch and jitted and eager jax, through
`fuse_lang.compile(...).run()` and `fuse run --backend ...`.  Each test is a case where
a backend gave a different answer, or a traceback where the reference gave a message."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main
from fuse_lang.run.program import FuseError

# (backend, compiled): the reference, eager and compiled torch, jitted and eager jax
RUNS = [("numpy", None), ("torch", False), ("torch", True), ("jax", True), ("jax", False)]
CLI_RUNS = [["numpy"], ["torch"], ["torch", "--compile"], ["jax"], ["jax", "--no-compile"]]


def _need(backend: str) -> None:
    if backend != "numpy" and importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")


def _compile(text: str, backend: str, compiled: bool | None, **kwargs):
    _need(backend)
    if compiled is not None:
        kwargs["compiled"] = compiled
    return fuse_lang.compile(text, backend=backend, **kwargs)


def _error(text: str, backend: str, compiled: bool | None, **kwargs) -> str:
    program = _compile(text, backend, compiled, **kwargs)
    with pytest.raises(FuseError) as caught:
        program.run()
    return str(caught.value)


EMPTY_MAX = """X[i,j] = "x.npy"
Z[i] max= X[i,j]
export Z
"""


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_a_max_over_an_empty_axis_is_no_value_on_every_backend(tmp_path, backend, compiled):
    # torch: "internal error while running: IndexError: amax(): Expected reduction dim 1
    # to have non-zero size."; numpy and jax passed their own wording through. The
    # decision (docs/language.md): an equation over no positions takes no value, 0 alone
    np.save(tmp_path / "x.npy", np.zeros((2, 0)))
    got = _compile(EMPTY_MAX, backend, compiled, base_dir=tmp_path).run()["Z"]
    np.testing.assert_array_equal(np.asarray(got), [0, 0])


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_a_min_over_an_empty_axis_with_an_empty_result_is_empty(tmp_path, backend, compiled):
    # numpy refused it too ("zero-size array to reduction operation minimum"), though no
    # value is missing: the result has no cells
    np.save(tmp_path / "x.npy", np.zeros((0, 0)))
    text = 'X[i,j] = "x.npy"\nZ[i] = reduce(min, j) X[i,j] + 1\nexport Z\n'
    got = _compile(text, backend, compiled, base_dir=tmp_path).run()["Z"]
    assert np.asarray(got).shape == (0,) and np.asarray(got).dtype == np.float32


@pytest.mark.parametrize("flags", CLI_RUNS, ids=" ".join)
def test_fuse_run_takes_an_empty_max_without_an_internal_error(tmp_path, capsys, flags):
    _need(flags[0])
    (tmp_path / "p.fuse").write_text('R(x,y) = "r.tsv"\nM max= R(x,y)\nexport M\n',
                                     encoding="utf-8")
    (tmp_path / "r.tsv").write_text("", encoding="utf-8")
    assert main(["run", str(tmp_path / "p.fuse"), "--backend", *flags,
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in err
    assert json.loads(out)["outputs"]["M"]["values"] == 0


TOPK_NAN = """X = const([[1, 2, 3], [4, 4, 4]])
L[i,j] = log(X[i,j] - 2)
T[i,j] = topk(L[i,j], k=2)
export T
"""


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_topk_ranks_a_nan_below_every_number(backend, compiled):
    # torch: [[nan, 0], ...] (torch.topk takes NaN for the largest); numpy and jax
    # rank it last: log(-1) is no candidate for the largest value
    with np.errstate(divide="ignore", invalid="ignore"):
        got = _compile(TOPK_NAN, backend, compiled).run()["T"]
    np.testing.assert_array_equal(got, np.float32([[0, -np.inf], [np.log(2)] * 2]))


GATHER = """Emb[v,d] = "emb.npy"
Tok[t] = "tok.npy"
E[t,d] = gather(Emb[v,d], Tok[t], axis=v)
export E
"""


@pytest.mark.parametrize("backend,compiled", RUNS)
@pytest.mark.parametrize("ids,message", [
    ([-1, 0], "gather's positions hold the position -1, outside the 4 of its axis (0 to 3)"),
    ([1.5, 0], "gather's positions hold 1.5, which is no position: give whole numbers from 0 to 3"),
    ([np.nan, 0], "gather's positions hold nan, which is no position"),
    ([4, 0], "gather's positions hold the position 4, outside the 4 of its axis (0 to 3)"),
])
def test_ids_that_are_no_position_stop_a_jitted_run_too(tmp_path, backend, compiled, ids, message):
    # jitted jax read the last row for -1, row 1 for 1.5, row 0 for NaN and NaN for 4,
    # where numpy, eager jax and torch stop with a message; a first run with good ids
    # compiles the graph that the bad ones then go through
    np.save(tmp_path / "emb.npy", np.arange(12.0).reshape(4, 3))
    np.save(tmp_path / "tok.npy", np.array([3.0, 0.0]))
    program = _compile(GATHER, backend, compiled, base_dir=tmp_path)
    np.testing.assert_array_equal(program.run()["E"], [[9, 10, 11], [0, 1, 2]])
    with pytest.raises(FuseError) as caught:
        program.run({"Tok": np.array(ids)})
    assert message in str(caught.value)


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_a_nan_in_the_rows_a_jitted_gather_reads_is_no_error(tmp_path, backend, compiled):
    # the eager re-run that finds bad ids gives the same values where the NaN is the data's
    np.save(tmp_path / "emb.npy", np.array([[np.nan, 1.0], [2.0, 3.0]]))
    np.save(tmp_path / "tok.npy", np.array([0, 1, 0]))
    got = _compile(GATHER, backend, compiled, base_dir=tmp_path).run()["E"]
    np.testing.assert_array_equal(got, [[np.nan, 1], [2, 3], [np.nan, 1]])


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_a_class_id_out_of_range_stops_a_jitted_cross_entropy(tmp_path, backend, compiled):
    # jitted jax: L = [nan, 0.69] and its mean NaN, where numpy stops
    np.save(tmp_path / "z.npy", np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]))
    np.save(tmp_path / "t.npy", np.array([3, 1]))
    text = ('Z[n,v] = "z.npy"\nT[n] = "t.npy"\nL[n] = cross_entropy(Z[n,v], T[n], axis=v)\n'
            "M avg= L[n]\nexport M\n")
    message = _error(text, backend, compiled, base_dir=tmp_path)
    assert message == ("line 3: `L[n] = cross_entropy(Z[n,v], T[n], axis=v)`: cross_entropy's "
                       "targets hold the class id 3, outside the 3 of its axis (0 to 2)")


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_an_inf_in_one_step_of_a_recurrence_leaves_the_other_rows_alone(backend, compiled):
    # torch and jax put each row in as value * (1 - mask) + row * mask: the inf of one
    # row times a 0 made every row NaN ([nan, nan, nan, nan] for [1, inf, inf, inf])
    text = ("X = const([[1, 0], [0, 1], [1, 1]])\n"
            "H[t,j] = 1 / X[t,j] - H[t-1,j]\n"
            "export H\n")
    with np.errstate(divide="ignore", invalid="ignore"):
        got = _compile(text, backend, compiled).run()["H"]
    np.testing.assert_array_equal(got, np.float32([[1, np.inf], [np.inf, -np.inf],
                                                   [-np.inf, np.inf]]))


@pytest.mark.parametrize("device", ["tpu:0", "gpu", "", "cuda:x"])
def test_a_device_torch_has_no_place_for_is_said_as_jax_says_it(device):
    # torch: "torch does not know the device 'tpu:0': Expected one of cpu, cuda, ipu,
    # xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, ..."
    _need("torch")
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile("X = const([1])\nexport X\n", backend="torch", device=device)
    assert str(caught.value) == f"the torch backend runs on cpu, cuda[:N] or mps, not {device!r}"


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_topk_ranks_a_nan_last_whatever_its_sign_bit(tmp_path, backend, compiled):
    # jax's lax.top_k ranked a NaN with its sign bit clear above inf: [nan, 2, 1]
    row = np.array([-np.float32(np.nan), 1, -np.inf, np.nan, 2], dtype=np.float32)
    np.save(tmp_path / "x.npy", row[None, :])
    text = 'X[i,j] = "x.npy"\nT[i,j] = topk(X[i,j], k=3)\nA[i,j] = topk(X[i,j], k=5)\nexport T, A\n'
    got = _compile(text, backend, compiled, base_dir=tmp_path).run()
    np.testing.assert_array_equal(got["T"], [[2, 1, -np.inf]])
    np.testing.assert_array_equal(got["A"], [[2, 1, -np.inf, np.nan, np.nan]])


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_gelu_of_inf_is_inf(tmp_path, backend, compiled):
    # torch's F.gelu gave NaN at +inf (x * Φ(x) is inf * 1 there)
    np.save(tmp_path / "x.npy", np.array([-np.inf, -1.0, 0.0, 1.0, np.inf]))
    text = 'X[i] = "x.npy"\nY[i] = gelu(X[i])\nexport Y\n'
    got = _compile(text, backend, compiled, base_dir=tmp_path).run()["Y"]
    np.testing.assert_allclose(got, [np.nan, -0.15865526, 0, 0.8413447, np.inf], rtol=1e-6)


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_bad_ids_in_a_recursion_are_said_as_numpy_says_them(tmp_path, backend, compiled):
    # jitted jax ran the fixpoint as one while-loop graph, read NaN for the id 5 and said
    # "Y did not converge: after 1 iteration the values are no longer finite"
    np.save(tmp_path / "emb.npy", np.array([1.0, 2.0]))
    np.save(tmp_path / "tok.npy", np.array([0.0, 5.0]))
    text = ('Emb[v] = "emb.npy"\nTok[t] = "tok.npy"\n'
            "Y[t] = 0.5 Y[t] + gather(Emb[v], Tok[t], axis=v)\nexport Y\n")
    assert _error(text, backend, compiled, base_dir=tmp_path) == (
        "line 3: `Y[t] = 0.5 Y[t] + gather(Emb[v], Tok[t], axis=v)`: gather's positions hold "
        "the position 5, outside the 2 of its axis (0 to 1)")


SCALE = 'X[i] = "x.npy"\nY[i] = X[i] * 2\nexport Y\n'


def _torch_input(kind: str):
    _need("torch")
    import torch

    if kind == "requires_grad":
        return torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)


@pytest.mark.parametrize("backend,compiled", RUNS)
@pytest.mark.parametrize("kind", ["requires_grad", "bfloat16"])
def test_a_torch_tensor_is_an_input_on_every_backend(tmp_path, backend, compiled, kind):
    # numpy: "Can't call numpy() on Tensor that requires grad" (a FuseError holding torch's
    # advice), and for bfloat16 on numpy and jax an internal TypeError ("Got unsupported
    # ScalarType BFloat16"); torch took both
    np.save(tmp_path / "x.npy", np.ones(3))
    program = _compile(SCALE, backend, compiled, base_dir=tmp_path)
    got = program.run({"X": _torch_input(kind)})["Y"]
    np.testing.assert_array_equal(got, np.float32([2, 4, 6]))


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_complex_numbers_are_refused_from_torch_as_from_numpy(tmp_path, backend, compiled):
    # a torch complex tensor was taken with its imaginary part dropped (a numpy one refused)
    _need("torch")
    import torch

    np.save(tmp_path / "x.npy", np.ones(3))
    program = _compile(SCALE, backend, compiled, base_dir=tmp_path)
    for value in (np.array([1 + 1j, 2, 3], dtype=np.complex64), torch.tensor([1 + 1j, 2, 3])):
        with pytest.raises(FuseError) as caught:
            program.run({"X": value})
        assert str(caught.value) == ('line 1: `X[i] = "x.npy"`: the input for `X` holds complex64 '
                                     "values; Fuse reads only bool, integer or float numbers")


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_a_ragged_list_input_is_a_message(tmp_path, backend, compiled):
    # every backend: an internal ValueError ("setting an array element with a sequence")
    np.save(tmp_path / "x.npy", np.ones((2, 2)))
    program = _compile('X[i,j] = "x.npy"\nY[i] = X[i,j]\nexport Y\n', backend, compiled,
                       base_dir=tmp_path)
    with pytest.raises(FuseError, match="the input for `X` is a list that makes no rectangular array of numbers"):
        program.run({"X": [[1, 2], [3]]})
