"""The IR: a closed set of frozen node kinds, each carrying its source span.

The parser (`fuse_lang.front.syntax`) produces these nodes; the resolver
(`fuse_lang.symbols`) links names to definitions; the checker, planner and
backends only ever read them.  Nothing here knows about lark.
"""
from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any, Callable, Iterator, Union

from ..speed.fastinit import frozen_dataclass
from .span import Span

# ---------------------------------------------------------------- indices


@frozen_dataclass
class IndexVar:
    """A variable index (`i`, `dk`, `p'`); `dotted` marks a normalised LHS axis."""

    name: str
    span: Span
    dotted: bool = False


@frozen_dataclass
class IndexConst:
    """A constant: an integer (`0`, `-7`), a float (`0.5`: a relation's column only)
    or a symbol (`Alice`, `"ann"`: `quoted`).
    On a relation's column it is a value; on an axis whose domain holds no values,
    an integer is a position (LANGUAGE.md §14)."""

    value: int | float | str
    span: Span
    quoted: bool = False

    @property
    def is_symbol(self) -> bool:
        return isinstance(self.value, str)


@frozen_dataclass
class IndexShift:
    """A sum of variables plus an integer offset: `t+1`, `i-1`, `x+dx`, `x+dx-1`."""

    terms: tuple[IndexVar, ...]
    offset: int
    span: Span


@frozen_dataclass
class IndexDiv:
    """Integer division of a variable by a constant: `x/2` (pooling on an LHS)."""

    var: IndexVar
    divisor: int
    span: Span


@frozen_dataclass
class IndexSlice:
    """A range of positions: `4:8`, `:`, `2:`; an anonymous variable (docs/language.md)."""

    start: int | None
    stop: int | None
    span: Span


@frozen_dataclass
class IndexVirtual:
    """A virtual (time) index `*t` or `*t+1`: iterated, only the latest value kept."""

    inner: Union[IndexVar, IndexShift]
    span: Span


Index = Union[IndexVar, IndexConst, IndexShift, IndexDiv, IndexSlice, IndexVirtual]


def index_vars(index: Index) -> tuple[IndexVar, ...]:
    """The variables an index mentions, in source order."""
    if isinstance(index, IndexVar):
        return (index,)
    if isinstance(index, IndexShift):
        return index.terms
    if isinstance(index, IndexDiv):
        return (index.var,)
    if isinstance(index, IndexVirtual):
        return index_vars(index.inner)
    return ()


def slice_name(ordinal: int) -> str:
    """A slice is an anonymous variable matched by its ordinal (docs/language.md)."""
    return f":{ordinal}"


def lhs_axis_names(indices: tuple) -> tuple[str, ...]:
    """The LHS's axis names in order, a slice's counted (`Y[i,:] = softmax(W[i,1:3])`
    normalises each row; `Y[:] = const([1,2])` binds the literal to the slice), a
    virtual one not (the tensor has no such axis: `X[i,*t+1] = softmax(...)` is along i)."""
    names: list[str] = []
    slices = 0
    for index in indices:
        if isinstance(index, IndexVirtual):
            continue
        if isinstance(index, IndexSlice):
            names.append(slice_name(slices))
            slices += 1
        else:
            names.extend(v.name for v in index_vars(index))
    return tuple(names)


def read_along(indices: tuple, name: str) -> list[int]:
    """The positions of a reference that read along index `name` (`reads_along`), or
    along the slice it names (`:0`, the reference's first slice)."""
    out = []
    slices = 0
    for pos, index in enumerate(indices):
        if isinstance(index, IndexSlice):
            if slice_name(slices) == name:
                out.append(pos)
            slices += 1
        elif reads_along(index, name):
            out.append(pos)
    return out


def virtual_shift(index: IndexVirtual) -> int:
    inner = index.inner
    return inner.offset if isinstance(inner, IndexShift) else 0


# ------------------------------------------------------------ expressions


@frozen_dataclass
class Ref:
    """A tensor reference `T[i,j]`, a Boolean one `R(x,y)`, or a bare name `T`.

    `indices` is None for a bare name, which may also turn out to be an index
    variable used as a value (the resolver decides).
    """

    name: str
    name_span: Span
    indices: tuple[Index, ...] | None
    paren: bool
    span: Span

    @property
    def arity(self) -> int:
        return len(self.indices) if self.indices is not None else 0


@frozen_dataclass
class Number:
    value: float
    text: str
    span: Span

    @property
    def is_integer(self) -> bool:
        return self.text.isdigit()


@frozen_dataclass
class String:
    value: str
    span: Span


@frozen_dataclass
class Neg:
    operand: "Expr"
    span: Span


@frozen_dataclass
class Sum:
    """Additive terms; `signs[k]` is '+' or '-' (the first is always '+')."""

    terms: tuple["Expr", ...]
    signs: tuple[str, ...]
    span: Span


@frozen_dataclass
class Product:
    """Factors joined by `ops[k]`: '*', '/', or ' ' for juxtaposition (ops[0] is '')."""

    factors: tuple["Expr", ...]
    ops: tuple[str, ...]
    span: Span


@frozen_dataclass
class Power:
    base: "Expr"
    exponent: "Expr"
    span: Span


@frozen_dataclass
class Keyword:
    name: str
    name_span: Span
    value: "Expr"
    span: Span


@frozen_dataclass
class Call:
    """A builtin call; every argument is its own projection scope."""

    name: str
    name_span: Span
    args: tuple["Expr", ...]
    kwargs: tuple[Keyword, ...]
    span: Span


@frozen_dataclass
class Reduce:
    """`reduce(op, i, ...) body`: explicit projection of `indices` with `op`."""

    op: str
    op_span: Span
    indices: tuple[IndexVar, ...]
    body: "Expr"
    span: Span


@frozen_dataclass
class ListLit:
    items: tuple["Expr", ...]
    span: Span


Expr = Union[Ref, Number, String, Neg, Sum, Product, Power, Call, Reduce, ListLit]


# node class -> its children (the node classes are never subclassed); leaves are absent
_CHILDREN: dict[type, Callable[[Any], tuple]] = {
    Neg: lambda e: (e.operand,),
    Sum: attrgetter("terms"),
    Product: attrgetter("factors"),
    Power: lambda e: (e.base, e.exponent),
    Call: lambda e: e.args + tuple([k.value for k in e.kwargs]) if e.kwargs else e.args,
    Reduce: lambda e: (e.body,),
    ListLit: attrgetter("items"),
}


def children(expr: Expr) -> tuple[Expr, ...]:
    get = _CHILDREN.get(type(expr))
    return () if get is None else get(expr)


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of an expression, parents before children (no recursion)."""
    stack = [expr]
    kinds = _CHILDREN
    while stack:
        node = stack.pop()
        yield node
        get = kinds.get(type(node))
        if get is not None:
            stack += reversed(get(node))


def map_children(expr: Any, fn: Callable[[Any], Any]) -> Any:
    """`expr` with `fn` applied to each child expression (the same node when none changes)."""
    kind = type(expr)
    if kind is Neg:
        operand = fn(expr.operand)
        return expr if operand is expr.operand else dataclasses.replace(expr, operand=operand)
    if kind is Sum or kind is Product or kind is ListLit:
        field = {Sum: "terms", Product: "factors", ListLit: "items"}[kind]
        items = getattr(expr, field)
        new = tuple(fn(item) for item in items)
        same = all(a is b for a, b in zip(new, items, strict=True))
        return expr if same else dataclasses.replace(expr, **{field: new})
    if kind is Power:
        base, exponent = fn(expr.base), fn(expr.exponent)
        if base is expr.base and exponent is expr.exponent:
            return expr
        return dataclasses.replace(expr, base=base, exponent=exponent)
    if kind is Call:
        args = tuple(fn(a) for a in expr.args)
        kwargs = tuple(dataclasses.replace(k, value=fn(k.value)) for k in expr.kwargs)
        return dataclasses.replace(expr, args=args, kwargs=kwargs)
    if kind is Reduce:
        return dataclasses.replace(expr, body=fn(expr.body))
    return expr


def nested_past(expr: Expr, limit: int) -> Expr | None:
    """The first node nested inside more than `limit` operators or calls (`- - - x`,
    `a^b^c`, `f(g(x))`), or None (no recursion: this is what guards recursion)."""
    stack = [(expr, 0)]
    kinds = _CHILDREN
    while stack:
        node, depth = stack.pop()
        get = kinds.get(type(node))
        if get is not None:
            if depth >= limit:
                return node
            stack += [(child, depth + 1) for child in get(node)]
    return None


def refs(expr: Expr) -> Iterator[Ref]:
    """The references of `expr` in the order `walk` meets them (walk's loop, inline:
    one generator, not one over another; the checker and the run plan ask it of
    every statement, several times)."""
    stack = [expr]
    kinds = _CHILDREN
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is Ref:  # (a leaf, never subclassed)
            yield node
            continue
        get = kinds.get(kind)
        if get is not None:
            stack += reversed(get(node))


def statement_refs(exprs: tuple[Expr, ...]) -> tuple[Ref, ...]:
    """The references of `exprs` (a statement's `used_exprs`) in the order `walk`
    meets them: a loop, not a generator (the editor's Analyzer asks it of every
    statement that moved)."""
    out = []
    kinds = _CHILDREN
    for expr in exprs:
        stack = [expr]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is Ref:  # (a leaf: its indices are no expressions)
                out.append(node)
                continue
            get = kinds.get(kind)
            if get is not None:
                stack += reversed(get(node))
    return tuple(out)


# ------------------------------------------------------------- statements

EQUATION_OPS = ("=", "+=", "max=", "min=", "avg=")


@frozen_dataclass
class Equation:
    lhs: Ref
    op: str
    op_span: Span
    rhs: Expr
    span: Span


@frozen_dataclass
class Source:
    """`W[i,j] = "w.npy"`: a tensor read from a file (relative to the program)."""

    lhs: Ref
    path: String
    span: Span
    # `source("f.tsv", header=1)`: a relation file's first row is a header (True) or
    # data (False); None: data, reported when it looks like a header
    header: bool | None = None


@frozen_dataclass
class Sink:
    """`"out.npz" = Y[i]`: the value of an expression written to a file."""

    path: String
    rhs: Expr
    span: Span


@frozen_dataclass
class Export:
    names: tuple[Ref, ...]
    span: Span


@frozen_dataclass
class Fact:
    atom: Ref
    span: Span


@frozen_dataclass
class Query:
    atom: Ref
    span: Span


@frozen_dataclass
class AxisDecl:
    name: str
    name_span: Span
    extent: int  # (0 with a padding)
    extent_span: Span  # the extent's, or the padding's word
    span: Span
    # instead of an extent, how windows `x+dx` pad: `valid` (they stay inside their
    # axis: x's extent is the axis' less the window's reach) or `same` (centred)
    padding: str | None = None


@frozen_dataclass
class Initialiser:
    """How a param starts, written after its `=`: a name and its numbers (`zeros`,
    `normal(0.02)`, `uniform(-0.1, 0.1)`); check.initialisers knows the names."""
    name: str
    name_span: Span
    args: tuple[Number, ...]
    span: Span


@frozen_dataclass
class ParamDecl:
    """`param W[f,d] = kaiming, B[f]`: the params it declares and, per param, its
    initialiser (None where none is written)."""
    refs: tuple[Ref, ...]
    span: Span
    inits: tuple[Initialiser | None, ...] = ()


@frozen_dataclass
class TrainDecl:
    """`train Loss`: the scalar tensor whose params training makes small (docs/training.md)."""
    loss: Ref
    span: Span


@frozen_dataclass
class FnDef:
    """`fn name(a[x], b[x,y]) -> out[x] { equations }`: a pure function over indexed
    arguments, inlined at each call before checking (front/functions.py)."""

    name: str
    name_span: Span
    params: tuple[Ref, ...]
    result: Ref
    body: tuple[Equation, ...]
    span: Span


@frozen_dataclass
class Let:
    """`let T[i] = expr`: an equation whose tensor is local to its block (or, at the
    top level, to its file); front/let_blocks.py lowers it before checking."""

    equation: Equation
    let_span: Span  # the word `let`
    span: Span


@frozen_dataclass
class Block:
    """`{ equations }`: equations, `let`s and nested blocks; the `let`s' tensors are
    visible only inside (front/let_blocks.py writes it out as plain equations)."""

    items: tuple["Equation | Let | Block", ...]
    span: Span


@frozen_dataclass
class ImportDecl:
    """`import "lib/graph.fuse" as g`: the file's tensors, relations, params and
    functions as `g::Name`, joined to the program before checking (check/imports.py)."""

    path: String
    alias: str
    alias_span: Span
    span: Span


Statement = Union[Equation, Source, Sink, Export, Fact, Query, AxisDecl, ParamDecl, TrainDecl,
                  FnDef, Let, Block, ImportDecl]


def defined_refs(stmt: Statement) -> tuple[Ref, ...]:
    """The LHS references a statement defines (empty for sinks, queries, ...)."""
    if isinstance(stmt, (Equation, Source)):
        return (stmt.lhs,)
    if isinstance(stmt, Fact):
        return (stmt.atom,)
    if isinstance(stmt, ParamDecl):
        return stmt.refs
    return ()


def used_exprs(stmt: Statement) -> tuple[Expr, ...]:
    """The expressions a statement reads."""
    if isinstance(stmt, Equation):
        return (stmt.rhs,)
    if isinstance(stmt, Sink):
        return (stmt.rhs,)
    if isinstance(stmt, Query):
        return (stmt.atom,)
    if isinstance(stmt, Export):
        return stmt.names
    if isinstance(stmt, TrainDecl):
        return (stmt.loss,)
    return ()


@frozen_dataclass
class Program:
    statements: tuple[Statement, ...]
    text: str


def reads_along(index: Index, name: str) -> bool:
    """`x[..., u, ...]` or `x[..., u+1, ...]`: this position reads along index `u`
    (inside topk's or concat's argument that axis is the argument's own)."""
    if isinstance(index, IndexVar):
        return index.name == name
    return isinstance(index, IndexShift) and len(index.terms) == 1 \
        and index.terms[0].name == name
