"""A lean lexer and LALR driver over the tables lark builds from grammar.lark.

lark compiles the grammar: terminals, the LALR(1) parse table and the
callbacks that shape each reduction (inlining `?rule`s, filtering anonymous
tokens, calling our IR builder).  Its general-purpose `parse` loop carries
per-token overhead we do not need (interactive parsing, asserts, Rule
hashing), so this module runs the same table in a tight loop: identical
language, about three times faster, which is what lets `fuse check` read a
10,000-line program in well under a second.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import logging

from lark import Lark
from lark.parsers.lalr_analysis import Shift


# lark logs (with a traceback) when another process is writing its grammar
# cache at the same moment; it then rebuilds the tables, so that is no error.
logging.getLogger("lark").setLevel(logging.CRITICAL)


class Tok:
    """A token: type, text and 0-based character offsets."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int) -> None:
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r}, {self.start_pos})"


END = "$END"


class ParseError(Exception):
    """The next token does not fit: `expected` lists the terminal names that would."""

    def __init__(self, token: Tok, state: int, expected: frozenset[str]) -> None:
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.state = state
        self.expected = expected


@dataclass(frozen=True)
class _Reduce:
    size: int
    origin: str
    callback: Callable[[list], Any] | None  # None: a unit rule that passes its child on


class Engine:
    """Lexer + parser for one compiled grammar."""

    def __init__(self, grammar: str, start: str, transformer: Any) -> None:
        lark = Lark(grammar, parser="lalr", lexer="basic", start=[start, "lexer_only"],
                    transformer=transformer, cache=_cache_path(grammar))
        self._init_lexer(lark)
        self._init_table(lark, start)

    # ---- lexer
    def _init_lexer(self, lark: Lark) -> None:
        terminals = sorted(lark.lexer_conf.terminals, key=lambda t: (
            -t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        self._pattern = re.compile("|".join(
            f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals))
        self._ignore = frozenset(lark.lexer_conf.ignore)

    def lex(self, text: str, pos: int = 0, endpos: int | None = None) -> list[Tok]:
        """The tokens of text[pos:endpos], with offsets into `text`.  No terminal
        spans a newline, so a line lexed alone gives the tokens it has in the file."""
        ignore = self._ignore
        matches = self._pattern.finditer(text, pos) if endpos is None else \
            self._pattern.finditer(text, pos, endpos)
        return [Tok(kind, m.group(), m.start(), m.end())
                for m in matches if (kind := m.lastgroup) not in ignore]

    # ---- parser
    def _init_table(self, lark: Lark, start: str) -> None:
        inner = lark.parser.parser.parser
        table = inner.parse_table
        callbacks = inner.callbacks
        self._start_state = table.start_states[start]
        self._end_state = table.end_states[start]
        states: dict[int, dict[str, tuple[bool, Any]]] = {}
        for state, actions in table.states.items():
            row: dict[str, tuple[bool, Any]] = {}
            for symbol, (action, arg) in actions.items():
                if action is Shift:
                    row[symbol] = (True, arg)
                else:
                    rule = arg
                    unit = (len(rule.expansion) == 1 and rule.options.expand1
                            and not rule.alias and not rule.expansion[0].is_term)
                    row[symbol] = (False, _Reduce(len(rule.expansion), rule.origin.name,
                                                  None if unit else callbacks[rule]))
            states[state] = row
        self._states = states
        self._goto_after_units: dict[tuple[int, str, str], int] = {}

    def expected(self, state: int) -> frozenset[str]:
        return frozenset(s for s in self._states[state] if s.isupper() or s == END)

    def parse(self, tokens: list[Tok]) -> Any:
        """Parse one statement's tokens; raises ParseError at the first misfit."""
        states = self._states
        goto_after_units = self._goto_after_units
        state_stack = [self._start_state]
        value_stack: list[Any] = []
        last = tokens[-1].end_pos if tokens else 0
        for tok in (*tokens, Tok(END, "", last, last)):
            kind = tok.type
            while True:
                state = state_stack[-1]
                try:
                    is_shift, arg = states[state][kind]
                except KeyError:
                    raise ParseError(tok, state, self.expected(state)) from None
                if is_shift:
                    state_stack.append(arg)
                    value_stack.append(tok)
                    break
                size = arg.size
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                callback = arg.callback
                value = children[0] if callback is None else callback(children)
                below = state_stack[-1]
                key = (below, arg.origin, kind)
                goto = goto_after_units.get(key)
                if goto is None:
                    goto = self._follow_units(below, arg.origin, kind)
                    goto_after_units[key] = goto
                state_stack.append(goto)
                value_stack.append(value)
                if kind == END and goto == self._end_state:
                    return value
        raise AssertionError("the parse table accepted without reaching its end state")

    def _follow_units(self, below: int, origin: str, lookahead: str) -> int:
        """The state after `origin` is pushed on `below` and every unit rule
        (A -> B, passing its child on) that the lookahead triggers is reduced:
        those steps change no value, so they are done once and remembered."""
        states = self._states
        goto = states[below][origin][1]
        while True:
            action = states[goto].get(lookahead)
            if action is None or action[0] or action[1].callback is not None:
                return goto
            goto = states[below][action[1].origin][1]


def _cache_path(grammar: str) -> str:
    """Where lark keeps the analysed grammar between runs (faster start-up)."""
    import hashlib
    import os
    import tempfile

    import lark

    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha256((grammar + lark.__version__).encode()).hexdigest()[:16]
    folder = os.path.join(root, "fuse")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        folder = tempfile.gettempdir()
    return os.path.join(folder, f"grammar-{key}.lark-cache")
