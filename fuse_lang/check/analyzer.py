"""The checker: text -> Analysis (IR, symbols, extents, diagnostics).

`analyze` never raises on user input.  Its result is the one table every
consumer reads: `fuse check`, `fuse explain`, the planner, and the language
server's hover, navigation and completion.  The steps, in order, each in its
module: definitions, per-statement checks (statements), source files
(sources), unification of extents (unify), evaluation order and unused tensors
(order), and the result tables (results).
"""
from __future__ import annotations

from pathlib import Path

from ..front import ir
from ..front.arguments import path_argument, text_argument
from ..front.diagnostics import Diagnostic, make
from ..front.functions import Inlined, has_functions, inline_functions
from ..front.let_blocks import Lowered, has_blocks, lower_blocks, plain_messages
from ..front.relocation import Relocation
from ..front.span import LineIndex, Span, shifted
from ..front.syntax import ParseCache, ParseResult, parse_reusing
from ..io.sink_paths import repeated_sinks, sinks_over_sources
from ..io.source_files import SourceInfo
from ..io.sources import header_row, read_declared_source
from ..speed.gc_pause import gc_paused
from .aggregates import aggregates_over_absent
from .analysis import Analysis, Deferred, TensorInfo
from .cascades import quiet_cascades, said_already
from .constants import check_constants
from .datalog import check_datalog, close_empty_columns
from .definitions import arity_mismatch, collect_definitions
from .derived_extents import padding_indices, window_positions
from .domains import Domains, Evidence
from .imports import (
    ImportCache,
    ProgramText,
    Resolved,
    has_imports,
    placed_at_imports,
    resolve_imports,
)
from .initialisers import check_initialisers
from .inlined_calls import body_diagnostics, placed_in_calls
from .inner_projections import report_inner_projections
from .lone_indices import program_lone_indices, report_body_lone_indices, report_lone_indices
from .loss import check_losses
from .order import EvaluationOrder, SccMemo, check_unused, evaluation_order
from .recurrences import stored_positions
from .results import InfoMemo, Tables
from .runnable import RunRefusals
from .statements import Local, StatementChecks
from .symbols import TensorSymbol
from .unify import Unification
from .value_kinds import check_constant_comparisons
from .values import check_values

MAX_DIAGNOSTICS = 1000


def analyze(text: str, path: str | None = None, base_dir: str | Path | None = None,
            input_shapes: dict[str, tuple[int, ...]] | None = None) -> Analysis:
    """Parse and check a program. Never raises on user input.

    `input_shapes` gives the shapes of arrays supplied at run time: they stand
    in for the named sources' files (and give params their extents)."""
    text_argument("fuse_lang.analyze", text)
    path_argument("fuse_lang.analyze", "path", path)
    path_argument("fuse_lang.analyze", "base_dir", base_dir)
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

    def __init__(self, remember: bool = True, import_cache: ImportCache | None = None) -> None:
        # remember=False (one analysis, nothing to reuse): the parse keeps no lines'
        # tokens, so their memory is free again for the checker, which is faster
        # (a new page of memory is slow to get on some machines).
        self._remember = remember
        self._parse_cache = ParseCache() if remember else None
        self._memory = _Memory()
        self._import_cache = import_cache  # (None: the process' own, check/imports.py)
        # how many statements the last call reused from the one before (their IR
        # and their per-statement checks, moved along if they moved): a count the
        # tests read to see that an edit costs what it changes
        self.reused = 0

    def analyze(self, text: str, path: str | None = None, base_dir: str | Path | None = None,
                input_shapes: dict[str, tuple[int, ...]] | None = None) -> Analysis:
        if base_dir is None:
            base_dir = Path(path).parent if path else Path(".")
        # The IR is a large, acyclic graph of small objects: the cycle collector
        # only re-scans it (a third of the time on a 10,000-line file).
        with gc_paused():
            checker = _Checker(text, path, Path(base_dir), input_shapes or {}, self._memory,
                               self._remember)
            checker.import_cache = self._import_cache
            analysis = checker.run(self._parse_cache)
            if self._remember:
                self._memory = checker.memory_used
            self.reused = checker.checks.reused if checker.checks is not None else 0
            return analysis


class _Memory:
    """What an Analyzer keeps of its last analysis for the next one: each
    statement's Local (by its statement's id), the TensorInfos with what each was
    made of, and the dependency graph with its strongly connected groups."""

    __slots__ = ("locals", "infos", "sccs")

    def __init__(self, locals_: dict[int, Local] | None = None, infos: InfoMemo | None = None,
                 sccs: SccMemo | None = None) -> None:
        self.locals: dict[int, Local] = locals_ if locals_ is not None else {}
        self.infos: InfoMemo = infos if infos is not None else {}
        self.sccs = sccs


class _Checker:
    """One analysis of `text`, step by step (see the module's docstring).  With
    `remember`, `memory_used` holds what the next analysis may reuse."""

    def __init__(self, text: str, path: str | None, base_dir: Path,
                 input_shapes: dict[str, tuple[int, ...]], memory: _Memory,
                 remember: bool) -> None:
        self.text = text
        self.path = path
        self.base_dir = base_dir
        self.input_shapes = input_shapes
        self.memory = memory
        # remember=False: nothing of this analysis is reused, so what only the next
        # one would use is not kept
        self.remember = remember
        self.memory_used = _Memory()
        self.diags: list[Diagnostic] = []
        self.tensors: dict[str, TensorSymbol] = {}
        self.domains = Domains()
        self.checks: StatementChecks | None = None
        self.import_cache: ImportCache | None = None

    def run(self, parse_cache: ParseCache | None = None) -> Analysis:
        parsed, relocation = parse_reusing(self.text, parse_cache)
        # equations reused where they were: id -> how far each moved (the checks add it
        # to the spans they take from one; see front/relocation.py)
        deltas = relocation.deltas
        moved = parse_cache.moved if parse_cache is not None else {}
        diags = self.diags
        diags.extend(parsed.diagnostics)
        program = parsed.program
        resolved = None
        if "::" in self.text or has_imports(program.statements):  # other files' definitions
            program, relocation, resolved = self._join_imports(program, relocation, deltas)
        program, relocation, lowered, inlined = self._written_out(program, relocation, deltas)
        statements = program.statements
        checks = self.checks = StatementChecks(self.tensors, diags, self.memory.locals, moved,
                                               self.remember, deltas)
        axis_decls: dict[str, ir.AxisDecl] = {}
        try:
            axis_decls = collect_definitions(statements, self.tensors, diags, deltas)
            for k, stmt in enumerate(statements):
                checks.check(k, stmt)
            source_info = self._read_sources()
            padded = any(decl.padding == "valid" for decl in axis_decls.values())
            unification = Unification(self.domains, self.tensors, diags,
                                      window_positions(statements)[0] if padded else None)
            statement_ops = checks.placed_ops()
            unification.run(statement_ops,
                            [(local.role_names, local.var_keys)
                             for local in checks.by_number.values()], axis_decls, source_info)
            order = evaluation_order(statements, self.tensors, checks.deps, diags,
                                     self.memory.sccs, self.remember, program.text, deltas)
            if unification.valued:  # (a statement's variables' keys hold its stamp)
                # (rare: the statements copied where the text has them, not read with deltas)
                check_values([(shifted(local.stmt, deltas[id(local.stmt)])
                               if id(local.stmt) in deltas else local.stmt,
                               local.var_keys[0][1] if local.var_keys else None)
                              for local in checks.by_number.values()], unification.valued,
                             order.groups, self.tensors, self.domains, diags)
            check_constant_comparisons(checks.by_number.values(), deltas, self.tensors, self.domains, diags)
            unification.check_extents(checks.broadcast, statement_ops, checks.placed_by_stamp,
                                      len(self.text))
            self._lone_indices(checks, statements, inlined, diags)
            padding_indices(statements, axis_decls, deltas, len(self.text), diags)
            check_constants(statements, self.tensors, self.domains, diags,
                            None if deltas else checks.refs_of, deltas)
            close_empty_columns(self.domains, self.tensors)
            check_datalog(statements, self.tensors, order.groups, order.recursive,
                          checks.deps, diags, checks.remembered if self.remember else None)
            aggregates_over_absent(statements, self.tensors, deltas, self.text, diags)
            check_unused(statements, self.tensors, checks.read, checks.exports, diags)
            check_losses(statements, self.tensors, checks.deps, diags)
            self._sinks_and_initialisers(statements, deltas, diags)
            # what a run would refuse before computing (check agrees with run)
            RunRefusals(statements, self.tensors, self.domains, checks.by_number, checks.placed,
                        deltas, inlined).check(order.groups, order.recursive, diags)
        except RecursionError:
            diags.append(make("nesting-too-deep", "the program is nested too deeply to analyse",
                              Span(0, 0)))
            order = EvaluationOrder((), frozenset(), {}, None)
        self.memory_used = _Memory(checks.cache_used, None, order.memo)
        diags = self._placed(diags, parsed, lowered, inlined, resolved)
        # The tensors, var_extents and domain_symbols are made only when first read:
        # `fuse check` reads none of them, and the editor's diagnostics none either
        # (they are published first).  An Analyzer's memory of the TensorInfos is
        # filled then (in memory_used, which the next analysis reads when its own
        # tables are made): a version whose tables were never read leaves none.
        roles, scopes = checks.tables()
        tensors = var_extents = domain_symbols = Deferred(self._tables)
        return Analysis(
            path=self.path, base_dir=self.base_dir,
            text=self.text if resolved is None else program.text,
            lines=LineIndex(self.text), program=relocation if deltas else program,
            diagnostics=tuple(diags),
            tensors=tensors, roles=roles, scopes=scopes,
            var_extents=var_extents, domain_symbols=domain_symbols,
            order=order.groups, recursive=order.recursive, exports=tuple(checks.exports),
            recursion=dict(order.recursion), inlined=inlined, lowered=lowered,
            imports=resolved.imports if resolved is not None else None,
            paddings={name: decl.padding for name, decl in axis_decls.items()
                      if decl.padding is not None})

    def _sinks_and_initialisers(self, statements: tuple[ir.Statement, ...],
                                deltas: dict[int, int], diags: list[Diagnostic]) -> None:
        """Two sinks of one file, a sink over a source the program reads, and the
        params' initialisers (each statement where the text has it)."""
        def placed(kind: type) -> list:
            return [shifted(s, deltas[id(s)]) if id(s) in deltas else s
                    for s in statements if type(s) is kind]
        sinks = placed(ir.Sink)
        if sinks:
            diags += repeated_sinks(sinks)
            diags += sinks_over_sources(sinks, [
                (name, sym.source.path) for name, sym in self.tensors.items()
                if sym.source is not None and "::" not in name], self.base_dir)
        check_initialisers(placed(ir.ParamDecl), diags)

    def _lone_indices(self, checks: StatementChecks, statements: tuple[ir.Statement, ...],
                      inlined: Inlined | None, diags: list[Diagnostic]) -> None:
        """`lone-index` and `normalised-sum`: of the program's equations, and of its
        functions' bodies where they are written (not at each call)."""
        def definitions(name: str) -> list[ir.Statement]:
            return [statements[k] for k in self.tensors[name].statements] \
                if name in self.tensors else []
        origins = inlined.origins if inlined else ()
        report_lone_indices(program_lone_indices(checks, origins),
                            self.domains, definitions, self.tensors, diags)
        report_inner_projections(statements, self.tensors, self.text, origins, diags)
        if inlined is not None:
            report_body_lone_indices(inlined, checks, self.domains, definitions, self.tensors,
                                     len(self.text), diags)

    def _written_out(self, program: ir.Program, relocation: Relocation,
                     deltas: dict[int, int]
                     ) -> tuple[ir.Program, Relocation, Lowered | None, Inlined | None]:
        """The program with its blocks and `let`s (front/let_blocks.py), then its
        functions' calls (front/functions.py) written out as plain equations."""
        inlined = lowered = None
        if has_blocks(program.statements):
            lowered = lower_blocks(program.statements, program.text, deltas)
            self.diags.extend(lowered.diagnostics)
            program = ir.Program(lowered.statements, program.text)
            relocation = relocation.replaced(lowered.statements)
        if has_functions(program.statements):
            program, relocation, inlined = self._inline(program, relocation, deltas)
        return program, relocation, lowered, inlined

    def _placed(self, diags: list[Diagnostic], parsed: ParseResult, lowered: Lowered | None,
                inlined: Inlined | None, resolved: Resolved | None) -> list[Diagnostic]:
        """The diagnostics where the user wrote what they are about (a local under
        its written name, at a `fn`'s call, at the import of a file), in text
        order, cascades of syntax errors left out."""
        left_out = parsed.diagnostics
        if lowered is not None:  # (statements reading a local out of scope: left out)
            diags, left_out = plain_messages(diags), left_out + lowered.diagnostics
        if inlined is not None:
            diags = placed_in_calls(diags, inlined)
            left_out += inlined.diagnostics  # (statements whose calls fail are left out too)
        if resolved is not None:
            diags = placed_at_imports(diags, resolved)
        # (a statement left out for a syntax error: no undefined or unused names from it)
        diags = quiet_cascades(self.text, parsed.statement_spans, left_out, diags)
        diags = said_already(diags, left_out)
        return sorted(diags, key=lambda d: (d.span.start, d.span.end))[:MAX_DIAGNOSTICS]
    def _join_imports(self, program: ir.Program, relocation: Relocation,
                      deltas: dict[int, int]) -> tuple[ir.Program, Relocation, Resolved]:
        """The program with the definitions of the files it imports joined after its
        own statements (check/imports.py), and its relocation for them."""
        resolved = resolve_imports(program.statements, self.path, self.base_dir, self.text,
                                   self.import_cache, deltas)
        self.diags.extend(resolved.diagnostics)
        program_text = ProgramText(self.text, resolved.imports)
        return (ir.Program(resolved.statements, program_text),
                relocation.replaced(resolved.statements, program_text), resolved)

    def _inline(self, program: ir.Program, relocation: Relocation, deltas: dict[int, int]
                ) -> tuple[ir.Program, Relocation, Inlined | None]:
        """The program with its functions' calls written out (front/functions.py), its
        relocation for those statements, and what the inlining recorded (None when
        the program is nested past Python's stack: `nesting-too-deep`)."""
        try:
            inlined = inline_functions(program.statements, deltas)
        except RecursionError:
            self.diags.append(make("nesting-too-deep", "the program is nested too deeply to "
                                   "analyse", Span(0, 0)))
            kept = tuple(s for s in program.statements if type(s) is not ir.FnDef)
            return ir.Program(kept, program.text), relocation.replaced(kept), None
        self.diags.extend(inlined.diagnostics)
        self.diags.extend(inlined.warnings)
        self.diags.extend(body_diagnostics(inlined, len(self.text)))
        return (ir.Program(inlined.statements, program.text),
                relocation.replaced(inlined.statements), inlined)

    def _tables(self) -> tuple[dict[str, TensorInfo], dict, dict]:
        """The analysis' tensors, var_extents and domain_symbols (see results.Tables).
        Reads only what run has finished with."""
        assert self.checks is not None
        with gc_paused():  # as in Analyzer.analyze: when deferred, this runs after it
            tables = Tables(self.domains, self.tensors, self.checks.by_number,
                            self.memory.infos, self.remember)
            made = tables.make()
            self.memory_used.infos = tables.used
            return made

    # ------------------------------------------------------------ sources
    def _reads_at_arity(self, given: dict[str, TensorSymbol]) -> None:
        """The tensors `given` had their arity from their data (a bare `W = "w.npy"`,
        or an input): the references checked before it was known are checked now,
        in one pass over the statements for all of them."""
        if not given:
            return
        assert self.checks is not None
        placed = self.checks.placed
        for k, local in self.checks.by_number.items():
            for ref in local.refs:
                sym = given.get(ref.name)
                if sym is not None and ref.indices is not None and ref.arity != sym.arity:
                    self.diags.append(arity_mismatch(ref, sym, placed.get(k, 0)))

    def _read_sources(self) -> dict[str, SourceInfo]:
        """Each source tensor's file header (or the input shape given instead),
        checked against the tensor's arity."""
        source_info: dict[str, SourceInfo] = {}
        given: dict[str, TensorSymbol] = {}  # arities their data gave (_reads_at_arity)
        for sym in self.tensors.values():
            src = sym.source
            if sym.name in self.input_shapes:
                if sym.arity is None:
                    given[sym.name] = sym
                self._input_shape(sym, self.input_shapes[sym.name])
                continue
            if src is None:
                continue
            info = read_declared_source(self.base_dir, src, sym.name, sym.boolean)
            if isinstance(info, Diagnostic):
                self.diags.append(info)
                continue
            if info.header is not None:
                self.diags.append(header_row(src, info.header))
            rank = len(info.columns) if sym.boolean and info.columns is not None else \
                len(info.shape or ())
            if sym.arity is None:
                given[sym.name] = sym
                sym.arity = rank
            elif _stored_arity(sym) != rank and not (sym.boolean and info.columns is not None
                                                        and info.rows == 0):
                stored = _stored_arity(sym)
                also = " (its virtual axis is iterated, not read from a file)" \
                    if stored != sym.arity else ""
                self.diags.append(make(
                    "arity-mismatch", f"`{sym.name}` is written with {stored} "
                    f"{'axis' if stored == 1 else 'axes'}{also} but `{src.path.value}` holds "
                    f"{rank}{_columns_hint(sym.boolean, info, stored)}", src.path.span))
                continue
            source_info[sym.name] = info
        self._reads_at_arity(given)
        return source_info

    def _input_shape(self, sym: TensorSymbol, shape: tuple[int, ...]) -> None:
        if sym.arity is None:
            sym.arity = len(shape)
        if len(shape) != _stored_arity(sym):
            self.diags.append(make(
                "arity-mismatch", f"the input for `{sym.name}` has {len(shape)} axes but "
                f"`{sym.name}` has {_stored_arity(sym)}", sym.first_span))
            return
        for pos, extent in zip(_stored(sym), shape):
            self.domains.set_extent(("axis", sym.name, pos), Evidence(
                int(extent), sym.first_span, f"the input given for {sym.name}"))


def _stored(sym: TensorSymbol) -> list[int]:
    """The positions of `sym`'s axes that a file or an input gives: all but its
    virtual ones (the steps of a recurrence are iterated, not stored)."""
    if sym.first.indices is None:
        return list(range(sym.arity or 0))
    return stored_positions(sym.first)


def _stored_arity(sym: TensorSymbol) -> int:
    return len(_stored(sym)) if sym.arity is not None else 0


def _columns_hint(boolean: bool, info: SourceInfo, stored: int) -> str:
    """Why a relation file holds another number of columns than the tensor, where its
    cells tell: a last column empty on every line (a delimiter at each line's end),
    or one column whose every cell splits at another separator into as many as the
    tensor has (`a;b` in a `.csv` of semicolons)."""
    columns = info.columns if boolean else None
    if not columns:
        return ""
    if len(columns) == stored + 1 and set(columns[-1]) == {""}:
        return ", its last one empty on every line (a delimiter at each line's end?)"
    if len(columns) == 1 and stored > 1 and columns[0]:
        for sep, said in ((";", "semicolons"), ("\t", "tabs"), (",", "commas"),
                          (" ", "spaces")):
            if all(type(v) is str and len(v.split(sep)) == stored for v in columns[0]):
                return f", and every cell of it splits at {said} into {stored} (a file " \
                       f"separated by {said}? a .csv separates by commas, a .tsv by tabs)"
    return ""
