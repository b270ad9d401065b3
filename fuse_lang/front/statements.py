"""Finding the statements of a text: lexed line by line, split at newlines and `;`
outside brackets, with recovery from brackets left open or closed wrongly.

A line whose brackets close on it and that holds no `;` nor a bad character is
one sound statement whatever came before (a *simple* line, most of a program):
it is taken whole, its tokens looked at only by the parser.  The rest of the
text goes through `_Splitter` token by token.  Every mistake found here is a
diagnostic, and the statement it is in is marked unsound (not parsed).
"""
from __future__ import annotations

import bisect
import functools
import itertools
import operator
from typing import Any, Callable, Iterator

from .diagnostics import Diagnostic, make
from .lexer import Tok, as_tok, default_lexer, foreign_comment
from .span import Span

MAX_NESTING = 200          # brackets deeper than this are refused (bounded work)
MAX_SYNTAX_ERRORS = 200    # after this many, reporting stops
_OPEN = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_TEXT = {"LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "LBRACE": "{", "RBRACE": "}"}


def _tok_span(tok: tuple) -> Span:
    return Span(tok[2], tok[3])


# What _Splitter._statement found: its tokens, whether sound, the index after it,
# the brackets still open at its end, and the wrong closer of a bracket left open
# over newlines (True: left open to the end of the tokens; False: neither).
_Scanned = tuple[list[Tok], bool, int, list[Tok], "Tok | bool"]


def split(tokens: list[Tok], diags: list[Diagnostic], strict: bool = False, final: bool = True,
          notes: list[int] | None = None) -> tuple[list[tuple[list[Tok], bool]], bool, int] | None:
    """Statements as token lists (newlines inside brackets dropped) and whether each
    is sound, the `strict` state after them, and how many of `tokens` they took.
    `tokens` are whole lines; unless they run to the end of the file (`final`), None
    says a bracket is still open at their end: the caller retries with more lines.

    After one bracket ran to the end of the file (`strict`), a line starting at
    column 1 inside brackets starts a new statement: this keeps recovery linear.
    The split stops there (at the start of the line after the opener's): the
    caller goes on from that line, taking its simple lines whole again (an
    unclosed bracket at the top of a file reads every line once, not twice).

    `notes` (two counts, added to): how many times `strict` decided where a
    statement ends (a line starting at column 1 inside brackets), and how many
    brackets ran away (setting it)."""
    return _Splitter(tokens, diags, strict, final, notes).split()


class _Splitter:
    """One run of `split` over whole lines' tokens, adding its diagnostics to `diags`."""

    def __init__(self, tokens: list[Tok], diags: list[Diagnostic], strict: bool,
                 final: bool, notes: list[int] | None) -> None:
        self.tokens = tokens
        self.diags = diags
        self.strict = strict
        self.final = final
        self.notes = notes if notes is not None else [0, 0]

    def split(self) -> tuple[list[tuple[list[Tok], bool]], bool, int] | None:
        tokens, diags = self.tokens, self.diags
        out: list[tuple[list[Tok], bool]] = []
        i = 0
        while i < len(tokens) and len(diags) < MAX_SYNTAX_ERRORS:
            first_diag = len(diags)
            scanned = self._statement(i)
            if scanned is None:
                return None
            stmt, ok, i, stack, runaway = scanned
            if runaway and stack:
                # A bracket left open (to the end, or until a wrong closer after a
                # newline): report it, end the statement at the end of the opener's
                # line, and read on from there.
                del diags[first_diag:]  # what follows is read again as new statements
                i = self._report_runaway(stack[0], runaway, self._string_on_line(stmt, stack[0]))
                ok = False
                if i > 0:
                    stmt = [t for t in stmt if t.end_pos <= tokens[i - 1].end_pos]
                if stmt:
                    out.append((stmt, ok))
                return out, self.strict, i
            if stmt:
                out.append((stmt, ok))
        return out, self.strict, len(tokens)

    def _statement(self, i: int) -> _Scanned | None:
        """The statement from token `i` on; None if a bracket is open at the end of
        tokens that are not the file's last."""
        tokens, diags, n = self.tokens, self.diags, len(self.tokens)
        stmt: list[Tok] = []
        stack: list[Tok] = []
        ok = True
        too_deep = False
        multiline = False
        while i < n:
            tok = tokens[i]
            kind = tok.type
            if kind == "NL":
                i += 1
                if not stack:
                    break
                multiline = True
                if stack[-1].type == "LBRACE":
                    stmt.append(tok)  # separates a block's equations (`fn`, `case`)
                if i < n and tokens[i].start_pos == tok.end_pos and tokens[i].type not in _CLOSE:
                    self.notes[0] += 1  # a line at column 1 inside brackets: `strict` decides
                    if self.strict:
                        if ok:
                            diags.append(make("unclosed-bracket", f"'{stack[0].value}' is not "
                                              f"closed on its line", _tok_span(stack[0])))
                        return stmt, False, i, stack, False
                continue
            if kind == "SEMI":
                i += 1
                if stack and stack[-1].type == "LBRACE":
                    stmt.append(tok)  # inside a block: a separator, as a newline
                    continue
                if stack:
                    diags.append(make("unclosed-bracket", f"'{_TEXT[stack[0].type]}' is not "
                                      f"closed before ';'", _tok_span(stack[0])))
                    ok = False
                return stmt, ok, i, stack, False
            if kind in _OPEN:
                stack.append(tok)
                if len(stack) > MAX_NESTING and not too_deep:
                    diags.append(make("nesting-too-deep", f"brackets are nested more than "
                                      f"{MAX_NESTING} deep", _tok_span(tok)))
                    too_deep = True
                    ok = False
            elif kind in _CLOSE:
                if stack and stack[-1].type != _CLOSE[kind] and multiline and ok:
                    # `Y = W[i,j X[j]` then more lines: the '[' is the mistake
                    return stmt, ok, i, stack, tok
                ok = self._close(tok, stack, ok)
            elif kind == "BAD_CHAR" and tok.value == "\\" and i + 1 < n \
                    and tokens[i + 1].type == "NL":
                # a backslash ending a line continues the statement on the next, as
                # in Python (the seed DSL's programs start with one)
                i += 2
                if i >= n and not self.final:
                    return None
                continue
            elif kind == "BAD_CHAR" or kind == "BAD_STRING":
                if ok:
                    diags.append(_bad_token(tok, stmt))
                ok = False
            stmt.append(tok)
            i += 1
        else:
            if stack and not self.final:
                return None
            return stmt, ok, i, stack, bool(stack)
        return stmt, ok, i, stack, False

    def _close(self, tok: Tok, stack: list[Tok], ok: bool) -> bool:
        """Close the innermost bracket of `stack` with `tok`; whether still sound."""
        if not stack:
            if ok:
                self.diags.append(make("unmatched-bracket", f"'{tok.value}' closes nothing",
                                       _tok_span(tok)))
            return False
        opener = stack.pop()
        if opener.type == _CLOSE[tok.type]:
            return ok
        if stack and stack[-1].type == _CLOSE[tok.type]:
            stack.pop()  # `const([1, 2)`: it closes the '(' the '[' is in
        if ok:
            self.diags.append(make("unmatched-bracket", f"'{tok.value}' does not match "
                                   f"'{opener.value}'; expected "
                                   f"'{_TEXT[_OPEN[opener.type]]}'", _tok_span(tok)))
        return False

    def _string_on_line(self, stmt: list[Tok], opener: Tok) -> Tok | None:
        """The first unterminated string after `opener` on its line, if any: it runs
        to the end of the line, so it holds what would have closed `opener`."""
        k = _next_line(self.tokens, opener)
        end = self.tokens[k - 1].end_pos
        return next((tok for tok in stmt if tok.type == "BAD_STRING"
                     and opener.start_pos < tok.start_pos < end), None)

    def _report_runaway(self, opener: Tok, runaway: Tok | bool, string: Tok | None) -> int:
        """Report `opener` left open; the index of the first token after its line.
        An unterminated `string` after it on its line took its closer (`P(A, "B)`):
        that string is the mistake reported."""
        why = f" (a later '{runaway.value}' does not match it)" \
            if isinstance(runaway, Tok) else ""
        self.diags.append(_bad_token(string) if string is not None else
                          make("unclosed-bracket", f"'{opener.value}' is never closed{why}",
                               _tok_span(opener)))
        self.strict = True
        self.notes[1] += 1
        k = _next_line(self.tokens, opener)
        if opener.type == "LBRACE" and runaway is True:
            # a function's body or a block left open: its indented lines go with it
            # (read alone, `y[i] = x[i] * 2` would report `x` undefined), up to the
            # next line at column 1, as `strict` reads what follows
            return _next_column_one(self.tokens, k)
        return k


def _next_line(tokens: list[Tok], opener: Tok) -> int:
    """Index of the first token after the line holding `opener`."""
    k = bisect.bisect_right([t.start_pos for t in tokens], opener.start_pos)
    while k < len(tokens):
        if tokens[k].type == "NL":
            return k + 1
        k += 1
    return len(tokens)


def _next_column_one(tokens: list[Tok], k: int) -> int:
    """Index of the first token from `k` on that starts a line at column 1 (not a
    closing bracket), or `k` if none does among `tokens`."""
    for j in range(max(k, 1), len(tokens)):
        tok = tokens[j]
        before = tokens[j - 1]
        if before.type == "NL" and tok.start_pos == before.end_pos and tok.type != "NL" \
                and tok.type not in _CLOSE:
            return j
    return k


def _bad_char_message(ch: str) -> str:
    if ch == "'":
        return "\"'\" only marks a primed name like p'; strings use double quotes"
    if ch.isspace() or not ch.isprintable():
        return f"unexpected character U+{ord(ch):04X}"
    return f"'{ch}' is not part of the Fuse language"


def _bad_token(tok: Tok, before: list[Tok] | tuple[()] = ()) -> Diagnostic:
    """The diagnostic of a BAD_CHAR or BAD_STRING token (`before` it, its statement's
    tokens: after a `//` or `/*`, the mark is the mistake, not the prose after it)."""
    comment = foreign_comment(before)
    if comment is not None:
        return comment
    if tok.type == "BAD_STRING":
        return make("unterminated-string", "this string has no closing '\"' on its line",
                    _tok_span(tok))
    return make("invalid-character", _bad_char_message(tok.value), _tok_span(tok))


class Line:
    """One line's tokens (offsets as lexed at `offset`) and whether it is *simple*:
    it has tokens, no `;`, no bad character or string, and its brackets close in
    order on it.  From a clean state a simple line is exactly one sound statement
    whatever came before, so the splitter takes it whole without looking at its
    tokens; anything else goes through `split` token by token."""

    __slots__ = ("offset", "tokens", "shape", "simple", "start", "end")

    def __init__(self, offset: int, tokens: list[tuple[str, str, int, int]],
                 shape: tuple[str, ...]) -> None:
        """A line at `offset` lexed (see Lexer.lines) into `tokens`, of types `shape`."""
        self.offset = offset
        self.tokens = tokens  # plain tuples (type, text, start, end)
        self.shape = shape  # their types: the parser's key
        if tokens:
            self.start = tokens[0][2] - offset
            self.end = tokens[-1][3] - offset
            self.simple = _simple(shape)
        else:
            self.start = self.end = 0
            self.simple = False

    def tokens_at(self, offset: int) -> list[tuple[str, str, int, int]]:
        if offset == self.offset:
            return self.tokens
        delta = offset - self.offset
        return [(t[0], t[1], t[2] + delta, t[3] + delta) for t in self.tokens]


_NOT_SIMPLE = frozenset({"SEMI", "BAD_CHAR", "BAD_STRING", "NL"})


# Whether a line of these token types is simple depends on nothing else, and
# programs repeat a few shapes many times (see Parser.parse): once per shape.
@functools.lru_cache(maxsize=10_000)
def _simple(kinds: tuple[str, ...]) -> bool:
    if not _NOT_SIMPLE.isdisjoint(kinds):
        return False
    # The line's brackets in order, as text ("[]([])"): they close in order if
    # taking out the innermost pairs again and again empties it (in C, per depth).
    brackets = "".join([_TEXT[kind] for kind in kinds if kind in _TEXT])
    if len(brackets) > 2 * MAX_NESTING:
        return _simple_slowly(kinds)  # might be nested too deep: count
    while brackets:
        inner = brackets.replace("()", "").replace("[]", "").replace("{}", "")
        if inner == brackets:
            return False
        brackets = inner
    return True


def _simple_slowly(kinds: tuple[str, ...]) -> bool:
    stack: list[str] = []
    for kind in kinds:
        if kind in _OPEN:
            stack.append(_OPEN[kind])
            if len(stack) > MAX_NESTING:
                return False
        elif kind in _CLOSE:
            if not stack or stack.pop() != kind:
                return False
    return not stack


# How many lines `find_statements` lexes at most in one go (Lexer.lines): a
# call per line costs more than its lexing, while the big lists of a long run
# cost the memory allocator more (`fuse check` of a 10,000-line program: 32 the
# fewest instructions, 16 to 128 within 0.4%, 256 0.5% more).
_LEX_AHEAD = 32


# A statement found by the splitter: (start, end, sound, tokens) where tokens is
# a list, or a (Line, offset) pair for a simple line (tokens made only if parsed).
Found = tuple[int, int, bool, Any]


# A finder running with a Resume notes its state every this many lines at least.
MARK_EVERY = 64


class Resume:
    """How one run of the finder starts, notes its state and stops: the editor's
    parse of an edited text (syntax.py) finds again only the statements around the
    edit.  Where the finder stands at the start of a line with no statement open,
    what it finds next depends only on the lines from there on, on `strict`, and
    on how many syntax errors came before (once past MAX_SYNTAX_ERRORS): it starts
    at `line` in that state; at such a line it calls `mark(line, offset, strict,
    horizon, *notes)` every MARK_EVERY lines at least (`horizon`: the last line it
    looked at since the last mark: what came before depends on no later line than
    the marks' horizons; `notes`: split's, counted from the start of the text,
    added to `notes` as it goes), and from line `watch_from` on, stops where
    `stop_at(line, offset, strict)` says (`stopped_at`: that line; `horizon` and
    `strict_at_stop` then the finder's)."""

    __slots__ = ("line", "strict", "horizon", "notes", "mark", "watch_from", "stop_at",
                 "stopped_at", "strict_at_stop")

    def __init__(self, line: int, strict: bool, notes: list[int],
                 mark: Callable[..., None], watch_from: int,
                 stop_at: Callable[[int, int, bool], bool]) -> None:
        self.line, self.strict, self.horizon, self.notes = line, strict, -1, notes
        self.mark, self.watch_from, self.stop_at = mark, watch_from, stop_at
        self.stopped_at: int | None = None
        self.strict_at_stop = False


def find_statements(text: str, known: dict[str, Line], lines_used: dict[str, Line] | None,
                    diags: list[Diagnostic], resume: Resume | None = None) -> Iterator[Found]:
    """The statements of `text`, as `split` finds them in its token stream, taking
    simple lines whole and splitting the rest in windows of lines; lines whose
    text is in `known` (or `lines_used`) are not lexed again.  Lazy: a line is
    lexed (with a few after it, see _LEX_AHEAD) when the statements before it
    were taken, and let go after (unless `lines_used`, for the next parse,
    keeps it)."""
    return _StatementFinder(text, known, lines_used).statements(diags, resume)


class _StatementFinder:
    """The lines of one text, lexed on demand (see find_statements)."""

    def __init__(self, text: str, known: dict[str, Line],
                 lines_used: dict[str, Line] | None) -> None:
        self.text = text
        self.known = known
        self.lines_used = lines_used
        self.texts = texts = text.split("\n")
        self.count = count = len(texts)
        # line k starts after the k lines before it and their newlines
        self.offsets = list(map(operator.add, itertools.accumulate(map(len, texts), initial=0),
                                range(count)))
        self.entries: list[Line | None] = [None] * count
        self.ahead: list[Line | None] = [None] * count  # lines lexed with one before them
        # the last line any split so far looked at, and split's notes (see Resume)
        self.horizon = -1
        self.notes = [0, 0]

    def statements(self, diags: list[Diagnostic], resume: Resume | None = None
                   ) -> Iterator[Found]:
        strict = False
        k = 0
        if resume is not None:
            k, strict = resume.line, resume.strict
            self.notes = resume.notes
        first, next_mark = k, k
        count, offsets = self.count, self.offsets
        while k < count and len(diags) < MAX_SYNTAX_ERRORS:
            if resume is not None:
                if k >= resume.watch_from and k > first and resume.stop_at(k, offsets[k], strict):
                    resume.stopped_at, resume.horizon = k, max(self.horizon, k - 1)
                    resume.strict_at_stop = strict
                    return
                if k >= next_mark:
                    resume.mark(k, offsets[k], strict, max(self.horizon, k - 1), *self.notes)
                    self.horizon = -1  # (each mark's horizon is its own stretch's)
                    next_mark = k + MARK_EVERY
            entry = self.line_at(k)
            self.entries[k] = None  # read once more at most, in a window below
            if entry.simple:
                offset = offsets[k]
                k += 1
                yield (offset + entry.start, offset + entry.end, True, (entry, offset))
                continue
            if not entry.tokens:
                k += 1
                continue
            self.entries[k] = entry
            split_found, strict, k = self._split_window(k, diags, strict)
            for toks, ok in split_found:
                yield (toks[0].start_pos, toks[-1].end_pos, ok, toks)

    def _split_window(self, k: int, diags: list[Diagnostic], strict: bool
                      ) -> tuple[list[tuple[list[Tok], bool]], bool, int]:
        """`split` of the lines from line `k` on, as many as its brackets need (8,
        64, 512...: each retry splits its lines again, so a bracket left open at the
        top of a file costs about one split of the file, not two): its statements,
        its `strict` state and the next line's index."""
        count, offsets, texts = self.count, self.offsets, self.texts
        size = 8
        looked_ahead = False
        while True:
            stop = min(k + size, count)
            tokens: list[Tok] = []
            for j in range(k, stop):
                tokens += map(as_tok, self.line_at(j).tokens_at(offsets[j]))
                if j + 1 < count:
                    at = offsets[j] + len(texts[j])
                    tokens.append(Tok("NL", "\n", at, at + 1))
            before = len(diags)
            self.horizon = max(self.horizon, stop - 1)
            found = split(tokens, diags, strict, stop == count, self.notes)
            if found is not None:
                break
            del diags[before:]
            if not strict and not looked_ahead:
                looked_ahead = True
                if self._simple_to_end(stop):
                    # the lines left can neither close nor end what is open (a bracket
                    # left open at the top of a file): it runs to the end of the
                    # file, as it does to the end of these lines
                    found = split(tokens, diags, strict, True, self.notes)
                    assert found is not None
                    break
            size *= 8
        if found[2] < len(tokens):  # it stopped after a bracket left open: at a line's start
            stop = k + sum(1 for tok in tokens[:found[2]] if tok.type == "NL")
        self.entries[k:stop] = [None] * (stop - k)
        return found[0], found[1], stop

    def _simple_to_end(self, k: int) -> bool:
        """Whether every line from line `k` on is simple or has no tokens.  Inside a
        bracket left open (not `strict`) such a line changes nothing: its brackets
        close in order on it, and it has no `;` nor a bad character."""
        self.horizon = self.count - 1
        for j in range(k, self.count):
            entry = self.line_at(j)
            if entry.tokens and not entry.simple:
                return False
        return True

    def line_at(self, k: int) -> Line:
        entry = self.entries[k]
        if entry is None:
            line = self.texts[k]
            lines_used = self.lines_used
            entry = (lines_used.get(line) if lines_used is not None else None) \
                or self.known.get(line)
            if entry is None:
                entry = self.ahead[k] or self._lex_from(k)
            self.ahead[k] = None
            if lines_used is not None:
                lines_used[line] = entry
            self.entries[k] = entry
        return entry

    def _lex_from(self, k: int) -> Line:
        """Lex line k and the lines after it that the caches do not have (up to
        _LEX_AHEAD lines in all) in one go."""
        texts, known, lines_used = self.texts, self.known, self.lines_used
        stop = min(k + _LEX_AHEAD, self.count)
        if known or lines_used:
            for j in range(k + 1, stop):
                if texts[j] in known or (lines_used is not None and texts[j] in lines_used):
                    stop = j
                    break
        end = self.offsets[stop - 1] + len(texts[stop - 1])
        made = [Line(offset, tokens, shape) for offset, (tokens, shape)
                in zip(self.offsets[k:stop], default_lexer().lines(self.text, self.offsets[k], end),
                       strict=True)]
        self.ahead[k:stop] = made
        return made[0]
