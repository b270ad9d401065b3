"""Per-statement checks: each statement's references, indices and calls against
the program's tensors, and its part of unification compiled (see unify.py).

What depends only on the statement itself (and on which of its bare names are
tensors) is a `Local`, reused from the last analysis while the statement is
unchanged (or only moved); the rest is checked again on every analysis."""
from __future__ import annotations

import itertools
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..front import ir
from ..front.diagnostics import Diagnostic
from ..front.span import Span, shifted
from ..io.sink_paths import sink_diagnostic
from .calls import check_call, check_reduce
from .conflicts import Placed
from .literals import misplaced_list, number_overflow
from .multiplied_terms import check_multiplied_terms
from .projections import broadcast_and_lonely, check_typos
from .reference_checks import ReferenceChecks, check_lhs, check_lhs_indices
from .statement_tables import statement_tables
from .symbols import IndexRole, Scope, TensorSymbol
from .unify import Op, moved_ops, statement_ops

_tuple_new = tuple.__new__  # a Span without a Python frame (see span.shifted)
_stamps = itertools.count()  # each new Local's own number, in its domain keys


@dataclass(slots=True)
class Local:
    """What checking one statement found that depends on nothing else than the
    statement (the same object: same text, same place) and which of its bare
    names are tensors (`known`, for the names in `bare`).  Kept from one analysis
    to the next while the statement is unchanged, moved or renumbered: its spans
    stay where they were found (`made_*`, numbered `made_k`), and each analysis
    reads them moved by how far the statement has moved since (`placed`, see
    StatementChecks.check) and numbered as it now is.

    Its index roles and scopes are made when first read (`roles`, `scopes`), as
    only their names are needed to check the program; the editor's requests read
    a few statements' only."""

    # One per statement of a program, kept for the whole analysis (and the next
    # one): tuples, () when empty, and nothing that is only needed while checking.
    stmt: ir.Statement
    bare: tuple[str, ...]
    known: tuple[bool, ...]
    refs: tuple[ir.Ref, ...]  # its references in the order of its nodes: StatementChecks.check
    lhs_diags: tuple[Diagnostic, ...]
    node_diags: tuple[tuple[int, Diagnostic], ...]  # (how many of refs come before, diagnostic)
    late_diags: tuple[Diagnostic, ...]
    broadcast: tuple[IndexRole, ...]
    unify_ops: tuple[Op, ...]  # its part of unification (see unify.statement_ops)
    # each role's name and domain key ("var", stamp, name): the stamp is the Local's
    # own, kept when the statement moves or is renumbered (no key is made again)
    role_names: tuple[str, ...]
    var_keys: tuple[tuple, ...]
    made_roles: tuple[IndexRole, ...]
    made_scopes: dict[int, Scope]
    made_k: int
    # how far `stmt`'s own spans are from where they were when the Local was made
    # (0 unless `stmt` is a copy of the statement it was made from, moved)
    own: int
    # the last roles, scopes and operations read, with the number and placement they
    # are for (one tuple each: a thread reading an older analysis sees a whole one)
    _roles: tuple | None = None
    _scopes: tuple | None = None
    _ops: tuple | None = None
    # what later whole-program checks found of this statement alone (see
    # StatementChecks.remembered): check name -> (what, how far from made it is)
    found: dict[str, tuple[tuple, int]] | None = None

    def roles(self, k: int, placed: int) -> tuple[IndexRole, ...]:
        """Its index roles for statement number `k`, spans moved by `placed`."""
        cached = self._roles
        if cached is not None and cached[0] == k and cached[1] == placed:
            return cached[2]
        roles = shifted(self.made_roles, placed) if placed else self.made_roles
        if k != self.made_k:
            roles = tuple([role._replace(statement=k) for role in roles])
        self._roles = (k, placed, roles)
        return roles

    def scopes(self, placed: int) -> dict[int, Scope]:
        cached = self._scopes
        if cached is not None and cached[0] == placed:
            return cached[1]
        scopes = shifted(self.made_scopes, placed) if placed else self.made_scopes
        self._scopes = (placed, scopes)
        return scopes

    def ops(self, placed: int) -> tuple[Op, ...]:
        """Its part of unification, spans moved by `placed`."""
        if not placed:
            return self.unify_ops
        cached = self._ops
        if cached is not None and cached[0] == placed:
            return cached[1]
        ops = moved_ops(self.unify_ops, placed)
        self._ops = (placed, ops)
        return ops


class StatementTable(Mapping):
    """Statement number -> one of its Local's tables (`roles` or `scopes`), made
    when read: Analysis.roles and Analysis.scopes.  Equal to the dict of them.
    `placed`: how far each statement's spans moved (none: not there)."""

    __slots__ = ("_locals", "_placed", "_field")

    def __init__(self, locals_: dict[int, Local], placed: dict[int, int], field: str) -> None:
        self._locals = locals_
        self._placed = placed
        self._field = field

    def __getitem__(self, k: int) -> Any:
        local = self._locals[k]
        if self._field == "roles":
            return local.roles(k, self._placed.get(k, 0))
        return local.scopes(self._placed.get(k, 0))

    def __iter__(self) -> Iterator[int]:
        return iter(self._locals)

    def __len__(self) -> int:
        return len(self._locals)

    def __contains__(self, k: object) -> bool:
        return k in self._locals

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class StatementChecks:
    """Checks the statements of one program in order, against its `tensors`;
    diagnostics go to `diags`.  `cache` holds the last analysis' Locals (by the
    id of their statement), `moved` the statements that only moved (see
    ParseCache); with `remember`, `cache_used` gets this analysis' Locals."""

    def __init__(self, tensors: dict[str, TensorSymbol], diags: list[Diagnostic],
                 cache: dict[int, Local], moved: dict[int, tuple[ir.Statement, ir.Statement, int]],
                 remember: bool, deltas: dict[int, int] | None = None) -> None:
        self.tensors = tensors
        self.diags = diags
        self.cache = cache
        self.moved = moved
        self.deltas = deltas or {}  # reused equations where they were (front/relocation.py)
        self.remember = remember
        self.cache_used: dict[int, Local] = {}
        self.by_number: dict[int, Local] = {}  # statement number -> its Local, in order
        # statement number -> how far its Local's spans are from where the text has
        # them now (absent: not at all; see Local)
        self.placed: dict[int, int] = {}
        self._taken: set[int] = set()  # ids of the last analysis' Locals reused
        self.reused = 0  # how many statements' Locals were reused (moved or not)
        self.deps: dict[str, list[str]] = {}  # tensor -> the tensors it reads (repeats)
        self.read: set[str] = set()
        self.exports: list[str] = []
        self.broadcast: list[tuple[tuple, IndexRole]] = []  # see Unification.check_extents
        self._virtual_first: dict[str, bool] = {}  # tensor -> has its first definition *t
        self.references = ReferenceChecks(tensors, diags, self.read)
        self._by_stamp: dict[int, Placed] | None = None

    def tables(self) -> tuple[Mapping[int, tuple[IndexRole, ...]], Mapping[int, dict[int, Scope]]]:
        """Statement number -> its index roles, and -> its projection scopes
        (Analysis.roles and .scopes).  With `remember` (an editor's Analyzer) each
        statement's are made when first read (see Local); else, plain dicts."""
        if self.remember:
            return (StatementTable(self.by_number, self.placed, "roles"),
                    StatementTable(self.by_number, self.placed, "scopes"))
        by_number = self.by_number  # (a one-off analysis: nothing moved)
        return ({k: local.roles(k, 0) for k, local in by_number.items()},
                {k: local.scopes(0) for k, local in by_number.items()})

    def placed_ops(self) -> list[tuple[Op, ...]]:
        """Each statement's part of unification, in order, where the text has it."""
        placed = self.placed
        if not placed:
            return [local.unify_ops for local in self.by_number.values()]
        out = []
        for k, local in self.by_number.items():
            at = placed.get(k, 0)
            cached = local._ops  # (Local.ops without a call: what most find after a move)
            out.append(local.unify_ops if not at else cached[1]
                       if cached is not None and cached[0] == at else local.ops(at))
        return out

    def placed_by_stamp(self, stamp: int) -> Placed | None:
        """The statement whose variables' keys hold `stamp`, where the text has it
        (check/conflicts.py); the table is made on the first call."""
        if self._by_stamp is None:  # (`placed` is from the Local's first spans; a moved
            # copy's `stmt` is `own` from them already)
            self._by_stamp = {local.var_keys[0][1]: Placed(
                local.stmt, self.placed.get(k, 0) - local.own, k)
                for k, local in self.by_number.items() if local.var_keys}
        return self._by_stamp.get(stamp)

    def refs_of(self, k: int, stmt: ir.Statement) -> tuple[ir.Ref, ...] | None:
        """The references statement `k` reads, in the order of its nodes (as
        `ir.refs` of what it reads gives them), if it is `stmt` (None: not known)."""
        local = self.by_number.get(k)
        return local.refs if local is not None and local.stmt is stmt else None

    def _checked_apart(self, stmt: ir.Statement) -> bool:
        """Check `stmt` if it is one of the statements without a Local (an axis
        declaration, a `train`, an `export`); whether it was."""
        if isinstance(stmt, ir.AxisDecl):
            return True
        if isinstance(stmt, ir.TrainDecl):  # the loss counts as read (check/loss.py)
            self.read.add(stmt.loss.name)
            self.references.tensor_name(stmt.loss, allow_bare=True, delta=0)
            return True
        if isinstance(stmt, ir.Export):
            for name in stmt.names:
                self.exports.append(name.name)
                self.references.tensor_name(name, allow_bare=True, delta=0)
            return True
        return False

    def check(self, k: int, stmt: ir.Statement) -> None:
        if type(stmt) is not ir.Equation and self._checked_apart(stmt):  # (most are equations)
            return
        delta = self.deltas.get(id(stmt), 0)  # how far its spans are from its place
        local = self.cache.get(id(stmt))
        if local is not None and local.stmt is stmt and not local.bare \
                and id(local) not in self._taken:  # (_local's most common case, inline)
            self._taken.add(id(local))
            self.cache_used[id(stmt)] = local
            self.reused += 1
        else:
            local = self._local(k, stmt)
        self.by_number[k] = local
        placed = local.own + delta  # how far the Local's spans are from its place
        if placed:
            self.placed[k] = placed
        diags = self.diags
        if local.lhs_diags:
            diags += shifted(local.lhs_diags, placed) if placed else local.lhs_diags
        lhs = stmt.lhs if type(stmt) is ir.Equation or type(stmt) is ir.Source else None
        # the diagnostics of each node in the order of the nodes (as one walk would give)
        pending = local.node_diags
        if pending and placed:
            pending = shifted(pending, placed)
        at = 0
        var_names: set[str] | None = None  # its index variables' names: made if needed
        tensors = self.tensors
        read = self.read
        virtual_first = self._virtual_first
        IndexVar, IndexVirtual = ir.IndexVar, ir.IndexVirtual
        defined: list[str] = []  # the tensors it reads (its dependencies)
        for i, ref in enumerate(local.refs):
            if pending:
                while at < len(pending) and pending[at][0] <= i:
                    diags.append(pending[at][1])
                    at += 1
            name = ref.name
            sym = tensors.get(name)
            if sym is not None:
                defined.append(name)
                indices = ref.indices
                if indices is not None and (sym.arity is None or len(indices) == sym.arity) \
                        and (sym.boolean or not ref.paren):
                    # what _check_use finds for most references: a defined tensor read
                    # with the right number of plain indices (none virtual or dotted);
                    # only the virtual axes of its first definition are left to see
                    for index in indices:
                        if type(index) is IndexVirtual or (type(index) is IndexVar
                                                           and index.dotted):
                            break
                    else:
                        first_virtual = virtual_first.get(name)
                        if first_virtual is None:
                            first_virtual = self._first_virtual(name, sym)
                        if not first_virtual:
                            read.add(name)
                            span = ref.name_span
                            sym.uses.append(_tuple_new(Span, (span[0] + delta, span[1] + delta))
                                            if delta else span)  # (moved_span, inline)
                            continue
            if var_names is None:
                var_names = set(local.role_names)  # = its occurrences' names
            self.references.use(stmt, ref, var_names, lhs, delta)
        if at < len(pending):
            diags += [d for _, d in pending[at:]]
        if local.late_diags:
            diags += shifted(local.late_diags, placed) if placed else local.late_diags
        if type(stmt) is ir.Equation:
            if local.broadcast:
                self._note_broadcast(k, local, placed)
            deps = self.deps.get(stmt.lhs.name)
            if deps is None:
                self.deps[stmt.lhs.name] = defined
            else:
                deps += defined

    def _note_broadcast(self, k: int, local: Local, placed: int) -> None:
        """Statement `k`'s broadcast roles, where the text has them, for
        Unification.check_extents."""
        keys = dict(zip(local.role_names, local.var_keys))
        broadcast = shifted(local.broadcast, placed) if placed else local.broadcast
        if k != local.made_k:
            broadcast = tuple([role._replace(statement=k) for role in broadcast])
        self.broadcast += [(keys[role.name], role) for role in broadcast]

    def remembered(self, check: str) -> Callable[[int, ir.Statement, Callable[[], list[Any]]],
                                                 Sequence[Any]]:
        """A memo for a later check of single statements (`check` names it) whose
        findings (diagnostics, nodes: values with spans) depend only on the
        statement's text and on which of its bare names are tensors, as its
        Local's do: `memo(k, stmt, find)` gives what `find()` gives for statement
        `k`, kept in its Local (moved along with it), so that a statement reused
        from the last analysis is not checked again."""
        by_number = self.by_number
        placed = self.placed

        def memo(k: int, stmt: ir.Statement, find: Callable[[], list[Any]]) -> Sequence[Any]:
            local = by_number.get(k)
            if local is None or local.stmt is not stmt:
                return find()
            if local.found is None:
                local.found = {}
            entry = local.found.get(check)
            if entry is None:  # found in its statement's own spans (see Local.own)
                entry = local.found[check] = (tuple(find()), local.own)
            diags, at = entry
            now = placed.get(k, 0)
            if diags and at != now:  # the statement moved since
                return shifted(diags, now - at)
            return diags
        return memo

    def _first_virtual(self, name: str, sym: TensorSymbol) -> bool:
        """Whether tensor `name`'s first definition has a virtual axis, remembered
        in _virtual_first (once per tensor)."""
        first_virtual = False
        for index in sym.first.indices or ():  # a loop: no generator
            if type(index) is ir.IndexVirtual:
                first_virtual = True
                break
        self._virtual_first[name] = first_virtual
        return first_virtual

    # ------------------------------------------------ what depends on the statement only
    def _local(self, k: int, stmt: ir.Statement) -> Local:
        """The parts of checking statement `k` that depend only on its own text and
        on which of its bare names are tensors: reused from the last analysis when
        both are unchanged (the statement itself, or a copy of it with its spans
        moved: see ParseCache.moved)."""
        entry = self.cache.get(id(stmt))
        if entry is not None and self._reusable(entry, stmt):
            self.cache_used[id(stmt)] = entry
            self.reused += 1
            return entry
        moved = self.moved.get(id(stmt))
        if moved is not None and moved[0] is stmt:
            _, old, copied_by = moved
            entry = self.cache.get(id(old))
            if entry is not None and self._reusable(entry, old):
                entry = _copied_local(entry, stmt, copied_by)
                self.cache_used[id(stmt)] = entry
                self.reused += 1
                return entry
        entry = self._new_local(k, stmt)
        if self.remember:
            self.cache_used[id(stmt)] = entry
        return entry

    def _new_local(self, k: int, stmt: ir.Statement) -> Local:
        tensors = self.tensors
        scopes, roles, refs, bare, calls, checked = statement_tables(k, stmt, tensors)
        stamp = next(_stamps)
        var_keys: dict[str, tuple] = {}  # name -> ("var", stamp, name): one key per variable
        role_keys = []  # each role's
        for role in roles:
            key = var_keys.get(role.name)
            if key is None:
                key = var_keys[role.name] = ("var", stamp, role.name)
            role_keys.append(key)
        lhs_diags: list[Diagnostic] = []
        if isinstance(stmt, ir.Equation):
            check_lhs(stmt, calls, lhs_diags)
        if isinstance(stmt, ir.ParamDecl):
            for ref in stmt.refs:
                check_lhs_indices(ref, lhs_diags)
        if type(stmt) is ir.Sink and (unwritable := sink_diagnostic(stmt)) is not None:
            lhs_diags.append(unwritable)  # (a suffix no sink writes: the run's refusal too)
        node_diags: list[tuple[int, Diagnostic]] = []
        for before, node in checked:
            found: list[Diagnostic] = []
            if isinstance(node, ir.Call):  # var_keys: its occurrences' names
                check_call(node, stmt, var_keys, tensors, found)
            elif isinstance(node, ir.Reduce):
                check_reduce(node, stmt, found)
            elif type(node) is ir.ListLit:
                found.append(misplaced_list(node, calls))
            elif type(node) is ir.Number:
                found.append(number_overflow(node, calls))
            if found:  # most find nothing
                node_diags += [(before, d) for d in found]
        late_diags: list[Diagnostic] = []
        broadcast: list[IndexRole] = []
        if isinstance(stmt, ir.Equation):
            broadcast, lonely = broadcast_and_lonely(roles)
            if len(lonely) > 1:
                check_typos(stmt, lonely, late_diags)
            if not stmt.lhs.paren:
                check_multiplied_terms(stmt, roles, scopes, calls, late_diags)
        names = _meaningful_bare(bare, var_keys, calls) if bare else ()
        ops = statement_ops(stamp, stmt, refs, calls, var_keys)
        # most statements have no bare name: then no list (nor a generator) to make
        known = tuple([name in tensors for name in names]) if names else ()
        roles = tuple(roles)
        return Local(stmt, names, known, tuple(refs), tuple(lhs_diags), tuple(node_diags),
                     tuple(late_diags), tuple(broadcast), ops,
                     tuple([role.name for role in roles]), tuple(role_keys), roles, scopes, k, 0)

    def _reusable(self, entry: Local, stmt: ir.Statement) -> bool:
        """Whether the last analysis' results `entry` hold for `stmt`: the same
        statement, the same tensors among its bare names, and not reused already in
        this analysis (a repeated statement: each must have its own domain keys)."""
        if entry.stmt is not stmt or id(entry) in self._taken or (
                entry.bare and entry.known != tuple(name in self.tensors for name in entry.bare)):
            return False
        self._taken.add(id(entry))
        return True

def _meaningful_bare(bare: Iterable[str], variables: Container[str],
                     calls: list[ir.Call]) -> tuple[str, ...]:
    """The bare names of a statement whose being tensors or not changes its Local
    (and what is remembered with it): an index variable's name (`Y[i] = i` reads
    the index) and a call's argument (`x != Ann`: a symbol constant unless a tensor;
    `pos(i)`).  Another, `S` in `Y[i] = W[i] * S`, is a scalar tensor or an
    undefined name, which the program's checks say on every analysis: its Local is
    the same either way, so deleting `S` reuses every statement that reads it."""
    arguments = {arg.name for call in calls
                 for arg in itertools.chain(call.args, (kw.value for kw in call.kwargs))
                 if type(arg) is ir.Ref and arg.indices is None}
    return tuple([name for name in bare if name in variables or name in arguments])


def _copied_local(old: Local, stmt: ir.Statement, copied_by: int) -> Local:
    """`old`'s results for `stmt`, a copy of its statement with spans moved by
    `copied_by` characters (ParseCache.moved): the same results, found where they
    were, with the copy's own references."""
    # the copy's own references, in the order of statement_scopes (ir.walk's)
    refs = ir.statement_refs(ir.used_exprs(stmt))
    return Local(stmt, old.bare, old.known, refs, old.lhs_diags, old.node_diags, old.late_diags,
                 old.broadcast, old.unify_ops, old.role_names, old.var_keys, old.made_roles,
                 old.made_scopes, old.made_k, old.own + copied_by, None, None, None, old.found)
