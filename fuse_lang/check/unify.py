"""Unification: each statement's part of it compiled once into named operations
on the domains (`statement_ops`, kept with the statement's other results so an
unchanged statement is not compiled again), then replayed in statement order
(`Unification.run`), followed by what only the whole program gives: declared
axes, source files, derived extents (pooling, slices, concat), and the checks
of positions and symbols against the extents found."""
from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator
from functools import partial
from typing import NamedTuple, Union as TypeUnion

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from ..front.numbers import short_number
from ..front.span import Span, shifted
from ..io.source_files import SourceInfo
from .compared_constants import bound_symbols
from .conflicts import Placed, report_conflicts
from .derived_extents import (
    ConcatSum,
    Derived,
    DerivedExtents,
    Inner,
    Pool,
    SliceRest,
    TopkCount,
    Valued,
)
from .domains import MAX_EXTENT, Domains, Evidence
from .literals import bound_shape, is_whole, literal_shape
from .recurrences import stored_positions
from .symbols import IndexRole, TensorSymbol, slice_name


# ----------------------------------------------------------- operations
class Vars(NamedTuple):
    """A reference whose indices are all plain variables (most): each meets its axis."""

    tensor: str
    keys: tuple  # each position's variable key ("var", stamp, name)


class Guard(NamedTuple):
    """Any other reference's operations: they apply if it fits its tensor."""

    tensor: str
    arity: int
    ops: tuple  # of Union, SetExtent, Symbol, Position and derived operations


class Union(NamedTuple):
    axis: tuple
    var: tuple


class SetExtent(NamedTuple):
    key: tuple
    evidence: Evidence


class Symbol(NamedTuple):
    """A value a fact or a head puts in its column: a symbol, a string or a number."""

    axis: tuple
    value: int | str
    span: Span


class Position(NamedTuple):
    axis: tuple
    value: int
    span: Span


class ComparedSymbol(NamedTuple):
    """`v == Ann` in a rule whose atoms do not bind `v`: Ann is a value of v's
    column (Soufflé's `v = "Ann"` grounds v), unless a bare `Ann` names a tensor,
    which the replay knows and a statement's own operations do not."""

    var: tuple
    value: str
    span: Span
    bare: bool


Op = TypeUnion[Vars, Guard, Union, SetExtent, Symbol, Position, ComparedSymbol, Inner, Pool,
               SliceRest, ConcatSum, Valued, TopkCount]

# the hottest are made from a tuple of their fields, skipping the named tuple's __new__
_new_vars = partial(tuple.__new__, Vars)
_new_union = partial(tuple.__new__, Union)

# shaping builtins: those whose result's axes are not their argument's, each with
# operations of its own (made by _concat_axes and _builtin_extents)
_SHAPING = frozenset({"concat", "topk", "const", "causal_mask"})


def union_links(statement_ops: list[tuple[Op, ...]], valid: Container[str] = ()
                ) -> Iterator[tuple[tuple, tuple]]:
    """Each (axis key, variable key) the operations unify, or may (an index only
    inside `x+dx` or `x/2`, but for a window over an index declared `valid` in
    `valid`, which never takes its axis' extent): the paths of check/conflicts.py."""
    for ops in statement_ops:
        for op in ops:
            if type(op) is Vars:
                for pos, key in enumerate(op.keys):
                    yield ("axis", op.tensor, pos), key
            elif type(op) is Guard:
                for sub in op.ops:
                    if type(sub) is Union:
                        yield sub.axis, sub.var
                    elif type(sub) is Inner and not (sub.others and sub.var[2] in valid):
                        yield sub.axis, sub.var


def moved_ops(ops: tuple[Op, ...], delta: int) -> tuple[Op, ...]:
    """`ops` of a statement moved by `delta` characters (Vars and Union hold no span)."""
    for op in ops:  # most statements' are all Vars: nothing to move
        if type(op) is not Vars:
            break
    else:
        return ops
    return tuple([op if type(op) is Vars else
                  Guard(op.tensor, op.arity, tuple([sub if type(sub) is Union else
                                                    shifted(sub, delta) for sub in op.ops]))
                  if type(op) is Guard else shifted(op, delta) for op in ops])


# ------------------------------------------------------------ compiling
def statement_ops(k: int, stmt: ir.Statement, refs: list[ir.Ref], calls: list[ir.Call],
                  var_keys: dict[str, tuple]) -> tuple[Op, ...]:
    """A statement's part of unification as operations on the domains, from its
    references and calls (each in the order of its nodes).  `var_keys` holds the
    key of each of its roles' variables and gets that of any other variable met:
    each variable has one key object, shared.  `k` is the statement's stamp (its
    Local's): unique among a program's statements, it is in every key made here,
    and is kept when the statement moves or is renumbered."""
    ops: list[Op] = []
    shaping = False  # a call that has operations of its own: most have none
    valued = False
    for call in calls:
        if call.name in _SHAPING:
            shaping = True
        elif call.name in COMPARISONS:
            valued = True
    arithmetic = (ir.IndexShift, ir.IndexDiv)
    if type(stmt) is ir.Equation and stmt.lhs.paren and any(
            type(index) in arithmetic for index in stmt.lhs.indices or ()):
        valued = True
    elif any(ref.paren and any(type(index) in arithmetic for index in ref.indices or ())
             for ref in refs):
        valued = True  # `E(x + 1, y)`, `E(x / 2)`: arithmetic over a column, of values maybe
    if valued:
        ops.append(Valued(k))
    concat = _concat_axes(k, stmt, calls, ops) if shaping else {}
    IndexVar = ir.IndexVar
    defined = (stmt.lhs,) if type(stmt) is ir.Equation else ir.defined_refs(stmt)
    for lhs, group in ((True, defined), (False, refs)):
        for ref in group:
            indices = ref.indices
            if indices is None:
                continue
            if not concat:
                keys = []
                for index in indices:
                    if type(index) is not IndexVar:
                        break
                    key = var_keys.get(index.name)
                    if key is None:
                        key = var_keys[index.name] = ("var", k, index.name)
                    keys.append(key)
                else:  # plain variables only (most references)
                    ops.append(_new_vars((ref.name, tuple(keys))))
                    continue
            ops.append(_ref_ops(k, ref, lhs, concat))
    if shaping:
        _builtin_extents(k, stmt, calls, ops)
    if valued and type(stmt) is ir.Equation and stmt.lhs.paren:
        ops += _compared_symbols(k, stmt, calls)
    return tuple(ops)


def _compared_symbols(k: int, stmt: ir.Equation, calls: list[ir.Call]) -> list[Op]:
    """A rule's `v == Ann` binding v (check.compared_constants.bound_symbols),
    guarded by its head: the constant is a value of v's column."""
    found = tuple([ComparedSymbol(("var", k, name), value, span, bare)
                   for name, value, span, bare in bound_symbols(stmt, calls)])
    return [Guard(stmt.lhs.name, stmt.lhs.arity, found)] if found else []


def _ref_ops(k: int, ref: ir.Ref, lhs: bool, concat: dict) -> Guard:
    """One reference's operations, guarded: they apply if it fits its tensor."""
    ops: list[Op] = []
    slice_no = 0
    for pos, index in enumerate(ref.indices):
        axis = ("axis", ref.name, pos)
        if type(index) is ir.IndexVar:  # most indices
            var = ("var", k, index.name)
            ops.append(_new_union((axis, concat.get((id(ref), pos), var) if concat else var)))
            continue
        if isinstance(index, ir.IndexVirtual):
            index = index.inner
        if isinstance(index, ir.IndexVar):
            ops.append(Union(axis, concat.get((id(ref), pos), ("var", k, index.name))))
        elif isinstance(index, ir.IndexShift):
            if len(index.terms) == 1:
                ops.append(Union(axis, concat.get((id(ref), pos),
                                                  ("var", k, index.terms[0].name))))
            else:
                keys = [("var", k, var.name) for var in index.terms]
                ops += [Inner(key, axis, tuple(o for o in keys if o is not key), index.span)
                        for key in keys]
        elif isinstance(index, ir.IndexDiv):
            var = ("var", k, index.var.name)
            ops.append(Pool(axis, var, index.divisor, index.span) if lhs else Inner(var, axis))
        elif isinstance(index, ir.IndexConst):
            if type(index.value) is int and not ref.paren:  # `X[0]`: a position, unless
                ops.append(Position(axis, index.value, index.span))  # the domain holds values
            elif lhs:  # a fact's or a head's constant: a value its column holds
                ops.append(Symbol(axis, index.value, index.span))
            # a constant a body or a query reads is looked up (check.constants)
        elif isinstance(index, ir.IndexSlice):
            var = ("var", k, slice_name(slice_no))
            var = concat.get((id(ref), pos), var) if concat else var  # topk's own row
            slice_no += 1
            ops += _slice_ops(axis, var, index)
    return Guard(ref.name, ref.arity, tuple(ops))


def _slice_ops(axis: tuple, var: tuple, index: ir.IndexSlice) -> list[Op]:
    start, stop = index.start, index.stop
    ops: list[Op] = []
    if start is None and stop is None:
        ops.append(Union(axis, var))
    elif start is not None and stop is not None:
        ops.append(SetExtent(var, Evidence(stop - start, index.span,
                                           f"the slice {start}:{stop}")))
    else:
        ops.append(SliceRest(var, axis, start, stop, index.span))
    if stop is not None:
        ops.append(Position(axis, stop - 1, index.span))
    return ops


def _concat_axes(k: int, stmt: ir.Statement, calls: list[ir.Call], ops: list[Op]
                 ) -> dict[tuple[int, int], tuple]:
    """In `concat(a, b, axis=n)` each argument's n-axis is its own domain;
    the left-hand side's n is their sum (resolved in check/derived_extents.py).
    Likewise in `topk(x, k=K)` the argument's axis along the last LHS index
    is its own domain, and that LHS index has extent K.  (_SHAPING names them.)"""
    out: dict[tuple[int, int], tuple] = {}
    for node in calls:
        if node.name == "topk":
            _topk_axis(k, stmt, node, out, ops)
        if node.name != "concat":
            continue
        axis = next((kw.value.name for kw in node.kwargs if kw.name == "axis"
                     and isinstance(kw.value, ir.Ref) and kw.value.indices is None), None)
        if axis is None:
            continue
        parts = []
        for arg_no, arg in enumerate(node.args):
            key = ("concat", k, node.span.start, arg_no)
            parts.append(key)
            for ref in ir.refs(arg):
                for pos in ir.read_along(ref.indices or (), axis):
                    out[(id(ref), pos)] = key
        ops.append(ConcatSum(("var", k, axis), tuple(parts), node.span))
    return out


def _topk_axis(k: int, stmt: ir.Statement, call: ir.Call, out: dict, ops: list[Op]) -> None:
    if not isinstance(stmt, ir.Equation) or not stmt.lhs.indices or not call.args:
        return
    names = ir.lhs_axis_names(stmt.lhs.indices)  # a slice's too: `Y[i,:] = topk(X[i,:], k=2)`
    count = next((kw.value for kw in call.kwargs if kw.name == "k"), None)
    if not names or count is None or not is_whole(count):
        return
    axis = names[-1]
    key = ("topk", k, call.span.start)
    for ref in ir.refs(call.args[0]):
        for pos in ir.read_along(ref.indices or (), axis):
            out[(id(ref), pos)] = key
    extent = int(count.text)  # type: ignore[union-attr]  # (exact, where its float is not)
    ops.append(TopkCount(("var", k, axis), key, extent, count.span))


def _builtin_extents(k: int, stmt: ir.Statement, calls: list[ir.Call], ops: list[Op]) -> None:
    """The extents `const` and `causal_mask` give (_SHAPING names them)."""
    if not isinstance(stmt, ir.Equation):
        return
    lhs_indices = stmt.lhs.indices or ()
    # inside topk's or concat's argument an axis keeps its own extent (not the LHS's)
    own_axes = {id(n) for node in calls if node.name in ("topk", "concat")
                for n in ir.walk(node) if n is not node}
    for node in calls:
        if not node.args or id(node) in own_axes:
            continue
        if node.name == "const" and node is stmt.rhs:
            shape = literal_shape(node.args[0])
            if shape is None:
                continue
            for pos, extent in enumerate(shape):
                if pos < len(lhs_indices) and type(lhs_indices[pos]) is ir.IndexConst:
                    continue  # `W[0,h] = const([[...]])`: that axis is the one position 0
                ops.append(SetExtent(("axis", stmt.lhs.name, pos), Evidence(
                    extent, node.args[0].span, "this literal")))
        elif node.name == "const":
            _inner_literal_extents(k, lhs_indices, node, ops)
        elif node.name == "causal_mask" and is_whole(node.args[0]):
            n = int(node.args[0].text)  # type: ignore[union-attr]
            for name in ir.lhs_axis_names(lhs_indices)[-2:]:  # a slice's too: `M[:,:]`
                ops.append(SetExtent(("var", k, name), Evidence(
                    n, node.span, f"causal_mask({short_number(n)})")))


def _inner_literal_extents(k: int, lhs_indices: tuple, node: ir.Call, ops: list[Op]) -> None:
    """A `const(...)` inside the right-hand side (`D[i] = A[i] + const([1,2])`) binds
    its axes to the LHS's axes in order, as the run binds them
    (run.interpret.builtin_calls): each gives that variable its extent, so a
    literal whose length differs from the axis is an `extent-conflict` here, not a
    broadcasting failure of the run."""
    shape = literal_shape(node.args[0])
    if not shape:
        return
    shape = bound_shape(lhs_indices, shape)
    names = ir.lhs_axis_names(lhs_indices)[:len(shape)]
    if len(names) != len(shape):
        return
    for name, extent in zip(names, shape):
        ops.append(SetExtent(("var", k, name), Evidence(extent, node.args[0].span,
                                                        "this literal")))


# ------------------------------------------------------------ replaying
class Unification:
    """The whole program's unification on `domains`: its diagnostics go to `diags`."""

    def __init__(self, domains: Domains, tensors: dict[str, TensorSymbol],
                 diags: list[Diagnostic], positions: Container[str] | None = None) -> None:
        """`positions`: the windows' positions (derived_extents.window_positions), where
        `axis x = valid` applies (None: any window index)."""
        self.positions = positions
        self.domains = domains
        self.tensors = tensors
        self.diags = diags
        self.derived: list[Derived] = []  # extents computed once the domains are known
        self.valued: list[int] = []  # the stamps of statements that compare or compute values
        self.valid: set[str] = set()  # `axis x = valid`: windows over x stay inside
        # id of an `axis` declaration's extent -> the name it gives every variable of,
        # and the extent (kept: an id is only an object's while it lives)
        self.declared: dict[int, tuple[str, Evidence]] = {}
        self.compared: list[ComparedSymbol] = []  # `v == Ann` binding v: applied last

    def run(self, statement_ops: list[tuple[Op, ...]],
            variables: Iterable[tuple[tuple[str, ...], tuple[tuple, ...]]],
            axis_decls: dict[str, ir.AxisDecl], source_info: dict[str, SourceInfo]) -> None:
        """Replays each statement's operations, in order (the same operations in the
        same order as walking the IR would give), then what the whole program gives."""
        self._replay(statement_ops)
        self._apply_axis_decls(variables, axis_decls)
        self._unify_sources(source_info)  # after the statements: facts' symbols first
        for op in self.compared:  # then `v == Ann`'s: a symbol a file holds keeps its place
            self.domains.add_symbol(op.var, op.value, op.span)
        self.valued = DerivedExtents(self.domains, self.valid, self.diags).resolve(self.derived)
        self.domains.fix_positions()
        self._check_positions()

    def _replay(self, statement_ops: list[tuple[Op, ...]]) -> None:
        d = self.domains
        tensors = self.tensors
        axis_keys: dict[str, tuple] = {}  # tensor -> its axes' keys (shared: no copies)
        for name, sym in tensors.items():
            axis_keys[name] = tuple([("axis", name, pos) for pos in range(sym.arity or 0)])
        d.add([key for keys in axis_keys.values() for key in keys])
        derived = self.derived
        set_extent, union = d.set_extent, d.union
        # A reference's axes meet the variables written at them: `union(axis, var)`
        # for each, its common cases done here without a call (a call per reference
        # was a fifth of the replay): the axis is a root or a root's child, and the
        # variable is new or already in the axis' domain.
        parent = d.parents
        parent_of = parent.get
        Vars_, Guard_, SetExtent_ = Vars, Guard, SetExtent  # (local names: faster)
        for ops in statement_ops:
            for op in ops:
                kind = type(op)
                if kind is Vars_:
                    name, keys = op
                    axes = axis_keys.get(name)
                    if axes is None:  # (not a tensor)
                        continue
                    if len(keys) != len(axes):
                        if tensors[name].arity is not None:
                            continue
                        # a tensor of unknown rank: its axes are keys made here
                        axes = tuple([("axis", name, pos) for pos in range(len(keys))])
                    for axis, var in zip(axes, keys):
                        root = parent_of(axis)
                        if root is not None and parent[root] == root:
                            other = parent_of(var)
                            if other is None:
                                parent[var] = root
                                continue
                            if other == root or parent[other] == root:
                                continue
                        union(axis, var)
                elif kind is Guard_:
                    name, arity, guarded = op
                    sym = tensors.get(name)
                    if sym is None or (sym.arity is not None and arity != sym.arity):
                        continue
                    self._apply(guarded)
                elif kind is SetExtent_:
                    set_extent(*op)
                else:
                    derived.append(op)

    def _apply(self, ops: tuple[Op, ...]) -> None:
        """One fitting reference's operations (each one's fields are the arguments
        of its Domains method)."""
        d = self.domains
        for op in ops:
            kind = type(op)
            if kind is Union:
                d.union(*op)
            elif kind is SetExtent:
                d.set_extent(*op)
            elif kind is Symbol:
                d.add_symbol(*op)
            elif kind is Position:
                d.add_position(*op)
            elif kind is ComparedSymbol:
                if not (op.bare and op.value in self.tensors):
                    self.compared.append(op)
            else:
                self.derived.append(op)

    def _apply_axis_decls(self, variables: Iterable[tuple[tuple[str, ...], tuple[tuple, ...]]],
                          axis_decls: dict[str, ir.AxisDecl]) -> None:
        """`variables`: each statement's index variables' names and domain keys, in order."""
        valid = {name for name, decl in axis_decls.items() if decl.padding == "valid"}
        # (`axis dx = valid` on a window's tap is `padding-index`, and pads nothing)
        self.valid = valid if self.positions is None else \
            {name for name in valid if name in self.positions}
        if len(valid) == len(axis_decls):
            return
        # one Evidence per declaration, shared by every variable it gives an extent
        evidence = {name: Evidence(decl.extent, decl.extent_span,
                                   # (an imported file's `f@m` as the file writes it)
                                   f"axis {decl.name.split('@')[0]} = "
                                   f"{short_number(decl.extent)}")
                    for name, decl in axis_decls.items() if decl.padding is None}
        declared = evidence.keys()
        self.declared = {id(given): (name, given) for name, given in evidence.items()}
        set_extent = self.domains.set_extent
        for names, keys in variables:
            if declared.isdisjoint(names):
                continue
            for name, key in zip(names, keys):
                given = evidence.get(name)
                if given is not None:
                    set_extent(key, given)

    def _unify_sources(self, source_info: dict[str, SourceInfo]) -> None:
        d = self.domains
        for name, info in source_info.items():
            sym = self.tensors[name]
            src = sym.source
            assert src is not None
            span = src.path.span
            # a .txt token file reads as a relation also on a `[ ]` tensor (a 0/1
            # position × token matrix, the seed DSL's spelling): its tokens are symbols
            if info.columns is not None and (sym.boolean or src.path.value.endswith(".txt")):
                tokens = src.path.value.endswith(".txt")
                for pos, value in info.first_seen:  # a token file's positions: the largest
                    if tokens and pos == 0:
                        d.add_position(("axis", name, pos), value, span)  # type: ignore[arg-type]
                d.add_symbols(((("axis", name, pos), value) for pos, value in info.first_seen
                               if not (tokens and pos == 0)), span)  # row by row
                if info.ranked_symbols is not None:  # a file read whole: its columns at once
                    d.add_ranked_symbols([(pos, ("axis", name, pos))
                                          for pos in info.ranked_symbols.columns],
                                         info.ranked_symbols, span)
                if info.shape and len(info.shape) == 2 and src.path.value.endswith(".txt"):
                    d.set_extent(("axis", name, 0), Evidence(info.shape[0], span,
                                                             f"the tokens of {src.path.value}"))
            elif info.shape is not None:  # (a virtual axis is not in the file)
                stored = stored_positions(sym.first) if sym.first.indices is not None \
                    else range(len(info.shape))
                for pos, extent in zip(stored, info.shape):
                    d.set_extent(("axis", name, pos),
                                 Evidence(extent, span, f"the shape of {src.path.value}"))

    def _check_positions(self) -> None:
        """Integer constants and symbols beyond a known extent, and extents too large."""
        d = self.domains
        too_large: set[Span] = set()  # each place once, however many domains it gives
        for root in d.roots():
            evidence = d.evidence(root)
            if evidence is None:
                biggest = d.max_position(root)
                if biggest is not None and biggest[0] >= MAX_EXTENT:
                    self._too_large(biggest[0] + 1, biggest[1],
                                    f"position {short_number(biggest[0])}", too_large)
                continue
            if evidence.extent > MAX_EXTENT:
                self._too_large(evidence.extent, evidence.span, evidence.what, too_large)
            extent = short_number(evidence.extent)
            because = Related(evidence.span, f"extent {extent} from {evidence.what}")
            biggest = d.max_position(root)
            if biggest is not None and biggest[0] >= evidence.extent:
                for position, span in _beyond(d, root, evidence.extent, biggest):
                    self.diags.append(make(
                        "extent-conflict", f"position {short_number(position)} is outside an "
                        f"axis of extent {extent}", span, related=(because,)))
            for position, span in _negative(d, root):
                self.diags.append(make(
                    "extent-conflict", f"position {short_number(position)} is outside an "
                    f"axis of extent {extent}: the extent is fixed, so its integers are "
                    f"positions from 0", span, related=(because,)))
            symbols = d.symbol_spans(root)
            if len(symbols) > evidence.extent:
                extra, span = list(symbols.items())[evidence.extent]
                self.diags.append(make(
                    "extent-conflict", f"`{extra}` is value number {evidence.extent + 1} "
                    f"of a domain of extent {extent}: this column shares its values with an "
                    f"axis of extent {extent}, and cannot hold more symbols than that", span,
                    related=(because,)))
        for _name, given in self.declared.values():  # a declaration no index uses too
            if given.extent > MAX_EXTENT:
                self._too_large(given.extent, given.span, given.what, too_large)

    def _too_large(self, extent: int, span: Span, what: str, seen: set[Span]) -> None:
        if span not in seen:
            seen.add(span)
            self.diags.append(make(
                "extent-too-large", f"extent {short_number(extent)} from {what} is larger than "
                f"the largest extent Fuse handles, 2^{MAX_EXTENT.bit_length() - 1}", span))

    def check_extents(self, broadcast: list[tuple[tuple, IndexRole]],
                      statement_ops: list[tuple[Op, ...]],
                      placed: Callable[[int], Placed | None], size: int) -> None:
        """Extent conflicts, one error per root cause at the equation where the
        uses meet (check/conflicts.py), and left-hand-side-only indices
        (`broadcast`: domain key, role) whose extent nothing gives.
        `statement_ops`: what was replayed; `placed`: a statement by its stamp;
        `size`: the program text's length (an imported file's statements lie past it)."""
        if self.domains.conflicts:
            report_conflicts(self.domains.conflicts, self.domains,
                             lambda: union_links(statement_ops, self.valid), placed,
                             self.declared,
                             self.diags, size)
        for key, role in broadcast:
            if self.domains.extent(key) is None:
                occ = role.occurrences[0]
                self.diags.append(make(
                    "unknown-extent", f"`{role.name}` appears on the left only, and nothing "
                    f"gives its extent; declare it with `axis {role.name} = N`", occ.span,
                    fixes=(Fix(f"Declare `axis {role.name}`", (TextEdit(
                        Span(0, 0), f"axis {role.name} = 1\n"),)),)))


def _negative(d: Domains, root: object) -> list[tuple[int, Span]]:
    """Each negative integer of a fact or a relation file on the positional domain
    `root` (Domains.fix_positions), once per place, in the order of the text."""
    if not d.negative:
        return []
    places = {span: position for key, position, span in d.negative if d.find(key) == root}
    return [(position, span) for span, position in sorted(places.items())]


def _beyond(d: Domains, root: object, extent: int, biggest: tuple[int, Span]
            ) -> list[tuple[int, Span]]:
    """Each position of the domain `root` at `extent` or past it, once per place, in
    the order of the text (`biggest`, the largest, among them)."""
    places = {span: position for key, position, span in d.placed
              if position >= extent and d.find(key) == root}
    places.setdefault(biggest[1], biggest[0])
    return [(position, span) for span, position in sorted(places.items())]
