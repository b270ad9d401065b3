"""Text -> IR: `parse` a whole program, never raising on user input.

The text is lexed line by line with the terminals of grammar.lark (lexer.py,
which include a catch-all so lexing never fails) and split into statements
(statements.py); each statement is parsed on its own with the LALR(1) table lark
builds from the grammar (tables.py, lalr.py), building IR nodes directly
(builder.py, no intermediate tree).  A statement with an error yields a
diagnostic (errors.py words it) and is left out of the program; every other
statement is still parsed and checked.
"""
from __future__ import annotations

import functools
from typing import Iterable

from . import ir
from .builder import IRBuilder, StatementError, strings_alone
from .builtins import RESERVED_WORDS
from .diagnostics import Diagnostic, make
from .errors import parse_error_message
from ..fastinit import frozen_dataclass
from .lalr import END, ParseError, Parser
from .lexer import Tok, kind_of
from .relocation import Copies, Relocation
from .span import Span, lf_endings, shifted
from .statements import MAX_SYNTAX_ERRORS, Found, Line, find_statements
from .tables import grammar_tables

# Operators and calls nested deeper than this are refused (`nesting-too-deep`): the
# evaluator recurses about 7 Python frames a level, and this keeps a run well
# inside Python's default recursion limit of 1000 (brackets: MAX_NESTING).
MAX_EXPRESSION_DEPTH = 100

_tuple_new = tuple.__new__  # a Span as _tuple_new(Span, (start, end)): no Python frame


@frozen_dataclass
class ParseResult:
    program: ir.Program
    diagnostics: tuple[Diagnostic, ...]
    statement_spans: tuple[Span, ...]  # every statement found, parsed or not


# A sound statement's parse: its IR (an axis declaration may give several), or why not.
_Outcome = tuple[tuple[ir.Statement, ...], Diagnostic | None]

class ParseCache:
    """What the last parse of one document computed, reused for the next version:
    lines' tokens keyed by their text, and statements' IR keyed by their text,
    each with where the statement was when its spans were found (a moved equation
    is reused as it is, see relocation.py; another statement is copied with its
    spans moved).  Only what the latest parse used is kept, so the cache holds at
    most about two versions' worth."""

    def __init__(self) -> None:
        self.lines: dict[str, Line] = {}
        self.statements: dict[str, tuple[int, _Outcome]] = {}
        # statements of the latest parse that are earlier ones copied: id(new) ->
        # (new, old, by how many characters), for the checker to move its results too
        self.moved: dict[int, tuple[ir.Statement, ir.Statement, int]] = {}
        # the copies the latest program made of equations reused where they were
        # (see Relocation.program), reused by the next while they have not moved again
        self.copies: Copies = {}


@functools.cache
def default_parser() -> Parser:
    """The parser of grammar.lark, building IR."""
    return Parser(grammar_tables(), IRBuilder())


def _parse_statement(tokens: list[Tok], span: Span, shape: tuple[str, ...] | None = None,
                     quoted: bool = True) -> _Outcome:
    """One sound statement's IR (an axis declaration may give several), or why not;
    `shape`: the tokens' types, when known; `quoted`: False when the statement's
    text has no '"', so no string (which saves looking for one among the types)."""
    if shape is None:
        shape = tuple(map(kind_of, tokens))
    parser = default_parser()
    try:
        result = parser.parse(tokens, shape)
        if quoted and "STRING" in shape:
            strings_alone(result)
        if len(tokens) > MAX_EXPRESSION_DEPTH:  # (a shorter statement cannot nest that deep)
            deep = _nested_too_deep(result)
            if deep is not None:
                return (), deep
    except StatementError as err:
        return (), err.diagnostic
    except ParseError as err:
        tok = err.token
        where = Span(tok[2], tok[3]) if tok[0] != END else Span(span.end, span.end)
        return (), make("syntax-error", parse_error_message(err, parser), where)
    except RecursionError:
        return (), make("nesting-too-deep", "this statement is nested too deeply to analyse",
                        span)
    return (tuple(result) if isinstance(result, list) else (result,)), None


def _nested_too_deep(result: object) -> Diagnostic | None:
    """Operators or calls nested past MAX_EXPRESSION_DEPTH (10,000 `-` in a row):
    refused like brackets, so that nothing after the parser recurses that deep."""
    if type(result) is not ir.Equation and type(result) is not ir.Sink:
        return None
    deep = ir.nested_past(result.rhs, MAX_EXPRESSION_DEPTH)
    if deep is None:
        return None
    return make("nesting-too-deep", f"operators or calls are nested more than "
                f"{MAX_EXPRESSION_DEPTH} deep", deep.span)


def parse(text: str, cache: ParseCache | None = None) -> ParseResult:
    """Parse a whole program. Never raises on user input.

    With a `cache` (one per document), lines and statements whose text did not
    change since the last call are not lexed or parsed again; the result is the
    same as without one."""
    if cache is None:
        return parse_reusing(text, None)[0]
    result, relocation = parse_reusing(text, cache)
    if relocation.deltas:
        result = ParseResult(relocation.program(), result.diagnostics, result.statement_spans)
    return result


def parse_reusing(text: str, cache: ParseCache | None) -> tuple[ParseResult, Relocation]:
    """`parse`, for a checker that reads reused equations where they were: the
    result's program holds them as the last parse made them, and the Relocation
    says how far each moved (and makes the program `parse` gives, when asked)."""
    text = lf_endings(text)  # LSP's line endings (same offsets): see span.lf_endings
    remember = cache is not None
    if cache is None:
        cache = ParseCache()
    # Statements are parsed as the splitter finds them, so that a line's tokens are
    # let go once its statement is parsed and the IR takes their memory (fewer new
    # pages).  That gives the same result as finding every statement first unless
    # there are too many errors: how many the splitter finds in all decides which
    # statements are parsed then, so such a text is parsed again that way.
    result = _parse(text, cache, remember, lazy=True)
    if result is None:
        result = _parse(text, cache, remember, lazy=False)
    return result


def _parse(text: str, cache: ParseCache, remember: bool, lazy: bool
           ) -> tuple[ParseResult, Relocation] | None:
    found_diags: list[Diagnostic] = []  # the splitter's, then the statements' below
    diags: list[Diagnostic] = []
    statements: list[ir.Statement] = []
    spans: list[Span] = []
    lines_used: dict[str, Line] = {}
    moved: dict[int, tuple[ir.Statement, ir.Statement, int]] = {}
    deltas: dict[int, int] = {}  # reused equations where they were: id -> how far moved
    parsed = cache.statements
    parsed_used: dict[str, tuple[int, _Outcome]] = {}
    found: Iterable[Found] = find_statements(text, cache.lines, lines_used if remember else None,
                                             found_diags)
    if not lazy:
        found = list(found)
    for start, end, ok, tokens in found:
        span = _tuple_new(Span, (start, end))
        spans.append(span)
        if len(found_diags) + len(diags) >= MAX_SYNTAX_ERRORS:
            if lazy:
                return None
            break
        if not ok:
            continue
        line = shape = None
        if isinstance(tokens, tuple):
            line, offset = tokens
            tokens = line.tokens  # types and texts only: offsets may be stale
        kind, word = tokens[0][:2]
        if kind == "NAME" and word in RESERVED_WORDS and (
                len(tokens) == 1 or tokens[1][0] not in ("LSQB", "LPAR", "EQUAL", "QMARK")):
            diags.append(make("reserved-word", f"`{word}` statements are reserved for a "
                              f"later version of Fuse", Span(start, start + len(word))))
            continue
        key = text[start:end]
        repeated = parsed_used.get(key)  # (the same text earlier in this one)
        entry = repeated or parsed.get(key)
        if entry is not None and entry[0] != start:
            delta = start - entry[0]
            result = entry[1][0]
            if repeated is None and len(result) == 1 and type(result[0]) is ir.Equation \
                    and entry[1][1] is None:
                deltas[id(result[0])] = delta  # reused where it was (relocation.py)
            else:
                outcome = _shift_outcome(entry[1], delta)
                if outcome is not None:
                    for new, old in zip(outcome[0], result):
                        moved[id(new)] = (new, old, delta)
                entry = (start, outcome) if outcome is not None else None
        if entry is None:
            if line is not None:
                tokens = line.tokens_at(offset)
                shape = line.shape
            entry = (start, _parse_statement(tokens, span, shape, '"' in key))
        parsed_used.setdefault(key, entry)
        result, problem = entry[1]
        if problem is not None:
            diags.append(problem)
        else:
            statements.extend(result)
    diags[:0] = found_diags
    if len(diags) >= MAX_SYNTAX_ERRORS:
        if lazy:
            return None
        diags.append(make("too-many-errors", f"stopped after {MAX_SYNTAX_ERRORS} syntax errors",
                          diags[-1].span))
    cache.lines = lines_used
    cache.statements = parsed_used
    cache.moved = moved
    program = tuple(statements)
    return (ParseResult(ir.Program(program, text), tuple(diags), tuple(spans)),
            Relocation(program, text, deltas, cache if remember else None))


# ------------------------------------------------------------ shifting

def _shift_outcome(outcome: _Outcome, delta: int) -> _Outcome | None:
    """A statement's parse outcome moved by `delta` characters (None: too deep to copy)."""
    try:
        return shifted(outcome, delta)
    except RecursionError:
        return None


_BINARY_PREFIX = 8192  # bytes: a NUL among a file's first ones says it is not text


def decode(data: bytes) -> tuple[str, Diagnostic | None]:
    """Bytes of a .fuse file -> text, or a diagnostic saying why it is not text."""
    if b"\x00" in data[:_BINARY_PREFIX]:
        pos = data.index(b"\x00")
        prefix = data[:pos].decode("utf-8", errors="replace")
        return prefix, _binary(len(prefix))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        prefix = data[:err.start].decode("utf-8", errors="replace")
        return prefix, make("invalid-encoding", f"the file is not UTF-8 text (byte "
                            f"0x{data[err.start]:02x} at offset {err.start})",
                            Span(len(prefix), len(prefix) + 1))
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # keep offsets; a BOM is whitespace to the lexer
    return text, None


def binary_text(text: str) -> Diagnostic | None:
    """What `decode` says of the UTF-8 bytes of `text` when they look binary (a
    NUL among the first 8 KB), else None: the editor's text, which never was
    bytes, gets the one diagnostic `fuse check` gives its file."""
    pos = text.find("\x00")
    if pos < 0 or pos >= _BINARY_PREFIX or len(text[:pos].encode("utf-8", "surrogatepass")) \
            >= _BINARY_PREFIX:
        return None
    return _binary(pos)


def _binary(pos: int) -> Diagnostic:
    # an empty span where the text stops being text (`fuse check` has no text past it)
    return make("invalid-encoding", "this looks like a binary file, not Fuse source text",
                Span(pos, pos))
