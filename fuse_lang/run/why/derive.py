"""Why a tuple holds: a minimal-height derivation, found by a bounded backward search.

Soufflé annotates each tuple with its height while it evaluates; Fuse keeps no such
annotation (a run pays nothing for provenance).  Asked about a tuple, the search
walks back from it level by level over the rule instances that give it (bodies
matched against the run's final relations, so only tuples that hold are visited),
and after each level computes the heights of what it has seen by Knuth's
generalisation of Dijkstra's algorithm (a leaf is 0; a tuple is 1 + the least, over
its instances, of its body's largest height).  It stops once the tuple's height is at
most the levels walked (checked after 1, 2, 4, ... levels): a lower derivation would lie
wholly inside them.  The height
is the round of naive evaluation in which the tuple first appears.

Why not: for a tuple that does not hold, each rule of its relation and the first goal
of its body, in written order, that no binding gets past.
"""
from __future__ import annotations

from collections import defaultdict

from .data import MAX_DEPTH, Blocked, Derivation, Place, WhyNot, tuple_text
from .model import Key, Model
from .rules import Atom, Compare, Rule, compare_text

# the tuples a search may visit, and the partial bindings why-not follows, at most
MAX_VISITED = 2_000_000
MAX_PARTIAL = 100_000


class TooLarge(Exception):
    pass


class NotExplained(Exception):
    """A tuple that holds, but that no rule of an explained form derives."""


Instance = tuple[Rule, dict[str, int], list[Key]]


class Search:
    """The backward search from one tuple, its instances and the heights found."""

    def __init__(self, model: Model, target: Key) -> None:
        self.model = model
        self.target = target
        self.instances: dict[Key, list[Instance]] = {}
        self.seen: set[Key] = {target}
        self.leaves: set[Key] = set()
        self.height: dict[Key, int] = {}
        self.best: dict[Key, Instance] = {}

    def run(self) -> None:
        frontier = [self.target]
        levels = 0
        while frontier:
            following = []
            for key in frontier:
                following += self.expand(key)
            levels += 1
            frontier = following
            # heights at levels 1, 2, 4, 8, ... and at the end: a deep derivation costs
            # about twice its search, not its depth times it (walking past the level the
            # stop allows only widens what the heights are computed over)
            if levels & (levels - 1) == 0 or not frontier:
                self.heights()
                if self.height.get(self.target, levels + 1) <= levels:
                    return

    def expand(self, key: Key) -> list[Key]:
        model = self.model
        if model.is_leaf(key):
            self.leaves.add(key)
            return []
        found: list[Instance] = []
        new = []
        for rule in model.rules(key[0]):
            for bound in model.solutions(rule, key):
                body = model.body_keys(rule, bound)
                found.append((rule, bound, body))
                for b in body:
                    if b not in self.seen:
                        self.seen.add(b)
                        new.append(b)
        if len(self.seen) > MAX_VISITED:
            raise TooLarge(f"the search visited more than {MAX_VISITED:,} tuples")
        self.instances[key] = found
        return new

    def heights(self) -> None:
        """Knuth's algorithm over the instances seen: every height is final when set."""
        height: dict[Key, int] = {}
        best: dict[Key, Instance] = {}
        waiting: dict[int, int] = {}  # id of an instance -> its body tuples not yet final
        uses: dict[Key, list[tuple[Key, Instance]]] = defaultdict(list)
        buckets: dict[int, list[tuple[Key, Instance | None]]] = defaultdict(list)
        for key in self.leaves:
            buckets[0].append((key, None))
        for head, instances in self.instances.items():
            for instance in instances:
                body = set(instance[2])
                waiting[id(instance)] = len(body)
                if not body:
                    buckets[1].append((head, instance))
                for b in body:
                    uses[b].append((head, instance))
        level = 0
        while level in buckets or any(h > level for h in buckets):
            for key, instance in buckets.pop(level, ()):
                if key in height:
                    continue
                height[key] = level
                if instance is not None:
                    best[key] = instance
                for head, used in uses.get(key, ()):
                    waiting[id(used)] -= 1
                    if not waiting[id(used)] and head not in height:
                        buckets[level + 1].append((head, used))
            level += 1
        self.height, self.best = height, best


def derivation(model: Model, key: Key, limit: int) -> Derivation:
    """The minimal-height derivation of a tuple that holds, cut after `limit` nodes."""
    search = Search(model, key)
    search.run()
    if key not in search.height:  # only rules of forms not explained give it
        reasons = sorted({r.unsupported for rs in map(model.rules, {k[0] for k in search.seen})
                          for r in rs if r.unsupported})
        raise NotExplained("; ".join(reasons) or "no rule instance gives it")
    sizes = _sizes(search)
    shown = [0]
    return _node(model, search, key, sizes, shown, limit, 0)


def _sizes(search: Search) -> dict[Key, int]:
    """Each tuple's derivation size, unfolded (children have lower heights)."""
    sizes: dict[Key, int] = {}
    for key in sorted(search.height, key=search.height.__getitem__):
        instance = search.best.get(key)
        sizes[key] = 1 + (sum(sizes[b] for b in instance[2]) if instance else 0)
    return sizes


def _node(model: Model, search: Search, key: Key, sizes: dict[Key, int], shown: list[int],
          limit: int, depth: int) -> Derivation:
    shown[0] += 1
    relation, values = key[0], model.values_of(key)
    text = tuple_text(relation, values)
    instance = search.best.get(key)
    if instance is None:
        kind, place = model.leaf_place(key)
        return Derivation(relation, values, text, 0, kind, place)
    rule, bound, body = instance
    children = []
    more = 0
    for b in body:
        if shown[0] >= limit or depth + 1 >= MAX_DEPTH:
            more += sizes[b]
        else:
            children.append(_node(model, search, b, sizes, shown, limit, depth + 1))
    bindings = tuple((v, model.var_value(rule, v, p)) for v, p in bound.items()
                     if not v.startswith("__"))
    return Derivation(relation, values, text, search.height[key], "rule",
                      Place(rule.file or model.file, rule.line, rule.text), bindings,
                      model.conditions(rule, bound), tuple(children), more)


def why_not(model: Model, key: Key) -> WhyNot:
    """Each rule of the tuple's relation and the first goal that stops it."""
    relation = key[0]
    values = model.values_of(key)
    rules = model.rules(relation)
    note = "" if rules else _given_note(model, relation)
    blocked = tuple(_blocked(model, rule, key) for rule in rules)
    return WhyNot(relation, values, tuple_text(relation, values), blocked, note)


def _given_note(model: Model, relation: str) -> str:
    tensor = model.analysis.tensors[relation]
    if relation in model.given:
        return f"{model.input_text(relation)}, and it has no such tuple"
    if tensor.source_path:
        return f"`{relation}` is read from {model.source_of(relation)}, which has no such row"
    return f"`{relation}` is given by facts only, and no fact says so"


def _blocked(model: Model, rule: Rule, key: Key) -> Blocked:
    place = Place(rule.file or model.file, rule.line, rule.text)
    if rule.unsupported:
        return Blocked(place, "", f"not explained: {rule.unsupported}")
    head = model.head_bound(rule, key)
    if head is None:
        return Blocked(place, "", "its head cannot give this tuple")
    partial: list[dict[str, int]] = [head]
    pending: list[Atom | Compare] = []
    for goal in rule.body:
        pending.append(goal)
        progressed = True
        while progressed:
            progressed = False
            for waiting in list(pending):
                if isinstance(waiting, Atom) and not waiting.negated:
                    survivors = _extend(model, waiting, partial)
                elif all(model.ready(waiting, b) for b in partial):
                    survivors = [b for b in partial if model.check(rule, waiting, b)]
                else:
                    continue
                pending.remove(waiting)
                progressed = True
                if not survivors:
                    return Blocked(place, _goal_text(model, rule, waiting, head),
                                   _reason(model, rule, waiting, partial))
                partial = _agreeing(model, rule, key, survivors)
                if not partial:  # (a computed head: checked once its variables are bound)
                    return Blocked(place, "", "its head computes other values from every "
                                              "binding")
    if not any(model.head_agrees(rule, key, b) for b in partial):
        return Blocked(place, "", "its head computes other values from every binding")
    return Blocked(place, "", "every goal holds for some binding")  # (never: it would hold)


def _agreeing(model: Model, rule: Rule, key: Key, partial: list[dict[str, int]]
              ) -> list[dict[str, int]]:
    """The bindings whose computed head gives the tuple, once they bind its variables:
    a goal after that is blamed only for the bindings that could give the tuple."""
    names = {n for arg in rule.head if arg.shift is not None for n in arg.shift[0]}
    if not names or not partial or not names <= partial[0].keys():
        return partial
    return [b for b in partial if model.head_agrees(rule, key, b)]


def _extend(model: Model, atom: Atom, partial: list[dict[str, int]]) -> list[dict[str, int]]:
    out = []
    for bound in partial:
        for row in model.matching(atom, bound).tolist():
            extended = dict(bound)
            if all(arg.var is None or extended.setdefault(arg.var, p) == p
                   for arg, p in zip(atom.args, row)):
                out.append(extended)
                if len(out) > MAX_PARTIAL:
                    raise TooLarge(f"more than {MAX_PARTIAL:,} partial bindings")
    return out


def _goal_text(model: Model, rule: Rule, goal: Atom | Compare, head: dict[str, int]) -> str:
    if isinstance(goal, Compare):
        return goal.text
    text = model.atom_text(rule, goal, head)
    return f"not {text}" if goal.negated else text


def _reason(model: Model, rule: Rule, goal: Atom | Compare, partial: list[dict[str, int]]
            ) -> str:
    if isinstance(goal, Compare):
        examples = [compare_text(goal, model.bound_values(rule, goal.variables_in(b)))
                    for b in partial[:3]]
        return "false for every binding: " + ", ".join(f"`{e}`" for e in examples) + \
            (" ..." if len(partial) > 3 else "")
    if goal.negated:
        found = model.atom_text(rule, goal, partial[0])
        return f"a tuple matches `{found}`"
    return "no tuple matches"


