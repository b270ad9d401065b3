"""A relation of a run's result with its symbols: `result.relation("Ancestor")`.

A Boolean output is a 0/1 tensor over positions; a `Relation` reads it as rows
of values (symbols, ints, floats) through `io.relation_tuples` — the one
reading of a relation as values (LANGUAGE.md §14) — once, on first use.
Rich display (`_repr_html_`, `_repr_markdown_`) goes through `run.display`.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..io.relation_tuples import AxisValues, RelationTuples, relation_tuples
from . import display


class Relation:
    """A relation's tuples as values, sorted by value (LANGUAGE.md §14).

    `name`: the tensor; `columns`: one name per position (the index names of its
    first definition, `c0`, `c1`, ... where there are none or they repeat);
    `value`: the tensor as the run gave it (a 0/1 array or a sparse tensor).
    `len(relation)` is its tuple count; iterating gives its tuples."""

    def __init__(self, name: str, value: Any, axes: Sequence[AxisValues],
                 columns: Sequence[str]) -> None:
        self.name = name
        self.value = value
        self.axes = tuple(axes)
        self.columns = tuple(columns)
        self._read: RelationTuples | None = None

    def _tuples(self) -> RelationTuples:
        if self._read is None:
            self._read = relation_tuples(self.value, self.axes)
        return self._read

    @property
    def count(self) -> int:
        """How many tuples the relation holds."""
        return self._tuples().count

    @property
    def arity(self) -> int:
        """How many positions each tuple has."""
        return len(self.columns)

    def tuples(self, limit: int | None = None) -> list[tuple]:
        """The tuples (the first `limit` of them, all by default), each a tuple of
        plain Python values (str, int, float), sorted by value; a TypeError or
        ValueError for a `limit` that is not a whole number of 0 or more."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            error = ValueError if isinstance(limit, int) and not isinstance(limit, bool) \
                else TypeError
            raise error(f"Relation.tuples' limit is a whole number of 0 or more (or None for "
                        f"every tuple), not {limit!r}")
        return self._tuples().rows(0, limit)

    def to_set(self) -> set[tuple]:
        """The tuples as a Python set."""
        return set(self.tuples())

    def to_pandas(self) -> Any:
        """The tuples as a pandas DataFrame, one column per position (named by
        `columns`); needs pandas installed."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Relation.to_pandas needs pandas (pip install pandas); "
                              "Relation.tuples() gives the tuples without it") from None
        read = self._tuples()
        if not self.columns:  # nullary: a row per tuple (one when true), no column
            return pd.DataFrame(index=pd.RangeIndex(read.count))
        return pd.DataFrame(dict(zip(self.columns, read.columns())), columns=list(self.columns))

    def to_polars(self) -> Any:
        """The tuples as a polars DataFrame, one column per position (named by
        `columns`; a column of values of mixed kinds, symbols and numbers, is
        of polars' Object type); needs polars installed."""
        try:
            import polars as pl
        except ImportError:
            raise ImportError("Relation.to_polars needs polars (pip install polars); "
                              "Relation.tuples() gives the tuples without it") from None
        read = self._tuples()
        return pl.DataFrame([
            pl.Series(name, values, dtype=None if len({type(v) for v in values}) <= 1
                      else pl.Object)
            for name, values in zip(self.columns, read.columns())])

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.tuples())

    def __contains__(self, row: object) -> bool:
        return tuple(row) in self.to_set() if isinstance(row, (tuple, list)) else False

    def __repr__(self) -> str:
        shown = self.tuples(5)
        more = ", ..." if self.count > len(shown) else ""
        rows = ", ".join(map(repr, shown))
        return f"Relation({self.name}({', '.join(self.columns)}): {self.count} " \
               f"tuple{'' if self.count == 1 else 's'}: " \
               f"[{rows}{more}])"

    def _repr_html_(self) -> str | None:
        return display.rich(self, "text/html")

    def _repr_markdown_(self) -> str | None:
        return display.rich(self, "text/markdown")


def of_output(name: str, value: Any, analysis: Any) -> Relation | None:
    """The output `name` (its `value`) as a Relation, or None when the analysis
    says it is not Boolean.  Its axes' values as run.outputs.relation_axes reads
    them (not imported: run.outputs imports run.results, which imports this)."""
    tensor = analysis.tensors.get(name) if analysis is not None else None
    if tensor is None or not tensor.boolean:
        return None
    axes = [a for a in tensor.axes if not a.virtual]
    return Relation(name, value, [analysis.domain_symbols.get(a.domain) for a in axes],
                    column_names([a.index for a in axes]))


def column_names(indices: Sequence[str]) -> list[str]:
    """A relation's column names: its index names where they are given and
    distinct, else `c0`, `c1`, ..."""
    names = [name or f"c{p}" for p, name in enumerate(indices)]
    if len(set(names)) != len(names):
        return [f"c{p}" for p in range(len(names))]
    return names

