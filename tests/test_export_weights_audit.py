"""Export and weights, from a user's side: what an inference export of a
trained program (its loss's targets not in the graph) and a manifest's
edges do (docs/backends.md "Export", docs/weights.md)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fuse_lang

LOSS = """X[b,j] = "x.npy"
W[o,j] = "w.npy"
T[b,o] = "t.npy"
H[b,o] = relu(W[o,j] X[b,j])
D[b,o] = H[b,o] - T[b,o]
L avg= D[b,o] D[b,o]
export H
"""


def test_a_dynamic_export_that_leaves_out_the_targets_is_checked_at_another_size(
        tmp_path: Path):
    # the targets T share the batch index but are not in the graph: the check
    # at another size grows them too (it failed on their file's extent)
    jax = pytest.importorskip("jax")
    del jax
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "t.npy", rng.normal(size=(2, 3)).astype(np.float32))
    program = fuse_lang.compile(LOSS, base_dir=tmp_path)
    made = program.export("jax", dynamic=["b"])
    assert set(made.inputs) == {"X", "W"}  # T is not read by the export
    x = rng.normal(size=(5, 4)).astype(np.float32)
    out = made.run({"X": x, "W": w})
    np.testing.assert_allclose(out["H"], np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)


def _quantized(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    x = rng.normal(size=4).astype(np.float32)
    scale = (np.abs(w).max(axis=1) / 127).astype(np.float32)
    q = np.round(w / scale[:, None]).astype(np.int8)
    np.save(folder / "q.npy", q)
    np.save(folder / "x.npy", x)
    np.save(folder / "scale.npy", scale)
    np.save(folder / "square.npy", np.ones((3, 3), np.float32))
    return q, scale, x


QUANT = """W[i,j] = "w.safetensors:layers.0:wq"
X[j] = "x.npy"
Y[i] = W[i,j] X[j]
export Y
"""


def test_a_scale_given_as_a_file_string_is_read_like_any_file_reference(tmp_path: Path):
    q, scale, x = _quantized(tmp_path)
    manifest = {"tensors": {"W": {"file": "q.npy", "quantization": {
        "scale": "scale.npy", "zero_point": 0, "axis": "i"}}, "X": "x.npy"}}
    program = fuse_lang.compile(QUANT, base_dir=tmp_path, weights=manifest)
    np.testing.assert_allclose(program.run()["Y"], (q * scale[:, None]) @ x, rtol=1e-5)


def test_a_scale_file_of_two_axes_says_its_shape(tmp_path: Path, capsys):
    from fuse_lang.cli import main

    _quantized(tmp_path)
    (tmp_path / "p.fuse").write_text(QUANT)
    (tmp_path / "m.json").write_text(json.dumps({"tensors": {"W": {"file": "q.npy", "quantization": {
        "scale": {"file": "square.npy"}, "axis": 0}}, "X": "x.npy"}}))
    assert main(["check", "--weights", str(tmp_path / "m.json"), str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr().out
    assert "weights-shape-mismatch" in out and "its scale has shape (3, 3)" in out, out


def test_a_key_on_a_npy_file_is_refused_not_dropped(tmp_path: Path, capsys):
    # a .npy holds one array: "key" meant a member of some other file
    from fuse_lang.cli import main

    _quantized(tmp_path)
    np.save(tmp_path / "w.npy", np.ones((3, 4), np.float32))
    (tmp_path / "p.fuse").write_text(QUANT)
    (tmp_path / "m.json").write_text(json.dumps({"tensors": {
        "W": {"file": "w.npy", "key": "layers.0.wq"}, "X": "x.npy"}}))
    for command in ("check", "run"):
        assert main([command, "--weights", str(tmp_path / "m.json"),
                     str(tmp_path / "p.fuse")]) == 1
        out = capsys.readouterr()
        assert "weights-bad-manifest" in out.out + out.err and "takes no key" in out.out + out.err


def test_a_dynamic_export_writes_no_sink_of_the_program(tmp_path: Path):
    # the check at another size is a run of the engine: its sinks are not the
    # export's to write (it wrote the grown, made-up batch to the user's file)
    pytest.importorskip("jax")
    from fuse_lang.cli import main

    rng = np.random.default_rng(2)
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", rng.normal(size=(3, 4)).astype(np.float32))
    (tmp_path / "p.fuse").write_text('X[b,j] = "x.npy"\nW[o,j] = "w.npy"\n'
                                     'H[b,o] = relu(W[o,j] X[b,j])\n"h.npy" = H[b,o]\nexport H\n')
    assert main(["export", str(tmp_path / "p.fuse"), "--format", "stablehlo", "--out",
                 str(tmp_path / "p.mlir"), "--dynamic", "b"]) == 0
    assert (tmp_path / "p.mlir").exists() and not (tmp_path / "h.npy").exists()


@pytest.mark.parametrize("format,framework", [("torch", "torch"), ("jax", "jax")])
def test_a_bf16_export_runs_and_checks_at_another_size(tmp_path: Path, format, framework):
    # NumPy has no bfloat16: the example inputs came back float32 and the graph,
    # which takes bfloat16, refused them ("expected m1 and m2 to have the same dtype")
    pytest.importorskip(framework)
    rng = np.random.default_rng(3)
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", rng.normal(size=(3, 4)).astype(np.float32))
    program = fuse_lang.compile('X[b,j] = "x.npy"\nW[o,j] = "w.npy"\n'
                                'H[b,o] = W[o,j] X[b,j]\nexport H\n', base_dir=tmp_path,
                                backend=framework,
                                config=fuse_lang.ExecutionConfig(precision="bf16"))
    made = program.export(format, dynamic=["b"])
    x = rng.normal(size=(5, 4)).astype(np.float32)
    got = made.run({"X": x})["H"]
    np.testing.assert_allclose(got, program.run({"X": x})["H"], rtol=2e-2, atol=2e-2)
    assert got.shape == (5, 3)


def test_a_dynamic_axis_of_a_manifest_tensor_is_said_to_be_state(tmp_path: Path, capsys):
    # a manifest's tensors are the export's state: its batch axis cannot be
    # dynamic, and the refusal says why (it said no input had the axis)
    pytest.importorskip("jax")
    from fuse_lang.cli import main

    rng = np.random.default_rng(4)
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", rng.normal(size=(3, 4)).astype(np.float32))
    (tmp_path / "p.fuse").write_text('X[b,j] = "x.npy"\nW[o,j] = "w.npy"\n'
                                     'H[b,o] = W[o,j] X[b,j]\nexport H\n')
    (tmp_path / "m.json").write_text(json.dumps({"tensors": {"X": "x.npy", "W": "w.npy"}}))
    assert main(["export", str(tmp_path / "p.fuse"), "--format", "stablehlo", "--out",
                 str(tmp_path / "p.mlir"), "--weights", str(tmp_path / "m.json"),
                 "--dynamic", "b"]) == 1
    err = capsys.readouterr().err
    assert "the axis `b` cannot be dynamic: the weights' tensor `X` has it" in err, err
    assert not (tmp_path / "p.mlir").exists()


def test_a_sha256_that_is_not_hex_is_refused_by_the_check(tmp_path: Path, capsys):
    # the check said "no problems" and only the run's hashing refused it
    from fuse_lang.cli import main

    _quantized(tmp_path)
    np.save(tmp_path / "w.npy", np.ones((3, 4), np.float32))
    (tmp_path / "p.fuse").write_text(QUANT)
    (tmp_path / "m.json").write_text(json.dumps({"tensors": {
        "W": {"file": "w.npy", "sha256": "z" * 64}, "X": "x.npy"}}))
    assert main(["check", "--weights", str(tmp_path / "m.json"), str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr().out
    assert "weights-bad-manifest" in out and "64 hex digits" in out, out


def test_a_tensor_named_twice_in_a_manifest_is_refused(tmp_path: Path, capsys):
    # JSON keeps the last of two equal keys: the first entry vanished unsaid
    from fuse_lang.cli import main

    _quantized(tmp_path)
    np.save(tmp_path / "w.npy", np.ones((3, 4), np.float32))
    (tmp_path / "p.fuse").write_text(QUANT)
    (tmp_path / "m.json").write_text('{"tensors": {"W": "w.npy", "X": "x.npy", "W": "q.npy"}}')
    assert main(["check", "--weights", str(tmp_path / "m.json"), str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr().out
    assert "weights-bad-manifest" in out and "names 'W' twice" in out, out


def test_a_tensor_given_as_an_input_stays_an_input_of_the_export(tmp_path: Path):
    # the manifest gives W and X; inputs= gives X too: X is the graph's input
    # (it wins, as in a run), W its state (X was baked in as state)
    pytest.importorskip("jax")
    rng = np.random.default_rng(5)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "x.npy", rng.normal(size=4).astype(np.float32))
    program = fuse_lang.compile('W[i,j] = "a.npy"\nX[j] = "b.npy"\nY[i] = W[i,j] X[j]\n'
                                'export Y\n', base_dir=tmp_path,
                                weights={"tensors": {"W": "w.npy", "X": "x.npy"}})
    made = program.export("jax", {"X": np.ones(4, np.float32)})
    assert made.inputs == ("X",) and made.state == ("W",)
    x = rng.normal(size=4).astype(np.float32)
    np.testing.assert_allclose(made.run({"X": x})["Y"], w @ x, rtol=1e-5, atol=1e-6)


LAYERS = """W[l,j,k] = "w.npy"
X0[b,k] = "x.npy"
H[l,b,j] = tanh(W[l,j,k] H[l-1,b,k]) + X0[b,j]
export H
"""


@pytest.mark.parametrize("format,framework", [("torch", "torch"), ("stablehlo", "jax")])
def test_a_recurrence_over_layers_exports_and_only_its_layer_axis_is_refused(
        tmp_path: Path, capsys, format, framework):
    # the batch may be dynamic (the layers are unrolled); the layer count may not,
    # and the refusal names `l` alone, not every index asked for
    pytest.importorskip(framework)
    from fuse_lang.cli import main

    rng = np.random.default_rng(6)
    np.save(tmp_path / "w.npy", rng.normal(size=(3, 4, 4)).astype(np.float32))
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    (tmp_path / "p.fuse").write_text(LAYERS)
    out = str(tmp_path / "p.out")
    assert main(["export", str(tmp_path / "p.fuse"), "--format", format, "--out", out,
                 "--dynamic", "b"]) == 0
    assert main(["export", str(tmp_path / "p.fuse"), "--format", format, "--out", out + "2",
                 "--dynamic", "b,l"]) == 1
    err = capsys.readouterr().err
    assert "fixes the size of `l`, which" in err, err


@pytest.mark.parametrize("action", ["info", "clear"])
def test_a_cache_dir_under_a_file_exits_2(tmp_path: Path, capsys, action):
    # a run refuses it ("cannot be made"); info said "not made yet", clear "cleared"
    from fuse_lang.cli import main

    (tmp_path / "f").write_text("mine")
    assert main(["cache", action, "--cache-dir", str(tmp_path / "f" / "cache")]) == 2
    assert "is a file" in capsys.readouterr().err
    assert (tmp_path / "f").read_text() == "mine"


def _torch_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.cuda
@pytest.mark.skipif(not _torch_gpu(), reason="no NVIDIA GPU for torch on this machine")
def test_a_torch_export_on_cuda_runs_and_checks_at_another_size(tmp_path: Path):
    # the graph's state is on the GPU: Exported.run (and the --dynamic check)
    # gave it CPU tensors
    rng = np.random.default_rng(7)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", rng.normal(size=(2, 4)).astype(np.float32))
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "t.npy", rng.normal(size=(2, 3)).astype(np.float32))
    program = fuse_lang.compile(LOSS, base_dir=tmp_path, backend="torch", device="cuda")
    made = program.export("torch", dynamic=["b"])
    x = rng.normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(made.run({"X": x})["H"], np.maximum(x @ w.T, 0),
                               rtol=1e-4, atol=1e-5)


def test_fuse_export_never_writes_over_what_it_reads(tmp_path: Path, capsys):
    # `--out` naming the program, a source, an --input file or a weights file
    # replaced it with the graph (the program or its data lost)
    pytest.importorskip("jax")
    from fuse_lang.cli import main

    _quantized(tmp_path)
    np.save(tmp_path / "w.npy", np.ones((3, 4), np.float32))
    program = tmp_path / "p.fuse"
    program.write_text('W[i,j] = "w.npy"\nX[j] = "x.npy"\nY[i] = W[i,j] X[j]\nexport Y\n')
    (tmp_path / "m.json").write_text(json.dumps({"tensors": {"W": {
        "file": "q.npy", "quantization": {"scale": "scale.npy", "axis": 0}}}}))
    cases = [([], "p.fuse", "the program"), ([], "x.npy", "a source of the program"),
             (["--input", f"X={tmp_path / 'x.npy'}"], "x.npy", "an --input file"),
             (["--weights", str(tmp_path / "m.json")], "scale.npy", "a file of the weights"),
             (["--weights", str(tmp_path / "m.json")], "m.json", "the --params or --weights")]
    for extra, out, what in cases:
        before = (tmp_path / out).read_bytes()
        assert main(["export", str(program), "--format", "stablehlo", "--out",
                     str(tmp_path / out), *extra]) == 2, out
        assert what in capsys.readouterr().err
        assert (tmp_path / out).read_bytes() == before
    assert main(["export", str(program), "--format", "stablehlo", "--out",
                 str(tmp_path / "p.mlir")]) == 0


@pytest.mark.parametrize("format,framework", [("torch", "torch"), ("jax", "jax")])
def test_a_shifted_read_exports_with_its_index_dynamic(tmp_path: Path, format, framework):
    # `V[t-2] + V[t+1]` over a dynamic t: its positions were NumPy ranges of the
    # symbolic size (TypeError / TracerBoolConversionError); now slices of the graph
    pytest.importorskip(framework)
    np.save(tmp_path / "v.npy", np.arange(1, 6, dtype=np.float32))
    program = fuse_lang.compile('V[t] = "v.npy"\nD[t] = V[t-2] + V[t+1]\nexport D\n',
                                base_dir=tmp_path)
    made = program.export(format, dynamic=["t"])
    for n in (2, 3, 9):
        v = np.arange(1, n + 1, dtype=np.float32)
        want = np.concatenate([np.zeros(2, np.float32), v])[:n] + np.append(v[1:], 0)
        np.testing.assert_allclose(made.run({"V": v})["D"], want)


def test_a_sum_of_indices_over_a_dynamic_index_is_refused_in_words(tmp_path: Path):
    # `V[t+k]` (a convolution) over a dynamic t: TypeError / TracerBoolConversionError before
    pytest.importorskip("jax")
    np.save(tmp_path / "v.npy", np.arange(5, dtype=np.float32))
    np.save(tmp_path / "k.npy", np.ones(3, np.float32))
    program = fuse_lang.compile('V[t] = "v.npy"\nK[k] = "k.npy"\nC[t] = V[t+k] K[k]\n'
                                'export C\n', base_dir=tmp_path)
    with pytest.raises(fuse_lang.FuseError, match=r"the index `t\+k` takes positions that "
                                                  r"depend on the size of `t`"):
        program.export("jax", dynamic=["t"])


@pytest.mark.parametrize("zero", [300, 2.5, [0, 0, -129]])
def test_a_zero_point_that_is_no_value_of_int8_is_refused(tmp_path: Path, capsys, zero):
    # (dequantized as (q - 300) * scale it ran, where torch.quantize_per_tensor refuses it)
    from fuse_lang.cli import main

    _quantized(tmp_path)
    (tmp_path / "p.fuse").write_text(QUANT)
    quant = {"scale": "scale.npy", "zero_point": zero, "axis": "i"}
    (tmp_path / "m.json").write_text(json.dumps({"tensors": {
        "W": {"file": "q.npy", "quantization": quant}, "X": "x.npy"}}))
    assert main(["check", "--weights", str(tmp_path / "m.json"), str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr().out
    assert "weights-dtype-mismatch" in out and "is not a value of int8" in out, out
