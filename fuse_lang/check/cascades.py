"""What a syntax error must not cascade into.  A statement with a syntax error is
left out of the program (front/syntax.py), so a tensor it defines would be
reported undefined where it is read, and one only it reads would be reported
never read.  The names on such a statement are found from its tokens: its
leading name (after `param`) is one it would define, and every name one it may
read (`Parent(x,y),`, a line of a rule written over several, reads `Parent`);
a broken `fn f(...)` would define the function `f`, and a broken block `{ ... }`
each name its equations would define.  The `undefined-tensor`
diagnostics (`unknown-builtin`, `unknown-function` for a call) of the first and
the `unused-tensor` ones of the second are dropped, and so is every `unknown-constant` (a statement left out
may put any value in a column).  Every other diagnostic stays.

`said_already` drops an `undefined-tensor` at the very place of a `bad-argument`
error that says what is wrong there (`even(j)` where `j` is no index).
"""
from __future__ import annotations

import bisect
from typing import Sequence

from ..front.diagnostics import Diagnostic, Severity
from ..front.lexer import tokenize
from ..front.span import Span

# Longer broken statements are not looked into (their names' cascades stay said).
_MOST_CHARACTERS = 100_000


def quiet_cascades(text: str, statement_spans: Sequence[Span],
                   syntax: Sequence[Diagnostic], diags: list[Diagnostic]) -> list[Diagnostic]:
    """`diags` less the cascades of the statements that `syntax` (the parse's
    diagnostics) left out; `statement_spans`: every statement found, in order."""
    if not syntax:
        return diags
    defined, read = names_on_broken(text, statement_spans, syntax)
    if not defined and not read:
        return diags
    return [d for d in diags if not _cascade(d, text, defined, read)]


def names_on_broken(text: str, statement_spans: Sequence[Span],
                    syntax: Sequence[Diagnostic]) -> tuple[set[str], set[str]]:
    """The names the statements with a syntax error would define, and those they
    may read."""
    starts = [span[0] for span in statement_spans]
    broken: dict[int, Span] = {}
    for diag in syntax:
        k = bisect.bisect_right(starts, diag.span.start) - 1
        if k >= 0 and diag.span.start <= statement_spans[k][1]:
            broken[k] = statement_spans[k]
    defined: set[str] = set()
    read: set[str] = set()
    for start, end in broken.values():
        if end - start <= _MOST_CHARACTERS:
            _names(text[start:end], defined, read)
    return defined, read


def _names(statement: str, defined: set[str], read: set[str]) -> None:
    tokens = tokenize(statement)
    if tokens and tokens[0][0] == "LBRACE":  # a block: each of its equations defines
        _block_names(tokens, defined)
    first = 1 if tokens and tokens[0][0] in ("PARAM", "FN") else 0  # (`fn f(...)` defines f)
    if len(tokens) > first and tokens[first][0] == "NAME":
        defined.add(tokens[first][1])
    read.update(tok[1] for tok in tokens if tok[0] == "NAME")


_ITEM_ENDS = ("NL", "SEMI", "LBRACE", "RBRACE")
_ASSIGNS = ("=", "+=", "max=", "min=", "avg=")


def _block_names(tokens: list, defined: set[str]) -> None:
    """The names a broken block's equations (`Y[i] = ...`, `let h[i] = ...`, in
    nested blocks too) would define: an item's leading name where the item
    assigns (a `case` arm, `c -> a`, does not)."""
    item: list = []
    for tok in [*tokens, ("NL", "\n")]:
        if tok[0] not in _ITEM_ENDS:
            item.append(tok)
            continue
        first = 1 if item and item[0][0] == "LET" else 0
        if len(item) > first and item[first][0] == "NAME" and \
                any(t[1] in _ASSIGNS for t in item):
            defined.add(item[first][1])
        item = []


def _cascade(diag: Diagnostic, text: str, defined: set[str], read: set[str]) -> bool:
    code = diag.code
    if code in ("undefined-tensor", "unknown-builtin", "unknown-function"):
        return text[diag.span.start:diag.span.end] in defined  # (a call of a broken `fn`)
    if code == "unused-tensor":
        return text[diag.span.start:diag.span.end] in read
    # a statement left out may put any value in a column (a fact, a rule whose head
    # feeds it): its constants are not judged until the syntax error is mended
    return code == "unknown-constant"


def said_already(diags: list[Diagnostic], others: Sequence[Diagnostic]) -> list[Diagnostic]:
    """`diags` less each `undefined-tensor` at the very place of a `bad-argument`
    error (of `diags` or `others`) that says what is wrong there: `j` of `even(j)`,
    where `j` is no index of the equation."""
    undefined = [d for d in diags if d.code == "undefined-tensor"]
    if not undefined:
        return diags
    said = {d.span for d in (*diags, *others)
            if d.severity is Severity.ERROR and d.code == "bad-argument"}
    return [d for d in diags if d.code != "undefined-tensor" or d.span not in said]
