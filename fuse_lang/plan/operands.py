"""A tensor reference as the einsum operand the run reads: its axes and shape.

The run (run/interpret/references.py) reads `T[...]` index by index before it
joins: a variable is an axis; a constant selects one position (no axis); a
virtual index is the current step (the stored value has no axis for it); an
offset or a window (`t+1`, `x+dx`, `x+dx-1`) is gathered, one axis per free
variable of the sum (`X[n,x+dx,i]` becomes an operand over n, x, dx, i); `x/2`
is gathered along x; a slice is an anonymous axis (`:0`, `:1`, ...) of the
slice's length; a variable named twice is one axis (the diagonal).  A variable
`fixed` to one position (a recurrence's step index) selects, as a constant.

The planner costs exactly that operand, so the einsum `fuse explain` prints is
the einsum the run performs.
"""
from __future__ import annotations

from typing import Collection

from ..check import Analysis
from ..check.symbols import slice_name
from ..front import ir
from ..speed.fastinit import frozen_dataclass


@frozen_dataclass
class Operand:
    """One reference as the run hands it to an einsum."""

    axes: tuple[str, ...]  # index names, one per axis, in the operand's order
    shape: tuple[int | None, ...]  # None where an extent is unknown before the run
    gathered: bool  # an offset, a window or `x/2` made a gathered copy of the tensor
    # read before the join with fewer axes than the tensor: a constant index selects,
    # a variable named twice takes the diagonal (explain's einsum line says so)
    selected: bool = False
    diagonal: bool = False

    @property
    def size(self) -> int | None:
        """Its number of elements (None when an extent is unknown)."""
        size = 1
        for extent in self.shape:
            if extent is None:
                return None
            size *= extent
        return size


def reference_operand(analysis: Analysis, k: int, ref: ir.Ref,
                      fixed: Collection[str] = ()) -> Operand:
    """`ref` (a reference of statement `k` with indices) as the run's operand;
    `fixed`: variables held at one position (each step of a recurrence)."""
    axes: list[str] = []
    shape: list[int | None] = []
    gathered = selected = False
    slices = 0
    extents = analysis.var_extents  # (read once: a deferred field's descriptor)
    IndexVar = ir.IndexVar
    for pos, index in enumerate(ref.indices or ()):
        if type(index) is IndexVar:  # the common case, as below
            if index.name not in fixed:
                axes.append(index.name)
                shape.append(extents.get((k, index.name), (None, 0))[0])
            continue
        if isinstance(index, ir.IndexSlice):
            axes.append(slice_name(slices))
            shape.append(_slice_extent(analysis, ref, pos, index))
            slices += 1
            continue
        if isinstance(index, (ir.IndexShift, ir.IndexDiv)):
            gathered = gathered or any(v.name not in fixed for v in ir.index_vars(index))
        elif not isinstance(index, IndexVar):
            selected = selected or isinstance(index, ir.IndexConst)
            continue  # a constant or a virtual index: no axis
        for var in ir.index_vars(index):
            if var.name not in fixed:
                axes.append(var.name)
                shape.append(extents.get((k, var.name), (None, 0))[0])
    return _diagonal(axes, shape, gathered, selected)


def _diagonal(axes: list[str], shape: list[int | None], gathered: bool,
              selected: bool) -> Operand:
    """One axis per name: a name read twice (`A[i,i]`, `A[i,i+1]`) is the diagonal,
    kept where the name first occurs (as the run's reading does)."""
    if len(set(axes)) == len(axes):  # (most references: no name twice)
        return Operand(tuple(axes), tuple(shape), gathered, selected)
    seen: dict[str, int | None] = {}
    for name, extent in zip(axes, shape):
        seen.setdefault(name, extent)
    return Operand(tuple(seen), tuple(seen.values()), gathered, selected, True)


def _slice_extent(analysis: Analysis, ref: ir.Ref, pos: int, index: ir.IndexSlice
                  ) -> int | None:
    """How many positions a slice selects: its bounds, clipped to the axis as the
    run clips them."""
    info = analysis.tensors.get(ref.name)
    size = info.axes[pos].extent if info is not None and pos < len(info.axes) else None
    start = index.start or 0
    stop = index.stop if size is None else size if index.stop is None \
        else min(index.stop, size)
    if stop is None:
        return None
    return max(stop - start, 0)
