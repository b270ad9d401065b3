"""A weights manifest, read and checked without loading any tensor's data
(docs/weights.md).

A manifest is JSON: per Fuse tensor, the file (`.npy`, `.npz`, `.safetensors`)
and key that hold it, its dtype, shape and sha256, optionally its shards joined
along an axis and its int8 quantization; and named LoRA adapters.  What is read
here is the manifest and each file's header (shape and dtype): `fuse check
--weights` and `compile(weights=...)` judge a manifest from that alone.  The
run (`run/weights.py`) loads the data and verifies the sha256 sums.

Every problem is a `ManifestError` with a diagnostic code (`weights-...`,
docs/diagnostics.md) and, where it concerns one tensor, that tensor's name.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..front import ir
from ..front.diagnostics import Diagnostic, make
from ..front.span import Span
from ..speed.fastinit import frozen_dataclass
from .numpy_headers import npz_errors, npz_problem, read_npy_header
from .safetensors_header import (
    NUMPY_DTYPES,
    SafetensorsProblem,
    UnheldDtype,
    read_entry,
    tensor_keys,
)
from .source_files import DuplicateKey, SourceError, json_unique_keys, open_regular, read_bounded
from .sources import SAFETENSORS, split_member

MAX_MANIFEST_BYTES = 16 * 1024 * 1024
ENTRY_FIELDS = {"file", "key", "sha256", "dtype", "shape", "shards", "axis", "quantization"}
REF_FIELDS = {"file", "key", "sha256"}
QUANT_FIELDS = {"scale", "zero_point", "axis"}
ADAPTER_FIELDS = {"scale", "targets"}


class ManifestError(Exception):
    """A manifest that cannot be used: `code` (a diagnostic code), the message,
    and the tensor it concerns (None: the manifest as a whole)."""

    def __init__(self, code: str, message: str, tensor: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.tensor = code, message, tensor


@frozen_dataclass
class FileRef:
    """A tensor in a file: `key` names it in an `.npz` or `.safetensors` file."""

    file: str
    key: str | None = None
    sha256: str | None = None


@frozen_dataclass
class Quantization:
    """q * scale after subtracting zero_point; per tensor (numbers) or per axis
    (lists, or a FileRef each, with `axis` an index name or a position)."""

    scale: Any
    zero_point: Any = 0
    axis: int | str | None = None


@frozen_dataclass
class WeightEntry:
    name: str
    shards: tuple[FileRef, ...]  # one, or the shards joined along `axis`
    axis: int | str | None = None
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    quantization: Quantization | None = None


@frozen_dataclass
class AdapterPair:
    """W + scale * B A for the weight `target` (W: m x n, B: m x r, A: r x n)."""

    target: str
    a: FileRef
    b: FileRef


@frozen_dataclass
class Adapter:
    name: str
    scale: float
    pairs: tuple[AdapterPair, ...]


@frozen_dataclass
class Manifest:
    where: str  # the manifest's file, or "the weights mapping"
    base_dir: Path  # where its relative file paths start
    tensors: tuple[WeightEntry, ...]
    adapters: tuple[Adapter, ...] = ()

    def entry(self, name: str) -> WeightEntry:
        return next(e for e in self.tensors if e.name == name)

    def adapter(self, name: str) -> Adapter:
        for adapter in self.adapters:
            if adapter.name == name:
                return adapter
        names = ", ".join(a.name for a in self.adapters) or "none"
        raise ManifestError("weights-bad-manifest", f"{self.where} declares no adapter "
                            f"named {name!r} (adapters: {names})")


def read_manifest(weights: str | os.PathLike | Mapping, base_dir: str | os.PathLike = "."
                  ) -> Manifest:
    """The manifest at a path (its files relative to its folder) or given as a
    mapping (relative to `base_dir`); raises ManifestError."""
    if isinstance(weights, Mapping):
        return _manifest(weights, "the weights mapping", Path(base_dir))
    if not isinstance(weights, (str, os.PathLike)):
        raise ManifestError("weights-bad-manifest", f"weights= is a manifest's path or a "
                            f"mapping, not {type(weights).__name__}")
    path = Path(weights)
    if path.suffix.lower() == SAFETENSORS:
        return checkpoint_manifest(path)
    where = f"`{path}`"
    if not path.exists():
        raise ManifestError("weights-missing-file", f"the weights manifest {where} does not exist")
    try:
        text = read_bounded(path, MAX_MANIFEST_BYTES).decode("utf-8")
        data = json_unique_keys(text)
    except UnicodeDecodeError as err:  # (an array or a checkpoint given as the manifest)
        raise ManifestError("weights-bad-manifest", f"the weights manifest {where} is not "
                            f"UTF-8 text (byte {err.object[err.start]:#04x} at offset "
                            f"{err.start}): a manifest is a JSON file; a checkpoint is "
                            f"given as a .safetensors file") from None
    except (OSError, SourceError) as err:
        raise ManifestError("weights-bad-manifest", f"the weights manifest {where} cannot be "
                            f"read: {getattr(err, 'strerror', None) or err}") from None
    except (json.JSONDecodeError, RecursionError) as err:
        raise ManifestError("weights-bad-manifest", f"the weights manifest {where} is not "
                            f"JSON ({getattr(err, 'msg', err)})") from None
    except DuplicateKey as err:  # JSON keeps the last silently: one of them was a slip
        raise ManifestError("weights-bad-manifest", f"the weights manifest {where} names "
                            f"{err.args[0]!r} twice in one object") from None
    return _manifest(data, where, path.parent)


def checkpoint_manifest(path: Path) -> Manifest:
    """A `.safetensors` file (a checkpoint `fuse train` wrote, `fuse run --params`)
    as a manifest: each of its tensors gives the program's source or param of its
    own name, no JSON needed; raises ManifestError."""
    where = f"the checkpoint `{path}`"
    if not path.exists():
        raise ManifestError("weights-missing-file", f"{where} does not exist")
    try:
        with open_regular(path):  # a regular file only, as every source
            pass
        keys = tensor_keys(path)
    except (OSError, SourceError, SafetensorsProblem) as err:
        raise ManifestError("weights-bad-manifest", f"{where} cannot be read: "
                            f"{getattr(err, 'strerror', None) or err}") from None
    return _manifest({"tensors": {key: {"file": path.name, "key": key} for key in keys}},
                     where, path.parent)


def _manifest(data: Any, where: str, base_dir: Path) -> Manifest:
    def bad(message: str, tensor: str | None = None) -> ManifestError:
        return ManifestError("weights-bad-manifest", f"{where}: {message}", tensor)

    if not isinstance(data, Mapping):
        raise bad("a manifest is a JSON object with \"tensors\" (and \"adapters\")")
    unknown = set(data) - {"tensors", "adapters", "format"}
    if unknown:
        raise bad(f"unknown field {sorted(unknown)[0]!r} (fields: tensors, adapters, format)")
    tensors = data.get("tensors", {})
    if not isinstance(tensors, Mapping):
        raise bad("\"tensors\" maps tensor names to their files")
    entries = tuple(_entry(str(name), spec, bad) for name, spec in tensors.items())
    adapters = data.get("adapters", {})
    if not isinstance(adapters, Mapping):
        raise bad("\"adapters\" maps adapter names to their scale and targets")
    return Manifest(where, base_dir, entries,
                    tuple(_adapter(str(n), spec, bad) for n, spec in adapters.items()))


def _entry(name: str, spec: Any, bad) -> WeightEntry:
    if isinstance(spec, str):
        spec = {"file": spec}
    if not isinstance(spec, Mapping):
        raise bad(f"the entry of `{name}` is not an object", name)
    unknown = set(spec) - ENTRY_FIELDS
    if unknown:
        raise bad(f"the entry of `{name}` has an unknown field {sorted(unknown)[0]!r} "
                  f"(fields: {', '.join(sorted(ENTRY_FIELDS))})", name)
    if ("shards" in spec) == ("file" in spec):
        raise bad(f"the entry of `{name}` needs either \"file\" or \"shards\"", name)
    if "shards" in spec:
        parts = spec["shards"]
        if not isinstance(parts, list) or not parts or "axis" not in spec:
            raise bad(f"`{name}`: \"shards\" is a non-empty list of files, joined along "
                      f"\"axis\"", name)
        shards = tuple(_ref(part, f"a shard of `{name}`", bad, name) for part in parts)
    else:
        shards = (_ref({k: spec[k] for k in REF_FIELDS if k in spec}, f"`{name}`", bad, name),)
    shape = spec.get("shape")
    if shape is not None and not (isinstance(shape, list) and all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise bad(f"the shape of `{name}` is a list of extents, not {shape!r}", name)
    dtype = spec.get("dtype")
    if dtype is not None and dtype not in NUMPY_DTYPES.values():
        raise bad(f"the dtype of `{name}` is {dtype!r}; one of "
                  f"{', '.join(sorted(set(NUMPY_DTYPES.values())))}", name)
    quant = spec.get("quantization")
    return WeightEntry(name, shards, _axis(spec.get("axis"), name, bad), dtype,
                       tuple(shape) if shape is not None else None,
                       _quantization(quant, name, bad) if quant is not None else None)


def _ref(spec: Any, what: str, bad, tensor: str) -> FileRef:
    if isinstance(spec, str):
        spec = {"file": spec}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("file"), str):
        raise bad(f"{what} names no \"file\"", tensor)
    unknown = set(spec) - REF_FIELDS
    if unknown:
        raise bad(f"{what} has an unknown field {sorted(unknown)[0]!r}", tensor)
    file, key = split_member(spec["file"])
    key = spec.get("key", key)
    sha = spec.get("sha256")
    if key is not None and not isinstance(key, str) or sha is not None and not (
            isinstance(sha, str) and len(sha) == 64
            and all(c in "0123456789abcdefABCDEF" for c in sha)):
        raise bad(f"{what}: \"key\" is a string and \"sha256\" 64 hex digits", tensor)
    return FileRef(file, key, sha.lower() if sha else None)


def _axis(axis: Any, name: str, bad) -> int | str | None:
    if axis is None or isinstance(axis, str) or (isinstance(axis, int)
                                                 and not isinstance(axis, bool) and axis >= 0):
        return axis
    raise bad(f"the axis of `{name}` is an index name or a position, not {axis!r}", name)


def _quantization(spec: Any, name: str, bad) -> Quantization:
    if not isinstance(spec, Mapping) or "scale" not in spec or set(spec) - QUANT_FIELDS:
        raise bad(f"the quantization of `{name}` is an object with \"scale\" and optionally "
                  f"\"zero_point\" and \"axis\"", name)

    def number_or_list(value: Any, what: str) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, list) and value and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return tuple(float(v) for v in value)
        if isinstance(value, (Mapping, str)):  # a file reference, as everywhere
            return _ref(value, f"the {what} of `{name}`", bad, name)
        raise bad(f"the {what} of `{name}` is a number, a list of numbers or a file", name)

    scale = number_or_list(spec["scale"], "scale")
    zero = number_or_list(spec.get("zero_point", 0), "zero point")
    stray = _stray_number(scale, positive=True)
    if stray is not None:  # (a NaN or infinite step would turn the weight into NaN)
        raise bad(f"the scale of `{name}` is {stray!r}; a scale is a finite number above 0 "
                  f"(float32's range)", name)
    stray = _stray_number(zero, positive=False)
    if stray is not None:
        raise bad(f"the zero point of `{name}` is {stray!r}, not a finite number", name)
    axis = _axis(spec.get("axis"), name, bad)
    if axis is None and not (isinstance(scale, float) and isinstance(zero, float)):
        raise bad(f"`{name}`: a scale or zero point per position needs the quantization's "
                  f"\"axis\"", name)
    return Quantization(scale, zero, axis)


FLOAT32_MAX = 3.4028234663852886e38


def _stray_number(value: Any, positive: bool) -> float | None:
    """The first of a quantization's numbers (a number or a tuple of them; a
    file's are judged when loaded) that is not finite in float32 (or, `positive`,
    not above 0); None when all are."""
    numbers = value if isinstance(value, tuple) else (value,) if isinstance(value, float) else ()
    return next((v for v in numbers if not -FLOAT32_MAX <= v <= FLOAT32_MAX
                 or positive and not v > 0), None)


def _adapter(name: str, spec: Any, bad) -> Adapter:
    if not isinstance(spec, Mapping) or set(spec) - ADAPTER_FIELDS or not isinstance(
            spec.get("targets"), Mapping):
        raise bad(f"the adapter {name!r} is an object with \"targets\" (tensor name -> "
                  f"{{\"A\": file, \"B\": file}}) and \"scale\"")
    scale = spec.get("scale", 1.0)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not \
            -FLOAT32_MAX <= scale <= FLOAT32_MAX:
        raise bad(f"the scale of adapter {name!r} is a finite number, not {scale!r}")
    pairs = []
    for target, pair in spec["targets"].items():
        if not isinstance(pair, Mapping) or set(pair) != {"A", "B"}:
            raise bad(f"adapter {name!r}: the target `{target}` needs \"A\" and \"B\"",
                      str(target))
        pairs.append(AdapterPair(str(target), _ref(pair["A"], f"adapter {name!r} A", bad,
                                                   str(target)),
                                 _ref(pair["B"], f"adapter {name!r} B", bad, str(target))))
    return Adapter(name, float(scale), tuple(pairs))


# ------------------------------------------------------------------ headers


def header_of(manifest: Manifest, ref: FileRef, tensor: str) -> tuple[tuple[int, ...], str]:
    """The shape and NumPy dtype name of a referenced tensor, from its file's
    header alone; ManifestError when the file or key is not there."""
    path = manifest.base_dir / ref.file
    where = f"{manifest.where}: `{ref.file}` (for `{tensor}`)"
    if not path.exists():
        raise ManifestError("weights-missing-file", f"{where} does not exist (looked for "
                            f"{path})", tensor)
    suffix = path.suffix.lower()
    try:
        if suffix == SAFETENSORS:
            with open_regular(path):
                pass
            try:
                found = read_entry(path, ref.key, tensor)
            except SafetensorsProblem as err:
                code = "weights-dtype-mismatch" if isinstance(err, UnheldDtype) else \
                    "weights-unknown-key" if "holds no tensor" in str(err) else \
                    "weights-missing-file"
                raise ManifestError(code, f"{where}: {err}", tensor) from None
            return found.shape, found.dtype
        if suffix == ".npy":
            if ref.key is not None:  # one array, no names: a key would be dropped unread
                raise ManifestError("weights-bad-manifest", f"{where}: a .npy file holds one "
                                    f"array, so it takes no key (got {ref.key!r}); keys name "
                                    f"a member of a .npz or a tensor of a .safetensors", tensor)
            with open_regular(path) as fp:
                header = read_npy_header(fp, os.fstat(fp.fileno()).st_size)
        elif suffix == ".npz":
            header = _npz_header(path, ref.key or tensor, where, tensor)
        else:
            raise ManifestError("weights-bad-manifest", f"{where}: a weight file is .npy, "
                                f".npz or .safetensors", tensor)
    except (OSError, SourceError) as err:
        raise ManifestError("weights-missing-file", f"{where} cannot be read: "
                            f"{getattr(err, 'strerror', None) or err}", tensor) from None
    import numpy as np  # here: the header's type code in NumPy's words

    return header.shape, np.dtype(header.descr).name


def _npz_header(path: Path, key: str, where: str, tensor: str):
    import zipfile

    try:
        with open_regular(path) as raw, zipfile.ZipFile(raw) as archive:
            names = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
            if key not in names:
                raise ManifestError("weights-unknown-key", f"{where} holds no array named "
                                    f"{key!r} (arrays: {', '.join(names) or 'none'})", tensor)
            with archive.open(f"{key}.npy") as fp:
                return read_npy_header(fp, archive.getinfo(f"{key}.npy").file_size)
    except npz_errors() as err:
        raise SourceError(npz_problem(err)) from None


# ------------------------------------------------------------------ against the program


@frozen_dataclass
class Layout:
    """What a manifest entry gives the program, from the headers: the tensor's
    shape, the stored dtype, and its axes resolved to positions."""

    shape: tuple[int, ...]
    dtype: str
    shard_axis: int | None = None
    quant_axis: int | None = None


def program_axes(program: ir.Program) -> dict[str, tuple[str, ...]]:
    """Each source's and param's index names as written in its declaration
    ("" where an index is not a plain variable)."""
    out: dict[str, tuple[str, ...]] = {}
    for stmt in program.statements:
        refs = (stmt.lhs,) if isinstance(stmt, ir.Source) else \
            stmt.refs if isinstance(stmt, ir.ParamDecl) else ()
        for ref in refs:
            out.setdefault(ref.name, tuple(i.name if isinstance(i, ir.IndexVar) else ""
                                           for i in ref.indices or ()))
    return out


def layouts(manifest: Manifest, axes: Mapping[str, tuple[str, ...]]) -> dict[str, Layout]:
    """Each entry's layout, checked against its files' headers and against the
    program's sources and params (`axes`: `program_axes`); ManifestError on the
    first problem."""
    out = {}
    for entry in manifest.tensors:
        name = entry.name
        if name not in axes:
            raise ManifestError("weights-unknown-tensor", f"{manifest.where} gives `{name}`, "
                                f"which is not a source or param of the program (those are: "
                                f"{', '.join(axes) or 'none'})", name)
        out[name] = _layout(manifest, entry, axes[name])
    for adapter in manifest.adapters:
        for pair in adapter.pairs:
            _check_pair(manifest, adapter, pair, out)
    return out


def _layout(manifest: Manifest, entry: WeightEntry, names: tuple[str, ...]) -> Layout:
    name, where = entry.name, f"{manifest.where}: `{entry.name}`"
    headers = [header_of(manifest, ref, name) for ref in entry.shards]
    dtype = headers[0][1]
    if entry.dtype is not None and any(d != entry.dtype for _, d in headers):
        found = next(d for _, d in headers if d != entry.dtype)
        raise ManifestError("weights-dtype-mismatch", f"{where} is declared {entry.dtype} "
                            f"but its file holds {found}", name)
    kinds = sorted({d for _, d in headers})
    if entry.quantization is not None and len(kinds) > 1:  # (one zero point, one type)
        raise ManifestError("weights-dtype-mismatch", f"{where} is quantized, but its shards "
                            f"hold {' and '.join(kinds)}: its shards share one stored type",
                            name)
    shape = headers[0][0]
    axis = None
    if len(headers) > 1:
        axis = _position(entry.axis, shape, names, f"{where}: the shards' axis", name)
        for part, _ in headers[1:]:
            if len(part) != len(shape) or any(a != b for k, (a, b) in enumerate(zip(part, shape))
                                               if k != axis):
                raise ManifestError("weights-shape-mismatch", f"{where}: shards of shapes "
                                    f"{shape} and {part} cannot be joined along axis {axis}",
                                    name)
        shape = shape[:axis] + (sum(p[axis] for p, _ in headers),) + shape[axis + 1:]
    if entry.shape is not None and tuple(entry.shape) != shape:
        files = "its files hold" if axis is not None else "its file holds"
        raise ManifestError("weights-shape-mismatch", f"{where} is declared with shape "
                            f"{tuple(entry.shape)} but {files} {shape}", name)
    if len(shape) != len(names):
        raise ManifestError("weights-shape-mismatch", f"{where} has {len(shape)} axes "
                            f"{shape} but the program writes `{name}` with {len(names)}", name)
    quant_axis = _quantization_axis(manifest, entry, shape, dtype, names)
    return Layout(shape, dtype, axis, quant_axis)


def _position(axis: int | str | None, shape: tuple[int, ...], names: tuple[str, ...],
              what: str, tensor: str) -> int:
    if isinstance(axis, str):
        if axis not in names:
            raise ManifestError("weights-bad-manifest", f"{what} is {axis!r}, which is not "
                                f"an index of `{tensor}` as the program writes it "
                                f"({', '.join(n for n in names if n) or 'none'})", tensor)
        return names.index(axis)
    if axis is None or axis >= len(shape):
        raise ManifestError("weights-bad-manifest", f"{what} is {axis!r}; `{tensor}` has "
                            f"{len(shape)} axes", tensor)
    return axis


def _quantization_axis(manifest: Manifest, entry: WeightEntry, shape: tuple[int, ...],
                       dtype: str, names: tuple[str, ...]) -> int | None:
    quant, name = entry.quantization, entry.name
    where = f"{manifest.where}: `{name}`"
    if quant is None:
        return None
    if dtype not in ("int8", "uint8"):
        raise ManifestError("weights-dtype-mismatch", f"{where} is quantized, so its file "
                            f"holds int8 or uint8, not {dtype}", name)
    zeros = quant.zero_point if isinstance(quant.zero_point, tuple) else (
        (quant.zero_point,) if isinstance(quant.zero_point, float) else ())
    low, high = (-128, 127) if dtype == "int8" else (0, 255)
    stray = next((z for z in zeros if z != int(z) or not low <= z <= high), None)
    if stray is not None:  # (as torch.quantize_per_tensor refuses it)
        raise ManifestError("weights-dtype-mismatch", f"{where}: its zero point {stray:g} is "
                            f"not a value of {dtype} (a whole number from {low} to {high})",
                            name)
    if quant.axis is None:
        return None
    axis = _position(quant.axis, shape, names, f"{where}: the quantization axis", name)
    for what, value in (("scale", quant.scale), ("zero point", quant.zero_point)):
        if isinstance(value, float):
            continue
        count: Any = len(value) if isinstance(value, tuple) else None
        if isinstance(value, FileRef):
            found, _ = header_of(manifest, value, name)
            count = found[0] if len(found) == 1 else f"shape {found}, not one row of"
        if count != shape[axis]:
            raise ManifestError("weights-shape-mismatch", f"{where}: its {what} has "
                                f"{count} values; axis {axis} has {shape[axis]}", name)
    return axis


def _check_pair(manifest: Manifest, adapter: Adapter, pair: AdapterPair,
                known: Mapping[str, Layout]) -> None:
    target = pair.target
    where = f"{manifest.where}: adapter {adapter.name!r}"
    if target not in known:
        raise ManifestError("weights-unknown-tensor", f"{where} targets `{target}`, which the "
                            f"manifest does not give", target)
    shape = known[target].shape
    a, _ = header_of(manifest, pair.a, target)
    b, _ = header_of(manifest, pair.b, target)
    if len(shape) != 2 or len(a) != 2 or len(b) != 2 or b[0] != shape[0] or \
            a[1] != shape[1] or a[0] != b[1]:
        raise ManifestError("weights-shape-mismatch", f"{where}: `{target}` {shape} + B {b} "
                            f"A {a} does not fit; B is m x r and A is r x n for an m x n "
                            f"weight", target)


def as_diagnostic(err: ManifestError, program: ir.Program) -> Diagnostic:
    """A manifest problem as a diagnostic of the program: at the tensor's
    declaration when it concerns one, else at the program's start."""
    span = Span(0, 0)
    for stmt in program.statements:
        if isinstance(stmt, ir.Source) and stmt.lhs.name == err.tensor:
            span = stmt.span
            break
        if isinstance(stmt, ir.ParamDecl) and any(r.name == err.tensor for r in stmt.refs):
            span = stmt.span
            break
    return make(err.code, err.message, span)


def recoded(diagnostics: tuple[Diagnostic, ...], manifest: Manifest,
            names: Mapping[str, Layout]) -> tuple[Diagnostic, ...]:
    """The analysis' diagnostics with a conflict between a manifest's shape and
    the program (told by the checker as "the input given for W") said so."""
    out = []
    for d in diagnostics:
        tensor = next((n for n in names if d.code in ("extent-conflict", "arity-mismatch") and (
            f"the input given for {n} " in d.message + " " or f"the input for `{n}`" in d.message
            or any(f"the input given for {n}" == r.message.split("from ", 1)[-1]
                   for r in d.related))), None)
        if tensor is None:
            out.append(d)
            continue
        out.append(make("weights-shape-mismatch", f"{manifest.where} gives `{tensor}` shape "
                        f"{names[tensor].shape}, which does not fit the program: {d.message}",
                        d.span, related=d.related))
    return tuple(out)
