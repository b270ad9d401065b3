"""Values: comparisons and arithmetic over integer columns (docs/language.md,
"Datalog in Fuse").

An index over a relation's column stands for that column's values (LANGUAGE.md
§14; check.value_tables maps values to positions).  Two things only the whole program gives are worked out here, and only for a
program with a comparison or a computed head (unify.Valued marks them):

- kinds (check.value_kinds): a comparison, a computed head or an offset read
  over a column of symbols is an error (`not-a-number`);
- growth: a rule whose head computes values (`N(m + 1) = N(m) (m < 5)`,
  `A(a, b, a + b) = R(a, b)`) makes its column's domain as large as the values it
  can reach: every integer between the lowest and the highest.  Those are bounded
  by an interval analysis of the rules (each variable between the lowest and
  highest values of the columns it is read from, narrowed by its comparisons with
  numbers), iterated to a fixpoint with widening: a column unbounded, past 64-bit
  integers, or of more than VALUE_LIMIT values is `domain-limit`, naming the rule.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, make
from .compared_constants import symbol_constant
from .domains import Domains
from .symbols import TensorSymbol
from .value_kinds import check_kinds, is_var

# The most values a computed column can reach (docs/limits.md): its domain holds
# every integer between the lowest and the highest, one position each.
VALUE_LIMIT = 1_000_000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INF = math.inf
_ROUNDS_BEFORE_WIDENING = 16
_NARROWING_ROUNDS = 16

Interval = tuple[float, float]  # (low, high), both included; None where empty


def check_values(statements: list[tuple[ir.Statement, int | None]], valued: list[int],
                 groups: Sequence[tuple[str, ...]], tensors: dict[str, TensorSymbol], domains: Domains,
                 diags: list[Diagnostic]) -> None:
    """Kinds of the valued statements, then growth of computed columns' domains.
    `statements`: each statement with its stamp (its variables' keys hold it; None
    for a statement without variables); `groups`: the tensors in evaluation order
    (strongly connected groups, dependencies first)."""
    if not valued:
        return
    marked = set(valued)
    for stmt, k in statements:
        if k in marked and isinstance(stmt, ir.Equation):
            check_kinds(stmt, k, tensors, domains, diags)
    _grow(statements, marked, groups, tensors, domains, diags)


# ----------------------------------------------------------------- growth

def _hull(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is None:
        return b
    if b is None:
        return a
    return (min(a[0], b[0]), max(a[1], b[1]))


def _meet(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is None or b is None:
        return None
    low, high = max(a[0], b[0]), min(a[1], b[1])
    return (low, high) if low <= high else None


class _Rule:
    """One additive term of a Boolean rule, as the interval analysis reads it."""

    def __init__(self, stmt: ir.Equation, term: ir.Expr, tensors: dict[str, TensorSymbol]):
        self.stmt = stmt
        self.head = stmt.lhs
        self.atoms: list[ir.Ref] = []  # atoms outside `not`
        # comparisons that are factors of the term: each holds for every tuple it makes
        factors = term.factors if isinstance(term, ir.Product) else (term,)
        self.guards = [f for f in factors if isinstance(f, ir.Call) and f.name in COMPARISONS
                       and len(f.args) == 2]
        stack = [term]
        while stack:
            node = stack.pop()
            if isinstance(node, ir.Ref) and node.indices is not None:
                self.atoms.append(node)
            elif not (isinstance(node, ir.Call) and node.name in COMPARISONS | {"not"}):
                stack.extend(ir.children(node))
        self.tensors = tensors


class _Analysis:
    def __init__(self, tensors: dict[str, TensorSymbol], domains: Domains) -> None:
        self.tensors = tensors
        self.domains = domains
        self.columns: dict[tuple[str, int], Interval | None] = {}
        self.facts: dict[tuple[str, int], Interval | None] = {}
        self.raised_by: dict[tuple[str, int], ir.Equation] = {}
        self.symbol_columns: dict[object, bool] = {}  # a domain's root -> symbols_only

    def fixed_column(self, name: str, pos: int) -> Interval | None:
        """A column no rule of the analysis computes: its domain's values (or a
        positional domain's positions)."""
        key = ("axis", name, pos)
        if self.domains.holds_symbols(key):
            numbers = [v for v in self.domains.symbols(key) if type(v) is not str]
            return (min(numbers), max(numbers)) if numbers else None
        extent = self.domains.extent(key)
        if extent is None:  # a relation's column nothing reaches is empty (check.datalog)
            sym = self.tensors.get(name)
            return None if sym is not None and sym.boolean else (0, INF)
        return (0, extent - 1) if extent > 0 else None

    def symbols_only(self, name: str, pos: int) -> bool:
        """Whether a column holds values, none of them a number (a column rules
        compute too: `P(v) = E(_, v)` over symbols has no numbers, yet holds tuples,
        so a rule that joins it still reaches its head's computed values)."""
        key = ("axis", name, pos)
        root = self.domains.find(key) if self.domains.known(key) else None
        if root is None:
            return False
        if root not in self.symbol_columns:  # (once per domain: a large one is slow)
            self.symbol_columns[root] = self.domains.holds_symbols(key) and \
                not any(type(v) is not str for v in self.domains.symbols(key))
        return self.symbol_columns[root]

    def column(self, name: str, pos: int) -> Interval | None:
        key = (name, pos)
        if key in self.columns:
            return self.columns[key]
        sym = self.tensors.get(name)
        if key in self.facts and sym is not None and sym.source is None:
            return self.facts[key]  # a relation of facts only
        return self.fixed_column(name, pos)

    def variables(self, rule: _Rule) -> dict[str, Interval | None] | None:
        """Each variable's interval, or None when the term can hold no tuple."""
        env: dict[str, Interval | None] = {}
        for atom in rule.atoms:
            for pos, index in enumerate(atom.indices or ()):
                if isinstance(index, ir.IndexVar):
                    shift = 0
                elif isinstance(index, ir.IndexShift) and len(index.terms) == 1:
                    index, shift = index.terms[0], index.offset
                else:
                    continue
                got = self.column(atom.name, pos)
                if got is None and self.symbols_only(atom.name, pos):
                    continue  # no numbers to bound it with, yet not empty
                if got is not None:
                    got = (got[0] - shift, got[1] - shift)
                before = env.get(index.name, (-INF, INF))
                env[index.name] = _meet(before, got)
                if env[index.name] is None:
                    return None
        for _ in range(2):  # a guard may use a variable an earlier one narrowed or bound
            for guard in rule.guards:
                if not self._narrow(guard, env):
                    return None
        return env

    def _narrow(self, guard: ir.Call, env: dict[str, Interval | None]) -> bool:
        left, right = guard.args
        op = guard.name
        for var, other, flipped in ((left, right, False), (right, left, True)):
            if not is_var(var, self.tensors):
                continue
            bound = self.value(other, env)
            if bound is None:
                continue
            cmp = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op) if flipped else op
            low, high = bound
            limit = {"<": (-INF, high - 1), "<=": (-INF, high), ">": (low + 1, INF),
                     ">=": (low, INF), "==": (low, high)}.get(cmp)
            if limit is None:
                continue
            if var.name not in env:
                if cmp == "==":
                    env[var.name] = limit  # `n == m + 1`: n is bound by the comparison
                continue  # bound by nothing: unsafe-comparison
            narrowed = _meet(env.get(var.name, (-INF, INF)), limit)
            if narrowed is None:
                return False
            env[var.name] = narrowed
        return True

    def value(self, expr: ir.Expr, env: dict[str, Interval | None]) -> Interval | None:
        """The interval of an arithmetic expression of variables and numbers."""
        if isinstance(expr, ir.Number):  # an integer exactly (a float holds 53 bits)
            value = int(expr.text) if expr.is_integer else expr.value
            return (value, value)
        if isinstance(expr, ir.Ref) and is_var(expr, self.tensors):
            return env.get(expr.name)
        if isinstance(expr, ir.Neg):
            inner = self.value(expr.operand, env)
            return None if inner is None else (-inner[1], -inner[0])
        if isinstance(expr, ir.Sum):
            low = high = 0
            for term, sign in zip(expr.terms, expr.signs):
                part = self.value(term, env)
                if part is None:
                    return None
                low, high = (low + part[0], high + part[1]) if sign == "+" else \
                    (low - part[1], high - part[0])
            return (low, high)
        if isinstance(expr, ir.Product) and all(op in ("", " ", "*") for op in expr.ops):
            out: Interval = (1, 1)
            for factor in expr.factors:
                part = self.value(factor, env)
                if part is None:
                    return None
                ends = [a * b if not (math.isinf(a) or math.isinf(b)) or (a and b) else 0.0
                        for a in out for b in part]
                out = (min(ends), max(ends))
            return out
        return None

    def head_values(self, rule: _Rule) -> list[Interval | None] | None:
        env = self.variables(rule)
        if env is None:
            return None
        out: list[Interval | None] = []
        for index in rule.head.indices or ():
            if isinstance(index, ir.IndexConst) and not index.is_symbol:
                out.append((index.value, index.value))
            elif isinstance(index, (ir.IndexVar, ir.IndexShift)):
                terms = (index,) if isinstance(index, ir.IndexVar) else index.terms
                low = high = 0 if isinstance(index, ir.IndexVar) else index.offset
                for var in terms:
                    if var.name not in env:  # bound by nothing (an error of its own)
                        low = high = None
                        break
                    got = env[var.name]
                    if got is None:
                        return None
                    low, high = low + got[0], high + got[1]
                out.append(None if low is None else (low, high))
            else:
                out.append(None)
        return out


def _grow(statements: list[tuple[ir.Statement, int | None]], marked: set[int],
          groups: Sequence[tuple[str, ...]], tensors: dict[str, TensorSymbol], domains: Domains, diags: list[Diagnostic]) -> None:
    # the heads of rules that compute (`A(a + b)`, or `n == m + 1` binding n): a
    # comparison that only filters grows nothing
    computed = {stmt.lhs.name for stmt, k in statements if k in marked
                and isinstance(stmt, ir.Equation) and stmt.lhs.paren and _computes(stmt, tensors)}
    if not computed:
        return
    analysis = _Analysis(tensors, domains)
    rules: list[_Rule] = []
    for stmt, _ in statements:
        if isinstance(stmt, ir.Fact) and stmt.atom.name in tensors:
            for pos, index in enumerate(stmt.atom.indices or ()):
                if isinstance(index, ir.IndexConst) and not index.is_symbol:
                    key = (stmt.atom.name, pos)
                    analysis.facts[key] = _hull(analysis.facts.get(key), (index.value,) * 2)
        elif isinstance(stmt, ir.Equation) and stmt.lhs.paren and stmt.lhs.name in tensors \
                and tensors[stmt.lhs.name].boolean and tensors[stmt.lhs.name].source is None:
            terms = stmt.rhs.terms if isinstance(stmt.rhs, ir.Sum) else (stmt.rhs,)
            rules += [_Rule(stmt, term, tensors) for term in terms]
    for rule in rules:
        for pos in range(len(rule.head.indices or ())):
            key = (rule.head.name, pos)
            analysis.columns[key] = analysis.facts.get(key)
    rank = {name: k for k, group in enumerate(groups) for name in group}
    _iterate(analysis, rules, [rank.get(rule.head.name, 0) for rule in rules])
    _report(analysis, rules, computed, domains, diags, rank)


def _computes(stmt: ir.Equation, tensors: dict[str, TensorSymbol]) -> bool:
    if any(isinstance(index, ir.IndexShift) for index in stmt.lhs.indices or ()):
        return True
    # (`x == Ann` computes no number: check.unify puts the symbol in x's column)
    return any(isinstance(node, ir.Call) and node.name == "==" and not any(
        symbol_constant(arg, tensors) for arg in node.args) for node in ir.walk(stmt.rhs))


def _round(analysis: _Analysis, rules: list[_Rule], start: dict) -> dict:
    """The columns after one round: `start`, joined with every rule's head values."""
    out = dict(start)
    for rule in rules:
        values = analysis.head_values(rule)
        if values is None:
            continue
        for pos, got in enumerate(values):
            key = (rule.head.name, pos)
            grown = _hull(out.get(key), got)
            if grown != out.get(key):
                out[key] = grown
                analysis.raised_by[key] = rule.stmt
    return out


def _iterate(analysis: _Analysis, rules: list[_Rule], ranks: list[int]) -> None:
    """A worklist to the fixpoint, rules taken in evaluation order (`ranks`: each
    rule's head's group), a rule again when a relation it reads grew.  A bound that
    still grows after _ROUNDS_BEFORE_WIDENING raises goes to infinity (so it
    ends); then, only if one did, narrowing: rounds from the facts alone, the last
    columns as their input (a guard such as `(n < 25)` brings the bound back)."""
    readers: dict[str, list[int]] = {}
    for k, rule in enumerate(rules):
        for name in {atom.name for atom in rule.atoms}:
            readers.setdefault(name, []).append(k)
    heap = [(rank, k) for k, rank in enumerate(ranks)]
    heapq.heapify(heap)
    queued = set(range(len(rules)))
    raises: dict[tuple[str, int], int] = {}
    widened = False
    columns = analysis.columns
    while heap:
        _, k = heapq.heappop(heap)
        queued.discard(k)
        rule = rules[k]
        values = analysis.head_values(rule)
        if values is None:
            continue
        grew = False
        for pos, got in enumerate(values):
            key = (rule.head.name, pos)
            before = columns.get(key)
            after = _hull(before, got)
            if after == before:
                continue
            raises[key] = raises.get(key, 0) + 1
            if raises[key] > _ROUNDS_BEFORE_WIDENING and before is not None and after is not None:
                after = (after[0] if after[0] >= before[0] else -INF,
                         after[1] if after[1] <= before[1] else INF)
                widened = True
            columns[key] = after
            analysis.raised_by[key] = rule.stmt
            grew = True
        if grew:
            for reader in readers.get(rule.head.name, ()):
                if reader not in queued:
                    queued.add(reader)
                    heapq.heappush(heap, (ranks[reader], reader))
    if not widened:
        return
    for _ in range(_NARROWING_ROUNDS):
        facts = {key: analysis.facts.get(key) for key in analysis.columns}
        after_round = _round(analysis, rules, facts)
        if after_round == analysis.columns:
            return
        analysis.columns = after_round


def _report(analysis: _Analysis, rules: list[_Rule], computed: set[str], domains: Domains,
            diags: list[Diagnostic], rank: dict[str, int]) -> None:
    """The computed columns' domains: grown to hold the values they can reach, or
    an error (unbounded, past 64 bits, or more than VALUE_LIMIT values)."""
    needed: dict = {}  # domain root -> (its values' hull, the rule that raised it)
    made = _made_columns(rules)
    for (name, pos), got in analysis.columns.items():
        if (name, pos) not in made or got is None:
            continue
        key = ("axis", name, pos)
        if domains.holds_strings(key):
            continue  # reported as not-a-number
        rule = analysis.raised_by.get((name, pos))
        if rule is None:
            continue
        problem = _reach_problem(got)
        if problem is not None:
            diags.append(make(
                "domain-limit", f"column {pos + 1} of `{name}` can reach values {problem}: a "
                f"computed column holds at most {VALUE_LIMIT:,} values, each a 64-bit integer "
                f"(bound the recursion with a comparison, e.g. `(n < 100)`)", rule.lhs.span))
            continue
        root = domains.find(key)
        hull = _hull(needed[root][0], got) if root in needed else got
        needed[root] = (hull, rule)
    for root, ((low, high), rule) in needed.items():
        evidence = domains.evidence(root)
        if evidence is not None:  # an extent fixed elsewhere: positions are the values
            if low >= 0 and evidence.extent > high and not domains.holds_symbols(root):
                continue
            diags.append(make(
                "domain-limit", f"`{rule.lhs.name}` computes values {_num(low)} to {_num(high)} "
                f"but its column has extent {evidence.extent} from {evidence.what}",
                rule.lhs.span))
            continue
        if high - low + 1 > VALUE_LIMIT:
            exact = _exact_values(root, rules, made, domains, rank)
            if exact is not None:  # (few values, far apart: ids, timestamps)
                domains.add_symbols(((root, v) for v in sorted(exact)), rule.lhs.span)
                continue
            diags.append(make(
                "domain-limit", f"`{rule.lhs.name}` computes values from {_num(low)} to "
                f"{_num(high)}, more than the {VALUE_LIMIT:,} a computed column holds: its "
                f"domain holds every integer between the lowest and the highest value its "
                f"rules can reach (docs/limits.md), however few of them are computed",
                rule.lhs.span))
            continue
        domains.add_symbols(((root, v) for v in range(int(low), int(high) + 1)), rule.lhs.span)


def _exact_values(root: object, rules: list[_Rule], made: set[tuple[str, int]],
                  domains: Domains, rank: dict[str, int]) -> set[int] | None:
    """The values the rules making the columns of domain `root` compute, exactly,
    where every such rule computes `x + y + c` (or a number) outside recursion from
    relations no rule defines (`Later(e, t + 3600) = Event(e, t)` over the facts of
    timestamps: a few values far apart, where the interval between them would be
    too many); None where one does not, or where they are more than VALUE_LIMIT.
    A head that copies an atom's variable shares that atom's domain: its values are
    the domain's already, or computed here."""
    out: set[int] = set()
    defined = {rule.head.name for rule in rules}
    for rule in rules:
        bound = {index.name for atom in rule.atoms for index in atom.indices or ()
                 if isinstance(index, ir.IndexVar)}
        for pos, index in enumerate(rule.head.indices or ()):
            if (rule.head.name, pos) not in made or \
                    domains.find(("axis", rule.head.name, pos)) != root:
                continue
            if isinstance(index, ir.IndexConst) and type(index.value) is int:
                out.add(index.value)
                continue
            if isinstance(index, ir.IndexVar) and index.name in bound:
                continue
            if not isinstance(index, ir.IndexShift) or any(
                    rank.get(atom.name) == rank.get(rule.head.name) for atom in rule.atoms):
                return None  # (`n == m + 1`, or a recursion: the interval says)
            sums = {index.offset}
            for var in index.terms:
                held = _read_values(rule, var.name, defined, domains)
                if held is None or len(sums) * len(held) > VALUE_LIMIT:
                    return None
                sums = {a + b for a in sums for b in held}
            if any(not INT64_MIN <= v <= INT64_MAX for v in sums):
                return None  # (past 64 bits: the interval's report says so)
            out |= sums
            if len(out) > VALUE_LIMIT:
                return None
    return out


def _read_values(rule: _Rule, name: str, defined: set[str],
                 domains: Domains) -> set[int] | None:
    """The integers variable `name` can take in `rule`: the values of every column
    an atom reads it from, intersected (a superset of its tuples' values); None
    where a rule defines the atom's relation (its tuples may hold values computed
    later, which the domain does not hold yet) or a column holds more than
    integers."""
    held: set[int] | None = None
    for atom in rule.atoms:
        for pos, index in enumerate(atom.indices or ()):
            if not (isinstance(index, ir.IndexVar) and index.name == name):
                continue
            key = ("axis", atom.name, pos)
            if atom.name in defined or not domains.known(key):
                return None
            values = domains.symbols(key)
            if any(type(v) is not int for v in values):
                return None
            held = set(values) if held is None else held & set(values)
    return held


def _made_columns(rules: list[_Rule]) -> set[tuple[str, int]]:
    """The head columns some rule makes values in: an offset or a sum (`m + 1`), or
    a variable no atom of the rule binds (`n == m + 1`; an atom's arithmetic,
    `Q(n - 1)`, binds nothing: check.datalog).  A column a variable copies from an
    atom shares that atom's domain, which holds its values."""
    out = set()
    for rule in rules:
        bound = {index.name for atom in rule.atoms for index in atom.indices or ()
                 if isinstance(index, ir.IndexVar)}
        for pos, index in enumerate(rule.head.indices or ()):
            if isinstance(index, ir.IndexShift) or (
                    isinstance(index, ir.IndexVar) and index.name not in bound):
                out.add((rule.head.name, pos))
    return out


def _reach_problem(got: Interval) -> str | None:
    """Why a computed column's values cannot be held, or None."""
    low, high = got
    if high == INF or low == -INF:  # (exact integers may be past any float: no isinf)
        return "without bound"
    if low < INT64_MIN or high > INT64_MAX:
        return f"from {_num(low)} to {_num(high)}, past 64-bit integers"
    return None


def _num(value: float) -> str:
    if value in (INF, -INF):
        return "-∞" if value < 0 else "∞"
    if value != int(value):
        return str(value)
    whole = int(value)
    if abs(whole) >= 10**20:  # (a 310-digit literal: its order, not its digits)
        return f"{'-' if whole < 0 else ''}about 10^{int(abs(whole).bit_length() * 0.30103)}"
    return str(whole)

