"""Text -> IR: lexing, statement splitting with recovery, LALR parsing.

The text is lexed line by line with the terminals of grammar.lark (which
include a catch-all so lexing never fails).  The token stream is split into
statements at newlines and `;` outside brackets; each statement is parsed on
its own with the LALR(1) table lark builds from the grammar (see lalr.py),
building IR nodes directly (no intermediate tree).  A statement with
an error yields a diagnostic and is left out of the program; every other
statement is still parsed and checked.  Parsing never raises on user input.
"""
from __future__ import annotations

import builtins
import re
import bisect
import functools
from dataclasses import replace
from operator import itemgetter
from typing import Any, Iterable, Iterator

from . import ir
from .builtins import BUILTINS, RESERVED_WORDS
from .diagnostics import Diagnostic, make
from ..fastinit import fast_maker, frozen_dataclass
from .lalr import (GRAMMAR_PATH, Engine, ParseError, StandIn, Tok, TokenCode, _kind_of,
                   _new_tok, load_tables)
from .span import Span, shifted

GRAMMAR = GRAMMAR_PATH.read_text(encoding="utf-8")

MAX_NESTING = 200          # brackets deeper than this are refused (bounded work)
MAX_SYNTAX_ERRORS = 200    # after this many, reporting stops
_OPEN = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_TEXT = {"LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "LBRACE": "{", "RBRACE": "}"}


class _StatementError(Exception):
    """Raised inside the IR builder: the statement is reported and dropped."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


# A Span made as `_tuple_new(Span, (start, end))`, without a Python frame: the
# cheapest way CPython has to make one (a third less than a partial of it, or than
# slicing a token's offsets out), and the parser makes one or two per token.
_tuple_new = tuple.__new__
# the parser's most numerous nodes, made faster than by calling their classes
_make_ref = fast_maker(ir.Ref)  # (name, name_span, indices, paren, span)
_make_var = fast_maker(ir.IndexVar)  # (name, span, dotted)
_make_equation = fast_maker(ir.Equation)  # (lhs, op, op_span, rhs, span)
_make_product = fast_maker(ir.Product)  # (factors, ops, span)
_make_sum = fast_maker(ir.Sum)  # (terms, signs, span)
_make_number = fast_maker(ir.Number)  # (value, text, span)
_make_call = fast_maker(ir.Call)  # (name, name_span, args, kwargs, span)
_make_keyword = fast_maker(ir.Keyword)  # (name, name_span, value, span)
_text_of = itemgetter(1)  # a token's text


# A token is a tuple (type, text, start, end): the lexer's plain tuples on the
# way to the parser (made in C), or a Tok where it is read by name.


def _tok_span(tok: tuple) -> Span:
    return _tuple_new(Span, (tok[2], tok[3]))


def _name_ref(tok: tuple) -> ir.Ref:
    """The bare reference a NAME token makes."""
    span = _tuple_new(Span, (tok[2], tok[3]))  # one Span for both: the commonest node
    return _make_ref(tok[1], span, None, False, span)


def _start_of(item: Any) -> int | None:
    if isinstance(item, tuple):  # a token
        return item[2]
    if isinstance(item, list):
        for x in item:
            start = _start_of(x)
            if start is not None:
                return start
        return None
    return item.span.start if item is not None else None


def _end_of(item: Any) -> int | None:
    if isinstance(item, tuple):  # a token
        return item[3]
    if isinstance(item, list):
        for x in reversed(item):
            end = _end_of(x)
            if end is not None:
                return end
        return None
    return item.span.end if item is not None else None


def _cover(children: list) -> Span:
    """The span from the first to the last child that has one."""
    start = end = None
    for item in children:
        start = _start_of(item)
        if start is not None:
            break
    for item in reversed(children):
        end = _end_of(item)
        if end is not None:
            break
    return Span(start, end)  # type: ignore[arg-type]


@frozen_dataclass
class _Arg:
    """A reference/call argument before we know which of the two it belongs to."""

    kind: str  # "kwarg" | "slice" | "virtual" | "dotted" (an expression is itself)
    value: Any
    span: Span
    name: ir.Ref | None = None  # kwarg name


def _fail(code: str, message: str, span: Span) -> None:
    raise _StatementError(make(code, message, span))


# ----------------------------------------------------------- expr -> index


def _as_var(expr: Any) -> ir.IndexVar | None:
    if isinstance(expr, ir.Ref) and expr.indices is None and _is_variable_name(expr.name):
        return ir.IndexVar(expr.name, expr.span)
    return None


def _is_variable_name(name: str) -> bool:
    return name[0].islower() or name[0] == "_"


def _as_int(expr: Any) -> int | None:
    if isinstance(expr, ir.Number) and expr.is_integer:
        return int(expr.text)
    return None


def _index_from(arg: Any) -> ir.Index:
    """Read an argument of `T[...]` / `R(...)` (an expression or an `_Arg`) as an
    index (LANGUAGE.md §3)."""
    if isinstance(arg, tuple):  # a bare name's token
        return _plain_index(_name_ref(arg))
    if type(arg) is not _Arg:
        return _plain_index(arg)
    if arg.kind == "slice":
        return arg.value
    if arg.kind == "kwarg":
        _fail("invalid-index", "a keyword argument is not an index", arg.span)
    if arg.kind == "dotted":
        var = _as_var(arg.value)
        if var is None:
            _fail("invalid-index", "only an index variable can be dotted (as in `p'.`)", arg.span)
        return ir.IndexVar(var.name, arg.span, dotted=True)
    if arg.kind == "virtual":
        inner = _plain_index(arg.value)
        if not (isinstance(inner, ir.IndexVar)
                or (isinstance(inner, ir.IndexShift) and len(inner.terms) == 1)):
            _fail("invalid-index", "a virtual index is `*t` or `*t` plus or minus a number",
                  arg.span)
        return ir.IndexVirtual(inner, arg.span)
    raise AssertionError(arg.kind)  # a keyword argument: reported above


def _indices(args: list[Any]) -> tuple[ir.Index, ...]:
    """The arguments of `T[...]` / `R(...)` as indices (see _index_from); a bare
    name may be its NAME token (see _IRBuilder.TOKEN_STAND_INS)."""
    # _index_from's first case (and _is_variable_name's rule) written out in place for
    # a bare reference: most indices are plain variables, and this saves two calls each
    return tuple([_name_index(a) if isinstance(a, tuple)
                  else _make_var(a.name, a.span, False)
                  if type(a) is ir.Ref and a.indices is None
                  and (a.name[0].islower() or a.name[0] == "_") else _index_from(a)
                  for a in args])


def _plain_index(expr: Any) -> ir.Index:
    span = expr.span
    if isinstance(expr, ir.Ref) and expr.indices is None:
        if _is_variable_name(expr.name):
            return ir.IndexVar(expr.name, span)
        return ir.IndexConst(expr.name, span)
    if isinstance(expr, ir.Number):
        value = _as_int(expr)
        if value is None:
            _fail("invalid-index", f"`{expr.text}` is not a position: positions are whole numbers",
                  span)
        return ir.IndexConst(value, span)
    if isinstance(expr, ir.Sum):
        terms: list[ir.IndexVar] = []
        offset = 0
        for sign, term in zip(expr.signs, expr.terms):
            var = _as_var(term)
            number = _as_int(term)
            if var is not None and sign == "+":
                terms.append(var)
            elif number is not None:
                offset += number if sign == "+" else -number
            else:
                break
        else:
            if terms and isinstance(expr.terms[0], ir.Ref):
                return ir.IndexShift(tuple(terms), offset, span)
    if isinstance(expr, ir.Product) and len(expr.factors) == 2 and expr.ops[1] == "/":
        var = _as_var(expr.factors[0])
        divisor = _as_int(expr.factors[1])
        if var is not None and divisor is not None:
            if divisor == 0:
                _fail("invalid-index", "an index cannot be divided by 0", span)
            return ir.IndexDiv(var, divisor, span)
    if isinstance(expr, ir.Product) and all(op in ("", " ") for op in expr.ops):
        _fail("invalid-index", "missing ',' between indices", span)
    if isinstance(expr, ir.Neg) and isinstance(expr.operand, ir.Number):
        _fail("invalid-index", "negative positions are not supported; use an offset like `t-1`",
              span)
    _fail("invalid-index",
          "not an index: an index is a variable (`i`), a constant (`0`, `Alice`), an offset "
          "(`t+1`), a sum of variables (`x+dx`), a division (`x/2`), a slice (`2:5`) or `*t`",
          span)
    raise AssertionError  # unreachable


# ----------------------------------------------------- written-out builders
# The compiled replay of a statement shape (lalr._compiled) may write some of
# the builder's calls out in place (_IRBuilder.INLINE): the node is made right
# there, without the method's lists and calls.  Each function below is given the
# call's children as code (lalr.TokenCode for a token, a variable's name for a
# value, lalr.StandIn for a bare name not made) and the call's own code, and
# gives code doing what the method does, or None to leave the call.  Such code
# raises what the method would, first (or falls back on the call): the method's
# checks are made in it in the same order, or cannot fail for those children.

_Inlined = tuple[str, dict[str, Any]] | None


def _name_index(tok: tuple) -> ir.Index:
    """The index a bare name's token is (see _indices)."""
    if tok[1][0].islower() or tok[1][0] == "_":
        return _make_var(tok[1], _tuple_new(Span, (tok[2], tok[3])), False)
    return _index_from(tok)


# the names the written-out code uses
_INLINE_NAMES = {"_make_ref": _make_ref, "_make_sum": _make_sum, "_make_product": _make_product,
                 "_tuple_new": _tuple_new, "_Span": Span, "_name_index": _name_index,
                 "_index_from": _index_from, "_CALL_WORDS": RESERVED_WORDS | frozenset(BUILTINS)}


def _made(code: Any) -> bool:
    """Whether child `code` is a value made already (a variable's name)."""
    return type(code) is str and code != "None"


def _span_code(start: str, end: str) -> str:
    return f"_tuple_new(_Span, ({start}, {end}))"


def _index_code(arg: Any) -> str | None:
    """Code for the index an argument is (see _indices), None if not a plain case."""
    if type(arg) is StandIn:  # a bare name's token
        return f"_name_index({arg.token})"
    return f"_index_from({arg})" if _made(arg) else None


def _ref_code(children: list[Any], paren: bool) -> str | None:
    """Code for `name[...]` or `name(...)` (see bracket_ref), or None."""
    name, _open, args, close = children
    indices = [_index_code(arg) for arg in args] if type(args) is list else [None]
    if None in indices:
        return None
    return (f"_make_ref({name}[1], {_span_code(f'{name}[2]', f'{name}[3]')}, "
            f"({''.join(f'{index}, ' for index in indices)}), {paren}, "
            f"{_span_code(f'{name}[2]', f'{close}[3]')})")


def _bracket_ref_code(children: list[Any], call: str) -> _Inlined:
    code = _ref_code(children, False)
    return None if code is None else (code, _INLINE_NAMES)


def _paren_ref_code(children: list[Any], call: str) -> _Inlined:
    # bare names only (no index fails), of a name neither reserved nor a builtin's
    if type(children[2]) is not list or not all(type(arg) is StandIn for arg in children[2]):
        return None
    code = _ref_code(children, True)
    return None if code is None else (
        f"({code} if {children[0]}[1] not in _CALL_WORDS else {call})", _INLINE_NAMES)


def _operands_code(maker: str, children: list[Any], first_op: str) -> _Inlined:
    """Code for a sum or product: operands and the tokens between them (see sum)."""
    operands = [child for child in children if type(child) is not TokenCode]
    if not all(_made(operand) for operand in operands):
        return None
    ops = [f'"{first_op}"']
    for before, child in zip(children, children[1:]):
        if type(child) is not TokenCode:
            ops.append(f"{before}[1]" if type(before) is TokenCode else '" "')
    return (f"{maker}(({''.join(f'{x}, ' for x in operands)}), ({''.join(f'{x}, ' for x in ops)}), "
            f"{_span_code(f'{operands[0]}.span[0]', f'{operands[-1]}.span[1]')})", _INLINE_NAMES)


def _sum_code(children: list[Any], call: str) -> _Inlined:
    return _operands_code("_make_sum", children, "+")


def _product_code(children: list[Any], call: str) -> _Inlined:
    return _operands_code("_make_product", children, "")


def _start_code(children: list[Any], call: str) -> _Inlined:
    return (children[0], {}) if _made(children[0]) else None


# -------------------------------------------------------------- IR builder


class _IRBuilder:
    """LALR reductions -> IR nodes (spans from tokens): each method is called with
    its rule's children, as lark shapes them (see lalr._recipe); a token child
    is a tuple (type, text, start, end)."""

    # methods the compiled replay may write out in place (see above)
    INLINE = {"bracket_ref": _bracket_ref_code, "paren_ref": _paren_ref_code,
              "sum": _sum_code, "product": _product_code, "start": _start_code}

    # ---- statements
    def start(self, c):
        return c[0]

    def equation(self, c):
        lhs, op, rhs = c
        if type(lhs) is not ir.Ref or lhs.name in RESERVED_WORDS:
            lhs = self._lhs(lhs)  # says why it is not a left-hand side
        span = _tuple_new(Span, (lhs.span[0], rhs.span[1]))
        if type(rhs) is ir.String:
            if op[1] != "=":
                _fail("invalid-statement", f"a source is written `T[...] = \"file\"`, not with "
                      f"`{op[1]}`", _tok_span(op))
            return ir.Source(lhs, rhs, span)
        return _make_equation(lhs, op[1], _tuple_new(Span, (op[2], op[3])), rhs, span)

    def sink(self, c):
        path_tok, _eq, rhs = c
        return ir.Sink(_string(path_tok), rhs, _cover(c))

    def export(self, c):
        names = tuple(ir.Ref(t[1], _tok_span(t), None, False, _tok_span(t)) for t in c[1:])
        return ir.Export(names, _cover(c))

    def query(self, c):
        return ir.Query(self._atom(c[0]), _cover(c))

    def fact(self, c):
        atom = self._atom(c[0])
        return ir.Fact(atom, atom.span)

    def axis_decl(self, c):
        return [replace(item, span=_cover(c) if len(c) == 2 else item.span) for item in c[1:]]

    def axis_item(self, c):
        name, _eq, number = c
        if not number[1].isdigit():
            _fail("invalid-statement", "an axis extent is a whole number", _tok_span(number))
        return ir.AxisDecl(name[1], _tok_span(name), int(number[1]), _tok_span(number),
                           _cover(c))

    def param_decl(self, c):
        return ir.ParamDecl(tuple(self._lhs(r) for r in c[1:]), _cover(c))

    def _atom(self, ref: Any) -> ir.Ref:
        if not isinstance(ref, ir.Ref):
            name = getattr(ref, "name", "this")
            _fail("invalid-statement",
                  f"`{name}` is a builtin function; a fact or query names a tensor", ref.span)
        _check_name(ref)
        return ref

    def _lhs(self, ref: Any) -> ir.Ref:
        ref = self._atom(ref)
        return ref

    # ---- expressions
    def sum(self, c):
        # term (sign term)*: the terms at even places, the signs' tokens between
        return _make_sum(tuple(c[::2]), ("+", *map(_text_of, c[1::2])),
                         _tuple_new(Span, (c[0].span[0], c[-1].span[1])))

    def product(self, c):
        # factors, each after a `*` or `/` token or none (juxtaposition: " ")
        factors = []
        ops = []
        op = ""
        for item in c:
            if isinstance(item, tuple):  # a token: STAR or SLASH
                op = item[1]
            else:
                factors.append(item)
                ops.append(op)
                op = " "
        return _make_product(tuple(factors), tuple(ops),
                             _tuple_new(Span, (c[0].span[0], c[-1].span[1])))

    def neg(self, c):
        return ir.Neg(c[1], _cover(c))

    def power(self, c):
        return ir.Power(c[0], c[2], _cover(c))

    def reduce(self, c):
        # REDUCE LPAR op (NAME)+ RPAR body
        op = c[2]
        names = c[3:-2]
        body = c[-1]
        indices = []
        for tok in names:
            if not _is_variable_name(tok[1]):
                _fail("invalid-index", f"`{tok[1]}` is not an index variable", _tok_span(tok))
            indices.append(ir.IndexVar(tok[1], _tok_span(tok)))
        return ir.Reduce(op[1], _tok_span(op), tuple(indices), body, _cover(c))

    def number(self, c):
        tok = c[0]
        return _make_number(float(tok[1]), tok[1], _tuple_new(Span, (tok[2], tok[3])))

    def string(self, c):
        return _string(c[0])

    def group(self, c):
        inner = c[1]
        return replace(inner, span=_cover(c))

    def list(self, c):
        items = tuple(x for x in c[1:-1] if x is not None)
        return ir.ListLit(items, _cover(c))

    # ---- references and calls

    # The compiled replay (lalr._compiled) does not make a bare reference in the
    # arguments of a bracket or paren reference: these get its NAME token instead
    # (most become index variables, and the Ref would be thrown away)
    TOKEN_STAND_INS = {"bare_ref": ("bracket_ref", "paren_ref")}

    def bare_ref(self, c):
        tok = c[0]
        span = _tuple_new(Span, (tok[2], tok[3]))  # _name_ref's work in place
        return _make_ref(tok[1], span, None, False, span)

    def bracket_ref(self, c):
        name, _l, args, close = c
        indices = _indices(args) if args else ()
        return _make_ref(name[1], _tuple_new(Span, (name[2], name[3])), indices, False,
                         _tuple_new(Span, (name[2], close[3])))

    def paren_ref(self, c):
        name, _l, args, close = c
        args = args or []
        span = _tuple_new(Span, (name[2], close[3]))
        if name[1] in RESERVED_WORDS:
            _fail("reserved-word", f"`{name[1]}` is reserved for a later version of Fuse",
                  _tok_span(name))
        if name[1] in BUILTINS:
            return _call(name, args, span)
        try:
            indices = _indices(args)
        except _StatementError:
            if _is_variable_name(name[1]):
                # `foo(X[i])`: a call to a function that does not exist; the
                # checker reports it with the list of builtins.
                return _call(name, args, span)
            raise
        return _make_ref(name[1], _tuple_new(Span, (name[2], name[3])), indices, True, span)

    # Expressions as they are, other arguments as `_Arg`s (the children hold no
    # None: every `arg` alternative makes a value, and `[","]` is filtered out).
    # `list` itself, so that the compiled replay knows the list it makes.
    args = staticmethod(builtins.list)  # (the stdlib's: `list` here is the method above)

    def kwarg(self, c):
        name, _eq, value = c
        if isinstance(name, tuple):  # a token, `axis=`: the keyword is also a statement word
            name = ir.Ref(name[1], _tok_span(name), None, False, _tok_span(name))
        if not (isinstance(name, ir.Ref) and name.indices is None):
            _fail("syntax-error", "a keyword argument is written `name=value`", _cover(c))
        return _Arg("kwarg", value, _cover(c), name)

    def slice(self, c):
        start, colon, stop = c
        bounds = []
        for tok in (start, stop):
            if tok is not None and not tok[1].isdigit():
                _fail("invalid-index", "slice bounds are whole numbers", _tok_span(tok))
            bounds.append(int(tok[1]) if tok is not None else None)
        span = _cover([t for t in c if t is not None])
        if bounds[0] is not None and bounds[1] is not None and bounds[1] <= bounds[0]:
            _fail("invalid-index", f"the slice {bounds[0]}:{bounds[1]} is empty", span)
        return _Arg("slice", ir.IndexSlice(bounds[0], bounds[1], span), span)

    def virtual(self, c):
        return _Arg("virtual", c[1], _cover(c))

    def dotted(self, c):
        return _Arg("dotted", c[0], _cover(c))


_ESCAPE = re.compile(r'\\(["\\])')


def _string(tok: Tok) -> ir.String:
    """The only escapes are \\" and \\\\ (LANGUAGE.md §1); any other backslash
    stays as written, so a path like "data\\x.npy" means what it shows."""
    return ir.String(_ESCAPE.sub(r"\1", tok[1][1:-1]), _tok_span(tok))


def _strings_alone(stmt: Any) -> None:
    """A file path only stands alone: on the right of a source, on the left of a sink.
    Checked once a statement with a string is built (the last check its builder
    would make), so that statements without one are not walked for strings."""
    if type(stmt) is ir.Equation or type(stmt) is ir.Sink:
        _no_strings(stmt.rhs)


def _no_strings(expr: Any) -> None:
    for node in ir.walk(expr):
        if isinstance(node, ir.String):
            _fail("invalid-statement",
                  "a file path can only stand alone on the right of a source "
                  "(`T[i] = \"file.npy\"`) or on the left of a sink", node.span)


def _check_name(ref: ir.Ref) -> None:
    if ref.name in RESERVED_WORDS:
        _fail("reserved-word", f"`{ref.name}` is reserved for a later version of Fuse",
              ref.name_span)


def _call(name: Tok, args: list[Any], span: Span) -> ir.Call:
    positional: list[Any] = []
    keywords: list[ir.Keyword] = []
    for arg in args:
        if isinstance(arg, tuple):  # a bare name's token
            arg = _name_ref(arg)
        if type(arg) is not _Arg:
            if keywords:
                _fail("syntax-error", "a positional argument cannot follow a keyword argument",
                      arg.span)
            positional.append(arg)
        elif arg.kind == "kwarg":
            assert arg.name is not None
            keywords.append(_make_keyword(arg.name.name, arg.name.span, arg.value, arg.span))
        else:
            _fail("invalid-index", "slices, `*t` and dotted indices only appear inside a "
                  "tensor's brackets", arg.span)
    return _make_call(name[1], _tuple_new(Span, (name[2], name[3])), tuple(positional),
                      tuple(keywords), span)


# ------------------------------------------------------------ the engine


@functools.lru_cache(maxsize=1)
def _engine() -> Engine:
    return Engine(load_tables(GRAMMAR), _IRBuilder())


# ---------------------------------------------------------- error wording

_TERMINAL_WORDS = {
    "NAME": "a name", "NUMBER": "a number", "STRING": "a file path in double quotes",
    "EQUAL": "'='", "PLUSEQ": "'+='", "PROJEQ": "'max=', 'min=' or 'avg='", "QMARK": "'?'",
    "$END": "the end of the statement", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['",
    "RSQB": "']'", "COMMA": "','", "COLON": "':'", "DOT": "'.'", "STAR": "'*'",
    "SLASH": "'/'", "PLUS": "'+'", "MINUS": "'-'", "POW": "'^'", "EXPORT": "'export'",
    "AXIS": "'axis'", "PARAM": "'param'", "REDUCE": "'reduce'", "SEMI": "';'",
    "LBRACE": "'{'", "RBRACE": "'}'",
}

# Friendly messages for common mistakes, matched by parser state (lark's match_examples).
_EXAMPLES: dict[str, list[str]] = {
    "an equation needs a right-hand side after the operator": [
        "Y[i] =", "Y =", "Y[i] max=", "Y[i] +=", "\"out.npy\" ="],
    "missing an operand after the operator": ["Y = A +", "Y = A *", "Y = A -", "Y = A /",
                                              "Y = A ^", "Y = -", "Y = A + *"],
    "missing '=' between the left-hand side and the expression": [
        "Y[i] W[i]", "Y W", "Y[i] 3", "Y[i] (W)", "Y(i) W"],
    "missing ',' between indices": ["Y[i j] = X[i]", "Y = X[i j]", "Y = R(x y)"],
    "an index is missing between the commas": ["Y[i,,j] = X[i]", "Y = X[,i]", "Y = X[i,,j]"],
}


def _describe(tok: Tok) -> str:
    if tok.type == "$END":
        return "the end of the statement"
    return f"'{tok.value}'"


def _parse_error_message(err: ParseError) -> str:
    tok = err.token
    if tok.type == "RESERVED_OP":
        return (f"'{tok.value}' is reserved for a later version of Fuse (comparisons, guards "
                f"and namespaces are not in this version)")
    if tok.type in ("LBRACE", "RBRACE"):
        return "braces are reserved for a later version of Fuse (`case { ... }`)"
    label = _match_example(err)
    if label:
        return label
    expected = sorted({_TERMINAL_WORDS.get(t, t) for t in err.expected if not t.startswith("__")})
    if len(expected) > 6:
        expected = expected[:6] + ["..."]
    wanted = ", ".join(expected[:-1]) + (" or " if len(expected) > 1 else "") + expected[-1] \
        if expected else "something else"
    return f"unexpected {_describe(tok)}; expected {wanted}"


@functools.lru_cache(maxsize=1)
def _example_states() -> dict[tuple[int, str], str]:
    """(parser state, token type) -> message, computed once from _EXAMPLES."""
    table: dict[tuple[int, str], str] = {}
    engine = _engine()
    for label, examples in _EXAMPLES.items():
        for example in examples:
            try:
                engine.parse(engine.lex(example))
            except ParseError as err:
                table.setdefault((err.state, err.token.type), label)
            except _StatementError:
                pass
    return table


def _match_example(err: ParseError) -> str | None:
    # As lark's match_examples: the parser state and the token type of the
    # error identify the mistake; the table is computed once, not per error.
    return _example_states().get((err.state, err.token.type))


# ------------------------------------------------------------------ split


@frozen_dataclass
class ParseResult:
    program: ir.Program
    diagnostics: tuple[Diagnostic, ...]
    statement_spans: tuple[Span, ...]  # every statement found, parsed or not


def _split(tokens: list[Tok], diags: list[Diagnostic], strict: bool = False, final: bool = True
           ) -> tuple[list[tuple[list[Tok], bool]], bool] | None:
    """Statements as token lists (newlines inside brackets dropped) and whether each
    is sound, and the `strict` state after them.  `tokens` are whole lines; unless
    they run to the end of the file (`final`), None says a bracket is still open at
    their end: the caller retries with more lines."""
    out: list[tuple[list[Tok], bool]] = []
    i = 0
    n = len(tokens)
    # After one bracket ran to the end of the file, a line starting at column 1
    # inside brackets starts a new statement: this keeps recovery linear.
    while i < n and len(diags) < MAX_SYNTAX_ERRORS:
        first_diag = len(diags)
        stmt: list[Tok] = []
        stack: list[Tok] = []
        ok = True
        too_deep = False
        restart = None
        runaway: Tok | bool = False  # a bracket left open over newlines met a wrong closer
        multiline = False
        while i < n:
            tok = tokens[i]
            kind = tok.type
            if kind == "NL":
                i += 1
                if not stack:
                    break
                multiline = True
                if strict and i < n and tokens[i].start_pos == tok.end_pos and tokens[i].type not in _CLOSE:
                    if ok:
                        diags.append(make("unclosed-bracket", f"'{stack[0].value}' is not "
                                          f"closed on its line", _tok_span(stack[0])))
                    ok = False
                    break
                continue
            if kind == "SEMI":
                i += 1
                if stack:
                    diags.append(make("unclosed-bracket", f"'{_TEXT[stack[0].type]}' is not "
                                      f"closed before ';'", _tok_span(stack[0])))
                    ok = False
                break
            if kind in _OPEN:
                stack.append(tok)
                if len(stack) > MAX_NESTING and not too_deep:
                    diags.append(make("nesting-too-deep", f"brackets are nested more than "
                                      f"{MAX_NESTING} deep", _tok_span(tok)))
                    too_deep = True
                    ok = False
            elif kind in _CLOSE:
                if not stack:
                    if ok:
                        diags.append(make("unmatched-bracket", f"'{tok.value}' closes nothing",
                                          _tok_span(tok)))
                    ok = False
                elif stack[-1].type != _CLOSE[kind]:
                    if multiline and ok:
                        # `Y = W[i,j X[j]` then more lines: the '[' is the
                        # mistake; report it there and read on from its next line.
                        runaway = tok
                        break
                    if ok:
                        opener = stack[-1]
                        diags.append(make("unmatched-bracket", f"'{tok.value}' does not match "
                                          f"'{opener.value}'; expected "
                                          f"'{_TEXT[_OPEN[opener.type]]}'", _tok_span(tok)))
                    ok = False
                    stack.pop()
                else:
                    stack.pop()
            elif kind == "BAD_CHAR":
                if ok:
                    diags.append(make("invalid-character", _bad_char_message(tok.value),
                                      _tok_span(tok)))
                ok = False
            elif kind == "BAD_STRING":
                if ok:
                    diags.append(make("unterminated-string", "this string has no closing '\"' "
                                      "on its line", _tok_span(tok)))
                ok = False
            stmt.append(tok)
            i += 1
        else:
            if stack and not final:
                return None
            runaway = bool(stack)
        if runaway:
            if stack:
                # Unclosed bracket at the end of the file: report it, end the
                # statement at the end of the opener's line, and read on from there.
                opener = stack[0]
                del diags[first_diag:]  # what follows is read again as new statements
                why = f" (a later '{runaway.value}' does not match it)" \
                    if isinstance(runaway, Tok) else ""
                diags.append(make("unclosed-bracket", f"'{opener.value}' is never closed{why}",
                                  _tok_span(opener)))
                ok = False
                restart = _next_line(tokens, opener)
                strict = True
        if stmt:
            if restart is not None:
                stmt = [t for t in stmt if t.end_pos <= tokens[restart - 1].end_pos] \
                    if restart > 0 else stmt
            out.append((stmt, ok))
        if restart is not None:
            i = restart
    return out, strict


def _next_line(tokens: list[Tok], opener: Tok) -> int:
    """Index of the first token after the line holding `opener`."""
    k = bisect.bisect_right([t.start_pos for t in tokens], opener.start_pos)
    while k < len(tokens):
        if tokens[k].type == "NL":
            return k + 1
        k += 1
    return len(tokens)


def _bad_char_message(ch: str) -> str:
    if ch == "'":
        return "\"'\" only marks a primed name like p'; strings use double quotes"
    if ch.isspace() or not ch.isprintable():
        return f"unexpected character U+{ord(ch):04X}"
    return f"'{ch}' is not part of the Fuse language"


class _Line:
    """One line's tokens (offsets as lexed at `offset`) and whether it is *simple*:
    it has tokens, no `;`, no bad character or string, and its brackets close in
    order on it.  From a clean state a simple line is exactly one sound statement
    whatever came before, so the splitter takes it whole without looking at its
    tokens; anything else goes through `_split` token by token."""

    __slots__ = ("offset", "tokens", "shape", "simple", "start", "end")

    def __init__(self, offset: int, tokens: list[tuple[str, str, int, int]],
                 shape: tuple[str, ...]) -> None:
        """A line at `offset` lexed (see Engine.lines) into `tokens`, of types `shape`."""
        self.offset = offset
        self.tokens = tokens  # plain tuples (type, text, start, end)
        self.shape = shape  # their types: the parser's key
        if tokens:
            self.start = tokens[0][2] - offset
            self.end = tokens[-1][3] - offset
            self.simple = _simple(shape)
        else:
            self.start = self.end = 0
            self.simple = False

    def tokens_at(self, offset: int) -> list[tuple[str, str, int, int]]:
        if offset == self.offset:
            return self.tokens
        delta = offset - self.offset
        return [(t[0], t[1], t[2] + delta, t[3] + delta) for t in self.tokens]


_NOT_SIMPLE = frozenset({"SEMI", "BAD_CHAR", "BAD_STRING", "NL"})


# Whether a line of these token types is simple depends on nothing else, and
# programs repeat a few shapes many times (see Engine.parse): once per shape.
@functools.lru_cache(maxsize=10_000)
def _simple(kinds: tuple[str, ...]) -> bool:
    if not _NOT_SIMPLE.isdisjoint(kinds):
        return False
    # The line's brackets in order, as text ("[]([])"): they close in order if
    # taking out the innermost pairs again and again empties it (in C, per depth).
    brackets = "".join([_TEXT[kind] for kind in kinds if kind in _TEXT])
    if len(brackets) > 2 * MAX_NESTING:
        return _simple_slowly(kinds)  # might be nested too deep: count
    while brackets:
        inner = brackets.replace("()", "").replace("[]", "").replace("{}", "")
        if inner == brackets:
            return False
        brackets = inner
    return True


def _simple_slowly(kinds: tuple[str, ...]) -> bool:
    stack: list[str] = []
    for kind in kinds:
        if kind in _OPEN:
            stack.append(_OPEN[kind])
            if len(stack) > MAX_NESTING:
                return False
        elif kind in _CLOSE:
            if not stack or stack.pop() != kind:
                return False
    return not stack


# A sound statement's parse: its IR (an axis declaration may give several), or why not.
_Outcome = tuple[tuple[ir.Statement, ...], Diagnostic | None]


class ParseCache:
    """What the last parse of one document computed, reused for the next version:
    lines' tokens keyed by their text, and statements' IR keyed by their text
    (shifted when the statement moved).  Only what the latest parse used is kept,
    so the cache holds at most about two versions' worth."""

    def __init__(self) -> None:
        self.lines: dict[str, _Line] = {}
        self.statements: dict[str, tuple[int, _Outcome]] = {}
        # statements of the latest parse that are earlier ones moved: id(new) ->
        # (new, old, by how many characters), for the checker to move its results too
        self.moved: dict[int, tuple[ir.Statement, ir.Statement, int]] = {}


# How many lines `_find_statements` lexes at most in one go (Engine.lines): a
# call per line costs more than its lexing, while the big lists of a long run
# cost the memory allocator more (`fuse check` of a 10,000-line program: 32 the
# fewest instructions, 16 to 128 within 0.4%, 256 0.5% more).
_LEX_AHEAD = 32


# A statement found by the splitter: (start, end, sound, tokens) where tokens is
# a list, or a (_Line, offset) pair for a simple line (tokens made only if parsed).
_Found = tuple[int, int, bool, Any]


def _find_statements(text: str, cache: ParseCache, lines_used: dict[str, _Line] | None,
                     diags: list[Diagnostic]) -> Iterator[_Found]:
    """The statements of `text`, as `_split` finds them in its token stream, taking
    simple lines from the cache and splitting the rest in windows of lines.  Lazy:
    a line is lexed (with a few after it, see _LEX_AHEAD) when the statements
    before it were taken, and let go after (unless `lines_used`, for the next
    parse, keeps it)."""
    known = cache.lines
    texts = text.split("\n")
    count = len(texts)
    offsets = [0] * count
    pos = 0
    for k, line in enumerate(texts):
        offsets[k] = pos
        pos += len(line) + 1
    entries: list[_Line | None] = [None] * count
    ahead: list[_Line | None] = [None] * count  # lines lexed with one before them

    def line_at(k: int) -> _Line:
        entry = entries[k]
        if entry is None:
            line = texts[k]
            entry = (lines_used.get(line) if lines_used is not None else None) \
                or known.get(line)
            if entry is None:
                entry = ahead[k] or lex_from(k)
            ahead[k] = None
            if lines_used is not None:
                lines_used[line] = entry
            entries[k] = entry
        return entry

    def lex_from(k: int) -> _Line:
        # Lex line k and the lines after it that the caches do not have (up to
        # _LEX_AHEAD lines in all) in one go.
        stop = min(k + _LEX_AHEAD, count)
        if known or lines_used:
            for j in range(k + 1, stop):
                if texts[j] in known or (lines_used is not None and texts[j] in lines_used):
                    stop = j
                    break
        end = offsets[stop - 1] + len(texts[stop - 1])
        made = [_Line(offset, tokens, shape) for offset, (tokens, shape)
                in zip(offsets[k:stop], _engine().lines(text, offsets[k], end), strict=True)]
        ahead[k:stop] = made
        return made[0]

    strict = False
    k = 0
    while k < count and len(diags) < MAX_SYNTAX_ERRORS:
        entry = line_at(k)
        entries[k] = None  # read once more at most, in a window below
        if entry.simple:
            offset = offsets[k]
            k += 1
            yield (offset + entry.start, offset + entry.end, True, (entry, offset))
            continue
        if not entry.tokens:
            k += 1
            continue
        entries[k] = entry
        size = 8
        while True:
            stop = min(k + size, count)
            tokens: list[Tok] = []
            for j in range(k, stop):
                tokens += map(_new_tok, line_at(j).tokens_at(offsets[j]))
                if j + 1 < count:
                    at = offsets[j] + len(texts[j])
                    tokens.append(Tok("NL", "\n", at, at + 1))
            before = len(diags)
            found = _split(tokens, diags, strict, final=stop == count)
            if found is not None:
                break
            del diags[before:]
            size *= 2
        del tokens
        entries[k:stop] = [None] * (stop - k)
        split, strict = found
        k = stop
        for toks, ok in split:
            yield (toks[0].start_pos, toks[-1].end_pos, ok, toks)


def _parse_statement(tokens: list[Tok], span: Span, shape: tuple[str, ...] | None = None,
                     quoted: bool = True) -> _Outcome:
    """One sound statement's IR (an axis declaration may give several), or why not;
    `shape`: the tokens' types, when known; `quoted`: False when the statement's
    text has no '"', so no string (which saves looking for one among the types)."""
    if shape is None:
        shape = tuple(map(_kind_of, tokens))
    try:
        result = _engine().parse(tokens, shape)
        if quoted and "STRING" in shape:
            _strings_alone(result)
    except _StatementError as err:
        return (), err.diagnostic
    except ParseError as err:
        tok = err.token
        where = _tok_span(tok) if tok[0] != "$END" else Span(span.end, span.end)
        return (), make("syntax-error", _parse_error_message(err), where)
    except RecursionError:
        return (), make("nesting-too-deep", "this statement is nested too deeply to analyse",
                        span)
    return (tuple(result) if isinstance(result, list) else (result,)), None


def parse(text: str, cache: ParseCache | None = None) -> ParseResult:
    """Parse a whole program. Never raises on user input.

    With a `cache` (one per document), lines and statements whose text did not
    change since the last call are not lexed or parsed again; the result is the
    same as without one."""
    remember = cache is not None
    if cache is None:
        cache = ParseCache()
    # Statements are parsed as the splitter finds them, so that a line's tokens are
    # let go once its statement is parsed and the IR takes their memory (fewer new
    # pages).  That gives the same result as finding every statement first unless
    # there are too many errors: how many the splitter finds in all decides which
    # statements are parsed then, so such a text is parsed again that way.
    result = _parse(text, cache, remember, lazy=True)
    if result is None:
        result = _parse(text, cache, remember, lazy=False)
    return result


def _parse(text: str, cache: ParseCache, remember: bool, lazy: bool) -> ParseResult | None:
    found_diags: list[Diagnostic] = []  # the splitter's, then the statements' below
    diags: list[Diagnostic] = []
    statements: list[ir.Statement] = []
    spans: list[Span] = []
    lines_used: dict[str, _Line] = {}
    moved: dict[int, tuple[ir.Statement, ir.Statement, int]] = {}
    parsed = cache.statements
    parsed_used: dict[str, tuple[int, _Outcome]] = {}
    found: Iterable[_Found] = _find_statements(text, cache, lines_used if remember else None,
                                               found_diags)
    if not lazy:
        found = list(found)
    for start, end, ok, tokens in found:
        span = _tuple_new(Span, (start, end))
        spans.append(span)
        if len(found_diags) + len(diags) >= MAX_SYNTAX_ERRORS:
            if lazy:
                return None
            break
        if not ok:
            continue
        line = shape = None
        if isinstance(tokens, tuple):
            line, offset = tokens
            tokens = line.tokens  # types and texts only: offsets may be stale
        kind, word = tokens[0][:2]
        if kind == "NAME" and word in RESERVED_WORDS and (
                len(tokens) == 1 or tokens[1][0] not in ("LSQB", "LPAR", "EQUAL", "QMARK")):
            diags.append(make("reserved-word", f"`{word}` statements are reserved for a "
                              f"later version of Fuse", Span(start, start + len(word))))
            continue
        key = text[start:end]
        entry = parsed_used.get(key) or parsed.get(key)
        if entry is not None and entry[0] != start:
            delta = start - entry[0]
            outcome = _shift_outcome(entry[1], delta)
            if outcome is not None:
                for new, old in zip(outcome[0], entry[1][0]):
                    moved[id(new)] = (new, old, delta)
            entry = (start, outcome) if outcome is not None else None
        if entry is None:
            if line is not None:
                tokens = line.tokens_at(offset)
                shape = line.shape
            entry = (start, _parse_statement(tokens, span, shape, '"' in key))
        parsed_used.setdefault(key, entry)
        result, problem = entry[1]
        if problem is not None:
            diags.append(problem)
        else:
            statements.extend(result)
    diags[:0] = found_diags
    if len(diags) >= MAX_SYNTAX_ERRORS:
        if lazy:
            return None
        diags.append(make("too-many-errors", f"stopped after {MAX_SYNTAX_ERRORS} syntax errors",
                          diags[-1].span))
    cache.lines = lines_used
    cache.statements = parsed_used
    cache.moved = moved
    return ParseResult(ir.Program(tuple(statements), text), tuple(diags), tuple(spans))


# ------------------------------------------------------------ shifting

def _shift_outcome(outcome: _Outcome, delta: int) -> _Outcome | None:
    """A statement's parse outcome moved by `delta` characters (None: too deep to copy)."""
    try:
        return shifted(outcome, delta)
    except RecursionError:
        return None


def decode(data: bytes) -> tuple[str, Diagnostic | None]:
    """Bytes of a .fuse file -> text, or a diagnostic saying why it is not text."""
    if b"\x00" in data[:8192]:
        pos = data.index(b"\x00")
        prefix = data[:pos].decode("utf-8", errors="replace")
        return prefix, make("invalid-encoding", "this looks like a binary file, not Fuse "
                            "source text", Span(len(prefix), len(prefix) + 1))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        prefix = data[:err.start].decode("utf-8", errors="replace")
        return prefix, make("invalid-encoding", f"the file is not UTF-8 text (byte "
                            f"0x{data[err.start]:02x} at offset {err.start})",
                            Span(len(prefix), len(prefix) + 1))
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # keep offsets; a BOM is whitespace to the lexer
    return text, None
