"""Weight stores: safetensors sources, weights manifests, int8 weights and LoRA
adapters (docs/weights.md), through `fuse_lang.compile`, `fuse_lang.analyze`
and the `fuse` command, on every installed backend."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import fuse_lang
from fuse_lang import FuseError
from fuse_lang.cli import main as cli_main

BACKENDS = ["numpy"] + [b for b in ("torch", "jax") if importlib.util.find_spec(b)]

MATVEC = ('W[i,j] = "w.npy"\n'  # the manifest replaces this file, which does not exist
          'X[j] = "x.npy"\n'
          'Y[i] = W[i,j] X[j]\n'
          'export Y\n')


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def model(tmp_path):
    """A 6 x 8 float weight, its int8 form per row, a LoRA pair, an input."""
    rng = np.random.default_rng(7)
    w = rng.normal(size=(6, 8)).astype(np.float32)
    scale = (np.abs(w).max(axis=1) / 127).astype(np.float32)
    q = np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8)
    a = rng.normal(size=(2, 8)).astype(np.float32)
    b = rng.normal(size=(6, 2)).astype(np.float32)
    a2 = rng.normal(size=(3, 8)).astype(np.float32)
    b2 = rng.normal(size=(6, 3)).astype(np.float32)
    save_file({"layers.0.wq": w, "layers.0.q8": q}, str(tmp_path / "model.safetensors"))
    save_file({"A": a, "B": b, "A2": a2, "B2": b2}, str(tmp_path / "lora.safetensors"))
    x = rng.normal(size=8).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "prog.fuse").write_text(MATVEC)
    return dict(dir=tmp_path, w=w, q=q, scale=scale, a=a, b=b, a2=a2, b2=b2, x=x)


def write_manifest(where: Path, data: dict, name: str = "weights.json") -> Path:
    path = where / name
    path.write_text(json.dumps(data))
    return path


def float_manifest(model) -> dict:
    return {"tensors": {"W": {"file": "model.safetensors", "key": "layers.0.wq",
                              "dtype": "float32", "shape": [6, 8],
                              "sha256": sha256(model["dir"] / "model.safetensors")}}}


# ------------------------------------------------------------ safetensors sources


@pytest.mark.parametrize("backend", BACKENDS)
def test_safetensors_source_with_key(model, backend):
    text = 'W[i,j] = "model.safetensors:layers.0.wq"\nX[j] = "x.npy"\nY[i] = W[i,j] X[j]\n' \
           'export Y\n'
    out = fuse_lang.compile(text, backend=backend, base_dir=model["dir"]).run()
    np.testing.assert_allclose(out["Y"], model["w"] @ model["x"], rtol=1e-5, atol=1e-5)


def test_a_safetensors_tensor_over_a_mesh_is_memory_mapped_at_its_offset(model):
    """Over a mesh each process reads only its slices of a source: a safetensors
    tensor is mapped at its offset, as an .npy file is (the group test,
    tests/test_distributed.py, runs one across processes)."""
    from fuse_lang.io.source_data import load_dense

    for key, want in (("layers.0.wq", model["w"]), ("layers.0.q8", model["q"])):
        mapped = load_dense(model["dir"] / "model.safetensors", "W", np.float64, key,
                            mapped=True)
        assert isinstance(mapped, np.memmap) and mapped.dtype == want.dtype
        assert np.array_equal(mapped[2:4], want[2:4])
    pytest.importorskip("jax")
    text = 'W[i,j] = "model.safetensors:layers.0.wq"\nX[j] = "x.npy"\nY[i] = W[i,j] X[j]\n' \
           'export Y\n'
    out = fuse_lang.compile(text, backend="jax", base_dir=model["dir"], shard={"i": "data"},
                            mesh={"data": 1}).run()
    np.testing.assert_allclose(out["Y"], model["w"] @ model["x"], rtol=1e-5, atol=1e-5)


def test_safetensors_source_shape_from_header_and_unknown_key(model):
    ok = fuse_lang.analyze('W[i,j] = "model.safetensors:layers.0.wq"\nexport W',
                           base_dir=model["dir"])
    assert not ok.diagnostics and ok.tensors["W"].shape == (6, 8)
    bad = fuse_lang.analyze('W[i,j] = "model.safetensors:layers.9.wq"\nexport W',
                            base_dir=model["dir"])
    [d] = bad.diagnostics
    assert d.code == "unreadable-source" and "layers.9.wq" in d.message \
        and "layers.0.wq" in d.message  # the keys it holds are listed


def test_fuse_check_reads_the_header_only(tmp_path, capsys):
    """A 4 GiB tensor (a sparse file: no disk, no memory) is checked at once."""
    header = json.dumps({"big": {"dtype": "F32", "shape": [32768, 32768],
                                 "data_offsets": [0, 4 * 32768 * 32768]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "big.safetensors"
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(header)) + header)
        fp.truncate(8 + len(header) + 4 * 32768 * 32768)
    (tmp_path / "p.fuse").write_text('W[i,j] = "big.safetensors:big"\nexport W\n')
    tracemalloc.start()
    try:
        assert cli_main(["check", str(tmp_path / "p.fuse")]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 2**20  # loading the 4 GiB of data would show here (numpy traces it)
    assert "no problems" in capsys.readouterr().out


# ------------------------------------------------------------ manifests


@pytest.mark.parametrize("backend", BACKENDS)
def test_manifest_overrides_the_programs_file(model, backend):
    path = write_manifest(model["dir"], float_manifest(model))
    program = fuse_lang.compile(MATVEC, backend=backend, base_dir=model["dir"], weights=path)
    np.testing.assert_allclose(program.run()["Y"], model["w"] @ model["x"], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_manifest_shards_joined_along_a_named_axis(model, backend):
    w = model["w"]
    np.save(model["dir"] / "w0.npy", w[:, :5])
    save_file({"rest": np.ascontiguousarray(w[:, 5:])}, str(model["dir"] / "w1.safetensors"))
    data = {"tensors": {"W": {"shards": [{"file": "w0.npy"}, "w1.safetensors:rest"],
                              "axis": "j", "shape": [6, 8]}}}
    program = fuse_lang.compile(MATVEC, backend=backend, base_dir=model["dir"], weights=data)
    np.testing.assert_allclose(program.run()["Y"], w @ model["x"], rtol=1e-5, atol=1e-5)


def test_in_a_group_a_sharded_tensor_opens_only_the_shards_its_slices_cross(model):
    """compile(distributed=True) opens the manifest with `slices`: a tensor of
    several shards is read where the placement slices it (run/weight_shards.py;
    across real processes: tests/test_distributed.py)."""
    from fuse_lang.run.weight_shards import JoinedShards
    from fuse_lang.run.weights import open_weights

    w = model["w"]
    np.save(model["dir"] / "w0.npy", w[:, :5])
    save_file({"rest": np.ascontiguousarray(w[:, 5:])}, str(model["dir"] / "w1.safetensors"))
    data = {"tensors": {"W": {"shards": [{"file": "w0.npy", "sha256": sha256(
        model["dir"] / "w0.npy")}, "w1.safetensors:rest"], "axis": "j", "shape": [6, 8]}}}
    joined = open_weights(data, MATVEC, model["dir"], slices=True).host["W"]
    assert isinstance(joined, JoinedShards) and joined.opened == []  # nothing read yet
    np.testing.assert_array_equal(joined[1:3, 6:8], w[1:3, 6:8])
    assert joined.opened == [1]  # only the second file
    np.testing.assert_array_equal(joined[:, 3:7], w[:, 3:7])  # across both
    assert joined.opened == [1, 0]
    np.testing.assert_array_equal(np.asarray(joined), w)
    assert isinstance(open_weights(data, MATVEC, model["dir"]).host["W"], np.ndarray)


def test_runtime_inputs_still_win_over_the_manifest(model):
    path = write_manifest(model["dir"], float_manifest(model))
    program = fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=path)
    ones = np.ones((6, 8), np.float32)
    np.testing.assert_allclose(program.run({"W": ones})["Y"], ones @ model["x"], rtol=1e-5)


def bad_cases(model):
    good = float_manifest(model)["tensors"]["W"]
    return [
        ("weights-bad-manifest", "{not json", ["not JSON"]),
        ("weights-bad-manifest", {"tensors": {"W": {"path": "w.npy"}}}, ["unknown field"]),
        ("weights-missing-file", {"tensors": {"W": {"file": "gone.safetensors"}}},
         ["gone.safetensors", "does not exist"]),
        ("weights-unknown-key", {"tensors": {"W": {**good, "key": "layers.1.wq"}}},
         ["layers.1.wq", "layers.0.wq"]),
        ("weights-unknown-tensor", {"tensors": {"Q": good}}, ["`Q`", "not a source"]),
        ("weights-shape-mismatch", {"tensors": {"W": {**good, "shape": [8, 6]}}},
         ["(8, 6)", "(6, 8)"]),
        ("weights-dtype-mismatch", {"tensors": {"W": {**good, "dtype": "float16"}}},
         ["float16", "float32"]),
        ("weights-checksum", {"tensors": {"W": {**good, "sha256": "0" * 64}}},
         ["model.safetensors", "sha256"]),
    ]


@pytest.mark.parametrize("case", range(8))
def test_bad_manifests_are_coded_errors(model, case, capsys):
    code, data, words = bad_cases(model)[case]
    path = model["dir"] / "weights.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=path)
    message = str(caught.value)
    assert f"[{code}]" in message and all(w in message for w in words), message
    # the command says the same, as a diagnostic, never a traceback
    prog = str(model["dir"] / "prog.fuse")
    assert cli_main(["run", prog, "--weights", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"error[{code}]" in err and "Traceback" not in err, err
    if code != "weights-checksum":  # `fuse check` reads headers only: no hashing
        assert cli_main(["check", prog, "--weights", str(path)]) == 1
        out = capsys.readouterr().out
        assert f"error[{code}]" in out, out


def test_shape_that_conflicts_with_the_program(model):
    text = "axis i = 5\n" + MATVEC
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(text, base_dir=model["dir"], weights=float_manifest(model))
    assert "[weights-shape-mismatch]" in str(caught.value)
    assert "axis i = 5" in str(caught.value)


def test_fuse_check_with_a_good_manifest(model, capsys):
    path = write_manifest(model["dir"], float_manifest(model))
    assert cli_main(["check", str(model["dir"] / "prog.fuse"), "--weights", str(path)]) == 0
    assert "no problems" in capsys.readouterr().out
    # without it, the program's own file is missing
    assert cli_main(["check", str(model["dir"] / "prog.fuse")]) == 1
    assert "missing-source" in capsys.readouterr().out


# ------------------------------------------------------------ int8


def int8_manifest(model, per_axis: bool = True) -> dict:
    scale = model["scale"].tolist() if per_axis else float(model["scale"].max())
    quant = {"scale": scale, "zero_point": 0}
    if per_axis:
        quant["axis"] = "i"
    return {"tensors": {"W": {"file": "model.safetensors", "key": "layers.0.q8",
                              "dtype": "int8", "shape": [6, 8], "quantization": quant}}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_int8_weights_within_the_quantization_error(model, backend):
    program = fuse_lang.compile(MATVEC, backend=backend, base_dir=model["dir"],
                                weights=int8_manifest(model))
    y = program.run()["Y"]
    exact = model["w"] @ model["x"]
    # each weight is off by at most half a step of its row's scale
    bound = model["scale"] / 2 * np.abs(model["x"]).sum() + 1e-5
    assert np.all(np.abs(y - exact) <= bound), (np.abs(y - exact), bound)
    dequantized = model["q"].astype(np.float32) * model["scale"][:, None]
    np.testing.assert_allclose(y, dequantized @ model["x"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_int8_with_zero_point_per_tensor(model, backend):
    w = model["w"]
    lo, hi = float(w.min()), float(w.max())
    scale = (hi - lo) / 255
    zero = round(-lo / scale)
    q = np.clip(np.round(w / scale) + zero, 0, 255).astype(np.uint8)
    np.save(model["dir"] / "q.npy", q)
    data = {"tensors": {"W": {"file": "q.npy", "dtype": "uint8",
                              "quantization": {"scale": scale, "zero_point": zero}}}}
    y = fuse_lang.compile(MATVEC, backend=backend, base_dir=model["dir"], weights=data).run()["Y"]
    bound = scale / 2 * np.abs(model["x"]).sum() + 1e-5
    assert np.all(np.abs(y - w @ model["x"]) <= bound)


def test_quantized_weight_must_be_stored_as_int8(model):
    data = int8_manifest(model)
    data["tensors"]["W"].update(key="layers.0.wq", dtype="float32")
    with pytest.raises(FuseError, match=r"int8 or uint8.*\[weights-dtype-mismatch\]"):
        fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=data)


def test_per_axis_scale_with_the_wrong_count(model):
    data = int8_manifest(model)
    data["tensors"]["W"]["quantization"]["scale"] = [0.1, 0.2]
    with pytest.raises(FuseError, match=r"2 values.*\[weights-shape-mismatch\]"):
        fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=data)


# ------------------------------------------------------------ LoRA adapters


def lora_manifest(model) -> dict:
    data = float_manifest(model)
    data["adapters"] = {
        "style": {"scale": 0.5, "targets": {"W": {"A": "lora.safetensors:A",
                                                  "B": "lora.safetensors:B"}}},
        "tone": {"scale": 2.0, "targets": {"W": {"A": "lora.safetensors:A2",
                                                 "B": "lora.safetensors:B2"}}}}
    return data


@pytest.mark.parametrize("backend,compiled", [(b, None) for b in BACKENDS] + (
    [("torch", True)] if "torch" in BACKENDS else []))
def test_switching_adapters_reuses_the_compiled_graph(model, backend, compiled):
    program = fuse_lang.compile(MATVEC, backend=backend, base_dir=model["dir"],
                                weights=lora_manifest(model), compiled=compiled)
    w, x = model["w"], model["x"]
    merged = {None: w, "style": w + 0.5 * model["b"] @ model["a"],
              "tone": w + 2.0 * model["b2"] @ model["a2"]}
    np.testing.assert_allclose(program.run()["Y"], w @ x, rtol=1e-4, atol=1e-4)
    first = program.compilations
    for choice in ("style", "tone", None, "style"):
        program.set_adapters([choice] if choice else None)
        np.testing.assert_allclose(program.run()["Y"], merged[choice] @ x, rtol=1e-4, atol=1e-4)
    assert program.compilations == first  # 0 new compilations when switching
    program.set_adapters({"style": 1.0, "tone": 2.0})  # two at once, a scale of one's own
    both = w + model["b"] @ model["a"] + 2.0 * model["b2"] @ model["a2"]
    np.testing.assert_allclose(program.run()["Y"], both @ x, rtol=1e-4, atol=1e-4)
    assert program.compilations == first


def test_adapters_at_compile_and_in_the_command(model, capsys):
    path = write_manifest(model["dir"], lora_manifest(model))
    merged = model["w"] + 0.5 * model["b"] @ model["a"]
    program = fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=path, adapters=["style"])
    np.testing.assert_allclose(program.run()["Y"], merged @ model["x"], rtol=1e-4, atol=1e-4)
    out_file = model["dir"] / "out.npz"
    assert cli_main(["run", str(model["dir"] / "prog.fuse"), "--weights", str(path),
                     "--adapter", "style", "--out", str(out_file)]) == 0
    np.testing.assert_allclose(np.load(out_file)["Y"], merged @ model["x"], rtol=1e-4, atol=1e-4)
    capsys.readouterr()
    assert cli_main(["run", str(model["dir"] / "prog.fuse"), "--weights", str(path),
                     "--adapter", "nope"]) == 1
    assert "no adapter named 'nope'" in capsys.readouterr().err
    # without a manifest, in the command's words (it said `adapters= needs weights=`)
    assert cli_main(["run", str(model["dir"] / "prog.fuse"), "--adapter", "style"]) == 2
    assert "--adapter NAME needs --weights MANIFEST.json" in capsys.readouterr().err


def test_adapter_shapes_are_checked(model):
    data = lora_manifest(model)
    data["adapters"]["style"]["targets"]["W"]["A"] = "lora.safetensors:A2"
    with pytest.raises(FuseError, match=r"does not fit.*\[weights-shape-mismatch\]"):
        fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=data)
    with pytest.raises(FuseError, match="no adapter named"):
        fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=lora_manifest(model),
                          adapters=["nope"])
    with pytest.raises(FuseError, match="needs weights="):
        fuse_lang.compile(MATVEC, base_dir=model["dir"], adapters=["style"])
    program = fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=lora_manifest(model))
    for wrong in (3, {"style": "high"}):
        with pytest.raises(FuseError, match=r"\[weights-bad-manifest\]"):
            program.set_adapters(wrong)
    with pytest.raises(FuseError, match=r"a manifest's path or a mapping.*\[weights-bad-manifest"):
        fuse_lang.compile(MATVEC, base_dir=model["dir"], weights=42)


# ------------------------------------------------------------ Boolean counts


@pytest.mark.parametrize("paths", [300, 70_000])
@pytest.mark.parametrize("backend,precision", [(b, "fp32") for b in BACKENDS] + [
    (b, p) for b in BACKENDS if b != "numpy" for p in ("fp16", "bf16")])
def test_boolean_joins_never_overflow(tmp_path, backend, precision, paths):
    """Over 255 and over 65,535 paths summed into one tuple: counted in a wide
    type, so no count wraps or becomes infinity (whose product with a 0 would
    be NaN and lose the tuple)."""
    np.save(tmp_path / "r.npy", np.ones((1, paths)))
    np.save(tmp_path / "s.npy", np.ones((paths, 2)))
    np.save(tmp_path / "c.npy", np.array([0.0, 1.0]))
    text = ('R(x,y) = "r.npy"\nS(y,z) = "s.npy"\nC(z) = "c.npy"\n'
            'T(x) = R(x,y) S(y,z) C(z)\nU(x,z) = R(x,y) S(y,z)\nexport T, U\n')
    out = fuse_lang.compile(text, backend=backend, precision=precision,
                            base_dir=tmp_path).run()
    np.testing.assert_array_equal(out["T"], [1.0])
    np.testing.assert_array_equal(out["U"], [[1.0, 1.0]])


def test_manifest_gives_a_param_its_values(model):
    text = "param W[i,j]\nX[j] = \"x.npy\"\nY[i] = W[i,j] X[j]\nexport Y\n"
    out = fuse_lang.compile(text, base_dir=model["dir"], weights=float_manifest(model)).run()
    np.testing.assert_allclose(out["Y"], model["w"] @ model["x"], rtol=1e-5, atol=1e-5)
