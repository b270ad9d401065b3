"""The IR of blocks and choices: `fn` definitions, `{ ... }` blocks and `let`,
`case { ... }` and `when` guards (docs/language.md, Functions, Local tensors and
Choices), called by the IR builder's reductions.

`case` and `when` are lowered here, as they are parsed, to the builtin
`select(c, a, b)` (a where c > 0, else b): `case { c1 -> a; c2 -> b; default -> d }`
is `select(c1, a, select(c2, b, d))` (0 without a default) and `e when c` is
`select(c, e, 0)`.  A function stays an `ir.FnDef` until front/functions.py
inlines its calls.
"""
from __future__ import annotations

from typing import Any

from ..speed.fastinit import frozen_dataclass
from . import ir
from .indices import fail, tok_span
from .span import Span


@frozen_dataclass
class Arm:
    """One arm of a `case`: `condition -> value` (condition None: `default`)."""

    condition: Any
    value: Any
    arrow: Span
    span: Span


def _is_token(item: Any) -> bool:
    return isinstance(item, tuple)  # (IR nodes are no tuples)


def _zero(at: int) -> ir.Number:
    # an empty span: nothing in the text is this 0 (hover and highlighting skip it)
    return ir.Number(0.0, "0", Span(at, at))


def select_call(condition: Any, then: Any, otherwise: Any, name_span: Span,
                span: Span) -> ir.Call:
    """The builtin call `select(condition, then, otherwise)`."""
    return ir.Call("select", name_span, (condition, then, otherwise), (), span)


def case_arm(c: list) -> Arm:
    condition, arrow, value = c
    return Arm(condition, value, tok_span(arrow), Span(condition.span[0], value.span[1]))


def default_arm(c: list) -> Arm:
    word, arrow, value = c
    return Arm(None, value, tok_span(arrow), Span(word[2], value.span[1]))


def case(c: list) -> ir.Call:
    """`case { arms }` as nested selects; a `default` must be the last arm."""
    arms = [item for item in c if isinstance(item, Arm)]
    close = c[-1]
    span = Span(c[0][2], close[3])
    if not arms:
        fail("syntax-error", "a `case` holds arms `condition -> value`", span)
    for arm in arms[:-1]:
        if arm.condition is None:
            fail("syntax-error", "`default` is the last arm of a `case`", arm.span)
    if arms[-1].condition is None:
        value, arms = arms[-1].value, arms[:-1]
        if not arms:
            fail("syntax-error", "a `case` needs an arm with a condition before `default`",
                 span)
    else:
        value = _zero(close[2])
    for arm in reversed(arms):
        value = select_call(arm.condition, arm.value, value, arm.arrow,
                            Span(arm.span[0], close[3]))
    return ir.Call(value.name, tok_span(c[0]), value.args, (), span)  # type: ignore[union-attr]


def guarded(c: list) -> ir.Call:
    """`e when c`: e where the guard c holds (c > 0), else 0."""
    expr, word, condition = c
    return select_call(condition, expr, _zero(expr.span[1]), tok_span(word),
                       Span(expr.span[0], condition.span[1]))


def fn_body(c: list) -> list[ir.Equation]:
    out = []
    for item in c:
        if _is_token(item):
            continue
        if type(item) is ir.Let:  # a body's tensors are its own already
            item = item.equation
        if type(item) is not ir.Equation:
            fail("invalid-statement", "a function's body holds equations only "
                 "(no sources, sinks or declarations)", item.span)
        out.append(item)
    return out


def let_stmt(c: list) -> ir.Let:
    """`let T[i] = expr`: an equation whose tensor is local (front/let_blocks.py)."""
    word, eq = c
    if type(eq) is not ir.Equation:
        fail("invalid-statement", "a `let` defines a local tensor by an equation "
             "(`let h[i] = W[i,j] X[j]`), not from a file", eq.span)
    return ir.Let(eq, tok_span(word), Span(word[2], eq.span[1]))


def block(c: list) -> ir.Block:
    """`{ items }`: equations, `let`s and blocks, separated by newlines or `;`."""
    items = []
    for item in c[1:-1]:
        if _is_token(item):
            continue
        if type(item) is ir.Source:
            fail("invalid-statement", "a block holds equations, `let`s and blocks; read "
                 "files outside it", item.span)
        items.append(item)
    return ir.Block(tuple(items), Span(c[0][2], c[-1][3]))


def fn_def(c: list) -> ir.FnDef:
    """`fn name(params) -> result { body }`."""
    name = c[1]
    refs = [item for item in c if isinstance(item, ir.Ref)]
    body = next(item for item in c if isinstance(item, list))
    *params, result = refs
    for ref in refs:
        _check_signature_ref(ref)
    return ir.FnDef(name[1], tok_span(name), tuple(params), result, tuple(body),
                    Span(c[0][2], c[-1][3]))


def _check_signature_ref(ref: ir.Ref) -> None:
    """A parameter or result is `name[i, j]` (or a bare name: a scalar) whose indices
    are distinct variables."""
    seen: set[str] = set()
    for index in ref.indices or ():
        if type(index) is not ir.IndexVar or index.dotted:
            fail("invalid-index", "a function's parameters and result are indexed by "
                 "plain variables (`a[i,j]`)", index.span)
        if index.name in seen:
            fail("invalid-index", f"`{index.name}` twice in one parameter: name each axis "
                 f"once", index.span)
        seen.add(index.name)
