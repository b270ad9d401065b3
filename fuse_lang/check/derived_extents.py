"""Extents computed from other extents once every statement has been unified
(LANGUAGE.md §3, §8, §10): an index only inside a window `x+dx` or `x/2` takes
its axis' extent (less the window's reach with `axis x = valid`), a pooled axis
`P[x/2]` is ⌈n/2⌉, an open slice the rest of its axis, `concat` the sum of its
parts, `topk(k=K)` K or the row's length.  One can wait for another (a window
over a pooled axis), so they are resolved to a fixpoint."""
from __future__ import annotations

from typing import NamedTuple, Union as TypeUnion

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from ..front.numbers import short_number
from ..front.relocation import moved_span
from ..front.span import Span
from .domains import MAX_EXTENT, Domains, Evidence


class Inner(NamedTuple):
    """A variable only inside `x+dx` or `x/2` takes that axis' extent if it has none;
    in a window, with `axis x = valid`, the axis' less the reach of the `others`."""

    var: tuple
    axis: tuple
    others: tuple = ()  # the window's other variables' keys (`dx` of `x+dx`)
    span: Span | None = None  # the window's


class Pool(NamedTuple):
    """`Y[x/2]` on a left-hand side: the axis is ⌈extent of x / 2⌉."""

    axis: tuple
    var: tuple
    divisor: int
    span: Span


class SliceRest(NamedTuple):
    """A slice open at one end (`a:` or `:b`): its variable's extent."""

    var: tuple
    axis: tuple
    start: int | None
    stop: int | None
    span: Span


class ConcatSum(NamedTuple):
    """`concat(..., axis=n)`: n's extent is the sum of its arguments' n-axes."""

    var: tuple
    parts: tuple
    span: Span


class Valued(NamedTuple):
    """The statement `stamp` compares values or computes a rule's head from values
    (`(n < 25)`, `A(a, b, a + b)`): the program's values are analysed (check/values.py)."""

    stamp: int


class TopkCount(NamedTuple):
    """`topk(x, k=K)`: the LHS axis has extent K, or the row's if that is shorter
    (topk is capped there, as the seed DSL's is; the checker warns)."""

    var: tuple
    part: tuple
    count: int
    span: Span


Derived = TypeUnion[Inner, Pool, SliceRest, ConcatSum, Valued, TopkCount]


class DerivedExtents:
    """The derived extents of one unification, on `domains`; `valid`: the index
    names declared `axis x = valid`; diagnostics to `diags`."""

    def __init__(self, domains: Domains, valid: set[str], diags: list[Diagnostic]) -> None:
        self.domains = domains
        self.valid = valid
        self.diags = diags

    def resolve(self, derived: list[Derived]) -> list[int]:
        """Gives the extents `derived` computes, to a fixpoint: a pooled axis
        (`P[x/2]`) gives the window index of a later `P[y+dy]` its extent, which
        may pool again.  Returns the stamps of the statements that compare or
        compute values (Valued)."""
        valued = [item.stamp for item in derived if type(item) is Valued]
        pending = [item for item in derived if type(item) is not Valued]
        while pending:
            left = []
            for item in pending:
                if not self._derive(item):
                    left.append(item)
            if len(left) == len(pending):
                break
            pending = left
        for item in pending:  # topk(k=K) of a row of unknown length: K
            if type(item) is TopkCount:
                self._topk_extent(item)
        return valued

    def _derive(self, item: Derived) -> bool:
        """Whether `item`'s extent could be found (and was given) now."""
        d = self.domains
        kind = type(item)
        if kind is Inner:  # an index only inside x+dx or x/2 takes that axis' extent
            if item.others and item.var[2] in self.valid:
                # (also where `x` has an extent from elsewhere: a join of the valid `H[x]`
                # with a tensor of the full axis is a conflict, not a silent padding)
                return self._valid_window(item)
            if d.extent(item.var) is not None:
                return True
            if d.extent(item.axis) is None:
                return False
            d.union(item.var, item.axis)
        elif kind is Pool:
            extent = d.extent(item.var)
            if extent is None:
                return False
            d.set_extent(item.axis, Evidence(
                -(-extent // item.divisor), item.span,  # ceil, exact
                f"⌈{extent}/{item.divisor}⌉ from this pooling index"))
        elif kind is SliceRest:
            start, stop = item.start, item.stop
            full = d.extent(item.axis)
            if stop is None and full is not None:
                d.set_extent(item.var, Evidence(max(full - (start or 0), 0), item.span,
                                                f"the slice {start}: of an axis of {full}"))
            elif start is None and stop is not None:
                d.set_extent(item.var, Evidence(stop, item.span, f"the slice :{stop}"))
            elif full is None:
                return False
        elif kind is TopkCount:
            if d.extent(item.part) is None and d.extent(item.var) is None:
                return False
            self._topk_extent(item)
        elif kind is ConcatSum:
            extents = [d.extent(p) for p in item.parts]
            if any(e is None for e in extents):
                return False
            d.set_extent(item.var, Evidence(
                sum(extents), item.span,  # type: ignore[arg-type]
                f"concat ({' + '.join(map(str, extents))})"))
        return True

    def _valid_window(self, item: Inner) -> bool:
        """`axis x = valid`: x's extent is the axis' less the window's reach, so that
        `x+dx` reads inside the axis only (PyTorch's padding='valid')."""
        d = self.domains
        full = d.extent(item.axis)
        reach = [d.extent(other) for other in item.others]
        if full is None or any(r is None for r in reach):
            return False
        extent = full - sum(r - 1 for r in reach)  # type: ignore[operator]
        if extent < 1:
            self.diags.append(make(
                "extent-conflict", f"the window is wider than its axis ({short_number(full)}): "
                f"`axis {item.var[2]} = valid` leaves no position", item.span or Span(0, 0)))
            return True
        d.set_extent(item.var, Evidence(extent, item.span or Span(0, 0),
                                        f"valid windows over an axis of {short_number(full)}"))
        return True

    def _topk_extent(self, item: TopkCount) -> None:
        d = self.domains
        row = d.extent(item.part)
        # past the largest extent, K itself is the mistake (extent-too-large)
        count = item.count if row is None or item.count > MAX_EXTENT else min(item.count, row)
        what = f"topk(k={short_number(item.count)})"
        if count < item.count:
            what += f" capped at the row's {short_number(row)}"
            self.diags.append(make(
                "topk-capped", f"topk(k={short_number(item.count)}) asks for more values than "
                f"a row holds ({short_number(row)}); it gives {short_number(row)}", item.span))
        d.set_extent(item.var, Evidence(count, item.span, what))


def window_positions(statements: tuple[ir.Statement, ...]) -> tuple[set[str], dict[str, str]]:
    """The windows' positions (`x` of `H[x] = K[dx] X[x+dx]`: a window's index on the
    left-hand side or that no reference of the right-hand side reads plainly), and
    each tap (`dx`, which the kernel `K[dx]` reads) -> the position beside it."""
    positions: set[str] = set()
    taps: dict[str, str] = {}
    for stmt in statements:
        if type(stmt) is not ir.Equation:
            continue
        refs = list(ir.refs(stmt.rhs))
        windows = [index for ref in refs for index in ref.indices or ()
                   if type(index) is ir.IndexShift and len(index.terms) > 1]
        if not windows:
            continue
        lhs = {v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i)}
        plain = {index.name for ref in refs for index in ref.indices or ()
                 if type(index) is ir.IndexVar} - lhs
        for index in windows:
            here = [t.name for t in index.terms if t.name not in plain]
            positions.update(here)
            for term in index.terms:
                if term.name in plain and here:
                    taps.setdefault(term.name, here[0])
    return positions, taps


def padding_indices(statements: tuple[ir.Statement, ...], decls: dict[str, ir.AxisDecl],
                    deltas: dict[int, int], size: int, diags: list[Diagnostic]) -> None:
    """`padding-index`: an `axis n = valid` or `same` (of this text, `size` long) where
    `n` is no window's position (the window's index on the left-hand side: `x` of
    `H[x] = K[dx] X[x+dx]`): on the tap `dx`, which would centre the window by the
    other's extent or pad nothing, or on no window at all (also one in a `fn` body,
    which a declaration does not reach: the body's indices are its own)."""
    padded = [d for d in decls.values() if d.padding is not None]
    if not padded:
        return
    positions, taps = window_positions(statements)
    for decl in padded:
        name = decl.name
        delta = deltas.get(id(decl), 0)
        if name in positions or decl.span.start + delta >= size:
            continue
        written = f"axis {name} = {decl.padding}"
        position = taps.get(name)
        if position is not None:
            diags.append(make(
                "padding-index", f"`{name}` is a window's tap, not its position: in "
                f"`{position}+{name}` the position is `{position}` (`{name}` is the kernel's), "
                f"so `{written}` {_pads_wrongly(decl.padding)}; declare the padding on "
                f"`{position}`", moved_span(decl.name_span, delta),
                fixes=(Fix(f"Declare it on `{position}`",
                           (TextEdit(moved_span(decl.name_span, delta), position),)),)))
            continue
        in_body = any(p.split("@")[0] == name for p in positions)
        diags.append(make(
            "padding-index", f"no window `{name}+…` has `{name}` as its position, so "
            f"`{written}` does nothing" + (
                " (a declaration does not reach into a `fn` body, whose indices are its own)"
                if in_body else ""), moved_span(decl.name_span, delta)))


def _pads_wrongly(padding: str | None) -> str:
    return ("pads nothing" if padding == "valid"
            else "moves the window back by half the position's extent, not the tap's")
