"""The lexer: the terminals of grammar.lark, as lark orders them, scanned in C.

lark's own lexer makes a Token object (with line and column) per token; this one
finds every token's text with one `findall` over the alternation of the
terminals and reads each distinct text's terminal once (`_Kinds`): a token is a
plain tuple (type, text, start, end), made in C.  No terminal spans a newline,
so a line lexed alone gives the tokens it has in the file.
"""
from __future__ import annotations

import functools
import re
from functools import partial
from itertools import accumulate, compress, islice
from operator import itemgetter
from typing import Any, Iterator, NamedTuple, Sequence

from .diagnostics import Diagnostic, Fix, TextEdit, make
from .span import Span, lf_endings
from .tables import grammar_tables


class Tok(NamedTuple):
    """A token: type, text and 0-based character offsets.  A tuple: the lexer
    makes one per token of the file, and tuples are built in C."""

    type: str
    value: str
    start_pos: int
    end_pos: int

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r}, {self.start_pos})"


as_tok = partial(tuple.__new__, Tok)  # Tok from a 4-tuple, without Tok.__new__'s Python frame
kind_of = itemgetter(0)  # a token's type


class _Kinds(dict):
    """Token text -> terminal name, or None for an ignored terminal (so that the
    kinds select the tokens kept), filled on demand.  No terminal's match depends
    on what follows it beyond its own last character (the keywords' and `max=`'s
    look-aheads reject a continuation that the longer NAME match would have
    taken), so a token's text alone decides its terminal."""

    MAX_SIZE = 200_000  # a long-lived editor session: forget now and then

    def __init__(self, pattern: re.Pattern, ignore: frozenset[str],
                 words: dict[str, str] | None = None) -> None:
        super().__init__()
        self._match = pattern.match
        self._ignore = ignore
        # (see _word_kinds) keyword -> its terminal; None: every text goes to `pattern`
        self._words = words

    def __missing__(self, value: str) -> str | None:
        if len(self) > self.MAX_SIZE:
            self.clear()
        words = self._words
        if words is not None and value.isascii() and value.isidentifier():
            # (most new texts are names: a file of distinct names has one per line)
            kind = self[value] = words.get(value, "NAME")
            return kind
        kind = self._match(value).lastgroup  # type: ignore[union-attr]
        kind = self[value] = None if kind in self._ignore else kind
        return kind


# A keyword terminal as grammar.lark's are written out: the word, and no name
# character after it.
_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(\?!\[A-Za-z0-9_'\]\)")
# The other terminals tried before NAME, none of which can match at the start of
# a plain name: `max=` needs its `=`, a string starts with `"`, a comparison with
# one of `<>=!`.
_NOT_AT_A_NAME = frozenset({"PROJEQ", "STRING", "COMPARE"})


def _word_kinds(terminals: list[tuple[str, str]]) -> dict[str, str] | None:
    """The terminal of each keyword, when every terminal tried before NAME is a
    keyword or one of _NOT_AT_A_NAME: then a text made of ASCII name characters
    alone (`[A-Za-z_][A-Za-z0-9_]*`) is its keyword's terminal if it is one, else
    NAME (a keyword's match is that whole text or none: no name character may
    follow it).  None for terminals of another form: no such shortcut."""
    words: dict[str, str] = {}
    for name, regexp in terminals:
        if name == "NAME":
            return words if regexp.startswith("[A-Za-z_][A-Za-z0-9_]*") else None
        keyword = _KEYWORD.fullmatch(regexp)
        if keyword is not None:
            words.setdefault(keyword.group(1), name)
        elif name not in _NOT_AT_A_NAME:
            return None
    return None


def _syntax_at(regexp: str) -> Iterator[int]:
    """The indices of `regexp`'s characters that are its syntax: those outside
    character classes and not escaped (a class's opening `[` included)."""
    i, n = 0, len(regexp)
    while i < n:
        ch = regexp[i]
        if ch == "\\":
            i += 2
            continue
        yield i
        i += 1
        if ch == "[":  # skip to the class's `]` (a first `]`, after any `^`, is literal)
            i += regexp[i:i + 1] == "^"
            i += regexp[i:i + 1] == "]"
            while i < n and regexp[i] != "]":
                i += 2 if regexp[i] == "\\" else 1
            i += 1


def _without_captures(regexp: str) -> str:
    """`regexp` with each capturing group `(...)` made non-capturing `(?:...)`,
    so that `findall` on an alternation of terminals returns whole matches."""
    out = []
    last = 0
    for i in _syntax_at(regexp):
        if regexp[i] == "(" and regexp[i + 1:i + 2] != "?":
            out += [regexp[last:i], "(?:"]
            last = i + 1
    return "".join(out) + regexp[last:]


class Lexer:
    """The tokens of a text, by the terminals of `tables` (as `build_tables` makes
    them), tried in lark's order."""

    def __init__(self, tables: dict[str, Any]) -> None:
        terminals = tables["terminals"]  # (name, regexp), in the order lark tries them
        self._pattern = re.compile("|".join(f"(?P<{name}>{regexp})" for name, regexp in terminals))
        # The same alternation without groups: findall gives every match's text in C.
        scanner = re.compile("|".join(f"(?:{_without_captures(regexp)})"
                                      for _name, regexp in terminals))
        assert scanner.groups == 0
        self._findall = scanner.findall
        self._ignore = frozenset(tables["ignore"])
        self._kinds = _Kinds(self._pattern, self._ignore, _word_kinds(terminals))

    def lex(self, text: str, pos: int = 0, endpos: int | None = None) -> list[Tok]:
        """The tokens of text[pos:endpos], with offsets into `text`.  No terminal
        spans a newline, so a line lexed alone gives the tokens it has in the file."""
        return list(map(as_tok, self.tokens(text, pos, endpos)))

    def tokens(self, text: str, pos: int = 0, endpos: int | None = None
               ) -> list[tuple[str, str, int, int]]:
        """`lex` as plain tuples (type, text, start, end): what the parser takes,
        made faster (all in C)."""
        if endpos is None:
            endpos = len(text)
        matches = self._matches(text, pos, endpos)
        if matches is None:
            return self._lex_slowly(text, pos, endpos)
        return matches[0]

    def _matches(self, text: str, pos: int, endpos: int
                 ) -> tuple[list[tuple[str, str, int, int]], list[str | None]] | None:
        """The tokens of text[pos:endpos] that are not ignored, made in C, and every
        match's type (None: ignored); None if some character matches no terminal."""
        values = self._findall(text, pos, endpos)
        kinds = list(map(self._kinds.__getitem__, values))  # None: ignored
        starts = list(accumulate(map(len, values), initial=pos))
        if starts[-1] != endpos:  # some character no terminal matches (none should)
            return None
        # (kind, text, start, end) for each match that is not ignored
        return list(compress(zip(kinds, values, starts, islice(starts, 1, None)), kinds)), kinds

    def lines(self, text: str, pos: int = 0, endpos: int | None = None
              ) -> list[tuple[list[tuple[str, str, int, int]], tuple[str, ...]]]:
        """`tokens` of each line of text[pos:endpos] (split at "\\n") and their
        types, lexed in one go: a call per line costs more than the lexing.  The
        same tokens as lexing each line alone (no terminal spans a newline, and
        the look-aheads that end a token treat a newline as they do the end),
        assuming the terminal that matches a newline is NL (grammar.lark's)."""
        if endpos is None:
            endpos = len(text)
        matches = self._matches(text, pos, endpos)
        if matches is None:
            return self._lines_slowly(text, pos, endpos)
        tokens, kinds = matches
        kinds = list(compress(kinds, kinds))  # the kept tokens' types
        out = []
        index = kinds.index
        a = 0
        try:
            while True:  # one line per NL token (found in C)
                b = index("NL", a)
                out.append((tokens[a:b], tuple(kinds[a:b])))
                a = b + 1
        except ValueError:
            out.append((tokens[a:], tuple(kinds[a:])))
        return out

    def _lines_slowly(self, text: str, pos: int, endpos: int
                      ) -> list[tuple[list[tuple[str, str, int, int]], tuple[str, ...]]]:
        out = []
        while True:
            end = text.find("\n", pos, endpos)
            tokens = self.tokens(text, pos, endpos if end < 0 else end)
            out.append((tokens, tuple(map(kind_of, tokens))))
            if end < 0:
                return out
            pos = end + 1

    def _lex_slowly(self, text: str, pos: int, endpos: int) -> list[tuple[str, str, int, int]]:
        ignore = self._ignore
        return [(kind, m.group(), m.start(), m.end())
                for m in self._pattern.finditer(text, pos, endpos)
                if (kind := m.lastgroup) not in ignore]  # type: ignore[misc]


@functools.cache
def default_lexer() -> Lexer:
    """The lexer of grammar.lark."""
    return Lexer(grammar_tables())


def tokenize(text: str) -> list[Tok]:
    """The tokens of `text` (comments and spaces left out), with their offsets; a
    lone "\r" ends a line as "\n" does (LSP's line endings, see span.lf_endings)."""
    return default_lexer().lex(lf_endings(text))


def foreign_comment(tokens: Sequence[Tok] | Sequence[tuple[str, str, int, int]]
                    ) -> Diagnostic | None:
    """The syntax error of a statement holding another language's comment mark (`//`
    or `/*` written together, which no Fuse statement holds, or SQL's `-- ` with a
    space after), at its first one, with the fix to `#`: the mark is the mistake,
    not the prose after it.  (Asked only of a statement that does not parse:
    `Y = A -- B` is a double negation.)"""
    for k, (first, second) in enumerate(zip(tokens, islice(tokens, 1, None))):
        if second[2] != first[3]:
            continue
        if first[0] == "SLASH" and second[0] in ("SLASH", "STAR") or (
                first[0] == second[0] == "MINUS"
                and (k + 2 == len(tokens) or tokens[k + 2][2] > second[3])):
            mark, span = first[1] + second[1], Span(first[2], second[3])
            return make("syntax-error", f"`{mark}` starts no comment in Fuse: a comment "
                        f"starts with `#` and runs to the end of the line", span,
                        fixes=(Fix("Write `#`", (TextEdit(span, "#"),)),))
    return None
