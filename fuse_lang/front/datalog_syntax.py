"""Datalog's punctuation in a statement that does not parse: `:-` between a rule's
head and body, commas between its atoms, a final `.`, a query's `?-` and `!`
for negation.  Instead of the parser's raw "unexpected ':'", the error
(`datalog-syntax`) says how Fuse writes the statement, and its fix rewrites it:

    Ancestor(x,z) :- Parent(x,y), Ancestor(y,z).   ->   Ancestor(x,z) = Parent(x,y) Ancestor(y,z)
    Parent(Ann, Bob).                              ->   Parent(Ann, Bob)
    ?- Ancestor(Ann, x).                           ->   Ancestor(Ann, x)?

The rewrite moves punctuation, and the names are the user's but for Datalog's
variables: in a statement with `:-` or `?-`, an argument of one uppercase letter
(`X`, `Y1`) is lowercased (`Anc(X,Y) :- P(X,Y).` -> `Anc(x,y) = P(x,y)`), as Fuse
reads an uppercase name as a constant; no fix where the lowercase name is taken
there.  The fix is offered when the rewritten statement parses.  A rule written over several lines
(`Head :-`, lines of atoms ending in `,`, the last in `.`) is several statements
to Fuse: `rules_over_lines`, over a whole parse's diagnostics, says it on each
of its lines as one rule, with a fix that joins it onto its first line.
"""
from __future__ import annotations

import bisect
import re
from typing import Sequence

from ..speed.fastinit import frozen_dataclass
from .builder import StatementError
from .diagnostics import Diagnostic, Fix, TextEdit, make
from .lalr import ParseError, Parser
from .lexer import Tok, as_tok, tokenize
from .span import Span

_OPENERS = frozenset(("LPAR", "LSQB", "LBRACE"))
_CLOSERS = frozenset(("RPAR", "RSQB", "RBRACE"))
_OPERATORS = frozenset(("EQUAL", "PLUSEQ", "PROJEQ"))
_SHOWN = 120  # characters of the rewritten statement a message shows
# Datalog's variable as it is mostly written, one uppercase letter (`X`, `Y1`): in a rule
# written with `:-` or a query with `?-`, it is lowercased (a Fuse variable)
_DATALOG_VARIABLE = re.compile(r"[A-Z][0-9]*'*")


@frozen_dataclass
class _Rewrite:
    """A statement's Datalog punctuation turned into Fuse's."""

    marks: tuple[str, ...]  # what was found: "query", "neck", "comma", "dot", "bang"
    where: Span  # the first of them
    edits: tuple[TextEdit, ...]
    tokens: tuple[Tok, ...]  # the rewritten statement's tokens (the old offsets)
    shown: str  # the rewritten statement, spaced as the user spaced it
    unfinished: bool  # it ends with `:-` or `,`: a rule written over several lines
    variables: tuple[str, ...] = ()  # Datalog's variables lowercased (`X` -> `x`)
    clash: bool = False  # one of them is lowercase there too (`Q(X, x)`): no fix


def datalog_syntax(tokens: Sequence[Tok], parser: Parser) -> Diagnostic | None:
    """The `datalog-syntax` error of a statement that did not parse (its `tokens`,
    brackets balanced) when it is written with Datalog's punctuation, else None."""
    if len(tokens) < 2:
        return None
    rewrite = _rewrite(tokens)
    if rewrite is None:
        return None
    parses = not rewrite.unfinished and _parses(rewrite.tokens, parser)
    marks = rewrite.marks
    if not parses and "neck" not in marks and "query" not in marks:
        return None  # commas or a '.' that are not the only mistake: the parser's words
    lowercase_head = "neck" in marks and _lowercase_head(tokens)
    # (Datalog's case says what the variables' note would)
    message = _punctuation_message(rewrite, parses) if lowercase_head else \
        _message(rewrite, parses)
    fixes: tuple[Fix, ...] = ()
    if lowercase_head:
        message += ("; a relation's name starts with an uppercase letter in Fuse and a "
                    "variable with a lowercase one (Datalog's `a(X) :- b(X).` is "
                    "`A(x) = B(x)`)")
    elif _lowercase_constants(rewrite.tokens):  # (the rewrite would be an invalid fact)
        message += ("; a constant starts with an uppercase letter or is quoted in Fuse, a "
                    "lowercase name is a variable (Datalog's `p(ann, bob).` is "
                    "`P(\"ann\", \"bob\")`)")
    elif parses and not rewrite.clash:
        fixes = (_fix(rewrite),)
    diag = make("datalog-syntax", message, rewrite.where, fixes=fixes)
    if rewrite.unfinished:  # (rules_over_lines looks at the lines after it)
        return Diagnostic(diag.code, diag.severity, diag.message, diag.span, (), (),
                          (("unfinished", True),))
    return diag


def _fix(rewrite: _Rewrite) -> Fix:
    return Fix(f"Write it the Fuse way: `{_short(rewrite.shown)}`", rewrite.edits)


def _lowercase_head(tokens: Sequence[Tok]) -> bool:
    """`anc(X,Y) :- ...`: Datalog's case (a relation lowercase, variables uppercase)."""
    return tokens[0][0] == "NAME" and tokens[0][1][:1].islower() and tokens[1][0] == "LPAR"


def _lowercase_constants(tokens: Sequence[Tok]) -> bool:
    """`parent(ann, bob)`: a fact whose constants are Datalog's (lowercase), each a
    variable to Fuse."""
    if len(tokens) < 3 or tokens[0][0] != "NAME" or tokens[1][0] != "LPAR" or \
            any(t[0] in _OPERATORS or t[0] == "QMARK" for t in tokens):
        return False
    return any(t[0] == "NAME" and (t[1][:1].islower() or t[1][:1] == "_") and
               t[1] != "not" for t in tokens[2:])


def rules_over_lines(text: str, spans: Sequence[Span], diags: list[Diagnostic],
                     parser: Parser) -> list[Diagnostic]:
    """A parse's `diags` (of the statements at `spans`, in order), where a Datalog
    rule written over several lines (`Head :-`, lines of atoms ending in `,`, the
    last one ending in `.`) is said on each of its lines as one rule, with a fix
    that writes it on its first line."""
    if not any(d.code == "datalog-syntax" and d.data for d in diags):
        return diags
    starts = [span[0] for span in spans]
    at: dict[int, int] = {}  # statement number -> its first diagnostic's place in diags
    for j, diag in enumerate(diags):
        k = bisect.bisect_right(starts, diag.span.start) - 1
        if k >= 0 and diag.span.start <= spans[k][1]:
            at.setdefault(k, j)
    out = list(diags)
    for k, j in at.items():
        if diags[j].code == "datalog-syntax" and diags[j].data:
            _join_rule(text, spans, k, at, out, parser)
    return out


def _join_rule(text: str, spans: Sequence[Span], k: int, at: dict[int, int],
               out: list[Diagnostic], parser: Parser) -> None:
    """Statement `k` starts a rule over several lines: its diagnostic and those of
    the rule's other lines in `out` said again, with the fix that joins them."""
    m = k
    while True:  # the rule's lines: each broken, ending in ',' but the last in '.'
        m += 1
        if m not in at or m >= len(spans):
            return
        line = tokenize(text[spans[m][0]:spans[m][1]])
        if not line or line[-1][0] not in ("COMMA", "DOT"):
            return
        if line[-1][0] == "DOT":
            break
    start, end = spans[k][0], spans[m][1]
    piece = text[start:end]
    tokens = [as_tok((t[0], t[1], t[2] + start, t[3] + start)) for t in tokenize(piece)
              if t[0] != "NL"]
    rewrite = _rewrite(tokens)
    parses = rewrite is not None and not rewrite.unfinished and _parses(rewrite.tokens, parser)
    # (no fix where a comment between the lines would be lost, nor for Datalog's case)
    fixes = (_fix(rewrite),) if rewrite is not None and parses and "#" not in piece \
        and not _lowercase_head(tokens) and not rewrite.clash else ()
    shown = f": `{_short(rewrite.shown)}`" if rewrite is not None and parses else \
        ": the head, `=`, then the body's atoms side by side, without commas or a final `.`"
    if rewrite is not None and not _lowercase_head(tokens):
        shown += _variables_note(rewrite)
    first = out[at[k]]
    out[at[k]] = make("datalog-syntax", f"a Datalog rule over {m - k + 1} lines; a Fuse "
                      f"statement ends with its line (it goes on only while a bracket is "
                      f"open), so write the rule on one line{shown}", first.span, fixes=fixes)
    line_number = text.count("\n", 0, start) + 1
    for n in range(k + 1, m + 1):
        out[at[n]] = make("datalog-syntax", f"this line goes on with the Datalog rule of line "
                          f"{line_number}; a Fuse statement ends with its line, so write the "
                          f"rule on one line{shown}", out[at[n]].span, fixes=fixes)


def _message(rewrite: _Rewrite, parses: bool) -> str:
    return _punctuation_message(rewrite, parses) + _variables_note(rewrite)


def _variables_note(rewrite: _Rewrite) -> str:
    text = ""
    if rewrite.variables:
        named = ", ".join(f"`{v}`" for v in rewrite.variables)
        text += (f"; Datalog's variable{'s' if len(rewrite.variables) > 1 else ''} {named} "
                 f"{'are' if len(rewrite.variables) > 1 else 'is'} lowercase in Fuse, where "
                 f"an uppercase name is a constant")
        if rewrite.clash:
            text += " (and the lowercase name is taken in this statement)"
    return text


def _punctuation_message(rewrite: _Rewrite, parses: bool) -> str:
    marks = rewrite.marks
    shown = f": `{_short(rewrite.shown)}`" if parses else ""
    if rewrite.unfinished:
        return ("this looks like a Datalog rule written over several lines; a Fuse statement "
                "ends with its line (it goes on only while a bracket is open), so write the "
                "rule on one line: the head, `=`, then the body's atoms side by side, "
                "without commas or a final `.`")
    if "query" in marks:
        return f"Datalog's `?-`: Fuse writes a query as the atom followed by `?`{shown}"
    if "neck" in marks:
        return ("Datalog's `:-`: Fuse writes a rule as its head, `=`, then the body's atoms "
                f"side by side (a join), without commas or a final `.`{shown}")
    if "comma" in marks:
        return ("the atoms of a rule's body are written side by side (a join, as in "
                f"`A(x) B(x)`), not separated by commas{shown}")
    if "dot" in marks:
        return f"a Fuse statement ends with its line, without a final `.`{shown}"
    return f"Fuse writes negation as `not`{shown}"


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _parses(tokens: tuple[Tok, ...], parser: Parser) -> bool:
    try:
        parser.parse(list(tokens))
    except StatementError:
        return True  # it parses; what is left is said once the fix is made
    except (ParseError, RecursionError):
        return False
    return True


class _Rewriting:
    """One pass over a statement's tokens, making its _Rewrite."""

    def __init__(self, tokens: Sequence[Tok]) -> None:
        self.tokens = tokens
        self.marks: list[str] = []
        self.where: Span | None = None
        self.edits: list[TextEdit] = []
        self.out: list[Tok] = []
        self.shown: list[str] = []
        self.spaced = False  # the next token shown gets a space before it
        self.unfinished = False
        self.variables: dict[str, None] = {}
        self.clash = False

    def mark(self, what: str, span: Span) -> None:
        if what not in self.marks:
            self.marks.append(what)
        if self.where is None or span.start < self.where.start:
            self.where = span

    def keep(self, tok: Tok, after: Tok | None) -> None:
        """`tok` as it is; `after`: the original token before it (for its spacing)."""
        if self.out and (self.spaced or (after is not None and after[3] < tok[2])):
            self.shown.append(" ")
        self.spaced = False
        self.out.append(tok)
        self.shown.append(tok[1])

    def put(self, kind: str, text: str, at: Tok, space_before: bool) -> None:
        """A token the rewrite puts in place of `at`, spaced on both sides as asked."""
        if self.out and space_before:
            self.shown.append(" ")
        self.out.append(as_tok((kind, text, at[2], at[3])))
        self.shown.append(text)
        self.spaced = True

    def edit(self, start: int, end: int, text: str) -> None:
        self.edits.append(TextEdit(Span(start, end), text))


def _rewrite(tokens: Sequence[Tok]) -> _Rewrite | None:
    """The statement with Datalog's punctuation rewritten, or None when it has none."""
    r = _Rewriting(tokens)
    n = len(tokens)
    last = n - 1 if tokens[-1][0] == "DOT" else n  # a final '.' (brackets are balanced)
    query = tokens[0][0] == "QMARK" and tokens[1][0] == "MINUS" and tokens[0][3] == tokens[1][2]
    i = 0
    if query:
        r.mark("query", Span(tokens[0][2], tokens[1][3]))
        r.edit(tokens[0][2], tokens[2][2] if n > 2 else tokens[1][3], "")
        i = 2
    datalog = query or any(
        tokens[k][0] == "COLON" and tokens[k + 1][0] == "MINUS" for k in range(n - 1))
    written = {t[1] for t in tokens if t[0] == "NAME"}
    depth, body, neck = 0, False, False
    prev: Tok | None = None
    while i < last:
        tok = tokens[i]
        kind = tok[0]
        nxt = tokens[i + 1] if i + 1 < last else None
        if kind in _OPENERS:
            depth += 1
        elif kind in _CLOSERS:
            depth -= 1
        elif depth == 0 and kind == "COLON" and not neck and nxt is not None \
                and nxt[0] == "MINUS" and nxt[2] == tok[3] and prev is not None:
            neck = body = True
            r.mark("neck", Span(tok[2], nxt[3]))
            after = tokens[i + 2] if i + 2 < last else None
            r.edit(prev[3], after[2] if after is not None else nxt[3],
                   " = " if after is not None else " =")
            r.put("EQUAL", "=", tok, True)
            r.unfinished = after is None
            prev, i = nxt, i + 2
            continue
        elif depth == 0 and kind in _OPERATORS:
            body = True
        elif depth == 0 and body and kind == "COMMA" and prev is not None:
            r.mark("comma", Span(tok[2], tok[3]))
            r.edit(prev[3], nxt[2] if nxt is not None else tok[3], " " if nxt else "")
            r.spaced = True
            r.unfinished = r.unfinished or nxt is None
            prev, i = tok, i + 1
            continue
        elif depth == 0 and body and kind == "BANG" \
                and nxt is not None and nxt[0] == "NAME":
            r.mark("bang", Span(tok[2], tok[3]))
            r.edit(tok[2], nxt[2], "not ")
            r.put("NOT", "not", tok, prev is not None and prev[3] < tok[2] or r.spaced)
            prev, i = tok, i + 1
            continue
        if datalog and kind == "NAME" and _DATALOG_VARIABLE.fullmatch(tok[1]) and \
                prev is not None and prev[0] in ("LPAR", "COMMA") and \
                nxt is not None and nxt[0] in ("RPAR", "COMMA"):
            # `X` in `Anc(X,Y) :- Parent(X,Y).`: Datalog's variable, a constant to Fuse
            lower = tok[1].lower()
            r.variables[tok[1]] = None
            if lower in written:
                r.clash = True  # (`x` is already a name there: no fix)
            else:
                r.edit(tok[2], tok[3], lower)
                tok = as_tok((kind, lower, tok[2], tok[3]))
        r.keep(tok, prev)
        prev, i = tok, i + 1
    if last < n and prev is not None:
        dot = tokens[last]
        r.mark("dot", Span(dot[2], dot[3]))
        r.edit(prev[3], dot[3], "?" if query else "")
        if query:
            r.put("QMARK", "?", dot, False)
    elif query and prev is not None:
        r.edit(prev[3], prev[3], "?")
        r.put("QMARK", "?", prev, False)
    if not r.marks or r.where is None or not r.out:
        return None
    return _Rewrite(tuple(r.marks), r.where, tuple(r.edits), tuple(r.out), "".join(r.shown),
                    r.unfinished, tuple(r.variables), r.clash)
