"""What a run refuses before it computes, said by the checker as errors, so
that `fuse check` agrees with `fuse run` (docs/diagnostics.md):

- `unsized-tensor`: a tensor the program computes has an axis whose extent
  nothing gives (`X[i] = X[i] + 1`, `Y[i] = 1`): the run cannot make it;
- `unsized-index`: an index of an equation whose extent nothing gives, a
  recurrence's steps (`X[i,*t+1] = ...` without an extent for `t`) or a
  projected index (`Z = reduce(sum, i) 1`);
- `recurrence-write`: a recurrence over `i` (`X[i] = X[i-1] + 1`) with another
  equation of the tensor that writes neither `i` nor a constant position there;
- `virtual-step`: an equation with a virtual index on its left that runs once,
  not at each step, and reads the step: a recurrence's start
  (`X[i,*t] = X[i,*t] + t` beside `X[i,*t+1] = ...`), or a tensor that is no part
  of a recurrence (`A[d,*l] = W[l,d]`); and a tensor that reads itself at the step
  it writes with no equation at `*t+1` (`X[i,*t] = f(X[j,*t])`): it never steps.

An extent a run may be given is no error: a domain holding an axis of a source
or a param takes its extent from the input given for it (`--input`, the API's
inputs), and the run given that input accepts the program.  Nor is an extent
that is unknown because of another error (a domain that reaches a statement
with an error): that error says it.  `recurrence_of` finds the index that
`recurrence-write` is about; how a run reads a group as a recurrence is
check/recurrences.py's (`recurrence_of_group`, which the run plan asks too).
"""
from __future__ import annotations

import bisect
import functools
from itertools import chain
from typing import Iterable, Mapping, Sequence

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Severity, TextEdit, make
from ..front.functions import Inlined
from ..front.relocation import moved_span
from ..front.span import Span
from .domains import Domains
from .recurrences import bad_starts, mentions, recurrence_of_group
from .statements import Local
from .symbols import TensorSymbol


def recurrence_of(statements: Sequence[ir.Statement], name: str,
                  equations: Iterable[int]) -> tuple[str, int, bool] | None:
    """(index, LHS position, virtual) when the tensor `name` is a recurrence over
    one index: a virtual index on the left, or a read of itself one step back
    (`A[t-1]`); None otherwise."""
    for k in equations:
        stmt = statements[k]
        assert isinstance(stmt, ir.Equation)
        for pos, index in enumerate(stmt.lhs.indices or ()):
            if isinstance(index, ir.IndexVirtual):
                return ir.index_vars(index)[0].name, pos, True
        found = _step_back(stmt, name)
        if found is not None:
            return found
    return None


def _step_back(stmt: ir.Equation, name: str) -> tuple[str, int, bool] | None:
    """The first read of `name` in `stmt` one step back along an index of its LHS."""
    lhs = stmt.lhs.indices or ()
    for ref in ir.refs(stmt.rhs):
        if ref.name != name:
            continue
        for pos, index in enumerate(ref.indices or ()):
            if isinstance(index, ir.IndexShift) and len(index.terms) == 1 and index.offset < 0:
                lhs_index = lhs[pos] if pos < len(lhs) else None
                if isinstance(lhs_index, ir.IndexVar) and lhs_index.name == index.terms[0].name:
                    return lhs_index.name, pos, False
    return None


class RunRefusals:
    """The checks of one analysis, over the checker's own tables (the analysis'
    deferred tables are not made for them): `check` appends the errors to
    `diags` and drops the `unknown-extent` warnings they say again."""

    def __init__(self, statements: Sequence[ir.Statement], tensors: Mapping[str, TensorSymbol],
                 domains: Domains, locals_: Mapping[int, Local], placed: Mapping[int, int],
                 deltas: Mapping[int, int], inlined: Inlined | None = None) -> None:
        self.statements = statements
        # statement number -> as written, where `fn` calls were inlined; the functions
        self.written = inlined.written if inlined is not None else {}
        self.functions = inlined.functions if inlined is not None else {}
        self.tensors = tensors
        self.domains = domains
        self.locals = locals_  # statement number -> its Local
        self.placed = placed  # statement number -> how far its Local's spans moved
        self.deltas = deltas  # id of a statement -> how far its spans moved
        self.found: list[Diagnostic] = []
        self.reported: set = set()  # the domains said once already
        self.covered: list[Span] = []  # statements whose unknown-extent warnings are said

    def check(self, groups: Iterable[Sequence[str]], recursive: frozenset[str],
              diags: list[Diagnostic]) -> None:
        errors = [d for d in diags if d.severity is Severity.ERROR]
        if self._some_unknown():
            self.reported = self._given() | self._tainted(errors)
            self._unsized_tensors()
            self._unsized_indices()
        self._recurrence_writes(groups, recursive)
        self._virtual_steps(groups, recursive)
        if self.covered:
            covered = self.covered
            diags[:] = [d for d in diags if d.code != "unknown-extent"
                        or not any(s.start <= d.span.start < s.end for s in covered)]
        # an index of a statement that holds an error, whose extent nothing gives
        # (`A[i,j] = const([[1], [2, 3]])`, the literal refused; `z` of a rule's head
        # bound by nothing): its extent unknown is that error's consequence
        if errors and any(d.code == "unknown-extent" for d in diags):
            broken = self._holding(d.span.start for d in errors)
            diags[:] = [d for d in diags if d.code != "unknown-extent"
                        or not broken & self._holding((d.span.start,))]
        diags.extend(self.found)

    @functools.cached_property
    def _spans(self) -> tuple[list[Span], list[int]]:
        """The statements' spans, as moved, and their starts (in order)."""
        deltas = self.deltas
        spans = [moved_span(stmt.span, deltas.get(id(stmt), 0)) for stmt in self.statements] \
            if deltas else [stmt.span for stmt in self.statements]
        return spans, [span[0] for span in spans]

    def _holding(self, offsets: Iterable[int]) -> set[int]:
        """The numbers of the statements that hold the `offsets` (an empty statement:
        its start)."""
        spans, starts = self._spans
        held: set[int] = set()
        for offset in offsets:  # (one per undefined read in a broken file: tens of thousands)
            k = bisect.bisect_right(starts, offset) - 1
            if k >= 0:
                begin, end = spans[k]
                if offset < end or offset == begin:
                    held.add(k)
        return held

    def _some_unknown(self) -> bool:
        """Whether a domain has no extent, or an index variable no domain (a projected
        index that nothing joins, `reduce(sum, i) 1`): else there is nothing to say."""
        domains = self.domains
        known = domains.parents.__contains__
        variables = chain.from_iterable(local.var_keys for local in self.locals.values())
        return None in domains.root_extents(domains.roots()) or not all(map(known, variables))

    def _span(self, k: int) -> Span:
        stmt = self.statements[k]
        return moved_span(stmt.span, self.deltas.get(id(stmt), 0))

    def _given(self) -> set:
        """The domains of the axes of sources and params: a run may be given those."""
        keys = [("axis", name, pos) for name, sym in self.tensors.items()
                if sym.is_param or sym.source is not None for pos in range(sym.arity or 0)]
        return set(self.domains.roots_of(keys))

    def _tainted(self, errors: list[Diagnostic]) -> set:
        """The domains that reach a statement with an error: its tensors' axes and
        its index variables."""
        if not errors:
            return set()
        broken = self._holding(d.span[0] for d in errors)
        keys: list = []
        for name, sym in self.tensors.items():
            if not broken.isdisjoint(sym.statements):
                keys += [("axis", name, pos) for pos in range(sym.arity or 0)]
        for k in broken:
            local = self.locals.get(k)
            if local is not None:
                keys += local.var_keys
        return set(self.domains.roots_of(keys))

    def _unsized_tensors(self) -> None:
        """Each computed tensor's axes of unknown extent, each domain said once (at
        the first tensor that has it)."""
        tensors = self.tensors
        keys = [("axis", name, pos) for name, sym in tensors.items()
                if not sym.is_param and sym.source is None for pos in range(sym.arity or 0)]
        roots = self.domains.roots_of(keys)
        unsized: dict = {}  # domain -> its tensors and axes, in order
        for at, extent in enumerate(self.domains.root_extents(roots)):
            if extent is None and roots[at] not in self.reported:
                _, name, pos = keys[at]
                if not _virtual(tensors[name], pos):
                    unsized.setdefault(roots[at], []).append((tensors[name], pos))
        for root, places in unsized.items():
            self.reported.add(root)
            sym, pos = places[0]
            label = _label(sym, pos)
            others = list(dict.fromkeys(s.name for s, _ in places[1:] if s.name != sym.name))
            also = f" (nor {', '.join(f'`{n}`' for n in others)}, whose axis is the same)" \
                if others else ""
            axis = f"`{label}`" if label else f"{pos}"
            summed = self._summed_in_call(sym, label) if label else ""
            if summed:  # (declaring it would not give it the argument's values)
                self.found.append(make(
                    "unsized-tensor", f"`{sym.name}`'s axis {axis} has no known extent: "
                    f"{summed}, so a run cannot compute `{sym.name}`{also}", sym.first_span))
            else:
                self.found.append(make(
                    "unsized-tensor", f"`{sym.name}`'s axis {axis} has no known extent: "
                    f"nothing in the program gives it, so a run cannot compute "
                    f"`{sym.name}`{also}" + (f"; declare it with `axis {label} = N`"
                                             if label else ""), sym.first_span,
                    fixes=_declare(label)))
            for s, _ in places:
                self.covered += [self._span(k) for k in s.statements]

    def _summed_in_call(self, sym: TensorSymbol, label: str) -> str:
        """Why `label` has no extent where the tensor's equation names it only in a
        `fn` call's argument (`O[k] = off(A[i,k])`): the call sums it inside, since the
        function's result has no axis for it; "" where it is not so."""
        for k in sym.statements:
            stmt = self.written.get(k)
            if type(stmt) is not ir.Equation:
                continue
            for node in ir.walk(stmt.rhs):
                if type(node) is ir.Call and node.name in self.functions and any(
                        v.name == label for arg in (*node.args, *(w.value for w in node.kwargs))
                        for ref in ir.refs(arg) for index in ref.indices or ()
                        for v in ir.index_vars(index)):
                    return (f"`{label}` is an index of an argument of `{node.name}` only, and "
                            f"the function's result has no axis for it (the call sums it)")
        return ""

    def _unsized_indices(self) -> None:
        """Each equation's index variables of unknown extent, each domain said once
        (every statement's variables asked of the domains at once)."""
        statements = self.statements
        keys: list = []
        ends: list[int] = []  # where each statement's keys end in `keys`
        numbers: list[int] = []  # its statement number
        for k, local in self.locals.items():
            if local.var_keys and type(statements[k]) is ir.Equation:
                keys += local.var_keys
                ends.append(len(keys))
                numbers.append(k)
        roots = self.domains.roots_of(keys)
        reported = self.reported
        for at, extent in enumerate(self.domains.root_extents(roots)):
            if extent is None and roots[at] not in reported:
                reported.add(roots[at])
                j = bisect.bisect_right(ends, at)
                local = self.locals[numbers[j]]
                name = local.role_names[at - (ends[j - 1] if j else 0)]
                self._unsized_index(numbers[j], local, statements[numbers[j]], name)

    def _unsized_index(self, k: int, local: Local, stmt: ir.Equation, name: str) -> None:
        role = next((r for r in local.roles(k, self.placed.get(k, 0)) if r.name == name), None)
        span = role.occurrences[0].span if role is not None and role.occurrences \
            else self._span(k)
        steps = any(isinstance(i, ir.IndexVirtual) and ir.index_vars(i)[0].name == name
                    for i in stmt.lhs.indices or ())
        if name.startswith(":"):  # a slice's axis (`R(1:) = 1`): no name to declare
            self.found.append(make(
                "unsized-index", f"the extent of the axis this slice cuts is not known: "
                f"nothing in the program gives it, so a run cannot compute `{stmt.lhs.name}`; "
                f"give it with a source, a literal or a variable of a declared axis in its "
                f"place", span))
            return
        what = f"the number of steps of `{stmt.lhs.name}`'s recurrence (the extent of " \
               f"`{name}`)" if steps else f"the extent of the index `{name}`"
        self.found.append(make(
            "unsized-index", f"{what} is not known: nothing in the program gives it, so a "
            f"run cannot compute `{stmt.lhs.name}`; declare it with `axis {name} = N`", span,
            fixes=_declare(name)))

    def _recurrence_writes(self, groups: Iterable[Sequence[str]],
                           recursive: frozenset[str]) -> None:
        """A recurrence over an offset index whose other equations write elsewhere."""
        statements = self.statements
        grouped = {name for group in groups if len(group) > 1 for name in group}
        for name in sorted(recursive - grouped):  # the tensors recursive on their own
            sym = self.tensors.get(name)
            if sym is None:
                continue
            equations = [k for k in sym.statements if type(statements[k]) is ir.Equation]
            # (one equation writes the index it reads back along; and without a read of
            # itself shifted, it is no recurrence over an offset index)
            if len(equations) < 2 or not any(self._shifted_read(k, name) for k in equations):
                continue
            found = recurrence_of(statements, name, equations)
            if found is None or found[2]:
                continue
            var, position, _ = found
            for k in equations:
                lhs = statements[k].lhs  # type: ignore[union-attr]
                if position >= len(lhs.indices or ()):
                    continue  # (`X[] = 1` after `X[i] = ...`: an arity mismatch, reported)
                index = lhs.indices[position]
                if (isinstance(index, ir.IndexVar) and index.name == var) or \
                        (isinstance(index, ir.IndexConst) and isinstance(index.value, int)):
                    continue
                self.found.append(make(
                    "recurrence-write", f"`{name}` is a recurrence over `{var}` (it reads "
                    f"itself one step back), so each of its equations writes `{var}` or a "
                    f"constant position there; this one does not, and a run cannot "
                    f"compute `{name}`",
                    moved_span(lhs.span, self.deltas.get(id(statements[k]), 0))))


    def _virtual_steps(self, groups: Iterable[Sequence[str]], recursive: frozenset[str]) -> None:
        """Equations with a virtual index on the left that run once and read the step
        (see the module): a run could not give the step a value."""
        statements = self.statements
        for group in groups:
            if not recursive.isdisjoint(group) or len(group) > 1:
                members = {n: self._equations(n) for n in group}
                recurrence = recurrence_of_group(statements, members)
                if recurrence is not None and recurrence.virtual:
                    for k in bad_starts(statements, members, recurrence):
                        self._virtual_step(k, True)
                elif recurrence is None:
                    self._steps_never(members)
                continue
            sym = self.tensors.get(group[0])
            if sym is None or not any(type(i) is ir.IndexVirtual for i in sym.first.indices or ()):
                continue  # (most tensors: no virtual axis)
            for k in self._equations(group[0]):
                index = _lhs_virtual(statements[k])
                if index is not None and mentions(statements[k],  # type: ignore[arg-type]
                                                  ir.index_vars(index)[0].name):
                    self._virtual_step(k, False)

    def _steps_never(self, members: Mapping[str, list[int]]) -> None:
        """A tensor that reads itself at its own virtual index `*t` with no equation at
        `*t+1` (an RNN's update written `X[i,*t] = f(X[j,*t])`): nothing ever steps, a
        run would chain it to a fixpoint; the update is meant at `*t+1`."""
        statements = self.statements
        for ks in members.values():
            virtual = [(k, _lhs_virtual(statements[k])) for k in ks]
            if not all(index is not None and ir.virtual_shift(index) == 0
                       for _, index in virtual):
                continue
            for k, index in virtual:
                assert index is not None
                var = ir.index_vars(index)[0].name
                if any(ref.name in members and any(
                        type(i) is ir.IndexVirtual and ir.virtual_shift(i) == 0
                        and ir.index_vars(i)[0].name == var for i in ref.indices or ())
                       for ref in ir.refs(statements[k].rhs)):  # type: ignore[union-attr]
                    self._virtual_step(k, None)

    def _equations(self, name: str) -> list[int]:
        sym = self.tensors.get(name)
        statements = self.statements
        return [k for k in sym.statements if type(statements[k]) is ir.Equation] \
            if sym is not None else []

    def _virtual_step(self, k: int, start: bool | None) -> None:
        """`start`: a recurrence's start; False: no part of a recurrence; None: a
        tensor that reads itself at the step it writes (see _steps_never)."""
        stmt = self.statements[k]
        assert isinstance(stmt, ir.Equation)
        index = _lhs_virtual(stmt)
        assert index is not None
        var = ir.index_vars(index)[0].name
        name = stmt.lhs.name
        delta = self.deltas.get(id(stmt), 0)
        fixes: tuple[Fix, ...] = (Fix(f"Write the update at `*{var}+1`", (TextEdit(
            moved_span(index.span, delta), f"*{var}+1"),)),)
        if start is None:
            words = (f"`{name}[..., *{var}]` reads `{name}` at the step it writes, and no "
                     f"equation of `{name}` writes `*{var}+1`: `{var}` never steps, so a run "
                     f"would only chain `{name}` to a fixpoint; write the update at "
                     f"`*{var}+1` (with a start `{name}[..., *{var}] = ...` if it is not 0)")
        elif start:
            words = (f"`{name}[..., *{var}]` is the start of `{name}`'s recurrence over "
                     f"`{var}` (it writes `*{var}`, not `*{var}+1`): it is read once, before "
                     f"the first step, so it cannot read the step (`{var}` or the recurrence's "
                     f"tensors); write the step's update at `*{var}+1`")
        else:
            words = (f"`{name}` is no part of a recurrence (it reads none of a recurrence's "
                     f"tensors at `*{var}`), so it is computed once and cannot read the step "
                     f"`{var}`; read what it reads inside the recurrence's equations, where `{var}` "
                     f"is the current step")
            fixes = ()
        self.found.append(make("virtual-step", words, moved_span(stmt.lhs.span, delta),
                               fixes=fixes))

    def _shifted_read(self, k: int, name: str) -> bool:
        """Whether statement `k` reads `name` at a shifted index (`A[t-1]`)."""
        local = self.locals.get(k)
        return local is None or any(
            ref.name == name and any(type(i) is ir.IndexShift for i in ref.indices or ())
            for ref in local.refs)


def _lhs_virtual(stmt: ir.Statement) -> ir.IndexVirtual | None:
    """The virtual index on an equation's left, if any."""
    for index in stmt.lhs.indices or ():  # type: ignore[union-attr]
        if type(index) is ir.IndexVirtual:
            return index
    return None


def _virtual(sym: TensorSymbol, pos: int) -> bool:
    first = sym.first.indices or ()
    return pos < len(first) and type(first[pos]) is ir.IndexVirtual


def _label(sym: TensorSymbol, pos: int) -> str:
    """The axis' index name in the tensor's first definition ("" when not a name)."""
    first = sym.first.indices or ()
    index = first[pos] if pos < len(first) else None
    return index.name if type(index) is ir.IndexVar else ""


def _declare(name: str) -> tuple[Fix, ...]:
    if not name:
        return ()
    return (Fix(f"Declare `axis {name}`", (TextEdit(Span(0, 0), f"axis {name} = 1\n"),)),)
