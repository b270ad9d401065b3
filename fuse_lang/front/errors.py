"""Friendly messages for syntax errors: what the parser expected, in words, and
for common mistakes a sentence, matched by parser state (as lark's
`match_examples`)."""
from __future__ import annotations

import difflib
import functools
from typing import Sequence

from .builder import StatementError
from .lalr import ParseError, Parser
from .lexer import Tok, tokenize
from .span import Span

_TERMINAL_WORDS = {
    "NAME": "a name", "NUMBER": "a number", "STRING": "a file path in double quotes",
    "EQUAL": "'='", "PLUSEQ": "'+='", "PROJEQ": "'max=', 'min=' or 'avg='", "QMARK": "'?'",
    "$END": "the end of the statement", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['",
    "RSQB": "']'", "COMMA": "','", "COLON": "':'", "DOT": "'.'", "STAR": "'*'",
    "SLASH": "'/'", "PLUS": "'+'", "MINUS": "'-'", "POW": "'^'", "EXPORT": "'export'",
    "AXIS": "'axis'", "PARAM": "'param'", "TRAIN": "'train'", "REDUCE": "'reduce'",
    "SEMI": "';'", "LBRACE": "'{'", "RBRACE": "'}'", "COMPARE": "a comparison",
    "FN": "'fn'", "CASE": "'case'", "WHEN": "'when'", "DEFAULT": "'default'", "ARROW": "'->'",
    "NL": "a new line", "LET": "'let'", "ANDAND": "'&&'", "OROR": "'||'", "BANG": "'!'",
    "IMPORT": "'import'", "AS": "'as'",
}

# Friendly messages for common mistakes, matched by parser state (lark's match_examples).
_EXAMPLES: dict[str, list[str]] = {
    "an equation needs a right-hand side after the operator": [
        "Y[i] =", "Y =", "Y[i] max=", "Y[i] +=", "\"out.npy\" ="],
    "missing an operand after the operator": ["Y = A +", "Y = A *", "Y = A -", "Y = A /",
                                              "Y = A ^", "Y = -", "Y = A + *", "Y = A ==",
                                              "Y = A <", "Y = A &&"],
    "missing '=' between the left-hand side and the expression": [
        "Y[i] W[i]", "Y W", "Y[i] 3", "Y[i] (W)", "Y(i) W"],
    "missing ',' between indices": ["Y[i j] = X[i]", "Y = X[i j]", "Y = R(x y)"],
    "an index is missing between the commas": ["Y[i,,j] = X[i]", "Y = X[,i]", "Y = X[i,,j]"],
    "`reduce` names its operator, then the indices it reduces: `reduce(sum, i) X[i]`": [
        "Y = reduce(sum) X[i]", "Y = reduce(max)", "Y = reduce() X[i]"],
    "`reduce(sum, i)` reduces the expression after it: `reduce(sum, i) X[i]`": [
        "Y = reduce(sum, i)", "Y = reduce(max, i, j)"],
}


def _describe(tok: Tok) -> str:
    if tok.type == "$END":
        return "the end of the statement"
    return f"'{tok.value}'"


# Terminals that only a block's `{ }` feeds the parser: after an expression outside
# braces, LALR's merged look-aheads name them too, and they would crowd out "the end
# of the statement" (`Y[i] = W[i],`: "expected ';', 'let', '{', '}' ...")
_BLOCK_ONLY = frozenset(("NL", "SEMI", "LBRACE", "RBRACE", "LET"))


def parse_error_message(err: ParseError, parser: Parser, braces: bool = True) -> str:
    """What `err` (raised by `parser`) says to the user; `braces`: whether the
    statement has a `{` (else the terminals only a block feeds are not named)."""
    tok = err.token
    if tok.type in ("LBRACE", "RBRACE") and "LBRACE" not in err.expected \
            and "RBRACE" not in err.expected:
        return ("braces hold a function's body (`fn f(x[i]) -> y[i] { ... }`), the arms "
                "of a `case { c -> a; default -> b }` or, starting a statement, a block "
                "of equations (`{ let h[i] = ...; Y[i] = h[i] }`), nothing else")
    label = _match_example(err, parser)
    if label:
        return label
    if tok.type == "EQUAL" and "RPAR" in err.expected:  # `(n = m + 1)`
        return "unexpected '=' inside parentheses: to compare, write `==` (`=` defines an equation)"
    # `not` and `case` may start any operand; naming them would crowd out "a name"
    if tok.type == "COMMA" and "DEFAULT" in err.expected:  # `case { c -> a, default -> b }`
        return "unexpected ',': the arms of a `case` are separated by `;` or a new line"
    # outside braces, the end of the statement is named last, never left out
    ends = not braces and "$END" in err.expected
    names = err.expected - _BLOCK_ONLY - {"$END"} if ends else err.expected
    expected = sorted({_TERMINAL_WORDS.get(t, t) for t in names
                       if not t.startswith("__") and t not in ("NOT", "CASE", "BANG")})
    if len(expected) > 6:
        expected = expected[:6] + ["..."]
    if ends:
        expected.append(_TERMINAL_WORDS["$END"])
    wanted = ", ".join(expected[:-1]) + (" or " if len(expected) > 1 else "") + expected[-1] \
        if expected else "something else"
    if tok.type == "$END":  # (`Y[i] = X[i] when`: nothing is unexpected, something is missing)
        return f"the statement ends too soon: expected {wanted}"
    return f"unexpected {_describe(tok)}; expected {wanted}"


@functools.lru_cache(maxsize=4)
def _example_states(parser: Parser) -> dict[tuple[int, str], str]:
    """(parser state, token type) -> message, computed once per parser from _EXAMPLES."""
    table: dict[tuple[int, str], str] = {}
    for label, examples in _EXAMPLES.items():
        for example in examples:
            try:
                parser.parse(tokenize(example))
            except ParseError as err:
                table.setdefault((err.state, err.token.type), label)
            except StatementError:
                pass
    return table


def _match_example(err: ParseError, parser: Parser) -> str | None:
    # As lark's match_examples: the parser state and the token type of the
    # error identify the mistake; the table is computed once, not per error.
    return _example_states(parser).get((err.state, err.token.type))


# The words that start a statement, for "did you mean" on a misspelled one
_KEYWORDS = ("export", "import", "axis", "param", "train", "fn", "let")

# Soufflé's directives (`.decl edge(x: number, y: number)`), which Fuse has no need of
_SOUFFLE_DIRECTIVES = frozenset(("decl", "input", "output", "type", "printsize", "comp",
                                 "init", "functor", "pragma", "plan", "limitsize"))

_ASSIGN = frozenset(("EQUAL", "PLUSEQ", "PROJEQ"))
_BINARY = frozenset(("PLUS", "MINUS", "STAR", "SLASH", "POW", "ANDAND", "OROR", "COMPARE"))


def common_mistake(tokens: Sequence[tuple[str, str, int, int]], err: ParseError
                   ) -> tuple[str, Span] | None:
    """A sentence and its range for a mistake users coming from Python, einsum or
    Soufflé make, spotted in the statement's `tokens` where the parser failed with
    `err`; None when none fits (the parser's own message is given)."""
    first = tokens[0]
    if first[0] == "NAME" and len(tokens) > 1 and tokens[1][0] in ("NAME", "STRING"):
        close = difflib.get_close_matches(first[1].lower(), _KEYWORDS, n=1, cutoff=0.6)
        if close and close[0] != first[1]:  # `exprot Y`, `improt "a.fuse"`, `parm W[i]`
            return (f"`{first[1]}` is not a keyword: did you mean `{close[0]}`?",
                    Span(first[2], first[3]))
    if first[0] == "DOT" and len(tokens) > 1 and tokens[1][0] == "NAME" \
            and tokens[1][1] in _SOUFFLE_DIRECTIVES and tokens[1][2] == first[3]:
        word = tokens[1][1]
        if word == "output" or word == "printsize":
            instead = "a relation is shown by `export Path` or a query `Path(x, y)?`"
        elif word == "input":
            instead = "a relation is read from a file with `Edge(x, y) = \"edge.facts\"`"
        else:
            instead = ("Fuse declares no relations: a relation is defined by its facts and "
                       "rules (`Edge(A, B)`, `Path(x, y) = Edge(x, y)`)")
        return f"`.{word}` is Soufflé's; {instead}", Span(first[2], tokens[1][3])
    tok = err.token
    at = next((k for k, t in enumerate(tokens) if t[2] == tok[2] and t[0] == tok[0]), None)
    if at is None:
        return None
    if at == 0 and tok[0] in _BINARY:  # `  + X[i]`, going on with the line before
        return (f"a statement cannot start with '{tok[1]}': a statement ends with its line, "
                f"so to go on with an expression on the next line, open a `(` before the "
                f"line break", Span(tok[2], tok[3]))
    if tok[0] == "COLON" and at + 1 < len(tokens) and tokens[at + 1][0] == "EQUAL" \
            and tokens[at + 1][2] == tok[3]:  # `Y[i] := X[i]`
        return ("`:=` is not Fuse's: an equation is written with `=` (`Y[i] = X[i]`)",
                Span(tok[2], tokens[at + 1][3]))
    if tok[0] == "COLON" and 0 < at < len(tokens) - 1 and tokens[at - 1][0] == "NAME" \
            and tokens[at + 1][0] == "NAME" and tokens[at - 1][3] == tok[2] == \
            tokens[at + 1][2] - 1 and _outside_brackets(tokens, at):  # `g:T[i]`, not `A[i:j]`
        namespace, name = tokens[at - 1][1], tokens[at + 1][1]
        return (f"`{namespace}:{name}`: a name from an imported file is written with two "
                f"colons, `{namespace}::{name}`", Span(tokens[at - 1][2], tokens[at + 1][3]))
    operator = _wrong_operator(tokens, at)
    if operator is not None:
        return operator
    start = next((k + 1 for k in range(at - 1, -1, -1) if tokens[k][0] in ("NL", "SEMI")), 0)
    if tok[0] == "EQUAL" and any(t[0] in _ASSIGN for t in tokens[start:at - 1]) \
            and tokens[at - 1][0] not in _ASSIGN:  # (not `Y = = 3`: a doubled '=')
        # `Y[i] = X[i] when X[i] = 0`, `Y = A = B`
        return ("a second '=': to compare, write `==` (an equation has one `=`)",
                Span(tok[2], tok[3]))
    return None


_OPERATORS = "an equation's operator is `=`, `+=`, `max=`, `min=` or `avg=`"
_ARITHMETIC_EQ = {"STAR": "*", "MINUS": "-", "SLASH": "/", "POW": "^"}
_INSTEAD = {"*": "write the product on the right-hand side (`Y[i] = A[i] B[i]`)",
            "-": "to subtract, add the negation in an equation of its own (`Y[i] += -B[i]`)"}


def _outside_brackets(tokens: Sequence[tuple[str, str, int, int]], at: int) -> bool:
    """Whether tokens[at] is inside no `[ ]` (where `:` makes a slice)."""
    depth = 0
    for tok in tokens[:at]:
        depth += (tok[0] == "LSQB") - (tok[0] == "RSQB")
    return depth <= 0


def _wrong_operator(tokens: Sequence[tuple[str, str, int, int]], at: int
                    ) -> tuple[str, Span] | None:
    """`Y[i] sum= A[i,j]`, `Y[i] prod= ...`, `Y[i] *= A[i]`: an equation's operator
    that Fuse has not, written right after the left-hand side (tokens[at] is where
    the parser failed, its `=` right after it)."""
    if at < 1 or at + 1 >= len(tokens):
        return None
    tok, eq, before = tokens[at], tokens[at + 1], tokens[at - 1]
    if eq[0] != "EQUAL" or eq[2] != tok[3] or before[0] not in ("RSQB", "RPAR", "NAME") \
            or any(t[0] in _ASSIGN for t in tokens[:at]):
        return None
    span = Span(tok[2], eq[3])
    if tok[0] == "NAME":
        word = tok[1]
        if word == "sum":
            return (f"`sum=` is not an operator: `=` sums the indices the left-hand side does "
                    f"not keep (`Y[i] = A[i,j]`); {_OPERATORS}", span)
        close = ["avg"] if word in ("mean", "average") else \
            difflib.get_close_matches(word, ("max", "min", "avg"), n=1, cutoff=0.6)
        hint = f": did you mean `{close[0]}=`?" if close else ""
        return f"`{word}=` is not a projection operator; {_OPERATORS}{hint}", span
    if tok[0] in _ARITHMETIC_EQ:
        symbol = _ARITHMETIC_EQ[tok[0]]
        instead = _INSTEAD.get(symbol, "write the operation on the right-hand side")
        return f"`{symbol}=` is not Fuse's: {_OPERATORS}; {instead}", span
    return None


_RUNON_OPENERS = {"LPAR": "(", "LSQB": "["}


def run_on_note(tokens: Sequence[tuple[str, str, int, int]], text: str, start: int,
                at: int) -> tuple[Span, str] | None:
    """Where a statement with a syntax error ending at offset `at` ran on over a line break:
    a '(' or '[' left open on a line whose next line starts at column 1 (and is
    read as part of the statement, `B[i] = relu(A[i]` then `C[i] = A[i])`), that
    line being at or before `at`.  The opener's span and a note that says so, or
    None.  `text` is the statement's text, starting at offset `start`."""
    stack: list[tuple[str, str, int, int]] = []
    end = start
    for tok in tokens:
        kind, tok_start = tok[0], tok[2]
        if tok_start > at:
            return None
        gap = text[end - start:tok_start - start]
        if gap.endswith("\n") and stack and all(t[0] in _RUNON_OPENERS for t in stack):
            opener = stack[-1]
            return (Span(opener[2], opener[3]),
                    f"'{_RUNON_OPENERS[opener[0]]}' is not closed on its line, so the next "
                    f"line, starting at column 1, goes on with this statement")
        if kind in ("LPAR", "LSQB", "LBRACE"):
            stack.append(tok)
        elif kind in ("RPAR", "RSQB", "RBRACE") and stack:
            stack.pop()
        end = tok[3]
    return None
