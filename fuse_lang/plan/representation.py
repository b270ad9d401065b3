"""Each tensor's representation, dense or sparse, decided from shapes and counts
only (docs/scale.md, "Sparse relations").

A tensor of 2 axes or more is kept sparse (on NumPy: scipy.sparse CSR for 2,
sorted cell keys for 3 or more, run/sparse_nd.py) when it is large
(at least SPARSE_MIN_CELLS cells) and its estimated non-zeros are at most
SPARSE_MAX_PERCENT percent of its cells.  The estimate is read, never computed:

- facts: one non-zero each; a relation file (.tsv/.csv/.jsonl): one per line
  (the lines are counted, cached by the file's size and time); a scipy.sparse
  `.npz` (a relation or numbers): the values its header says it stores; an
  .npy, a plain .npz or another dense source: unknown, so dense;
- a Boolean tensor defined by rules: the sum over its rules of each join's
  estimate (a product A(x,y) B(y,z) joining on y: nnz(A) nnz(B) / extent(y),
  the textbook uniform estimate; a plain copy: the operand's), capped at its
  cells; a read of its own recursive group counts as its other rules' total.
  Only rules that join Boolean tensors that are themselves sparse keep it
  sparse: a dense operand makes the join's result dense anyway.  A negated atom
  (`not R(...)`, `1 - R(...)`, `1 - step(R(...))` of a sparse or small R) is an
  anti-join: it only removes tuples, so it adds nothing to the estimate and keeps
  the rule sparse.  So is a comparison of indices the rule's other operands
  bind (`(x != y)`, `(x < 3)`, `(x != Ann)`): a filter on the join's tuples
  (`tuple_filter`; run/sparse/join.py), never a dense mask over every cell.

Everything else is dense.  `overrides` ({"Edge": "sparse"}) forces a choice per
tensor; sparse is refused for a tensor of fewer than 2 axes.
"""
from __future__ import annotations

import functools
import math
import os
import weakref
from pathlib import Path
from typing import Collection, Mapping, Sequence

from ..check import Analysis
from ..check.analysis import SOURCE_KINDS, TensorInfo
from ..check.datalog import negated_relation
from ..front import ir
from ..front.builtins import COMPARISONS
from ..io.numpy_headers import read_sparse_npz_header
from ..io.source_files import MAX_TEXT_SOURCE_BYTES, SourceError, path_problem
from ..speed.fastinit import frozen_dataclass

SPARSE_MIN_CELLS = 1 << 16  # below ~65k cells a dense array is cheap whatever it holds (measured:
# chains of 250 and 500 edges and a 1,000-node graph ran 3-18x faster sparse above it)
SPARSE_MAX_PERCENT = 1  # density; CSR costs ~3x a dense cell per non-zero, joins pay when low
KINDS = ("dense", "sparse")
_LARGEST = 1 << 126  # estimates are capped here: a chain of joins must not grow huge integers


@frozen_dataclass
class Representation:
    """How one tensor is stored during a run, and why."""

    tensor: str
    kind: str  # "dense" | "sparse"
    nonzeros: int | None  # the estimate (None: unknown)
    cells: int | None
    reason: str

    @property
    def detail(self) -> str:
        """`~7,000 non-zeros of 25,000,000 (file lines; density 0.03%)`, or `(why)`."""
        if self.nonzeros is None or self.cells is None:
            return f"({self.reason})"
        return f"~{self.nonzeros:,} non-zeros of {self.cells:,} ({self.reason})"

    @property
    def text(self) -> str:
        """`sparse, ~7,000 non-zeros of 25,000,000 (file lines; ...)`: one line."""
        return f"{self.kind}, {self.detail}"


class RepresentationError(ValueError):
    """An override that cannot be honoured (unknown tensor, a kind, fewer than 2 axes)."""


_last: list = [None, None, None]  # (weakref to an analysis, overrides, its answer)


def representation_flags(items: Sequence[str]) -> dict[str, str]:
    """`--representation NAME=dense|sparse` items by name (the CLI's and the
    notebook magic's); RepresentationError for a malformed item or a kind that
    is neither (a usage error: said before anything is compiled)."""
    chosen = {}
    for item in items:
        name, sep, kind = item.partition("=")
        if not sep or not name or not kind:
            raise RepresentationError(f"--representation takes NAME=dense or NAME=sparse, "
                                      f"not {item!r}")
        if kind not in KINDS:
            raise RepresentationError(f"--representation {item}: {kind!r} is not one of "
                                      f"{', '.join(KINDS)}")
        chosen[name] = kind
    return chosen


def representations(analysis: Analysis, overrides: Mapping[str, str] | None = None
                    ) -> dict[str, Representation]:
    """Every tensor's representation, in the evaluation order.  The last answer is
    kept (an editor hovers over one analysis many times); an analysis never changes."""
    overrides = dict(overrides or {})
    ref, key, answer = _last
    if ref is not None and ref() is analysis and key == overrides:
        return dict(answer)
    answer = _representations(analysis, overrides)
    _last[:] = [weakref.ref(analysis), overrides, answer]
    return dict(answer)


def _representations(analysis: Analysis, overrides: dict[str, str]
                     ) -> dict[str, Representation]:
    _check_overrides(analysis, overrides)
    estimates: dict[str, int | None] = {}
    reasons: dict[str, str] = {}
    sparse: set[str] = set()
    out: dict[str, Representation] = {}
    tensors = analysis.tensors
    for group in analysis.order:
        for name in group:
            nnz, reason = _estimate(analysis, name, group, estimates, sparse)
            estimates[name] = nnz
            reasons[name] = reason
        for name in group:
            nnz = estimates[name]
            info = tensors[name]
            shape = info.shape  # (read once: a property that makes the tuple)
            cells = None if None in shape else math.prod(shape)  # type: ignore[arg-type]
            plain = None if name in overrides else _plainly_dense(info, cells, shape)
            if plain is not None:  # the common case, decided without the estimate
                counted = len(shape) >= 2
                out[name] = Representation(name, "dense", nnz if counted else None, cells, plain)
                continue
            kind, why = _choose(analysis, name, nnz, cells, group, sparse, overrides)
            if kind == "sparse":
                sparse.add(name)
                axes = len(shape)
                if axes > 2:  # torch.sparse and BCOO relations are 2-D here (docs/scale.md)
                    why += f"; {axes} axes: sparse on numpy, dense on torch and jax"
            if len(shape) < 2:  # the count does not matter then
                out[name] = Representation(name, kind, None, cells, why)
                continue
            out[name] = Representation(name, kind, nnz, cells, f"{reasons[name]}; {why}"
                                       if reasons[name] else why)
    for name in analysis.tensors:  # a tensor outside the order (unused) is dense
        if name not in out:
            out[name] = Representation(name, "dense", None, _cells(analysis, name),
                                       "not computed")
    return out


def _plainly_dense(info: TensorInfo, cells: int | None, shape: tuple) -> str | None:
    """Why a tensor is dense whatever its count (None: its count decides);
    `shape`: info.shape."""
    if len(shape) < 2:
        return "fewer than 2 axes"
    if not info.boolean and not _sparse_file(info):
        return "numbers"
    if cells is not None and cells < SPARSE_MIN_CELLS:
        return "small"
    return None


def _check_overrides(analysis: Analysis, overrides: Mapping[str, str]) -> None:
    for name, kind in overrides.items():
        if name not in analysis.tensors:
            known = ", ".join(analysis.tensors) or "none"
            raise RepresentationError(f"representation: `{name}` is not a tensor of this "
                                      f"program (those are: {known})")
        if kind not in KINDS:
            raise RepresentationError(f"representation of `{name}`: {kind!r} is not one of "
                                      f"{', '.join(KINDS)}")
        shape = analysis.tensors[name].shape
        if kind == "sparse" and len(shape) < 2:
            raise RepresentationError(f"representation of `{name}`: only tensors of 2 axes "
                                      f"or more are kept sparse; `{name}` has "
                                      f"{len(shape)} axis")
        if kind == "sparse" and _too_many_cells(shape):
            raise RepresentationError(f"representation of `{name}`: its "
                                      f"{len(shape)} axes have more cells than a "
                                      f"sparse relation numbers (2^62)")


def _small(analysis: Analysis, name: str) -> bool:
    """A small dense relation joins sparse ones as its few tuples (run/sparse_join.py)."""
    cells = _cells(analysis, name)
    return cells is not None and cells < SPARSE_MIN_CELLS


def _too_many_cells(shape: tuple) -> bool:
    """A relation of 3 axes or more numbers its cells in int64 (run/sparse_nd.py)."""
    return len(shape) > 2 and None not in shape and math.prod(shape) >= 1 << 62


def _cells(analysis: Analysis, name: str) -> int | None:
    shape = analysis.tensors[name].shape
    return None if any(e is None for e in shape) else math.prod(shape)  # type: ignore[arg-type]


def _choose(analysis: Analysis, name: str, nnz: int | None, cells: int | None,
            group: tuple[str, ...], sparse: set[str], overrides: Mapping[str, str]
            ) -> tuple[str, str]:
    if name in overrides:
        return overrides[name], "as asked"
    info = analysis.tensors[name]
    if len(info.shape) < 2:
        return "dense", "fewer than 2 axes"
    if nnz is None or cells is None:
        return "dense", "count unknown"
    if cells < SPARSE_MIN_CELLS:
        return "dense", "small"
    if _too_many_cells(info.shape):
        return "dense", "more cells than a sparse relation numbers (2^62)"
    if nnz * 100 > cells * SPARSE_MAX_PERCENT:  # integers: extents may be huge
        return "dense", f"density {nnz / cells:.2%} over {SPARSE_MAX_PERCENT}%"
    if info.statements and _rules(analysis, name) and not _sparse_operands(
            analysis, name, group, sparse):
        return "dense", "joins a dense operand"
    return "sparse", f"density {nnz / cells:.2%}"


def _rules(analysis: Analysis, name: str) -> list[tuple[int, ir.Equation]]:
    """The equations of `name`, with their statement numbers."""
    statements = analysis.program.statements
    return [(k, statements[k]) for k in analysis.tensors[name].statements
            if isinstance(statements[k], ir.Equation)]  # type: ignore[misc]


def _factors(rhs: ir.Expr) -> list[ir.Expr]:
    return list(rhs.factors) if isinstance(rhs, ir.Product) else [rhs]


def _sparse_operands(analysis: Analysis, name: str, group: tuple[str, ...],
                     sparse: set[str]) -> bool:
    """Every rule is a product of references to sparse Boolean tensors (or the group),
    and of 1-D Boolean masks over an index a 2-D operand has (a magic set guarding a
    rule, plan.demand: multiplied into that operand, run.sparse)."""
    for k, rule in _rules(analysis, name):
        factors = _factors(rule.rhs)
        for factor in factors:
            negated = _negated(analysis, factor)
            if negated is not None:  # an anti-join: the positive join's tuples, fewer
                if negated.name not in sparse and not _small(analysis, negated.name):
                    return False
                continue
            if tuple_filter(analysis, k, factor, factors) is not None:
                continue  # a comparison: the join's tuples, fewer
            if not isinstance(factor, ir.Ref) or factor.name not in analysis.tensors:
                return False
            if _mask(analysis, factor, factors):
                continue
            if not analysis.tensors[factor.name].boolean:
                return False
            if factor.name not in group and factor.name not in sparse and \
                    not _small(analysis, factor.name):
                return False
    return True


def _negated(analysis: Analysis, factor: ir.Expr) -> ir.Ref | None:
    """The relation a factor negates (`not R(...)`, `1 - R(...)`, `1 - step(R(...))`)."""
    tensors = analysis.tensors
    return negated_relation(factor, lambda n: n in tensors and tensors[n].boolean)


def tuple_filter(analysis: Analysis, k: int, factor: ir.Expr, factors: Sequence[ir.Expr]
                 ) -> tuple[str, ...] | None:
    """The indices a comparison factor of rule `k` reads, when it filters the join's
    tuples: each side reads at most one index (its values, by position: a vector;
    check/value_tables.py) and numbers or symbol constants, and every index it reads
    is bound by a positive relation among the rule's other factors.  None otherwise
    (a dense Boolean factor over its indices, as in a tensor program)."""
    if not (isinstance(factor, ir.Call) and factor.name in COMPARISONS
            and len(factor.args) == 2 and not factor.kwargs):
        return None
    names: list[str] = []
    for side in factor.args:
        found: set[str] = set()
        for node in ir.walk(side):
            if isinstance(node, ir.Ref):
                if node.indices is not None:
                    return None  # a tensor read inside: not a plain comparison of indices
                if (k, node.name) in analysis.var_extents:
                    found.add(node.name)
            elif not isinstance(node, (ir.Number, ir.Neg, ir.Sum, ir.Product, ir.String)):
                return None  # (a string: a symbol constant, `(y != "ann")`)
        if len(found) > 1:
            return None
        names += [n for n in found if n not in names]
    bound = {ix.name for f in factors if isinstance(f, ir.Ref) and f.indices
             and f.name in analysis.tensors and analysis.tensors[f.name].boolean
             for ix in f.indices if isinstance(ix, ir.IndexVar)}
    return tuple(names) if names and set(names) <= bound else None


def sparse_join_filters(analysis: Analysis, k: int, rule: ir.Equation,
                        sparse: Collection[str]) -> dict[int, tuple[str, ...]]:
    """The comparison factors of rule `k` that the run applies as filters on the
    join's tuples (by id, with the indices each reads): where a factor reads a
    `sparse` relation (or negates one), the NumPy run joins tuples
    (run/interpret/builtin_calls.py `comparison_filter`)."""
    if rule.rhs is None:
        return {}
    factors = _factors(rule.rhs)
    joined = [f if isinstance(f, ir.Ref) else _negated(analysis, f) for f in factors]
    if not any(r is not None and r.name in sparse for r in joined):
        return {}
    out = {}
    for factor in factors:
        names = tuple_filter(analysis, k, factor, factors)
        if names is not None:
            out[id(factor)] = names
    return out


def _mask(analysis: Analysis, factor: ir.Ref, factors: list[ir.Expr]) -> bool:
    """A 1-D Boolean reference by a plain variable that a 2-D reference also reads."""
    info = analysis.tensors[factor.name]
    if not info.boolean or len(info.shape) != 1 or not factor.indices or \
            not isinstance(factor.indices[0], ir.IndexVar):
        return False
    var = factor.indices[0].name
    return any(isinstance(f, ir.Ref) and f is not factor and f.indices is not None
               and len(f.indices) == 2 and any(isinstance(ix, ir.IndexVar) and ix.name == var
                                               for ix in f.indices) for f in factors)


def _estimate(analysis: Analysis, name: str, group: tuple[str, ...],
              estimates: Mapping[str, int | None], sparse: set[str]) -> tuple[int | None, str]:
    """The estimated non-zeros of `name` and where the figure comes from."""
    info = analysis.tensors[name]
    if not info.boolean:  # numbers have a count only in a sparse file
        nnz = _sparse_file_nonzeros(analysis.base_dir, info.source_path) \
            if _sparse_file(info) else None
        return (nnz, "sparse file header") if nnz is not None else (None, "numbers")
    statements = analysis.program.statements
    facts = sum(1 for k in info.statements if isinstance(statements[k], ir.Fact))
    base: int | None = facts
    where = "facts" if facts else ""
    if info.kind in SOURCE_KINDS:
        rows = _source_rows(analysis.base_dir, info.source_path) if info.boolean else None
        if rows is None and _sparse_file(info):
            rows = _sparse_file_nonzeros(analysis.base_dir, info.source_path)
            where = "sparse file header"
        if rows is None:
            return None, "a source without a count"  # an .npy, or dense numbers
        base, where = facts + rows, (where if where == "sparse file header" else "file lines")
    rules = _rules(analysis, name)
    if not rules:
        return base, where
    total = base or 0
    later = []
    for k, rule in rules:
        if any(isinstance(f, ir.Ref) and f.name in group for f in _factors(rule.rhs)):
            later.append(rule)
            continue
        joined = _join_estimate(analysis, k, rule, estimates)
        if joined is None:
            return None, "a rule that is not a join of relations"
        total += joined
    if later:  # a recursive rule adds at least what the others give (a lower bound)
        total *= 2
    cells = _cells(analysis, name)
    total = min(total, _LARGEST)
    return (min(total, cells) if cells is not None else total), "estimated from its rules"


def _join_estimate(analysis: Analysis, k: int, rule: ir.Equation,
                   estimates: Mapping[str, int | None]) -> int | None:
    """A product of references: nnz(A) nnz(B) / extent(shared) per join, left to right;
    a negated atom (an anti-join) and a comparison (a filter) only remove tuples, so
    they are left out."""
    everything = _factors(rule.rhs)
    if _pinned(analysis, k, rule, everything):
        return 1
    factors = [f for f in everything if _negated(analysis, f) is None
               and tuple_filter(analysis, k, f, everything) is None]
    if not factors:
        return None
    if not all(isinstance(f, ir.Ref) and f.name in estimates for f in factors):
        return None
    result: int | None = None
    seen: set[str] = set()
    for factor in factors:
        assert isinstance(factor, ir.Ref)
        nnz = estimates[factor.name]
        if nnz is None:
            return None
        names = {v.name for ix in factor.indices or () for v in ir.index_vars(ix)}
        if result is None:
            result = nnz
        else:
            shared = names & seen
            divisor = max(math.prod(_extent(analysis, k, n) for n in shared), 1)
            result = min(-(-result * nnz // divisor), _LARGEST)  # the ceiling, in integers
        seen |= names
    return result or 0


def _pinned(analysis: Analysis, k: int, rule: ir.Equation, factors: list[ir.Expr]) -> bool:
    """A rule that holds one tuple at most: each head variable equal to a constant,
    `M(b0) = (b0 == Alice)` (demand mode's seed of a magic set, plan.demand)."""
    head = [ix.name for ix in rule.lhs.indices or () if isinstance(ix, ir.IndexVar)]
    if not head or len(head) != len(rule.lhs.indices or ()):
        return False
    pinned = set()
    for factor in factors:
        if not (isinstance(factor, ir.Call) and factor.name == "==" and len(factor.args) == 2):
            return False
        names = [a.name for a in factor.args if isinstance(a, ir.Ref) and a.indices is None
                 and (k, a.name) in analysis.var_extents]
        if len(names) != 1 or any(isinstance(n, ir.Ref) and n.indices is not None
                                  for a in factor.args for n in ir.walk(a)):
            return False
        pinned.add(names[0])
    return pinned == set(head)


def _extent(analysis: Analysis, k: int, index: str) -> int:
    extent = analysis.var_extents.get((k, index), (None, None))[0]
    return int(extent) if extent else 1


def _source_rows(base_dir: Path, source: str | None) -> int | None:
    """The tuples of a text relation file: its lines (a token file: its tokens),
    counted once per file version."""
    suffix = Path(source or "").suffix.lower()
    if not source or suffix not in (".tsv", ".csv", ".facts", ".jsonl", ".txt"):
        return None
    path = Path(base_dir) / source
    status = _status(path)
    if status is None:
        return None
    return _count_lines(str(path), status.st_size, status.st_mtime_ns, suffix == ".txt")


def _status(path: Path) -> os.stat_result | None:
    """The file's status; None when there is no file to count, or no path a file
    system takes (the checker said why: `unreadable-source`)."""
    if path_problem(path):
        return None
    try:
        return os.stat(path)
    except OSError:
        return None


def _sparse_file(info: TensorInfo) -> bool:
    """A source read from an `.npz` (only a scipy.sparse archive has a count)."""
    return info.kind in SOURCE_KINDS and \
        Path(info.source_path or "").suffix.lower() == ".npz"


def _sparse_file_nonzeros(base_dir: Path, source: str | None) -> int | None:
    """The stored values of a scipy.sparse `.npz` (its `data` header), once per file
    version; None for an archive of plain arrays or one that cannot be read."""
    path = Path(base_dir) / (source or "")
    status = _status(path)
    if status is None:
        return None
    return _npz_nonzeros(str(path), status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _npz_nonzeros(path: str, size: int, mtime_ns: int) -> int | None:
    try:
        header = read_sparse_npz_header(Path(path))
    except (OSError, SourceError):
        return None
    return None if header is None else header.nonzeros


@functools.lru_cache(maxsize=64)
def _count_lines(path: str, size: int, mtime_ns: int, tokens: bool = False) -> int | None:
    count = 0
    last = b"\n"
    try:
        with open(path, "rb") as fp:
            if tokens:  # (bounded as the checker reads it: io.source_files)
                return len(fp.read(MAX_TEXT_SOURCE_BYTES + 1).split())
            while chunk := fp.read(1 << 20):
                count += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    return count + (last != b"\n")
