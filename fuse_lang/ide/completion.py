"""Completion and signature help as plain data: `complete(analysis, offset)`,
`signature_at(text, offset, functions)`.

Both work on text that is being typed: the statement under the cursor
usually does not parse yet.  They read the analysis of the rest of the
program (tensors, index roles, extents) and take a light look at the text of
the current statement before the cursor (its tokens and open brackets).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..check import Analysis, TensorInfo
from ..check.initialisers import INITIALISERS
from ..front import ir
from ..front.builtins import (
    BUILTINS,
    COMPARISONS,
    REDUCE_DOC,
    REDUCE_OPS,
    STATEMENT_KEYWORDS,
)
from ..front.ir_text import ref_text
from ..front.lexer import Tok, tokenize
from ..front.span import Span
from ..front.wildcards import is_wildcard
from ..io.cells import value_text
from .hover import tensor_markdown
from .imported import namespace_names
from .path_completion import path_items

_CONDITION_TOKENS = ("WHEN", "COMPARE", "ANDAND", "OROR", "BANG")
_OPENERS = ("LPAR", "LSQB", "LBRACE")
_CLOSERS = ("RPAR", "RSQB", "RBRACE")
_WORD_TOKENS = ("NAME", "EXPORT", "AXIS", "PARAM", "REDUCE")
MAX_DOCUMENTED = 300  # more tensors than this: no hover text in each item (size, time)
_CALL_AHEAD = re.compile(r"[A-Za-z0-9_']*\s*\(")


@dataclass(frozen=True, slots=True)
class Completion:
    label: str
    kind: str  # "tensor" | "relation" | "builtin" | "index" | "symbol" | "keyword" |
    # "function" | "namespace" (after `ns::`) | "file" | "folder" (in a path)
    detail: str
    documentation: str = ""
    markdown: bool = False  # documentation is markdown
    insert_text: str | None = None  # None: the label
    snippet: bool = False  # insert_text is a snippet (`name($1)`)
    sort_text: str = ""
    replace: Span | None = None  # what it replaces (None: the word the client sees)


@dataclass(frozen=True, slots=True)
class Signature:
    label: str  # `softmax(x, axis=i)`
    documentation: str
    parameters: tuple[str, ...]  # substrings of label, in order
    active: int | None  # the parameter under the cursor (None: past the last)


# ------------------------------------------------------------- the cursor


@dataclass
class _Open:
    kind: str  # "index" | "call" | "reduce" | "group" | "list" | "case" (`case { ... }`)
    name: str | None
    commas: int = 0
    arg: list[Tok] = field(default_factory=list)  # tokens of the current argument


@dataclass
class _Cursor:
    state: str  # "code" | "comment" | "string" | "number"
    word: str = ""  # the part of a name already typed before the cursor
    statement: list[Tok] = field(default_factory=list)  # before the word
    stack: list[_Open] = field(default_factory=list)
    op_seen: bool = False  # the statement's `=` / `+=` / `max=` is behind the cursor
    typed_indices: list[tuple[str, str | None, int]] = field(default_factory=list)
    base: int = 0  # token positions are relative to this offset of the text


def _is_var(name: str) -> bool:
    """An index variable as a program writes it: not one a `fn` call's inlining
    named apart (`i@dbl.1`), nor a wildcard's (`__1`), which are no names to write."""
    return bool(name) and (name[0].islower() or name[0] == "_") and "@" not in name \
        and not is_wildcard(name)


def _scan(text: str, offset: int, tensors: dict[str, TensorInfo] | None = None,
          functions: Mapping[str, Any] | None = None) -> _Cursor:
    """The statement under the cursor, read from the text before it."""
    tensors = tensors or {}
    functions = functions or {}
    offset = max(0, min(offset, len(text)))
    base = _statement_search_start(text, offset)
    text, offset = text[base:offset], offset - base
    toks = tokenize(text)
    end = toks[-1].end_pos if toks else 0
    if toks and toks[-1].type == "BAD_STRING":
        return _Cursor("string")
    if "#" in text[end:offset]:
        return _Cursor("comment")
    word = ""
    if toks and toks[-1].end_pos == offset:
        if toks[-1].type in _WORD_TOKENS:
            word = toks.pop().value
        elif toks[-1].type in ("NUMBER", "STRING"):
            return _Cursor("number" if toks[-1].type == "NUMBER" else "string")
    cur = _Cursor("code", word)
    after_nl: Tok | None = None
    for tok in toks:
        kind = tok.type
        if after_nl is not None and tok.start_pos == after_nl.end_pos and kind not in _CLOSERS:
            cur = _Cursor("code", word)  # an unclosed bracket above: a new statement
        after_nl = None
        if kind == "NL":
            if not cur.stack:
                cur = _Cursor("code", word)
            else:
                after_nl = tok
            continue
        if kind == "SEMI":
            if cur.stack and cur.stack[-1].kind == "case":  # `;` between a case's arms
                cur.stack[-1].arg = []
                cur.statement.append(tok)
                continue
            cur = _Cursor("code", word)
            continue
        top = cur.stack[-1] if cur.stack else None
        if kind in _OPENERS:
            prev = cur.statement[-1] if cur.statement else None
            cur.stack.append(_Open(*_bracket(tok, prev, tensors, functions)))
        elif kind in _CLOSERS:
            if cur.stack:
                cur.stack.pop()
        elif kind == "COMMA" and top is not None:
            top.commas += 1
            top.arg = []
        elif kind in ("EQUAL", "PLUSEQ", "PROJEQ") and top is None:
            cur.op_seen = True
        elif kind == "NAME" and top is not None and top.kind == "index" and _is_var(tok.value):
            cur.typed_indices.append((tok.value, top.name, top.commas))
        if top is not None and kind != "COMMA":
            top.arg.append(tok)
        cur.statement.append(tok)
    if after_nl is not None and offset - len(word) == after_nl.end_pos:
        cur = _Cursor("code", word)
    cur.base = base
    return cur


def _statement_search_start(text: str, offset: int, max_lines: int = 500) -> int:
    """Where to start reading for the statement under the cursor: the start of
    the nearest line (the cursor's or above) that starts with code in column 1
    (a line that starts there inside open brackets starts a new statement too)."""
    start = text.rfind("\n", 0, offset) + 1
    for _ in range(max_lines):
        if start == 0:
            return 0
        first = text[start:start + 1]
        if first and not first.isspace() and first not in "#)]}":
            return start
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _bracket(tok: Tok, prev: Tok | None, tensors: dict[str, TensorInfo],
             functions: Mapping[str, Any]) -> tuple[str, str | None]:
    if prev is not None and prev.type == "REDUCE" and tok.type == "LPAR":
        return "reduce", "reduce"
    if prev is not None and prev.type == "CASE" and tok.type == "LBRACE":
        return "case", None  # its arms, separated by `;` or newlines: one statement
    if prev is None or prev.type != "NAME":
        return ("list" if tok.type == "LSQB" else "group"), None
    name = prev.value
    if tok.type == "LSQB":
        return "index", name
    if name in BUILTINS or name in functions:
        return "call", name
    if name in tensors or not _is_var(name):
        return "index", name
    return "call", name  # an unknown function


# ------------------------------------------------------------- completion


# `g::` or `g::h::Pa` before the cursor: the namespaces, then what is typed of the name
_QUALIFIED = re.compile(r"(?<![A-Za-z0-9_'])([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)"
                        r"::[A-Za-z0-9_]*\Z")


def complete(analysis: Analysis, offset: int, snippets: bool = False) -> list[Completion]:
    """What may be typed at `offset`, best first (sorted by `sort_text`)."""
    text = analysis.text
    cur = _scan(text, offset, analysis.tensors)
    if cur.state == "string":  # the path of an import, a source or a sink
        return [Completion(item.label, "folder" if item.folder else "file", item.detail,
                           replace=item.replace, sort_text=str(1 - item.folder) + item.label)
                for item in path_items(analysis, offset) or ()]
    if cur.state != "code":
        return []
    qualified = _QUALIFIED.search(text[max(0, offset - 200):offset])
    if qualified is not None:  # `g::|`: what `g` gives
        return _namespace(analysis, qualified.group(1))
    stmt = cur.statement
    calls_ahead = bool(_CALL_AHEAD.match(text, offset))
    top = cur.stack[-1] if cur.stack else None
    if not stmt:
        items = _keywords() + _tensors(analysis, "1")
    elif stmt[0].type == "PARAM" and top is None and stmt[-1].type == "EQUAL":
        items = _initialisers()  # `param W[i,j] = |`
    elif stmt[0].type in ("EXPORT", "PARAM") and top is None:
        items = _tensors(analysis, "1")
    elif stmt[0].type == "AXIS":
        items = _program_indices(analysis) if stmt[-1].type in ("AXIS", "COMMA") else []
    elif top is None and not cur.op_seen:
        items = []  # after a left-hand side: an operator comes next
    elif top is not None and top.kind == "index":
        items = _indices(analysis, cur, "0") + _axis_hints(analysis, cur, top)
    elif top is not None and top.kind == "reduce":
        items = _reduce_ops() if top.commas == 0 else _indices(analysis, cur, "0")
    elif (top is not None and top.kind == "call") or stmt[-1].type in _CONDITION_TOKENS:
        # (an argument, or a condition: `when i > 0`, `(j < i)`: an index comes first)
        items = (_indices(analysis, cur, "0") + _tensors(analysis, "1")
                 + _builtins(snippets and not calls_ahead, "2"))
    else:
        items = (_tensors(analysis, "0") + _builtins(snippets and not calls_ahead, "1")
                 + _indices(analysis, cur, "2"))
    if items and (top is not None or cur.op_seen or not stmt):
        rank = "0" if top is None or top.kind != "call" else "1"
        items += _locals_at(analysis, offset, rank)
        if top is None or top.kind != "index":
            items += _function_names(text, offset, rank) + _functions(analysis, text,
                                                                      snippets, rank)
    seen: set[str] = set()
    out = []
    for item in items:
        if item.label not in seen:
            seen.add(item.label)
            out.append(item)
    return sorted(out, key=lambda c: c.sort_text)


def _namespace(analysis: Analysis, chain: str) -> list[Completion]:
    """The names of the file imported as `chain` (`g`, `g::h`), as written after `::`."""
    out = []
    functions = analysis.inlined.functions if analysis.inlined is not None else {}
    for written, name in namespace_names(analysis, chain):
        info = analysis.tensors.get(name)
        if info is not None:
            shape = info.axes_text if info.axes else "scalar"
            out.append(Completion(written, "relation" if info.boolean else "tensor",
                                  f"{info.kind} {shape}", tensor_markdown(analysis, info),
                                  markdown=True, sort_text="0" + written))
        elif name in functions:
            out.append(Completion(written, "function", f"fn {name}", sort_text="1" + written))
        else:
            out.append(Completion(written, "namespace", "a namespace", sort_text="2" + written))
    return out


def _keywords() -> list[Completion]:
    return [Completion(word, "keyword", example, doc, sort_text="0" + word)
            for word, (example, doc) in STATEMENT_KEYWORDS.items()]


def _tensors(analysis: Analysis, rank: str) -> list[Completion]:
    out = []
    documented = len(analysis.tensors) <= MAX_DOCUMENTED
    for name in sorted(analysis.tensors):
        if "@" in name:
            continue  # a local of an inlined `fn` call or of a block (front/functions.py,
            # front/let_blocks.py; a block's are offered inside it: _locals_at)
        info = analysis.tensors[name]
        shape = info.axes_text if info.axes else "scalar"
        out.append(Completion(name, "relation" if info.boolean else "tensor",
                              f"{info.kind} {shape}",
                              tensor_markdown(analysis, info) if documented else "",
                              markdown=documented, sort_text=rank + name))
    return out


def _locals_at(analysis: Analysis, offset: int, rank: str) -> list[Completion]:
    """The `let` tensors of the blocks around `offset`, by the names written."""
    lowered = analysis.lowered
    if lowered is None:
        return []
    out = []
    for scope in lowered.scopes:
        if not scope.span.start < offset < scope.span.end:
            continue
        for name, renamed in scope.names.items():
            info = analysis.tensors.get(renamed)
            if info is None:
                continue
            shape = info.axes_text if info.axes else "scalar"
            out.append(Completion(name, "relation" if info.boolean else "tensor",
                                  f"local {info.kind} {shape}", tensor_markdown(analysis, info),
                                  markdown=True, sort_text=rank + name))
    return out


_FN_HEADER = re.compile(r"^fn[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(", re.M)
_DEFINES = ("LSQB", "LPAR", "EQUAL", "PLUSEQ", "PROJEQ")


def _functions(analysis: Analysis, text: str, snippets: bool, rank: str) -> list[Completion]:
    """The document's own functions (those of imported files come after `ns::`),
    read from the text: a definition being typed is not in the analysis."""
    known = analysis.inlined.functions if analysis.inlined is not None else {}
    out = []
    for found in _FN_HEADER.finditer(text):
        name = found.group(1)
        fn = known.get(name)
        detail = (f"fn {name}({', '.join(ref_text(p) for p in fn.params)}) -> "
                  f"{ref_text(fn.result)}" if fn is not None else f"fn {name}")
        out.append(Completion(name, "function", detail, "A function of this program, "
                              "inlined at each call.", insert_text=f"{name}($1)"
                              if snippets else None, snippet=snippets, sort_text=rank + name))
    return out


def _function_names(text: str, offset: int, rank: str) -> list[Completion]:
    """Inside a function's body: its parameters, result and locals (read from the
    text, since the body being typed does not parse)."""
    header = None
    for found in _FN_HEADER.finditer(text, 0, offset):
        header = found
    if header is None:
        return []
    after = _FN_HEADER.search(text, header.end())
    toks = _outside_brackets_newlines(
        tokenize(text[header.start():after.start() if after else len(text)]))
    at = offset - header.start()
    fn, depth, braces, arrow, body_start = header.group(1), 0, 0, False, None
    cases: list[bool] = []  # per open `{`: whether a `case` opened it (its arms: no locals)
    names: dict[str, str] = {}
    for k, tok in enumerate(toks):
        nxt = toks[k + 1].type if k + 1 < len(toks) else None
        prev = toks[k - 1].type if k else None
        if tok.type in ("LPAR", "LSQB"):
            depth += 1
        elif tok.type in ("RPAR", "RSQB"):
            depth -= 1
        elif tok.type == "ARROW":
            arrow = True
        elif tok.type == "LBRACE" and arrow:
            braces += 1
            cases.append(prev == "CASE")
            body_start = body_start if body_start is not None else tok.end_pos
        elif tok.type == "RBRACE" and body_start is not None:
            braces -= 1
            cases = cases[:-1]
            if braces == 0:
                if tok.start_pos < at:
                    return []  # the cursor is past the body
                break
        elif tok.type == "NAME" and body_start is None and depth == 1 and not arrow \
                and prev in ("LPAR", "COMMA") and nxt in ("LSQB", "LPAR", "COMMA", "RPAR"):
            names.setdefault(tok.value, f"parameter of fn {fn}")
        elif tok.type == "NAME" and arrow and body_start is None and prev == "ARROW":
            names.setdefault(tok.value, f"the result of fn {fn}")
        elif tok.type == "NAME" and body_start is not None and depth == 0 and \
                not any(cases) and prev in ("NL", "SEMI", "LBRACE", "LET") and nxt in _DEFINES:
            names.setdefault(tok.value, f"local of fn {fn}")
    if body_start is None or at < body_start:
        return []
    return [Completion(name, "tensor", what, sort_text=rank + name)
            for name, what in names.items()]


def _outside_brackets_newlines(toks: list[Tok]) -> list[Tok]:
    """`toks` less the newlines inside `( )` and `[ ]` (a signature over two lines)."""
    out, depth = [], 0
    for tok in toks:
        if tok.type in ("LPAR", "LSQB"):
            depth += 1
        elif tok.type in ("RPAR", "RSQB"):
            depth = max(0, depth - 1)
        elif tok.type == "NL" and depth:
            continue
        out.append(tok)
    return out


def _builtins(snippets: bool, rank: str) -> list[Completion]:
    out = [Completion(b.name, "builtin", b.signature, b.doc,
                      insert_text=f"{b.name}($1)" if snippets else None, snippet=snippets,
                      sort_text=rank + b.name) for b in sorted(BUILTINS.values(),
                                                                key=lambda b: b.name)
           if b.name not in COMPARISONS]
    out.append(Completion("reduce", "keyword", REDUCE_DOC[0], REDUCE_DOC[1],
                          insert_text="reduce($1)" if snippets else None, snippet=snippets,
                          sort_text=rank + "reduce"))
    return out


def _initialisers() -> list[Completion]:
    return [Completion(s.name, "keyword", s.signature, s.doc, sort_text=f"0{k:02d}")
            for k, s in enumerate(INITIALISERS.values())]


def _reduce_ops() -> list[Completion]:
    return [Completion(op, "keyword", "projection operator", sort_text="0" + str(k))
            for k, op in enumerate(REDUCE_OPS)]


def _statement_index(analysis: Analysis, cur: _Cursor) -> int | None:
    if not cur.statement:
        return None
    start = cur.statement[0].start_pos + cur.base
    for k, stmt in enumerate(analysis.program.statements):
        if stmt.span.start == start:
            return k
    return None


def _indices(analysis: Analysis, cur: _Cursor, rank: str) -> list[Completion]:
    """The index variables of the statement under the cursor: those of its
    analysis when it parses, and those typed so far before the cursor."""
    found: dict[str, tuple[int | None, str | None]] = {}
    k = _statement_index(analysis, cur)
    for role in analysis.roles.get(k, ()) if k is not None else ():
        if _is_var(role.name):  # not a slice's anonymous variable
            extent = analysis.var_extents.get((k, role.name), (None, 0))[0]
            what = role.role if role.role != "projected" else f"projected ({role.op})"
            found.setdefault(role.name, (extent, what))
    for name, tensor, position in cur.typed_indices:
        extent, what = found.get(name, (None, None))
        if extent is None:
            extent = _axis_extent(analysis, tensor, position)
        found[name] = (extent, what)
    return [_index(name, extent, what, rank) for name, (extent, what) in found.items()]


def _index(name: str, extent: int | None, role: str | None, rank: str) -> Completion:
    detail = f"index · extent {'?' if extent is None else extent}"
    if role:
        detail += f" · {role}"
    return Completion(name, "index", detail, sort_text=rank + name)


def _axis_extent(analysis: Analysis, tensor: str | None, position: int) -> int | None:
    info = analysis.tensors.get(tensor or "")
    if info is None or position >= len(info.axes):
        return None
    return info.axes[position].extent


def _axis_hints(analysis: Analysis, cur: _Cursor, top: _Open) -> list[Completion]:
    """Inside `T[...]`: the index name T's definition uses at this position,
    and the symbols of that axis."""
    info = analysis.tensors.get(top.name or "")
    if info is None or top.commas >= len(info.axes):
        return []
    axis = info.axes[top.commas]
    out = []
    if _is_var(axis.index):
        out.append(_index(axis.index, axis.extent, f"axis {top.commas} of {info.name}", "0"))
    for n, value in enumerate(analysis.domain_symbols.get(axis.domain, ())):
        what = "symbol" if type(value) is str else "value"
        out.append(Completion(value_text(value), "symbol",
                              f"{what} {n} of axis {top.commas} of {info.name}",
                              sort_text=f"1{n:06d}"))
    return out


def _program_indices(analysis: Analysis) -> list[Completion]:
    names = sorted({r.name for roles in analysis.roles.values() for r in roles if _is_var(r.name)})
    return [Completion(n, "index", "index variable", sort_text="0" + n) for n in names]


# --------------------------------------------------------- signature help


def signature_at(text: str, offset: int, functions: Mapping[str, ir.FnDef] | None = None
                 ) -> Signature | None:
    """The builtin call, `reduce` or call of one of `functions` (the program's `fn`s, by
    the names the program calls them: `head`, `lib::head`) whose argument list holds
    `offset`."""
    functions = functions or {}
    cur = _scan(text, offset, None, functions)
    if cur.state not in ("code", "number"):
        return None
    if cur.state == "number":  # typing a number inside a call: scan up to its start
        start = _statement_search_start(text, offset)
        toks = tokenize(text[start:offset])
        cur = _scan(text, start + toks[-1].start_pos, None, functions)
    call = next((o for o in reversed(cur.stack) if o.kind in ("call", "reduce")
                 and (o.name in BUILTINS or o.name in functions or o.kind == "reduce")),
                None)
    if call is None:
        return None
    if call.kind == "reduce":
        label, doc = REDUCE_DOC
    elif call.name in BUILTINS:
        label, doc = BUILTINS[call.name].signature, BUILTINS[call.name].doc
    else:
        fn = functions[call.name]
        params = tuple(ref_text(p) for p in fn.params)
        label = f"fn {call.name}({', '.join(params)}) -> {ref_text(fn.result)}"
        doc = (f"A function of this program, inlined at each call (its body: {len(fn.body)} "
               f"equation{'s' if len(fn.body) != 1 else ''}); each argument binds its "
               f"parameter's indices by position.")
        return Signature(label, doc, params, _active(params, call, cur))
    params = tuple(p.strip() for p in label[label.index("(") + 1:label.index(")")].split(","))
    return Signature(label, doc, params, _active(params, call, cur))


def _active(params: tuple[str, ...], call: _Open, cur: _Cursor) -> int | None:
    arg = call.arg
    keyword = None
    if len(arg) >= 2 and arg[0].type in ("NAME", "AXIS") and arg[1].type == "EQUAL":
        keyword = arg[0].value
    if keyword is not None:
        for k, p in enumerate(params):
            if p.startswith(keyword + "="):
                return k
        return None
    n = call.commas
    if "..." in params:
        n = min(n, params.index("..."))
    return n if n < len(params) else None
