"""Training checkpoints as safetensors files (docs/training.md).

`CKPT.safetensors` holds the params, one array per param under its name, so the
file reads back as a source (`W[i,j] = "ckpt.safetensors"`) or as weights; its
metadata says the step, the optimizer, the learning rate and the seed.  The
optimizer's state (Adam's moments) goes beside it in
`CKPT.optimizer.safetensors`, so that a resumed run takes the very steps an
uninterrupted one would.  Both are written atomically (io.sinks.atomic_write).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ...io.atomic_files import make_folder
from ...io.sinks import atomic_write
from ..results import FuseError


@dataclass(frozen=True)
class Checkpoint:
    params: dict[str, np.ndarray]
    optimizer_state: dict[str, np.ndarray] | None  # None: no state file beside it
    metadata: dict[str, str]

    @property
    def step(self) -> int:
        return int(self.metadata.get("fuse.step", "0"))


def optimizer_path(path: Path) -> Path:
    """`ckpt.safetensors` -> `ckpt.optimizer.safetensors`."""
    return path.with_name(f"{path.stem}.optimizer{path.suffix or '.safetensors'}")


def writable_checkpoint(path: str | Path) -> None:
    """FuseError, before any step, for a checkpoint that is not a `.safetensors` file
    (written anyway under another name, it was then no `--params`) or whose folder
    cannot be made (a traceback once training had ended)."""
    path = Path(path)
    if path.suffix.lower() != ".safetensors":
        raise FuseError(f"a checkpoint is a .safetensors file (CKPT.safetensors), not {path}")
    try:
        make_folder(path.parent)
    except OSError as err:
        raise FuseError(f"the checkpoint {path} cannot be written: its folder cannot be "
                        f"made ({err.strerror or err})") from None
    if path.is_dir():
        raise FuseError(f"the checkpoint {path} cannot be written: it is a folder")


def save_checkpoint(path: str | Path, params: Mapping[str, np.ndarray],
                    optimizer_state: Mapping[str, np.ndarray],
                    metadata: Mapping[str, str]) -> Path:
    """Write the params (and the optimizer's state beside them); returns the path."""
    from safetensors.numpy import save

    path = Path(path)
    try:
        make_folder(path.parent)
        # the state first: a checkpoint whose params exist always has its state
        atomic_write(optimizer_path(path), save(_contiguous(optimizer_state), dict(metadata)))
        atomic_write(path, save(_contiguous(params), dict(metadata)))
    except OSError as err:
        raise FuseError(f"the checkpoint {path} cannot be written: "
                        f"{err.strerror or err}") from None
    return path


def load_checkpoint(path: str | Path) -> Checkpoint:
    """A checkpoint written by save_checkpoint (or any safetensors file of params)."""
    from safetensors import SafetensorError, safe_open
    from safetensors.numpy import load_file

    path = Path(path)
    if not path.is_file():
        raise FuseError(f"no checkpoint at {path}")
    try:
        with safe_open(str(path), framework="numpy") as opened:
            metadata = dict(opened.metadata() or {})
        params = load_file(str(path))
        beside = optimizer_path(path)
        state = load_file(str(beside)) if beside.is_file() else None
    except (SafetensorError, OSError, ValueError) as err:
        raise FuseError(f"{path} is not a readable safetensors checkpoint: {err}") from None
    return Checkpoint(params, state, metadata)


def _contiguous(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.array(array, order="C") for name, array in arrays.items()}  # 0-d stays 0-d
