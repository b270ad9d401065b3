"""A weights manifest's data, prepared as a run's inputs (docs/weights.md).

`open_weights` reads and checks a manifest (`io.manifest`: headers only)
and loads its files, verifying each file's sha256 where the manifest gives
one.  `Weights.inputs(backend)` hands the program its weights as the
backend's own tensors: int8 tensors dequantized there, (q - zero_point) *
scale in the backend's float type (float32 by default), and the active LoRA
adapters added (W + scale * B A).  They enter the run as runtime inputs, which
override the program's source files and are arguments of a compiled graph,
never constants in it: switching adapters changes the arguments' values, not
their shapes, and compiles nothing again.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..check.imports import has_imports, resolve_imports
from ..front import ir
from ..front.syntax import parse
from ..io.manifest import (
    FileRef,
    Layout,
    Manifest,
    ManifestError,
    Quantization,
    layouts,
    program_axes,
    read_manifest,
)
from ..io.safetensors_header import SafetensorsProblem, load_tensor
from ..io.source_data import load_npy, load_npz_member
from ..io.source_files import SourceError
from ..io.sources import SAFETENSORS
from .backends.base import Backend
from .weight_shards import JoinedShards

AdapterChoice = Sequence[str] | Mapping[str, float] | None


class Weights:
    """A manifest's tensors loaded on the host (int8 ones as stored), with the
    adapters chosen now; `inputs` makes them the backend's tensors."""

    def __init__(self, manifest: Manifest, layout: dict[str, Layout],
                 slices: bool = False) -> None:
        self.manifest = manifest
        self.layout = layout
        # in a group of processes: a tensor of several shard files is read where the
        # placement slices it (run.weight_shards), each process its own shards
        self.slices = slices
        self._hashed: dict[Path, str] = {}  # each file's sha256, computed once
        self.host = {e.name: self._joined(e.name) for e in manifest.tensors}
        self.quantized = {e.name: self._scales(e.name, e.quantization)
                          for e in manifest.tensors if e.quantization is not None}
        self.adapters: dict[str, float] = {}  # active adapter -> its scale
        self._pairs: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._native: dict[tuple[Any, str], Any] = {}  # (backend, name) -> dequantized
        self._inputs: tuple[tuple, dict[str, Any]] | None = None

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Each tensor's shape as the program sees it (the analysis' input shapes)."""
        return {name: layout.shape for name, layout in self.layout.items()}

    # ------------------------------------------------------------ adapters
    def set_adapters(self, adapters: AdapterChoice) -> None:
        """The adapters to apply from now on: names (each at its manifest scale),
        {name: scale}, or None / [] for none."""
        if adapters is None:
            chosen: dict[str, float] = {}
        elif isinstance(adapters, Mapping):
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       and np.isfinite(np.float32(v)) for v in adapters.values()):
                raise ManifestError("weights-bad-manifest", "adapters as a mapping give each "
                                    "adapter's scale as a finite number")
            chosen = {str(n): float(s) for n, s in adapters.items()}
        elif isinstance(adapters, str):
            chosen = {adapters: self.manifest.adapter(adapters).scale}
        elif not isinstance(adapters, (list, tuple, set, frozenset)):
            raise ManifestError("weights-bad-manifest", f"adapters are names, {{name: scale}} "
                                f"or None, not {type(adapters).__name__}")
        else:
            chosen = {str(n): self.manifest.adapter(str(n)).scale for n in adapters}
        for name in chosen:
            for pair in self.manifest.adapter(name).pairs:  # load (and verify) once
                if (name, pair.target) not in self._pairs:
                    self._pairs[name, pair.target] = (self._load(pair.a, pair.target),
                                                      self._load(pair.b, pair.target))
        self.adapters = chosen

    # ------------------------------------------------------------ inputs
    def inputs(self, backend: Backend, names: Sequence[str] | None = None) -> dict[str, Any]:
        """The weights as `backend`'s tensors, adapters applied (`names`: only
        these tensors).  Made again only when the adapters changed."""
        state = (id(backend), tuple(sorted(self.adapters.items())))
        if self._inputs is None or self._inputs[0] != state:
            self._inputs = (state, {name: self._with_adapters(backend, name)
                                    for name in self.host})
        made = self._inputs[1]
        return {n: v for n, v in made.items() if names is None or n in names}

    def _with_adapters(self, backend: Backend, name: str) -> Any:
        weight = self._dequantized(backend, name)
        for adapter, scale in self.adapters.items():
            pair = self._pairs.get((adapter, name))
            if pair is not None:
                if isinstance(weight, JoinedShards):  # an adapter's sum needs it whole
                    weight = backend.asarray(np.asarray(weight))
                a, b = (backend.asarray(x) for x in pair)
                weight = weight + scale * (b @ a)
        return weight

    def _dequantized(self, backend: Backend, name: str) -> Any:
        key = (id(backend), name)
        host = self.host[name]
        if isinstance(host, JoinedShards) and backend.sharded:
            return host  # placed slice by slice (run/backends/jax_sharding.py)
        if key not in self._native:
            stored = backend.asarray(host)  # int8 values are exact in any float
            if name in self.quantized:
                scale, zero = self.quantized[name]
                stored = (stored - backend.asarray(zero)) * backend.asarray(scale)
            self._native[key] = stored
        return self._native[key]

    # ------------------------------------------------------------ loading
    def _joined(self, name: str) -> np.ndarray | JoinedShards:
        entry, layout = self.manifest.entry(name), self.layout[name]
        if self.slices and len(entry.shards) > 1 and entry.quantization is None \
                and layout.shard_axis is not None:
            return self._sliced(name, entry.shards, layout)
        parts = [self._load(ref, name) for ref in entry.shards]
        data = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=layout.shard_axis)
        return data if data.dtype.kind in "iu" and entry.quantization else \
            data.astype(np.float32 if data.dtype.itemsize <= 4 else np.float64)

    def _sliced(self, name: str, shards: Sequence[FileRef], layout: Layout) -> JoinedShards:
        """A tensor of several shard files, opened only where it is sliced."""
        from ..io.manifest import header_of

        axis = layout.shard_axis
        assert axis is not None
        parts = [(header_of(self.manifest, ref, name)[0][axis],
                  lambda ref=ref: self._load(ref, name, mapped=True)) for ref in shards]
        dtype = np.float32 if np.dtype(layout.dtype).itemsize <= 4 else np.float64
        return JoinedShards(parts, axis, layout.shape, dtype)

    def _scales(self, name: str, quant: Quantization) -> tuple[np.ndarray, np.ndarray]:
        """Scale and zero point shaped to broadcast over the weight."""
        layout = self.layout[name]
        shape = [1] * len(layout.shape)
        if layout.quant_axis is not None:
            shape[layout.quant_axis] = layout.shape[layout.quant_axis]

        def values(value: Any, what: str) -> np.ndarray:
            if isinstance(value, FileRef):
                ref, value = value, self._load(value, name)
                with np.errstate(over="ignore", invalid="ignore"):
                    wrong = ~np.isfinite(value.astype(np.float32)) | (
                        (value <= 0) if what == "scale" else False)
                if wrong.any():  # (the manifest's own numbers are judged when it is read)
                    raise ManifestError("weights-bad-manifest", f"{self.manifest.where}: "
                                        f"`{ref.file}` (the {what} of `{name}`) holds "
                                        f"{float(value.flat[int(np.argmax(wrong))])!r}; a {what} is "
                                        f"a finite number" + (" above 0" if what == "scale"
                                                              else ""), name)
            value = np.asarray(value, dtype=np.float32)
            return value.reshape(shape) if value.size > 1 else value.reshape([1] * len(shape))

        return values(quant.scale, "scale"), values(quant.zero_point, "zero point")

    def _load(self, ref: FileRef, tensor: str, mapped: bool = False) -> np.ndarray:
        path = self.manifest.base_dir / ref.file
        where = f"{self.manifest.where}: `{ref.file}` (for `{tensor}`)"
        if ref.sha256 is not None:
            found = self._sha256(path, where, tensor)
            if found != ref.sha256:
                raise ManifestError("weights-checksum", f"{where}: its sha256 is {found}, the "
                                    f"manifest says {ref.sha256}; the file changed or is "
                                    f"not the one meant", tensor)
        try:
            suffix = path.suffix.lower()
            if suffix == SAFETENSORS:
                return load_tensor(path, ref.key, tensor, mapped)
            if suffix == ".npz":
                return load_npz_member(path, ref.key or tensor)
            return load_npy(path, mapped)
        except (OSError, SourceError, SafetensorsProblem) as err:
            raise ManifestError("weights-missing-file", f"{where} cannot be read: "
                                f"{getattr(err, 'strerror', None) or err}", tensor) from None

    def _sha256(self, path: Path, where: str, tensor: str) -> str:
        if path not in self._hashed:
            import hashlib  # (only a manifest with digests needs it)

            digest = hashlib.sha256()
            try:
                with open(path, "rb") as fp:
                    for block in iter(lambda: fp.read(1 << 20), b""):
                        digest.update(block)
            except OSError as err:
                raise ManifestError("weights-missing-file", f"{where} cannot be read: "
                                    f"{err.strerror or err}", tensor) from None
            self._hashed[path] = digest.hexdigest()
        return self._hashed[path]


def manifest_layouts(weights: str | os.PathLike | Mapping, text: str,
                     base_dir: str | os.PathLike) -> tuple[Manifest, dict[str, Layout]]:
    """A manifest read and checked against the program `text` (headers only)."""
    manifest = read_manifest(weights, base_dir)
    return manifest, layouts(manifest, program_axes(_with_imports(text, base_dir)))


def _with_imports(text: str, base_dir: str | os.PathLike) -> ir.Program:
    """The program with its imported files' statements: an imported param (`m::W`)
    is one a manifest or a checkpoint gives (`fuse train` writes it under that name;
    the parsed text alone refused it as "not a source or param")."""
    program = parse(text).program
    if not has_imports(program.statements):
        return program
    resolved = resolve_imports(program.statements, None, Path(base_dir), text)
    return ir.Program(resolved.statements, program.text)


def open_weights(weights: str | os.PathLike | Mapping, text: str,
                 base_dir: str | os.PathLike, adapters: AdapterChoice = None,
                 slices: bool = False) -> Weights:
    """A manifest checked against the program and its data loaded (`slices`: in a
    group of processes, a tensor of several shards where it is sliced); raises
    ManifestError."""
    manifest, layout = manifest_layouts(weights, text, base_dir)
    loaded = Weights(manifest, layout, slices)
    loaded.set_adapters(adapters)
    return loaded
