"""Semantic tokens: a classification of every token of a program (its
structure, plus the comments, strings and keywords found from the text alone),
the per-document TokenCache that reuses unchanged statements' tokens, and the
one encoder to LSP's relative integer form (encode_tokens).

Offsets are 0-based characters (spans); the language server converts columns.
"""
from __future__ import annotations

import bisect
import functools
import re
from typing import Callable, Iterator, NamedTuple, Sequence

from ..check import SOURCE_KINDS, Analysis, TensorKind
from ..check.compared_constants import compared_symbol
from ..check.symbols import IndexRole
from ..front import ir
from ..front.builtins import BUILTINS, COMPARISONS
from ..front.span import LineIndex, Span, split_lines
from .fn_bodies import index_name_spans

TOKEN_TYPES: tuple[str, ...] = (
    "variable",    # a dense tensor
    "type",        # a Boolean relation
    "parameter",   # an index variable (local to its statement)
    "function",    # a builtin, a `fn` of the program, or a projection op of `reduce(op, ...)`
    "enumMember",  # a symbol constant: `Alice` in `Parent(Alice, x)`
    "number",      # a number, or an integer constant index `Obs[0,o]`
    "string",      # a file path
    "keyword",     # export, axis, param, reduce, not, fn, case, when, default, let, import,
    # as, train
    "comment",
    "property",    # a keyword argument's name: `axis=`, `k=`, `eps=`
)
TOKEN_MODIFIERS: tuple[str, ...] = (
    "declaration",     # the name on a defining left-hand side (tensor or index)
    "readonly",        # a source: its data comes from a file
    "defaultLibrary",  # a builtin
    "output",          # an index variable kept on the left-hand side
    "projected",       # an index variable projected away (summed, max, ...)
    "free",            # an index variable of a sink or query, neither kept nor projected
    "param",           # a learnable tensor
)


class SemanticToken(NamedTuple):
    """A classified piece of text (a named tuple: a document has thousands)."""

    span: Span  # never spans lines
    type: str  # one of TOKEN_TYPES
    modifiers: tuple[str, ...] = ()  # from TOKEN_MODIFIERS


_KEYWORD = re.compile(r"(?<![A-Za-z0-9_'])(export|axis|param|reduce|fn|case|when|default|let"
                      r"|import|as|train)"
                      r"(?![A-Za-z0-9_'])")
_DIGITS = re.compile(r"(?<![A-Za-z0-9_'.])\d+")


def comment_spans(text: str) -> tuple[Span, ...]:
    """Every comment: a `#` outside a string, to the end of its line."""
    return tuple(span for kind, span in _lexical(text) if kind == "comment")


def _lexical(text: str) -> Iterator[tuple[str, Span]]:
    """Comments, strings and keywords, found from the text alone (a statement
    with a syntax error still shows them)."""
    offset = 0
    keyword = _KEYWORD.search
    for line in split_lines(text):  # LSP's lines, not str.splitlines's
        body = line.rstrip("\r\n")
        n = len(body)
        if "#" not in body and '"' not in body:  # most lines: keywords only
            if keyword(body):
                yield from _keywords(body, 0, n, offset)
            offset += len(line)
            continue
        i = 0
        code_start = 0
        while i < n:
            # the next '#' or '"' from i (what a character-by-character scan stops at)
            hash_at = body.find("#", i)
            quote_at = body.find('"', i)
            if hash_at < 0 and quote_at < 0:
                break
            if hash_at >= 0 and (quote_at < 0 or hash_at < quote_at):
                yield from _keywords(body, code_start, hash_at, offset)
                yield "comment", Span(offset + hash_at, offset + n)
                code_start = i = n
                break
            i = quote_at
            yield from _keywords(body, code_start, i, offset)
            j = i + 1
            while j < n and body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            end = min(j + 1, n)
            yield "string", Span(offset + i, offset + end)
            code_start = i = end
        yield from _keywords(body, code_start, n, offset)
        offset += len(line)


def _keywords(body: str, start: int, end: int, offset: int) -> Iterator[tuple[str, Span]]:
    if start >= end:
        return
    for match in _KEYWORD.finditer(body, start, end):
        yield "keyword", Span(offset + match.start(), offset + match.end())


class TokenCache:
    """The structural tokens of each statement from the last call, reused while the
    statement (the same object: same text, same place), its index roles and what
    its tensors are have not changed.  One per document; the result is the same
    as without one."""

    def __init__(self) -> None:
        self.statements: dict[int, tuple] = {}


def semantic_tokens(analysis: Analysis, within: Span | None = None,
                    cache: TokenCache | None = None) -> tuple[SemanticToken, ...]:
    """Every classified token, sorted and non-overlapping (when two claim the
    same text, the more specific one from the program's structure wins)."""
    tokens = _structural_tokens(analysis, cache or TokenCache())
    tokens += [SemanticToken(span, kind) for kind, span in _lexical(analysis.text)]
    # structure first (a stable sort): a kwarg `axis=` is a property, not the keyword
    tokens.sort(key=_start)
    result: list[SemanticToken] = []
    end = -1
    past = len(analysis.text)  # (an imported file's statements are past it: check/imports.py)
    for token in tokens:
        start, stop = token.span
        if start >= past:
            break
        if start < end or stop <= start:
            continue
        if within is not None and (stop <= within.start or start >= within.end):
            continue
        result.append(token)
        end = stop
    return tuple(result)


def _start(token: SemanticToken) -> int:
    return token.span.start


def _structural_tokens(analysis: Analysis, cache: TokenCache) -> list[SemanticToken]:
    out: list[SemanticToken] = []
    kinds: dict[tuple[str, bool, bool], tuple[str, tuple[str, ...]]] = {}
    tensors = analysis.tensors
    known = cache.statements
    used: dict[int, tuple] = {}
    inlined = analysis.inlined
    if inlined is not None:
        for fn in inlined.functions.values():
            out += _function_tokens(analysis, fn, kinds)
    for k, stmt in enumerate(analysis.program.statements):
        if inlined is not None:  # `fn` calls: the statements as written, not what they gave
            if k in inlined.origins:
                continue
            stmt = inlined.written.get(k, stmt)
        roles = analysis.roles.get(k)
        entry = known.get(id(stmt))
        if entry is not None and entry[0] is stmt and entry[1] is roles and entry[3] == tuple(
                (info.boolean, info.kind) if (info := tensors.get(name)) is not None else None
                for name in entry[2]):
            out += entry[4]
            used[id(stmt)] = entry
            continue
        names: dict[str, None] = {}
        tokens = _statement_tokens(analysis, stmt, roles, kinds, names)
        if inlined is not None and k in inlined.written:  # the calls' arguments' indices
            # (one the left-hand side keeps is its output, as hover and explain say)
            kept = {role.name: (role.role,) for role in roles or ()}
            tokens += [SemanticToken(span, "parameter", kept.get(name, ()))
                       for e in ir.used_exprs(stmt) for ref in ir.refs(e)
                       for name, span in index_name_spans(ref)]
        used[id(stmt)] = (stmt, roles, tuple(names), tuple(
            (info.boolean, info.kind) if (info := tensors.get(name)) is not None else None
            for name in names), tokens)
        out += tokens
    cache.statements = used
    return out


def _statement_tokens(analysis: Analysis, stmt: ir.Statement,
                      roles: "tuple[IndexRole, ...] | None",
                      kinds: dict[tuple[str, bool, bool], tuple[str, tuple[str, ...]]],
                      names: dict[str, None]) -> list[SemanticToken]:
    """One statement's tokens: its index variables first (a bare name that is an
    index's value is an index), then its names, numbers, strings and calls.  The
    names of the tensors it mentions are added to `names`."""
    out: list[SemanticToken] = []
    add = out.append
    token = SemanticToken
    for role in roles or ():
        use = (role.role,)
        declared = ("declaration", role.role)
        for occ in role.occurrences:
            if occ.form == "slice":
                continue
            # the name alone: a dotted one's dot (`p'.`) is no part of it
            span = occ.span
            if span.end - span.start > len(occ.name):
                span = Span(span.start, span.start + len(occ.name))
            add(token(span, "parameter", declared if occ.lhs else use))
    if isinstance(stmt, ir.AxisDecl):
        add(token(stmt.name_span, "parameter", ("declaration",)))
        add(token(stmt.extent_span, "keyword" if stmt.padding else "number"))
        return out
    if isinstance(stmt, (ir.Source, ir.Sink)):
        add(token(stmt.path.span, "string"))
    for ref in ir.defined_refs(stmt):
        names[ref.name] = None
        _ref_tokens(analysis, ref, True, kinds, out)
    if type(stmt) is ir.ParamDecl:  # `= normal(0.02)`: a library function's numbers
        for init in stmt.inits:
            if init is not None:
                add(token(init.name_span, "function", ("defaultLibrary",)))
                out += [token(number.span, "number") for number in init.args]
    # ir.walk's order (parents first, children left to right), inlined
    constants: set[int] = set()  # comparisons' symbol constants (check/values.py)
    stack = list(reversed(ir.used_exprs(stmt)))
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = type(node)
        if kind is ir.Ref:
            if constants and id(node) in constants:  # `Ann` in `(x != Ann)`, as in `P(Ann)`
                add(token(node.span, "enumMember"))
                continue
            names[node.name] = None
            _ref_tokens(analysis, node, False, kinds, out)
        elif kind is ir.Product:
            push(reversed(node.factors))
        elif kind is ir.Sum:
            push(reversed(node.terms))
        elif kind is ir.Call:
            written = analysis.text[node.name_span[0]:node.name_span[1]]
            if written != node.name and node.name != "select":
                pass  # `||` (max), `!` (not), a `step` of no text: operators get no token
            elif written in ("case", "when"):  # a select written as the keyword
                add(token(node.name_span, "keyword"))
            elif node.name == "not":  # `not P(x)`: the keyword, a call only in the IR
                add(token(node.name_span, "keyword"))
            elif node.name not in COMPARISONS:  # an operator gets no token, as `+` gets none
                add(token(node.name_span, "function", ("defaultLibrary",)
                          if node.name in BUILTINS else ()))
            else:
                found = compared_symbol(node, analysis.tensors)
                if found is not None:
                    constants.add(id(found[0]))
            for keyword in node.kwargs:
                add(token(keyword.name_span, "property"))
            push(reversed(ir.children(node)))
        elif kind is ir.Number:
            add(token(node.span, "number"))
        elif kind is ir.String:  # a file path; in a comparison a symbol, as in `P("ann")`
            add(token(node.span, "enumMember" if id(node) in constants else "string"))
        else:
            if kind is ir.Reduce:
                add(token(node.op_span, "function", ("defaultLibrary",)))
            push(reversed(ir.children(node)))
    return out


def _function_tokens(analysis: Analysis, fn: ir.FnDef,
                     kinds: dict[tuple[str, bool, bool], tuple[str, tuple[str, ...]]]
                     ) -> list[SemanticToken]:
    """A `fn` definition's tokens: its name, its parameters and result (declared),
    and its body's equations (their indices are variables of their own)."""
    out = [SemanticToken(fn.name_span, "function", ("declaration",))]
    for ref in (*fn.params, fn.result):
        out.append(SemanticToken(ref.name_span, "type" if ref.paren else "variable",
                                 ("declaration",)))
        out += [SemanticToken(span, "parameter", ("declaration",))
                for _, span in index_name_spans(ref)]
    for eq in fn.body:
        for ref in (eq.lhs, *ir.refs(eq.rhs)):
            out += [SemanticToken(span, "parameter") for _, span in index_name_spans(ref)]
        out += _statement_tokens(analysis, eq, None, kinds, {})
    return out


def _ref_tokens(analysis: Analysis, ref: ir.Ref, declaration: bool,
                kinds: dict[tuple[str, bool, bool], tuple[str, tuple[str, ...]]],
                out: list[SemanticToken]) -> None:
    key = (ref.name, ref.paren, declaration)
    found = kinds.get(key)
    if found is None:
        info = analysis.tensors.get(ref.name)
        boolean = info.boolean if info is not None else ref.paren
        mods: list[str] = ["declaration"] if declaration else []
        if info is not None and info.kind in SOURCE_KINDS:
            mods.append("readonly")
        if info is not None and info.kind == TensorKind.PARAM:
            mods.append("param")
        found = kinds[key] = ("type" if boolean else "variable", tuple(mods))
    out.append(SemanticToken(ref.name_span, found[0], found[1]))
    for index in ref.indices or ():
        kind = type(index)
        if kind is ir.IndexVar:
            continue
        if kind is ir.IndexConst:
            out.append(SemanticToken(index.span, "enumMember" if index.is_symbol else "number"))
        else:
            # the integers inside `t+1`, `x/2`, `4:8`
            for match in _DIGITS.finditer(analysis.text, index.span.start, index.span.end):
                out.append(SemanticToken(Span(match.start(), match.end()), "number"))


# LSP's legend, as indices: a token's type is its index in TOKEN_TYPES, its
# modifiers a bit set over TOKEN_MODIFIERS
_TYPE_INDEX = {name: k for k, name in enumerate(TOKEN_TYPES)}
_MODIFIER_BIT = {name: 1 << k for k, name in enumerate(TOKEN_MODIFIERS)}


@functools.lru_cache(maxsize=256)
def modifier_bits(modifiers: tuple[str, ...]) -> int:
    """The modifiers as LSP's bit set over TOKEN_MODIFIERS (unknown ones ignored)."""
    bits = 0
    for modifier in modifiers:
        bits |= _MODIFIER_BIT.get(modifier, 0)
    return bits


def encode_tokens(tokens: Sequence[SemanticToken], lines: LineIndex,
                  units: Callable[[int, int], int] | None = None) -> list[int]:
    """LSP's relative encoding of sorted tokens: five integers per token,
    (Δline, Δstart, length, type index, modifier bits), the start counted from
    the previous token's start when on the same line.  Columns are characters,
    or what `units(line, column)` makes of a character column (the language
    server passes its converter's code-unit count for non-ASCII text).  A token
    that is empty or leaves its line is left out.  The lines are walked
    alongside the tokens instead of searched for each one."""
    starts = lines.line_starts
    size = len(lines.text)
    data: list[int] = []
    extend = data.extend
    codes: dict[tuple[str, tuple[str, ...]], tuple[int, int]] = {}
    last_line = last_start = 0
    line, line_start, line_end = _line_bounds(starts, size, 0)
    for span, kind, modifiers in tokens:
        begin, stop = span
        if begin < 0 or stop > size:
            begin, stop = min(max(begin, 0), size), min(max(stop, 0), size)
        if begin < line_start:  # not sorted after all: search
            line, line_start, line_end = _line_bounds(
                starts, size, bisect.bisect_right(starts, begin) - 1)
        while begin > line_end:
            line, line_start, line_end = _line_bounds(starts, size, line + 1)
        if stop > line_end or stop <= begin:
            continue  # tokens never span lines; be safe anyway
        code = codes.get((kind, modifiers))
        if code is None:
            code = codes[(kind, modifiers)] = (_TYPE_INDEX[kind], modifier_bits(modifiers))
        start, length = begin - line_start, stop - begin
        if units is not None:
            start, length = units(line, start), units(line, stop - line_start)
            length -= start
        if line == last_line:
            extend((0, start - last_start, length) + code)
        else:
            extend((line - last_line, start, length) + code)
            last_line = line
        last_start = start
    return data


def _line_bounds(starts: list[int], size: int, line: int) -> tuple[int, int, int]:
    """(line, its first offset, the offset of its newline or the text's end)."""
    end = starts[line + 1] - 1 if line + 1 < len(starts) else size
    return line, starts[line], end
