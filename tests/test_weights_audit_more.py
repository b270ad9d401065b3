"""A second audit of issue 14 (weights, int8, LoRA adapters, temperature
schedules, the compiled-artifact cache): broken safetensors files, stored
types the manifest does not expect, manifests read from another folder,
quantized weights against a NumPy oracle, adapters at their edges, schedules
at their ends, and a cache folder that is corrupt or in the way.  Through
`fuse_lang.compile` and the `fuse` command, on every installed backend."""
from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import fuse_lang
from fuse_lang import ExecutionConfig, FuseError
from fuse_lang.cli import main as cli_main

BACKENDS = ["numpy"] + [b for b in ("torch", "jax") if importlib.util.find_spec(b)]
ROOT = Path(__file__).resolve().parent.parent

SOURCE = 'W[i,j] = "{file}"\nY[i] = W[i,j]\nexport Y\n'
# the manifest gives W; the program's path is never read
MATVEC = 'W[i,j] = "w.npy"\nX[j] = "x.npy"\nY[i] = W[i,j] X[j]\nexport Y\n'
W = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
X = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def raw_safetensors(path: Path, header: dict, data: bytes) -> None:
    """A file in the format's layout (u64 header length, JSON, data), for
    headers the `safetensors` library would never write."""
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def broken_files(folder: Path) -> dict[str, Path]:
    save_file({"w": W}, str(folder / "good.safetensors"))
    good = (folder / "good.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", good[:8])
    files = {"truncated": good[:-10], "header cut": good[:20],
             "header longer than the file": struct.pack("<Q", length + 1000) + good[8:]}
    for name, data in files.items():
        (folder / f"{name}.safetensors").write_bytes(data)
    raw_safetensors(folder / "overlapping.safetensors",
                    {"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
                     "v": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(48))
    raw_safetensors(folder / "bf16.safetensors",
                    {"w": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]}}, bytes(24))
    return {name: folder / f"{name}.safetensors" for name in
            [*files, "overlapping", "bf16"]}


@pytest.mark.parametrize("kind,words", [
    ("truncated", ["not a readable safetensors file"]),
    ("header cut", ["not a readable safetensors file", "header"]),
    ("header longer than the file", ["not a readable safetensors file", "header"]),
    ("overlapping", ["not a readable safetensors file", "offset", "`v`"]),
    ("bf16", ["BF16", "store it as F32, F16 or I8"]),
])
def test_a_broken_safetensors_source_is_a_clear_error_in_check_run_and_compile(
        tmp_path, capsys, kind, words):
    path = broken_files(tmp_path)[kind]
    program = tmp_path / "p.fuse"
    program.write_text(SOURCE.format(file=f"{path.name}:w"))
    for command in ("check", "run"):
        assert cli_main([command, str(program)]) == 1
        captured = capsys.readouterr()
        said = captured.out + captured.err
        assert "error[unreadable-source]" in said and "Traceback" not in said, said
        assert all(w in said for w in words), said
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(SOURCE.format(file=f"{path.name}:w"), base_dir=tmp_path)
    assert "[unreadable-source]" in str(caught.value) and path.name in str(caught.value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float16", "int8", "uint8", "bool", "float64"])
def test_a_stored_type_the_program_does_not_declare_is_read_as_numpy_reads_it(
        tmp_path, backend, dtype):
    stored = np.abs(W).astype(dtype)
    save_file({"layers.0.ω.wq": stored, "a:b.c": stored}, str(tmp_path / "m.safetensors"))
    oracle = stored.astype(np.float64).sum(axis=1)
    for key in ("layers.0.ω.wq", "a:b.c"):  # unicode and dots; a colon inside the key
        program = fuse_lang.compile(SOURCE.format(file=f"m.safetensors:{key}"),
                                    base_dir=tmp_path, backend=backend)
        np.testing.assert_array_equal(np.asarray(program.run()["Y"], np.float64), oracle)
    # the same through a manifest that declares no dtype
    program = fuse_lang.compile(SOURCE.format(file="w.npy"), base_dir=tmp_path, backend=backend,
                                weights={"tensors": {"W": "m.safetensors:layers.0.ω.wq"}})
    np.testing.assert_array_equal(np.asarray(program.run()["Y"], np.float64), oracle)


@pytest.mark.parametrize("declared,stored,code,words", [
    ("float16", "float32", "weights-dtype-mismatch", ["declared float16", "holds float32"]),
    ("int8", "uint8", "weights-dtype-mismatch", ["declared int8", "holds uint8"]),
    ("bfloat16", "float32", "weights-bad-manifest", ["'bfloat16'", "float16, float32"]),
    (None, "bf16", "weights-dtype-mismatch", ["`bf16.safetensors` (for `W`)", "BF16",
                                               "store it as F32, F16 or I8"]),
])
def test_a_manifest_dtype_the_file_does_not_hold_is_refused(tmp_path, capsys, declared, stored,
                                                             code, words):
    if stored == "bf16":  # (a type NumPy has not: the library never writes it from NumPy)
        file = broken_files(tmp_path)["bf16"].name
    else:
        file = "m.safetensors"
        save_file({"w": W.astype(stored)}, str(tmp_path / file))
    entry = {"file": file, "key": "w", **({"dtype": declared} if declared else {})}
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"tensors": {"W": entry}}))
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, base_dir=tmp_path, weights=manifest)
    assert f"[{code}]" in str(caught.value) and all(w in str(caught.value) for w in words)
    (tmp_path / "p.fuse").write_text(MATVEC)
    assert cli_main(["check", str(tmp_path / "p.fuse"), "--weights", str(manifest)]) == 1
    out = capsys.readouterr().out
    assert f"error[{code}]" in out and "p.fuse:1:1" in out, out


def test_a_manifest_in_another_folder_reads_its_files_from_its_own_folder(
        tmp_path, capsys, monkeypatch):
    (tmp_path / "model").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "prog").mkdir()
    (tmp_path / "elsewhere").mkdir()
    save_file({"w": W}, str(tmp_path / "shared" / "w.safetensors"))
    np.save(tmp_path / "prog" / "x.npy", X)
    (tmp_path / "prog" / "p.fuse").write_text(MATVEC)
    manifest = tmp_path / "model" / "weights.json"
    manifest.write_text(json.dumps({"tensors": {"W": "../shared/w.safetensors:w"}}))
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the program's nor the manifest's
    assert cli_main(["run", "../prog/p.fuse", "--weights", "../model/weights.json",
                     "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(np.asarray(out["outputs"]["Y"]["values"]), W @ X)
    # a mapping's paths start at base_dir, which is the program's folder here
    program = fuse_lang.compile(MATVEC, base_dir=tmp_path / "prog",
                                weights={"tensors": {"W": "../shared/w.safetensors:w"}})
    np.testing.assert_allclose(program.run()["Y"], W @ X)


@pytest.mark.parametrize("data,words", [
    ({"tensors": {"W": "m.safetensors:w"}, "weights": {}}, ["unknown field 'weights'"]),
    ({"tensors": {"W": {"file": "m.safetensors", "key": "w", "scale": 2}}},
     ["`W`", "unknown field 'scale'"]),
    ({"tensors": {"W": {"key": "w"}}}, ["`W`", "needs either \"file\" or \"shards\""]),
    ({"tensors": [["W", "m.safetensors:w"]]}, ["\"tensors\" maps tensor names"]),
])
def test_a_manifest_with_extra_or_missing_keys_is_refused_in_words(tmp_path, capsys, data, words):
    save_file({"w": W}, str(tmp_path / "m.safetensors"))
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(data))
    (tmp_path / "p.fuse").write_text(MATVEC)
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "out.npy").write_bytes(b"kept")
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--weights", str(manifest),
                     "--out", str(tmp_path / "out.npy")]) == 1
    err = capsys.readouterr().err
    assert "error[weights-bad-manifest]" in err and "Traceback" not in err, err
    assert all(w in err for w in words), err
    assert (tmp_path / "out.npy").read_bytes() == b"kept"  # nothing lost


def test_a_weight_whose_shape_the_program_contradicts_names_both_shapes_and_the_tensor(tmp_path):
    save_file({"w": np.ones((3, 5), np.float32), "v": np.ones((2, 3, 5), np.float32)},
              str(tmp_path / "m.safetensors"))
    text = "axis j = 4\n" + SOURCE.format(file="w.npy")
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(text, weights={"tensors": {"W": "m.safetensors:w"}}, base_dir=tmp_path)
    message = str(caught.value)
    assert "[weights-shape-mismatch]" in message and "`W` shape (3, 5)" in message, message
    assert "extent 4" in message and "extent 5" in message, message
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(text, weights={"tensors": {"W": "m.safetensors:v"}}, base_dir=tmp_path)
    assert "`W` has 3 axes (2, 3, 5) but the program writes `W` with 2" in str(caught.value)


# ------------------------------------------------------------------ int8


Q = np.array([[-128, 0, 127, 5], [1, 2, 3, 4], [0, 0, 0, -1]], np.int8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantized_weights_equal_the_numpy_oracle(tmp_path, backend):
    row_scale = np.array([0.5, 0.25, 2.0], np.float32)
    row_zero = np.array([1, 0, -1], np.float32)
    col_scale = np.array([0.125, 1.0, 0.5, 4.0], np.float32)
    save_file({"q": Q, "u": Q.view(np.uint8), "cols": col_scale}, str(tmp_path / "m.safetensors"))
    cases = [  # (quantization, stored, the dequantized weight by NumPy)
        ({"scale": row_scale.tolist(), "zero_point": row_zero.tolist(), "axis": "i"}, "q",
         (Q.astype(np.float32) - row_zero[:, None]) * row_scale[:, None]),
        ({"scale": "m.safetensors:cols", "zero_point": -3, "axis": 1}, "q",
         (Q.astype(np.float32) + 3) * col_scale[None, :]),
        ({"scale": 0.5, "zero_point": 128}, "u",
         (Q.view(np.uint8).astype(np.float32) - 128) * np.float32(0.5)),
    ]
    for quantization, key, dequantized in cases:
        weights = {"tensors": {"W": {"file": "m.safetensors", "key": key,
                                     "quantization": quantization}}}
        program = fuse_lang.compile(MATVEC, weights=weights, base_dir=tmp_path, backend=backend)
        out = program.run({"X": X})["Y"]
        np.testing.assert_allclose(np.asarray(out), dequantized @ X, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantized_shards_are_joined_then_dequantized_per_row(tmp_path, backend):
    save_file({"top": Q[:2], "bottom": Q[2:], "bottom_u8": Q[2:].view(np.uint8)},
              str(tmp_path / "s.safetensors"))
    scale, zero = np.array([1.0, 2.0, 3.0], np.float32), np.array([0, 1, -1], np.float32)
    quantization = {"scale": scale.tolist(), "zero_point": zero.tolist(), "axis": "i"}
    weights = {"tensors": {"W": {"shards": ["s.safetensors:top", "s.safetensors:bottom"],
                                 "axis": "i", "quantization": quantization}}}
    program = fuse_lang.compile(MATVEC, weights=weights, base_dir=tmp_path, backend=backend)
    dequantized = (Q.astype(np.float32) - zero[:, None]) * scale[:, None]
    np.testing.assert_allclose(np.asarray(program.run({"X": X})["Y"]), dequantized @ X,
                               rtol=1e-6, atol=1e-5)
    # shards of two stored types have no one zero point's range: refused, not promoted
    weights["tensors"]["W"]["shards"][1] = "s.safetensors:bottom_u8"
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, weights=weights, base_dir=tmp_path, backend=backend)
    assert "[weights-dtype-mismatch]" in str(caught.value)
    assert "its shards hold int8 and uint8" in str(caught.value)


@pytest.mark.parametrize("quantization,words", [
    ({"scale": [0.5, 0.25], "axis": "i"}, "weights-shape-mismatch",),
    ({"scale": [1, 1, 1], "zero_point": [0, 0], "axis": "i"}, "weights-shape-mismatch"),
    ({"scale": [1, 1, 1, 1], "axis": "i"}, "weights-shape-mismatch"),
    ({"scale": [1, 1, 1]}, "weights-bad-manifest"),
])
def test_a_per_channel_scale_of_the_wrong_length_is_refused(tmp_path, capsys, quantization, words):
    save_file({"q": Q}, str(tmp_path / "m.safetensors"))
    weights = {"tensors": {"W": {"file": "m.safetensors", "key": "q",
                                 "quantization": quantization}}}
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, weights=weights, base_dir=tmp_path)
    assert f"[{words}]" in str(caught.value), str(caught.value)
    if words == "weights-shape-mismatch":
        count = len(quantization.get("zero_point", quantization["scale"]))
        assert f"has {count} values; axis 0 has 3" in str(caught.value)


@pytest.mark.parametrize("quantization,words", [
    ({"scale": float("nan")}, "the scale of `W` is nan"),
    ({"scale": [1.0, float("inf"), 1.0], "axis": 0}, "the scale of `W` is inf"),
    ({"scale": 0}, "the scale of `W` is 0.0"),
    ({"scale": -0.5}, "the scale of `W` is -0.5"),
    ({"scale": 1e39}, "the scale of `W` is 1e+39"),
    ({"scale": 1, "zero_point": float("nan")}, "the zero point of `W` is nan"),
    ({"scale": 1, "zero_point": float("-inf")}, "the zero point of `W` is -inf"),
    ({"scale": "m.safetensors:bad", "axis": 0}, "`m.safetensors` (the scale of `W`) holds nan"),
    ({"scale": "m.safetensors:low", "axis": 0}, "`m.safetensors` (the scale of `W`) holds -1.0"),
])
def test_a_scale_or_zero_point_that_is_not_a_finite_step_is_refused(tmp_path, capsys,
                                                                   quantization, words):
    save_file({"q": Q, "bad": np.array([1, np.nan, 1], np.float32),
               "low": np.array([1, -1, 1], np.float32)}, str(tmp_path / "m.safetensors"))
    manifest = tmp_path / "m.json"  # JSON as Python writes it: NaN and Infinity included
    manifest.write_text(json.dumps({"tensors": {"W": {"file": "m.safetensors", "key": "q",
                                                      "quantization": quantization}}}))
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, weights=manifest, base_dir=tmp_path)
    assert "[weights-bad-manifest]" in str(caught.value) and words in str(caught.value)
    (tmp_path / "p.fuse").write_text(MATVEC)
    np.save(tmp_path / "x.npy", X)
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--weights", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "error[weights-bad-manifest]" in err and words in err and "Traceback" not in err, err
    assert "Warning" not in err, err


# ------------------------------------------------------------------ adapters


@pytest.fixture
def lora(tmp_path):
    rng = np.random.default_rng(3)
    pairs = {"A0": np.zeros((0, 4), np.float32), "B0": np.zeros((3, 0), np.float32),
             "A9": rng.normal(size=(9, 4)).astype(np.float32),  # rank 9 > both dims
             "B9": rng.normal(size=(3, 9)).astype(np.float32),
             "A1": rng.normal(size=(1, 4)).astype(np.float32),
             "B1": rng.normal(size=(3, 1)).astype(np.float32)}
    save_file({"w": W, **pairs}, str(tmp_path / "m.safetensors"))

    def pair(rank):
        return {"A": f"m.safetensors:A{rank}", "B": f"m.safetensors:B{rank}"}

    manifest = {"tensors": {"W": "m.safetensors:w"},
                "adapters": {"zero": {"scale": 1.0, "targets": {"W": pair(0)}},
                             "wide": {"scale": 0.5, "targets": {"W": pair(9)}},
                             "one": {"scale": 2.0, "targets": {"W": pair(1)}}}}
    return tmp_path, manifest, pairs


@pytest.mark.parametrize("backend", BACKENDS)
def test_adapters_of_rank_0_of_rank_above_the_dims_and_two_on_one_weight(lora, backend):
    folder, manifest, p = lora
    program = fuse_lang.compile(MATVEC, weights=manifest, base_dir=folder, backend=backend)
    expected = {
        ("zero",): W,
        ("wide",): W + 0.5 * p["B9"] @ p["A9"],
        ("wide", "one"): W + 0.5 * p["B9"] @ p["A9"] + 2.0 * p["B1"] @ p["A1"],
    }
    for chosen, weight in expected.items():
        program.set_adapters(list(chosen))
        np.testing.assert_allclose(np.asarray(program.run({"X": X})["Y"]), weight @ X,
                                   rtol=1e-5, atol=1e-5)
    program.set_adapters({"wide": -1.0, "one": 0.25})  # scales of one's own
    weight = W - p["B9"] @ p["A9"] + 0.25 * p["B1"] @ p["A1"]
    np.testing.assert_allclose(np.asarray(program.run({"X": X})["Y"]), weight @ X,
                               rtol=1e-5, atol=1e-5)


def test_an_adapter_for_a_weight_the_manifest_does_not_give_is_refused(lora, capsys):
    folder, manifest, _ = lora
    manifest["adapters"]["one"]["targets"] = {"V": manifest["adapters"]["one"]["targets"]["W"]}
    path = folder / "m.json"
    path.write_text(json.dumps(manifest))
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, weights=path, base_dir=folder)
    assert "[weights-unknown-tensor]" in str(caught.value)
    assert "adapter 'one' targets `V`, which the manifest does not give" in str(caught.value)
    (folder / "p.fuse").write_text(MATVEC)
    assert cli_main(["check", str(folder / "p.fuse"), "--weights", str(path)]) == 1
    assert "error[weights-unknown-tensor]" in capsys.readouterr().out


def test_a_non_finite_adapter_scale_is_refused_in_the_manifest_and_in_set_adapters(lora):
    folder, manifest, _ = lora
    program = fuse_lang.compile(MATVEC, weights=manifest, base_dir=folder)
    program.set_adapters(["one"])
    before = np.asarray(program.run({"X": X})["Y"])
    for bad in ({"one": float("nan")}, {"one": float("inf")}, {"one": True}):
        with pytest.raises(FuseError) as caught:
            program.set_adapters(bad)
        assert "[weights-bad-manifest]" in str(caught.value)
        assert "scale as a finite number" in str(caught.value)
    # the refused choice changed nothing: the adapter chosen before stays
    np.testing.assert_array_equal(np.asarray(program.run({"X": X})["Y"]), before)
    manifest["adapters"]["one"]["scale"] = float("inf")
    with pytest.raises(FuseError) as caught:
        fuse_lang.compile(MATVEC, weights=manifest, base_dir=folder)
    assert "the scale of adapter 'one' is a finite number, not inf" in str(caught.value)


# ------------------------------------------------------------------ schedules


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("schedule,values", [
    ("linear(1.0, 0.0, steps=2, per=run)", [1.0, 0.5, 0.0, 0.0]),  # ends at 0: a step
    ("linear(2.0, -2.0, steps=1, per=run)", [2.0, -2.0, -2.0, -2.0]),
    ("cosine(3.0, 3.0, steps=1, per=run)", [3.0, 3.0, 3.0, 3.0]),
    ("exponential(4.0, 1.0, steps=2, per=run)", [4.0, 2.0, 1.0, 1.0]),
])
def test_a_schedule_at_its_ends_on_every_backend(backend, schedule, values):
    z = np.array([-1.0, 0.0, 2.0], np.float32)
    text = (f"T = {schedule}\nX[i] = const([-1.0, 0.0, 2.0])\nY[i] = sig(X[i], T=T)\n"
            f"export T, Y")
    program = fuse_lang.compile(text, backend=backend)
    for temperature in values:
        out = program.run()
        assert float(out["T"]) == pytest.approx(temperature, abs=1e-6)
        if temperature == 0:  # the limit: a step (0 at 0, as sig(x, 0) is)
            expected = (z > 0).astype(np.float32)
        else:
            expected = 1 / (1 + np.exp(-z / np.float32(temperature)))
        np.testing.assert_allclose(np.asarray(out["Y"]), expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ cache

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
CACHED = "X[i] = const([1.0, 2.0, 3.0])\nW[k,i] = const([[1.0, 0.5, 0.0], [0.0, 1.0, 2.0]])\n" \
         "Y[k] = W[k,i] X[i]\nexport Y\n"


def test_fuse_cache_info_reads_past_entries_that_are_not_objects(tmp_path, capsys):
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / "index.json").write_text(json.dumps({"version": 1, "entries": {
        "k": 5, "l": ["x"], "m": {"backend": "jax", "uses": "x"}, "n": {"backend": "torch"}}}))
    assert cli_main(["cache", "info", "--cache-dir", str(cache), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["entries"] == 2 and data["exists"] is True
    assert {name: b["entries"] for name, b in data["backends"].items()} == {"jax": 1, "torch": 1}
    assert set(data) == {"cache_dir", "exists", "entries", "bytes", "backends"}
    assert all(set(b) == {"entries", "files", "bytes"} for b in data["backends"].values())
    assert cli_main(["cache", "info", "--cache-dir", str(cache)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith(f"cache {cache}: 2 entries"), text
    assert "  jax: 1 entries, 0 files" in text and "  torch: 1 entries, 0 files" in text
    assert cli_main(["cache", "clear", "--cache-dir", str(cache), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == data  # what was there, in info's shape
    assert list(cache.iterdir()) == []


def test_fuse_cache_clear_names_what_it_could_not_remove(tmp_path, capsys):
    cache = tmp_path / "c"
    (cache / "index.json").mkdir(parents=True)  # a folder where the index belongs
    (cache / "index.json" / "mine.txt").write_text("mine")
    assert cli_main(["cache", "clear", "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert f"cannot be cleared: {cache / 'index.json'}: " in err and "Traceback" not in err, err
    assert (cache / "index.json" / "mine.txt").read_text() == "mine"


@needs_jax
def test_a_cache_hit_gives_the_same_outputs_and_a_corrupt_entry_is_rewritten(tmp_path):
    cache = tmp_path / "c"
    config = ExecutionConfig(cache_dir=str(cache))
    first = fuse_lang.compile(CACHED, backend="jax", config=config)
    cold = np.asarray(first.run()["Y"])
    (key,) = json.loads((cache / "index.json").read_text())["entries"]
    index = {"version": 1, "entries": {key: {"backend": "jax", "uses": "many"}}}
    (cache / "index.json").write_text(json.dumps(index))  # an entry edited by hand
    second = fuse_lang.compile(CACHED, backend="jax", config=config)
    warm = np.asarray(second.run()["Y"])
    np.testing.assert_array_equal(warm, cold)
    np.testing.assert_allclose(cold, [2.0, 8.0])
    assert list(second.cache_entries.values()) == [True]
    entry = json.loads((cache / "index.json").read_text())["entries"][key]
    assert entry["uses"] == 1  # counted again from the entry's unreadable count


@needs_jax
@pytest.mark.parametrize("backend", ["jax", "jax-export"])
def test_a_file_where_the_frameworks_folder_belongs_is_refused_in_words(tmp_path, capsys,
                                                                         backend):
    # (eager torch leaves the folder alone; compiled torch takes long)
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / backend).write_text("mine")
    (tmp_path / "p.fuse").write_text(CACHED)
    assert cli_main(["run", str(tmp_path / "p.fuse"), "--backend", "jax",
                     "--cache-dir", str(cache)]) == 1
    err = capsys.readouterr().err
    assert f"{cache / backend} is a file, not a folder" in err, err
    assert "Traceback" not in err and "Warning" not in err, err
    assert (cache / backend).read_text() == "mine"  # nothing lost


@needs_jax
def test_two_processes_sharing_a_cache_give_the_same_outputs(tmp_path):
    (tmp_path / "p.fuse").write_text(CACHED)
    command = [sys.executable, "-m", "fuse_lang.cli", "run", str(tmp_path / "p.fuse"),
               "--backend", "jax", "--cache-dir", str(tmp_path / "c"), "--format", "json"]
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=tmp_path, env=env) for _ in range(2)]
    outputs = [process.communicate(timeout=300) for process in running]
    assert [process.returncode for process in running] == [0, 0], outputs
    values = [json.loads(out)["outputs"]["Y"]["values"] for out, _ in outputs]
    assert values == [[2.0, 8.0], [2.0, 8.0]]
    index = json.loads((tmp_path / "c" / "index.json").read_text())
    (entry,) = index["entries"].values()  # one key, whoever wrote last
    assert entry["backend"] == "jax" and entry["uses"] in (1, 2)
