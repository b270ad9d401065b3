"""Equations reused from an earlier parse where they were: an edit near the top
of a long file moves every later statement, and copying each one's IR with its
spans moved (a few hundred thousand new nodes in a 10,000-line file) would be
most of the time its re-check takes.

So an editor's parse (syntax.parse_reusing) keeps a moved equation's IR as it
was, with its spans where the statement was when it was parsed, and says by how
many characters it moved (`Relocation.delta`).  The checker adds that delta to
every span it takes from such a statement.  The program with its spans where the
text has them (`Relocation.program`) is made when first read, once: the
editor's diagnostics need none of it.  Its copies then stand in for the reused
equations in the next parse (`Relocation.copies`), so that a statement moved
once is not moved again at every later edit.
"""
from __future__ import annotations

import threading

from . import ir
from .span import Span, shifted

_tuple_new = tuple.__new__  # a Span without a Python frame (see span.shifted)


class Relocation:
    """The statements of one parse, some of them reused where they were: `deltas`
    maps the id of each such statement to how far it moved."""

    __slots__ = ("statements", "text", "deltas", "_program", "_lock", "copies")

    def __init__(self, statements: tuple[ir.Statement, ...], text: str,
                 deltas: dict[int, int]) -> None:
        self.statements = statements
        self.text = text
        self.deltas = deltas
        self._program: ir.Program | None = None if deltas else ir.Program(statements, text)
        self._lock = threading.Lock()
        # once the program is made: id of a reused statement -> (its copy, delta)
        self.copies: dict[int, tuple[ir.Statement, int]] = {}

    def delta(self, stmt: ir.Statement) -> int:
        """How many characters `stmt` moved since its spans were found (0: none)."""
        return self.deltas.get(id(stmt), 0)

    def program(self) -> ir.Program:
        """The program, every span where the text has it (made once, when first read)."""
        program = self._program
        if program is not None:
            return program
        with self._lock:
            if self._program is None:
                deltas = self.deltas
                copies: dict[int, tuple[ir.Statement, int]] = {}
                statements = []
                for stmt in self.statements:
                    delta = deltas.get(id(stmt))
                    if delta:
                        copy = shifted(stmt, delta)
                        copies[id(stmt)] = (copy, delta)
                        stmt = copy
                    statements.append(stmt)
                self._program = ir.Program(tuple(statements), self.text)
                self.copies = copies  # (one assignment: another thread sees all or none)
            return self._program


def moved_span(span: Span, delta: int) -> Span:
    """`span` moved by `delta` characters (the same Span when 0)."""
    if not delta:
        return span
    return _tuple_new(Span, (span[0] + delta, span[1] + delta))
