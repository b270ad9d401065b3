"""The IR builder: LALR reductions -> IR nodes with spans.

The parser (lalr.py) calls a method of `IRBuilder` per reduction, named after
the rule, with the rule's children as lark shapes them; a token child is a
tuple (type, text, start, end).  A statement that is not valid Fuse although it
parses (`a keyword argument is not an index`...) raises StatementError with its
diagnostic.  The compiled replay (compiled.py) may write some of the builder's
calls out in place (`IRBuilder.INLINE`, front/inlined_builders.py).
"""
from __future__ import annotations

import builtins
import re
from dataclasses import replace
from operator import itemgetter
from typing import Any

from . import blocks, builtins as specs, conditions, ir
from .builtins import BUILTINS, COMPARISONS, PADDINGS, SCHEDULE_PER, by_position
from .indices import (
    Arg as _Arg,
    StatementError,
    fail as _fail,
    indices as _indices,
    is_variable_name as _is_variable_name,
    name_ref as _name_ref,
    positions_only,
    tok_span as _tok_span,
)
from .inlined_builders import INLINE
from .lexer import Tok
from .numbered_axes import NUMERIC_AXES, numbered_axes_named
from .span import Span
from .wildcards import WILDCARDS, wildcards_named

# A number literal longer than this is refused (`number-too-long`): no float needs
# more digits, and Python refuses to read integers of more than 4300 digits.
MAX_NUMBER_LENGTH = 1000


# A Span made as `_tuple_new(Span, (start, end))`, without a Python frame: the
# cheapest way CPython has to make one (a third less than a partial of it, or than
# slicing a token's offsets out), and the parser makes one or two per token.
_tuple_new = tuple.__new__
_text_of = itemgetter(1)  # a token's text


# A token is a tuple (type, text, start, end): the lexer's plain tuples on the
# way to the parser (made in C), or a Tok where it is read by name.


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


def _number_text(tok: tuple) -> str:
    """A NUMBER token's text, refused when it is too long to be a number."""
    if len(tok[1]) > MAX_NUMBER_LENGTH:
        _fail("number-too-long", f"this number has {len(tok[1])} characters; a number has at "
              f"most {MAX_NUMBER_LENGTH}", _tok_span(tok))
    return tok[1]


def _grouped_sum(term: Any) -> bool:
    """Whether `term` is a sum in parentheses (or a negated one): its span starts
    before its first term's.  A sum the builder makes for `!c` (`1 - c`,
    front/conditions.py) starts with a 1 that has an empty span, so it is one
    factor, as written."""
    if type(term) is not ir.Sum:
        return False
    first = term.terms[0].span
    return term.span[0] < first[0] < first[1]


def _spliced(terms: Any, signs: Any) -> tuple[list[Any], list[str]]:
    """The terms and signs of a sum with each parenthesised sum's terms in its place."""
    out_terms: list[Any] = []
    out_signs: list[str] = []
    for term, sign in zip(terms, signs):
        if not _grouped_sum(term):
            out_terms.append(term)
            out_signs.append(sign)
            continue
        for inner, inner_sign in zip(term.terms, term.signs):
            out_terms.append(inner)
            out_signs.append(inner_sign if sign == "+" else
                             ("-" if inner_sign == "+" else "+"))
    return out_terms, out_signs


# -------------------------------------------------------------- IR builder


class IRBuilder:
    """LALR reductions -> IR nodes (spans from tokens): each method is called with
    its rule's children, as lark shapes them (see tables._recipe); a token child
    is a tuple (type, text, start, end)."""

    # methods the compiled replay may write out in place (front/inlined_builders.py)
    INLINE = INLINE

    # ---- statements
    def start(self, c):
        return c[0]

    def equation(self, c):
        lhs, op, rhs = c
        if type(lhs) is not ir.Ref:
            lhs = self._lhs(lhs)  # says why it is not a left-hand side
        if NUMERIC_AXES:
            rhs = numbered_axes_named(rhs, lhs)
        if WILDCARDS:
            rhs = wildcards_named(rhs)
        span = _tuple_new(Span, (lhs.span[0], rhs.span[1]))
        if type(rhs) is ir.String or (type(rhs) is ir.Call and rhs.name == "source"):
            if op[1] != "=":
                _fail("invalid-statement", f"a source is written `T[...] = \"file\"`, not with "
                      f"`{op[1]}`", _tok_span(op))
            _source_axes(lhs)
            if type(rhs) is ir.Call:
                return _source_call(lhs, rhs, span)
            return ir.Source(lhs, rhs, span)
        return ir.Equation(lhs, op[1], _tuple_new(Span, (op[2], op[3])), rhs, span)

    def sink(self, c):
        path_tok, _eq, rhs = c
        if NUMERIC_AXES:
            rhs = numbered_axes_named(rhs, None)
        if WILDCARDS:
            rhs = wildcards_named(rhs)
        return ir.Sink(_string(path_tok), rhs, _cover(c))

    def export(self, c):
        names = tuple(ir.Ref(t[1], _tok_span(t), None, False, _tok_span(t)) for t in c[1:])
        return ir.Export(names, _cover(c))

    def train_decl(self, c):
        name = c[1]
        return ir.TrainDecl(ir.Ref(name[1], _tok_span(name), None, False, _tok_span(name)),
                            _cover(c))

    def query(self, c):
        atom = self._atom(c[0])
        return ir.Query(wildcards_named(atom) if WILDCARDS else atom, _cover(c))

    def fact(self, c):
        atom = self._atom(c[0])
        WILDCARDS.clear()  # (`_` in a fact is invalid-fact)
        return ir.Fact(atom, atom.span)

    def axis_decl(self, c):
        return [replace(item, span=_cover(c) if len(c) == 2 else item.span) for item in c[1:]]

    def axis_item(self, c):
        name, _eq, number = c
        if not _number_text(number).isdigit():
            _fail("invalid-statement", "an axis extent is a whole number", _tok_span(number))
        return ir.AxisDecl(name[1], _tok_span(name), int(number[1]), _tok_span(number),
                           _cover(c))

    def axis_padding(self, c):
        name, _eq, word = c
        if word[1] not in PADDINGS:
            _fail("invalid-statement", f"`axis {name[1]} = {word[1]}`: an axis is a whole "
                  f"number, `valid` (windows `{name[1]}+dx` stay inside their axis) or "
                  f"`same` (windows centred, zeros on both sides)", _tok_span(word))
        return ir.AxisDecl(name[1], _tok_span(name), 0, _tok_span(word), _cover(c),
                           padding=word[1])

    def import_decl(self, c):
        _import, path, _as, alias = c
        if "::" in alias[1] or alias[1].endswith("'"):
            _fail("invalid-statement", f"`{alias[1]}`: an import's namespace is a plain name "
                  f"(`import \"lib.fuse\" as lib`)", _tok_span(alias))
        return ir.ImportDecl(_string(path), alias[1], _tok_span(alias), _cover(c))

    # `fn`, blocks, `let`, `case` and `when`: front/blocks.py
    fn_def = staticmethod(blocks.fn_def)
    fn_body = staticmethod(blocks.fn_body)
    case = staticmethod(blocks.case)
    case_arm = staticmethod(blocks.case_arm)
    default_arm = staticmethod(blocks.default_arm)
    guarded = staticmethod(blocks.guarded)
    block = staticmethod(blocks.block)
    let_stmt = staticmethod(blocks.let_stmt)
    # `&&`, `||` and `!`: front/conditions.py
    conjunction = staticmethod(conditions.conjunction)
    disjunction = staticmethod(conditions.disjunction)
    bang = staticmethod(conditions.bang)

    def param_decl(self, c):
        items = c[1:]  # each [ref, initialiser or None] (param_item)
        return ir.ParamDecl(tuple(self._lhs(ref) for ref, _ in items), _cover(c),
                            tuple(init for _, init in items))

    def param_item(self, c):
        # ref [EQUAL initialiser]: a list, not a tuple (a tuple is a token here)
        return [c[0], c[-1]]

    def initialiser(self, c):
        # NAME [LPAR [arg ("," arg)*] RPAR]: the name, then `(`, the numbers, `)` or Nones
        name, close = c[0], c[-1]
        numbers = tuple(a for a in c[2:-1] if a is not None)
        span = _tok_span(name) if close is None else _tuple_new(Span, (name[2], close[3]))
        return ir.Initialiser(name[1], _tok_span(name), numbers, span)

    def init_arg(self, c):
        minus, tok = c
        text = _number_text(tok)
        value = float(text)
        if minus is None:
            return ir.Number(value, text, _tok_span(tok))
        return ir.Number(-value, "-" + text, _tuple_new(Span, (minus[2], tok[3])))

    def _atom(self, ref: Any) -> ir.Ref:
        if not isinstance(ref, ir.Ref):
            name = getattr(ref, "name", "this")
            _fail("invalid-statement",
                  f"`{name}` is a builtin function; a fact, a query or a left-hand side names "
                  f"a tensor", ref.span)
        return ref

    def _lhs(self, ref: Any) -> ir.Ref:
        ref = self._atom(ref)
        return ref

    # ---- expressions
    def sum(self, c):
        # term (sign term)*: the terms at even places, the signs' tokens between;
        # a parenthesised sum's terms are the sum's own (LANGUAGE.md §5: projection
        # is per additive term, so `(A[i,j] + B[i]) + C[i]` is `A[i,j] + B[i] + C[i]`)
        terms, signs = c[::2], ("+", *map(_text_of, c[1::2]))
        if any(_grouped_sum(term) for term in terms):
            terms, signs = _spliced(terms, signs)
        return ir.Sum(tuple(terms), tuple(signs),
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
        return ir.Product(tuple(factors), tuple(ops),
                             _tuple_new(Span, (c[0].span[0], c[-1].span[1])))

    def neg(self, c):
        operand = c[1]
        if _grouped_sum(operand):  # -(A + B) is -A - B: each term its own (see sum)
            first = operand.terms[0]
            return ir.Sum((ir.Neg(first, first.span), *operand.terms[1:]),
                          ("+", *("-" if s == "+" else "+" for s in operand.signs[1:])),
                          _cover(c))
        return ir.Neg(operand, _cover(c))

    def negation(self, c):
        # `not P(x)`: the builtin call not(P(x)); its argument is a projection scope,
        # so the atom's own variables are summed inside (LANGUAGE.md §13)
        return ir.Call("not", _tok_span(c[0]), (c[1],), (), _cover(c))

    def power(self, c):
        return ir.Power(c[0], c[2], _cover(c))

    def comparison(self, c):
        # `a < b`: the builtin call named by the operator, a Boolean factor (its
        # arguments are scopes like any call's: an index in both sides stays)
        left, op, right = c
        return ir.Call(op[1], _tok_span(op), (left, right), (), _cover(c))

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
        text = _number_text(tok)
        return ir.Number(float(text), text, _tuple_new(Span, (tok[2], tok[3])))

    def string(self, c):
        return _string(c[0])

    def group(self, c):
        inner = c[1]
        return replace(inner, span=_cover(c))

    def list(self, c):
        items = tuple(x for x in c[1:-1] if x is not None)
        return ir.ListLit(items, _cover(c))

    # ---- references and calls

    # The compiled replay (compiled.py) does not make a bare reference in the
    # arguments of a bracket or paren reference: these get its NAME token instead
    # (most become index variables, and the Ref would be thrown away)
    TOKEN_STAND_INS = {"bare_ref": ("bracket_ref", "paren_ref")}

    def bare_ref(self, c):
        tok = c[0]
        span = _tuple_new(Span, (tok[2], tok[3]))  # _name_ref's work in place
        return ir.Ref(tok[1], span, None, False, span)

    def bracket_ref(self, c):
        name, _l, args, close = c
        indices = positions_only(_indices(args)) if args else ()
        return ir.Ref(name[1], _tuple_new(Span, (name[2], name[3])), indices, False,
                         _tuple_new(Span, (name[2], close[3])))

    def paren_ref(self, c):
        name, _l, args, close = c
        args = args or []
        span = _tuple_new(Span, (name[2], close[3]))
        if name[1] in BUILTINS or (name[1] == "source" and args and type(args[0]) is ir.String):
            return _call(name, args, span)  # (`source("f.tsv", header=1)`: see _source_call)
        try:
            indices = _indices(args)
        except StatementError:
            if _is_variable_name(name[1].rpartition("::")[2]):  # (`g::attend(...)` too)
                # `foo(X[i])`: a call to a function that does not exist; the
                # checker reports it with the list of builtins.
                return _call(name, args, span)
            raise
        return ir.Ref(name[1], _tuple_new(Span, (name[2], name[3])), indices, True, span)

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
            if tok is not None and not _number_text(tok).isdigit():
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


def _source_axes(lhs: ir.Ref) -> None:
    """A source's left-hand side names the file's axes: a symbol or string there
    (`T["ann", k] = "t.txt"`) is no axis (the run read the file's positions as values
    the symbol's column lacks, and said the file had changed); a constant, an offset,
    a division or a slice (`W[0, j] = "w.npy"`) was silently ignored."""
    for index in lhs.indices or ():
        kind = type(index)
        if kind is ir.IndexConst or kind is ir.IndexShift or kind is ir.IndexDiv \
                or kind is ir.IndexSlice:
            shown = f"{lhs.name}(x, y)" if lhs.paren else f"{lhs.name}[i, j]"
            what = ("a symbol" if kind is ir.IndexConst and type(index.value) is str
                    else "a constant" if kind is ir.IndexConst else "an offset"
                    if kind is ir.IndexShift else "a division" if kind is ir.IndexDiv
                    else "a slice")
            _fail("invalid-statement", f"a source's left-hand side names the file's axes "
                  f"with index variables (`{shown} = \"file\"`), not with {what}: the whole "
                  f"file is read; to take part of it, read it whole and index that tensor",
                  index.span)


def _source_call(lhs: ir.Ref, call: ir.Call, span: Span) -> ir.Source:
    """`R(x, y) = source("f.tsv", header=1)`: a source with options."""
    if len(call.args) != 1 or type(call.args[0]) is not ir.String:
        # (`source(X[i])`: not a path, though the call looks like a source's)
        _fail("invalid-statement", "a source names one file, as a quoted path: "
              "`source(\"file\", header=1)`", call.span)
    header = None
    for kw in call.kwargs:
        value = kw.value
        if kw.name != "header" or type(value) is not ir.Number or value.text not in ("0", "1"):
            _fail("invalid-statement", "a source's option is `header=1` (its first row is a "
                  "header, skipped) or `header=0` (its first row is data)", kw.span)
        header = value.text == "1"  # type: ignore[union-attr]
        path = call.args[0].value  # type: ignore[union-attr]
        if not path.lower().endswith(_TABLE_SUFFIXES):  # (an array has no row to skip)
            _fail("invalid-statement", f"`header=` is an option of a table of rows "
                  f"({', '.join(_TABLE_SUFFIXES)}), not of `{path}`", kw.span)
    return ir.Source(lhs, call.args[0], span, header)  # type: ignore[arg-type]


_TABLE_SUFFIXES = (".csv", ".tsv", ".facts", ".json", ".jsonl")


def strings_alone(stmt: Any) -> None:
    """A file path only stands alone: on the right of a source, on the left of a sink.
    Checked once a statement with a string is built (the last check its builder
    would make), so that statements without one are not walked for strings."""
    if type(stmt) is ir.Equation or type(stmt) is ir.Sink:
        _no_strings(stmt.rhs)
    elif type(stmt) is ir.Let:  # (`let X = "a" + 1`: the run said "cannot evaluate String")
        strings_alone(stmt.equation)
    elif type(stmt) is ir.Block:
        for item in stmt.items:
            strings_alone(item)
    elif type(stmt) is ir.FnDef:
        for item in stmt.body:
            strings_alone(item)


def _no_strings(expr: Any) -> None:
    compared = {id(arg) for node in ir.walk(expr) if type(node) is ir.Call
                and node.name in COMPARISONS for arg in node.args}  # `(x != "ann")`: a value
    for node in ir.walk(expr):
        if isinstance(node, ir.String) and id(node) not in compared:
            _fail("invalid-statement",
                  "a file path can only stand alone on the right of a source "
                  "(`T[i] = \"file.npy\"`) or on the left of a sink", node.span)


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
            value = arg.value
            if arg.name.name == "axis" and type(value) is ir.Number:
                NUMERIC_AXES.append(True)  # `axis=0`, the seeds' spelling: named when
                # the statement is made (numbered_axes_named)
            elif arg.name.name == "per" and type(value) is ir.Ref and value.indices is None \
                    and value.name in SCHEDULE_PER:
                # `per=run`: a word, not a tensor; kept as a number whose text is the word
                value = ir.Number(float(SCHEDULE_PER.index(value.name)), value.name, value.span)
            keywords.append(ir.Keyword(arg.name.name, arg.name.span, value, arg.span))
        else:
            _fail("invalid-index", "slices, `*t` and dotted indices only appear inside a "
                  "tensor's brackets", arg.span)
    positional, keywords = by_position(name[1], positional, keywords)
    called = name[1]
    if called in specs.SELECT_SPELLINGS and len(positional) == 3 and not keywords:
        # `where(c, a, b)`, `masked_fill(x, mask, v)`: a select (the checker
        # sees any other form under its own name and says what it takes)
        called, positional = "select", list(specs.SELECT_SPELLINGS[called](*positional))
    return ir.Call(called, _tuple_new(Span, (name[2], name[3])), tuple(positional),
                   tuple(keywords), span)


