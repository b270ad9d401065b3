"""The checker: text -> Analysis (IR, symbols, extents, diagnostics).

`analyze` never raises on user input.  Its result is the one table every
consumer reads: `fuse check`, `fuse explain`, the planner, and later the
language server's hover, navigation and completion.
"""
from __future__ import annotations

import gc
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, ClassVar, Container, Iterator

from ..front import ir
from ..front.builtins import (BUILTINS, INDEX_ARGUMENT_BUILTINS, NORMALISING_BUILTINS, REDUCE_OPS,
                       RESERVED_WORDS)
from ..front.diagnostics import Diagnostic, Fix, Related, Severity, TextEdit, make
from .domains import Domains, Evidence, extent_of
from ..fastinit import frozen_dataclass
from .sources import SourceError, SourceInfo, read_source_info
from ..front.span import LineIndex, Span, shifted
from .symbols import SUM_OPS, IndexRole, Scope, TensorSymbol, slice_name, statement_tables
from ..front.syntax import ParseCache, parse

MAX_DIAGNOSTICS = 1000
_NO_NAMES: frozenset[str] = frozenset()

# unification operations (see _Checker._unify_ops); _GUARD holds one reference's
# operations, _VARS is a reference whose indices are all plain variables (most:
# (_VARS, tensor, each position's variable key)), the others are (kind, key, arguments...)
_UNION, _GUARD, _EXTENT, _DERIVED, _SYMBOL, _POSITION, _VARS = range(7)
# the builtins _concat_axes and _unify_builtins make operations for
_SHAPING = frozenset({"concat", "topk", "const", "causal_mask"})


@frozen_dataclass
class AxisInfo:
    index: str  # the index name at this position in the first definition ("" if none)
    extent: int | None
    domain: int
    virtual: bool


@frozen_dataclass
class TensorInfo:
    name: str
    kind: str  # "dense" | "Boolean relation" | "param" | "source" | "relation source"
    boolean: bool
    axes: tuple[AxisInfo, ...]
    definitions: tuple[Span, ...]  # name spans of every defining LHS
    statements: tuple[int, ...]  # defining statements, in order
    uses: tuple[Span, ...]  # name spans of every read
    source_path: str | None
    op: str | None  # "=" (sum), "max=", "min=", "avg=", or None (source, facts, param)

    @property
    def shape(self) -> tuple[int | None, ...]:
        return tuple(a.extent for a in self.axes if not a.virtual)

    @property
    def axes_text(self) -> str:
        """`[p:6, d:4]`: each stored axis' index and extent (`?` when unknown)."""
        parts = []
        for axis in self.axes:
            if axis.virtual:
                continue
            extent = "?" if axis.extent is None else str(axis.extent)
            parts.append(f"{axis.index}:{extent}" if axis.index else extent)
        return "[" + ", ".join(parts) + "]"


@dataclass(frozen=True)
class Analysis:
    path: str | None
    base_dir: Path
    text: str
    lines: LineIndex
    program: ir.Program
    diagnostics: tuple[Diagnostic, ...]
    tensors: dict[str, TensorInfo]
    roles: dict[int, tuple[IndexRole, ...]]  # statement -> its index variables
    scopes: dict[int, dict[int, Scope]]  # statement -> its projection scopes
    var_extents: dict[tuple[int, str], tuple[int | None, int]]  # (stmt, var) -> (extent, domain)
    domain_symbols: dict[int, tuple[str, ...]]
    order: tuple[tuple[str, ...], ...]  # evaluation order: groups of tensors
    recursive: frozenset[str]
    exports: tuple[str, ...]
    recursion: dict[str, str] = field(default_factory=dict)  # tensor -> how its group runs
    # set by _defer: makes tensors, var_extents and domain_symbols on first read
    # set by _defer on the instance (a class default, so no dataclass field)
    _deferred: ClassVar[_Deferred | None] = None

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def _defer(self, make: Callable[[], tuple[dict, dict, dict]]) -> None:
        """Leave `tensors`, `var_extents` and `domain_symbols` unset, to be made by
        `make` when one of them is first read (see __getattr__)."""
        for name in _DEFERRED:
            object.__delattr__(self, name)
        object.__setattr__(self, "_deferred", _Deferred(make))

    if not TYPE_CHECKING:  # (a __getattr__ would hide misspelt attributes from checkers)
        def __getattr__(self, name: str) -> dict:
            # reached only for an attribute the instance lacks: a deferred one not made yet
            if name in _DEFERRED:
                deferred = self.__dict__.get("_deferred")
                if deferred is not None:
                    for key, value in zip(_DEFERRED, deferred.values()):
                        object.__setattr__(self, key, value)
                    object.__setattr__(self, "_deferred", None)
                # (another thread may have set them, and cleared _deferred, meanwhile)
                if name in self.__dict__:
                    return self.__dict__[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict:
        # copy and pickle: the deferred fields made first (a lock does not pickle)
        for name in _DEFERRED:
            getattr(self, name)
        return self.__dict__


_DEFERRED = ("tensors", "var_extents", "domain_symbols")  # the fields Analysis._defer leaves


class _Deferred:
    """Makes a deferred Analysis' fields once, on first need, under a lock (two
    threads must not number the domains at once), then forgets how."""

    __slots__ = ("_make", "_values", "_lock")

    def __init__(self, make: Callable[[], tuple[dict, dict, dict]]) -> None:
        self._make: Callable[[], tuple[dict, dict, dict]] | None = make
        self._values: tuple[dict, dict, dict] | None = None
        self._lock = threading.Lock()

    def values(self) -> tuple[dict, dict, dict]:
        with self._lock:
            if self._values is None:
                assert self._make is not None
                self._values, self._make = self._make(), None  # and lets the checker go
            return self._values


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cycle collector off for a while (as it was after): an analysis makes
    a large, acyclic graph of small objects that it would only scan again and again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def analyze(text: str, path: str | None = None, base_dir: str | Path | None = None,
            input_shapes: dict[str, tuple[int, ...]] | None = None) -> Analysis:
    """Parse and check a program. Never raises on user input.

    `input_shapes` gives the shapes of arrays supplied at run time: they stand
    in for the named sources' files (and give params their extents)."""
    return Analyzer(remember=False).analyze(text, path, base_dir, input_shapes)


class Analyzer:
    """Analyses successive versions of one document, reusing what did not change.

    `analyze` returns exactly what the module-level `analyze` returns for the same
    arguments; it only remembers the last call's per-line tokens, per-statement
    IR and per-statement checks, keyed by content (a statement's text and place),
    so that after an edit only the edited statements are parsed and checked
    again.  The whole-program steps (symbols, unification of extents, evaluation
    order) always run.  Source files are read again on every call.  Not
    thread-safe: one Analyzer per document, used from one thread at a time."""

    def __init__(self, remember: bool = True) -> None:
        # remember=False (one analysis, nothing to reuse): the parse keeps no lines'
        # tokens, so their memory is free again for the checker, which is faster
        # (a new page of memory is slow to get on some machines).
        self._remember = remember
        self._parse_cache = ParseCache() if remember else None
        self._local_cache: dict[int, _Local] = {}
        self._infos: dict[str, tuple[tuple, TensorInfo]] = {}
        self._sccs: tuple[tuple, list[list[str]]] | None = None

    def analyze(self, text: str, path: str | None = None, base_dir: str | Path | None = None,
                input_shapes: dict[str, tuple[int, ...]] | None = None) -> Analysis:
        if base_dir is None:
            base_dir = Path(path).parent if path else Path(".")
        # The IR is a large, acyclic graph of small objects: the cycle collector
        # only re-scans it (a third of the time on a 10,000-line file).
        with gc_paused():
            checker = _Checker(text, path, Path(base_dir), input_shapes or {},
                               self._local_cache, self._infos, self._sccs, self._remember)
            analysis = checker.run(self._parse_cache)
            self._local_cache = checker.cache_used
            self._infos = checker.infos_used
            self._sccs = checker.sccs_used
            return analysis


def _close(name: str, candidates) -> list[str]:
    import difflib  # here: only a misspelt name needs it (faster start-up)

    return difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)


def _did_you_mean(name: str, candidates) -> str:
    close = _close(name, candidates)
    return f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""


@dataclass(slots=True)
class _Local:
    """What checking one statement found that depends on nothing else than the
    statement (the same object: same text, same place), its number `k`, and which
    of its bare names are tensors (`known`, for the names in `bare`)."""

    # One per statement of a program, kept for the whole analysis (and the next
    # one): tuples, () when empty, and nothing that is only needed while checking.
    stmt: ir.Statement
    k: int
    bare: tuple[str, ...]
    known: tuple[bool, ...]
    scopes: dict[int, Scope]
    roles: tuple[IndexRole, ...]
    refs: tuple[ir.Ref, ...]  # its references in the order of its nodes: _check_statement
    lhs_diags: tuple[Diagnostic, ...]
    node_diags: tuple[tuple[int, Diagnostic], ...]  # (how many of refs come before, diagnostic)
    late_diags: tuple[Diagnostic, ...]
    broadcast: tuple[IndexRole, ...]
    unify_ops: tuple[tuple, ...]  # its part of unification (see _Checker._unify_ops)
    var_keys: tuple[tuple, ...]  # each role's domain key ("var", k, name)


class _Checker:
    def __init__(self, text: str, path: str | None, base_dir: Path,
                 input_shapes: dict[str, tuple[int, ...]] | None = None,
                 cache: "dict[int, _Local] | None" = None,
                 infos: dict[str, tuple[tuple, TensorInfo]] | None = None,
                 sccs: tuple[tuple, list[list[str]]] | None = None,
                 remember: bool = True) -> None:
        self.input_shapes = input_shapes or {}
        # remember=False: nothing of this analysis is reused, so what only the next
        # one would use (cache_used, infos_used, sccs_used) is not made
        self.remember = remember
        self.text = text
        self.path = path
        self.base_dir = base_dir
        self.diags: list[Diagnostic] = []
        self.tensors: dict[str, TensorSymbol] = {}
        self.domains = Domains()
        self.axis_decls: dict[str, ir.AxisDecl] = {}
        self.roles: dict[int, tuple[IndexRole, ...]] = {}
        self.scopes: dict[int, dict[int, Scope]] = {}
        self.deps: dict[str, list[str]] = {}  # tensor -> the tensors it reads (repeats)
        self.read: set[str] = set()
        self.exports: list[str] = []
        self.recursion_how: dict[str, str] = {}
        self._broadcast_checks: list[tuple[int, IndexRole]] = []
        # per-statement results of the last analysis (see _local), and those used now
        self.cache: dict[int, _Local] = cache if cache is not None else {}
        self.cache_used: dict[int, _Local] = {}
        self.locals: list[_Local] = []  # in statement order
        self.moved: dict[int, tuple[ir.Statement, ir.Statement, int]] = {}  # see ParseCache
        self._ids: dict = {}  # domain root -> its number (see _domain_id)
        self._virtual_first: dict[str, bool] = {}  # tensor -> has its first definition *t
        # the TensorInfos of the last analysis, with what each was made of, and this one's
        self.infos: dict[str, tuple[tuple, TensorInfo]] = infos if infos is not None else {}
        self.infos_used: dict[str, tuple[tuple, TensorInfo]] = {}
        # the last analysis' dependency graph and its strongly connected groups, and this one's
        self.sccs: tuple[tuple, list[list[str]]] | None = sccs
        self.sccs_used: tuple[tuple, list[list[str]]] | None = None

    def report(self, code: str, message: str, span: Span, **kw) -> None:
        self.diags.append(make(code, message, span, **kw))

    # ------------------------------------------------------------ driver
    def run(self, parse_cache: ParseCache | None = None) -> Analysis:
        parsed = parse(self.text, parse_cache)
        self.moved = parse_cache.moved if parse_cache is not None else {}
        self.diags.extend(parsed.diagnostics)
        program = parsed.program
        statements = program.statements
        try:
            self._collect_tensors(statements)
            for k, stmt in enumerate(statements):
                self._check_statement(k, stmt)
            self._read_sources()
            self._unify(statements)
            self._check_extents()
            order, recursive = self._evaluation_order(statements)
            self._check_unused(statements)
        except RecursionError:
            self.report("nesting-too-deep", "the program is nested too deeply to analyse",
                        Span(0, 0))
            order, recursive = (), frozenset()
        diags = sorted(self.diags, key=lambda d: (d.span.start, d.span.end))[:MAX_DIAGNOSTICS]
        # A one-off analysis makes its tensors, var_extents and domain_symbols only
        # when first read: `fuse check` reads none of them.  An Analyzer that
        # remembers needs them now (_tensor_infos fills infos_used for the next run).
        deferred = not self.remember
        tensors, var_extents, domain_symbols = ({}, {}, {}) if deferred else self._results()
        analysis = Analysis(
            path=self.path, base_dir=self.base_dir, text=self.text,
            lines=LineIndex(self.text), program=program, diagnostics=tuple(diags),
            tensors=tensors, roles=self.roles, scopes=self.scopes,
            var_extents=var_extents, domain_symbols=domain_symbols,
            order=order, recursive=recursive, exports=tuple(self.exports),
            recursion=dict(self.recursion_how))
        if deferred:
            analysis._defer(self._results)
        return analysis

    # ------------------------------------------------------ definitions
    def _collect_tensors(self, statements: tuple[ir.Statement, ...]) -> None:
        for k, stmt in enumerate(statements):
            if isinstance(stmt, ir.AxisDecl):
                prior = self.axis_decls.get(stmt.name)
                if prior is not None and prior.extent != stmt.extent:
                    self.report("extent-conflict", f"axis `{stmt.name}` is declared {stmt.extent}"
                                f" here but {prior.extent} before", stmt.extent_span,
                                related=(Related(prior.extent_span, "declared here"),))
                else:
                    self.axis_decls.setdefault(stmt.name, stmt)
                continue
            if type(stmt) is ir.Equation:  # most statements
                self._define(k, stmt, stmt.lhs)
                continue
            if isinstance(stmt, ir.Fact):
                self._check_fact(stmt)
            for ref in ir.defined_refs(stmt):
                self._define(k, stmt, ref)

    def _check_fact(self, stmt: ir.Fact) -> None:
        atom = stmt.atom
        if not atom.paren:
            what = "a bare name" if atom.indices is None else "`[ ]`"
            self.report("invalid-fact", f"a statement that is only {what} means nothing; a fact "
                        f"is a Boolean tuple like `{atom.name}(Alice, Bob)`, a query ends with "
                        f"`?`", atom.span)
            return
        for index in atom.indices or ():
            if not isinstance(index, ir.IndexConst):
                self.report("invalid-fact", "a fact holds constants only (symbols like `Alice` "
                            "or positions like `0`); to derive tuples write a rule with `=`",
                            index.span)
                return

    def _define(self, k: int, stmt: ir.Statement, ref: ir.Ref) -> None:
        kind = type(stmt)
        if kind is ir.Fact and not (ref.paren and all(
                isinstance(i, ir.IndexConst) for i in ref.indices or ())):
            return
        sym = self.tensors.get(ref.name)
        indices = ref.indices
        arity: int | None = len(indices) if indices is not None else 0
        if indices is None and self._bare_takes_data_rank(stmt):
            arity = None
            if kind is ir.Equation:  # const: the literal's rank
                shape = _literal_shape(stmt.rhs.args[0]) if stmt.rhs.args else None
                arity = len(shape) if shape is not None else None
        if sym is None:
            sym = TensorSymbol(ref.name, ref.paren, arity, ref)
            self.tensors[ref.name] = sym
        else:
            if ref.paren != sym.boolean and kind is not ir.ParamDecl:
                first_kind = "Boolean `( )`" if sym.boolean else "numeric `[ ]`"
                self.report("kind-conflict", f"`{ref.name}` is defined as {first_kind} first; "
                            f"use the same brackets in every definition", ref.span,
                            related=(Related(sym.first.span, "first defined here"),))
            expected = sym.arity
            if expected is None and arity is not None:
                sym.arity = arity
            elif expected is not None and arity is not None and arity != expected:
                self._arity_error(ref, sym)
        sym.definitions.append(ref)
        sym.statements.append(k)
        if kind is ir.Equation:
            ops = sym.ops
            ops.append(stmt.op)
            if stmt.op != ops[0]:  # the same operator is the same family
                self._check_mixed_ops(sym, stmt)
        elif kind is ir.Source:
            sym.source = sym.source or stmt
        elif kind is ir.ParamDecl:
            sym.is_param = True
        elif kind is ir.Fact:
            sym.has_facts = True
            sym.boolean = True

    @staticmethod
    def _bare_takes_data_rank(stmt: ir.Statement) -> bool:
        """`W = "w.npy"` and `W = const([...])` take their rank from the data."""
        if isinstance(stmt, ir.Source):
            return True
        return (isinstance(stmt, ir.Equation) and isinstance(stmt.rhs, ir.Call)
                and stmt.rhs.name == "const")

    def _check_mixed_ops(self, sym: TensorSymbol, stmt: ir.Equation) -> None:
        first = sym.ops[0]
        if _op_family(stmt.op) != _op_family(first):
            first_stmt = sym.definitions[0]
            self.report("mixed-projection", f"`{sym.name}` combines its equations with "
                        f"`{_op_family(first)}` (first equation) but this one uses `{stmt.op}`; "
                        f"one tensor uses one projection operator", stmt.op_span,
                        related=(Related(first_stmt.span, "first equation"),))

    def _arity_error(self, ref: ir.Ref, sym: TensorSymbol) -> None:
        n = sym.arity or 0
        axes = "axis" if n == 1 else "axes"
        self.report("arity-mismatch", f"`{ref.name}` has {n} {axes} (from its first definition)"
                    f" but is written here with {ref.arity}", ref.span,
                    related=(Related(sym.first.span, "first defined here"),))

    # ---------------------------------------------------- per statement
    def _check_statement(self, k: int, stmt: ir.Statement) -> None:
        if isinstance(stmt, ir.AxisDecl):
            return
        if isinstance(stmt, ir.Export):
            for name in stmt.names:
                self.exports.append(name.name)
                self._check_tensor_name(name, allow_bare=True)
            return
        local = self._local(k, stmt)
        self.locals.append(local)
        self.scopes[k] = local.scopes
        self.roles[k] = local.roles
        diags = self.diags
        if local.lhs_diags:
            diags += local.lhs_diags
        lhs = stmt.lhs if type(stmt) is ir.Equation or type(stmt) is ir.Source else None
        # the diagnostics of each node in the order of the nodes (as one walk would give)
        pending = local.node_diags
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
                        if first_virtual is None:  # once per tensor (a loop: no generator)
                            first_virtual = False
                            for index in sym.first.indices or ():
                                if type(index) is IndexVirtual:
                                    first_virtual = True
                                    break
                            virtual_first[name] = first_virtual
                        if not first_virtual:
                            read.add(name)
                            sym.uses.append(ref)
                            continue
            if var_names is None:
                var_names = {role.name for role in local.roles}  # = its occurrences' names
            self._check_use(k, stmt, ref, var_names, lhs)
        if at < len(pending):
            diags += [d for _, d in pending[at:]]
        if local.late_diags:
            diags += local.late_diags
        if type(stmt) is ir.Equation:
            if local.broadcast:
                self._broadcast_checks += [(k, role) for role in local.broadcast]
            deps = self.deps.get(stmt.lhs.name)
            if deps is None:
                self.deps[stmt.lhs.name] = defined
            else:
                deps += defined

    def _local(self, k: int, stmt: ir.Statement) -> "_Local":
        """The parts of checking statement `k` that depend only on its own text and
        on which of its bare names are tensors: reused from the last analysis when
        both are unchanged (and moved along when the statement only moved)."""
        tensors = self.tensors
        entry = self.cache.get(id(stmt))
        if entry is not None and self._reusable(entry, stmt, k):
            self.cache_used[id(stmt)] = entry
            return entry
        moved = self.moved.get(id(stmt))
        if moved is not None and moved[0] is stmt:
            # an earlier statement moved in the text: so do its results
            _, old, delta = moved
            entry = self.cache.get(id(old))
            if entry is not None and self._reusable(entry, old, k):
                entry = self._moved_local(entry, stmt, delta)
                self.cache_used[id(stmt)] = entry
                return entry
        scopes, roles, refs, bare, calls, checked = statement_tables(k, stmt, tensors)
        var_keys: dict[str, tuple] = {}  # name -> ("var", k, name): one key per variable
        role_keys = []  # each role's
        for role in roles:
            key = var_keys.get(role.name)
            if key is None:
                key = var_keys[role.name] = ("var", k, role.name)
            role_keys.append(key)
        saved = self.diags
        try:
            self.diags = lhs_diags = []
            if isinstance(stmt, ir.Equation):
                self._check_lhs(k, stmt, calls)
            if isinstance(stmt, ir.ParamDecl):
                for ref in stmt.refs:
                    self._check_lhs_indices(ref)
            node_diags: list[tuple[int, Diagnostic]] = []
            if checked:
                for before, node in checked:
                    self.diags = found = []
                    if isinstance(node, ir.Call):  # var_keys: its occurrences' names
                        self._check_call(node, stmt, var_keys)
                    elif isinstance(node, ir.Reduce) and node.op not in REDUCE_OPS:
                        self.report("bad-argument", f"`{node.op}` is not a projection; use "
                                    f"one of {', '.join(REDUCE_OPS)}", node.op_span)
                    if found:  # most find nothing
                        node_diags += [(before, d) for d in found]
            self.diags = late_diags = []
            broadcast: list[IndexRole] = []
            if isinstance(stmt, ir.Equation):
                broadcast, lonely = _broadcast_and_lonely(roles)
                if len(lonely) > 1:
                    self._check_typos(stmt, lonely)
        finally:
            self.diags = saved
        names = tuple(bare)
        ops = self._unify_ops(k, stmt, refs, calls, var_keys)
        # most statements have no bare name: then no list (nor a generator) to make
        known = tuple([name in tensors for name in names]) if names else ()
        entry = _Local(stmt, k, names, known, scopes, tuple(roles), tuple(refs),
                       tuple(lhs_diags), tuple(node_diags), tuple(late_diags),
                       tuple(broadcast), ops, tuple(role_keys))
        if self.remember:
            self.cache_used[id(stmt)] = entry
        return entry

    def _reusable(self, entry: "_Local | None", stmt: ir.Statement, k: int) -> bool:
        """Whether the last analysis' results `entry` hold for `stmt` as statement `k`:
        the same statement, number, and tensors among its bare names."""
        return entry is not None and entry.stmt is stmt and entry.k == k and (
            not entry.bare or entry.known == tuple(name in self.tensors for name in entry.bare))

    @staticmethod
    def _moved_local(old: "_Local", stmt: ir.Statement, delta: int) -> "_Local":
        """`old`'s results for `stmt`, the same statement moved by `delta` characters."""
        # the new statement's own references, in the order of statement_scopes (ir.walk's)
        refs = tuple([node for expr in ir.used_exprs(stmt) for node in ir.walk(expr)
                      if type(node) is ir.Ref])
        scopes, roles, diags, broadcast = shifted(
            (old.scopes, old.roles, (old.lhs_diags, old.node_diags, old.late_diags),
             old.broadcast), delta)
        ops = tuple([op if op[0] == _VARS else
                     (_GUARD, op[1], op[2], tuple([sub if sub[0] == _UNION else
                                                   shifted(sub, delta) for sub in op[3]]))
                     if op[0] == _GUARD else shifted(op, delta) for op in old.unify_ops])
        return _Local(stmt, old.k, old.bare, old.known, scopes, roles, refs, *diags,
                      broadcast, ops, old.var_keys)

    def _check_lhs(self, k: int, stmt: ir.Equation, calls: list[ir.Call]) -> None:
        lhs = stmt.lhs
        dotted = []  # a loop, not a list comprehension: that costs more for a few indices
        plain = True  # variables only (most): no sum of them to see
        for index in lhs.indices or ():
            if type(index) is not ir.IndexVar:
                plain = False
            elif index.dotted:
                dotted.append(index)
        if not plain:
            self._check_lhs_indices(lhs)
        if len(dotted) > 1:
            self.report("dotted-axis", "only one axis can be dotted; it is the one softmax and "
                        "lnorm normalise along", dotted[1].span,
                        related=(Related(dotted[0].span, "first dotted axis"),))
        if dotted and not any(n.name in NORMALISING_BUILTINS for n in calls):
            self.diags.append(make(
                "dotted-axis", f"the dotted axis `{dotted[0].name}` has no effect: no softmax "
                f"or lnorm in this equation", dotted[0].span, severity=Severity.WARNING,
                fixes=(Fix("Remove the dot", (TextEdit(Span(dotted[0].span.end - 1,
                                                              dotted[0].span.end), ""),)),)))

    def _check_lhs_indices(self, lhs: ir.Ref) -> None:
        for index in lhs.indices or ():
            if isinstance(index, ir.IndexShift) and len(index.terms) > 1:
                self.report("invalid-index", "a sum of variables can be read (`X[x+dx]`) but "
                            "not written; put it on the right-hand side", index.span)

    def _check_use(self, k: int, stmt: ir.Statement, ref: ir.Ref, var_names: set[str],
                   lhs: ir.Ref | None) -> None:
        if ref.indices is None and ref.name not in self.tensors and ref.name in var_names:
            return  # an index used as a value
        query_atom = isinstance(stmt, ir.Query) and ref is stmt.atom  # `Y?` shows all of Y
        if not self._check_tensor_name(ref, allow_bare=query_atom):
            return
        sym = self.tensors[ref.name]
        self.read.add(ref.name)
        sym.uses.append(ref)
        for index in ref.indices or ():
            if isinstance(index, ir.IndexVar) and index.dotted:
                self.report("dotted-axis", "a dot marks an axis on the left-hand side only",
                            index.span, fixes=(Fix("Remove the dot", (TextEdit(
                                Span(index.span.end - 1, index.span.end), ""),)),))
        if ref.paren and not sym.boolean:
            self.diags.append(make(
                "paren-on-dense", f"`{ref.name}` is numeric; `( )` reads it the same as `[ ]`, "
                f"but `( )` is for Boolean relations", ref.span,
                fixes=(Fix(f"Write {ref.name}[...]", _bracket_edits(ref)),)))
        self._check_virtual(ref, sym, lhs)

    def _check_tensor_name(self, ref: ir.Ref, allow_bare: bool) -> bool:
        sym = self.tensors.get(ref.name)
        if sym is None:
            if ref.name in RESERVED_WORDS:
                self.report("reserved-word", f"`{ref.name}` is reserved for a later version of "
                            f"Fuse", ref.name_span)
                return False
            if ref.paren and ref.name[:1].islower():
                self._unknown_function(ref.name, ref.name_span)
                return False
            close = _close(ref.name, self.tensors)
            fixes = tuple(Fix(f"Change to `{c}`", (TextEdit(ref.name_span, c),)) for c in close)
            self.report("undefined-tensor", f"`{ref.name}` is not defined"
                        f"{_did_you_mean(ref.name, self.tensors)}", ref.name_span, fixes=fixes)
            return False
        if ref.indices is None:
            if not allow_bare and sym.arity:
                self._arity_error(ref, sym)
                return False
        elif sym.arity is not None and ref.arity != sym.arity:
            self._arity_error(ref, sym)
            return False
        return True

    def _check_virtual(self, ref: ir.Ref, sym: TensorSymbol, lhs: ir.Ref | None) -> None:
        first = sym.first.indices or ()
        for pos, index in enumerate(ref.indices or ()):
            if pos >= len(first) and sym.first.indices is not None:
                break
            # a bare definition (`X = "x.npy"`, `X = const(...)`) has no virtual axis
            defined = first[pos] if pos < len(first) else sym.first
            defined_virtual = isinstance(defined, ir.IndexVirtual)
            if defined_virtual != isinstance(index, ir.IndexVirtual):
                what = ("is virtual in its definition; read it as `*t`" if defined_virtual
                        else "is not virtual in its definition")
                self.report("virtual-index", f"axis {pos} of `{ref.name}` {what}", index.span,
                            related=(Related(defined.span, "defined here"),))

    def _unknown_function(self, name: str, span: Span) -> None:
        close = _close(name, BUILTINS)
        fixes = tuple(Fix(f"Change to `{c}`", (TextEdit(span, c),)) for c in close)
        self.report("unknown-builtin", f"`{name}` is not a builtin{_did_you_mean(name, BUILTINS)}"
                    f" (builtins: {', '.join(sorted(BUILTINS))})", span, fixes=fixes)

    # ------------------------------------------------------------ calls
    def _check_call(self, call: ir.Call, stmt: ir.Statement, var_names: Container[str]
                    ) -> None:
        spec = BUILTINS.get(call.name)
        if spec is None:
            self._unknown_function(call.name, call.name_span)
            return
        n = len(call.args)
        if n < spec.min_args or (spec.max_args is not None and n > spec.max_args):
            if spec.max_args is None:
                want = f"at least {spec.min_args}"
            elif spec.min_args == spec.max_args:
                want = str(spec.min_args)
            else:
                want = f"{spec.min_args} or {spec.max_args}"
            plural = "s" if want != "1" else ""
            self.report("argument-count", f"`{call.name}` takes {want} argument{plural}, not {n}"
                        f" (signature: {spec.signature})", call.span)
            return
        for kw in call.kwargs:
            if kw.name not in spec.keywords:
                valid = ", ".join(spec.keywords) if spec.keywords else "none"
                self.report("unknown-keyword", f"`{call.name}` has no keyword `{kw.name}` "
                            f"(keywords: {valid})", kw.name_span)
            elif kw.name == "axis":
                lhs_vars = _lhs_vars(stmt)  # here: the other calls need none
                if not (isinstance(kw.value, ir.Ref) and kw.value.indices is None
                        and kw.value.name in lhs_vars):
                    self.report("bad-argument", f"`axis=` names an index of the left-hand side "
                                f"({', '.join(sorted(lhs_vars)) or 'it has none'})",
                                kw.value.span)
            elif kw.name in ("eps",) and not _is_number(kw.value):
                self.report("bad-argument", f"`{kw.name}=` takes a number", kw.value.span)
            elif kw.name == "k" and not _is_whole(kw.value):
                self.report("bad-argument", "`k=` takes a whole number", kw.value.span)
        given = {kw.name for kw in call.kwargs} if call.kwargs else _NO_NAMES
        for required in spec.required_keywords:
            if required not in given:
                self.report("argument-count", f"`{call.name}` needs `{required}=` "
                            f"(signature: {spec.signature})", call.span)
        if call.name in INDEX_ARGUMENT_BUILTINS:
            arg = call.args[0]
            if not (isinstance(arg, ir.Ref) and arg.indices is None and arg.name in var_names
                    and arg.name not in self.tensors):
                self.report("bad-argument", f"`{call.name}` takes an index variable of this "
                            f"equation, like `{call.name}(i)`", arg.span)
        elif call.name == "causal_mask":
            if not _is_whole(call.args[0]):
                self.report("bad-argument", "`causal_mask` takes a whole number, the sequence "
                            "length", call.args[0].span)
        elif call.name == "const":
            shape = _literal_shape(call.args[0])
            if shape is None:
                self.report("bad-argument", "`const` takes a number or a rectangular list of "
                            "numbers", call.args[0].span)
            elif isinstance(stmt, ir.Equation) and stmt.lhs.indices is not None \
                    and stmt.rhs is call and len(shape) != len(stmt.lhs.indices):
                self.report("bad-argument", f"this literal has {len(shape)} axes but the "
                            f"left-hand side has {len(stmt.lhs.indices)}", call.args[0].span)
        elif call.name == "concat" and "axis" in given:
            axis = next(kw.value for kw in call.kwargs if kw.name == "axis")
            name = axis.name if isinstance(axis, ir.Ref) else None
            for arg in call.args:
                if name and not any(name in {v.name for i in r.indices or ()
                                             for v in ir.index_vars(i)} for r in ir.refs(arg)):
                    self.report("bad-argument", f"every argument of concat needs the axis "
                                f"`{name}` it joins along", arg.span)
        elif call.name in NORMALISING_BUILTINS and isinstance(stmt, ir.Equation):
            if not (stmt.lhs.indices or given & {"axis"}):
                self.report("bad-argument", f"`{call.name}` normalises along an axis, but the "
                            f"left-hand side has none", call.span)

    # ------------------------------------------------------- projections
    def _check_typos(self, stmt: ir.Equation, lonely: list[IndexRole]) -> None:
        """`lonely`: the equation's projected roles of one occurrence each, in a reference
        (no slice)."""
        for a_pos, a in enumerate(lonely):
            for b in lonely[a_pos + 1:]:
                if a.scope is b.scope and _close_names(a.name, b.name) and _in_two_factors(
                        stmt.rhs, a.occurrences[0].span, b.occurrences[0].span):
                    # the longer (or later) name is the likely slip
                    keep, slip = (a, b) if len(a.name) <= len(b.name) else (b, a)
                    span = slip.occurrences[0].span
                    self.report(
                        "likely-typo-index",
                        f"`{a.name}` and `{b.name}` are each used once and both projected away;"
                        f" did you mean `{keep.name}` in both places (a join)?", span,
                        related=(Related(keep.occurrences[0].span, f"`{keep.name}` is here"),),
                        fixes=(Fix(f"Change `{slip.name}` to `{keep.name}`",
                                   (TextEdit(span, keep.name),)),))

    # ----------------------------------------------------------- sources
    def _read_sources(self) -> None:
        self.source_info: dict[str, SourceInfo] = {}
        for sym in self.tensors.values():
            src = sym.source
            if sym.name in self.input_shapes:
                self._input_shape(sym, self.input_shapes[sym.name])
                continue
            if src is None:
                continue
            path = self.base_dir / src.path.value
            try:
                if not path.exists():
                    raise FileNotFoundError(path)
                info = read_source_info(path, sym.name, sym.boolean)
            except FileNotFoundError:
                self.report("missing-source", f"`{src.path.value}` does not exist (looked for "
                            f"{path})", src.path.span)
                continue
            except IsADirectoryError:
                self.report("unreadable-source", f"`{src.path.value}` is a folder, not a file",
                            src.path.span)
                continue
            except (OSError, SourceError, UnicodeDecodeError) as err:
                reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
                self.report("unreadable-source", f"`{src.path.value}` cannot be read: {reason}",
                            src.path.span)
                continue
            rank = len(info.columns) if sym.boolean and info.columns is not None else \
                len(info.shape or ())
            if sym.arity is None:
                sym.arity = rank
            elif sym.arity != rank and not (sym.boolean and info.rows == 0):
                self.report("arity-mismatch", f"`{sym.name}` is written with {sym.arity} "
                            f"{'axis' if sym.arity == 1 else 'axes'} but `{src.path.value}` "
                            f"holds {rank}", src.path.span)
                continue
            self.source_info[sym.name] = info

    def _input_shape(self, sym: TensorSymbol, shape: tuple[int, ...]) -> None:
        if sym.arity is None:
            sym.arity = len(shape)
        if len(shape) != sym.arity:
            self.report("arity-mismatch", f"the input for `{sym.name}` has {len(shape)} axes "
                        f"but `{sym.name}` has {sym.arity}", sym.first.span)
            return
        for pos, extent in enumerate(shape):
            self.domains.set_extent(("axis", sym.name, pos), Evidence(
                int(extent), sym.first.span, f"the input given for {sym.name}"))

    # ------------------------------------------------------- unification
    def _unify(self, statements: tuple[ir.Statement, ...]) -> None:
        self._derived: list[tuple] = []  # extents computed once the domains are known
        d = self.domains
        axis_keys: dict[str, tuple] = {}  # tensor -> its axes' keys (shared: no copies)
        for name, sym in self.tensors.items():
            axis_keys[name] = tuple([("axis", name, pos) for pos in range(sym.arity or 0)])
        d.add([key for keys in axis_keys.values() for key in keys])
        # Each statement's unification is compiled once (see _unify_ops, kept with the
        # statement's other local results) and replayed here in statement order:
        # the same operations in the same order as walking the IR would give.
        tensors = self.tensors
        derived = self._derived
        union, set_extent, meet = d.union, d.set_extent, d.meet
        add_symbol, add_position = d.add_symbol, d.add_position
        for local in self.locals:
            for op in local.unify_ops:
                kind = op[0]
                if kind == _VARS:  # a reference with plain variables: each meets its axis
                    name, keys = op[1], op[2]
                    sym = tensors.get(name)
                    if sym is None:
                        continue
                    axes = axis_keys[name]
                    if len(keys) != len(axes):
                        if sym.arity is not None:
                            continue
                        # a tensor of unknown rank: its axes are keys made here
                        axes = tuple([("axis", name, pos) for pos in range(len(keys))])
                    meet(axes, keys)
                elif kind == _GUARD:  # one reference's ops: they apply if it fits its tensor
                    sym = tensors.get(op[1])
                    if sym is None or (sym.arity is not None and op[2] != sym.arity):
                        continue
                    for sub in op[3]:
                        kind = sub[0]
                        if kind == _UNION:
                            union(sub[1], sub[2])
                        elif kind == _EXTENT:
                            set_extent(sub[1], sub[2])
                        elif kind == _DERIVED:
                            derived.append(sub[1])
                        elif kind == _SYMBOL:
                            add_symbol(sub[1], sub[2], sub[3])
                        else:
                            add_position(sub[1], sub[2], sub[3])
                elif kind == _EXTENT:
                    set_extent(op[1], op[2])
                elif kind == _DERIVED:
                    derived.append(op[1])
        self._apply_axis_decls()
        self._unify_sources()  # after the statements: facts' symbols are numbered first
        self._resolve_derived()
        self._check_positions()

    def _unify_ops(self, k: int, stmt: ir.Statement, refs: list[ir.Ref], calls: list[ir.Call],
                   var_keys: dict[str, tuple]) -> tuple[tuple, ...]:
        """Statement k's part of unification as operations on the domains, from its
        references and calls (each in the order of its nodes).  `var_keys` holds the
        key of each of its roles' variables and gets that of any other variable met:
        each variable has one key object, shared."""
        ops: list[tuple] = []
        shaping = False  # a call that has operations of its own: most have none
        for call in calls:
            if call.name in _SHAPING:
                shaping = True
                break
        concat = self._concat_axes(k, stmt, calls, ops) if shaping else {}
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
                        ops.append((_VARS, ref.name, tuple(keys)))
                        continue
                self._unify_ref(k, ref, lhs, concat, ops)
        if shaping:
            self._unify_builtins(k, stmt, calls, ops)
        return tuple(ops)

    def _unify_ref(self, k: int, ref: ir.Ref, lhs: bool, concat: dict, ops: list[tuple]
                   ) -> None:
        outer = ops
        ops = []  # this reference's: (_GUARD, tensor, arity, ops) applies them if it fits
        slice_no = 0
        for pos, index in enumerate(ref.indices):
            axis = ("axis", ref.name, pos)
            if type(index) is ir.IndexVar:  # most indices
                var = ("var", k, index.name)
                ops.append((_UNION, axis, concat.get((id(ref), pos), var) if concat else var))
                continue
            if isinstance(index, ir.IndexVirtual):
                index = index.inner
            if isinstance(index, ir.IndexVar):
                ops.append((_UNION, axis, concat.get((id(ref), pos), ("var", k, index.name))))
            elif isinstance(index, ir.IndexShift):
                if len(index.terms) == 1:
                    ops.append((_UNION, axis, concat.get((id(ref), pos),
                                                         ("var", k, index.terms[0].name))))
                else:
                    for var in index.terms:
                        ops.append((_DERIVED, ("inner", ("var", k, var.name), axis)))
            elif isinstance(index, ir.IndexDiv):
                var = ("var", k, index.var.name)
                if lhs:
                    ops.append((_DERIVED, ("pool", axis, var, index.divisor, index.span)))
                else:
                    ops.append((_DERIVED, ("inner", var, axis)))
            elif isinstance(index, ir.IndexConst):
                ops.append((_SYMBOL if index.is_symbol else _POSITION, axis, index.value,
                            index.span))
            elif isinstance(index, ir.IndexSlice):
                var = ("var", k, slice_name(slice_no))
                slice_no += 1
                start, stop = index.start, index.stop
                if start is None and stop is None:
                    ops.append((_UNION, axis, var))
                elif start is not None and stop is not None:
                    ops.append((_EXTENT, var, Evidence(stop - start, index.span,
                                                      f"the slice {start}:{stop}")))
                else:
                    ops.append((_DERIVED, ("slice", var, axis, start, stop, index.span)))
                if stop is not None:
                    ops.append((_POSITION, axis, stop - 1, index.span))
        outer.append((_GUARD, ref.name, ref.arity, tuple(ops)))

    def _concat_axes(self, k: int, stmt: ir.Statement, calls: list[ir.Call], ops: list[tuple]
                     ) -> dict[tuple[int, int], tuple]:
        """In `concat(a, b, axis=n)` each argument's n-axis is its own domain;
        the left-hand side's n is their sum (resolved in _resolve_derived).
        Likewise in `topk(x, k=K)` the argument's axis along the last LHS index
        is its own domain, and that LHS index has extent K.  (_SHAPING names them.)"""
        out: dict[tuple[int, int], tuple] = {}
        for node in calls:
            if node.name == "topk":
                self._topk_axis(k, stmt, node, out, ops)
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
                    for pos, index in enumerate(ref.indices or ()):
                        if ir.reads_along(index, axis):
                            out[(id(ref), pos)] = key
            ops.append((_DERIVED, ("concat", ("var", k, axis), tuple(parts), node.span)))
        return out

    def _topk_axis(self, k: int, stmt: ir.Statement, call: ir.Call, out: dict,
                   ops: list[tuple]) -> None:
        if not isinstance(stmt, ir.Equation) or not stmt.lhs.indices or not call.args:
            return
        names = [v.name for i in stmt.lhs.indices if not isinstance(i, ir.IndexVirtual)
                 for v in ir.index_vars(i)]
        count = next((kw.value for kw in call.kwargs if kw.name == "k"), None)
        if not names or count is None or not _is_whole(count):
            return
        axis = names[-1]
        key = ("topk", k, call.span.start)
        for ref in ir.refs(call.args[0]):
            for pos, index in enumerate(ref.indices or ()):
                if ir.reads_along(index, axis):
                    out[(id(ref), pos)] = key
        ops.append((_EXTENT, ("var", k, axis), Evidence(
            int(count.value), count.span, f"topk(k={int(count.value)})")))  # type: ignore[union-attr]

    def _apply_axis_decls(self) -> None:
        for k, roles in self.roles.items():
            for role in roles:
                decl = self.axis_decls.get(role.name)
                if decl is not None:
                    self.domains.set_extent(("var", k, role.name), Evidence(
                        decl.extent, decl.extent_span, f"axis {decl.name} = {decl.extent}"))

    def _unify_sources(self) -> None:
        d = self.domains
        for name, info in getattr(self, "source_info", {}).items():
            sym = self.tensors[name]
            src = sym.source
            assert src is not None
            span = src.path.span
            if sym.boolean and info.columns is not None:
                for pos, value in info.first_seen:  # row by row
                    if isinstance(value, int):
                        d.add_position(("axis", name, pos), value, span)
                    else:
                        d.add_symbol(("axis", name, pos), value, span)
                if info.shape and len(info.shape) == 2 and src.path.value.endswith(".txt"):
                    d.set_extent(("axis", name, 0), Evidence(info.shape[0], span,
                                                             f"the tokens of {src.path.value}"))
            elif info.shape is not None:
                for pos, extent in enumerate(info.shape):
                    d.set_extent(("axis", name, pos),
                                 Evidence(extent, span, f"the shape of {src.path.value}"))

    def _resolve_derived(self) -> None:
        d = self.domains
        for item in self._derived:  # an index only inside x+dx or x/2 takes that axis' extent
            if item[0] == "inner" and d.extent(item[1]) is None and d.extent(item[2]) is not None:
                d.union(item[1], item[2])
        for item in self._derived:
            kind = item[0]
            if kind == "pool":
                _, axis, var, divisor, span = item
                extent = d.extent(var)
                if extent is not None:
                    d.set_extent(axis, Evidence(math.ceil(extent / divisor), span,
                                                f"⌈{extent}/{divisor}⌉ from this pooling index"))
            elif kind == "slice":
                _, var, axis, start, stop, span = item
                full = d.extent(axis)
                if stop is None and full is not None:
                    d.set_extent(var, Evidence(full - (start or 0), span,
                                               f"the slice {start}: of an axis of {full}"))
                elif start is None and stop is not None:
                    d.set_extent(var, Evidence(stop, span, f"the slice :{stop}"))
            elif kind == "concat":
                _, var, parts, span = item
                extents = [d.extent(p) for p in parts]
                if all(e is not None for e in extents):
                    d.set_extent(var, Evidence(sum(extents), span,  # type: ignore[arg-type]
                                               f"concat ({' + '.join(map(str, extents))})"))

    def _check_positions(self) -> None:
        """Integer constants and symbols beyond a known extent."""
        d = self.domains
        for root in d.roots():
            evidence = d.evidence(root)
            if evidence is None:
                continue
            biggest = d.max_position(root)
            if biggest is not None and biggest[0] >= evidence.extent:
                self.report("extent-conflict", f"position {biggest[0]} is outside an axis of "
                            f"extent {evidence.extent}", biggest[1],
                            related=(Related(evidence.span, f"extent {evidence.extent} from "
                                             f"{evidence.what}"),))
            symbols = d.symbol_spans(root)
            if len(symbols) > evidence.extent:
                extra, span = list(symbols.items())[evidence.extent]
                self.report("extent-conflict", f"this domain has extent {evidence.extent} but "
                            f"more symbols than that (`{extra}` is number "
                            f"{evidence.extent + 1})", span,
                            related=(Related(evidence.span, f"extent {evidence.extent} from "
                                             f"{evidence.what}"),))

    def _unify_builtins(self, k: int, stmt: ir.Statement, calls: list[ir.Call],
                        ops: list[tuple]) -> None:
        """The extents `const` and `causal_mask` give (_SHAPING names them)."""
        if not isinstance(stmt, ir.Equation):
            return
        lhs_indices = stmt.lhs.indices or ()
        for node in calls:
            if not node.args:
                continue
            if node.name == "const" and node is stmt.rhs:
                shape = _literal_shape(node.args[0])
                if shape is None:
                    continue
                for pos, extent in enumerate(shape):
                    ops.append((_EXTENT, ("axis", stmt.lhs.name, pos), Evidence(
                        extent, node.args[0].span, "this literal")))
            elif node.name == "causal_mask" and _is_whole(node.args[0]):
                n = int(node.args[0].value)  # type: ignore[union-attr]
                for index in lhs_indices[-2:]:
                    for var in ir.index_vars(index):
                        ops.append((_EXTENT, ("var", k, var.name), Evidence(
                            n, node.span, f"causal_mask({n})")))

    def _check_extents(self) -> None:
        seen = set()
        for conflict in self.domains.conflicts:
            first, second = conflict.first, conflict.second
            a, b = sorted((first, second), key=lambda e: e.span.start)
            key = (a.span, a.extent, b.span, b.extent)
            if key in seen:  # one clash met again through another variable
                continue
            seen.add(key)
            self.report("extent-conflict", f"extent {b.extent} from {b.what} conflicts with "
                        f"extent {a.extent} from {a.what}; these positions share one domain",
                        b.span, related=(Related(a.span, f"extent {a.extent} from {a.what}"),))
        for k, role in self._broadcast_checks:
            if self.domains.extent(("var", k, role.name)) is None:
                occ = role.occurrences[0]
                self.report("unknown-extent", f"`{role.name}` appears on the left only, and "
                            f"nothing gives its extent; declare it with `axis {role.name} = N`",
                            occ.span, fixes=(Fix(f"Declare `axis {role.name}`", (TextEdit(
                                Span(0, 0), f"axis {role.name} = 1\n"),)),))

    # ---------------------------------------------------- dependencies
    def _evaluation_order(self, statements) -> tuple[tuple[tuple[str, ...], ...], frozenset]:
        names = list(self.tensors)
        graph = {n: sorted(set(self.deps.get(n, ()))) for n in names}
        if self.remember:
            # the dependency graph rarely changes between two versions of a document
            key = (tuple(names), tuple([tuple(edges) for edges in graph.values()]))
            if self.sccs is not None and self.sccs[0] == key:
                groups = self.sccs[1]
            else:
                groups = _sccs(names, graph)
            self.sccs_used = (key, groups)
        else:
            groups = _sccs(names, graph)
        recursive = set()
        tensors = self.tensors
        for group in groups:
            if len(group) > 1 or group[0] in graph.get(group[0], ()):
                recursive.update(group)
                first = tensors[group[0]].definitions[0] if len(group) == 1 else min(
                    (tensors[n].definitions[0] for n in group), key=lambda r: r.span.start)
                members = ", ".join(f"`{n}`" for n in group)
                how = self._recursion_kind(group, statements)
                self.recursion_how.update(dict.fromkeys(group, how))
                self.report("recursion", f"{members} depend{'s' if len(group) == 1 else ''} on "
                            f"{'itself' if len(group) == 1 else 'each other'}: {how}",
                            first.name_span)
        return tuple(tuple(g) for g in groups), frozenset(recursive)

    def _recursion_kind(self, group: list[str], statements) -> str:
        members = set(group)
        if all(self.tensors[n].boolean for n in group):
            return "evaluated by forward chaining to a fixpoint (semi-naive)"
        for n in group:
            for k in self.tensors[n].statements:
                stmt = statements[k]
                if not isinstance(stmt, ir.Equation):
                    continue
                for ref in ir.refs(stmt.rhs):
                    if ref.name in members:
                        for index in ref.indices or ():
                            if isinstance(index, ir.IndexShift) and len(index.terms) == 1 \
                                    and index.offset < 0:
                                var = index.terms[0].name
                                return f"a recurrence over `{var}` (offset {index.offset}), " \
                                       f"computed in order of `{var}`"
                            if isinstance(index, ir.IndexVirtual):
                                return "a recurrence over a virtual index, iterated in order"
        return "evaluated by forward chaining until the change is below tolerance"

    def _check_unused(self, statements) -> None:
        if _OUTPUT_KINDS.isdisjoint(map(type, statements)):
            return  # with no outputs named, every leaf is an output
        used = set(self.read) | set(self.exports)
        for stmt in statements:
            if isinstance(stmt, ir.Query):
                used.add(stmt.atom.name)
        for name, sym in self.tensors.items():
            if name not in used:
                self.report("unused-tensor", f"`{name}` is never read, exported or queried",
                            sym.first.name_span)

    # ---------------------------------------------------------- results
    # Domains are numbered 1, 2, ... in the order these functions first meet them:
    # the tensors' axes, then the statements' variables, then symbol domains.
    def _results(self) -> tuple[dict[str, TensorInfo],
                                dict[tuple[int, str], tuple[int | None, int]],
                                dict[int, tuple[str, ...]]]:
        """The analysis' tensors, var_extents and domain_symbols, made in this order
        (it numbers the domains).  Reads only what run has finished with."""
        with gc_paused():  # as in Analyzer.analyze: when deferred, this runs after it
            return self._tensor_infos(), self._var_extents(), self._domain_symbols()

    def _domain_id(self, key) -> int:
        ids = self._ids
        root = self.domains.find(key)
        return ids.setdefault(root, len(ids) + 1)

    def _tensor_infos(self) -> dict[str, TensorInfo]:
        out = {}
        ids = self._ids
        known = self.infos  # from the last analysis: name -> (what it was made of, info)
        used = self.infos_used
        remember = self.remember
        parent = self.domains._parent
        data = self.domains._data
        for name, sym in self.tensors.items():
            first = sym.first.indices or ()
            axes = []
            for pos in range(sym.arity or 0):
                index = first[pos] if pos < len(first) else None
                if type(index) is ir.IndexVar:
                    label = index.name
                elif index is not None:
                    vars_ = ir.index_vars(index)
                    label = vars_[0].name if vars_ else ""
                else:
                    label = ""
                key = ("axis", name, pos)
                root = parent.get(key)  # Domains.find, inlined for a root's child
                if root is None or parent[root] != root:
                    root = self.domains.find(key)
                root_id = ids.get(root)
                if root_id is None:
                    root_id = ids[root] = len(ids) + 1
                axes.append((label, extent_of(data[root]), root_id,
                             type(index) is ir.IndexVirtual))
            op = None
            if sym.ops:
                op = "=" if sym.ops[0] in SUM_OPS else sym.ops[0]
            key = (sym.kind, sym.boolean, tuple(axes),
                   tuple([r.name_span for r in sym.definitions]), tuple(sym.statements),
                   tuple([r.name_span for r in sym.uses]),
                   sym.source.path.value if sym.source else None, op)
            entry = known.get(name)
            if entry is None or entry[0] != key:  # else the same TensorInfo as last time
                info = TensorInfo(name, key[0], key[1], tuple(AxisInfo(*axis) for axis in axes),
                                  *key[3:])
                if not remember:
                    out[name] = info
                    continue
                entry = (key, info)
            used[name] = entry
            out[name] = entry[1]
        return out

    def _var_extents(self) -> dict[tuple[int, str], tuple[int | None, int]]:
        out = {}
        ids = self._ids
        find = self.domains.find
        parent = self.domains._parent
        data = self.domains._data
        values: dict = {}  # domain root -> (extent, number): one tuple per domain
        for local in self.locals:  # the statements with roles, in order
            k = local.k
            for key, role in zip(local.var_keys, local.roles):
                root = parent.get(key)  # Domains.find, inlined for a root's child
                if root is None or parent[root] != root:
                    root = find(key)
                value = values.get(root)
                if value is None:
                    root_id = ids.get(root)
                    if root_id is None:
                        root_id = ids[root] = len(ids) + 1
                    value = values[root] = (extent_of(data[root]), root_id)
                out[(k, role.name)] = value
        return out

    def _domain_symbols(self) -> dict[int, tuple[str, ...]]:
        out = {}
        for root in self.domains.roots():
            symbols = self.domains.symbols(root)
            if symbols:
                out[self._domain_id(root)] = symbols
        return out


# ------------------------------------------------------------- helpers


def _lhs_vars(stmt: ir.Statement) -> set[str]:
    if isinstance(stmt, ir.Equation):
        return {v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i)}
    return set()


def _broadcast_and_lonely(roles: list[IndexRole]) -> tuple[list[IndexRole], list[IndexRole]]:
    """An equation's roles that need a look beyond it, in one loop: its left-hand
    side's indices no right-hand term mentions (their extent must come from
    elsewhere), and its projected indices met once, in a reference (_check_typos)."""
    broadcast: list[IndexRole] = []
    lonely: list[IndexRole] = []
    for role in roles:
        occs = role.occurrences
        if role.role == "output":
            # an output role holds all its name's occurrences, the LHS ones first:
            # the last is on the LHS if the RHS has none
            if occs[-1].lhs and occs[0].form != "slice":
                broadcast.append(role)
        elif role.role == "projected" and len(occs) == 1 \
                and occs[0].form != "slice" and occs[0].tensor is not None:
            lonely.append(role)
    return broadcast, lonely


_OUTPUT_KINDS = frozenset({ir.Export, ir.Query, ir.Sink})  # statements that name outputs


def _op_family(op: str) -> str:
    """`=` and `+=` both sum: one tensor may mix them, not other operators."""
    return "=" if op in SUM_OPS else op


def _is_number(expr: ir.Expr) -> bool:
    if isinstance(expr, ir.Neg):
        expr = expr.operand
    return isinstance(expr, ir.Number)


def _is_whole(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Number) and expr.is_integer


def _literal_shape(expr: ir.Expr) -> tuple[int, ...] | None:
    """Shape of a number or a rectangular nested list of numbers, else None."""
    if _is_number(expr):
        return ()
    if not isinstance(expr, ir.ListLit) or not expr.items:
        return None
    shapes = {_literal_shape(item) for item in expr.items}
    if len(shapes) != 1 or None in shapes:
        return None
    inner = shapes.pop()
    assert inner is not None
    return (len(expr.items),) + inner


def _bracket_edits(ref: ir.Ref) -> tuple[TextEdit, ...]:
    open_at = ref.name_span.end
    return (TextEdit(Span(open_at, open_at + 1), "["), TextEdit(Span(ref.span.end - 1,
                                                                      ref.span.end), "]"))


def _close_names(a: str, b: str) -> bool:
    """Names one slip apart: `d`/`dd`, `dk`/`dv`, `x`/`x'`, `k1`/`k2`."""
    if a == b:
        return False
    if a.rstrip("'") == b.rstrip("'"):
        return True
    if abs(len(a) - len(b)) == 1:
        short, long_ = sorted((a, b), key=len)
        return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
    if len(a) == len(b) >= 2:
        return sum(x != y for x, y in zip(a, b)) == 1
    return False


def _in_two_factors(expr: ir.Expr, a: Span, b: Span) -> bool:
    """Whether spans `a` and `b` lie in different factors of one product (a join)."""
    def inside(span: Span, outer: Span) -> bool:
        return outer.start <= span.start and span.end <= outer.end
    for node in ir.walk(expr):
        if isinstance(node, ir.Product):
            fa = next((k for k, f in enumerate(node.factors) if inside(a, f.span)), None)
            fb = next((k for k, f in enumerate(node.factors) if inside(b, f.span)), None)
            if fa is not None and fb is not None and fa != fb:
                return True
    return False


def _sccs(nodes: list[str], graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively, dependencies first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                out.append(sorted(group, key=nodes.index) if len(group) > 1 else group)
    return out
