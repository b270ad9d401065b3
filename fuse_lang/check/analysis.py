"""The analysis' result types: `Analysis`, one per analysed text, and the
`TensorInfo` and `AxisInfo` it holds for each tensor, with its `TensorKind`.

A one-off analysis (`fuse check`) makes three of Analysis' tables (`tensors`,
`var_extents`, `domain_symbols`) only when one is first read: see `Deferred`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..front import ir
from ..front.diagnostics import Diagnostic, Severity
from ..front.functions import Inlined
from ..front.let_blocks import Lowered
from ..front.relocation import Relocation
from ..front.span import LineIndex, Span
from ..speed.fastinit import frozen_dataclass
from .kinds import INPUT_KINDS, SOURCE_KINDS, TensorKind  # noqa: F401 - given with TensorInfo
from .symbols import IndexRole, Scope


@frozen_dataclass
class AxisInfo:
    index: str  # the index name at this position in the first definition ("" if none)
    extent: int | None
    domain: int
    virtual: bool


@frozen_dataclass
class TensorInfo:
    name: str
    kind: TensorKind
    boolean: bool
    axes: tuple[AxisInfo, ...]
    definitions: tuple[Span, ...]  # name spans of every defining LHS
    statements: tuple[int, ...]  # defining statements, in order
    uses: tuple[Span, ...]  # name spans of every read
    source_path: str | None
    op: str | None  # "=" (sum), "max=", "min=", "avg=", or None (source, facts, param)

    @property
    def shape(self) -> tuple[int | None, ...]:
        """The extent of each axis (None where it is not known), virtual axes left out."""
        # (a list made, then the tuple: no generator; every step reads shapes per tensor)
        return tuple([a.extent for a in self.axes if not a.virtual])

    @property
    def axes_text(self) -> str:
        """`[p:6, d:4]`: each stored axis' index and extent (`?` when unknown)."""
        parts = []
        for axis in self.axes:
            if axis.virtual:
                continue
            extent = "?" if axis.extent is None else str(axis.extent)
            parts.append(f"{shown_index(axis.index)}:{extent}" if axis.index else extent)
        return "[" + ", ".join(parts) + "]"


def shown_index(name: str) -> str:
    """An index as the user wrote it: a renamed one (`d@lib`, an imported file's
    `axis d`; `d@head.1`, a function's) without what the renaming added."""
    if "@" not in name:
        return name
    return name[:name.index("@")] + "'" * (len(name) - len(name.rstrip("'")))


Tables = tuple[dict, dict, dict]  # tensors, var_extents, domain_symbols
_DEFERRED = ("tensors", "var_extents", "domain_symbols")  # Analysis' fields Deferred makes


class Deferred:
    """Given for `tensors`, `var_extents` and `domain_symbols` when making an
    Analysis: the three are made by `make`, together, when one is first read.
    Once, under a lock (two threads must not number the domains at once); then
    it forgets `make` (and with it the checker)."""

    __slots__ = ("_make", "_lock")

    def __init__(self, make: Callable[[], Tables]) -> None:
        self._make: Callable[[], Tables] | None = make
        self._lock = threading.Lock()

    def fill(self, state: dict[str, Any]) -> None:
        """Stores the three tables in an Analysis' `state` (its __dict__)."""
        with self._lock:
            if self._make is not None:
                state.update(zip(_DEFERRED, self._make()))
                self._make = None
                state.pop("_deferred", None)


class _DeferredField:
    """The descriptor of a field `Deferred` may make (a data descriptor, so that a
    dataclass field keeps working with replace, copy and pickle): the value lives
    in the instance's __dict__ under the field's name once it is known."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.name)  # (so the field has no default)
        state = obj.__dict__
        if self.name not in state:
            deferred = state.get("_deferred")
            if deferred is not None:
                deferred.fill(state)
        return state[self.name]

    def __set__(self, obj: Any, value: Any) -> None:
        # (reached from the generated __init__ only: the dataclass is frozen)
        if isinstance(value, Deferred):
            obj.__dict__["_deferred"] = value
        else:
            obj.__dict__[self.name] = value


class _ProgramField:
    """The descriptor of Analysis.program: given a Relocation (an editor's analysis
    that reused moved equations where they were), the program is made from it
    when first read (see front/relocation.py); else it is the value given."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError("program")  # (so the field has no default)
        state = obj.__dict__
        program = state.get("program")
        if program is None:
            program = state["program"] = state["_relocation"].program()
        return program

    def __set__(self, obj: Any, value: Any) -> None:
        # (reached from the generated __init__ only: the dataclass is frozen)
        if isinstance(value, Relocation):
            obj.__dict__["_relocation"] = value
        else:
            obj.__dict__["program"] = value


@dataclass(frozen=True)
class Analysis:
    path: str | None
    base_dir: Path
    text: str
    lines: LineIndex
    program: ir.Program = _ProgramField()  # type: ignore[assignment]
    diagnostics: tuple[Diagnostic, ...]
    tensors: dict[str, TensorInfo] = _DeferredField()  # type: ignore[assignment]
    # statement -> its variables; statement -> its projection scopes (mappings that
    # may make a statement's when first read: see check.statements.StatementTable)
    roles: Mapping[int, tuple[IndexRole, ...]]
    scopes: Mapping[int, dict[int, Scope]]
    # (stmt, var) -> (extent, domain)
    var_extents: dict[tuple[int, str], tuple[int | None, int]] = \
        _DeferredField()  # type: ignore[assignment]
    domain_symbols: dict[int, tuple[str, ...]] = _DeferredField()  # type: ignore[assignment]
    order: tuple[tuple[str, ...], ...]  # evaluation order: groups
    recursive: frozenset[str]
    exports: tuple[str, ...]
    recursion: dict[str, str] = field(default_factory=dict)  # tensor -> how its group runs
    # the program's `fn` functions and where each inlined equation came from (None: no
    # functions; `program` is then the text's statements as parsed)
    inlined: Inlined | None = None
    # the program's blocks and `let`s as written out (front/let_blocks.py; None: none)
    lowered: Lowered | None = None
    # `axis x = same` / `valid`: how windows over each declared index pad
    paddings: Mapping[str, str] = field(default_factory=dict)
    # the files the program imports (check/imports.py; None: it imports none). Their
    # statements' spans are past the text's end: `imports.locate` says where they are
    imports: Any = None

    @property
    def has_errors(self) -> bool:
        """Whether any diagnostic is an error (a program with one is not compiled)."""
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def __getstate__(self) -> dict:
        # copy and pickle: the deferred fields made first (a lock does not pickle)
        deferred = self.__dict__.get("_deferred")
        if deferred is not None:
            deferred.fill(self.__dict__)
        self.program  # noqa: B018 - made, if it is still to make
        return {key: value for key, value in self.__dict__.items() if key != "_relocation"}
