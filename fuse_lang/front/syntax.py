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
import itertools
from typing import Iterable

from ..speed.fastinit import frozen_dataclass
from . import ir
from .arguments import bytes_argument, text_argument
from .builder import IRBuilder, StatementError, strings_alone
from .datalog_syntax import datalog_syntax, rules_over_lines
from .diagnostics import Diagnostic, Related, make
from .errors import common_mistake, parse_error_message, run_on_note
from .lalr import END, ParseError, Parser
from .lexer import Tok, foreign_comment, kind_of
from .relocation import Copies, Relocation
from .span import Span, lf_endings, shifted
from .statements import MAX_SYNTAX_ERRORS, Found, Line, Resume, find_statements
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
        # what the next parse needs to find again only the statements around an edit
        self.last: LastParse | None = None


@functools.cache
def default_parser() -> Parser:
    """The parser of grammar.lark, building IR."""
    return Parser(grammar_tables(), IRBuilder())


def _parse_statement(tokens: list[Tok], span: Span, shape: tuple[str, ...] | None = None,
                     quoted: bool = True, text: str = "") -> _Outcome:
    """One sound statement's IR (an axis declaration may give several), or why not;
    `shape`: the tokens' types, when known; `quoted`: False when the statement's
    text has no '"', so no string (which saves looking for one among the types);
    `text`: the statement's text (a syntax error in one over several lines may say
    where a bracket left open made it go on)."""
    outcome = _parse_tokens(tokens, span, shape, quoted)
    problem = outcome[1]
    if problem is None or problem.code != "syntax-error" or "\n" not in text:
        return outcome
    note = run_on_note(tokens, text, span.start, problem.span.end)
    if note is None:
        return outcome
    return (), make(problem.code, problem.message, problem.span,
                    related=(*problem.related, Related(*note)), fixes=problem.fixes)


def _parse_tokens(tokens: list[Tok], span: Span, shape: tuple[str, ...] | None,
                  quoted: bool) -> _Outcome:
    """_parse_statement's parse, without its note."""
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
        comment = foreign_comment(tokens)  # `// note`, `/* note */` (Soufflé's, C's)
        if comment is not None:
            return (), comment
        datalog = datalog_syntax(tokens, parser)  # `:-`, commas, a final '.'
        if datalog is not None:
            return (), datalog
        mistake = common_mistake(tokens, err)
        if mistake is not None:
            return (), make("syntax-error", mistake[0], mistake[1])
        tok = err.token
        where = Span(tok[2], tok[3]) if tok[0] != END else Span(span.end, span.end)
        return (), make("syntax-error", parse_error_message(err, parser, "LBRACE" in shape), where)
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
    text_argument("fuse_lang.parse", text)
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
    if cache is None:
        return _full_parse(text, ParseCache(), False)
    return splice(text, cache) or _full_parse(text, cache, True)


def _full_parse(text: str, cache: ParseCache, remember: bool) -> tuple[ParseResult, Relocation]:
    # Statements are parsed as the splitter finds them, so that a line's tokens are
    # let go once its statement is parsed and the IR takes their memory (fewer new
    # pages).  That gives the same result as finding every statement first unless
    # there are too many errors: how many the splitter finds in all decides which
    # statements are parsed then, so such a text is parsed again that way.
    parsing = Parsing(text, cache, remember)
    resume = Resume(0, False, [0, 0], parsing.mark, len(text), _never) if remember else None
    if parsing.take_all(find_statements(text, cache.lines, parsing.lines_used,
                                        parsing.found_diags, resume)) \
            and len(parsing.found_diags) + len(parsing.diags) < MAX_SYNTAX_ERRORS:
        if resume is not None:
            parsing.notes = tuple(resume.notes)
        return parsing.result()
    parsing = Parsing(text, cache, remember)
    parsing.take_all(list(find_statements(text, cache.lines, parsing.lines_used,
                                          parsing.found_diags)))
    return parsing.result()


def _never(line: int, offset: int, strict: bool) -> bool:
    return False


# The finder's state at the start of a line with no statement open (see
# statements.Resume), and how many of each of a Parsing's lists it had then:
# (line, offset, strict, horizon, sensitive, runaways, spans, statements,
# found_diags, diags), where `sensitive, runaways` are split's notes so far.
Mark = tuple[int, int, bool, int, int, int, int, int, int, int]


@frozen_dataclass
class LastParse:
    """What an editor's next parse needs of the last one to find again only the
    statements around an edit (see splice.py)."""

    text: str
    statements: tuple[ir.Statement, ...]
    spans: list[Span]
    found_diags: list[Diagnostic]
    diags: list[Diagnostic]
    deltas: dict[int, int]
    marks: list[Mark]
    notes: tuple[int, int]  # split's notes over the whole text (see Resume)


class Parsing:
    """One parse's results, taken statement by statement as the finder gives them.
    A whole parse (`spliced` False) keeps in `cache` only what it used; a splice
    (splice.py) starts with the last parse's results before the edit and adds to
    the cache's tables."""

    def __init__(self, text: str, cache: ParseCache, remember: bool,
                 spliced: bool = False) -> None:
        self.text = text
        self.cache = cache
        self.remember = remember
        self.spliced = spliced
        self.statements: list[ir.Statement] = []
        self.spans: list[Span] = []
        self.found_diags: list[Diagnostic] = []  # the splitter's
        self.diags: list[Diagnostic] = []  # the statements'
        self.marks: list[Mark] = []
        self.moved: dict[int, tuple[ir.Statement, ir.Statement, int]] = {}
        self.deltas: dict[int, int] = {}  # reused equations where they were: id -> how far
        self.lines_used: dict[str, Line] | None = \
            (cache.lines if spliced else {}) if remember else None
        self.parsed = cache.statements
        self.parsed_used: dict[str, tuple[int, _Outcome]] = cache.statements if spliced else {}
        # (spliced) id of each statement taken -> (its index, how far it moved)
        self.reused: dict[int, tuple[int, int]] = {}
        self.notes: tuple[int, int] | None = None  # split's over the text, when counted

    def mark(self, line: int, offset: int, strict: bool, horizon: int, sensitive: int,
             runaways: int) -> None:
        self.marks.append((line, offset, strict, horizon, sensitive, runaways, len(self.spans),
                           len(self.statements), len(self.found_diags), len(self.diags)))

    def take_all(self, found: Iterable[Found]) -> bool:
        """Take each statement found; False if there were too many errors."""
        take = self.take
        for item in found:
            if not take(item):
                return False
        return True

    def take(self, found: Found) -> bool:
        """Parse one statement found (or reuse its earlier parse); False once there
        are too many errors."""
        start, end, ok, tokens = found
        span = _tuple_new(Span, (start, end))
        self.spans.append(span)
        diags = self.diags
        if len(self.found_diags) + len(diags) >= MAX_SYNTAX_ERRORS:
            return False
        if not ok:
            return True
        line = shape = None
        if isinstance(tokens, tuple):
            line, offset = tokens
            tokens = line.tokens  # types and texts only: offsets may be stale
        kind, word = tokens[0][:2]
        key = self.text[start:end]
        entry, alone = self._known(key)
        if entry is not None and (entry[0] != start or not alone):
            delta = start - entry[0]
            result = entry[1][0]
            if alone and len(result) == 1 and type(result[0]) is ir.Equation \
                    and entry[1][1] is None:
                self.deltas[id(result[0])] = delta  # reused where it was (relocation.py)
            else:
                outcome = _shift_outcome(entry[1], delta)
                if outcome is not None:
                    for new, old in zip(outcome[0], result):
                        self.moved[id(new)] = (new, old, delta)
                entry = (start, outcome) if outcome is not None else None
        if entry is None:
            if line is not None:
                tokens = line.tokens_at(offset)
                shape = line.shape
            entry = (start, _parse_statement(tokens, span, shape, '"' in key, key))
        if self.spliced:  # (the latest: a copy made here is taken as it is next time)
            self.parsed_used[key] = entry
        else:
            self.parsed_used.setdefault(key, entry)
        result, problem = entry[1]
        if problem is not None:
            diags.append(problem)
        elif self.spliced:
            for stmt in result:
                self.reused[id(stmt)] = (len(self.statements), self.deltas.get(id(stmt), 0))
                self.statements.append(stmt)
        else:
            self.statements.extend(result)
        return True

    def _known(self, key: str) -> tuple[tuple[int, _Outcome] | None, bool]:
        """The earlier parse of a statement of text `key`, and whether this parse may
        take its statements themselves (else it copies them): not when they are
        in this program already (the same text earlier in it)."""
        if not self.spliced:
            repeated = self.parsed_used.get(key)
            return repeated or self.parsed.get(key), repeated is None
        entry = self.parsed.get(key)
        # (those kept from the last parse before and after the edit: see splice.py)
        alone = entry is None or all(id(stmt) not in self.reused for stmt in entry[1][0])
        return entry, alone

    def result(self) -> tuple[ParseResult, Relocation]:
        diags = rules_over_lines(self.text, self.spans, self.found_diags + self.diags,
                                 default_parser())  # (a Datalog rule over several lines)
        too_many = len(diags) >= MAX_SYNTAX_ERRORS
        if too_many:
            diags.append(make("too-many-errors", f"stopped after {MAX_SYNTAX_ERRORS} syntax "
                              f"errors", diags[-1].span))
        cache = self.cache
        if self.lines_used is not None:
            cache.lines = self.lines_used
        cache.statements = self.parsed_used
        cache.moved = self.moved
        program = tuple(self.statements)
        text = self.text
        if self.remember:
            cache.last = None if too_many or self.notes is None else LastParse(
                text, program, self.spans, self.found_diags, self.diags, self.deltas,
                self.marks, self.notes)
        return (ParseResult(ir.Program(program, text), tuple(diags), tuple(self.spans)),
                Relocation(program, text, self.deltas, cache if self.remember else None))


# ------------------------------------------------------------ splicing

def splice(text: str, cache: ParseCache) -> tuple[ParseResult, Relocation] | None:
    """The parse of `text`, an edit of the last text `cache` parsed, from that
    parse's results: only the statements from a little before the edit to a
    little after it are found again (about MARK_EVERY lines each side), the
    others taken as they were, moved as the edit moved them.  The result is the
    whole parse's.  None when a whole parse is needed instead: none before, too
    many syntax errors, or the cache's tables grown twice the text's size."""
    last = cache.last
    if last is None or len(cache.lines) > 2 * len(last.spans) + 1000 \
            or len(cache.statements) > 2 * len(last.spans) + 1000:
        return None
    old = last.text
    same_start = _common_prefix(old, text)
    same_end = _common_suffix(old, text, min(len(old), len(text)) - same_start)
    first_changed = text.count("\n", 0, same_start)  # (the same line in both)
    # the last mark whose state came from lines before the edit only (marks[0]: none)
    start, looked = 0, -1
    for k, mark in enumerate(last.marks):
        looked = max(looked, mark[3])
        if looked >= first_changed:
            break
        start = k
    line, _, strict, _, sensitive, runaways, n_spans, n_statements, n_found, n_diags = \
        last.marks[start]
    parsing = Parsing(text, cache, True, spliced=True)
    parsing.spans = last.spans[:n_spans]
    parsing.statements = list(last.statements[:n_statements])
    parsing.found_diags = last.found_diags[:n_found]
    parsing.diags = last.diags[:n_diags]
    parsing.marks = last.marks[:start]
    shift = len(text) - len(old)
    line_shift = text.count("\n") - old.count("\n")
    unchanged_from = len(text) - same_end  # the text from here on is the old one's end
    old_marks = {mark[0]: k for k, mark in enumerate(last.marks) if k > start}

    def meets_old(line: int, offset: int, strict: bool) -> bool:
        """Whether the finder, at `line`, is where and as it was in the last parse
        (or `strict` differs, but decides nothing from there to the end)."""
        k = old_marks.get(line - line_shift)
        if k is None or offset < unchanged_from:
            return False
        mark = last.marks[k]
        return mark[1] == offset - shift and (mark[2] == strict or mark[4] == last.notes[0])

    resume = Resume(line, strict, [sensitive, runaways], parsing.mark,
                    text.count("\n", 0, unchanged_from), meets_old)
    if not parsing.take_all(find_statements(text, cache.lines, cache.lines,
                                            parsing.found_diags, resume)):
        return None
    if resume.stopped_at is not None:
        _take_rest(parsing, last, old_marks[resume.stopped_at - line_shift], n_statements,
                   shift, line_shift, resume)
    else:
        parsing.deltas = _deltas_kept(last, parsing, n_statements, len(last.statements))
        parsing.notes = tuple(resume.notes)
    if len(parsing.found_diags) + len(parsing.diags) >= MAX_SYNTAX_ERRORS:
        return None
    return parsing.result()


def _take_rest(parsing: Parsing, last: LastParse, at: int, n_before: int, shift: int,
               line_shift: int, resume: Resume) -> None:
    """Add to `parsing` the last parse's results from its mark `at` on (where the
    finder, stopped by `resume`, found it stood as then), moved by `shift`
    characters and `line_shift` lines; `n_before`: how many of its statements
    `parsing` kept before the edit."""
    _, _, was_strict, _, sensitive, runaways, n_spans, n_statements, n_found, n_diags = \
        last.marks[at]
    rest = last.statements[n_statements:]
    deltas = _deltas_kept(last, parsing, n_before, n_statements)
    statements = parsing.statements
    if shift:
        rest = list(rest)
        moved = parsing.moved
        for k, stmt in enumerate(rest):
            if type(stmt) is ir.Equation:
                delta = deltas.pop(id(stmt), 0) + shift
                if delta:
                    deltas[id(stmt)] = delta
            else:  # (declarations, facts, sources...: few, and copied as before)
                rest[k] = copy = shifted(stmt, shift)
                moved[id(copy)] = (copy, stmt, shift)
    spans, found_diags, diags = parsing.spans, parsing.found_diags, parsing.diags
    added = (len(spans) - n_spans, len(statements) - n_statements,
             len(found_diags) - n_found, len(diags) - n_diags)
    statements += rest
    spans += shifted(last.spans[n_spans:], shift) if shift else last.spans[n_spans:]
    found_diags += shifted(last.found_diags[n_found:], shift)
    diags += shifted(last.diags[n_diags:], shift)
    # the marks after: `strict` as this parse has it (where it differs from the last
    # parse's, it decides nothing: it is True from the first bracket that ran away)
    strict = resume.strict_at_stop
    more = (resume.notes[0] - sensitive, resume.notes[1] - runaways)
    # (the first one's horizon: the last line this parse looked at since its last mark)
    horizons = [resume.horizon] + [m[3] + line_shift for m in last.marks[at + 1:]]
    parsing.marks += [(m[0] + line_shift, m[1] + shift,
                       m[2] if strict == was_strict else strict or m[5] > runaways,
                       horizon, m[4] + more[0], m[5] + more[1],
                       m[6] + added[0], m[7] + added[1], m[8] + added[2], m[9] + added[3])
                      for m, horizon in zip(last.marks[at:], horizons)]
    parsing.notes = (last.notes[0] + more[0], last.notes[1] + more[1])
    parsing.deltas = deltas


def _deltas_kept(last: LastParse, parsing: Parsing, n_before: int, n_after: int
                 ) -> dict[int, int]:
    """How far each reused equation of `parsing` is from where it was parsed: those
    of the last parse (less its statements n_before:n_after, found again) and the
    new ones.  A statement found again that was also kept from the last parse is
    made a copy where it was found again (a program holds one statement once)."""
    deltas = dict(last.deltas)
    for stmt in last.statements[n_before:n_after]:
        deltas.pop(id(stmt), None)
    reused = parsing.reused
    if reused:
        statements = parsing.statements
        for stmt in itertools.chain(last.statements[:n_before], last.statements[n_after:]):
            taken = reused.get(id(stmt))
            if taken is not None:  # (rare: the same text before or after the edit)
                k, delta = taken
                statements[k] = copy = shifted(stmt, delta)
                parsing.moved[id(copy)] = (copy, stmt, delta)
                parsing.deltas.pop(id(stmt), None)
    deltas.update(parsing.deltas)
    return deltas


_CHUNK = 4096


def _common_prefix(a: str, b: str) -> int:
    """How many characters `a` and `b` start with in common."""
    n = min(len(a), len(b))
    at = 0
    while at < n and a[at:at + _CHUNK] == b[at:at + _CHUNK]:
        at += _CHUNK
    while at < n and a[at] == b[at]:  # (they differ within this chunk, or one ends)
        at += 1
    return min(at, n)


def _common_suffix(a: str, b: str, most: int) -> int:
    """How many characters `a` and `b` end with in common, at most `most`."""
    n = 0
    la, lb = len(a), len(b)
    while n < most:
        step = min(_CHUNK, most - n)
        if a[la - n - step:la - n] != b[lb - n - step:lb - n]:
            break
        n += step
    else:
        return most
    while n < most and a[la - n - 1] == b[lb - n - 1]:
        n += 1
    return n


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
    bytes_argument("fuse_lang.decode", data)
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
    if text.startswith("\ufeff"):  # not text: an editor neither shows it nor counts it,
        text = text[1:]  # so positions (and the server's texts of closed files) are theirs
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
