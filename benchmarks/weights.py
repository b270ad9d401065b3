"""Weights manifests (issue 14, docs/weights.md), each figure against its
baseline in the same run, on a transformer-like pair of matmuls
(Z = W1 X, Y = W2 relu(Z)) whose weights come from a manifest:

- int8 against float weights (NumPy): the error of the outputs (relative to
  their size, and Z's error against the bound its scales give), the time of a
  run, and the time to compile with the manifest (loading, sha256, dequantizing).
- LoRA: compilations when switching adapters (goal: 0 new ones) on each
  compiling backend installed, and the time of a run after a switch against a
  run without one.

    python benchmarks/weights.py [--batch 64 --dim 512 --hidden 2048]
    python benchmarks/weights.py --small   # what the smoke test runs
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_times  # noqa: E402

from fuse_lang import compile  # noqa: E402

PROGRAM = ('W1[h,d] = "w1.npy"\nW2[o,h] = "w2.npy"\nX[b,d] = "x.npy"\n'
           'Z[b,h] = W1[h,d] X[b,d]\nY[b,o] = W2[o,h] relu(Z[b,h])\nexport Z, Y\n')


def write_model(where: Path, batch: int, dim: int, hidden: int, rank: int) -> dict:
    """Float and per-row int8 weights, two LoRA pairs, and their manifests."""
    rng = np.random.default_rng(0)
    w1 = rng.normal(0, dim ** -0.5, size=(hidden, dim)).astype(np.float32)
    w2 = rng.normal(0, hidden ** -0.5, size=(dim, hidden)).astype(np.float32)
    arrays, scales = {"w1": w1, "w2": w2}, {}
    for name, w in (("w1", w1), ("w2", w2)):
        scales[name] = (np.abs(w).max(axis=1) / 127).astype(np.float32)
        arrays[name + "q"] = np.round(w / scales[name][:, None]).astype(np.int8)
    for k in (1, 2):
        arrays[f"a{k}"] = rng.normal(0, 0.01, size=(rank, dim)).astype(np.float32)
        arrays[f"b{k}"] = rng.normal(0, 0.01, size=(hidden, rank)).astype(np.float32)
    save_file(arrays, str(where / "model.safetensors"))
    np.save(where / "x.npy", rng.normal(size=(batch, dim)).astype(np.float32))
    sha = hashlib.sha256((where / "model.safetensors").read_bytes()).hexdigest()

    def entry(key: str, quant: str | None) -> dict:
        out = {"file": "model.safetensors", "key": key, "sha256": sha}
        if quant:
            out["quantization"] = {"scale": scales[quant].tolist(), "axis": 0}
        return out

    adapters = {f"style{k}": {"scale": 1.0, "targets": {"W1": {
        "A": f"model.safetensors:a{k}", "B": f"model.safetensors:b{k}"}}} for k in (1, 2)}
    return {"float": {"tensors": {"W1": entry("w1", None), "W2": entry("w2", None)},
                      "adapters": adapters},
            "int8": {"tensors": {"W1": entry("w1q", "w1"), "W2": entry("w2q", "w2")}},
            "scale1": scales["w1"], "x": np.load(where / "x.npy")}


def int8_figures(where: Path, model: dict, repeats: int) -> None:
    programs = {kind: compile(PROGRAM, base_dir=where, weights=model[kind])
                for kind in ("float", "int8")}
    out = {kind: p.run() for kind, p in programs.items()}
    for name in ("Z", "Y"):
        error = np.abs(out["int8"][name] - out["float"][name]).max()
        print(f"int8 vs float, numpy: {name} error max|int8 - float| / max|float| "
              f"{error / np.abs(out['float'][name]).max():.5f}")
    bound = (model["scale1"][None, :] / 2 * np.abs(model["x"]).sum(axis=1)[:, None])
    within = bool(np.all(np.abs(out["int8"]["Z"] - out["float"]["Z"]) <= bound + 1e-4))
    print(f"int8 vs float, numpy: Z within the bound from its scales: {within}")
    assert within
    runs = median_times({k: p.run for k, p in programs.items()}, repeats)
    print(f"int8 vs float, numpy: run  int8 {runs['int8'] * 1e3:.2f} ms  float "
          f"{runs['float'] * 1e3:.2f} ms  ratio {runs['int8'] / runs['float']:.2f} "
          f"(int8 / float)")
    loads = median_times({k: (lambda k=k: compile(PROGRAM, base_dir=where, weights=model[k]))
                          for k in ("float", "int8")}, max(1, repeats // 2), warmup=1)
    print(f"int8 vs float, numpy: compile with the manifest (load, sha256, dequantize)  int8 "
          f"{loads['int8'] * 1e3:.1f} ms  float {loads['float'] * 1e3:.1f} ms  ratio "
          f"{loads['int8'] / loads['float']:.2f} (int8 / float)")


def lora_figures(where: Path, model: dict, repeats: int) -> None:
    pairs = [("numpy", "numpy", None)]
    if importlib.util.find_spec("jax"):
        pairs.append(("jax.jit", "jax", None))
    if importlib.util.find_spec("torch"):
        pairs.append(("torch.compile", "torch", True))
    for label, backend, compiled in pairs:
        program = compile(PROGRAM, backend=backend, base_dir=where, weights=model["float"],
                          compiled=compiled)
        program.run()
        before = program.compilations
        choices = ["style1", "style2", None, "style1"]
        for choice in choices:
            program.set_adapters([choice] if choice else None)
            program.run()
        print(f"lora, {label}: compilations {before} -> {program.compilations} after "
              f"{len(choices)} adapter switches")
        state = {"k": 0}

        def switch_and_run(state: dict = state, program: Any = program) -> None:
            state["k"] += 1
            program.set_adapters(["style1" if state["k"] % 2 else "style2"])
            program.run()

        times = median_times({"switch": switch_and_run, "plain": program.run}, repeats)
        print(f"lora, {label}: switch + run {times['switch'] * 1e3:.2f} ms  run "
              f"{times['plain'] * 1e3:.2f} ms  ratio {times['switch'] / times['plain']:.2f} "
              f"(switch + run / run)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--small", action="store_true", help="tiny sizes (the smoke test)")
    args = parser.parse_args()
    if args.small:
        args.batch, args.dim, args.hidden, args.rank, args.repeats = 2, 16, 32, 2, 2
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        model = write_model(where, args.batch, args.dim, args.hidden, args.rank)
        print(f"batch {args.batch}, dim {args.dim}, hidden {args.hidden}, LoRA rank {args.rank}")
        int8_figures(where, model, args.repeats)
        lora_figures(where, model, args.repeats)
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
