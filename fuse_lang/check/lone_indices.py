"""Indices summed where they are alone (LANGUAGE.md §5): an ML user's slip that
the projection rule would otherwise compute without a word.

An index that occurs once in a numeric equation and is not on its left-hand side
is summed in the innermost scope that holds it.  Where that is a whole
right-hand side (`S[o] = P[b,o]`) it is a deliberate projection.  Where it is
one term of a sum (`W1[f,d] X[b,d] + B1[g]`: `g` a typo for `f`) and its
reference lacks a left-hand-side index of the same extent, it adds the sum of
the tensor to every element, and where its reference shares no index
with the rest of its product it multiplies everything by such a sum: PyTorch
would have raised a shape error; Fuse warns (`lone-index`), with a fix to the
left-hand-side index of the same extent and one that writes the sum out
(`reduce(sum, g)`), which says it is meant and is then clean.

A lone index on the axis a `softmax` normalises (`S[b,h,t,t'] V[b,h,t,k]`: the
key `t'` never meets the value tensor) sums to 1 and leaves the attention off:
a hint (`normalised-sum`), with a fix to the other factor's close index.
Boolean equations (Datalog's projections, `exists`) are not looked at.
"""
from __future__ import annotations

import dataclasses
from difflib import SequenceMatcher
from typing import Any, Callable, Container, NamedTuple, Sequence

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from ..front.functions import Inlined
from ..front.span import Span, shifted
from ..front.wildcards import is_wildcard
from .domains import Domains
from .statement_tables import statement_tables
from .statements import StatementChecks
from .symbols import IndexRole

TERM, FACTOR, PRODUCT, DIVISOR = "term", "factor", "product", "divisor"


class LoneIndex(NamedTuple):
    """One index summed alone, as its statement has it (its own spans)."""

    name: str
    span: Span  # its occurrence
    ref: ir.Ref  # the reference holding it
    position: int  # its axis in that reference
    kind: str  # TERM: in one term of a sum; FACTOR: in a factor sharing no index; PRODUCT
    wrapped: Span  # what `reduce(sum, name)` would hold
    outputs: tuple[str, ...]  # the left-hand side's indices the reference lacks
    close: tuple[tuple[str, str, Span], ...]  # other factors' indices close to its name
    shared: bool = False  # in a product whose other factors share an index of its reference
    # summed over its whole scope, nothing beside it reading an index: a term of its
    # tensor's sum where another equation adds to the tensor (`H[n,f] += B1[g]`)
    whole: bool = False
    lhs: str = ""  # the equation's tensor, where `whole`


def find_lone_indices(stmt: ir.Statement, roles: Sequence[IndexRole]) -> list[LoneIndex]:
    """The statement's lone summed indices (statement-local: remembered with it)."""
    if type(stmt) is not ir.Equation or stmt.lhs.paren:
        return []
    lone = [r for r in roles if r.role == "projected" and r.op == "sum"
            and len(r.occurrences) == 1 and r.occurrences[0].tensor is not None
            and r.occurrences[0].form in ("var", "virtual") and not is_wildcard(r.name)
            and not (r.scope is not None and r.scope.kind == "reduce")]
    if not lone:
        return []
    once = {r.name for r in lone}
    lhs_names = [v.name for i in stmt.lhs.indices or () for v in ir.index_vars(i)]
    plain = all(type(i) is ir.IndexVar for i in stmt.lhs.indices or ())
    found = []
    paths = _ref_paths(stmt.rhs) if len(lone) > 1 else {}
    for role in lone:
        occurrence = role.occurrences[0]
        # (a lone index is a whole index of its reference: found by its span)
        path = paths.get(occurrence.span) or _path_to(stmt.rhs, occurrence.span)
        if path is None:
            continue
        found_here = _classify(role.name, occurrence.span, path, once, lhs_names)
        if found_here is not None and found_here.whole:
            # (a start `X[i,*t]`, a position `X[0,d]`: not a term of every element's sum)
            found_here = found_here._replace(lhs=stmt.lhs.name) if plain else None
        if found_here is not None:
            found.append(found_here)
    return found


def _ref_paths(expr: ir.Expr) -> dict[Span, list[ir.Expr]]:
    """Each index span of the references in `expr` (top level: a reference's
    own indices) -> the nodes from `expr` down to that reference: one walk for
    all of a statement's lone indices (a sum of thousands of terms is walked once,
    not once per index)."""
    out: dict[Span, list[ir.Expr]] = {}
    stack: list[tuple[ir.Expr, list[ir.Expr]]] = [(expr, [expr])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, ir.Ref):
            for index in node.indices or ():
                out.setdefault(index.span, path)
            continue
        stack.extend((child, path + [child]) for child in ir.children(node))
    return out


def _path_to(expr: ir.Expr, span: Span) -> list[ir.Expr] | None:
    """The nodes from `expr` down to the reference holding `span`, both included."""
    path = [expr]
    while not isinstance(path[-1], ir.Ref):
        inside = [c for c in ir.children(path[-1])
                  if c.span.start <= span.start and span.end <= c.span.end]
        if not inside:
            return None
        path.append(inside[0])
    return path


def _classify(name: str, span: Span, path: list[ir.Expr], once: set[str],
              lhs_names: list[str]) -> LoneIndex | None:
    ref = path[-1]
    assert isinstance(ref, ir.Ref)
    # the part of the path inside the index's scope: below the last call or reduce
    start = max((k + 1 for k, node in enumerate(path[:-1])
                 if isinstance(node, (ir.Call, ir.Reduce))), default=0)
    scope_path = path[start:]
    position = next((p for p, index in enumerate(ref.indices or ())
                     if index.span.start <= span.start and span.end <= index.span.end), None)
    if position is None:  # (a `fn` call's written-out equation: every node has the
        return None       # call's span, so the span may find another reference)
    names_here = {v.name for i in ref.indices or () for v in ir.index_vars(i)}
    outputs = tuple(n for n in dict.fromkeys(lhs_names) if n not in names_here)
    parent = scope_path[-2] if len(scope_path) > 1 else None
    kind = None
    wrapped = ref.span
    close: tuple[tuple[str, str, Span], ...] = ()
    # the other factors of its product read an index (`L = CE[n] / 4` scales a sum)
    joined = isinstance(parent, ir.Product) and any(
        other.indices for factor in parent.factors if factor is not ref
        for other in ir.refs(factor))
    if joined and _divides(parent, ref):  # `E[b,v] / E[b,v']`: the quotient is summed
        kind = DIVISOR
    elif joined:
        if names_here <= once:  # shares no index with anything: a scalar factor
            kind = FACTOR
        else:
            close = _close_in_other_factors(name, parent, ref)
    if kind is None:
        for k in range(len(scope_path) - 2, -1, -1):
            node = scope_path[k]
            if isinstance(node, ir.Sum) and len(node.terms) > 1:
                kind, wrapped = TERM, scope_path[k + 1].span
                break
    whole = kind is None and not joined
    if kind is None and isinstance(parent, ir.Product) and len(parent.factors) > 1:
        kind = PRODUCT  # only a hint where the tensor is normalised along it
    if whole:
        wrapped = scope_path[0].span
    if kind is None and not whole:
        return None
    return LoneIndex(name, span, ref, position, kind or PRODUCT, wrapped, outputs, close,
                     joined and kind not in (FACTOR, DIVISOR), whole)


def _divides(product: ir.Product, ref: ir.Ref) -> bool:
    """Whether `ref` is a divisor of `product` (a factor after `/`)."""
    return any(factor is ref and op == "/" for factor, op in zip(product.factors, product.ops))


def _close_in_other_factors(name: str, product: ir.Product, ref: ir.Ref
                            ) -> tuple[tuple[str, str, Span], ...]:
    """The indices of the product's other references one slip from `name` (`t` for
    `t'`): where the lone index was meant to meet them."""
    found = []
    stem = name.rstrip("'")
    for factor in product.factors:
        if factor is ref:
            continue
        for other in ir.refs(factor):
            for index in other.indices or ():
                if type(index) is ir.IndexVar and index.name != name \
                        and index.name.rstrip("'") == stem:
                    found.append((f"`{other.name}`'s `{index.name}`", index.name, index.span))
    return tuple(found)


def report_lone_indices(found: Sequence[tuple[Sequence[LoneIndex], dict[str, tuple]]],
                        domains: Domains, definitions: Callable[[str], list[ir.Statement]],
                        known: Container[str], out: list[Diagnostic]) -> None:
    """The diagnostics of the lone indices found (where the text has them), each
    statement's with its variables' domain keys; `definitions(T)`: T's equations;
    `known`: the tensors defined (an undefined one has its own error).  An index
    `likely-typo-index` names is told there only (a join meant: its fix, not this one)."""
    typos = _typo_spans(out) if found else set()
    clashes = _clashes(out) if found else []
    for lones, keys in found:
        for lone in lones:
            if lone.ref.name not in known or lone.span in typos:
                continue
            diag = _diagnostic(lone, keys, domains, definitions)
            if diag is not None:
                _tell(diag, out, clashes)


def _diagnostic(lone: LoneIndex, keys: dict[str, tuple], domains: Domains,
                definitions: Callable[[str], list[ir.Statement]]) -> Diagnostic | None:
    name, tensor = lone.name, lone.ref.name
    summed = make_reduce_fix(name, lone.wrapped)
    # a softmax summed along its axis in a product (`S[t,t'] V[t,k]`, a term of a sum
    # or not): the attention that is off, not a slip of the left-hand side's index
    normaliser = _normalised_along(tensor, lone.position, definitions) if lone.shared else None
    if lone.kind == DIVISOR:
        return make("lone-index", f"`{name}` occurs only here, in a divisor, and not on the "
                    f"left-hand side, so the whole quotient is summed over `{name}`, not "
                    f"the divisor: to divide by the sum of `{tensor}` over `{name}`, write "
                    f"`reduce(sum, {name})` around it", lone.span, fixes=(summed,))
    if lone.whole and _adds_to_others(lone.lhs, definitions):
        lone = lone._replace(kind=TERM)  # `H[n,f] += B1[g]`: one term of `H`'s sum
    if lone.kind == PRODUCT or normaliser is not None:
        if normaliser is None:
            return None
        fixes = tuple(Fix(f"Change {where} to `{name}`", (TextEdit(span, name),))
                      for where, _, span in lone.close[:1])
        return make("normalised-sum", f"`{tensor}` is normalised along `{name}` ({normaliser}), "
                    f"and `{name}` occurs only here: summing it gives 1, so `{name}` never "
                    f"meets the other factors (did the other factor mean `{name}`?)",
                    lone.span, fixes=fixes)
    best = _closest_output(lone, keys, domains)
    if lone.kind == TERM and best is None:
        # the term reads every left-hand-side index it could (`A[i,j0] + A[i,j1]`: each
        # term sums a row), or none of the same extent: a deliberate sum, not a slip
        return None
    rename = (Fix(f"Change `{name}` to `{best}`", (TextEdit(lone.span, best),)),) \
        if best is not None else ()
    meant = f"; did you mean `{best}`?" if best is not None else \
        f"; write `reduce(sum, {name})` if the sum is meant"
    if lone.kind == FACTOR:
        what = (f"`{tensor}[…]` shares no index with the rest of its product, so `{name}` is "
                f"summed on its own: everything is multiplied by the sum of `{tensor}` over "
                f"`{name}`")
    elif lone.whole:
        what = (f"`{name}` occurs only here and not on the left-hand side, so it is summed "
                f"over this equation, which adds to `{lone.lhs}`'s other equations: the sum "
                f"of `{tensor}` over `{name}` is added to every element")
    else:
        what = (f"`{name}` occurs only here and not on the left-hand side, so it is summed "
                f"within this term alone: the sum of `{tensor}` over `{name}` is added to every "
                f"element")
    return make("lone-index", what + meant, lone.span, fixes=rename + (summed,))


def _clashes(out: list[Diagnostic]) -> list[int]:
    """The places in `out` of its `extent-conflict` errors."""
    return [k for k, diag in enumerate(out) if diag.code == "extent-conflict"]


def _tell(diag: Diagnostic, out: list[Diagnostic], clashes: list[int]) -> None:
    """`diag` into `out`, unless an `extent-conflict` (at `out[k]`, k in `clashes`)
    is told at its reference: one cause, one error (`B[d]` of axis `f`, with `axis d`
    declared: the lone `d` is the clash), which takes the index's rename fix."""
    for k in clashes:
        other = out[k]
        if other.span.start <= diag.span.start and diag.span.end <= other.span.end:
            renames = tuple(f for f in diag.fixes if f.title.startswith("Change "))
            out[k] = dataclasses.replace(other, fixes=other.fixes + renames)
            return
    out.append(diag)


def _adds_to_others(tensor: str, definitions: Callable[[str], list[ir.Statement]]) -> bool:
    """Whether `tensor` has several equations that add up (LANGUAGE.md §6): each
    then one term of its sum, its left-hand side a plain one (not a start, a position)."""
    equations = [stmt for stmt in definitions(tensor) if type(stmt) is ir.Equation]
    return len(equations) > 1 and all(
        stmt.op in ("=", "+=") and all(type(i) is ir.IndexVar for i in stmt.lhs.indices or ())
        for stmt in equations)


def _typo_spans(diags: list[Diagnostic]) -> set[Span]:
    """The indices of the pairs `likely-typo-index` reports (the slip and the other)."""
    return {span for d in diags if d.code == "likely-typo-index"
            for span in (d.span, *(r.span for r in d.related))}


def make_reduce_fix(name: str, wrapped: Span) -> Fix:
    """The fix that writes the sum out: `(reduce(sum, g) B1[g])`."""
    return Fix(f"Sum over `{name}` explicitly (reduce)",
               (TextEdit(Span(wrapped.start, wrapped.start), f"(reduce(sum, {name}) "),
                TextEdit(Span(wrapped.end, wrapped.end), ")")))


def _closest_output(lone: LoneIndex, keys: dict[str, tuple], domains: Domains) -> str | None:
    """The left-hand side's index the slip most likely meant: of the same extent as
    the lone index (when both are known), then the closest name, then the nearest
    first letter."""
    key = keys.get(lone.name)
    extent = domains.extent(key) if key is not None else None
    candidates = []
    for other in lone.outputs:
        other_key = keys.get(other)
        other_extent = domains.extent(other_key) if other_key is not None else None
        if extent is not None and other_extent is not None and other_extent != extent:
            continue
        candidates.append(other)
    if not candidates:
        return None
    # (of names equally close, the nearest letter: `g` is a slip for `f` more than `n`)
    return max(candidates, key=lambda c: (SequenceMatcher(None, lone.name, c).ratio(),
                                          -abs(ord(lone.name[0]) - ord(c[0]))))


def _normalised_along(tensor: str, position: int,
                      definitions: Callable[[str], list[ir.Statement]]) -> str | None:
    """`softmax` when every equation of `tensor` is a softmax along axis `position`."""
    equations = definitions(tensor)
    if not equations:
        return None
    for stmt in equations:
        if type(stmt) is not ir.Equation or not isinstance(stmt.rhs, ir.Call) \
                or stmt.rhs.name != "softmax" or _along(stmt.lhs, stmt.rhs) != position:
            return None
    return "softmax"


def _along(lhs: ir.Ref, call: ir.Call) -> int | None:
    """The position of the left-hand side's axis a softmax normalises: the dotted one,
    else the one `axis=` names, else the last (None: none the checker can tell), as
    the run reads it (run/interpret/builtin_calls.py)."""
    names = [i.name if type(i) is ir.IndexVar else None for i in lhs.indices or ()]
    dotted = [p for p, i in enumerate(lhs.indices or ()) if type(i) is ir.IndexVar and i.dotted]
    axis = next((kw.value for kw in call.kwargs if kw.name == "axis"), None)
    if dotted:
        return dotted[0]
    if axis is None:  # (a virtual index is no axis of the tensor: `X[i,*t+1]` is along i)
        real = [p for p, i in enumerate(lhs.indices or ()) if type(i) is not ir.IndexVirtual]
        return real[-1] if real else None
    if isinstance(axis, ir.Ref) and axis.indices is None and axis.name in names:
        return names.index(axis.name)
    return None


def program_lone_indices(checks: StatementChecks, inlined: Container[int] = ()
                         ) -> list[tuple[Sequence[LoneIndex], dict[str, tuple]]]:
    """Each numeric equation's lone summed indices where the text has them, with its
    variables' domain keys; found once per statement text in an editor's analyses
    (StatementChecks.remembered).  `inlined`: the numbers of the equations written
    out from a `fn` body, whose indices all have the call's place (their lone
    indices are told at the body: report_body_lone_indices)."""
    memo = checks.remembered("lone indices") if checks.remember else None
    out = []
    for k, local in checks.by_number.items():
        stmt = local.stmt
        if type(stmt) is not ir.Equation or stmt.lhs.paren or k in inlined:
            continue
        own = local.own

        def find(stmt: ir.Statement = stmt, local: Any = local, k: int = k) -> list[LoneIndex]:
            # the roles in the statement's own spans, read only when not remembered
            return find_lone_indices(stmt, local.roles(k, local.own))

        if memo is not None:
            lones = memo(k, stmt, find)
        else:
            lones = find()
            now = checks.placed.get(k, 0)
            if lones and now != own:
                lones = shifted(lones, now - own)
        if lones:
            out.append((lones, dict(zip(local.role_names, local.var_keys))))
    return out


def report_body_lone_indices(inlined: Inlined, checks: StatementChecks, domains: Domains,
                             definitions: Callable[[str], list[ir.Statement]],
                             known: Container[str], size: int, out: list[Diagnostic]) -> None:
    """`lone-index` and `normalised-sum` of the equations of this text's functions
    (`size`: its length; an imported file's warnings are its own), told once at the
    body's equation, where the fixes edit it: read from the body's text, the extents
    those of its first call's copy (an uncalled body's are not known)."""
    typos = _typo_spans(out)
    clashes = _clashes(out)
    first: dict[Span, int] = {}
    for k in sorted(inlined.origins):
        first.setdefault(inlined.origins[k].body, k)
    for fn in inlined.functions.values():
        if fn.span.end > size:
            continue
        own = {p.name for p in fn.params} | {eq.lhs.name for eq in fn.body}

        def defined(name: str, fn: ir.FnDef = fn) -> list[ir.Statement]:
            local = [eq for eq in fn.body if eq.lhs.name == name]
            params = {p.name for p in fn.params}
            return local if local or name in params else definitions(name)

        for eq in fn.body:
            if eq.lhs.paren:
                continue
            keys: dict[str, tuple] = {}
            local = checks.by_number.get(first.get(eq.span, -1))
            if local is not None:  # `d@head.1` (an axis-declared name) is the body's `d`
                for name, key in zip(local.role_names, local.var_keys):
                    keys.setdefault(name.split("@")[0] + name[len(name.rstrip("'")):], key)
            for lone in find_lone_indices(eq, statement_tables(0, eq, {}).roles):
                if (lone.ref.name in own or lone.ref.name in known) and lone.span not in typos:
                    diag = _diagnostic(lone, keys, domains, defined)
                    if diag is not None:
                        _tell(diag, out, clashes)
