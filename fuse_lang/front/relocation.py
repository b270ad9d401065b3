"""Equations reused from an earlier parse where they were: an edit near the top
of a long file moves every later statement, and copying each one's IR with its
spans moved (a few hundred thousand new nodes in a 10,000-line file) would be
most of the time its re-check takes.

So an editor's parse (syntax.parse_reusing) keeps a moved equation's IR as it
was, with its spans where the statement was when it was parsed, and says by how
many characters it has moved since (`Relocation.deltas`).  The checker adds that
to every span it takes from such a statement.  The program with its spans where
the text has them (`Relocation.program`) is made when first read, once: the
editor's diagnostics need none of it.  Its copies are kept for the next parse's
program, which takes each one again while its statement has not moved further,
so that after an edit near the top the program is copied once, not at every
later edit (and the editor's per-statement caches, keyed by the statements,
keep working).
"""
from __future__ import annotations

import threading
from typing import Any

from . import ir
from .span import Span, shifted

_tuple_new = tuple.__new__  # a Span without a Python frame (see span.shifted)

# id of an equation reused where it was -> (it, its copy moved by delta, delta)
Copies = dict[int, tuple[ir.Statement, ir.Statement, int]]


class Relocation:
    """The statements of one parse, some of them reused where they were: `deltas`
    maps the id of each such statement to how far it moved.  `keeper` (a
    ParseCache, or None) holds the copies of the last program made, and gets
    this one's."""

    __slots__ = ("statements", "text", "deltas", "_keeper", "_program", "_lock")

    def __init__(self, statements: tuple[ir.Statement, ...], text: str,
                 deltas: dict[int, int], keeper: Any = None) -> None:
        self.statements = statements
        self.text = text
        self.deltas = deltas
        self._keeper = keeper
        self._program: ir.Program | None = None if deltas else ir.Program(statements, text)
        self._lock = threading.Lock()

    def replaced(self, statements: tuple[ir.Statement, ...], text: str | None = None
                 ) -> "Relocation":
        """The same relocation over other statements: the program after its functions
        were inlined (front/functions.py) or its imports joined (check/imports.py),
        which keeps every statement it did not rewrite and adds new ones, none of
        them moved.  `text`: the program's text as the new program gives it."""
        return Relocation(statements, self.text if text is None else text, self.deltas,
                          self._keeper)

    def program(self) -> ir.Program:
        """The program, every span where the text has it (made once, when first read)."""
        program = self._program
        if program is not None:
            return program
        with self._lock:
            if self._program is None:
                deltas = self.deltas
                last: Copies = self._keeper.copies if self._keeper is not None else {}
                copies: Copies = {}
                statements = []
                for stmt in self.statements:
                    delta = deltas.get(id(stmt))
                    if delta:
                        kept = last.get(id(stmt))
                        if kept is not None and kept[0] is stmt and kept[2] == delta:
                            copy = kept[1]  # made for an earlier version: not moved since
                        else:
                            copy = shifted(stmt, delta)
                        copies[id(stmt)] = (stmt, copy, delta)
                        stmt = copy
                    statements.append(stmt)
                self._program = ir.Program(tuple(statements), self.text)
                if self._keeper is not None:
                    self._keeper.copies = copies  # (one assignment: seen whole or not at all)
                self._keeper = None
            return self._program


def moved_span(span: Span, delta: int) -> Span:
    """`span` moved by `delta` characters (the same Span when 0)."""
    if not delta:
        return span
    return _tuple_new(Span, (span[0] + delta, span[1] + delta))
