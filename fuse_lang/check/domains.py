"""Extents and domains by unification (LANGUAGE.md §8).

Positions that meet (the same variable in one equation, the same axis of one
tensor) are merged with union-find; each class is a *domain* with at most one
extent.  Two different extents meeting is a conflict naming both places.

A domain holds *values* (LANGUAGE.md §14): the symbols, strings and numbers that
facts, relation files and heads put in its columns.  Its extent is how many it
holds, and each has a position: a domain of numbers only numbers them in
increasing order (a dense tensor over an integer column reads in value order,
and comparisons keep their order); any other in order of first appearance.  A
domain that holds no values is positional: an integer constant on it is a
position, as on any dense axis.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Hashable, Iterable, Sequence

from ..front.span import Span
from ..speed.fastinit import frozen_dataclass

# The largest extent of an axis (docs/limits.md): past any memory, and every
# position below it is exact as a float64 and as an int64.  Larger extents are
# reported (`extent-too-large`) by the unification.
MAX_EXTENT = 2**53


Key = Hashable  # ("axis", tensor, position) | ("var", statement, name)


_MOST_PLACED = 10_000  # positions kept with their places (the largest is kept anyway)


@dataclass(slots=True)
class Evidence:
    extent: int
    span: Span
    what: str  # "the header of w.npy", "axis d = 64", ...


@dataclass(slots=True)
class _Class:
    extent: Evidence | None = None
    extent_key: Key = None  # the key `extent` was given at (where a conflict's paths start)
    symbols: dict[str, tuple[int, Span]] = field(default_factory=dict)  # -> (first seen, span)
    max_position: tuple[int, Span] | None = None
    # whether `symbols` is in numbering order (then it needs no sort): true until a
    # union merges two domains' symbols
    ordered: bool = True
    # whether `symbols` is a relation file's numbered table, shared with its reading
    # (io.whole_files.RankedSymbols keeps it for a second analysis): copied before a
    # change (`_changing`), never copied when nothing changes it (most runs)
    shared: bool = False


# The data of a class nothing was said about yet, shared until the first write
# (most keys are met only to be unified): see Domains._own.
_EMPTY = _Class(symbols=MappingProxyType({}))  # type: ignore[arg-type]


@frozen_dataclass
class Conflict:
    first: Evidence
    second: Evidence
    # the keys each extent was given at: a path of unions between them passes where
    # the two uses meet (check/conflicts.py)
    first_key: Key = None
    second_key: Key = None


class Domains:
    def __init__(self) -> None:
        self._parent: dict[Key, Key] = {}
        self._data: dict[Key, _Class] = {}
        self.conflicts: list[Conflict] = []
        # every extent given, at its key: which of two clashing extents most places
        # give (check/conflicts.py)
        self.given: list[tuple[Key, Evidence]] = []
        # the positions given (integer constants), each at its place: every one
        # beyond its axis is an error of its own (the first _MOST_PLACED)
        self.placed: list[tuple[Key, int, Span]] = []
        # the negative integers of facts and relation files on a positional domain
        # (fix_positions): no positions at all (check.unify reports each)
        self.negative: list[tuple[Key, int, Span]] = []
        self._seen = 0

    @property
    def parents(self) -> dict[Key, Key]:
        """The union-find's links (a key -> its parent; a root is its own), for a
        caller that inlines `union`'s common cases in a hot loop (check.unify's
        replay): it may link a key not met yet straight under a root, as `union`
        does, and must change nothing else."""
        return self._parent

    def find(self, key: Key) -> Key:
        parent = self._parent
        root = parent.get(key)
        if root is None:
            parent[key] = key
            self._data[key] = _EMPTY
            return key
        up = parent[root]
        if up == root:  # a root, or a child of one: most calls
            return root
        while up != root:
            root, up = up, parent[up]
        while parent[key] != root:
            parent[key], key = root, parent[key]
        return root

    def add(self, keys: Iterable[Key]) -> None:
        """Each key not met yet becomes a domain of its own (as `find` makes it)."""
        parent = self._parent
        new = [key for key in keys if key not in parent]
        parent.update(zip(new, new))
        self._data.update(dict.fromkeys(new, _EMPTY))

    def union(self, a: Key, b: Key) -> None:
        ra = self.find(a)
        parent = self._parent
        if b not in parent:
            # a new key's class is empty: joining it changes nothing but its root
            parent[b] = ra
            return
        if parent[b] == ra:  # already under this root (the root itself, or its child)
            return
        rb = self.find(b)
        if ra == rb:
            return
        db = self._data[rb]
        self._parent[rb] = ra
        del self._data[rb]
        if db is _EMPTY:
            return
        if db.extent is not None:
            self._set(ra, db.extent, db.extent_key)
        if db.symbols:
            da = self._changing(ra)
            da.ordered = db.ordered if not da.symbols else False
            for sym, seen in db.symbols.items():
                if sym not in da.symbols:
                    da.symbols[sym] = seen
                elif seen[0] < da.symbols[sym][0]:
                    # (the first seen is kept as written: `1` met before `1.0`, one
                    # value, stays `1`; assigning alone keeps the dict's key, `1.0`)
                    del da.symbols[sym]
                    da.symbols[sym] = seen
        if db.max_position:
            da = self._data[ra]
            if not da.max_position or db.max_position[0] > da.max_position[0]:
                self._own(ra).max_position = db.max_position

    def _own(self, root: Key) -> _Class:
        """The root's data, made its own first if it is still the shared empty one."""
        data = self._data[root]
        if data is _EMPTY:
            data = self._data[root] = _Class()
        return data

    def _changing(self, root: Key) -> _Class:
        """`_own(root)`, its symbols its own too (a shared table copied first)."""
        data = self._own(root)
        if data.shared:
            data.symbols, data.shared = dict(data.symbols), False
        return data

    def set_extent(self, key: Key, evidence: Evidence) -> None:
        self.given.append((key, evidence))
        self._set(self.find(key), evidence, key)

    def _set(self, root: Key, evidence: Evidence, key: Key) -> None:
        data = self._data[root]
        if data.extent is None:
            own = self._own(root)
            own.extent, own.extent_key = evidence, key
        elif data.extent.extent != evidence.extent:
            self.conflicts.append(Conflict(data.extent, evidence, data.extent_key, key))

    def add_symbol(self, key: Key, symbol: str, span: Span) -> None:
        """Symbols are numbered in the order they are first added (anywhere)."""
        root = self.find(key)
        if symbol not in self._data[root].symbols:
            self._seen += 1
            self._changing(root).symbols[symbol] = (self._seen, span)

    def add_symbols(self, items: Iterable[tuple[Key, str]], span: Span) -> None:
        """add_symbol for many (key, symbol), in order (a relation file's symbols:
        each key's class looked up once)."""
        tables: dict[Key, dict] = {}
        seen = self._seen
        for key, symbol in items:
            table = tables.get(key)
            if table is None:
                table = tables[key] = self._changing(self.find(key)).symbols
            if symbol not in table:
                seen += 1
                table[symbol] = (seen, span)
        self._seen = seen

    def add_ranked_symbols(self, keys: Sequence[tuple[int, Key]], ranked: Any, span: Span
                           ) -> None:
        """add_symbols for a relation file read whole, in bulk: `ranked` (a
        io.whole_files.RankedSymbols) holds its symbols per column and the order
        add_symbols would be given them; `keys`: (column, key).  Numbers keep that
        order, past every number given before (with a gap: only the order counts)."""
        base = ranked.base_after(self._seen)
        self._seen = base + ranked.count
        by_root: dict[Key, list[int]] = {}
        for column, key in keys:
            by_root.setdefault(self.find(key), []).append(column)
        for root, columns in by_root.items():
            fresh = ranked.numbered(tuple(columns), span)
            data = self._own(root)
            known = data.symbols
            if not known:
                data.symbols, data.shared = fresh, True
                continue
            # symbols met before (constants) come first and keep their numbers
            if not data.ordered:
                known = dict(sorted(known.items(), key=lambda kv: kv[1][0]))
            data.symbols = dict(itertools.chain(known.items(), fresh.items()))
            data.symbols.update(known)
            data.ordered, data.shared = True, False

    def fix_positions(self) -> None:
        """A domain whose extent is fixed (an array's shape, an `axis`, a literal)
        is positional: its integer constants are positions, not values (LANGUAGE.md
        §14), so they leave its values for its positions."""
        for root, data in self._data.items():
            if data.extent is None or not data.symbols:
                continue
            ints = [(v, seen) for v, seen in data.symbols.items() if type(v) is int]
            if not ints:
                continue
            data.symbols = {v: seen for v, seen in data.symbols.items() if type(v) is not int}
            data.shared = False
            for value, (_, span) in ints:
                self.add_position(root, value, span)
                if value < 0:
                    self.negative.append((root, value, span))

    def add_position(self, key: Key, position: int, span: Span) -> None:
        if len(self.placed) < _MOST_PLACED:
            self.placed.append((key, position, span))
        root = self.find(key)
        data = self._data[root]
        if data.max_position is None or position > data.max_position[0]:
            self._own(root).max_position = (position, span)

    def roots_of(self, keys: Iterable[Key]) -> list[Key]:
        """`find(key)` for each key, in order; the common case (a root, or a root's
        child) without a call: the analysis' results ask for every key at once."""
        parent = self._parent
        find = self.find
        out = []
        for key in keys:
            root = parent.get(key)
            if root is None or parent[root] != root:
                root = find(key)
            out.append(root)
        return out

    def root_extent(self, root: Key) -> int | None:
        """The extent of the domain whose root (from `find` or `roots_of`) is `root`."""
        return extent_of(self._data[root])

    def root_extents(self, roots: Iterable[Key]) -> list[int | None]:
        """`root_extent` of each root, in order."""
        data = self._data
        return [extent_of(data[root]) for root in roots]

    def extent(self, key: Key) -> int | None:
        return extent_of(self._data[self.find(key)])

    def evidence(self, key: Key) -> Evidence | None:
        return self._data[self.find(key)].extent

    def symbols(self, key: Key) -> tuple:
        """The domain's values in position order (see the module's docstring)."""
        data = self._data[self.find(key)]
        values = tuple(data.symbols) if data.ordered else tuple(self.symbol_spans(key))
        return numbered_values(values)

    def holds_symbols(self, key: Key) -> bool:
        """Whether the domain holds a value (without sorting them, as `symbols` does)."""
        return bool(self._data[self.find(key)].symbols)

    def holds_strings(self, key: Key) -> bool:
        """Whether the domain holds a symbol or string (which have no order)."""
        return any(type(v) is str for v in self._data[self.find(key)].symbols)

    def symbol_spans(self, key: Key) -> dict[str, Span]:
        """The domain's symbols in numbering order, with where each was first seen."""
        data = self._data[self.find(key)]
        items = data.symbols.items()
        if not data.ordered:
            items = sorted(items, key=lambda kv: kv[1][0])
        return {s: span for s, (_, span) in items}

    def max_position(self, key: Key) -> tuple[int, Span] | None:
        return self._data[self.find(key)].max_position

    def roots(self) -> list[Key]:
        """Every domain, in the order its first key was met (only roots hold data)."""
        return list(self._data)

    def known(self, key: Key) -> bool:
        return key in self._parent


def numbered_values(values: tuple) -> tuple:
    """A domain's values in position order: numbers only, increasing; otherwise
    as given (first appearance)."""
    if values and set(map(type, values)) <= {int, float}:  # (a bool is not a number here)
        return tuple(sorted(values))
    return values


def extent_of(data: _Class) -> int | None:
    """A domain's extent from its data: its evidence, else its symbols or positions."""
    if data.extent is not None:
        return data.extent.extent
    if data.symbols:
        return len(data.symbols)
    if data.max_position is not None:  # (a negative one is no position: invalid-index)
        return max(data.max_position[0] + 1, 0)
    return None
