"""The Datalog checks of the rules (LANGUAGE.md §13, docs/language.md "Datalog in Fuse").

- Safety: every named variable of a negated atom (not `_`, which means "any value"),
  and every variable of a Boolean rule's head, is bound by a positive atom of the
  same rule (`unsafe-negation` with a fix writing `_`, `unbound-head-variable`), as
  in Soufflé; a variable joined or compared inside a negated group
  (`not (V(y) (y < x))`) is that group's own.
- Stratification: a relation may not depend on itself through negation
  (`negation-cycle`, naming the cycle).
- Empty columns: a column of relations that no constant reaches is empty
  (extent 0), so a recursive relation with no base case answers no tuples.
- `monotone_rules`: whether a recursive group's rules only join and union its
  members (anything else, `not` included, reads only lower strata); then
  semi-naive evaluation is exact.  The `recursion` diagnostic and the fixpoint
  (run/fixpoint.py) both ask it, so what is said is what runs.

A negated atom is `not P(...)` (the builtin call `not`), or, for stratification,
a relation read under a subtraction (`1 - step(P(x))`, the older spelling).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Container, Iterable, Iterator, Sequence

from ..front import ir
from ..front.builtins import BUILTINS, COMPARISONS
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from ..front.wildcards import is_wildcard
from ..io.cells import value_text
from ..io.relation_files import RELATION_SUFFIXES
from .domains import Domains, Evidence
from .symbols import TensorSymbol

_NONMONOTONE = (ir.Call, ir.Neg, ir.Power, ir.Reduce)


def monotone_rules(members: set[str], equations: Iterable[ir.Statement]) -> bool:
    """Whether the rules only join and union the group's members: every call,
    negation, power, reduce, subtraction or division mentions no member (it is
    a constant of the group's fixpoint, computed in a lower stratum)."""
    for stmt in equations:
        if not isinstance(stmt, ir.Equation) or stmt.op not in ("=", "+="):
            return False
        for node in ir.walk(stmt.rhs):
            if isinstance(node, _NONMONOTONE) or (
                    isinstance(node, ir.Sum) and "-" in node.signs) or (
                    isinstance(node, ir.Product) and "/" in node.ops):
                if any(ref.name in members for ref in ir.refs(node)):
                    return False
    return True


def complemented(expr: ir.Expr, boolean: Callable[[str], bool]) -> ir.Expr | None:
    """What a factor written `1 - step(E)`, or `1 - R(...)` of a Boolean `R`, negates:
    `step(E)` or `R(...)`; such a factor is `not E` / `not R(...)` (a relation holds
    0/1, so `1 - R` is `1 - step(R)`), and runs as its anti-join.  None for anything
    else."""
    if type(expr) is not ir.Sum or len(expr.terms) != 2 or expr.signs != ("+", "-"):
        return None
    one, operand = expr.terms
    if not isinstance(one, ir.Number) or one.value != 1:
        return None
    if isinstance(operand, ir.Call) and operand.name == "step" and len(operand.args) == 1 \
            and not operand.kwargs:
        return operand
    if isinstance(operand, ir.Ref) and operand.indices is not None and boolean(operand.name):
        return operand
    return None


def negated_relation(factor: ir.Expr, boolean: Callable[[str], bool]) -> ir.Ref | None:
    """The relation a factor negates, `R(...)` of `not R(...)`, `1 - R(...)` or
    `1 - step(R(...))` (R Boolean); None for any other factor."""
    if isinstance(factor, ir.Call) and factor.name == "not" and len(factor.args) == 1:
        atom: ir.Expr | None = factor.args[0]
    else:
        atom = complemented(factor, boolean)
        if isinstance(atom, ir.Call):
            atom = atom.args[0]
    if isinstance(atom, ir.Ref) and atom.indices is not None and boolean(atom.name):
        return atom
    return None


# (statement number, the statement, what finds something of it) -> what it finds
# (things with spans): a memo of each statement's findings (the editor's
# Analyzer keeps them per statement, see StatementChecks.remembered)
StatementMemo = Callable[[int, ir.Statement, Callable[[], list[Any]]], Sequence[Any]]


def check_datalog(statements: tuple[ir.Statement, ...], tensors: dict[str, TensorSymbol],
                  groups: Iterable[tuple[str, ...]], recursive: frozenset[str],
                  deps: dict[str, list[str]], diags: list[Diagnostic],
                  remembered: Callable[[str], StatementMemo] | None = None) -> None:
    """Safety of each Boolean rule and stratification of the recursive groups.
    A rule's safety, and what it reads negated, depend only on its own text and
    on which of its bare names are tensors: `remembered(what)` gives a memo of
    what was found of each statement last time."""
    safety = remembered("safety") if remembered is not None else None
    for k, stmt in enumerate(statements):
        if isinstance(stmt, ir.Equation) and stmt.lhs.name in tensors \
                and tensors[stmt.lhs.name].boolean:
            if safety is None:
                _check_safety(stmt, tensors, diags)
            else:
                diags += safety(k, stmt, lambda stmt=stmt: _safety(stmt, tensors))
    negated = remembered("negated reads") if remembered is not None else None
    for group in groups:
        if recursive.isdisjoint(group):
            continue
        _check_stratified(statements, tensors, set(group), deps, diags, negated)


def close_empty_columns(domains: Domains, tensors: dict[str, TensorSymbol]) -> None:
    """A domain of relations' columns that nothing gives an extent (no constant,
    file or declaration reaches it) is empty: extent 0.  A domain that also holds
    an axis of a numeric tensor keeps its unknown extent (a warning elsewhere),
    unless a relation file's column is in it: the file's values are the domain's,
    and an empty file (or a `.txt` of no tokens) holds none."""
    read = {name for name, sym in tensors.items() if _reads_relation_file(sym)}
    columns = [(("axis", name, pos), sym) for name, sym in tensors.items()
               if sym.boolean or name in read for pos in range(sym.arity or 0)]
    if not columns:
        return
    empty: dict = {}  # root -> its first column's key and tensor
    for (key, sym), root in zip(columns, domains.roots_of([key for key, _ in columns])):
        if root not in empty and domains.root_extent(root) is None:
            empty[root] = (key, sym)
    if not empty:
        return
    filled = set(domains.roots_of([("axis", name, pos) for name in read
                                   for pos in range(tensors[name].arity or 0)]))
    for root in domains.roots_of([("axis", name, pos) for name, sym in tensors.items()
                                  if not sym.boolean for pos in range(sym.arity or 0)]):
        if root not in filled:  # (a numeric axis in it: not a relation's column alone)
            empty.pop(root, None)
    for key, sym in empty.values():
        domains.set_extent(key, Evidence(0, sym.first_name_span,
                                         "no constant reaches this column"))


def _reads_relation_file(sym: TensorSymbol) -> bool:
    """Whether a tensor's source is a file of values: a relation file on a Boolean
    tensor, or a `.txt` of tokens (on a numeric tensor too; not token ids)."""
    src = sym.source
    if src is None:
        return False
    path = src.path.value.lower()
    return path.endswith(".txt") or sym.boolean and path.endswith(RELATION_SUFFIXES)


# ----------------------------------------------------------------- safety


def terms(expr: ir.Expr) -> tuple[ir.Expr, ...]:
    return expr.terms if isinstance(expr, ir.Sum) else (expr,)


def _occurrences(expr: ir.Expr) -> Iterator[tuple[ir.IndexVar | ir.Ref, bool, ir.Call | None]]:
    """Each variable occurrence (an index, or a bare name used as a value) with
    whether it lies inside a `not`, and that `not` call."""
    stack: list[tuple[ir.Expr, ir.Call | None]] = [(expr, None)]
    while stack:
        node, within = stack.pop()
        if isinstance(node, ir.Ref):
            if node.indices is None:
                yield node, within is not None, within
            for index in node.indices or ():
                for var in ir.index_vars(index):
                    yield var, within is not None, within
            continue
        if isinstance(node, ir.Call) and node.name == "not" and within is None:
            stack.extend((child, node) for child in ir.children(node))
            continue
        if isinstance(node, ir.Call) and node.name in COMPARISONS:
            continue  # a comparison binds nothing (see _compared)
        stack.extend((child, within) for child in ir.children(node))


def _comparisons(term: ir.Expr) -> list[ir.Call]:
    """The comparisons of a term outside `not`."""
    out = []
    stack = [term]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Call) and node.name in COMPARISONS:
            out.append(node)
        elif not (isinstance(node, ir.Call) and node.name == "not"):
            stack.extend(ir.children(node))
    return out


def compared_variables(expr: ir.Expr, tensors: Container[str]) -> list[ir.Ref]:
    """The variables (lowercase bare names, no tensor) of a rule's comparisons
    outside `not`: one that no atom binds (`(x != w)`) is unsafe-comparison, and
    check.statements does not call it an undefined tensor."""
    return [n for term in terms(expr) for call in _comparisons(term) for n in ir.walk(call)
            if isinstance(n, ir.Ref) and n.indices is None and n.name not in tensors
            and (n.name[:1].islower() or n.name[:1] == "_")]


def _bare_vars(expr: ir.Expr, variables: set[str]) -> list[ir.Ref]:
    """The variables (bare names that are the rule's index variables) of an operand."""
    return [n for n in ir.walk(expr) if isinstance(n, ir.Ref) and n.indices is None
            and n.name in variables]


def _compared(term: ir.Expr, positive: set[str], variables: set[str],
              tensors: dict[str, TensorSymbol], diags: list[Diagnostic],
              unbindable: Container[str] = (), quiet: Container[str] = ()
              ) -> tuple[set[str], set[str]]:
    """The variables `v == expr` binds (expr's own variables bound), and those of a
    comparison that stay unbound, each reported once (`unsafe-comparison`).  `x == Ann`
    (a symbol constant) binds x as Soufflé's `x = "Ann"` does: check.unify puts Ann
    in x's column."""
    comparisons = _comparisons(term)
    bound = set(positive)
    from_tensors: dict[str, str] = {}  # `x == Zed` (a tensor): x -> Zed
    for _ in range(len(comparisons)):  # an assignment may use another one's variable
        for call in comparisons:
            if call.name != "==" or len(call.args) != 2:
                continue
            for target, other in (call.args, call.args[::-1]):
                if isinstance(target, ir.Ref) and target.indices is None \
                        and target.name in variables and target.name not in bound \
                        and target.name not in unbindable \
                        and all(v.name in bound for v in _bare_vars(other, variables)):
                    read = next((n.name for n in ir.walk(other) if type(n) is ir.Ref
                                 and n.name in tensors), None)
                    if read is None:
                        bound.add(target.name)
                    else:  # a tensor's value is known only when the program runs
                        from_tensors.setdefault(target.name, read)
    reported: set[str] = set()
    for call in comparisons:
        for arg in call.args:
            for var in _bare_vars(arg, variables):
                if var.name not in bound and var.name not in reported and var.name not in quiet:
                    reported.add(var.name)
                    diags.append(make("unsafe-comparison", _unbound_words(
                        var.name, call.name, from_tensors.get(var.name)), var.span))
    return bound - positive, reported


def _unbound_words(name: str, op: str, tensor: str | None) -> str:
    if tensor is not None:
        return (f"`{name} == ...` would give `{name}` a value computed from the tensor "
                f"`{tensor}`, known only when the program runs: a rule's `{name} == expr` "
                f"computes a column from the rule's variables and numbers, whose values are "
                f"fixed before the run (write the number, or join a relation that holds it)")
    return (f"`{name}` in the comparison `{op}` is bound by no positive atom of the rule: a "
            f"comparison only filters tuples (or, as `{name} == expr`, computes a value from "
            f"bound variables)")


def _safety(stmt: ir.Equation, tensors: dict[str, TensorSymbol]) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    _check_safety(stmt, tensors, found)
    return found


def _check_safety(stmt: ir.Equation, tensors: dict[str, TensorSymbol],
                  diags: list[Diagnostic]) -> None:
    head = [v for i in stmt.lhs.indices or () for v in ir.index_vars(i)]
    rule_terms = terms(stmt.rhs)
    plain = [_plain_atoms_vars(term) for term in rule_terms]
    if None not in plain:  # (most rules: atoms of variables, joined)
        for positive in plain:
            if positive:  # (else a constant right-hand side, as below)
                _unbound_head(stmt, head, positive, diags)
        return
    variables = {v.name for v in head} | {v.name for v, _, _ in _occurrences(stmt.rhs)}
    # a name only in comparisons (`(x != w)`, `(w == x + 1)`) is bound by nothing
    # (`==` computes only a variable of the head or an atom, which has a domain)
    only_compared = {n.name for n in compared_variables(stmt.rhs, tensors)} - variables
    variables |= only_compared
    for term in rule_terms:
        if any(isinstance(n, ir.Call) and n.name in BUILTINS and not BUILTINS[n.name].elementwise
               for n in ir.walk(term)):
            continue  # const(...), causal_mask(...) bind the head's axes themselves
        occurrences = list(_occurrences(term))
        positive = {v.name for v, negated, _ in occurrences if not negated}
        per_call: dict[int, tuple[ir.Call, list]] = {}
        for var, negated, call in occurrences:
            if negated and call is not None:
                per_call.setdefault(id(call), (call, []))[1].append(var)
        if not positive and not per_call:  # a constant right-hand side broadcasts (LANGUAGE.md
            if only_compared:  # §5); but `d` in `Y(j) = (Alice == d)` is bound by nothing
                _compared(term, {v.name for v in head}, variables, tensors, diags, only_compared)
            continue
        computed = _arithmetic_only(term, positive)  # `Q(x + y)`: y read, not bound
        positive -= set(computed)
        assigned, unsafe = _compared(term, positive, variables, tensors, diags, only_compared,
                                     quiet=computed)
        bound = positive | assigned
        for name, (var, atom) in computed.items():
            if name not in bound or name in assigned and all(v.name != name for v in head):
                diags.append(_unsafe_arithmetic(name, var, atom, name in bound))
                unsafe.add(name)  # (reported once: not again for `not` or the head)
        for name, (var, atom) in _arithmetic_only(term, positive, negated=True).items():
            if name in assigned and name not in unsafe and all(v.name != name for v in head):
                diags.append(_unsafe_arithmetic(name, var, atom, True))  # `not Q(y - 1)`
                unsafe.add(name)
        bound |= unsafe & set(computed)
        in_negation = set(unsafe)  # (reported once: as the comparison's, not the head's)
        everywhere = _counts(head, term)
        for call, vars_ in per_call.values():
            in_negation |= {var.name for var in vars_}
            inside = _counts([], call)
            for name in dict.fromkeys(var.name for var in vars_):
                if is_wildcard(name) or name in bound or name in tensors:
                    continue
                if inside[name] > 1 and inside[name] == everywhere[name]:
                    continue  # joined or compared inside the group: its own "there is"
                diags.append(_unsafe_negation(call, name, vars_, everywhere[name]))
        _unbound_head(stmt, head, bound | in_negation, diags)


def _arithmetic_only(term: ir.Expr, positive: set[str], negated: bool = False
                     ) -> dict[str, tuple[ir.IndexVar, ir.Ref]]:
    """The variables that positive atoms of a term read only in arithmetic
    (`Q(x + y)`, `V(n - 1)`, `V(n / 2)`), each with its first such occurrence and
    atom: arithmetic reads the value computed from bound variables and binds none
    (Soufflé: "ungrounded variable"), so such a variable is bound only by a plain
    position of another positive atom or by `v == expr`.  `negated`: those that
    negated atoms read in arithmetic (and no positive atom in a plain position)."""
    plain: set[str] = set()
    found: dict[str, tuple[ir.IndexVar, ir.Ref]] = {}
    stack = [(term, False)]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, ir.Call) and node.name in COMPARISONS:
            continue
        if isinstance(node, ir.Ref):
            for index in node.indices or ():
                if isinstance(index, ir.IndexVar) and not inside:
                    plain.add(index.name)
                elif isinstance(index, (ir.IndexShift, ir.IndexDiv)) and inside == negated:
                    for var in ir.index_vars(index):
                        found.setdefault(var.name, (var, node))
            continue
        inside = inside or isinstance(node, ir.Call) and node.name == "not"
        stack.extend((child, inside) for child in ir.children(node))
    if negated:
        return {name: at for name, at in found.items() if name not in plain}
    return {name: at for name, at in found.items()
            if name not in plain and name in positive and not is_wildcard(name)}


def _unsafe_arithmetic(name: str, var: ir.IndexVar, atom: ir.Ref, assigned: bool
                       ) -> Diagnostic:
    """`name` occurs in the rule's atoms only in arithmetic: bound by nothing, or
    computed by `==` (`Q(x + y) (y == 1)`) with no column of a head or an atom to
    hold the values it computes."""
    if assigned:
        return make(
            "unsafe-arithmetic",
            f"`{name}` is computed by `==` and read only in arithmetic (`{_atom_text(atom)}`):"
            f" no column of the head or of an atom holds the values it computes; write its "
            f"expression in the atom's arithmetic, or put `{name}` in the head", var.span)
    return make(
        "unsafe-arithmetic",
        f"`{name}` in `{_atom_text(atom)}` occurs only in arithmetic, which binds nothing "
        f"(Datalog's safety rule; Soufflé: \"ungrounded variable {name}\"): bind `{name}` "
        f"in a plain position of a positive atom of the rule, or compute it with "
        f"`{name} == expr` of bound variables", var.span)


def _plain_atoms_vars(term: ir.Expr) -> set[str] | None:
    """The variables of a term that is an atom or a product of atoms whose indices
    are all variables (`Reach(a,b) Edge(b,c)`), every one positive; None for any
    other term.  Such a term has no call, comparison or negation: what
    _check_safety finds of it is the head's variables it does not bind."""
    atoms = (term,) if type(term) is ir.Ref else term.factors if type(term) is ir.Product \
        else None
    if atoms is None:
        return None
    names: set[str] = set()
    IndexVar = ir.IndexVar
    for atom in atoms:
        if type(atom) is not ir.Ref or atom.indices is None:
            return None
        for index in atom.indices:
            if type(index) is not IndexVar:
                return None
            names.add(index.name)
    return names


def _unbound_head(stmt: ir.Equation, head: list[ir.IndexVar], bound: set[str],
                  diags: list[Diagnostic]) -> None:
    """`unbound-head-variable` for each of the head's variables not in `bound`."""
    for var in head:
        if var.name not in bound and is_wildcard(var.name):
            diags.append(make(  # (Soufflé: "underscore in head of rule")
                "unbound-head-variable",
                f"`_` (any value) cannot stand in the head of `{stmt.lhs.name}`: a rule's "
                f"head gives the value of each column it derives; write a variable of the "
                f"body, or a constant", var.span))
        elif var.name not in bound:
            diags.append(make(
                "unbound-head-variable",
                f"`{var.name}` of the head `{stmt.lhs.name}` is bound by no atom of "
                f"{'this term of ' if isinstance(stmt.rhs, ir.Sum) else ''}the rule: "
                f"every variable of a rule's head must occur in a positive atom of its "
                f"body", var.span))


def _counts(head: list[ir.IndexVar], expr: ir.Expr) -> dict[str, int]:
    """How often each name occurs in the head and the expression, comparisons and
    negated groups included."""
    counts: dict[str, int] = {}
    for var in head:
        counts[var.name] = counts.get(var.name, 0) + 1
    for node in ir.walk(expr):
        if isinstance(node, ir.Ref):
            names = [node.name] if node.indices is None else \
                [v.name for index in node.indices for v in ir.index_vars(index)]
            for name in names:
                counts[name] = counts.get(name, 0) + 1
    return counts


def _unsafe_negation(call: ir.Call, name: str, vars_: list, everywhere: int) -> Diagnostic:
    """`name` of the negated atom in `call` is bound by no positive atom (Soufflé's
    "ungrounded variable").  The fix writes `_` for it when that atom is its only
    place: then `_` says what the rule used to read as "any" (each `_` is a
    variable of its own: front/wildcards.py)."""
    own = [var for var in vars_ if var.name == name]
    atom = _atom_of(call, own[0])
    shown = _atom_text(atom) if atom is not None else "(...)"
    where = f"`not {shown}`" if atom is call.args[0] else f"the negated atom `{shown}`"
    fixes: tuple[Fix, ...] = ()
    hint = ""
    with_wildcard = _atom_text(atom, {name: "_"}) if atom is not None else ""
    if atom is not None and with_wildcard != _atom_text(atom):
        hint = f" (`not {with_wildcard}`)" if atom is call.args[0] else f" (`{with_wildcard}`)"
        if len(own) == 1 and everywhere == 1 and isinstance(own[0], ir.IndexVar):
            fixes = (Fix(f"Write `_` for `{name}` (any value): `{with_wildcard}`",
                         (TextEdit(own[0].span, "_"),)),)
    return make(
        "unsafe-negation",
        f"`{name}` in {where} is bound by no positive atom of the rule (Datalog's safety "
        f"rule; Soufflé: \"ungrounded variable {name}\"): bind `{name}` in a positive atom "
        f"of the rule, or write `_` where any value will do{hint}", own[0].span, fixes=fixes)


def _atom_of(call: ir.Call, var: ir.IndexVar | ir.Ref) -> ir.Ref | None:
    """The atom of `call` that holds the occurrence `var`."""
    for ref in ir.refs(call):
        if ref is var or any(v is var for index in ref.indices or ()
                             for v in ir.index_vars(index)):
            return ref if ref.indices is not None else None
    return None


def _atom_text(atom: ir.Ref, instead: dict[str, str] | None = None) -> str:
    """`Banned(x, y)`: an atom as written (the names in `instead` replaced)."""
    if atom.indices is None:
        return atom.name
    instead = instead or {}
    shown = [("_" if is_wildcard(i.name) else instead.get(i.name, i.name))
             if isinstance(i, ir.IndexVar) else
             value_text(i.value) if isinstance(i, ir.IndexConst) else _computed_text(i)
             for i in atom.indices]
    return f"{atom.name}({', '.join(shown)})"


def _computed_text(index: ir.Index) -> str:
    """`x + y - 1`, `n / 2`: an index of arithmetic as written; `...` for any other."""
    if isinstance(index, ir.IndexShift):
        text = " + ".join(v.name for v in index.terms)
        return text + (f" + {index.offset}" if index.offset > 0 else
                       f" - {-index.offset}" if index.offset < 0 else "")
    if isinstance(index, ir.IndexDiv):
        return f"{index.var.name} / {index.divisor}"
    return "..."


# -------------------------------------------------------- stratification


def _negated_reads(expr: ir.Expr) -> Iterator[ir.Ref]:
    """References read under a `not`, a subtraction, a unary minus or a comparison
    (`(Count[x] < 2)`: an aggregate's value compared, which Soufflé stratifies too),
    or in the condition of a choice with another branch than 0 (`select(P(x), 0, 1)`,
    `case`; `e when c` is `select(c, e, 0)`, a join)."""
    stack: list[tuple[ir.Expr, bool]] = [(expr, False)]
    while stack:
        node, negated = stack.pop()
        if isinstance(node, ir.Ref):
            if negated:
                yield node
            continue
        if isinstance(node, ir.Sum):
            stack.extend((t, negated or s == "-") for t, s in zip(node.terms, node.signs))
            continue
        if isinstance(node, ir.Call) and node.name == "select" and len(node.args) == 3 and not (
                isinstance(node.args[2], ir.Number) and node.args[2].value == 0):
            condition, *branches = node.args
            stack += [(condition, True)] + [(branch, negated) for branch in branches]
            continue
        inside = negated or isinstance(node, ir.Neg) or (
            isinstance(node, ir.Call) and (node.name == "not" or node.name in COMPARISONS))
        stack.extend((child, inside) for child in ir.children(node))


def _compared_read(expr: ir.Expr, ref: ir.Ref) -> bool:
    """Whether `ref` (by its place) is read inside one of expr's comparisons."""
    return any(isinstance(node, ir.Ref) and node.span == ref.span
               for call in ir.walk(expr) if isinstance(call, ir.Call) and call.name in COMPARISONS
               for node in ir.walk(call))


def _check_stratified(statements: tuple[ir.Statement, ...], tensors: dict[str, TensorSymbol],
                      group: set[str], deps: dict[str, list[str]],
                      diags: list[Diagnostic], memo: StatementMemo | None) -> None:
    for name in sorted(group):
        sym = tensors[name]
        if not sym.boolean:
            continue
        for k in sym.statements:
            stmt = statements[k]
            if not isinstance(stmt, ir.Equation):
                continue
            reads = _negated_reads(stmt.rhs) if memo is None else \
                memo(k, stmt, lambda: list(_negated_reads(stmt.rhs)))  # noqa: B023 - called now
            for ref in reads:
                if ref.name not in group:
                    continue
                cycle = [name] + _path(ref.name, name, group, deps)
                shown = " → ".join(f"`{n}`" for n in cycle)
                if _compared_read(stmt.rhs, ref):
                    diags.append(make(
                        "negation-cycle",
                        f"`{name}` depends on itself through a comparison ({shown}, comparing "
                        f"`{ref.name}`'s value here): the program is not stratified, and a "
                        f"relation cannot be defined by a count or a value that it changes "
                        f"(compute `{ref.name}` from relations of a lower stratum)", ref.span))
                    return
                diags.append(make(
                    "negation-cycle",
                    f"`{name}` depends on itself through negation ({shown}, reading "
                    f"`{ref.name}` negated here): the program is not stratified, and a "
                    f"relation cannot be defined by its own absence", ref.span))
                return  # one report per group


def _path(start: str, goal: str, group: set[str], deps: dict[str, list[str]]) -> list[str]:
    """The shortest chain of reads from `start` to `goal` within the group, both included."""
    before: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            break
        for nxt in sorted(set(deps.get(node, ()))):
            if nxt in group and nxt not in before:
                before[nxt] = node
                queue.append(nxt)
    chain: list[str] = []
    node: str | None = goal if goal in before else start
    while node is not None:
        chain.append(node)
        node = before[node]
    return chain[::-1]
