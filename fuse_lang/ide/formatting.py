"""The canonical layout of a Fuse program: `format_text(text) -> text`.

The formatter re-spaces the *tokens* of a program; it never adds, drops or
reorders one, nor moves a statement-ending newline, so the formatted text
lexes to the same statements of tokens and parses to the same IR (only spans
move).  It checks the tokens after the fact as well, and gives back the text
unchanged if that check ever failed; the tests check the IR.  A text
with syntax errors is not formatted at all.

The layout, one rule each:

- statements start in column 1; one space around `=`, `+=`, `max=`/`min=`/`avg=`,
  binary `+ - * /`, and between juxtaposed factors; none around `^`/`**` or
  after a unary `-` or `!`; none inside brackets next to them;
- index lists are compact: `W[i,j]`, `X[i-1,k]`, `Comp[p,p'.]`, `R(x,y)`;
- call arguments, list items, `export`/`param`/`axis` items are separated by
  `, `; a keyword argument is `axis=i`;
- `;` is followed by one space; `?` is attached: `Ancestor(Alice,x)?`;
- comments stay on their line; a trailing comment follows the code after two
  spaces; a whole-line comment inside brackets or a `{ }` block keeps its
  indentation (one between statements starts in column 1); trailing whitespace
  is dropped;
- blank lines are kept, three or more become two; none at the start or end;
- a statement continued over lines keeps its line breaks and the indentation
  of its continuation lines;
- in a block of consecutive lines that each hold one single-line equation,
  source or sink, the operators end in one column (their `=` signs align:
  `Y[p] max= ...` above `K[i]    = ...`).
"""
from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import re
from typing import Any

from ..front import ir
from ..front.lexer import Tok, tokenize
from ..front.span import Span, lf_endings
from ..front.syntax import parse

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSERS = frozenset(_OPENERS.values())
_STATEMENT_OPS = frozenset({"EQUAL", "PLUSEQ", "PROJEQ"})
_OPERAND_END = frozenset({"NAME", "NUMBER", "STRING", "RPAR", "RSQB"})
_INERT = frozenset({"LPAR", "RPAR", "LSQB", "RSQB", "COMMA", "SEMI"})  # merge with nothing
_NO_SPACE_BEFORE = frozenset({"RPAR", "RSQB", "COMMA", "SEMI", "QMARK", "DOT", "COLON"})


def format_text(text: str) -> str:
    """The program in its canonical layout; the text itself when it has syntax
    errors (or, defensively, when re-spacing would change a token)."""
    parsed = parse(text)
    if parsed.diagnostics:
        return text
    tokens = tokenize(text)
    formatted = _Printer(text, tokens, _index_openers(parsed.program, tokens)).run()
    if formatted != text and _statements(tokens) != _statements(tokenize(formatted)):
        return text  # never expected: the tests check every corpus program
    return formatted


def format_lines(text: str, start: int, end: int) -> list[tuple[Span, str]]:
    """The edits that bring the lines holding offsets `start` to `end` to the
    canonical layout and leave every other line as it is (an editor's "format
    selection", Neovim's `gq`). The formatter re-spaces tokens within their lines
    and shortens runs of blank lines, so each line that is not blank is paired with
    its formatted self, in order, and each run of blank lines with its formatted
    run; a line or run edited is one of those that meet the lines asked.

    Only the paragraphs that hold the lines asked are formatted (runs of lines
    between blank lines outside any bracket: the layout of a line depends on no
    line beyond them), so the cost is that of the selection, not of the file (an
    editor waits half a second for it)."""
    old = _LINE.findall(text)
    starts = [0, *itertools.accumulate(map(len, old))]
    first = bisect.bisect_right(starts, start) - 1
    # (a selection that ends at the start of a line does not take that line)
    last = max(bisect.bisect_left(starts, end) - 1, first)
    if not old:
        return []
    ws, we = _paragraphs(text, old, min(first, len(old) - 1), min(last, len(old) - 1))
    window = text[starts[ws]:starts[we]]
    if _newline(window) != _newline(text):  # (mixed line endings: the file's wins)
        ws, we, window = 0, len(old), text
    formatted = format_text(window)
    if formatted == window:
        return []
    new = _LINE.findall(formatted)
    pairs = _paired_lines(old[ws:we], new)
    if pairs is None:  # (never expected: the paragraphs' whole edit)
        return [(Span(starts[ws], starts[we]), formatted)]
    return [(Span(starts[ws + i1], starts[ws + i2]), "".join(new[j1:j2]))
            for (i1, i2), (j1, j2) in pairs
            if ws + i1 <= last and ws + max(i2 - 1, i1) >= first
            and old[ws + i1:ws + i2] != new[j1:j2]]


def _paragraphs(text: str, old: list[str], first: int, last: int) -> tuple[int, int]:
    """The lines [ws, we) around lines `first` to `last` that format as they would in
    the whole file: its edges are where no bracket is open, no line goes on with a
    backslash, and a blank or comment-only line, or a whole statement without `=`
    (a fact, a query, `export`), is on one side (no block of aligned equations
    crosses those: a file of 10,000 facts is not one paragraph), and are not blank
    (a run of blank lines is shortened whole, and a text's blank edges would be
    dropped)."""
    inside = _continued_lines(text)
    count = len(old)

    def apart(k: int) -> bool:  # (a line no `=` aligns: it begins and ends outside brackets)
        line = old[k].strip()
        return not line or line.startswith("#") or \
            ("=" not in line and k not in inside and k + 1 not in inside)

    def blank(k: int) -> bool:
        return not old[k].strip()

    ws = first
    while ws > 0 and not (ws not in inside and not blank(ws)
                          and (apart(ws - 1) or apart(ws))):
        ws -= 1
    we = last + 1
    while we < count and not (we not in inside and not blank(we - 1)
                              and (apart(we) or apart(we - 1))):
        we += 1
    return ws, we


def _continued_lines(text: str) -> set[int]:
    """The lines (0-based) whose start is inside a bracket, or after a line ending
    with a backslash: a statement goes on there.  (Brackets counted by a scan that
    skips strings and comments, as the lexer does, without making its tokens.)"""
    inside: set[int] = set()
    line = depth = 0
    for match in _BRACKETS_AND_ENDS.finditer(text):
        mark = match.group()
        if mark in "([{":
            depth += 1
        elif mark in ")]}":
            depth = max(depth - 1, 0)
        elif mark[-1] in "\r\n":
            line += 1
            if depth or mark[0] == "\\":
                inside.add(line)
    return inside


# what `_continued_lines` counts: a bracket and a line's end (perhaps after a
# backslash); a string (to its closing quote or its line's end) and a comment are
# skipped.  (A string or comment is never one character: `mark in "([{"` is safe.)
_BRACKETS_AND_ENDS = re.compile(r'"[^"\r\n]*"?|#[^\r\n]*|[()\[\]{}]|(?:\\[ \t]*)?(?:\r\n|\r|\n)')


def _paired_lines(old: list[str], new: list[str]
                  ) -> list[tuple[tuple[int, int], tuple[int, int]]] | None:
    """Each line of `old` that is not blank, and each run of blank lines around
    them, as a range of `old`'s lines beside the range of `new`'s it became; None
    if the two do not have as many lines that are not blank."""
    olds = [k for k, line in enumerate(old) if line.strip()]
    news = [k for k, line in enumerate(new) if line.strip()]
    if len(olds) != len(news):
        return None
    pairs = []
    i0 = j0 = 0
    for i, j in zip([*olds, len(old)], [*news, len(new)]):
        pairs.append(((i0, i), (j0, j)))  # the blank lines before (perhaps none)
        if i < len(old):
            pairs.append(((i, i + 1), (j, j + 1)))
        i0, j0 = i + 1, j + 1
    return pairs


# A line and its ending, as the engine counts lines: "\n", "\r\n" or a lone "\r"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def respace(text: str) -> str | None:
    """The canonical layout without the safety check; None for a text with
    syntax errors.  (`format_text` is what callers want.)"""
    parsed = parse(text)
    if parsed.diagnostics:
        return None
    tokens = tokenize(text)
    return _Printer(text, tokens, _index_openers(parsed.program, tokens)).run()


def same_program(before: str, after: str) -> bool:
    """Both texts lex to the same statements of tokens and parse to the same IR
    (spans aside)."""
    if _statements(tokenize(before)) != _statements(tokenize(after)):
        return False
    one, two = parse(before), parse(after)
    return not two.diagnostics and ir_signature(one.program) == ir_signature(two.program)


def _statements(tokens: list[Tok]) -> list[tuple[str, str]]:
    """The tokens as (type, text), with only the newlines that end a statement
    (outside brackets), runs of them counted once: what the parser sees."""
    out: list[tuple[str, str]] = []
    depth = 0
    for tok in tokens:
        kind = tok.type
        if kind == "NL":
            if depth == 0 and out and out[-1][0] != "NL":
                out.append(("NL", ""))
            continue
        if kind in _OPENERS:
            depth += 1
        elif kind in _CLOSERS:
            depth = max(depth - 1, 0)
        out.append((kind, tok.value))
    if out and out[-1][0] == "NL":
        out.pop()
    return out


def ir_signature(node: Any) -> Any:
    """A program or node as nested tuples without spans (and without the text)."""
    if isinstance(node, ir.Program):
        return tuple(ir_signature(s) for s in node.statements)
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple(
            ir_signature(getattr(node, f.name)) for f in dataclasses.fields(node)
            if f.name != "span" and not f.name.endswith("_span"))
    if isinstance(node, tuple):
        return tuple(ir_signature(x) for x in node)
    return node


# ------------------------------------------------------------ bracket kinds


def _index_openers(program: ir.Program, tokens: list[Tok]) -> frozenset[int]:
    """Offsets of the `[`/`(` that open an index list (a reference, not a call)."""
    starts = {t.start_pos: k for k, t in enumerate(tokens)}
    out = set()
    for ref in _all_refs(program):
        if ref.indices is None:
            continue
        k = starts.get(ref.name_span.start)
        if k is None:
            continue
        k += 1
        while k < len(tokens) and tokens[k].type == "NL":
            k += 1
        if k < len(tokens):
            out.add(tokens[k].start_pos)
    return frozenset(out)


def _all_refs(program: ir.Program):
    yield from _statements_refs(program.statements)


def _statements_refs(statements: Any):
    for stmt in statements:
        if type(stmt) is ir.Block:
            yield from _statements_refs(stmt.items)
            continue
        if type(stmt) is ir.Let:
            stmt = stmt.equation
        if type(stmt) is ir.FnDef:  # its signature and its body's equations
            yield from stmt.params
            yield stmt.result
            for eq in stmt.body:
                yield eq.lhs
                yield from ir.refs(eq.rhs)
            continue
        yield from ir.defined_refs(stmt)
        for expr in ir.used_exprs(stmt):
            yield from ir.refs(expr)


# ---------------------------------------------------------------- printing


@dataclasses.dataclass
class _Line:
    kind: str  # "code" | "comment" | "blank"
    text: str = ""
    comment: str = ""
    align: tuple[str, str, str] | None = None  # (lhs, op, rhs) of an alignable statement


class _Printer:
    def __init__(self, text: str, tokens: list[Tok], index_openers: frozenset[int]) -> None:
        self.newline = _newline(text)
        self.text = lf_endings(text)  # a lone "\r" ends a line (the tokens' offsets stay)
        self.tokens = tokens
        self.index_openers = index_openers

    def run(self) -> str:
        lines = self._lines()
        lines = _collapse_blanks(lines)
        _align(lines)
        out = []
        for line in lines:
            code = line.text
            if line.align is not None:
                lhs, op, rhs = line.align
                code = f"{lhs} {op} {rhs}"
            if line.comment:
                code = f"{code}  {line.comment}" if code.strip() else code + line.comment
            out.append(code.rstrip())
        return self.newline.join(out) + self.newline if out else ""

    def _lines(self) -> list[_Line]:
        """Physical lines: their re-spaced code, their comment, alignment info."""
        text = self.text
        lines: list[_Line] = []
        stack: list[str] = []  # bracket kinds: "index" | "call" | "group" | "list"
        line_tokens: list[Tok] = []
        line_start = 0
        for tok in [*self.tokens, Tok("NL", "", len(text), len(text))]:
            if tok.type != "NL":
                line_tokens.append(tok)
                continue
            depth_before = len(stack)
            code_end = line_tokens[-1].end_pos if line_tokens else line_start
            comment = _comment(text[code_end:tok.start_pos])
            indent = ""
            if depth_before:  # a continuation line (or a comment's) keeps its indentation
                first = line_tokens[0].start_pos if line_tokens else tok.start_pos
                gap = text[line_start:first]
                indent = gap[:len(gap) - len(gap.lstrip(" \t\f\r"))]
            if line_tokens:
                code, align = self._code(line_tokens, stack, depth_before)
                if align is not None and indent:  # an equation of a `fn` body
                    align = (indent + align[0], align[1], align[2])
                lines.append(_Line("code", indent + code, comment, align))
            elif comment:
                lines.append(_Line("comment", indent, comment))
            else:
                lines.append(_Line("blank"))
            line_tokens = []
            line_start = tok.end_pos
        while lines and lines[-1].kind == "blank":
            lines.pop()
        return lines

    def _code(self, toks: list[Tok], stack: list[str], depth_before: int
              ) -> tuple[str, tuple[str, str, str] | None]:
        parts: list[str] = []
        prev: Tok | None = None
        prev_unary = forced = False
        op_at: int | None = None
        statements = 1
        # a line that starts inside a block (`fn ... {`) holds its equations: the
        # block's depth is their statement level (their `=` align like statements')
        base = depth_before if depth_before and stack[-1] == "block" else 0
        for tok in toks:
            kind = tok.type
            inside = stack[-1] if stack else None
            unary = kind == "BANG" or (kind == "MINUS" and (prev is None or
                                                             prev.type not in _OPERAND_END))
            if prev is not None:
                sep = self._separator(prev, tok, inside, prev_unary)
                if sep == "" and (forced or (kind not in _INERT and prev.type not in _INERT and
                                             not _glues(prev.value, tok.value, prev.type, kind))):
                    sep = " "  # `max = 1` stays apart: `max=` is another token
                forced = sep == " " and kind == "EQUAL" and inside == "call"
                parts.append(sep)
            if kind in _STATEMENT_OPS and len(stack) == base and op_at is None:
                op_at = len(parts)
            if kind == "SEMI":
                statements += 1
            parts.append(tok.value)
            if kind in _OPENERS:
                stack.append(self._bracket_kind(tok, prev, inside))
            elif kind in _CLOSERS and stack:
                stack.pop()
            prev, prev_unary = tok, unary
        code = "".join(parts)
        single = depth_before == base and len(stack) == base and statements == 1
        if single and op_at is not None and toks[0].type in ("NAME", "STRING", "LET"):
            lhs = "".join(parts[:op_at]).rstrip()
            rhs = "".join(parts[op_at + 1:]).lstrip()
            return code, (lhs, parts[op_at], rhs)
        return code, None

    def _bracket_kind(self, tok: Tok, prev: Tok | None, inside: str | None) -> str:
        if tok.type == "LBRACE":
            return "block"  # a `fn` body or a `case`'s arms
        if inside == "index" or tok.start_pos in self.index_openers:
            return "index"
        if prev is not None and tok.type == "LPAR" and prev.type in ("NAME", "REDUCE"):
            return "call"  # a builtin, `reduce`, or an unknown function (the checker says so)
        return "list" if tok.type == "LSQB" else "group"

    @staticmethod
    def _separator(prev: Tok, tok: Tok, inside: str | None, prev_unary: bool) -> str:
        a, b = prev.type, tok.type
        if inside == "index":
            return ""
        if a == "LBRACE" and b != "RBRACE":
            return " "  # `{ c -> a; default -> b }`, `{ y[i] = ... }`
        if b in _NO_SPACE_BEFORE or a in _OPENERS or prev_unary:
            return ""
        if a == "POW" or b == "POW":
            return ""
        if b in ("LPAR", "LSQB") and a in ("NAME", "REDUCE"):
            return ""
        if inside == "call" and (a == "EQUAL" or b == "EQUAL"):
            return ""
        return " "


def _newline(text: str) -> str:
    """The line ending the formatted text uses: "\r\n" if the text has one, else
    "\r" if it ends its lines with a lone one only, else "\n"."""
    if "\r\n" in text:
        return "\r\n"
    return "\r" if "\r" in text and "\n" not in text else "\n"


def _comment(gap: str) -> str:
    at = gap.find("#")
    return gap[at:].rstrip() if at >= 0 else ""


@functools.lru_cache(maxsize=4096)
def _glues(left: str, right: str, left_type: str, right_type: str) -> bool:
    """Whether `left` and `right` written together still lex as those two tokens."""
    got = tokenize(left + right)
    return [(t.type, t.value) for t in got] == [(left_type, left), (right_type, right)]


def _collapse_blanks(lines: list[_Line]) -> list[_Line]:
    out: list[_Line] = []
    run = 0
    for line in lines:
        if line.kind == "blank":
            run += 1
            if run > 2 or not out:
                continue
        else:
            run = 0
        out.append(line)
    return out


def _align(lines: list[_Line]) -> None:
    """Pad the left-hand sides of each block of alignable lines to one width."""
    k = 0
    while k < len(lines):
        if lines[k].align is None:
            k += 1
            continue
        end = k
        while end < len(lines) and lines[end].align is not None:
            end += 1
        # the `=` of every operator in one column: `Y[p] max= ...` under `K[i] = ...`
        width = max(len(a[0]) + len(a[1]) for a in (ln.align for ln in lines[k:end]) if a)
        for line in lines[k:end]:
            lhs, op, rhs = line.align  # type: ignore[misc]
            line.align = (lhs.ljust(width - len(op)), op, rhs)
        k = end
