"""The server's options: initialization options or `workspace/configuration`
(section "fuse"), with defaults for everything."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass
class Options:
    backend: str = "numpy"  # default backend for fuse.run
    device: str = "cpu"  # default device for fuse.run
    precision: str = "fp32"  # default precision for fuse.run (fp32, fp64, bf16, fp16)
    memory_limit: int | None = None  # bytes a run may use (None: half the free memory)
    allow_sink_writes: bool = False  # whether a run from the editor may write sinks
    debounce_ms: int = 150  # quiet time after an edit before diagnostics are computed

    def update(self, data: Any) -> None:
        """Take the known keys of a settings object (camelCase or snake_case)."""
        if not isinstance(data, dict):
            return
        data = data.get("fuse", data) if isinstance(data.get("fuse"), dict) else data
        for f in fields(self):
            camel = "".join(w.capitalize() if i else w for i, w in enumerate(f.name.split("_")))
            for key in (f.name, camel):
                if key in data and data[key] is not None:
                    value = data[key]
                    expected = type(getattr(self, f.name))
                    if f.name == "memory_limit" or isinstance(value, expected):
                        setattr(self, f.name, value)
