"""What a `.safetensors` file holds, read from its header alone (docs/weights.md).

A source names one tensor of the file after a colon,
`W[i,j] = "model.safetensors:layers.0.wq"`; without a key the file's tensor
named like the Fuse tensor, or its only tensor, is read.  The header is read
with the `safetensors` library (`safe_open` maps the file and parses its JSON
header; `get_slice(...).get_shape()` reads no data), imported here only when a
program has such a source: checking other programs never pays for it.  Over a
mesh of several processes a tensor is memory-mapped at its offset
(`load_tensor(..., mapped=True)`): each process reads only its slices.
"""
from __future__ import annotations

from pathlib import Path

from ..speed.fastinit import frozen_dataclass

# safetensors' type names -> NumPy's; BF16 and the FP8 kinds have no NumPy type
NUMPY_DTYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16",
                "I16": "int16", "U32": "uint32", "I32": "int32", "U64": "uint64",
                "I64": "int64", "F16": "float16", "F32": "float32", "F64": "float64"}


class SafetensorsProblem(Exception):
    """The file is not a readable safetensors file, or lacks the key; says why."""


class UnheldDtype(SafetensorsProblem):
    """The tensor's type (BF16, FP8) has no NumPy type; says which."""


@frozen_dataclass
class SafetensorsEntry:
    """One tensor of a safetensors file, as its header describes it."""

    key: str
    shape: tuple[int, ...]
    dtype: str  # NumPy's name ("float32", "int8")


def read_entry(path: Path, key: str | None, tensor: str) -> SafetensorsEntry:
    """The header entry of `key` in the safetensors file `path` (without a key:
    the entry named `tensor`, or the file's only one).  The caller has made sure
    it is a regular file (`source_files.open_regular`)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            keys = list(handle.keys())
            chosen = _chosen_key(keys, key, tensor)
            piece = handle.get_slice(chosen)
            shape, kind = tuple(int(n) for n in piece.get_shape()), piece.get_dtype()
    except SafetensorError as err:
        raise SafetensorsProblem(f"not a readable safetensors file ({err})") from None
    dtype = NUMPY_DTYPES.get(kind)
    if dtype is None:
        raise UnheldDtype(f"its tensor {chosen!r} holds {kind} numbers, which NumPy "
                                 f"cannot hold; store it as F32, F16 or I8")
    return SafetensorsEntry(chosen, shape, dtype)


def tensor_keys(path: Path) -> list[str]:
    """The names of the tensors of the safetensors file `path`, from its header."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            return list(handle.keys())
    except SafetensorError as err:
        raise SafetensorsProblem(f"not a readable safetensors file ({err})") from None


def _chosen_key(keys: list[str], key: str | None, tensor: str) -> str:
    if key is not None and key in keys:
        return key
    if key is None and tensor in keys:
        return tensor
    if key is None and len(keys) == 1:
        return keys[0]
    shown = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
    wanted = key if key is not None else tensor
    raise SafetensorsProblem(f"holds no tensor named {wanted!r} (tensors: {shown or 'none'})")


def load_tensor(path: Path, key: str | None, tensor: str, mapped: bool = False):
    """The data of one tensor of a safetensors file, as a NumPy array.  `mapped`:
    memory-mapped, read only (nothing read until a slice is; a process of a group
    then reads only the slices its devices hold), as `.npy` sources are."""
    entry = read_entry(path, key, tensor)
    if mapped:
        return _mapped(path, entry)
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            return handle.get_tensor(entry.key)
    except SafetensorError as err:
        raise SafetensorsProblem(f"not a readable safetensors file ({err})") from None


def _mapped(path: Path, entry: SafetensorsEntry):
    """`entry`'s data memory-mapped.  The format (safetensors' own specification):
    8 bytes, the header's length N as a little-endian u64; N bytes of JSON whose
    entry for each tensor holds `data_offsets` [begin, end) into the bytes after
    the header; the data little-endian, C order.  `read_entry` has checked the
    header through the library; its offsets are read here, and must span exactly
    the tensor's bytes."""
    import json
    import struct

    import numpy as np

    with open(path, "rb") as fp:
        (length,) = struct.unpack("<Q", fp.read(8))
        header = json.loads(fp.read(length))
    begin, end = (int(n) for n in header[entry.key]["data_offsets"])
    dtype = np.dtype(entry.dtype).newbyteorder("<")
    count = int(np.prod(entry.shape, dtype=np.int64))
    if end - begin != count * dtype.itemsize:
        raise SafetensorsProblem(f"its tensor {entry.key!r} spans {end - begin} bytes, not "
                                 f"the {count * dtype.itemsize} its shape and type take")
    if count == 0:  # (a memory map of no bytes cannot be made)
        return np.zeros(entry.shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + length + begin, shape=entry.shape)
