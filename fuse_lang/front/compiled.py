"""The compiled replay: a statement shape's reductions as one straight-line function.

The parser replays the reductions of a statement shape it parsed before (see
lalr.Parser.parse); for a shape met often it compiles them instead: the same
builder methods called in the same order with the same children, without a
stack or a loop.  The function is made by running the replay over what each
value is: the expression that holds it, or, for a list made by a `_rule` (or a
method that is `list`), the list of its items, known here since the shape is: a
reduction that only reshapes its children costs no list and no call of its own,
only its method's.  (`fuse check` of the 10,000-line program of
benchmarks/check_speed.py takes about a fifth longer without it.)

The builder may help, with two class attributes:

- `TOKEN_STAND_INS`: {method: takers}, methods of rules of one token that make
  their value without side effects or errors, and the methods that take that
  token in its place in a list child: such a value is made where it is used, or
  not at all where a taker gets the token.
- `INLINE`: {method: Inliner}, for a call of the method, a function of the
  call's children and of the call's own expression, that gives an expression of
  the same value and the names it uses, or None.  A child is a TokenCode for a
  token, a variable's name (a str) for a value made, "None" for a left-out
  `[item]`, a StandIn, or a list of those.  The value is made where the call
  would be, so the expression must raise what the call would, first.
"""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

# What a reduction that reshapes its children runs: (items, expand1, method).
Reshape = tuple[list[Any], bool, Callable[[list], Any]]

# A builder's way to write out a call: (children, call) -> (expression, names) or None
Inliner = Callable[[list[Any], str], "tuple[str, dict[str, Any]] | None"]

# A replay's step: (tokens shifted before it, values it takes, what builds its value)
Step = tuple[int, int, Callable[[list], Any]]


class TokenCode(str):
    """The expression of a token (`t[i]`), told apart from a value's."""


class _Splice(NamedTuple):
    """A `_rule`'s value spliced into its parent's children, not known here: `*v`."""

    expression: str


class StandIn(NamedTuple):
    """A value not made yet: the call that makes it, the token that may stand in
    for it, and the methods that take that token (see TOKEN_STAND_INS)."""

    call: str
    token: str
    takers: frozenset[Callable[[list], Any]]


class ReplayCompiler:
    """Compiles replays of reductions that call `builder`'s methods; `reshapes`:
    for each build function that reshapes its children, how (see lalr._build)."""

    def __init__(self, builder: Any, reshapes: dict[Callable[[list], Any], Reshape]) -> None:
        self._reshapes = reshapes
        self._stand_ins = {getattr(builder, name): frozenset(getattr(builder, taker)
                                                             for taker in takers)
                           for name, takers in getattr(builder, "TOKEN_STAND_INS", {}).items()}
        self._inliners: dict[Any, Inliner] = {
            getattr(builder, name): inline
            for name, inline in getattr(builder, "INLINE", {}).items()}

    def compile(self, steps: list[Step]) -> Callable[[list], Any]:
        """A shape's replay as one function of its tokens."""
        namespace: dict[str, Any] = {}
        lines: list[str] = []
        stack: list[Any] = []  # each value as _expression reads it
        i = 0
        for n, (shifts, size, build) in enumerate(steps):
            stack += [TokenCode(f"t[{j}]") for j in range(i, i + shifts)]
            i += shifts
            children = stack[len(stack) - size:]
            del stack[len(stack) - size:]
            method, parts, expand1 = self._parts(build, children)
            stack.append(self._value(n, method, parts, expand1, lines, namespace))
        source = "def replay(t):\n" + "\n".join(lines) + f"\n    return {_expression(stack[0])}\n"
        exec(source, namespace)  # noqa: S102 - code made from the replay's own steps
        return namespace["replay"]

    def _parts(self, build: Callable[[list], Any], children: list[Any]
               ) -> tuple[Callable[[list], Any], list[Any], bool]:
        """The method a step calls, the children it calls it with, and whether it
        is a `?rule`'s (its one child passed on instead)."""
        reshape = self._reshapes.get(build)
        if reshape is None:
            return build, children, False
        items, expand1, method = reshape
        parts: list[Any] = []
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
        return method, parts, expand1

    def _value(self, n: int, method: Callable[[list], Any], parts: list[Any], expand1: bool,
               lines: list[str], namespace: dict[str, Any]) -> Any:
        """Step `n`'s value as _expression reads it, adding the lines that make it."""
        if method is list:
            return parts
        known = not any(type(part) is _Splice for part in parts)
        if expand1 and known and len(parts) == 1:
            return parts[0]  # a `?rule` left with one child: that child
        namespace[f"b{n}"] = method
        if method in self._stand_ins and len(parts) == 1 and type(parts[0]) is TokenCode:
            return StandIn(f"b{n}([{parts[0]}])", parts[0], self._stand_ins[method])
        inline = self._inliners.get(method)
        if inline is not None and known:
            for k, part in enumerate(parts):
                if type(part) is StandIn:  # made first: written-out code may read it twice
                    lines.append(f"    v{n}_{k} = {part.call}")
                    parts[k] = f"v{n}_{k}"
        children_list = _children(parts, method)
        if expand1 and not known:
            lines.append(f"    x = {children_list}")
            lines.append(f"    v{n} = x[0] if len(x) == 1 else b{n}(x)")
            return f"v{n}"
        call = f"b{n}({children_list})"
        written = inline(parts, call) if inline is not None else None
        if written is not None:
            call, names = written
            assert not any(re.fullmatch(r"[btvx]\d*", name) for name in names)
            namespace.update(names)
        lines.append(f"    v{n} = {call}")
        return f"v{n}"


def _expression(value: Any, taker: Any = None) -> str:
    """Python code for a value; in a list, a stand-in's token where `taker` takes it."""
    kind = type(value)
    if kind is str or kind is TokenCode:
        return value
    if kind is list:
        return f"[{', '.join([_expression(item, taker) for item in value])}]"
    if kind is _Splice:
        return f"*{value.expression}"
    return value.token if taker in value.takers else value.call


def _children(parts: list[Any], method: Any) -> str:
    """Python code for the list of children `method` is called with: stand-ins are
    made, except in a list child of a method that takes their tokens."""
    items = [_expression(part, method if type(part) is list else None) for part in parts]
    return f"[{', '.join(items)}]"
