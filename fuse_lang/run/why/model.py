"""A finished run's relations and rules, as provenance reads them: which tuples hold
(`Store`), each relation's rules (`rules`), which tuples are leaves (facts, file
rows, inputs) and where each is written, and each rule's solutions for a head."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from ...check import Analysis
from ...front import ir
from ..inputs import fact_position, load_base
from .data import Condition, Place, show_value
from .rules import Atom, Compare, Rule, compare_holds, compare_text, rules_of, statement_place
from .store import Relation, Store, positions_of

Key = tuple[str, tuple[int, ...]]  # a tuple of a relation, as positions


class Model:
    def __init__(self, analysis: Analysis, plan: Any, values: Mapping[str, Any],
                 base_dir: Path, given: Mapping[str, Any],
                 source_labels: Mapping[str, str] | None = None,
                 input_labels: Mapping[str, str] | None = None) -> None:
        self.analysis = analysis
        self.source_labels = source_labels or {}
        self.input_labels = input_labels or {}
        self.plan = plan
        self.values = values
        self.base_dir = base_dir
        self.given = given
        shapes = {n: tuple(e or 0 for e in t.shape) for n, t in analysis.tensors.items()}
        self.store = Store(values, shapes)
        self._rules: dict[str, list[Rule]] = {}
        self._base: dict[str, Relation | None] = {}
        self._facts: dict[str, dict[tuple[int, ...], int]] = {}
        self._rows: dict[tuple[str, tuple], Place] = {}
        self._texts: dict[Path, str | None] = {}

    # ------------------------------------------------------------ values
    def axis_values(self, relation: str) -> list[tuple | None]:
        return [self.analysis.domain_symbols.get(a.domain) or None
                for a in self.analysis.tensors[relation].axes]

    def values_of(self, key: Key) -> tuple:
        """A tuple's positions as the values the program wrote."""
        return tuple(_value(table, p) for table, p in zip(self.axis_values(key[0]), key[1]))

    def var_value(self, rule: Rule, var: str, position: int) -> Any:
        return _value(self.plan.statements[rule.statement].values.get(var), position)

    def bound_values(self, rule: Rule, bound: Mapping[str, int]) -> dict[str, Any]:
        return {v: self.var_value(rule, v, p) for v, p in bound.items()}

    # ------------------------------------------------------------- rules
    def rules(self, relation: str) -> list[Rule]:
        made = self._rules.get(relation)
        if made is None:
            made = self._rules[relation] = rules_of(self.analysis, relation)
        return made

    def holds(self, key: Key) -> bool:
        return self.store.relation(key[0]).holds(key[1])

    def is_leaf(self, key: Key) -> bool:
        """A tuple given, not derived: a relation without rules, or in its base."""
        if not self.rules(key[0]):
            return True
        base = self.base(key[0])
        return base is not None and base.holds(key[1])

    def base(self, relation: str) -> Relation | None:
        """The facts, file rows or input of a relation that also has rules."""
        if relation not in self._base:
            tensor = self.analysis.tensors[relation]
            shape = tuple(e or 0 for e in tensor.shape)
            from ..backends.numpy_backend import NumpyBackend

            value, has = load_base(self.analysis, NumpyBackend(), self.base_dir, self.given,
                                   relation, shape, relation in self.plan.sparse
                                   and len(shape) == 2)
            self._base[relation] = Relation(positions_of(value), shape) if has else None
        return self._base[relation]

    def leaf_place(self, key: Key) -> tuple[str, Place | None]:
        """Where a given tuple comes from: ("fact", its line), ("file", the row) or
        ("input", None)."""
        relation, positions = key
        if relation in self.given:
            return "input", None
        k = self.facts(relation).get(positions)
        if k is not None:
            return "fact", self.place(k)
        return "file", self.file_row(key)

    def facts(self, relation: str) -> dict[tuple[int, ...], int]:
        made = self._facts.get(relation)
        if made is None:
            made = {}
            statements = self.analysis.program.statements
            for k in self.analysis.tensors[relation].statements:
                if isinstance(statements[k], ir.Fact):
                    made.setdefault(fact_position(self.analysis, relation, statements[k].atom), k)
            self._facts[relation] = made
        return made

    def place(self, k: int) -> Place:
        """Where statement k is written (rules.statement_place)."""
        file, line, text = statement_place(self.analysis, k)
        return Place(file or self.file, line, text)

    @property
    def file(self) -> str:
        return self.analysis.path or "<program>"

    def source_of(self, name: str) -> str:
        """Where tensor `name` is read from, as the user knows it: its source's path,
        or what the run's maker calls it (a notebook variable written to a file)."""
        source = self.analysis.tensors[name].source_path or ""
        return self.source_labels.get(source, source)

    def input_text(self, name: str) -> str:
        """"`X` is an input of the run", with what the run's maker calls it (the
        notebook variable it came from) where it says."""
        label = self.input_labels.get(name)
        return f"`{name}` is an input of the run" + (f": {label}" if label else "")

    def file_row(self, key: Key) -> Place | None:
        """The first row of the relation's file that holds the tuple: found in the
        file's text as a line of its values joined by a tab or a comma (a search of
        the text, not a parse of its lines); else by a scan of its cells."""
        found = self._rows.get(key)
        if found is not None:
            return found
        source = self.analysis.tensors[key[0]].source_path
        if not source:
            return None
        path = Path(source.partition("#")[0])
        shown = self.source_of(key[0])
        if path.suffix.lower() in (".npy", ".npz", ".safetensors"):  # an array: its cell
            found = self._rows[key] = Place(shown, 0, f"[{', '.join(map(str, key[1]))}]")
            return found
        text = self._file_text(path if path.is_absolute() else self.base_dir / path)
        if text is None:
            return None
        wanted = [str(v) for v in self.values_of(key)]
        for delimiter in ("\t", ",", ", "):
            at = text.find("\n" + delimiter.join(wanted) + "\n")
            if at >= 0:
                line = text.count("\n", 0, at + 1)
                found = Place(shown, line, delimiter.join(wanted))
                break
        else:
            found = _scan(text, wanted, shown)
        self._rows[key] = found
        return found

    def _file_text(self, path: Path) -> str | None:
        """A relation file's text between newlines ("\n" first and last), read once."""
        if path not in self._texts:
            try:
                with open(path, encoding="utf-8", errors="replace") as file:
                    self._texts[path] = "\n" + file.read().replace("\r\n", "\n") + "\n"
            except OSError:
                self._texts[path] = None
        return self._texts[path]

    # --------------------------------------------------------- solutions
    def head_bound(self, rule: Rule, key: Key) -> dict[str, int] | None:
        """The rule's head variables bound by the tuple (None: its head cannot give it)."""
        bound: dict[str, int] = {}
        for arg, position in zip(rule.head, key[1]):
            if arg.shift is not None:
                continue  # a computed head is checked once the body binds its variables
            if arg.var is None:
                if arg.position != position:
                    return None
            elif bound.setdefault(arg.var, position) != position:
                return None
        return bound

    def head_agrees(self, rule: Rule, key: Key, bound: Mapping[str, int]) -> bool:
        tables = self.axis_values(key[0])
        for pos, (arg, position) in enumerate(zip(rule.head, key[1])):
            if arg.shift is None:
                continue
            names, offset = arg.shift
            try:
                total = sum(self.var_value(rule, n, bound[n]) for n in names) + offset
            except (KeyError, TypeError):
                return False
            if _value(tables[pos], position) != total:
                return False
        return True

    def solutions(self, rule: Rule, key: Key) -> Iterator[dict[str, int]]:
        """Each binding of the rule's variables that gives the tuple, every goal holding."""
        bound = self.head_bound(rule, key)
        if bound is None or rule.unsupported:
            return
        for solution in self._solve(rule, list(rule.body), bound):
            if self.head_agrees(rule, key, solution):
                yield solution

    def _solve(self, rule: Rule, goals: list, bound: dict[str, int]
               ) -> Iterator[dict[str, int]]:
        rest = []
        for goal in goals:
            if self.ready(goal, bound):
                if not self.check(rule, goal, bound):
                    return
            else:
                rest.append(goal)
        atoms = [g for g in rest if isinstance(g, Atom) and not g.negated]
        if not atoms:
            if not rest:  # (else a goal whose variables nothing binds: unsafe)
                yield bound
            return
        best, rows = None, None
        for atom in atoms:  # the atom with the fewest matching tuples first
            found = self.matching(atom, bound)
            if rows is None or len(found) < len(rows):
                best, rows = atom, found
        assert best is not None and rows is not None
        others = [g for g in rest if g is not best]
        for row in rows.tolist():
            extended = dict(bound)
            if all(arg.var is None or extended.setdefault(arg.var, p) == p
                   for arg, p in zip(best.args, row)):
                yield from self._solve(rule, others, extended)

    def matching(self, atom: Atom, bound: Mapping[str, int]) -> np.ndarray:
        fixed = {}
        for axis, arg in enumerate(atom.args):
            if arg.var is None:
                fixed[axis] = arg.position
            elif arg.var in bound:
                fixed[axis] = bound[arg.var]
        return self.store.relation(atom.relation).matching(fixed)

    @staticmethod
    def ready(goal: Atom | Compare, bound: Mapping[str, int]) -> bool:
        if isinstance(goal, Compare):
            return goal.variables <= bound.keys()
        return goal.negated and goal.named() <= bound.keys()

    def check(self, rule: Rule, goal: Atom | Compare, bound: Mapping[str, int]) -> bool:
        if isinstance(goal, Compare):
            return compare_holds(goal, self.bound_values(rule, goal.variables_in(bound)))
        return len(self.matching(goal, bound)) == 0

    def body_keys(self, rule: Rule, bound: Mapping[str, int]) -> list[Key]:
        return [(a.relation, tuple(bound[g.var] if g.var is not None else g.position
                                   for g in a.args)) for a in rule.atoms]

    def conditions(self, rule: Rule, bound: Mapping[str, int]) -> tuple[Condition, ...]:
        out = []
        for goal in rule.body:
            if isinstance(goal, Compare):
                values = self.bound_values(rule, goal.variables_in(bound))
                out.append(Condition("comparison", compare_text(goal, values)))
            elif goal.negated:
                out.append(Condition("not", f"no tuple of {self.atom_text(rule, goal, bound)}"))
        return tuple(out)

    def atom_text(self, rule: Rule, atom: Atom, bound: Mapping[str, int]) -> str:
        """`Banned(Bob, _)`: an atom with its bound variables' values."""
        args = []
        for arg in atom.args:
            if arg.var is not None and arg.var in bound:
                args.append(show_value(self.var_value(rule, arg.var, bound[arg.var])))
            else:
                args.append(arg.text)
        return f"{atom.relation}({', '.join(args)})"


def _scan(text: str, wanted: list[str], source: str) -> Place:
    """The row whose cells (unquoted, trimmed) are the values; line 0 when none is."""
    for number, line in enumerate(text.split("\n")[1:-1], 1):
        cells = [c.strip().strip('"') for c in
                 (line.split("\t") if "\t" in line else line.split(","))]
        if cells == wanted:
            return Place(source, number, line)
    return Place(source, 0, "")


def _value(table: tuple | None, position: int) -> Any:
    if table is not None and 0 <= position < len(table):
        value = table[position]
        return value.item() if hasattr(value, "item") else value
    return int(position)
