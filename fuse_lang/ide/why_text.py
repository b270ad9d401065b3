"""A why's plain data (run.why.data) as text, and a why's target read from text.

`parse_target("Ancestor(Alice, Eve)")` gives ("Ancestor", ("Alice", "Eve")) and
`parse_target("Attn[5, 2]")` gives ("Attn", (5, 2)); `why_text` draws a derivation as
a tree, a why-not as its rules and where each stops, a number as its terms.  The
command line (`fuse why`, `fuse run --why`) and the editor share them.
"""
from __future__ import annotations

import math
import re
from typing import Any

from ..front import ir
from ..run.why.data import MAX_DEPTH, Derivation, NumberWhy, WhyNot, show_value

_QUALIFIED = r"[A-Za-z_][A-Za-z0-9_]*'*(?:::[A-Za-z_][A-Za-z0-9_]*'*)*"
# (a name a `fn` call wrote out, as a why shows it: `p@graph::reach.1`)
_NAME = re.compile(rf"\s*({_QUALIFIED}(?:@{_QUALIFIED}\.\d+)?)\s*")
_ARG = re.compile(r'\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|[A-Za-z_][A-Za-z0-9_]*)'
                  r'\s*')


class TargetError(ValueError):
    """A why's target that is not `Name(v, ...)` or `Name[i, ...]` (its words say how)."""


def parse_target(text: str) -> tuple[str, tuple]:
    """`Ancestor(Alice, Eve)`, `R("New York", 3)`, `Y[3]`, `Attn[5, 2]`, `Flag` (a
    scalar): the tensor's name and the tuple's values (ints, floats, strings)."""
    match = _NAME.match(text)
    if not match:
        raise TargetError(f"{text!r} is not a tuple or element: write it as a query's atom, "
                          f"`Ancestor(Alice, Eve)` or `Y[3]`")
    name, at = match.group(1), match.end()
    if at == len(text):
        return name, ()
    if text[at] not in "([":
        raise TargetError(f"{text!r}: expected `(` or `[` after `{name}`")
    close = ")" if text[at] == "(" else "]"
    at += 1
    values: list[Any] = []
    if text[at:].strip() == close:
        return name, ()
    if text[at:].lstrip()[:1] == close:
        at = len(text) - len(text[at:].lstrip())
        return name, _closed(text, at, close, ())
    while True:
        arg = _ARG.match(text, at)
        if not arg:
            raise _needs_quotes(text, at, close) or TargetError(
                f"{text!r}: expected a value (a symbol, a number or a quoted string) at "
                f"column {at + 1}")
        token = arg.group(1)
        if token[:1].islower() or token[:1] == "_":
            raise TargetError(f"{text!r}: `{token}` is a variable; a why asks about one tuple: "
                              f"give a value (a symbol starts with an uppercase letter; quote "
                              f"any other string)")
        values.append(_value(token))
        at = arg.end()
        if at < len(text) and text[at] == ",":
            at += 1
            continue
        if text[at:at + 1] == close:
            return name, _closed(text, at, close, tuple(values))
        raise _needs_quotes(text, arg.start(), close) or TargetError(
            f"{text!r}: expected `,` or `{close}` at column {at + 1}")


def _needs_quotes(text: str, at: int, close: str) -> TargetError | None:
    """A value written unquoted that only a quoted string can be (`New York`, `O'Brien`,
    `é`): said so, with the value quoted; None for anything else."""
    raw = re.match(rf'\s*([^,"{re.escape(close)}]*?)\s*(?:,|{re.escape(close)})', text[at:])
    if raw is None or not raw.group(1):
        return None
    value, start = raw.group(1), at + raw.start(1)
    fixed = f'{text[:start]}"{value}"{text[start + len(value):]}'.strip()
    return TargetError(f"{text!r}: `{value}` is not a value: values are separated by `,`, "
                       f"and a string that is no symbol is quoted: \"{value}\" (on a "
                       f"command line or a %%fuse line, inside single quotes: '{fixed}')")


def _closed(text: str, at: int, close: str, values: tuple) -> tuple:
    """The values, where nothing but spaces follows the closing bracket at `at`."""
    rest = text[at + 1:]
    if rest.strip():
        column = len(text) - len(rest.lstrip()) + 1
        raise TargetError(f"{text!r}: nothing may follow `{close}` (column {column}): a why "
                          f"asks about one tuple or element")
    return values


def _value(token: str) -> Any:
    if token.startswith('"'):
        return re.sub(r"\\(.)", r"\1", token[1:-1])
    if re.fullmatch(r"-?\d+", token):
        return int(token)
    if token[:1].isdigit() or token[:1] == "-":
        return float(token)
    return token


def why_text(answer: Derivation | WhyNot | NumberWhy) -> str:
    """The answer of a why as lines of text."""
    if isinstance(answer, Derivation):
        return "\n".join(_tree(answer))
    if isinstance(answer, WhyNot):
        return "\n".join(_why_not(answer))
    return "\n".join(_number(answer))


def _node_line(node: Derivation) -> str:
    if node.kind == "rule":
        assert node.place is not None
        bindings = ", ".join(f"{v} = {show_value(value)}" for v, value in node.bindings)
        where, text = _where(node.place)
        return f"{node.text}   by {where}: {text}" + \
            (f"   [{bindings}]" if bindings else "")
    if node.kind == "fact":
        return f"{node.text}   fact, {_where(node.place)[0] if node.place else 'line ?'}"
    if node.kind == "file":
        if node.place is not None and not node.place.line and node.place.text:
            return f"{node.text}   cell {node.place.text} of {node.place.file}"
        if node.place is None or not node.place.line:
            where = node.place.file if node.place else "its file"
            return f"{node.text}   a row of {where}"
        return f"{node.text}   row {node.place.line} of {node.place.file}"
    return f"{node.text}   input of the run"


_IMPORTED = re.compile(r"(.*)   \(from ([^()]+:\d+)\)")


def _where(place: Any) -> tuple[str, str]:
    """("line 12", the text) for the program's statement; ("lib/graph.fuse:28", the
    text) for an imported file's, whose text ends "(from lib/graph.fuse:28)"."""
    imported = _IMPORTED.fullmatch(place.text)
    if imported:
        return imported.group(2), imported.group(1)
    return f"line {place.line}", place.text


def _tree(root: Derivation) -> list[str]:
    lines = [_node_line(root)]
    lines += [f"  {line}" for line in _below(root)]
    return lines


def _below(node: Derivation, level: int = 1) -> list[str]:
    """The conditions and children of a node (at `level`, the root's 1), drawn with
    branches."""
    items: list[Any] = [*node.conditions, *node.children]
    if node.more:
        deep = level >= MAX_DEPTH and not node.children
        items.append(f"... {node.more} more" + (f" (below the {MAX_DEPTH}th level: a "
                                                f"derivation shows {MAX_DEPTH} levels at most)"
                                                if deep else ""))
    out = []
    for k, item in enumerate(items):
        last = k == len(items) - 1
        branch, indent = ("└─ ", "   ") if last else ("├─ ", "│  ")
        if isinstance(item, Derivation):
            out.append(branch + _node_line(item))
            out += [indent + line for line in _below(item, level + 1)]
        elif isinstance(item, str):
            out.append(branch + item)
        else:
            out.append(f"{branch}checked: {item.text}")
    return out


def _why_not(answer: WhyNot) -> list[str]:
    lines = [f"{answer.text} does not hold."]
    if answer.note:
        lines.append(f"  {answer.note}")
    for blocked in answer.rules:
        lines.append("  {}: {}".format(*_where(blocked.place)))
        where = f" at {blocked.goal}" if blocked.goal else ""
        lines.append(f"    stops{where}: {blocked.reason}")
    return lines


def _number(answer: NumberWhy) -> list[str]:
    lines = [f"{answer.text} = {_num(answer.value)}"]
    if answer.note:
        lines.append(f"  {answer.note}")
    for part in answer.parts:
        lines.append("  {}: {}".format(*_where(part.place)))
        if part.note and not part.terms:
            lines.append(f"    {part.note}")
            continue
        around = f"{part.nonlinearity} of " if part.nonlinearity else ""
        over = f"the {part.op} over {', '.join(part.projected)}" if part.projected \
            else ("the product" if part.count <= 1 else f"the {part.op}")
        lines.append(f"    {around}{over}: {part.count} "
                     f"{'term' if part.count == 1 else 'terms'}, total {_num(part.total)}")
        if part.note:
            lines.append(f"    {part.note}")
        if part.count > len(part.terms):
            shown = {"max": f"the {len(part.terms)} largest", "min": f"the {len(part.terms)} "
                     f"smallest"}.get(part.op, f"the top {len(part.terms)} by magnitude")
            lines.append(f"    {shown} "
                         f"({100 * part.share:.1f}% of the terms' magnitude):")
        for term in part.terms:
            at = ", ".join(f"{v} = {show_value(value)}" for v, value in term.bindings)
            factors = " × ".join(_factor(f.text, f.value) for f in term.factors)
            if math.prod(f.value for f in term.factors) * term.value < 0:
                factors = "- " + factors  # (a subtracted term: `- 1 = -1`)
            lines.append(f"      {at + ': ' if at else ''}{factors} = {_num(term.value)}")
    return lines


def _num(value: float) -> str:
    return f"{value + 0.0:.6g}"  # (+ 0.0: a product's -0.0 is shown as the 0 it is)


def query_at(analysis: Any, offset: int) -> ir.Query | None:
    """The query statement whose text holds `offset`, or None."""
    for stmt in analysis.program.statements:
        if isinstance(stmt, ir.Query) and stmt.span.start <= offset <= stmt.span.end:
            return stmt
    return None


def answer_targets(query: ir.Query, answer: Any, count: int) -> list[tuple[str, tuple]]:
    """The first `count` answers of a Boolean query (a run's `QueryAnswer`) as whole
    tuples to ask why of: `Ancestor(Alice, x)?` answered x = Bob gives
    ("Ancestor", ("Alice", "Bob")).  None for a query whose atom has other indices
    than variables and constants."""
    atom = query.atom
    if atom.indices is None or not answer.tuples:
        return []
    out = []
    for found in answer.tuples[:count]:
        by_var = dict(zip(answer.free, found))
        values = []
        for ix in atom.indices:
            if isinstance(ix, ir.IndexConst):
                values.append(ix.value)
            elif isinstance(ix, ir.IndexVar) and ix.name in by_var:
                values.append(by_var[ix.name])
            else:
                return []
        out.append((atom.name, tuple(values)))
    return out


def _factor(text: str, value: float) -> str:
    """A factor of a term: its element and value (`W[1] -2`), a number once (`3`)."""
    shown = _num(value)
    return shown if text == shown else f"{text} {shown}"
