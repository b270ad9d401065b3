"""Demand mode: a program rewritten so that bound queries touch only what they need
(magic sets; docs/execution.md, "Demand mode").

`plan_demand(analysis)` is pure and returns a `DemandPlan`: the adorned relations
(a relation with a binding pattern, `Ancestor_bf`: first argument bound, second
free), their magic relations (the set of bound values asked for, `Magic_Ancestor_bf`,
a 1-D set when one argument is bound), the rules it adds, and the program text to
run.  The rewrite, for a query with constants `Ancestor(P0, x)?`:

- a seed `Magic_Ancestor_bf(b0) = (b0 == P0)` and the query reads `Ancestor_bf(P0, x)`;
- each rule of an adorned relation is guarded by its magic atom over the head's
  bound arguments: `Ancestor_bf(x,z) = Magic_Ancestor_bf(x) (Ancestor_bf(x,y) Parent(y,z))`;
- along the body, left to right (the sideways information passing of magic sets),
  a positive atom of a rule-defined relation with bound arguments reads its adorned
  version and gets a magic rule: its bound values are those the guard and the atoms
  before it allow: `Magic_Q_bf(y) = Magic_P_bf(x) A(x,y)`.

What is not rewritten reads the relation in full, as forward mode computes it
(always correct, only less restricted): a negated atom (so no cycle through `not` can
appear), a relation with facts or a file, numeric tensors, an atom with repeated
variables or other than plain variables and constants, a body that is not a product
of atoms.  The rewritten rules only add a guard (a factor of 0/1) to rules whose
relation is then asked only where its magic set holds, so the answers are forward
mode's (the magic-sets theorem).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..check import Analysis
from ..check.cone import squeeze_space, tensor_cone
from ..front import ir
from ..front.span import LineIndex

_WORD = re.compile(r"\w+")  # a name the rewrite may adorn (`g::Reach`, `p@f.1` not)
_WORDS = _WORD.findall


@dataclass(frozen=True, slots=True)
class AdornedRelation:
    """One relation asked with one binding pattern."""

    tensor: str  # the program's relation
    adornment: str  # per argument "b" (bound) or "f" (free): "bf"
    name: str  # the adorned relation's name in the rewritten program
    magic: str  # its magic relation: the bound values asked for


@dataclass(frozen=True, slots=True)
class DemandPlan:
    relations: tuple[AdornedRelation, ...]
    queries: tuple[tuple[str, str, str], ...]  # (query text, tensor, rewritten text)
    rules: tuple[str, ...]  # the seed facts, guarded rules and magic rules added
    evaluated: tuple[str, ...]  # the tensors the run evaluates (the roots' cone)
    left_out: tuple[str, ...]  # the tensors of the program it does not
    text: str  # the program to run
    # per rule of `rules`, where the user wrote what it comes from (the query of a
    # seed fact, the rule an adorned rule or a magic rule is written from): its line
    # (1-based) and text; and the line of `text` the first of `rules` is on
    origins: tuple[tuple[int, str], ...] = ()
    first_line: int = 0
    # the program's analysis before the rewrite (run.compiling.demanded sets it): what
    # a why re-evaluates, so that it explains the program's own relations and lines
    source: Analysis | None = field(default=None, compare=False, repr=False)

    @property
    def rewritten(self) -> bool:
        return bool(self.relations)

    def user_place(self, line: int, text: str) -> tuple[int, str]:
        """The line of the user's program that a line of `text` stands for, and the
        text written there: the line and `text` themselves for a line of the user's
        own; for an added rule, the rule or query it is written from."""
        k = line - self.first_line
        return self.origins[k] if 0 <= k < len(self.origins) else (line, text)

    def asked_as(self, name: str) -> str:
        """What an adorned or a magic relation of the rewrite stands for, in words
        (empty for any other tensor)."""
        for r in self.relations:
            if name == r.name:
                return (f"{name} is demand mode's copy of {r.tensor} for the queries that "
                        f"bind its arguments as {r.adornment} (b bound, f free)")
            if name == r.magic:
                return f"{name} holds the values demand mode asks {r.name} for"
        return ""

    def to_json(self) -> dict:
        return {"relations": [{"tensor": r.tensor, "adornment": r.adornment, "name": r.name,
                               "magic": r.magic} for r in self.relations],
                "queries": [{"text": q, "tensor": t, "rewritten": w}
                            for q, t, w in self.queries],
                "rules": list(self.rules), "evaluated": list(self.evaluated),
                "left_out": list(self.left_out)}


def plan_demand(analysis: Analysis) -> DemandPlan:
    """The magic-sets rewrite of the program's bound queries (module docstring)."""
    return _Rewrite(analysis).plan()


def _simple_args(ref: ir.Ref) -> bool:
    """Plain variables (each once) and constants only."""
    if not ref.indices:
        return False
    names = [ix.name for ix in ref.indices if isinstance(ix, ir.IndexVar)]
    return len(names) == len(set(names)) and all(
        isinstance(ix, (ir.IndexVar, ir.IndexConst)) for ix in ref.indices)


def _adornment(ref: ir.Ref, bound: set[str]) -> str:
    return "".join("b" if isinstance(ix, ir.IndexConst) or ix.name in bound else "f"
                   for ix in ref.indices or ())


def _atoms(rhs: ir.Expr) -> list[ir.Expr] | None:
    """The factors of a rule body that is a product of atoms and negated atoms."""
    factors = list(rhs.factors) if isinstance(rhs, ir.Product) else [rhs]
    if isinstance(rhs, ir.Product) and not all(op in ("", " ", "*") for op in rhs.ops):
        return None
    for factor in factors:
        negated = isinstance(factor, ir.Call) and factor.name == "not" and len(factor.args) == 1
        if not isinstance(factor, ir.Ref) and not (negated and isinstance(factor.args[0], ir.Ref)):
            return None
    return factors


class _Rewrite:
    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.text = analysis.text
        self.statements = analysis.program.statements
        self.taken = set(analysis.tensors)
        self.relations: dict[tuple[str, str], AdornedRelation] = {}
        self.pending: list[AdornedRelation] = []
        self.rules: list[str] = []
        self.origins: list[tuple[int, str]] = []  # per rule added, where it comes from
        self.pins: dict[tuple[str, str], str] = {}  # (magic relation, tests) -> its pin
        self.domains: dict[int, tuple[frozenset, frozenset]] = {}  # (held)
        self.ties: list[tuple[str, object]] = []  # (rule, what it is written from): tie

    def add(self, rule: str, written_at: object) -> None:
        self.rules.append(rule)
        span = written_at.span  # type: ignore[attr-defined]
        self.origins.append((self.analysis.lines.position(span.start)[0] + 1,
                             self.text[span.start:span.end]))

    def eligible(self, name: str) -> bool:
        """A relation defined by rules alone (no facts, no file), each a plain `=`,
        written in the program's own text: the rewrite copies a rule's text, and an
        imported file's rule (`g::Reach`) or one a `fn` call wrote out has none
        here (the relation is read in full, as forward mode computes it)."""
        info = self.analysis.tensors.get(name)
        if info is None or not info.boolean or not info.statements or info.op not in ("=", None) \
                or not _WORD.fullmatch(name):
            return False
        imports, inlined = self.analysis.imports, self.analysis.inlined
        return all(isinstance(self.statements[k], ir.Equation) and self.statements[k].op == "="
                   and _simple_args(self.statements[k].lhs)
                   and (imports is None or imports.file_at(self.statements[k].span.start) is None)
                   and (inlined is None or k not in inlined.origins) for k in info.statements)

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def adorned(self, tensor: str, adornment: str) -> AdornedRelation:
        key = (tensor, adornment)
        if key not in self.relations:
            relation = AdornedRelation(tensor, adornment, self.fresh(f"{tensor}_{adornment}"),
                                       self.fresh(f"Magic_{tensor}_{adornment}"))
            self.relations[key] = relation
            self.pending.append(relation)
            self.tie(relation)
        return self.relations[key]

    def tie(self, relation: AdornedRelation) -> None:
        """A rule that reads the relation, its adorned copy and its magic relation
        on the same variables, `Magic_Anc_bf_tie(b0, b1) = Magic_Anc_bf(b0)
        Anc_bf(b0, b1) Anc(b0, b1)`, which nothing reads, so it is never evaluated: it
        only makes the copy's and the magic relation's columns the relation's (one
        domain each, as the checker unifies them), so that a symbol asked for is found
        among the column's values by its comparison (a magic relation whose every
        guard has a constant, `Magic_P_bf(C)`, had a column of its own, which no value
        reached), and a query's answer is an array over forward mode's values."""
        every = [f"b{k}" for k in range(len(relation.adornment))]
        bound = [v for v, a in zip(every, relation.adornment) if a == "b"]
        written = self.statements[self.analysis.tensors[relation.tensor].statements[0]]
        self.ties.append((f"{self.fresh(relation.magic + '_tie')}({', '.join(every)}) = "
                          f"{relation.magic}({', '.join(bound)}) "
                          f"{relation.name}({', '.join(every)}) "
                          f"{relation.tensor}({', '.join(every)})", written))

    def source(self, node: object, renames: dict[int, str] | None = None) -> str:
        """A node's text with the references at the given name offsets renamed."""
        start, end = node.span.start, node.span.end  # type: ignore[attr-defined]
        out, at = [], start
        for offset in sorted(renames or {}):
            if start <= offset < end:
                ref_end = offset + len(self._name_at(offset))
                out += [self.text[at:offset], renames[offset]]  # type: ignore[index]
                at = ref_end
        out.append(self.text[at:end])
        # (one line of text: a comment inside a statement written over lines would
        # swallow the rest of it)
        return one_line("".join(out))

    def _name_at(self, offset: int) -> str:
        end = offset
        while end < len(self.text) and (self.text[end].isalnum() or self.text[end] in "_'"):
            end += 1
        return self.text[offset:end]

    def bound_values(self, ref: ir.Ref, adornment: str) -> str:
        return ", ".join(self.source(ix) for ix, a in zip(ref.indices or (), adornment)
                         if a == "b")

    def plan(self) -> DemandPlan:
        queries = []
        query_renames: dict[int, str] = {}
        for stmt in self.statements:
            if not isinstance(stmt, ir.Query):
                continue
            atom = stmt.atom
            adornment = _adornment(atom, set()) if _simple_args(atom) else ""
            if "b" not in adornment or not self.eligible(atom.name):
                continue
            seed = self.pinned(atom, adornment, set())
            if seed is None:
                continue
            relation = self.adorned(atom.name, adornment)
            tests = f" = {' '.join(seed[2])}" if seed[2] else ""  # (numbers alone: a fact)
            self.add(f"{relation.magic}({', '.join(seed[0])}){tests}", stmt)
            query_renames[atom.name_span.start] = relation.name
            # (its own rename alone: the others are outside it, and all of them
            # for each query cost the queries' number squared)
            queries.append((self.text[stmt.span.start:stmt.span.end], atom.name,
                            self.source(stmt, {atom.name_span.start: relation.name})))
        while self.pending:
            relation = self.pending.pop(0)
            for k in self.analysis.tensors[relation.tensor].statements:
                self.rewrite_rule(relation, self.statements[k])
        return self.finish(tuple(queries), query_renames)

    def pinned(self, atom: ir.Ref, adornment: str, taken: set[str]
               ) -> tuple[list[str], list[str], list[str]] | None:
        """The head of a magic rule (or seed) for `atom`'s bound arguments: a variable
        as itself; a symbol as a fresh variable and a comparison (`b0`, `(b0 ==
        Alice)`), not the symbol: a symbol in a head or a fact is numbered before a
        relation file's (domains keep their symbols in order of first appearance), so
        that the exports' arrays would differ from forward mode's; a number as itself
        (a domain of numbers keeps them in increasing order; as a comparison, `M(b) =
        (b == 7)`, it is a value the rule gives, and two of them a range).  Only a value
        the column holds, so that none is added to it (`Anc(Zed, x)?`, `P(0, y)` in a
        body).  None otherwise (that atom, or query, reads its relation in full): a value
        the column does not hold (it matches nothing), a number bound on a column that
        holds symbols (`not-a-number`)."""
        info, args, names, tests = self.analysis.tensors[atom.name], [], [], []
        for position, (ix, a) in enumerate(zip(atom.indices or (), adornment)):
            if a != "b":
                continue
            if isinstance(ix, ir.IndexVar):
                args.append(ix.name)
                continue
            strings, numbers = self.held(info.axes[position].domain) \
                if position < len(info.axes) else (frozenset(), frozenset())
            if ix.value not in strings if isinstance(ix.value, str) else \
                    (strings or ix.value not in numbers):
                return None
            if not isinstance(ix.value, str):  # (numbers in increasing order: a number
                args.append(self.source(ix))  # held is where it is, as a fact or head)
                continue
            name, k = "b0", 0
            while name in taken:
                k += 1
                name = f"b{k}"
            taken.add(name)
            args.append(name)
            names.append(name)
            tests.append(f"({name} == {self.source(ix)})")
        return args, names, tests

    def held(self, domain: int) -> tuple[frozenset, frozenset]:
        """A domain's symbols (and strings) and its numbers, as sets (once each: a
        program may ask thousands of queries of one large column)."""
        if domain not in self.domains:
            values = self.analysis.domain_symbols.get(domain) or ()
            self.domains[domain] = (frozenset(v for v in values if isinstance(v, str)),
                                    frozenset(v for v in values if not isinstance(v, str)))
        return self.domains[domain]

    def rewrite_rule(self, relation: AdornedRelation, rule: ir.Equation) -> None:
        """The rule guarded by its magic atom, and a magic rule per adorned body atom."""
        lhs = rule.lhs
        guard = f"{relation.magic}({self.bound_values(lhs, relation.adornment)})"
        bound = {ix.name for ix, a in zip(lhs.indices or (), relation.adornment)
                 if a == "b" and isinstance(ix, ir.IndexVar)}
        renames: dict[int, str] = {}
        atoms = _atoms(rule.rhs)
        before: list[ir.Expr] = []
        for factor in atoms or ():
            if isinstance(factor, ir.Ref):
                self.adorn_atom(factor, bound, guard, before, renames, rule)
                bound |= {ix.name for ix in factor.indices or () if isinstance(ix, ir.IndexVar)}
            before.append(factor)
        head = f"{relation.name}{self.source(lhs)[len(lhs.name):]}"
        body = self.source(rule.rhs, renames)
        self.add(f"{head} = {guard} {body if atoms is not None else f'({body})'}", rule)

    def adorn_atom(self, atom: ir.Ref, bound: set[str], guard: str, before: list[ir.Expr],
                   renames: dict[int, str], rule: ir.Equation) -> None:
        """A positive body atom with bound arguments reads its adorned relation, whose
        magic relation gets what the guard and the atoms before it bind."""
        if not _simple_args(atom) or not self.eligible(atom.name):
            return
        adornment = _adornment(atom, bound)
        if "b" not in adornment:
            return
        head = self.pinned(atom, adornment, set(_WORDS(self.source(rule))))
        if head is None:
            return
        target = self.adorned(atom.name, adornment)
        renames[atom.name_span.start] = target.name
        # (a negated atom only once what it reads is bound: one that a later atom
        # binds, `not Bad(x, w) S(x, y) T(y, w)`, would be unsafe here; leaving it
        # out only makes the magic set larger)
        parts = [guard] + [self.source(f, renames) for f in before
                           if isinstance(f, ir.Ref) or _variables(f) <= bound]
        args, names, tests = head
        if names:  # the constants, by a relation of comparisons alone (a comparison
            # beside atoms that do not bind its variable is unsafe: `ungrounded`)
            key = (target.magic, " ".join(tests))
            if key not in self.pins:  # (one per magic relation and constants)
                self.pins[key] = self.fresh(target.magic + "_pin")
                self.add(f"{self.pins[key]}({', '.join(names)}) = {key[1]}", rule)
            parts.append(f"{self.pins[key]}({', '.join(names)})")
        body = " ".join(parts)
        magic_rule = f"{target.magic}({', '.join(args)}) = {body}"
        if magic_rule.split(" = ")[0] != body:  # M(x) = M(x) adds nothing
            self.add(magic_rule, rule)

    def finish(self, queries: tuple[tuple[str, str, str], ...],
               query_renames: dict[int, str]) -> DemandPlan:
        # the text with the queries' relations renamed, in pieces (a list of its
        # characters changed at each query moved its whole tail each time)
        pieces, at = [], 0
        for offset, name in sorted(query_renames.items()):
            pieces += [self.text[at:offset], name]
            at = offset + len(self._name_at(offset))
        pieces.append(self.text[at:])
        text = "".join(pieces)
        evaluated_rules = list(self.rules)  # (the ties are read by nothing: never run)
        for rule, written in self.ties:
            self.add(rule, written)
        first_line = 0
        if self.rules:
            text += "\n# demand mode: magic-sets rewrite (fuse explain --mode demand)\n"
            # (the line the rules start on as the checker counts lines: a text ending
            # in a lone "\r" ends that line with the "\n" after it)
            first_line = LineIndex(text).position(len(text))[0] + 1
            text += "\n".join(self.rules) + "\n"
        roots = [*self.analysis.exports]
        renamed = {t for _, t, _ in queries}
        roots += [r.name for r in self.relations.values() if r.tensor in renamed]
        for stmt in self.statements:
            if isinstance(stmt, ir.Query) and stmt.atom.name_span.start not in query_renames:
                roots.append(stmt.atom.name)
            elif isinstance(stmt, ir.Sink):
                roots += [r.name for r in ir.refs(stmt.rhs)]
        evaluated = self._cone(roots, evaluated_rules)
        left_out = tuple(n for n in self.analysis.tensors if n not in evaluated)
        return DemandPlan(tuple(self.relations.values()), queries, tuple(self.rules),
                          tuple(sorted(evaluated)), left_out, text, tuple(self.origins),
                          first_line)

    def _cone(self, roots: list[str], rules: list[str]) -> set[str]:
        """The tensors the roots read in the rewritten program: the original cone of
        what is read in full, plus the adorned and magic relations and the pins."""
        adorned = {r.name: r for r in self.relations.values()}
        full = [r for r in roots if r not in adorned]
        find = _Mentioned(self.analysis.tensors)
        for rule in rules:  # what adorned rules read in full (negations, EDB)
            full += find.mentioned(rule.partition(" = ")[2])
        tensors, _ = tensor_cone(self.analysis, full)
        return tensors | set(adorned) | {r.magic for r in self.relations.values()} | \
            set(self.pins.values())


class _Mentioned:
    """The tensors a text mentions (`_mentions` of each, in the tensors' order),
    found from the text's words: asking every tensor of every rule cost the
    rules' number times the program's size (a program of thousands of queries
    in demand mode)."""

    def __init__(self, tensors: dict[str, object]) -> None:
        import re

        word = re.compile(r"\w+")  # (\w: what isalnum() or "_" is, as in _mentions)
        self._words = word.findall
        self._place: dict[str, int] = {}  # a name of word characters -> its place
        self._others: list[tuple[int, str]] = []  # any other name (`lib::T`), placed
        for place, name in enumerate(tensors):
            if word.fullmatch(name):
                self._place[name] = place
            else:
                self._others.append((place, name))

    def mentioned(self, text: str) -> list[str]:
        place = self._place
        # a name of word characters can be mentioned only as one of the text's
        # words (maximal runs of them); each such is checked as before (no prime
        # after it); any other name is looked for as before
        found = [(place[word], word) for word in set(self._words(text))
                 if word in place and _mentions(text, word)]
        found += [(at, name) for at, name in self._others if _mentions(text, name)]
        return [name for _, name in sorted(found)]


def _variables(factor: ir.Expr) -> set[str]:
    """The named variables of a factor (`not Bad(x, _)`: x)."""
    return {v.name for ref in ir.walk(factor) if isinstance(ref, ir.Ref)
            for ix in ref.indices or () for v in ir.index_vars(ix)} - {"_"}


def one_line(text: str) -> str:
    """A statement's text on one line, its comments cut: what `DemandPlan.queries`
    holds of a rewritten query, and how a run finds the query an answer is of.  Runs of
    white space become one space outside strings (check.cone.squeeze_space)."""
    return squeeze_space(_without_comments(text))


def _without_comments(text: str) -> str:
    """`text` with each `#` comment (to the end of its line, outside strings) cut."""
    if "#" not in text:
        return text
    out, at, quoted = [], 0, False
    k = 0
    while k < len(text):
        char = text[k]
        if quoted and char == "\\":
            k += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            out.append(text[at:k])
            ends = [e for e in (text.find("\n", k), text.find("\r", k)) if e >= 0]
            if not ends:  # (a lone "\r" ends a line too)
                return "".join(out)
            at = k = min(ends)
            continue
        k += 1
    out.append(text[at:])
    return "".join(out)


def _mentions(text: str, name: str) -> bool:
    """`name` occurs in `text` as a whole identifier."""
    at = text.find(name)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(name)] if at + len(name) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after in "_'"):
            return True
        at = text.find(name, at + 1)
    return False
