"""Checks of builtin calls: the name, the number of arguments, the keywords, and
what some builtins require of their arguments."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Collection, Container

from ..front import ir
from ..front.builtins import (
    BUILTINS,
    INDEX_ARGUMENT_BUILTINS,
    NAMED_BUILTINS,
    NORMALISING_BUILTINS,
    REDUCE_OPS,
    SCHEDULE_BUILTINS,
    SCHEDULE_PER,
    parameter_names,
)
from ..front.diagnostics import Diagnostic, Fix, Severity, TextEdit, make
from ..front.span import Span
from .compared_sums import check_compared_sum
from .consumed_axis import check_cross_entropy, check_gather, index_var_counts
from .literals import bound_shape, is_number, is_whole, literal_shape
from .suggestions import NameSuggester, did_you_mean_text

_NO_NAMES: frozenset[str] = frozenset()


@lru_cache(maxsize=512)
def _close_builtins(name: str) -> tuple[str, ...]:
    return NameSuggester(NAMED_BUILTINS).close(name)


def unknown_function(name: str, span: Span) -> Diagnostic:
    close = _close_builtins(name)
    fixes = tuple(Fix(f"Change to `{c}`", (TextEdit(span, c),)) for c in close)
    return make("unknown-builtin", f"`{name}` is not a builtin{did_you_mean_text(close)}"
                f" (builtins: {', '.join(sorted(NAMED_BUILTINS))})", span, fixes=fixes)


def check_call(call: ir.Call, stmt: ir.Statement, var_names: Container[str],
               tensors: Collection[str], out: list[Diagnostic]) -> None:
    """What is wrong with `call` in `stmt` goes to `out`.  `var_names`: the
    statement's index variables; `tensors`: the program's tensor names."""
    spec = BUILTINS.get(call.name)
    if spec is None:
        out.append(unknown_function(call.name, call.name_span))
        return
    check_compared_sum(call, stmt, out)
    n = len(call.args)
    misplaced = _check_keywords(call, stmt, spec.keywords, out)
    if misplaced:  # (the count would be wrong for the same reason: said once)
        return
    if n < spec.min_args or (spec.max_args is not None and n > spec.max_args):
        if spec.max_args is None:
            want = f"at least {spec.min_args}"
        elif spec.min_args == spec.max_args:
            want = str(spec.min_args)
        else:
            want = f"{spec.min_args} or {spec.max_args}"
        plural = "s" if want != "1" else ""
        out.append(make("argument-count", f"`{call.name}` takes {want} argument{plural}, not "
                        f"{n} (signature: {spec.signature})", call.span))
        return
    given = {kw.name for kw in call.kwargs} if call.kwargs else _NO_NAMES
    if call.name == "sig" and n == 2 and "T" in given:
        out.append(make("bad-argument", "`sig` is given its temperature twice: positionally "
                        "and as `T=`", call.span))
    for required in spec.required_keywords:
        if required not in given:
            out.append(make("argument-count", f"`{call.name}` needs `{required}=` "
                            f"(signature: {spec.signature})", call.span))
    _check_arguments(call, stmt, given, var_names, tensors, out)


def _check_keywords(call: ir.Call, stmt: ir.Statement, keywords: tuple[str, ...],
                    out: list[Diagnostic]) -> bool:
    """What is wrong with the call's keywords goes to `out`; True when a keyword
    that names a positional parameter could not be put in its place."""
    params = parameter_names(BUILTINS[call.name])
    names = [kw.name for kw in call.kwargs]
    misplaced = False
    for k, kw in enumerate(call.kwargs):
        if names.count(kw.name) > 1:  # (said once, at the second)
            if names.index(kw.name) < k == names.index(kw.name, names.index(kw.name) + 1):
                out.append(make("bad-argument", f"`{call.name}` is given `{kw.name}=` "
                                f"twice", kw.name_span))
            misplaced = misplaced or kw.name in params
            continue
        if kw.name not in keywords and kw.name in params:
            # (one the builder did not put in its place: that place is taken, or one
            # before it is empty)
            misplaced = True
            at = params.index(kw.name)
            if at < len(call.args):
                message = f"`{call.name}` is given `{kw.name}` twice: positionally and as " \
                          f"`{kw.name}=`"
            else:
                missing = ", ".join(f"`{p}`" for p in params[len(call.args):at])
                message = f"`{call.name}` is given `{kw.name}=` but not {missing} before it " \
                          f"(signature: {BUILTINS[call.name].signature})"
            out.append(make("bad-argument", message, kw.name_span))
        elif kw.name not in keywords:
            choices = (*params[len(call.args):], *keywords)
            valid = ", ".join(dict.fromkeys(choices)) if choices else "none"
            out.append(make("unknown-keyword", f"`{call.name}` has no keyword `{kw.name}` "
                            f"(keywords: {valid})", kw.name_span))
        elif kw.name == "axis" and call.name not in ("cross_entropy", "gather"):  # (their
            # own: an index of the first argument, consumed_axis.py)
            _check_axis(call, stmt, kw.value, out)
        elif kw.name in ("eps",) and not is_number(kw.value):
            out.append(make("bad-argument", f"`{kw.name}=` takes a number", kw.value.span))
        elif kw.name == "k" and not (is_whole(kw.value) and kw.value.value >= 1):
            out.append(make("bad-argument", "`k=` takes a whole number of at least 1 (how "
                            "many values each row keeps)", kw.value.span))
        elif kw.name == "steps" and not (is_whole(kw.value) and kw.value.value >= 1):
            out.append(make("bad-argument", "`steps=` takes a whole number of at least 1",
                            kw.value.span))
        elif kw.name == "per" and not (isinstance(kw.value, ir.Number)
                                       and kw.value.text in SCHEDULE_PER):
            out.append(make("bad-argument", f"`per=` is {' or '.join(SCHEDULE_PER)}",
                            kw.value.span))
    return misplaced


def _check_axis(call: ir.Call, stmt: ir.Statement, value: ir.Expr,
                out: list[Diagnostic]) -> None:
    """`axis=` names an index of the left-hand side (in a sink, of the call's
    arguments); `axis=0` was named by the builder when that position has one."""
    if isinstance(stmt, ir.Sink):
        names = {v.name for a in call.args for r in ir.refs(a) for i in r.indices or ()
                 for v in ir.index_vars(i)} | {n for a in call.args for r in ir.refs(a)
                                               for n in ir.lhs_axis_names(r.indices or ())}
        where = "the arguments"
    else:
        names = _lhs_vars(stmt)
        where = "the left-hand side"
    if isinstance(value, ir.Ref) and value.indices is None and value.name in names:
        return
    listed = ", ".join(sorted(names)) or "there is none"
    if isinstance(value, ir.Number):
        message = (f"`axis={value.text}` counts the indices of {where} from 0, and there is "
                   f"no index at position {value.text} ({listed})")
    else:
        given = value.name if isinstance(value, ir.Ref) and value.indices is None else None
        message = (f"`axis={given}` is not an index of {where}; `axis=` names one of "
                   f"them ({listed})" if given else f"`axis=` names an index of {where} "
                   f"({listed})")
    out.append(make("bad-argument", message, value.span))


def _check_arguments(call: ir.Call, stmt: ir.Statement, given: Container[str],
                     var_names: Container[str], tensors: Collection[str],
                     out: list[Diagnostic]) -> None:
    """What some builtins require of their arguments."""
    if call.name in INDEX_ARGUMENT_BUILTINS:
        arg = call.args[0]
        if not (isinstance(arg, ir.Ref) and arg.indices is None and arg.name in var_names
                and arg.name not in tensors):
            out.append(make("bad-argument", f"`{call.name}` takes an index variable of this "
                            f"equation, like `{call.name}(i)`", arg.span))
    elif call.name == "causal_mask":
        if not (is_whole(call.args[0]) and call.args[0].value >= 1):
            out.append(make("bad-argument", "`causal_mask` takes a whole number of at least "
                            "1, the sequence length", call.args[0].span))
        elif isinstance(stmt, ir.Equation) \
                and len(axes := ir.lhs_axis_names(stmt.lhs.indices or ())) < 2:
            out.append(make("bad-argument", f"`causal_mask` is n×n over the last two axes of "
                            f"the left-hand side, and this one has {len(axes)}: "
                            f"`M[q,k] = causal_mask(4)`", call.span))
    elif call.name == "const":
        shape = literal_shape(call.args[0])
        if shape is None:
            out.append(make("bad-argument", "`const` takes a number or a rectangular list of "
                            "numbers", call.args[0].span))
        elif isinstance(stmt, ir.Equation) and stmt.lhs.indices is not None \
                and stmt.rhs is call and len(shape) != len(stmt.lhs.indices):
            out.append(make("bad-argument", f"this literal has {len(shape)} axes but the "
                            f"left-hand side has {len(stmt.lhs.indices)}", call.args[0].span))
        elif isinstance(stmt, ir.Equation) and stmt.rhs is not call:
            _check_inner_literal(stmt, call, shape, out)
        elif isinstance(stmt, ir.Equation):
            for index, extent in zip(stmt.lhs.indices or (), shape):
                if isinstance(index, ir.IndexConst) and extent != 1:
                    out.append(make("bad-argument", f"the left-hand side selects one position "
                                    f"(`{index.value}`) where this literal has {extent}",
                                    call.args[0].span))
                    break
    elif call.name == "topk" and isinstance(stmt, ir.Equation) \
            and not ir.lhs_axis_names(stmt.lhs.indices or ()) and _unranked(call, stmt):
        out.append(make("bad-argument", "`topk` ranks along the last axis of the left-hand "
                        "side, and this one has none: `Top[b,r] = topk(S[b,r], k=2)`", call.span))
    elif call.name == "topk" and isinstance(stmt, ir.Equation) \
            and (axes := ir.lhs_axis_names(stmt.lhs.indices or ())) \
            and not _mentions(call.args[0], axes[-1]):
        out.append(make("bad-argument", f"`topk` ranks along the last axis of the left-hand "
                        f"side, `{axes[-1]}`, which its argument does not have",
                        call.args[0].span))
    elif call.name == "concat" and "axis" in given:
        axis = next(kw.value for kw in call.kwargs if kw.name == "axis")
        name = axis.name if isinstance(axis, ir.Ref) else None
        for arg in call.args:
            if name and not any(name in {v.name for i in r.indices or ()
                                         for v in ir.index_vars(i)}
                                or ir.read_along(r.indices or (), name) for r in ir.refs(arg)):
                out.append(make("bad-argument", f"every argument of concat needs the axis "
                                f"`{name}` it joins along", arg.span))
    elif call.name == "select":
        _check_branches(call, stmt, out)
    elif call.name == "cross_entropy":
        check_cross_entropy(call, _lhs_vars(stmt), out)
    elif call.name == "gather":
        check_gather(call, stmt, _lhs_vars(stmt), out)
    elif call.name in SCHEDULE_BUILTINS:
        _check_schedule(call, stmt, out)
    elif call.name in NORMALISING_BUILTINS and "axis" in given:
        _check_dot_and_axis(call, stmt, out)
    elif call.name in NORMALISING_BUILTINS:
        if isinstance(stmt, ir.Equation) and not ir.lhs_axis_names(stmt.lhs.indices or ()):
            out.append(make("bad-argument", f"`{call.name}` normalises along an axis, but the "
                            f"left-hand side has none", call.span))
        elif isinstance(stmt, ir.Sink):  # (the run said: "need an axis")
            out.append(make("bad-argument", f"`{call.name}` normalises along an axis: in a "
                            f"sink, which has no left-hand side, name it with `axis=`",
                            call.span))


def check_reduce(node: ir.Reduce, stmt: ir.Statement, out: list[Diagnostic]) -> None:
    """`reduce(op, j) body`: `op` is a projection, and `j` is not on the left-hand
    side (`Y[i] = reduce(sum, i) A[i,j]` would project the index it keeps)."""
    if node.op not in REDUCE_OPS:
        out.append(make("bad-argument", f"`{node.op}` is not a projection; use one of "
                        f"{', '.join(REDUCE_OPS)}", node.op_span))
    kept = _lhs_vars(stmt)
    for index in node.indices:
        if index.name in kept:
            out.append(make("bad-argument", f"`reduce` projects `{index.name}`, but `"
                            f"{index.name}` is on the left-hand side, which keeps it: "
                            f"drop it from the left-hand side or from the `reduce`",
                            index.span))


def _check_schedule(call: ir.Call, stmt: ir.Statement, out: list[Diagnostic]) -> None:
    """`T = linear(1.0, 0.1, steps=10)`: numbers, the whole right-hand side of a
    scalar tensor's only equation (run/schedules.py gives its value)."""
    if not (isinstance(stmt, ir.Equation) and stmt.rhs is call and stmt.op == "="
            and stmt.lhs.indices is None):
        out.append(make("bad-argument", f"a schedule is the whole right-hand side of a scalar "
                        f"tensor: `T = {call.name}(1.0, 0.1, steps=10)`, then `sig(x, T)`",
                        call.span))
        return
    for arg in call.args:
        if not is_number(arg) or (isinstance(arg, ir.Number) and arg.text in SCHEDULE_PER):
            out.append(make("bad-argument", f"`{call.name}` takes numbers: the start and the "
                            f"end", arg.span))
            return
        number = arg.operand if isinstance(arg, ir.Neg) else arg
        if isinstance(number, ir.Number) and not math.isfinite(number.value):
            out.append(make("bad-argument", f"`{call.name}` goes from a finite start to a "
                            f"finite end, not {number.text}", arg.span))
            return
        if call.name == "exponential" and not (isinstance(arg, ir.Number) and arg.value > 0):
            out.append(make("bad-argument", "`exponential` goes from start to end by a "
                            "constant factor: both must be above 0", arg.span))
            return


def _check_branches(call: ir.Call, stmt: ir.Statement, out: list[Diagnostic]) -> None:
    """`select(c, a, b)` (also `case`'s arms and `when`) is elementwise: a branch
    without an index the other keeps broadcasts along it by name (LANGUAGE.md §4),
    where the index is on the left-hand side.  An index kept by one branch only
    and summed outside the choice would count the other branch's value once per
    value of it: that is refused.  The indices a branch keeps are those the scope
    rule does not project inside it (met elsewhere in the statement too)."""
    everywhere = index_var_counts([*(ir.defined_refs(stmt)), *ir.used_exprs(stmt)])
    kept = []
    for branch in call.args[1:]:
        inside = index_var_counts([branch])
        kept.append([v for v in inside if everywhere[v] > inside[v]])
    if not (kept[0] and kept[1]) or set(kept[0]) == set(kept[1]):
        return
    lhs = _lhs_vars(stmt)
    summed = sorted((set(kept[0]) ^ set(kept[1])) - lhs)
    if summed:
        out.append(make("select-shapes", f"the two branches of this choice have different "
                        f"indices, [{','.join(kept[0])}] and [{','.join(kept[1])}], and "
                        f"`{summed[0]}` is summed outside it: the branch without it would "
                        f"count once per value of `{summed[0]}`; write the branches over the "
                        f"same indices, or keep `{summed[0]}` on the left-hand side",
                        call.span))


def _check_dot_and_axis(call: ir.Call, stmt: ir.Statement, out: list[Diagnostic]) -> None:
    """`Y[i.,j] = softmax(X[i,j], axis=j)`: the dot wins (LANGUAGE.md §10), so an
    `axis=` naming another index does nothing: a warning."""
    axis = next(kw.value for kw in call.kwargs if kw.name == "axis")
    dot = next((i for i in (stmt.lhs.indices or ()) if isinstance(i, ir.IndexVar) and i.dotted),
               None) if isinstance(stmt, ir.Equation) else None
    if dot is not None and isinstance(axis, ir.Ref) and axis.name != dot.name:
        out.append(make("dotted-axis", f"`{call.name}` works along the dotted axis `{dot.name}`"
                        f"; its `axis=` (`{axis.name}`) has no effect", axis.span,
                        severity=Severity.WARNING))


def _check_inner_literal(stmt: ir.Equation, call: ir.Call, shape: tuple[int, ...],
                         out: list[Diagnostic]) -> None:
    """A `const` inside a right-hand side binds its axes to the LHS's in order (as
    the run does, run.interpret.builtin_calls): one with more axes than the LHS has
    (`S = 2 const([1,2])`) has nothing to bind to."""
    indices = stmt.lhs.indices or ()
    shape = bound_shape(indices, shape)
    axes = len(ir.lhs_axis_names(indices))
    if len(shape) > axes:
        out.append(make("bad-argument", f"this literal has {len(shape)} "
                        f"{'axis' if len(shape) == 1 else 'axes'} but the left-hand side has "
                        f"{axes} for them to bind to", call.args[0].span))


def _unranked(call: ir.Call, stmt: ir.Equation) -> bool:
    """Under a left-hand side without axes, whether `topk`'s argument has no axis of
    its own to rank along: one is kept only by a `reduce` outside the call that names
    it (`S = reduce(sum, i) topk(X[i], k=2)`); summed inside (`S = topk(X[i], k=2)`)
    there is none, and read outside too (`S = X[i] topk(X[i], k=2)`) it would have
    both the row's extent and k."""
    inside = {v.name for node in ir.walk(call.args[0]) if isinstance(node, ir.Ref)
              for i in node.indices or () for v in ir.index_vars(i)}
    refs: set[str] = set()
    reduced: set[str] = set()
    stack: list = [stmt.rhs]
    while stack:
        node = stack.pop()
        if node is call:
            continue
        if isinstance(node, ir.Ref):
            refs.update(v.name for i in node.indices or () for v in ir.index_vars(i))
        elif isinstance(node, ir.Reduce):
            reduced.update(v.name for v in node.indices)
        stack += ir.children(node)
    return not inside & reduced or bool(inside & refs)


def _mentions(expr: ir.Expr, axis: str) -> bool:
    """Whether a reference in `expr` has the index `axis` (a slice's anonymous name
    too), or `expr` uses it as a value."""
    return any(isinstance(node, ir.Ref) and (node.name == axis and node.indices is None or any(
        v.name == axis for i in node.indices or () for v in ir.index_vars(i))
        or ir.read_along(node.indices or (), axis)) for node in ir.walk(expr))


def _lhs_vars(stmt: ir.Statement) -> set[str]:
    if isinstance(stmt, ir.Equation):  # a slice's anonymous name too (`axis=0` at `:`)
        indices = stmt.lhs.indices or ()
        return {v.name for i in indices for v in ir.index_vars(i)} \
            | set(ir.lhs_axis_names(indices))
    return set()
