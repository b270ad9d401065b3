"""A lean LALR driver over the tables lark builds from grammar.lark (see tables.py).

lark's `parse` loop carries per-token overhead we do not need (interactive
parsing, callback wrappers per reduction), so this module runs the same table in
a tight loop and calls the IR builder's methods itself, shaping each reduction's
children as lark would (filtering anonymous tokens, inlining `_rule`s and
`?rule`s, `None` for a missing `[item]`).  Same language, same results.

Programs repeat a few statement shapes many times, and the parser's moves depend
only on the tokens' types: the reductions of a shape's first parse are
remembered and replayed on the next statement of that shape (see Parser.parse).
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, NamedTuple

from .compiled import ReplayCompiler, Reshape
from .lexer import Tok, as_tok, kind_of

END = "$END"

class ParseError(Exception):
    """The next token does not fit: `expected` lists the terminal names that would."""

    def __init__(self, token: Tok, state: int, expected: frozenset[str]) -> None:
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.state = state
        self.expected = expected


# A reduction: how many values it pops, the rule it makes, what builds its value
# (None: a unit rule that passes its child on), and the state it goes to on each
# state below it (filled as met, see Parser._follow_units).
class _Reduce(NamedTuple):
    size: int
    origin: str
    build: Callable[[list], Any] | None
    gotos: dict[int, int]


class Parser:
    """The LALR parser of one grammar's tables; reductions call `builder`'s methods,
    named after the rules (or their `-> alias`), with the list of children."""

    MAX_SHAPES = 10_000  # statement shapes whose parse is remembered (see parse)
    COMPILE_AFTER = 16  # replays of a shape before it is compiled (see compiled.py)

    def __init__(self, tables: dict[str, Any], builder: Any) -> None:
        """`tables` as `build_tables` makes them (or `load_tables` reads them)."""
        self._start_state = tables["start_state"]
        self._end_state = tables["end_state"]
        rules = []
        reshapes: dict[Callable[[list], Any], Reshape] = {}
        for origin, size, recipe in tables["rules"]:
            build, reshape = _build(recipe, size, builder)
            if reshape is not None:
                reshapes[build] = reshape  # type: ignore[index]
            rules.append((size, origin, build))
        self._compiler = ReplayCompiler(builder, reshapes)
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
            shape = tuple(map(kind_of, tokens))
        steps = self._replays.get(shape)
        if steps is None:
            return self._parse(tokens, shape)
        if type(steps) is not list:  # compiled (see compiled.py)
            return steps(tokens)
        self._uses[shape] = uses = self._uses.get(shape, 0) + 1
        if uses >= self.COMPILE_AFTER:
            self._replays[shape] = self._compiler.compile(steps)
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
                    raise ParseError(as_tok(tok), state, self.expected(state)) from None
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


def _build(recipe: list[Any] | None, size: int, builder: Any
           ) -> tuple[Callable[[list], Any] | None, Reshape | None]:
    """The function a recipe (see _recipe) describes, calling `builder`'s methods,
    and for one that reshapes the children, how (for the replay compiler to write it out)."""
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


def _reshape_code(reshape: Reshape, children: list[str], method: str
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
