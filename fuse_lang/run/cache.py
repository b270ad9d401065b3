"""The compiled-artifact cache (`ExecutionConfig(cache_dir=...)`, `fuse run --cache-dir`).

The frameworks keep the compiled graphs: JAX's persistent compilation cache in
`DIR/jax`, Torch Inductor's caches (the FX graph cache among them) in
`DIR/torch`; the jax backend's graphs also as `jax.export` artifacts in
`DIR/jax-export` (backends.jax_segments), so that a later process neither
traces nor lowers them.  Fuse keeps its own index of what it compiled, `DIR/index.json`,
one entry per key: the program's definition (its statements' tokens, so
whitespace and comments do not count), the input shapes, the backend, device,
precision, the configuration and the framework's version.  A changed
definition is a new key; the frameworks key their artifacts by the graph
itself, so a changed definition never reuses a stale artifact either.  Both
frameworks' caches are process-wide settings: the last program compiled with
a cache_dir decides the folder (docs/execution.md).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from ..check import INPUT_KINDS, Analysis
from ..front.lexer import tokenize
from ..io.atomic_files import make_folder
from ..io.sinks import atomic_write
from .backends.base import Backend
from .results import FuseError

INDEX = "index.json"
FRAMEWORK_FOLDERS = ("jax", "torch")
# the jax backend's compiled graphs as jax.export artifacts (backends.jax_segments)
EXPORT_FOLDER = "jax-export"
INDEX_VERSION = 1


def default_cache_dir() -> Path:
    """`$FUSE_CACHE_DIR`, else `$XDG_CACHE_HOME/fuse`, else `~/.cache/fuse`."""
    if os.environ.get("FUSE_CACHE_DIR"):
        return Path(os.environ["FUSE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fuse"


def canonical_definition(analysis: Analysis) -> str:
    """The program's statements as tokens, one statement a line: what the
    program means, without its layout or comments."""
    text = analysis.text
    return "\n".join(" ".join(tok.value for tok in tokenize(text[s.span.start:s.span.end])
                              if tok.type != "NL")
                     for s in analysis.program.statements)


def _framework_version(backend: str) -> str:
    import importlib

    if backend not in FRAMEWORK_FOLDERS:
        return ""
    return getattr(importlib.import_module(backend), "__version__", "")


def cache_key(analysis: Analysis, backend: Backend, settings: dict[str, Any]) -> tuple[str, dict]:
    """The key of one compiled program (a sha256) and what it was made of."""
    import hashlib  # (a run that caches nothing starts without it)

    shapes = {name: list(info.shape) for name, info in sorted(analysis.tensors.items())
              if info.kind in INPUT_KINDS}
    made_of = {"definition": canonical_definition(analysis), "shapes": shapes,
               "backend": backend.name, "device": str(backend.device),
               "precision": backend.precision, "settings": settings,
               "framework": _framework_version(backend.name)}
    digest = hashlib.sha256(json.dumps(made_of, sort_keys=True, default=str).encode())
    return digest.hexdigest(), made_of


def enable(folder: str | os.PathLike, backend: str) -> Path:
    """Point the backend's framework at its folder under `folder` (process-wide)."""
    root = Path(folder).expanduser()
    try:
        make_folder(root)  # (names a file in the way: 'afile is a file, not a folder')
        # the backend's folders too: a file in the way would otherwise be the
        # framework's warning (naming its own source file), or nothing stored, unsaid
        for name in {"jax": ("jax", EXPORT_FOLDER), "torch": ("torch",)}.get(backend, ()):
            make_folder(root / name)
    except OSError as err:
        raise FuseError(f"cache_dir {str(folder)!r} cannot be made: "
                        f"{err.strerror or err}") from None
    if backend == "jax":
        _enable_jax(root / "jax")
    elif backend == "torch":
        _enable_torch(root / "torch")
    return root


def _enable_jax(folder: Path) -> None:
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    if jax.config.jax_compilation_cache_dir != str(folder):
        jax.config.update("jax_compilation_cache_dir", str(folder))
        compilation_cache.reset_cache()  # jax opens its cache once: reopen it here
    # every graph is cached, however small or quick to compile (jax's defaults
    # skip those under a second of compile time)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def _enable_torch(folder: Path) -> None:
    import torch._inductor.config as inductor_config

    if os.environ.get("TORCHINDUCTOR_CACHE_DIR") != str(folder.resolve()):
        # Inductor reads the variable at each use: its caches follow it from here
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder.resolve())
        from torch._inductor.utils import clear_caches

        clear_caches()
    inductor_config.fx_graph_cache = True
    try:
        import torch._functorch.config as functorch_config

        functorch_config.enable_autograd_cache = True
    except (ImportError, AttributeError):  # an older torch: the FX graph cache alone
        pass


def _read_index(root: Path) -> dict:
    try:
        data = json.loads((root / INDEX).read_text())
    except (OSError, ValueError):
        return {"version": INDEX_VERSION, "entries": {}}
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        return {"version": INDEX_VERSION, "entries": {}}
    # an entry edited by hand or half-written into something else is dropped, as a
    # whole index that is not JSON is: the index notes what was compiled, nothing more
    data["entries"] = {key: entry for key, entry in data["entries"].items()
                       if isinstance(entry, dict)}
    return data


def record(root: Path, key: str, made_of: dict) -> bool:
    """Note a compiled program in the index (written whole, atomically; two
    processes writing at once: the last one's index stays).  True when the key
    was there already: the frameworks' caches hold its graphs."""
    index = _read_index(root)
    entry = index["entries"].get(key)
    now = time.time()
    hit = entry is not None
    if entry is None:
        entry = {"backend": made_of["backend"], "device": made_of["device"],
                 "precision": made_of["precision"], "shapes": made_of["shapes"],
                 "statements": made_of["definition"].count("\n") + 1,
                 "created": now, "uses": 0}
        index["entries"][key] = entry
    uses = entry.get("uses", 0)
    entry["uses"] = (uses if isinstance(uses, int) and not isinstance(uses, bool) else 0) + 1
    entry["last_used"] = now
    try:
        atomic_write(root / INDEX, (json.dumps(index, indent=1, sort_keys=True) + "\n").encode())
    except OSError as err:
        raise FuseError(f"the cache index {root / INDEX} cannot be written: "
                        f"{err.strerror or err}") from None
    return hit


def _size(folder: Path) -> tuple[int, int]:
    """(files, bytes) under a folder."""
    files = size = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
                files += 1
            except OSError:
                continue
    return files, size


def info(folder: str | os.PathLike) -> dict:
    """What the cache holds: the index's entries per backend and each
    framework's folder's files and bytes."""
    root = Path(folder).expanduser()
    entries = _read_index(root)["entries"] if root.is_dir() else {}
    backends: dict[str, dict] = {}
    for name in FRAMEWORK_FOLDERS:
        files, size = _size(root / name)
        if name == "jax":
            exported = _size(root / EXPORT_FOLDER)
            files, size = files + exported[0], size + exported[1]
        count = sum(1 for e in entries.values() if e.get("backend") == name)
        backends[name] = {"entries": count, "files": files, "bytes": size}
    index_bytes = (root / INDEX).stat().st_size if (root / INDEX).is_file() else 0
    return {"cache_dir": str(root), "exists": root.is_dir(), "entries": len(entries),
            "bytes": index_bytes + sum(b["bytes"] for b in backends.values()),
            "backends": backends}


def clear(folder: str | os.PathLike) -> dict:
    """Remove what Fuse put in the folder (the index and the frameworks' folders),
    nothing else; what was there before, as `info` says it."""
    root = Path(folder).expanduser()
    before = info(root)
    for name in (*FRAMEWORK_FOLDERS, EXPORT_FOLDER):
        shutil.rmtree(root / name, ignore_errors=True)
    try:
        (root / INDEX).unlink()
    except FileNotFoundError:
        pass
    return before
