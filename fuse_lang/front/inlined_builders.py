"""The IR builder's calls written out in place (`IRBuilder.INLINE`): the compiled
replay of a statement shape (front/compiled.py) may make a node right there,
without the builder method's lists and calls.  Each function below is given the
call's children as code (compiled.TokenCode for a token, a variable's name for a
value, compiled.StandIn for a bare name not made) and the call's own code, and
gives code doing what the method does, or None to leave the call.  Such code
raises what the method would, first (or falls back on the call): the method's
checks are made in it in the same order, or cannot fail for those children."""
from __future__ import annotations

from typing import Any

from . import ir
from .builtins import BUILTINS
from .compiled import StandIn, TokenCode
from .indices import index_from as _index_from, name_index as _name_index, positions_only
from .span import Span

_tuple_new = tuple.__new__  # (as front/builder.py makes a Span)

_Inlined = tuple[str, dict[str, Any]] | None


# the names the written-out code uses
_INLINE_NAMES = {"_Ref": ir.Ref, "_Sum": ir.Sum, "_Product": ir.Product,
                 "_tuple_new": _tuple_new, "_Span": Span, "_name_index": _name_index,
                 "_index_from": _index_from, "_CALL_WORDS": frozenset(BUILTINS),
                 "_positions_only": positions_only}


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
    made = f"({''.join(f'{index}, ' for index in indices)})"
    if not paren and any(type(arg) is not StandIn for arg in args):
        made = f"_positions_only({made})"  # (a bracket's float constant: bracket_ref's check)
    return (f"_Ref({name}[1], {_span_code(f'{name}[2]', f'{name}[3]')}, "
            f"{made}, {paren}, {_span_code(f'{name}[2]', f'{close}[3]')})")


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
    # a parenthesised sum among the terms: the call, which splices it in
    inlined = _operands_code("_Sum", children, "+")
    if inlined is None:
        return None
    plain = " and ".join(f"type({child}) is not _Sum" for child in children
                         if type(child) is not TokenCode)
    return f"({inlined[0]} if {plain} else {call})", inlined[1]


def _product_code(children: list[Any], call: str) -> _Inlined:
    return _operands_code("_Product", children, "")


def _start_code(children: list[Any], call: str) -> _Inlined:
    return (children[0], {}) if _made(children[0]) else None


# the builder methods whose calls may be written out, and how
INLINE = {"bracket_ref": _bracket_ref_code, "paren_ref": _paren_ref_code,
          "sum": _sum_code, "product": _product_code, "start": _start_code}
