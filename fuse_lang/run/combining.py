"""How a tensor's equations combine (LANGUAGE.md §6; docs/language.md, decision
22): `=`/`+=` add, `max=`/`min=` take the elementwise max/min, `avg=` the mean,
a source or input counting as one more value.  An equation whose head is a
constant, an offset or a slice writes only its cells (run.interpret.lhs's
head_coverage), and each cell combines only the equations that write it."""
from __future__ import annotations

from typing import Any

import numpy as np

from .backends.base import Backend
from .sparse.value import is_sparse


def combined(backend: Backend, op: str, base: Any, parts: list[Any]) -> Any:
    """The base and the parts, each over every cell, by `op`; None for none."""
    total = base
    for part in parts:
        if total is None:
            total = part
        elif op == "max=":
            total = backend.maximum(total, part)
        elif op == "min=":
            total = backend.minimum(total, part)
        else:
            total = total + part
    count = len(parts) + (base is not None)  # a source or input is one more value
    if op == "avg=" and count > 1:
        total = total / count
    return total


def combined_by_cell(backend: Backend, op: str, base: Any, parts: list[Any],
                     covers: list[np.ndarray | None],
                     base_cover: np.ndarray | None = None) -> Any:
    """`max=`/`min=`/`avg=` of parts that write only some cells (`covers`, None for
    every cell): each cell over the parts that write it and the base (which
    writes `base_cover`, its facts' cells, or every cell for None); 0 where none
    does."""
    dense = [backend.asarray(p) if is_sparse(p) else p for p in parts]
    shape = next(c.shape for c in [*covers, base_cover] if c is not None)
    everywhere = np.ones(shape, dtype=bool)
    base_cells = everywhere if base_cover is None else base_cover
    if op == "avg=":
        count = sum((everywhere if c is None else c for c in covers),
                    np.zeros(shape)).astype(float)
        total = sum(dense[1:], dense[0])
        if base is not None:
            base = backend.asarray(base) if is_sparse(base) else base
            total, count = total + base, count + base_cells
        return total / backend.asarray(np.maximum(count, 1.0))
    pick = backend.maximum if op == "max=" else backend.minimum
    total = None if base is None else (backend.asarray(base) if is_sparse(base) else base)
    written = base_cells if base is not None else np.zeros(shape, dtype=bool)
    for part, cover in zip(dense, covers):
        cover = everywhere if cover is None else cover
        if total is None:
            total = part
        else:
            both, only = backend.asarray(cover & written) > 0, backend.asarray(cover) > 0
            total = backend.where(both, pick(total, part), backend.where(only, part, total))
        written = written | cover
    return backend.where(backend.asarray(written) > 0, total, 0.0)
