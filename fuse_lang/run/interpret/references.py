"""Reading a tensor reference `T[i, j+1, x/2, 0, :]` as a labelled array:
constants and fixed indices select, offsets and pooling gather (0 outside an
axis), slices take, repeated indices take the diagonal (LANGUAGE.md §3-4)."""
from __future__ import annotations

import numbers
from typing import Any

from ...check.symbols import slice_name
from ...check.value_tables import constant_position, positions_of
from ...front import ir
from ...front.ir_text import index_text
from ..sparse.value import is_sparse
from .labelled import LArray
from .statement import EvaluationError, EvaluatorState


class ReferenceReading(EvaluatorState):
    """The Evaluator's reading of references (a mixin of evaluate.Evaluator)."""

    def ref(self, ref: ir.Ref) -> LArray:
        backend = self.backend
        if ref.indices is None:
            if ref.name in self.values:
                data = self.overrides.get(id(ref), self.values[ref.name])
                return LArray(data, ())
            if ref.name in self.fixed:
                return LArray(backend.asarray(self.fixed[ref.name]), ())
            if ref.name not in self.info.values:  # an index's value: its position
                return LArray(backend.arange(self.extent(ref.name)), (ref.name,))
            return LArray(backend.asarray(self.index_values(ref.name)), (ref.name,))
        if ref.name not in self.values:
            raise EvaluationError(f"`{ref.name}` has no value yet")
        data = self.overrides.get(id(ref), self.values[ref.name])
        plain = self.info.plain_refs.get(id(ref))
        if plain is not None:
            if not (self.fixed and any(n in self.fixed for n in plain)):
                return LArray(data, plain)
            row = self._plain_row(data, plain)  # `K[n,h,p,k]` at a fixed p: one indexing
            if row is not None:
                return row
        info = self.analysis.tensors[ref.name]
        labels: list[str] = []
        axis = 0
        slices = 0
        for pos, index in enumerate(ref.indices):
            if isinstance(index, ir.IndexVirtual):
                continue  # the stored value is the current time step
            size = backend.shape(data)[axis]
            if isinstance(index, ir.IndexVar):
                if index.name in self.fixed:
                    data = self._select(data, axis, self.fixed[index.name], size)
                    continue
                labels.append(index.name)
                axis += 1
            elif isinstance(index, ir.IndexConst):
                position = self._constant_position(info.axes[pos].domain, index)
                data = self._select(data, axis, position, size)
            elif isinstance(index, ir.IndexShift):
                data, names = self._shifted(data, axis, size, index, info.axes[pos].domain)
                labels.extend(names)
                axis += len(names)
            elif isinstance(index, ir.IndexDiv):
                name = index.var.name
                if name in self.fixed:
                    data = self._select(data, axis, self.fixed[name] // index.divisor, size)
                    continue
                positions = backend.int_arange(self.extent(name)) // index.divisor
                data = self._gather(data, axis, positions, size)
                labels.append(name)
                axis += 1
            elif isinstance(index, ir.IndexSlice):
                start = index.start or 0
                stop = size if index.stop is None else min(index.stop, size)
                data = backend.take(data, backend.int_arange(max(stop - start, 0)) + start, axis)
                labels.append(slice_name(slices))
                slices += 1
                axis += 1
        return self._diagonals(LArray(data, tuple(labels)))

    def _plain_row(self, data: Any, plain: tuple[str, ...]) -> LArray | None:
        """A dense reference of plain variables, some fixed inside their axes, read
        by one basic indexing (None: another case, read index by index)."""
        if is_sparse(data):
            return None
        sizes = self.backend.shape(data)
        where = []
        for name, size in zip(plain, sizes):
            position = self.fixed.get(name)
            if position is None:
                where.append(slice(None))
            elif not isinstance(position, int):
                return None  # a traced step (a loop in a graph): read by _select
            elif 0 <= position < size:
                where.append(position)
            else:
                return None
        return LArray(self.backend.basic_index(data, tuple(where)),
                      tuple(n for n in plain if n not in self.fixed))

    def _select(self, data: Any, axis: int, position: int, size: int) -> Any:
        backend = self.backend
        if not isinstance(position, numbers.Integral):  # a traced step: a loop in a graph
            return backend.take_traced(data, position, axis)
        if 0 <= position < size:
            return backend.take(data, position, axis)
        shape = list(backend.shape(data))
        del shape[axis]
        return backend.zeros(tuple(shape))  # reads outside an axis are 0

    def _gather(self, data: Any, axis: int, positions: Any, size: int) -> Any:
        """data[..., positions, ...] with 0 where a position is outside the axis."""
        import numpy as np

        pos = np.asarray(positions)
        if size == 0:  # an axis of extent 0: every read is outside it (NumPy's take raised)
            shape = list(self.backend.shape(data))
            shape[axis:axis + 1] = pos.shape
            return self.backend.zeros(tuple(shape))
        inside = (pos >= 0) & (pos < size)
        taken = self.backend.take(data, np.clip(pos, 0, max(size - 1, 0)), axis)
        if inside.all():
            return taken
        mask_shape = [1] * len(self.backend.shape(taken))
        for k, n in enumerate(pos.shape):
            mask_shape[axis + k] = n
        mask = self.backend.asarray(inside.reshape(mask_shape))
        return taken * mask

    def _shifted(self, data: Any, axis: int, size: int, index: ir.IndexShift, domain: int):
        """`T[t+1]`, `R(n - 1)`: the cells at the value `offset + Σ terms`; on an axis
        that holds values, looked up among them (check.value_tables)."""
        import numpy as np

        held = self.info.values
        axis_values = self.analysis.domain_symbols.get(domain)
        if axis_values is None and not any(v.name in held for v in index.terms):
            free = [v.name for v in index.terms if v.name not in self.fixed]
            base = index.offset - self.info.centred.get(id(index), 0) + sum(
                self.fixed[v.name] for v in index.terms if v.name in self.fixed)
            if not free:
                return self._select(data, axis, base, size), []
            extent = self.extent(free[0])
            if len(free) == 1 and not isinstance(extent, (int, np.integer)) and (
                    extent is size or extent == size):  # a traced size: a dynamic export
                return self._shifted_traced(data, axis, int(base)), free
            traced = [n for n in free if not isinstance(self.extent(n), (int, np.integer))]
            if traced:  # positions of a sum of indices, over a size known only when run
                raise EvaluationError(
                    f"the index `{index_text(index)}` takes positions that depend on the size of "
                    f"`{traced[0]}`, which is traced (dynamic): its size cannot be dynamic")
            if len(free) == 2 and not is_sparse(data):  # `x+dx`: a convolution's windows,
                count, width = (int(self.extent(n)) for n in free)  # where the backend has them
                windows = self.backend.windows(data, axis, int(base), count, width)
                if windows is not None:
                    return windows, free
            grids = np.ix_(*[np.arange(self.extent(n)) for n in free]) if len(free) > 1 else \
                (np.arange(self.extent(free[0])),)
            return self._gather(data, axis, base + sum(grids), size), free
        free = [v.name for v in index.terms if v.name not in self.fixed]
        base = index.offset + sum(int(self.index_values(v.name)[self.fixed[v.name]])
                                  for v in index.terms if v.name in self.fixed)
        grids = np.ix_(*[self.index_values(n) for n in free]) if free else ()
        wanted = base + sum(grids) if free else np.asarray(base)
        positions = positions_of(axis_values, size, wanted)
        if not free:
            return self._select(data, axis, int(positions), size), []
        return self._gather(data, axis, positions, size), free

    def _shifted_traced(self, data: Any, axis: int, base: int) -> Any:
        """`T[t+base]` over t of T's own axis, 0 past its ends, by slicing and
        zeros: the axis' size is a traced, symbolic one (a dynamic export), which
        NumPy positions cannot hold."""
        if base == 0:
            return data
        lead = (slice(None),) * axis
        shape = list(self.backend.shape(data))
        shape[axis] = abs(base)
        pad = self.backend.zeros(tuple(shape))
        # padded first, then cut: the cut's length is the size exactly, symbolically
        if base > 0:
            return self.backend.concatenate([data, pad], axis)[lead + (slice(base, None),)]
        return self.backend.concatenate([pad, data], axis)[lead + (slice(None, base),)]

    def _diagonals(self, value: LArray) -> LArray:
        data, axes = value.data, list(value.axes)
        seen: dict[str, int] = {}
        k = 0
        while k < len(axes):
            name = axes[k]
            if name in seen:
                data = self.backend.diagonal(data, seen[name], k)
                del axes[k]
                continue
            seen[name] = k
            k += 1
        return LArray(data, tuple(axes))

    def _constant_position(self, domain: int, index: ir.IndexConst) -> int:
        """Its place among the domain's values; -1 (reads nothing) when the domain
        does not hold it (the checker's `unknown-constant`)."""
        return constant_position(self.analysis, domain, index.value)
