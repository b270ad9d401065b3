"""Extents and domains by unification (LANGUAGE.md §8).

Positions that meet (the same variable in one equation, the same axis of one
tensor) are merged with union-find; each class is a *domain* with at most one
extent.  Two different extents meeting is a conflict naming both places.
Symbols are numbered per domain in order of first appearance.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable

from .span import Span

Key = Hashable  # ("axis", tensor, position) | ("var", statement, name)


@dataclass(slots=True)
class Evidence:
    extent: int
    span: Span
    what: str  # "the header of w.npy", "axis d = 64", ...


@dataclass(slots=True)
class _Class:
    extent: Evidence | None = None
    symbols: dict[str, tuple[int, Span]] = field(default_factory=dict)  # -> (first seen, span)
    max_position: tuple[int, Span] | None = None


@dataclass(frozen=True, slots=True)
class Conflict:
    first: Evidence
    second: Evidence


class Domains:
    def __init__(self) -> None:
        self._parent: dict[Key, Key] = {}
        self._data: dict[Key, _Class] = {}
        self.conflicts: list[Conflict] = []
        self._seen = 0

    def find(self, key: Key) -> Key:
        parent = self._parent
        if key not in parent:
            parent[key] = key
            self._data[key] = _Class()
            return key
        root = key
        while parent[root] != root:
            root = parent[root]
        while parent[key] != root:
            parent[key], key = root, parent[key]
        return root

    def union(self, a: Key, b: Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        da, db = self._data[ra], self._data[rb]
        self._parent[rb] = ra
        if db.extent is not None:
            self._set(ra, db.extent)
        for sym, seen in db.symbols.items():
            if sym not in da.symbols or seen[0] < da.symbols[sym][0]:
                da.symbols[sym] = seen
        if db.max_position and (not da.max_position or db.max_position[0] > da.max_position[0]):
            da.max_position = db.max_position
        del self._data[rb]

    def set_extent(self, key: Key, evidence: Evidence) -> None:
        self._set(self.find(key), evidence)

    def _set(self, root: Key, evidence: Evidence) -> None:
        data = self._data[root]
        if data.extent is None:
            data.extent = evidence
        elif data.extent.extent != evidence.extent:
            self.conflicts.append(Conflict(data.extent, evidence))

    def add_symbol(self, key: Key, symbol: str, span: Span) -> None:
        """Symbols are numbered in the order they are first added (anywhere)."""
        symbols = self._data[self.find(key)].symbols
        if symbol not in symbols:
            self._seen += 1
            symbols[symbol] = (self._seen, span)

    def add_position(self, key: Key, position: int, span: Span) -> None:
        data = self._data[self.find(key)]
        if data.max_position is None or position > data.max_position[0]:
            data.max_position = (position, span)

    def extent(self, key: Key) -> int | None:
        data = self._data[self.find(key)]
        if data.extent is not None:
            return data.extent.extent
        if data.symbols:
            return len(data.symbols)
        if data.max_position is not None:
            return data.max_position[0] + 1
        return None

    def evidence(self, key: Key) -> Evidence | None:
        return self._data[self.find(key)].extent

    def symbols(self, key: Key) -> tuple[str, ...]:
        return tuple(self.symbol_spans(key))

    def symbol_spans(self, key: Key) -> dict[str, Span]:
        """The domain's symbols in numbering order, with where each was first seen."""
        symbols = self._data[self.find(key)].symbols
        return {s: span for s, (_, span) in sorted(symbols.items(), key=lambda kv: kv[1][0])}

    def max_position(self, key: Key) -> tuple[int, Span] | None:
        return self._data[self.find(key)].max_position

    def roots(self) -> list[Key]:
        return [k for k in self._parent if self._parent[k] == k]

    def known(self, key: Key) -> bool:
        return key in self._parent
