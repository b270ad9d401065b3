"""Compiling and running programs: `fuse_lang.compile(text).run(inputs)`.

The engine walks the evaluation order of the analysis (dependencies first),
evaluates each tensor from its sources, facts and equations, runs recursive
groups to a fixpoint (semi-naive for Boolean joins), computes recurrences
over an offset or a virtual index in order, answers queries and writes sinks.
Only what the exports, queries and sinks need is computed (backward chaining
at the level of tensors).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..front import ir
from .backends import BackendError, get_backend
from ..check import Analysis, analyze
from ..front.diagnostics import Diagnostic, Severity
from .evaluate import (ConstantFolding, EvaluationError, Evaluator, StatementInfo, equation_op,
                       statement_info, write_lhs)
from .files import FileProblem, check_sink_path, load_dense, relation_rows, write_sink
from .labelled import LArray
from ..check.symbols import slice_name

DEFAULT_MAX_ITERATIONS = 1000
DEFAULT_TOLERANCE = 1e-6
DEFAULT_MEMORY_FRACTION = 0.5


class FuseError(Exception):
    """A program that cannot be compiled or run. `diagnostics` says where and why."""

    def __init__(self, message: str, diagnostics: tuple[Diagnostic, ...] = ()) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


@dataclass
class QueryAnswer:
    text: str
    tensor: str
    value: np.ndarray  # the tensor with the query's constants selected
    free: tuple[str, ...]  # the query's variables, one per axis of value
    tuples: list[tuple] | None  # Boolean queries: the matching tuples, by name


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    queries: list[QueryAnswer] = field(default_factory=list)
    sinks: list[str] = field(default_factory=list)


def compile(source_text: str, backend: str = "numpy", device: str = "cpu",
            base_dir: str | os.PathLike = ".", *, precision: str = "fp32",
            path: str | None = None, memory_limit: int | None = None,
            allow_outside_sinks: bool = False, max_iterations: int = DEFAULT_MAX_ITERATIONS,
            tolerance: float = DEFAULT_TOLERANCE, compiled: bool | None = None
            ) -> "CompiledProgram":
    """Check a program and prepare it to run; raises FuseError on errors.

    backend: "numpy" (the reference), "torch" or "jax"; device: "cpu", "cuda",
    "cuda:N" or "auto"; precision: "fp32", "fp64", "bf16" or "fp16" where the
    backend and device support it.  compiled: run straight runs of equations
    as compiled graphs (jax.jit; torch.compile) - the default for jax, on
    request for torch, not available for numpy."""
    try:
        B = get_backend(backend, device, precision)
    except BackendError as err:
        raise FuseError(str(err)) from None
    if compiled is None:
        compiled = B.compiles_by_default
    if compiled and not hasattr(B, "compile_segment"):
        raise FuseError(f"the {backend} backend runs eagerly only; compiled runs need the "
                        f"jax or torch backend")
    analysis = analyze(source_text, path, base_dir)
    # a missing source file may still be given at run time (runtime inputs override a
    # source's file, LANGUAGE.md §9): then `run` without that input reports it
    _raise_on_errors(analysis, deferred=("missing-source",))
    return CompiledProgram(analysis, B, Path(base_dir), memory_limit, allow_outside_sinks,
                           max_iterations, tolerance, compiled)


def _raise_on_errors(analysis: Analysis, deferred: tuple[str, ...] = ()) -> None:
    errors = tuple(d for d in analysis.diagnostics if d.severity is Severity.ERROR)
    if errors and not all(d.code in deferred for d in errors):
        first = errors[0]
        line, col = analysis.lines.position(first.span.start)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise FuseError(f"line {line + 1}, column {col + 1}: {first.message} [{first.code}]"
                        f"{more}", errors)


class CompiledProgram:
    def __init__(self, analysis: Analysis, backend: Any, base_dir: Path,
                 memory_limit: int | None, allow_outside_sinks: bool, max_iterations: int,
                 tolerance: float, compiled: bool = False) -> None:
        self.analysis = analysis
        self.backend = backend
        self.base_dir = base_dir
        self.memory_limit = memory_limit
        self.allow_outside_sinks = allow_outside_sinks
        self.max_iterations = max_iterations
        self.tolerance = tolerance
        self.compiled = compiled
        # how many times a straight run of equations was traced into a graph; a
        # second run with inputs of the same shapes and dtypes adds none
        self.compilations = 0
        # per input-shape signature: the analysis, statement plans, and a memo of
        # what a run derives from shapes alone (needed tensors, shapes, checks)
        self._by_shapes: dict[tuple, tuple[Analysis, dict[int, StatementInfo], dict]] = {}

    @property
    def exports(self) -> tuple[str, ...]:
        return self.analysis.exports

    def run(self, inputs: Mapping[str, Any] | None = None, *,
            write_sinks: bool = True) -> dict[str, np.ndarray]:
        """Run the program; returns each export (or, with none, each leaf tensor)
        as a NumPy array."""
        return self.execute(inputs, write_sinks=write_sinks).outputs

    def run_native(self, inputs: Mapping[str, Any] | None = None, *,
                   write_sinks: bool = True) -> dict[str, Any]:
        """As `run`, but the outputs stay the backend's own tensors, on its device
        (no copy back).  Inputs may be NumPy arrays or the backend's tensors."""
        return self.execute(inputs, write_sinks=write_sinks, native=True).outputs

    def execute(self, inputs: Mapping[str, Any] | None = None, *,
                write_sinks: bool = True, native: bool = False) -> RunResult:
        # a framework tensor stays as it is (moved to the device once, when read)
        given = {name: value if hasattr(value, "shape") and hasattr(value, "dtype")
                 and not isinstance(value, np.ndarray) else np.asarray(value)
                 for name, value in (inputs or {}).items()}
        analysis, infos, memo = self._prepared(given)
        with self.backend.context():
            return _Run(self, analysis, infos, given, write_sinks, memo, native).go()

    def _prepared(self, given: dict[str, np.ndarray]
                  ) -> tuple[Analysis, dict[int, StatementInfo], dict]:
        for name in given:
            info = self.analysis.tensors.get(name)
            if info is None or info.kind not in ("source", "relation source", "param"):
                sources = [n for n, t in self.analysis.tensors.items()
                           if t.kind in ("source", "relation source", "param")]
                raise FuseError(f"the input `{name}` is not a source or param of this program "
                                f"(those are: {', '.join(sources) or 'none'})")
        key = tuple(sorted((n, tuple(a.shape)) for n, a in given.items()))
        if key not in self._by_shapes:
            analysis = self.analysis
            if given:
                analysis = analyze(self.analysis.text, self.analysis.path, self.base_dir,
                                   input_shapes={n: tuple(a.shape) for n, a in given.items()})
            _raise_on_errors(analysis)
            infos = {k: statement_info(analysis, k)
                     for k, s in enumerate(analysis.program.statements)
                     if isinstance(s, (ir.Equation, ir.Sink, ir.Query))}
            self._by_shapes[key] = (analysis, infos, {})
        return self._by_shapes[key]


class _Run:
    def __init__(self, program: CompiledProgram, analysis: Analysis,
                 infos: dict[int, StatementInfo], given: dict[str, Any],
                 write_sinks: bool, memo: dict | None = None, native: bool = False) -> None:
        self.memo = memo if memo is not None else {}
        self.p = program
        self.B = program.backend
        self.a = analysis
        self.infos = infos
        self.given = given
        self.write_sinks = write_sinks
        self.native = native
        self.values: dict[str, Any] = {}
        self.statements = analysis.program.statements
        self.bases: dict[str, Any] | None = None  # inside a compiled segment: its bases

    # ------------------------------------------------------------ driver
    def go(self) -> RunResult:
        needed = self._memo(("needed", self.write_sinks), self._needed)
        self._memo(("guard", self.write_sinks), lambda: self._guard_memory(needed) or True)
        groups = self._memo(("groups", self.write_sinks), lambda: [
            (list(g), self._single_equation(g)) for g in self.a.order
            if any(n in needed for n in g)])
        if self.p.compiled:
            segments = self._memo(("segments", self.write_sinks), lambda: _segments(
                groups, self.a.recursive))
            for number, (straight, items) in enumerate(segments):
                if straight:
                    self._compiled_segment(("segment", self.write_sinks, number), items)
                else:
                    for group, single in items:
                        if hasattr(self.B, "while_loop") and self._looped(group):
                            self._compiled_loop(("loop", self.write_sinks, number), group)
                        elif self._looped(group):
                            self._compiled_rounds(("round", self.write_sinks, number), group)
                        else:
                            self._one(group, single)
        else:
            release = self._memo(("release", self.write_sinks), lambda: self._releases(groups))
            for number, (group, single) in enumerate(groups):
                self._one(group, single)
                for name in release.get(number, ()):
                    del self.values[name]  # read by nothing later: its memory goes back now
        result = RunResult(self._outputs())
        answers = self._memo("answers", lambda: [
            (k, s) for k, s in enumerate(self.statements) if isinstance(s, (ir.Query, ir.Sink))])
        for k, stmt in answers:
            if isinstance(stmt, ir.Query):
                result.queries.append(self._query(k, stmt))
            elif self.write_sinks:
                result.sinks.append(self._sink(k, stmt))  # type: ignore[arg-type]
        return result

    def _releases(self, groups: list) -> dict[int, list[str]]:
        """After which group each intermediate tensor is read for the last time
        (outputs, queried tensors, what sinks read and leaves are kept)."""
        deps = self._memo("dependencies", self._dependencies)
        kept = set(self._roots(sinks=True))
        last: dict[str, int] = {}
        for number, (group, _) in enumerate(groups):
            for name in group:
                for read in deps.get(name, ()):
                    if read not in group:
                        last[read] = number
        out: dict[int, list[str]] = {}
        for name, number in last.items():
            if name not in kept:
                out.setdefault(number, []).append(name)
        return out

    def _one(self, group: list[str], single: int | None) -> None:
        """Compute one group of the evaluation order (a tensor, or a recursive group).
        A tensor that the program text alone fixes (constants, masks, what is
        computed from them only) is computed once per shape signature."""
        constant = self.bases is None and group[0] in self._memo("constants", self._constants)
        if constant and ("value", group[0]) in self.memo:
            self.values[group[0]] = self.memo["value", group[0]]
            return
        try:  # as _locating does, without a context manager on this hot path
            if single is not None:
                # one equation, nothing else: its contribution is the value
                self.values[group[0]] = self._contribution(single, self._shape(group[0]))
            else:
                self._group(group)
        except FuseError:
            raise
        except _RUN_FAILURES as err:
            raise self._located(group, err) from None
        if constant:
            self.memo["value", group[0]] = self.values[group[0]]

    def _constants(self) -> set[str]:
        """Tensors that depend on no input, source file or param: not recursive, not
        read from outside, and reading only such tensors."""
        deps = self._memo("dependencies", self._dependencies)
        out: set[str] = set()
        for group in self.a.order:
            for name in group:
                info = self.a.tensors[name]
                if (len(group) == 1 and name not in self.a.recursive and name not in self.given
                        and info.kind not in ("source", "relation source", "param")
                        and all(d in out for d in deps.get(name, ()))):
                    out.add(name)
        return out

    @contextlib.contextmanager
    def _locating(self, group: list[str]) -> Iterator[None]:
        """A failure while computing `group` says which statement it was."""
        try:
            yield
        except FuseError:
            raise
        except _RUN_FAILURES as err:
            raise self._located(group, err) from None

    def _compiled_segment(self, key: tuple, items: list) -> None:
        """A straight run of non-recursive tensors as one compiled graph."""
        reads, keeps = self._memo(("segment io",) + key, lambda: self._segment_io(
            [group[0] for group, _ in items]))

        def segment(run: _Run, extra: dict) -> dict:
            for group, single in items:
                run._one(group, single)
            return {name: run.values[name] for name in keeps}

        graph = self._graph(key, segment)
        bases = self._bases_of([group for group, _ in items])
        self.values.update(graph({n: self.values[n] for n in reads if n in self.values},
                                 {"bases": bases}))

    def _segment_io(self, names: list[str]) -> tuple[list[str], list[str]]:
        """What a straight segment reads from earlier ones, and which of its tensors
        it hands back: every tensor its equations compute, and an input or source
        it only passes through, or a constant (a mask, say) that it folds in, when
        something after it reads that (or the run returns it).  Handing back the
        computed intermediates is measured to be faster on XLA's CPU backend
        (benchmarks/attention_backends.py): without them it fuses the projections,
        the scores and the softmax into one slow kernel; passing inputs through
        would only copy them."""
        deps = self._memo("dependencies", self._dependencies)
        inside = set(names)
        reads = sorted({d for n in names for d in deps.get(n, ()) if d not in inside})
        read_outside = {d for n, ds in deps.items() if n not in inside for d in ds}
        read_at_all = {d for ds in deps.values() for d in ds}
        roots = set(self._roots(sinks=True))
        constants = self._memo("constants", self._constants)
        keeps = [n for n in names if (self._equations(n) and n not in constants)
                 or n in roots or n in read_outside or n not in read_at_all]
        return reads, keeps

    def _graph(self, key: tuple, body: Callable[["_Run", dict], Any]) -> Callable:
        """`body(run, extra)` compiled by the backend, once per shape signature.
        Whatever comes from outside the program text (inputs, source files,
        params) is an argument of the graph (`extra["bases"]`), never a constant
        in it: a second run with new values reuses the graph and computes with the
        new values.  The graph's own run of the engine reads only its arguments."""
        program, analysis, infos, given, memo = self.p, self.a, self.infos, self.given, self.memo

        def traced(values: dict, extra: dict) -> Any:
            run = _Run(program, analysis, infos, given, False, memo)
            run.values = dict(values)
            run.bases = extra["bases"]
            return body(run, extra)

        def count() -> None:
            program.compilations += 1

        return self._memo(key, lambda: self.B.compile_segment(traced, count))

    def _bases_of(self, groups: list[list[str]]) -> dict[str, Any]:
        """The inputs, sources, params and facts of the groups' tensors (those that
        have any), read now; a failure names the group."""
        bases = {}
        for group in groups:
            with self._locating(group):
                for name in group:
                    base, _ = self._base(name)
                    if base is not None:
                        bases[name] = base
        return bases

    def _looped(self, group: list[str]) -> bool:
        """A recursive group that runs to a fixpoint (not a recurrence in order)."""
        return self._memo(("looped", tuple(group)), lambda: len(group) > 1 or (
            group[0] in self.a.recursive and self._sequential_var(group[0]) is None))

    def _compiled_loop(self, key: tuple, group: list[str]) -> None:
        """A fixpoint as one compiled graph with the loop inside it (a framework
        while-loop: no round trip to Python between rounds)."""
        bases = self._bases_of([group])
        with self._locating(group):
            for name in group:
                self._shape(name)  # an unknown extent is reported here, located

        def loop(run: _Run, extra: dict) -> tuple[dict, dict]:
            with run._locating(group):
                return run._fixpoint_in_graph(group)

        members, outcome = self._graph(key, loop)(dict(self.values), {"bases": bases})
        self._finish_loop(group, members, outcome)

    def _finish_loop(self, group: list[str], members: dict, outcome: dict) -> None:
        with self._locating(group):
            self._loop_outcome(group, {k: float(v) for k, v in outcome.items()})
        self.values.update(members)

    def _located(self, group, err: Exception) -> FuseError:
        name = group[0]
        info = self.a.tensors[name]
        k = info.statements[0] if info.statements else 0
        stmt = self.statements[k]
        line = self.a.lines.position(stmt.span.start)[0] + 1
        text = self.a.text[stmt.span.start:stmt.span.end]
        return FuseError(f"line {line}: `{text}`: {err}")

    def _memo(self, key, compute):
        """What depends on shapes only is derived once per input-shape signature."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def _roots(self, sinks: bool) -> list[str]:
        """What a run hands back: exports, queried tensors, and (with `sinks`) what
        the sinks read."""
        roots: list[str] = list(self.a.exports)
        for stmt in self.statements:
            if isinstance(stmt, ir.Query):
                roots.append(stmt.atom.name)
            elif isinstance(stmt, ir.Sink) and sinks:
                roots.extend(r.name for r in ir.refs(stmt.rhs) if r.name in self.a.tensors)
        return roots

    def _needed(self) -> set[str]:
        roots = self._roots(self.write_sinks)
        if not roots:
            return set(self.a.tensors)
        deps = self._memo("dependencies", self._dependencies)
        needed: set[str] = set()
        stack = [r for r in roots if r in self.a.tensors]
        while stack:
            name = stack.pop()
            if name in needed:
                continue
            needed.add(name)
            stack.extend(deps.get(name, ()))
        return needed

    def _dependencies(self) -> dict[str, set[str]]:
        deps: dict[str, set[str]] = {}
        for stmt in self.statements:
            if isinstance(stmt, ir.Equation):
                deps.setdefault(stmt.lhs.name, set()).update(
                    r.name for r in ir.refs(stmt.rhs) if r.name in self.a.tensors)
        return deps

    def _guard_memory(self, needed: set[str]) -> None:
        itemsize = getattr(self.B, "itemsize", 4)
        total = 0
        largest = (0, "")
        for name in needed:
            shape = self.a.tensors[name].shape
            if any(e is None for e in shape):
                continue
            size = int(np.prod(shape, dtype=np.int64)) * itemsize
            total += size
            largest = max(largest, (size, name))
        # the plan's largest intermediate (a join before its projection) also lives
        # in memory while its equation runs
        from ..plan import plan_program

        peak = (0, "")
        for eq in plan_program(self.a).equations:
            if eq.largest_intermediate and eq.tensor in needed:
                peak = max(peak, (eq.largest_intermediate * itemsize, eq.tensor))
        limit = self.p.memory_limit if self.p.memory_limit is not None else _default_limit()
        if total + peak[0] > limit:
            during = (f" plus {_bytes(peak[0])} while computing {peak[1]}" if peak[0] else "")
            raise FuseError(f"this run needs about {_bytes(total)} for its tensors (the largest, "
                            f"{largest[1]}, {_bytes(largest[0])}){during}, over the limit of "
                            f"{_bytes(limit)}; nothing was run")

    # ------------------------------------------------------------ groups
    def _group(self, group: list[str]) -> None:
        name = group[0]
        if len(group) == 1 and name not in self.a.recursive:
            self.values[name] = self._tensor(name)
            return
        if len(group) == 1:
            seq = self._sequential_var(group[0])
            if seq is not None:
                self.values[group[0]] = self._sequential(group[0], *seq)
                return
        self._fixpoint(group)

    def _single_equation(self, group) -> int | None:
        """The statement of a tensor that is exactly one equation (nothing to combine)."""
        name = group[0]
        info = self.a.tensors[name]
        if (len(group) == 1 and name not in self.a.recursive and name not in self.given
                and info.kind == "dense" and not info.boolean and len(info.statements) == 1
                and len(self._equations(name)) == 1):
            return self._equations(name)[0]
        return None

    def _shape(self, name: str) -> tuple[int, ...]:
        return self._memo(("shape", name), lambda: self._shape_of(name))

    def _shape_of(self, name: str) -> tuple[int, ...]:
        shape = self.a.tensors[name].shape
        if any(e is None for e in shape):
            missing = [a.index or str(k) for k, a in enumerate(self.a.tensors[name].axes)
                       if a.extent is None and not a.virtual]
            raise EvaluationError(f"the extent of `{name}`'s axis {', '.join(missing)} is not "
                                  f"known")
        return tuple(int(e) for e in shape)  # type: ignore[arg-type]

    def _base(self, name: str) -> tuple[Any, bool]:
        """Sources, inputs, params and facts of a tensor; and whether it has any."""
        if self.bases is not None:  # inside a compiled segment: they are its arguments
            return self.bases.get(name), name in self.bases
        info = self.a.tensors[name]
        shape = self._shape(name)
        B = self.B
        if name in self.given:
            data = self.given[name]
            if info.boolean:
                data = (data > 0)
            return B.asarray(data), True
        facts = [self.statements[k] for k in info.statements
                 if isinstance(self.statements[k], ir.Fact)]
        if info.kind in ("source", "relation source"):
            path = self.p.base_dir / (info.source_path or "")
            if info.boolean and path.suffix.lower() not in (".npy", ".npz"):
                data = B.to_numpy(self._relation(name, path, shape))
            else:
                data = load_dense(path, name, np.float64)
                if data.shape != shape:
                    raise EvaluationError(f"{info.source_path} holds shape {data.shape}, "
                                          f"expected {shape}")
                if info.boolean:
                    data = (data > 0).astype(np.float64)
            if facts:  # a Boolean tensor is the union of its facts and its relation file
                data = np.array(data, dtype=np.float64)
                for fact in facts:
                    data[self._positions(name, fact.atom)] = 1.0
            return B.asarray(data), True
        if info.kind == "param":
            return B.asarray(_param_init(name, shape)), True
        if facts:
            out = np.zeros(shape)
            for fact in facts:
                out[self._positions(name, fact.atom)] = 1.0
            return B.asarray(out), True
        return None, False

    def _positions(self, name: str, atom: ir.Ref) -> tuple[int, ...]:
        info = self.a.tensors[name]
        out = []
        for pos, index in enumerate(atom.indices or ()):
            assert isinstance(index, ir.IndexConst)
            if isinstance(index.value, int):
                out.append(index.value)
            else:
                out.append(self.a.domain_symbols[info.axes[pos].domain].index(index.value))
        return tuple(out)

    def _relation(self, name: str, path: Path, shape: tuple[int, ...]) -> Any:
        info = self.a.tensors[name]
        out = np.zeros(shape)
        for row in relation_rows(path):
            position = []
            for pos, cell in enumerate(row):
                if isinstance(cell, int):
                    position.append(cell)
                else:
                    position.append(self.a.domain_symbols[info.axes[pos].domain].index(cell))
            out[tuple(position)] = 1.0
        return self.B.asarray(out)

    def _equations(self, name: str) -> list[int]:
        return self._memo(("equations", name), lambda: self._equations_of(name))

    def _equations_of(self, name: str) -> list[int]:
        return [k for k in self.a.tensors[name].statements
                if isinstance(self.statements[k], ir.Equation)]

    def _contribution(self, k: int, shape: tuple[int, ...], fixed: dict[str, int] | None = None,
                      overrides: dict[int, Any] | None = None, skip: int | None = None) -> Any:
        info = self.infos[k]
        stmt = info.stmt
        assert isinstance(stmt, ir.Equation)
        folded = None
        if self.bases is None and not fixed and not overrides:  # eager, not a row or a delta
            folded = self._memo("folded", lambda: ConstantFolding(
                self._memo("constants", self._constants)))
        ev = Evaluator(self.B, self.a, info, self.values, fixed, overrides, folded)
        value = ev.scope(stmt.rhs, 0)
        return write_lhs(self.B, self.a, info, value, shape, equation_op(stmt), fixed, skip)

    def _combine(self, name: str, base: Any, parts: list[Any]) -> Any:
        B = self.B
        info = self.a.tensors[name]
        op = info.op or "="
        total = base
        for part in parts:
            if total is None:
                total = part
            elif op == "max=":
                total = B.maximum(total, part)
            elif op == "min=":
                total = B.minimum(total, part)
            else:
                total = total + part
        if op == "avg=" and len(parts) > 1:
            total = total / len(parts)
        if total is None:
            total = B.zeros(self._shape(name))
        if info.boolean:
            total = B.step(total)
        return total

    def _tensor(self, name: str) -> Any:
        shape = self._shape(name)
        base, _ = self._base(name)
        if name in self.given:
            return base
        parts = [self._contribution(k, shape) for k in self._equations(name)]
        return self._combine(name, base, parts)

    # ------------------------------------------------------- recursion
    def _sequential_var(self, name: str) -> tuple[str, int, bool] | None:
        """(index, LHS position, virtual) when the tensor is a recurrence over one index."""
        found = None
        for k in self._equations(name):
            stmt = self.statements[k]
            assert isinstance(stmt, ir.Equation)
            for pos, index in enumerate(stmt.lhs.indices or ()):
                if isinstance(index, ir.IndexVirtual):
                    return ir.index_vars(index)[0].name, pos, True
            for ref in ir.refs(stmt.rhs):
                if ref.name != name:
                    continue
                for pos, index in enumerate(ref.indices or ()):
                    if isinstance(index, ir.IndexShift) and len(index.terms) == 1 \
                            and index.offset < 0:
                        lhs_index = (stmt.lhs.indices or ())[pos] if pos < len(
                            stmt.lhs.indices or ()) else None
                        if isinstance(lhs_index, ir.IndexVar) and \
                                lhs_index.name == index.terms[0].name:
                            found = (lhs_index.name, pos, False)
                            break
                else:
                    continue
                break
            else:
                continue
            return found
        return found

    def _sequential(self, name: str, var: str, position: int, virtual: bool) -> Any:
        B = self.B
        shape = self._shape(name)
        equations = self._equations(name)
        base, _ = self._base(name)
        extent = None
        for k in equations:
            extent = self.infos[k].extents.get(var)
            if extent is not None:
                break
        if extent is None:
            raise EvaluationError(f"the number of steps (the extent of `{var}`) is not known")
        if virtual:
            state = base if base is not None else B.zeros(shape)
            for step in range(extent):
                self.values[name] = state
                parts = [self._contribution(k, shape, {var: step}) for k in equations]
                state = self._combine(name, None, parts)
            return state
        # a recurrence over an offset index: row by row, in order.  An equation
        # writing `var`'s position applies at every step; one writing a
        # constant there (`A[0,s] = Init[s]`) applies at that step only.
        current = B.to_numpy(base).copy() if base is not None else np.zeros(shape)
        row_shape = shape[:position] + shape[position + 1:]
        at_step: list[tuple[int, int | None]] = []
        for k in equations:
            stmt = self.statements[k]
            assert isinstance(stmt, ir.Equation)
            index = (stmt.lhs.indices or ())[position]
            if isinstance(index, ir.IndexVar) and index.name == var:
                at_step.append((k, None))
            elif isinstance(index, ir.IndexConst) and isinstance(index.value, int):
                at_step.append((k, index.value))
            else:
                raise EvaluationError(f"in a recurrence over `{var}`, each equation of "
                                      f"`{name}` writes `{var}` or a constant position there")
        for step in range(extent):
            self.values[name] = B.asarray(current)
            parts = [self._contribution(k, row_shape, {var: step} if only is None else None,
                                        skip=position)
                     for k, only in at_step if only is None or only == step]
            if not parts:
                continue
            row = self._combine(name, None, parts)
            index = (slice(None),) * position + (step,)
            current[index] = B.to_numpy(row)
        return B.asarray(current)

    def _start_group(self, group: list[str], bases: dict[str, Any] | None = None
                     ) -> tuple[dict, dict, bool]:
        """A recursive group's starting values (its bases, or zeros), set in
        self.values; its shapes, bases, and whether it is all Boolean."""
        B = self.B
        shapes = {n: self._shape(n) for n in group}
        if bases is None:
            bases = {n: self._base(n)[0] for n in group}
        bases = {n: bases.get(n) for n in group}
        for n in group:
            self.values[n] = bases[n] if bases[n] is not None else B.zeros(shapes[n])
            if self.a.tensors[n].boolean:
                self.values[n] = B.step(self.values[n])
        return shapes, bases, all(self.a.tensors[n].boolean for n in group)

    def _fixpoint(self, group: list[str]) -> None:
        B = self.B
        shapes, bases, boolean = self._start_group(group)
        if boolean and self._joins_only(group):
            self._semi_naive(group, shapes, bases)
            return
        change = float("inf")
        names = ", ".join(group)
        # overflow is detected below (values no longer finite), not warned about
        with np.errstate(over="ignore", invalid="ignore"):
            for iteration in range(1, self.p.max_iterations + 1):
                new = {n: self._combine(n, bases[n], [self._contribution(k, shapes[n])
                                                      for k in self._equations(n)])
                       for n in group}
                # one number per tensor comes back from the device; a value that
                # is no longer finite makes the change inf or nan
                step = float(B.max_of([B.max_abs_difference(new[n], self.values[n])
                                       for n in group]))
                if not np.isfinite(step):
                    raise EvaluationError(
                        f"{names} did not converge: after {iteration} iterations the values "
                        f"are no longer finite (the last change was {change:.3g} before that); "
                        f"check the recursion")
                change = step
                self.values.update(new)
                if change <= (0 if boolean else self.p.tolerance):
                    return
        raise EvaluationError(f"{names} did not converge in {self.p.max_iterations} "
                              f"iterations (the last change was {change:.3g}); raise the "
                              f"iteration limit or check the recursion")

    def _fixpoint_in_graph(self, group: list[str]) -> tuple[dict, dict]:
        """`_fixpoint` and `_semi_naive` as a backend while-loop, traced: the same
        rounds and the same stopping rule; what ended the loop comes back as
        numbers for `_loop_outcome` to judge (a traced loop cannot raise)."""
        semi_naive, state = self._loop_start(group)
        state = self.B.while_loop(lambda st: self._loop_goes_on(group, semi_naive, st),
                                  lambda st: self._loop_round(group, semi_naive, st), state)
        return self._loop_end(semi_naive, state)

    def _loop_start(self, group: list[str], bases: dict[str, Any] | None = None
                    ) -> tuple[bool, tuple]:
        """Whether the group runs semi-naively, and the loop's first state: (round,
        new facts pending, values, delta) or (iteration, change, change before, values)."""
        B = self.B
        shapes, bases, boolean = self._start_group(group, bases)
        if boolean and self._joins_only(group):
            full = {n: self._combine(n, bases[n], [self._contribution(k, shapes[n])
                                                   for k in self._first_round(n, bases)])
                    for n in group}
            delta = {n: B.step(B.where(self.values[n] > 0, 0.0, full[n])) for n in group}
            return True, (B.integer(0), B.any_positive(list(delta.values())), full, delta)
        infinite = B.asarray(float("inf"))
        return False, (B.integer(0), infinite, infinite, {n: self.values[n] for n in group})

    def _loop_goes_on(self, group: list[str], semi_naive: bool, state: tuple) -> Any:
        limit = self.p.max_iterations
        if semi_naive:
            return state[1] & (state[0] < limit)
        boolean = all(self.a.tensors[n].boolean for n in group)
        tolerance = 0.0 if boolean else self.p.tolerance
        return (state[0] < limit) & ((state[0] == 0) | (
            (state[1] > tolerance) & self.B.finite(state[1])))

    def _loop_round(self, group: list[str], semi_naive: bool, state: tuple) -> tuple:
        """One round, reading the group from the state and the rest from self.values."""
        B = self.B
        shapes = {n: self._shape(n) for n in group}
        if semi_naive:
            rounds, _, known, delta = state
            self.values.update(known)
            members = set(group)
            found = {}
            for n in group:
                total = B.zeros(shapes[n])
                for k in self._equations(n):
                    for ref in ir.refs(self.statements[k].rhs):  # type: ignore[union-attr]
                        if ref.name in members:
                            total = total + self._contribution(
                                k, shapes[n], overrides={id(ref): delta[ref.name]})
                found[n] = B.step(B.where(known[n] > 0, 0.0, total))
            grown = {n: known[n] + found[n] for n in group}
            return rounds + 1, B.any_positive(list(found.values())), grown, found
        iteration, change, _, current = state
        self.values.update(current)
        new = {n: self._combine(n, self._base(n)[0], [self._contribution(k, shapes[n])
                                                      for k in self._equations(n)])
               for n in group}
        step = B.max_of([B.max_abs_difference(new[n], current[n]) for n in group])
        return iteration + 1, step, change, new

    @staticmethod
    def _loop_end(semi_naive: bool, state: tuple) -> tuple[dict, dict]:
        if semi_naive:
            rounds, pending, known, _ = state
            return known, {"rounds": rounds, "pending": pending}
        iteration, change, before, current = state
        return current, {"iteration": iteration, "change": change, "before": before}

    def _compiled_rounds(self, key: tuple, group: list[str]) -> None:
        """A fixpoint on a backend that compiles graphs but not loops (torch): one
        round is the compiled graph, the loop runs here and reads one flag a round."""
        bases = self._bases_of([group])
        with self._locating(group):
            semi_naive, state = self._loop_start(group, bases)
        outside = {n: v for n, v in self.values.items() if n not in group}

        def one_round(run: _Run, extra: dict) -> tuple:
            return run._loop_round(group, semi_naive, extra["state"])

        graph = self._graph(key, one_round)
        with self._locating(group):
            while bool(self._loop_goes_on(group, semi_naive, state)):
                state = graph(outside, {"bases": bases, "state": state})
        self._finish_loop(group, *self._loop_end(semi_naive, state))

    def _loop_outcome(self, group: list[str], outcome: dict[str, float]) -> None:
        """The errors `_fixpoint` and `_semi_naive` raise, from a traced loop's end state."""
        names = ", ".join(group)
        limit = self.p.max_iterations
        if "rounds" in outcome:
            if outcome["pending"]:
                raise EvaluationError(f"{names} did not reach a fixpoint in {limit} rounds")
            return
        iteration, change, before = outcome["iteration"], outcome["change"], outcome["before"]
        if not np.isfinite(change):
            raise EvaluationError(
                f"{names} did not converge: after {int(iteration)} iterations the values are "
                f"no longer finite (the last change was {before:.3g} before that); check the "
                f"recursion")
        boolean = all(self.a.tensors[n].boolean for n in group)
        if change > (0 if boolean else self.p.tolerance):
            raise EvaluationError(f"{names} did not converge in {limit} iterations (the last "
                                  f"change was {change:.3g}); raise the iteration limit or "
                                  f"check the recursion")

    def _first_round(self, name: str, bases: dict[str, Any]) -> list[int]:
        """The join rules of `name` that can derive anything in a semi-naive first
        round: a rule joining a group member that starts empty derives nothing yet
        (its facts arrive as that member's delta in later rounds)."""
        empty = {n for n, base in bases.items() if base is None}
        out = []
        for k in self._equations(name):
            rhs = self.statements[k].rhs  # type: ignore[union-attr]
            factors = rhs.factors if isinstance(rhs, ir.Product) else (rhs,)
            if not any(isinstance(f, ir.Ref) and f.name in empty for f in factors):
                out.append(k)
        return out

    def _joins_only(self, group: list[str]) -> bool:
        """Rules that only join and union (monotone): semi-naive evaluation is exact."""
        for n in group:
            for k in self._equations(n):
                stmt = self.statements[k]
                assert isinstance(stmt, ir.Equation)
                if stmt.op not in ("=", "+="):
                    return False
                for node in ir.walk(stmt.rhs):
                    if isinstance(node, (ir.Call, ir.Neg, ir.Power, ir.Reduce)):
                        return False
                    if isinstance(node, ir.Sum) and "-" in node.signs:
                        return False
                    if isinstance(node, ir.Product) and "/" in node.ops:
                        return False
        return True

    def _semi_naive(self, group: list[str], shapes, bases) -> None:
        """Join only the facts that are new since the last round (LANGUAGE.md §7)."""
        B = self.B
        members = set(group)
        # round 0: everything derivable from the current (base) values
        delta: dict[str, Any] = {}
        for n in group:
            full = self._combine(n, bases[n], [self._contribution(k, shapes[n])
                                               for k in self._first_round(n, bases)])
            delta[n] = B.new_facts(full, self.values[n])
            self.values[n] = B.copy(full)  # owned: later rounds add to it in place
        recursive_refs = {n: [(k, ref) for k in self._equations(n)
                              for ref in ir.refs(self.statements[k].rhs)  # type: ignore[union-attr]
                              if ref.name in members] for n in group}
        for _ in range(self.p.max_iterations):
            if all(d is None for d in delta.values()):
                return
            new_delta: dict[str, Any] = {}
            for n in group:
                found = None
                for k, ref in recursive_refs[n]:
                    if delta[ref.name] is None:
                        continue
                    part = self._contribution(k, shapes[n], overrides={id(ref): delta[ref.name]})
                    found = part if found is None else found + part
                new_delta[n] = None if found is None else B.new_facts(found, self.values[n])
            for n in group:
                if new_delta[n] is not None:
                    self.values[n] = B.add_fresh(self.values[n], new_delta[n])
            delta = new_delta
        raise EvaluationError(f"{', '.join(group)} did not reach a fixpoint in "
                              f"{self.p.max_iterations} rounds")

    # ------------------------------------------------- outputs, queries, sinks
    def _outputs(self) -> dict[str, np.ndarray]:
        names = list(dict.fromkeys(self.a.exports))
        if not names:
            read = set()
            for deps in self._memo("dependencies", self._dependencies).values():
                read |= deps
            has_queries = any(isinstance(s, ir.Query) for s in self.statements)
            names = [] if has_queries else [n for n in self.a.tensors if n not in read]
        out = {}
        constants = self._memo("constants", self._constants)
        for n in names:
            if n in self.values and self.native and self.B.name != "numpy":
                out[n] = self.B.asarray(self.values[n])
            elif n in self.values:
                array = np.asarray(self.B.to_numpy(self.values[n]))
                # never hand out a value the program keeps (a constant) to be written
                if not (array.flags.owndata and array.flags.writeable) or n in constants:
                    array = array.copy()  # never hand out a view of an input or a broadcast
                out[n] = array
        return out

    def _query(self, k: int, stmt: ir.Query) -> QueryAnswer:
        atom = stmt.atom
        text = self.a.text[stmt.span.start:stmt.span.end]
        value = np.asarray(self.B.to_numpy(self.values[atom.name]))
        info = self.a.tensors[atom.name]
        starts: list[int] = []  # per answer axis: the position its 0 is (a slice's start)
        if atom.indices is None:
            free = tuple(a.index or f"#{p}" for p, a in enumerate(info.axes) if not a.virtual)
            selected, axes = value.copy(), list(range(value.ndim))
        elif any(not isinstance(ix, (ir.IndexVar, ir.IndexConst)) for ix in atom.indices):
            # `Y[t+1]?`, `Y[1:3]?`: read like any reference (shifted, sliced), as a sink does
            read = Evaluator(self.B, self.a, self.infos[k], self.values).scope(atom, 0)
            selected = np.asarray(self.B.to_numpy(read.data))
            where: dict[str, tuple[int, int]] = {}  # axis of the answer -> (tensor axis, start)
            slices = 0
            for pos, ix in enumerate(atom.indices):
                if isinstance(ix, ir.IndexSlice):
                    where[slice_name(slices)] = (pos, ix.start or 0)
                    slices += 1
                else:
                    for v in ir.index_vars(ix):
                        where.setdefault(v.name, (pos, 0))
            axes = [where.get(name, (0, 0))[0] for name in read.axes]
            starts = [where.get(name, (0, 0))[1] for name in read.axes]
            free = tuple(read.axes)
        else:
            index: list[Any] = []
            axes = []
            names = []
            for pos, ix in enumerate(atom.indices):
                if isinstance(ix, ir.IndexConst):
                    index.append(self._positions_one(atom.name, pos, ix))
                else:
                    index.append(slice(None))
                    axes.append(pos)
                    names.append(ir.index_vars(ix)[0].name if ir.index_vars(ix) else f"#{pos}")
            inside = all(not isinstance(i, int) or 0 <= i < value.shape[p]
                         for p, i in enumerate(index))
            if inside:
                selected = np.array(value[tuple(index)])  # a copy: never a view of a value
            else:  # a constant outside the axis reads 0 (LANGUAGE.md §3): the answer is no
                selected = np.zeros([value.shape[p] for p in axes], dtype=value.dtype)
            unique = list(dict.fromkeys(names))
            if len(unique) < len(names):  # `Path(x, x)?`: a repeated variable is the diagonal
                letters = {n: chr(ord("a") + k) for k, n in enumerate(unique)}
                selected = np.einsum("".join(letters[n] for n in names) + "->" +
                                     "".join(letters[n] for n in unique), selected).copy()
                axes = [axes[names.index(n)] for n in unique]
                names = unique
            free = tuple(names)
        tuples = None
        if info.boolean:
            tuples = []
            starts = starts or [0] * len(axes)
            # np.argwhere also handles a closed query (0-d): [()] when true, [] when false
            for position in np.argwhere(selected > 0):
                row = []
                for axis_pos, p, start in zip(axes, position, starts):
                    symbols = self.a.domain_symbols.get(info.axes[axis_pos].domain)
                    p = int(p) + start
                    row.append(symbols[p] if symbols and p < len(symbols) else p)
                tuples.append(tuple(row))
        return QueryAnswer(text, atom.name, selected, free, tuples)

    def _positions_one(self, name: str, pos: int, ix: ir.IndexConst) -> int:
        if isinstance(ix.value, int):
            return ix.value
        domain = self.a.tensors[name].axes[pos].domain
        symbols = self.a.domain_symbols.get(domain, ())
        return symbols.index(ix.value) if ix.value in symbols else -1

    def _sink(self, k: int, stmt: ir.Sink) -> str:
        info = self.infos[k]
        ev = Evaluator(self.B, self.a, info, self.values)
        value: LArray = ev.scope(stmt.rhs, 0)
        data = np.asarray(self.B.to_numpy(value.data))
        boolean = False
        symbols: list = []
        if isinstance(stmt.rhs, ir.Ref) and stmt.rhs.name in self.a.tensors:
            tinfo = self.a.tensors[stmt.rhs.name]
            boolean = tinfo.boolean
            # one list of names per axis of the value (its free indices, in its order):
            # `R(Alice, y)` writes y's names, from R's second axis
            by_var: dict[str, Any] = {}
            for pos, ix in enumerate(stmt.rhs.indices or ()):
                if isinstance(ix, ir.IndexVar) and pos < len(tinfo.axes):
                    by_var.setdefault(ix.name, self.a.domain_symbols.get(tinfo.axes[pos].domain))
            if stmt.rhs.indices is None:
                symbols = [self.a.domain_symbols.get(ax.domain) for ax in tinfo.axes]
            else:
                symbols = [by_var.get(axis) for axis in value.axes]
            name = stmt.rhs.name
        else:
            name = "value"
        try:
            target = check_sink_path(self.p.base_dir, stmt.path.value, self.p.allow_outside_sinks)
            write_sink(target, name, data, boolean, symbols)
        except FileProblem as err:
            line = self.a.lines.position(stmt.span.start)[0] + 1
            raise FuseError(f"line {line}: sink {stmt.path.value!r}: {err}") from None
        except OSError as err:
            line = self.a.lines.position(stmt.span.start)[0] + 1
            where = f" ({err.filename})" if getattr(err, "filename", None) else ""
            raise FuseError(f"line {line}: sink {stmt.path.value!r} cannot be written: "
                            f"{err.strerror or err}{where}") from None
        return str(target)


# What fails a run at one statement (located, not a traceback).  RuntimeError:
# what torch and XLA raise for a failure on the device (out of memory, say).
_RUN_FAILURES = (EvaluationError, FileProblem, FloatingPointError, ValueError, RuntimeError)


def _segments(groups: list, recursive) -> list[tuple[bool, list]]:
    """The evaluation order cut into straight runs of non-recursive tensors (each
    compiled as one graph) and the recursive groups between them (loops)."""
    out: list[tuple[bool, list]] = []
    for group, single in groups:
        straight = len(group) == 1 and group[0] not in recursive
        if straight and out and out[-1][0]:
            out[-1][1].append((group, single))
        else:
            out.append((straight, [(group, single)]))
    return out


def _param_init(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Params start small and random, the same for every run of the same name
    (Glorot-uniform over the last two axes; docs/language.md)."""
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    fan_in = shape[-1] if shape else 1
    fan_out = shape[-2] if len(shape) > 1 else 1
    bound = float(np.sqrt(6.0 / (fan_in + fan_out)))
    return rng.uniform(-bound, bound, size=shape)


def _default_limit() -> int:
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pages = 8 * 1024**3
    return int(pages * DEFAULT_MEMORY_FRACTION)


def _bytes(n: int) -> str:
    for unit in ("GB", "MB", "kB"):
        size = {"GB": 1e9, "MB": 1e6, "kB": 1e3}[unit]
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
