"""A lean lexer and LALR driver over the tables lark builds from grammar.lark.

lark compiles the grammar: its terminals, rules and LALR(1) parse table.
Its general-purpose lexer and `parse` loop carry per-token overhead we do not
need (a Token object with line and column, interactive parsing, callback
wrappers per reduction), so this module runs the same table in a tight loop
and calls the IR builder's methods itself, shaping each reduction's children
as lark would (filtering anonymous tokens, inlining `_rule`s and `?rule`s,
`None` for a missing `[item]`).  Same language, same results, a few times
faster: what lets `fuse check` read a 10,000-line program in about a second.

What the engine needs of lark's work is plain data (`build_tables`), kept in
grammar_tables.json beside the grammar, so that checking a file does not
import lark at all (with what it imports, a good part of a short run's
start-up).  `python -c "import fuse_lang.lalr as l; l.write_tables()"` writes
that file again after the grammar changed; until then the tables are built
with lark at start-up, and a test fails to say the file is stale.
"""
from __future__ import annotations

import functools
import json
import re
from functools import partial
from itertools import accumulate, compress, islice
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
TABLES_PATH = Path(__file__).with_name("grammar_tables.json")
TABLES_FORMAT = 3  # raise when the layout of build_tables' result changes


class Tok(NamedTuple):
    """A token: type, text and 0-based character offsets.  A tuple: the lexer
    makes one per token of the file, and tuples are built in C."""

    type: str
    value: str
    start_pos: int
    end_pos: int

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r}, {self.start_pos})"


_new_tok = partial(tuple.__new__, Tok)  # Tok from a 4-tuple, without Tok.__new__'s Python frame
_kind_of = itemgetter(0)

END = "$END"


class ParseError(Exception):
    """The next token does not fit: `expected` lists the terminal names that would."""

    def __init__(self, token: Tok, state: int, expected: frozenset[str]) -> None:
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.state = state
        self.expected = expected


class _Kinds(dict):
    """Token text -> terminal name, or None for an ignored terminal (so that the
    kinds select the tokens kept), filled on demand.  No terminal's match depends
    on what follows it beyond its own last character (the keywords' and `max=`'s
    look-aheads reject a continuation that the longer NAME match would have
    taken), so a token's text alone decides its terminal."""

    MAX_SIZE = 200_000  # a long-lived editor session: forget now and then

    def __init__(self, pattern: re.Pattern, ignore: frozenset[str]) -> None:
        super().__init__()
        self._match = pattern.match
        self._ignore = ignore

    def __missing__(self, value: str) -> str | None:
        if len(self) > self.MAX_SIZE:
            self.clear()
        kind = self._match(value).lastgroup  # type: ignore[union-attr]
        kind = self[value] = None if kind in self._ignore else kind
        return kind


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


# A leading character, class or escape repeated by `+` (not `+?` or `++`).
_ONE_OR_MORE = re.compile(r"(\\[dDsSwW]|\\[^0-9A-Za-z]|\[\^?\]?(?:\\.|[^\]\\])*\]"
                          r"|[^\\\[\](){}|*+?.^$])\+(?![?+])")


def _scan_alternatives(regexp: str) -> list[str]:
    """A capture-free `regexp` as alternatives that, tried in order, make the same
    attempts in the same order, so match what it matches: its top-level `|`s split,
    a leading group opened (`(?:a|b)c` -> `ac|bc`) and a leading `x+` written
    `xx*`.  Python's `re` passes over an alternative of an alternation cheaply
    only when it starts with a literal character or a class; an alternation, a
    repeat, any other start costs a step of its matching machine (and scanning
    a program tries many alternatives at every token)."""
    depth = 0
    bars = [-1]
    group_end = 0  # after the `)` of a group that the regexp starts with
    for i in _syntax_at(regexp):
        ch = regexp[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and not group_end and regexp.startswith("(?:"):
                group_end = i + 1
        elif ch == "|" and depth == 0:
            bars.append(i)
    if len(bars) > 1:
        bars.append(len(regexp))
        return [piece for a, b in zip(bars, bars[1:])
                for piece in _scan_alternatives(regexp[a + 1:b])]
    rest = regexp[group_end:]
    if group_end and rest[:1] not in ("*", "+", "?", "{"):  # not a repeated group
        return [piece for body in _scan_alternatives(regexp[3:group_end - 1])
                for piece in _scan_alternatives(body + rest)]
    first = _ONE_OR_MORE.match(regexp)
    if first:
        return [f"{first[1]}{first[1]}*{regexp[first.end():]}"]
    return [regexp]


# A reduction: how many values it pops, the rule it makes, what builds its value
# (None: a unit rule that passes its child on), and the state it goes to on each
# state below it (filled as met, see Engine._follow_units).
class _Reduce(NamedTuple):
    size: int
    origin: str
    build: Callable[[list], Any] | None
    gotos: dict[int, int]


class Engine:
    """Lexer + parser for one compiled grammar; reductions call `builder`'s methods,
    named after the rules (or their `-> alias`), with the list of children."""

    MAX_SHAPES = 10_000  # statement shapes whose parse is remembered (see parse)
    COMPILE_AFTER = 16  # replays of a shape before it is compiled (see _compiled)

    def __init__(self, tables: dict[str, Any], builder: Any) -> None:
        """`tables` as `build_tables` makes them (or `load_tables` reads them)."""
        self._init_lexer(tables)
        self._init_table(tables, builder)

    # ---- lexer
    def _init_lexer(self, tables: dict[str, Any]) -> None:
        terminals = tables["terminals"]  # (name, regexp), in the order lark tries them
        self._pattern = re.compile("|".join(f"(?P<{name}>{regexp})" for name, regexp in terminals))
        # The same alternation without groups, in the scanner's order (see _scan_order)
        # and each terminal as cheaper alternatives (see _scan_alternatives): findall
        # gives every match's text in C.
        regexps = dict(terminals)
        scanner = re.compile("|".join(f"(?:{piece})" for name in tables["scanner"]
                                      for piece in _scan_alternatives(
                                          _without_captures(regexps[name]))))
        assert scanner.groups == 0
        self._findall = scanner.findall
        self._ignore = frozenset(tables["ignore"])
        self._kinds = _Kinds(self._pattern, self._ignore)

    def lex(self, text: str, pos: int = 0, endpos: int | None = None) -> list[Tok]:
        """The tokens of text[pos:endpos], with offsets into `text`.  No terminal
        spans a newline, so a line lexed alone gives the tokens it has in the file."""
        return list(map(_new_tok, self.tokens(text, pos, endpos)))

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
            out.append((tokens, tuple(map(_kind_of, tokens))))
            if end < 0:
                return out
            pos = end + 1

    def _lex_slowly(self, text: str, pos: int, endpos: int) -> list[tuple[str, str, int, int]]:
        ignore = self._ignore
        return [(kind, m.group(), m.start(), m.end())
                for m in self._pattern.finditer(text, pos, endpos)
                if (kind := m.lastgroup) not in ignore]  # type: ignore[misc]

    # ---- parser
    def _init_table(self, tables: dict[str, Any], builder: Any) -> None:
        self._start_state = tables["start_state"]
        self._end_state = tables["end_state"]
        rules = []
        self._reshapes: dict[Callable[[list], Any], _Reshape] = {}  # for _compiled
        # for _compiled too: the builder may name methods (of rules of one token,
        # making their value without side effects or errors) whose value some of its
        # methods take as that token, in a list child, as well as made
        self._stand_ins = {getattr(builder, name): frozenset(getattr(builder, taker)
                                                             for taker in takers)
                           for name, takers in getattr(builder, "TOKEN_STAND_INS", {}).items()}
        # and methods whose call the builder may write out itself (see _compiled)
        self._inliners = {getattr(builder, name): inline
                          for name, inline in getattr(builder, "INLINE", {}).items()}
        for origin, size, recipe in tables["rules"]:
            build, reshape = _build(recipe, size, builder)
            if reshape is not None:
                self._reshapes[build] = reshape  # type: ignore[index]
            rules.append((size, origin, build))
        states: dict[int, dict[str, tuple[bool, Any]]] = {}
        for state, actions in enumerate(tables["states"]):
            # a reduction's gotos depend on its look-ahead (see _follow_units): one each
            states[state] = {symbol: (True, arg) if shift else (False, _Reduce(*rules[arg], {}))
                             for symbol, shift, arg in actions}
        self._states = states
        self._replays: dict[tuple[str, ...], Any] = {}  # shape -> steps, or their function
        self._uses: dict[tuple[str, ...], int] = {}  # shape -> replays so far

    def expected(self, state: int) -> frozenset[str]:
        return frozenset(s for s in self._states[state] if s.isupper() or s == END)

    def parse(self, tokens: list[tuple[str, str, int, int]],
              shape: tuple[str, ...] | None = None) -> Any:
        """Parse one statement's tokens (Toks or plain tuples), whose types are
        `shape` when the caller has them; raises ParseError at the first misfit.

        The parser's moves depend only on the tokens' types, and programs repeat a
        few statement shapes (`A[i,j] = B[i,k] C[k,j]`, `R(x,z) = R(x,y) E(y,z)`)
        many times: the reductions a shape's first parse made are remembered and
        replayed on the next statement of that shape, without the table."""
        if shape is None:
            shape = tuple(map(_kind_of, tokens))
        steps = self._replays.get(shape)
        if steps is None:
            return self._parse(tokens, shape)
        if type(steps) is not list:  # compiled (see _compiled)
            return steps(tokens)
        self._uses[shape] = uses = self._uses.get(shape, 0) + 1
        if uses >= self.COMPILE_AFTER:
            self._replays[shape] = _compiled(steps, self._reshapes, self._stand_ins,
                                             self._inliners)
        stack: list[Any] = []
        i = 0
        for shifts, size, build in steps:
            if shifts:
                stack += tokens[i:i + shifts]
                i += shifts
            if size:
                children = stack[-size:]
                del stack[-size:]
            else:
                children = []
            stack.append(build(children))
        return stack[0]

    def _parse(self, tokens: list[tuple[str, str, int, int]], shape: tuple[str, ...]) -> Any:
        """Parse by the table, and remember the reductions for statements of this shape:
        (tokens shifted before it, values it takes, what builds its value) each."""
        states = self._states
        end_state = self._end_state
        state_stack = [self._start_state]
        value_stack: list[Any] = []
        steps: list[tuple[int, int, Callable[[list], Any]]] = []
        shifted = 0
        last = tokens[-1][3] if tokens else 0
        for tok in (*tokens, Tok(END, "", last, last)):
            kind = tok[0]
            while True:
                try:
                    is_shift, arg = states[state_stack[-1]][kind]
                except KeyError:
                    state = state_stack[-1]
                    raise ParseError(_new_tok(tok), state, self.expected(state)) from None
                if is_shift:
                    state_stack.append(arg)
                    value_stack.append(tok)
                    shifted += 1
                    break
                size, origin, build, gotos = arg
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                if build is None:
                    value = children[0]
                else:
                    value = build(children)
                    steps.append((shifted, size, build))
                    shifted = 0
                below = state_stack[-1]
                goto = gotos.get(below)
                if goto is None:
                    goto = gotos[below] = self._follow_units(below, origin, kind)
                state_stack.append(goto)
                value_stack.append(value)
                if goto == end_state and kind == END:
                    if len(self._replays) >= self.MAX_SHAPES:
                        self._replays.clear()
                        self._uses.clear()
                    self._replays[shape] = steps
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
            if action is None or action[0] or action[1].build is not None:
                return goto
            goto = states[below][action[1].origin][1]


def _compiled(steps: list[tuple[int, int, Callable[[list], Any]]],
              reshapes: dict[Callable[[list], Any], _Reshape],
              stand_ins: dict[Callable[[list], Any], frozenset[Callable[[list], Any]]],
              inliners: dict[Callable[[list], Any], Inliner]) -> Callable[[list], Any]:
    """A shape's replay as one function of its tokens: the same builders called in
    the same order with the same children, without a stack or a loop (for the
    shapes a program repeats most, a good part of parsing them).  It is made by
    running the replay over what each value is: the expression that holds it, or,
    for a list made by a `_rule` (or a method that is `list`), the list of its
    items, known here since the shape is: a reduction that only reshapes its
    children (`reshapes`) costs no list and no call of its own, only its method's.

    `stand_ins` (see Engine): a value made by one of its keys from one token is
    made where it is used, or not at all where it is an item of a list child of
    one of the methods the key names: that method gets the token in its place.

    `inliners` (see Engine): for a call of one of their keys, a function of the
    call's children and of the call's own expression, that gives an expression of
    the same value, and the names it uses, or None.  A child is a TokenCode for a
    token, a variable's name (a str) for a value made, "None" for a left-out
    `[item]`, a StandIn, or a list of those.  The value is made where the call
    would be, so the expression must raise what the call would, first."""
    namespace: dict[str, Any] = {}
    lines = []
    stack: list[Any] = []  # each value as _expression reads it
    i = 0
    for n, (shifts, size, build) in enumerate(steps):
        stack += [TokenCode(f"t[{j}]") for j in range(i, i + shifts)]
        i += shifts
        children = stack[len(stack) - size:]
        del stack[len(stack) - size:]
        reshape = reshapes.get(build)
        if reshape is None:
            method, parts, expand1 = build, children, False
        else:
            items, expand1, method = reshape
            parts = []
            for item in items:
                if item is None:
                    parts.append("None")
                elif not item[1]:
                    parts.append(children[item[0]])
                elif type(children[item[0]]) is list:  # a `_rule`'s items, spliced here
                    if parts:
                        parts += children[item[0]]
                    else:  # its own list, taken over (so a long list is made in linear time)
                        parts = children[item[0]]
                else:
                    parts.append(_Splice(children[item[0]]))
        if method is list:
            stack.append(parts)
            continue
        known = not any(type(part) is _Splice for part in parts)
        if expand1 and known and len(parts) == 1:
            stack.append(parts[0])  # a `?rule` left with one child: that child
            continue
        namespace[f"b{n}"] = method
        if method in stand_ins and len(parts) == 1 and type(parts[0]) is TokenCode:
            stack.append(StandIn(f"b{n}([{parts[0]}])", parts[0], stand_ins[method]))
            continue
        inline = inliners.get(method)
        if inline is not None and known:
            for k, part in enumerate(parts):
                if type(part) is StandIn:  # made first: written-out code may read it twice
                    lines.append(f"    v{n}_{k} = {part.call}")
                    parts[k] = f"v{n}_{k}"
        children_list = _children(parts, method)
        if expand1 and not known:
            lines.append(f"    x = {children_list}")
            lines.append(f"    v{n} = x[0] if len(x) == 1 else b{n}(x)")
            stack.append(f"v{n}")
            continue
        call = f"b{n}({children_list})"
        written = inline(parts, call) if inline is not None else None
        if written is not None:
            call, names = written
            assert not any(re.fullmatch(r"[btvx]\d*", name) for name in names)
            namespace.update(names)
        lines.append(f"    v{n} = {call}")
        stack.append(f"v{n}")
    source = "def replay(t):\n" + "\n".join(lines) + f"\n    return {_expression(stack[0])}\n"
    exec(source, namespace)  # noqa: S102 - code made from the replay's own steps
    return namespace["replay"]


class TokenCode(str):
    """In _compiled, the expression of a token (`t[i]`), told apart from a value's."""


class _Splice(NamedTuple):
    """A `_rule`'s value spliced into its parent's children, not known here: `*v`."""

    expression: str


class StandIn(NamedTuple):
    """A value not made yet (see _compiled): the call that makes it, the token that
    may stand in for it, and the methods that take that token."""

    call: str
    token: str
    takers: frozenset[Callable[[list], Any]]


def _expression(value: Any, taker: Any = None) -> str:
    """Python code for a value in _compiled; in a list, a stand-in's token where
    `taker` takes it."""
    kind = type(value)
    if kind is str or kind is TokenCode:
        return value
    if kind is list:
        return f"[{', '.join([_expression(item, taker) for item in value])}]"
    if kind is _Splice:
        return f"*{value.expression}"
    return value.token if taker in value.takers else value.call


# A builder's way to write out a call in _compiled: (children, call) -> (expression, names)
Inliner = Callable[[list[Any], str], "tuple[str, dict[str, Any]] | None"]


def _children(parts: list[Any], method: Any) -> str:
    """Python code for the list of children `method` is called with: stand-ins are
    made, except in a list child of a method that takes their tokens."""
    items = [_expression(part, method if type(part) is list else None) for part in parts]
    return f"[{', '.join(items)}]"


# ------------------------------------------------------------ the tables

def build_tables(grammar: str, start: str) -> dict[str, Any]:
    """lark's analysis of `grammar` as plain data (JSON-able): the terminals in the
    order lark's lexer tries them, the LALR(1) table for `start`, and for each rule
    how its reduction shapes its children (see _recipe)."""
    from lark import Lark  # here: only building the tables needs lark
    from lark.parsers.lalr_analysis import Shift

    lark = Lark(grammar, parser="lalr", lexer="basic", start=[start, "lexer_only"])
    terminals = sorted(lark.lexer_conf.terminals, key=lambda t: (
        -t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    table = lark.parser.parser.parser.parse_table
    placeholders = lark.options.maybe_placeholders
    # lark numbers states and orders rules differently from run to run: number
    # them in the order met from the start state, so the same grammar always
    # gives the same data (and grammar_tables.json can be compared)
    order = [table.start_states[start]]
    number = {order[0]: 0}
    for state in order:  # grows as states are met
        for _symbol, (action, arg) in sorted(table.states[state].items()):
            if action is Shift and arg not in number:
                number[arg] = len(order)
                order.append(arg)
    rules: list[Any] = []
    rule_number: dict[Any, int] = {}
    states = []
    for state in order:
        actions = []
        for symbol, (action, arg) in sorted(table.states[state].items()):
            if action is Shift:
                actions.append([symbol, True, number[arg]])
                continue
            if arg not in rule_number:
                rule_number[arg] = len(rules)
                rules.append([arg.origin.name, len(arg.expansion), _recipe(arg, placeholders)])
            actions.append([symbol, False, rule_number[arg]])
        states.append(actions)
    regexps = [(t.name, t.pattern.to_regexp()) for t in terminals]
    return {"format": TABLES_FORMAT, "grammar": grammar, "start": start,
            "terminals": [list(pair) for pair in regexps],
            "scanner": _scan_order(regexps),
            "ignore": sorted(lark.lexer_conf.ignore),
            "start_state": 0, "end_state": number[table.end_states[start]],
            "rules": rules, "states": states}


# Terminals programs are made of most, tried first where that changes no match.
_COMMON_TERMINALS = ("NAME", "WS", "COMMA", "LSQB", "RSQB", "LPAR", "RPAR", "EQUAL")


def _scan_order(regexps: list[tuple[str, str]]) -> list[str]:
    """The order the scanner tries the terminals in: common ones first, but any two
    that can start with the same character in lark's order.  Which terminal matches
    at a place is then the same as with lark's order: a terminal tried earlier than
    lark would try it cannot match where the one lark picks does.  (Python's `re`
    tries alternatives one by one, so a `[` no longer waits for twenty that fail.)"""
    names = [name for name, _ in regexps]
    firsts = {name: _first_chars(regexp) for name, regexp in regexps}
    order: list[str] = []

    def place(name: str) -> None:
        if name in order:
            return
        for earlier in names[:names.index(name)]:
            a, b = firsts[earlier], firsts[name]
            if a is None or b is None or a & b:
                place(earlier)
        order.append(name)

    for name in [*_COMMON_TERMINALS, *names]:
        if name in firsts:
            place(name)
    return order


def _first_chars(regexp: str) -> frozenset[str] | None:
    """The characters a match of `regexp` can start with, or None when they are not
    a known set (any character, a negated class, an empty match, flags...)."""
    parser = _regexp_parser()
    parsed = parser.parse(regexp)
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    chars, nullable = _first_of(list(parsed), parser)
    return None if chars is None or nullable else frozenset(chars)


def _regexp_parser() -> Any:
    """Python's own regular-expression parser (its op codes are its constants)."""
    try:
        from re import _parser  # type: ignore[attr-defined]
    except ImportError:  # Python 3.10
        import sre_parse as _parser  # type: ignore[no-redef]
    return _parser


def _first_of(items: list, p: Any) -> tuple[set[str] | None, bool]:
    """(first characters, can match empty) of a parsed sequence; None: unknown."""
    out: set[str] = set()
    for op, av in items:
        if op == p.LITERAL:
            return out | {chr(av)}, False
        if op == p.IN:
            chars = _class_chars(av, p)
            return (None if chars is None else out | chars), False
        if op in (p.ASSERT, p.ASSERT_NOT, p.AT):
            continue  # takes no character
        if op == p.BRANCH:
            first, nullable = set(), False
            for chars, empty in [_first_of(list(alt), p) for alt in av[1]]:
                if chars is None:
                    return None, False
                first |= chars
                nullable = nullable or empty
        elif op == p.SUBPATTERN:
            if av[1] or av[2]:  # flags changed inside
                return None, False
            first, nullable = _first_of(list(av[3]), p)
        elif op in (p.MAX_REPEAT, p.MIN_REPEAT, getattr(p, "POSSESSIVE_REPEAT", None)):
            first, nullable = _first_of(list(av[2]), p)
            nullable = nullable or av[0] == 0
        else:  # ANY, NOT_LITERAL, group references, ...
            return None, False
        if first is None:
            return None, False
        out |= first
        if not nullable:
            return out, False
    return out, True


def _class_chars(items: list, p: Any) -> set[str] | None:
    """The characters of a character class, None when not a small known set."""
    chars: set[str] = set()
    for op, av in items:
        if op == p.LITERAL:
            chars.add(chr(av))
        elif op == p.RANGE and av[1] - av[0] < 1024:
            chars.update(map(chr, range(av[0], av[1] + 1)))
        elif op == p.CATEGORY and av == p.CATEGORY_DIGIT:
            chars.update(_decimal_digits())
        else:
            return None
    return chars


@functools.cache
def _decimal_digits() -> frozenset[str]:
    """What `\\d` matches in a str pattern: the Unicode decimal digits."""
    return frozenset(chr(c) for c in range(0x110000) if chr(c).isdecimal())


def load_tables(grammar: str, start: str = "start") -> dict[str, Any]:
    """The tables for `grammar`: grammar_tables.json's when it was made from this
    grammar, else built with lark now."""
    try:
        tables = json.loads(TABLES_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tables = None
    if isinstance(tables, dict) and tables.get("format") == TABLES_FORMAT \
            and tables.get("grammar") == grammar and tables.get("start") == start:
        return tables
    return build_tables(grammar, start)


def write_tables() -> Path:
    """Build the tables of grammar.lark and write grammar_tables.json (atomically)."""
    tables = build_tables(GRAMMAR_PATH.read_text(encoding="utf-8"), "start")
    temporary = TABLES_PATH.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(tables, separators=(",", ":")) + "\n", encoding="utf-8")
    temporary.replace(TABLES_PATH)
    return TABLES_PATH


def _recipe(rule: Any, placeholders: bool) -> list[Any] | None:
    """How a reduction by `rule` makes its value from its children, as lark's
    parse-tree builder would (lark.parse_tree_builder): children filtered and
    expanded, then the rule's method, or for a `?rule` with one child left, that
    child.  [method name, items (None when they are the children as they are),
    expand1, is a `_rule`], where each item is [child number, spliced] or None
    (a `[item]` left out); None for a unit `?rule` (A -> B)."""
    expansion = rule.expansion
    options = rule.options
    expand1 = bool(options.expand1 and not rule.alias)
    if expand1 and len(expansion) == 1 and not expansion[0].is_term:
        return None
    name = rule.alias or options.template_source or rule.origin.name
    # How many Nones go before each child (and after the last): `[item]` left out.
    empty = options.empty_indices if placeholders else ()
    if empty:
        nones = [len(ones) for ones in "".join(str(int(b)) for b in empty).split("0")]
    else:
        nones = [0] * (len(expansion) + 1)
    items: list[list[Any] | None] = []
    pending = 0
    for i, sym in enumerate(expansion):
        pending += nones[i]
        if options.keep_all_tokens or not (sym.is_term and sym.filter_out):
            items += [None] * pending
            pending = 0
            # a `_rule`'s value is the list of its children, spliced into its parent's
            items.append([i, not sym.is_term and sym.name.startswith("_")])
    items += [None] * (pending + nones[len(expansion)])
    as_is = items == [[i, False] for i in range(len(expansion))] and not expand1
    return [str(name), None if as_is else items, expand1, rule.origin.name.startswith("_")]


# What a reduction that reshapes its children runs: (items, expand1, method).
_Reshape = tuple[list[Any], bool, Callable[[list], Any]]


def _build(recipe: list[Any] | None, size: int, builder: Any
           ) -> tuple[Callable[[list], Any] | None, _Reshape | None]:
    """The function a recipe (see _recipe) describes, calling `builder`'s methods,
    and for one that reshapes the children, how (for _compiled to write it out)."""
    if recipe is None:
        return None, None
    name, items, expand1, inlined = recipe
    method = getattr(builder, name, None)
    if method is None:
        # `_rule`s become lists (see _recipe); any other rule without a method a lark Tree
        method = list if inlined else partial(_tree, name)
    if items is None:
        return method, None  # the children as they are: `c` is a fresh list
    reshape = (items, expand1, method)
    lines, value = _reshape_code(reshape, [f"c[{i}]" for i in range(size)], "m")
    body = "".join(f"    {line}\n" for line in lines)
    namespace = {"m": method}
    exec(f"def build(c):\n{body}    return {value}\n", namespace)  # noqa: S102
    return namespace["build"], reshape


def _reshape_code(reshape: _Reshape, children: list[str], method: str
                  ) -> tuple[list[str], str]:
    """Python lines and the expression of the value that make a reduction's value
    from its children (given as expressions), calling `method` (its name there)."""
    items, expand1, function = reshape
    parts = ["None" if item is None else ("*" if item[1] else "") + children[item[0]]
             for item in items]
    if items and items[0] is not None and items[0][1]:
        # left recursion (`_rule: _rule "," item`): extend the list it made, as lark
        # does, so a long list is built in linear time
        lines = [f"x = {parts[0][1:]}"] + ([f"x += [{', '.join(parts[1:])}]"] if parts[1:] else [])
    else:
        lines = [f"x = [{', '.join(parts)}]"]
    if function is list:
        return lines, "x"
    return lines, f"x[0] if len(x) == 1 else {method}(x)" if expand1 else f"{method}(x)"


def _tree(name: str, children: list) -> Any:
    from lark import Tree  # only a rule the builder has no method for makes one

    return Tree(name, children)
