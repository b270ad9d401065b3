"""Datalog against the contract (LANGUAGE.md §7, §8, §9, §13, §14): an audit's
regressions, each through `fuse run` or the `fuse_lang` API, and a seeded property
test that runs random programs (facts and relation files of every format, values
of every kind: symbols, quoted strings, `"1"` beside `1`, negative and 64-bit
integers, floats; joins, recursion, negation with `_`, comparisons, computed heads,
queries with constants and `_`) and compares every query's answer with a naive
evaluator written here.  A conformance module (tests/conftest.py): the
regressions' programs run again on torch and jax; the property test on NumPy
only (its many small programs would compile for seconds each there)."""
from __future__ import annotations

import json
import operator
import random

import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, Severity, compile
from fuse_lang.cli.main import main as cli_main


def answers(text: str, folder=None, mode: str = "forward") -> list[set[tuple]]:
    program = compile(text, base_dir=folder, config=ExecutionConfig(mode=mode))
    return [set(q.tuples) for q in program.execute().queries]


def problems(text: str, folder=None) -> list[str]:
    return [d.code for d in fuse_lang.analyze(text, base_dir=folder).diagnostics
            if d.severity in (Severity.ERROR, Severity.WARNING)]


# ------------------------------------------------------------------- regressions

def test_a_wildcard_in_a_query_is_any_value_not_a_column(tmp_path, capsys):
    # `R(x, _)?` asks for each x with some tuple; `_` is no column of the answer
    text = ("P(Ann, Bob)\nP(Bob, Cy)\nA(x, y) = P(x, y)\nA(x, z) = A(x, y) P(y, z)\n"
            "A(x, _)?\nA(_, y)?\nA(Ann, _)?\nA(Cy, _)?\nA(_, _)?\n")
    for mode in ("forward", "demand"):
        assert answers(text, mode=mode) == [{("Ann",), ("Bob",)}, {("Bob",), ("Cy",)},
                                             {()}, set(), {()}]
    (tmp_path / "p.fuse").write_text(text)
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 0
    out = capsys.readouterr().out
    assert "A(x, _)?  Ann; Bob" in out and "A(Ann, _)?  yes" in out and "A(Cy, _)?  no" in out


def test_a_wildcard_in_a_query_of_a_sparse_relation():
    # (kept sparse on NumPy: the answer is projected off its stored tuples)
    facts = "".join(f"E(N{k}, N{k + 1}, M{k % 3})\n" for k in range(400))
    text = facts + "E(x, _, _)?\nE(_, _, z)?\nE(x, _, z)?\nE(N3, _, z)?\nE(_, _, _)?\n"
    kinds = {r[0]: r[1] for r in fuse_lang.plan_program(fuse_lang.analyze(text)).representations}
    assert kinds["E"] == "sparse"
    xs, zs, xz, n3, some = answers(text)
    assert xs == {(f"N{k}",) for k in range(400)} and zs == {("M0",), ("M1",), ("M2",)}
    assert xz == {(f"N{k}", f"M{k % 3}") for k in range(400)}
    assert n3 == {("M0",)} and some == {()}


@pytest.mark.parametrize("name, content", [
    ("e.tsv", ""), ("e.csv", ""), ("e.facts", ""), ("e.jsonl", ""), ("e.json", "[]"),
    ("blank.tsv", "\n\n"),
])
def test_an_empty_relation_file_is_the_empty_relation(tmp_path, name, content):
    # Soufflé writes an empty relation as an empty .facts file
    (tmp_path / name).write_text(content)
    text = (f'R(x, y) = "{name}"\nT(Ann)\nS(x) = R(x, _)\nU(x) = T(x) not R(x, _)\n'
            "S(x)?\nU(x)?\nR(x, y)?\n")
    assert problems(text, tmp_path) == []
    assert answers(text, tmp_path) == [set(), {("Ann",)}, set()]


def test_fuse_run_of_an_empty_facts_file(tmp_path, capsys):
    (tmp_path / "edge.facts").write_text("")
    (tmp_path / "p.fuse").write_text('Edge(x, y) = "edge.facts"\nPath(x, y) = Edge(x, y)\n'
                                     "Path(x, z) = Path(x, y) Edge(y, z)\nPath(x, y)?\n")
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 0
    assert "Path(x, y)?  no" in capsys.readouterr().out


def test_an_integer_constant_on_a_column_no_value_reaches_matches_nothing():
    # P's columns are empty (no base case): -7 is a value it lacks, not a position
    text = ("E(A)\nP(x, y) = E(x) P(x, y)\nS(x) = E(x) not P(x, -3)\n"
            "P(x, -7)?\nP(A, 3000000000)?\nS(x)?\n")
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.severity is not
             Severity.INFORMATION]
    assert [d.code for d in found] == ["unknown-constant"] * 3
    assert "matches nothing" in found[0].message
    assert answers(text) == [set(), set(), {("A",)}]
    # a numeric tensor's axis without values keeps positions (LANGUAGE.md §14)
    assert problems("axis i = 3\nM[i] = 1\nexport M\nM[-1]?\n") == ["invalid-index"]


def test_symbols_of_two_columns_compare_with_equals_and_not_equals():
    # (Soufflé: `d(x, y) :- a(x), b(y), x != y.` over symbols): the columns are two
    # domains, numbered apart; the comparison compares their values
    text = ("A(Ann)\nA(Bob)\nA(1)\nB(Bob)\nB(Cy)\nB(\"1\")\nB(1)\n"
            "D(x, y) = A(x) B(y) (x != y)\nSame(x) = A(x) B(y) (x == y)\n"
            "D(Bob, y)?\nSame(x)?\n")
    assert problems(text) == []
    assert answers(text) == [{("Cy",), ("1",), (1,)}, {("Bob",), (1,)}]
    # order stays numbers only
    assert problems("A(Ann)\nB(1)\nD(x, y) = A(x) B(y) (x < y)\n") == ["not-a-number"]


def test_arithmetic_on_a_column_of_floats_is_an_error_not_an_empty_answer(tmp_path):
    (tmp_path / "r.tsv").write_text("a\t0.5\nb\t2.25\nc\t3\n")
    computed = 'R(x, v) = "r.tsv"\nS(x, v + 1) = R(x, v)\nS(x, y)?\n'
    bound = 'R(x, v) = "r.tsv"\nS(x, w) = R(x, v) (w == v + 1)\nS(x, y)?\n'
    for text in (computed, bound):
        assert problems(text, tmp_path) == ["not-a-number"], text
    # comparing floats, with arithmetic, is fine
    compared = 'R(x, v) = "r.tsv"\nS(x) = R(x, v) (v + 1 > 3)\nS(x)?\n'
    assert problems(compared, tmp_path) == []
    assert answers(compared, tmp_path) == [{("b",), ("c",)}]


# ------------------------------------------------ random programs vs a reference

SYMBOLS = ("Ann", "Bob", "Cy", "New York", "ann", "1", "x y")
VALUES = {
    "sym": SYMBOLS,
    "int": (0, 1, 2, -1, -7, 42, 3000000000, -3000000000, 2**63 - 1, -(2**63)),
    "small": (0, 1, 2, 3, 5, -2),  # the columns heads compute on
    "mixed": ("Ann", "1", 1, -7, "Bob"),  # `"1"` and `1` are different values
    "float": (0.5, -2.25, 7.75, 3),
}
ORDERED = ("int", "small", "float")
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq, "!=": operator.ne}
FORMATS = ("inline", "inline", "tsv", "csv", "facts", "jsonl")


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _constant(rng: random.Random, value) -> str:
    if type(value) is not str:
        return str(value)
    bare = value[:1].isupper() and value.isalnum()
    return value if bare and rng.random() < 0.7 else json.dumps(value)


def _cell(value, fmt: str) -> str:
    if type(value) is str and fmt != "facts" and _looks_numeric(value):
        return f'"{value}"'  # a quoted field is a string (docs/language.md, "Files")
    return str(value)


class _Program:
    """A random stratified program: EDB relations E* (facts in the text or a file),
    IDB relations P* in strata (a rule reads its own stratum positively, and
    negates only lower ones), then queries."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.columns: dict[str, tuple[str, ...]] = {}
        self.stratum: dict[str, int] = {}
        self.facts: dict[str, set[tuple]] = {}
        self.files: dict[str, str] = {}
        self.rules: list[tuple] = []  # (head, head terms, body items)
        for k in range(rng.randrange(2, 5)):
            self._edb(f"E{k}")
        level = 0
        idb = [f"P{k}" for k in range(rng.randrange(1, 5))]
        for k, name in enumerate(idb):
            level += 1 if k and rng.random() < 0.6 else 0
            self.stratum[name] = level
            self.columns[name] = tuple(rng.choice(list(VALUES)) for _ in range(rng.choice((1, 2, 2, 3))))
        for name in idb:
            self.rules += [r for r in (self._rule(name) for _ in range(rng.randrange(1, 4))) if r]
        self._drop_undefined()
        self.queries = [(name, self._query(name)) for name in self.idb + [rng.choice(sorted(self.facts))]
                        for _ in range(rng.randrange(1, 3))]

    def _edb(self, name: str) -> None:
        rng = self.rng
        self.columns[name] = tuple(rng.choice(list(VALUES)) for _ in range(rng.choice((1, 2, 2, 3))))
        self.stratum[name] = -1
        rows = {tuple(rng.choice(VALUES[t]) for t in self.columns[name])
                for _ in range(rng.randrange(0, 7))}
        self.facts[name] = rows
        fmt = rng.choice(FORMATS)
        if fmt == "facts" and any(type(v) is str and _looks_numeric(v) for r in rows for v in r):
            fmt = "tsv"  # (.facts has no quoting: "1" there is the number)
        if fmt == "inline" and not rows:
            fmt = "facts"
        if fmt != "inline":
            self.files[name] = f"{name.lower()}.{fmt}"

    def _drop_undefined(self) -> None:
        while True:
            defined = {r[0] for r in self.rules}
            kept = [r for r in self.rules if all(item[1] in self.facts or item[1] in defined
                                                 for item in r[2] if item[0] != "cmp")]
            if kept == self.rules:
                break
            self.rules = kept
        self.idb = sorted({r[0] for r in self.rules})

    def _terms(self, name: str, kinds: dict[str, str], fresh: bool) -> tuple:
        rng = self.rng
        terms: list = []
        for t in self.columns[name]:
            same = [v for v, kind in kinds.items() if kind == t and v not in terms]
            r = rng.random()
            if same and r < 0.5:
                terms.append(rng.choice(same))
            elif r < 0.62:
                terms.append(("c", rng.choice(VALUES[t])))
            elif r < 0.72 or not fresh:
                terms.append("_")
            else:
                terms.append(f"v{len(kinds)}")
                kinds[terms[-1]] = t
        return tuple(terms)

    def _rule(self, head: str) -> tuple | None:
        rng = self.rng
        readable = [r for r in self.columns if self.stratum[r] <= self.stratum[head]]
        kinds: dict[str, str] = {}
        body: list[tuple] = [("pos", name, self._terms(name, kinds, True))
                             for name in (rng.choice(readable) for _ in range(rng.randrange(1, 4)))]
        bound = dict(kinds)
        for _ in range(rng.randrange(0, 3) if bound else 0):
            a = rng.choice(sorted(bound))
            others = [v for v in bound if v != a and (bound[v] == bound[a] or
                                                      {bound[v], bound[a]} <= set(ORDERED))]
            ordered = bound[a] in ORDERED and rng.random() < 0.5
            op = rng.choice(list(OPS) if ordered else ["==", "!="])
            if others and rng.random() < 0.5:
                body.append(("cmp", a, op, rng.choice(others)))
            elif ordered or bound[a] == "sym":
                value = rng.choice(VALUES[bound[a]] if ordered else ("Ann", "Bob", "Dee"))
                body.append(("cmp", a, op, ("c", value)))
        lower = [r for r in self.columns if self.stratum[r] < self.stratum[head]]
        if lower and rng.random() < 0.5:
            name = rng.choice(lower)
            body.append(("neg", name, self._terms(name, dict(bound), False)))
        head_terms: list = []
        for t in self.columns[head]:
            same = [v for v, kind in bound.items() if kind == t]
            if same:
                head_terms.append(rng.choice(same))
            elif rng.random() < 0.5:
                head_terms.append(("c", rng.choice(VALUES[t])))
            else:
                return None
        first = head_terms[0]
        if self.columns[head][0] == "small" and type(first) is str and rng.random() < 0.4:
            body += [("cmp", first, "<", ("c", 6)), ("cmp", first, ">", ("c", -4))]
            head_terms[0] = ("add", first, rng.choice((1, -1, 2)))
        return head, tuple(head_terms), tuple(body)

    def _query(self, name: str) -> tuple:
        rng = self.rng
        out: list = []
        for t in self.columns[name]:
            r = rng.random()
            out.append(("c", rng.choice(VALUES[t])) if r < 0.25 else "_" if r < 0.35
                       else f"q{len(out)}")
        return tuple(out)

    # ------------------------------------------------------------------ text
    def _term(self, term) -> str:
        if type(term) is str:
            return term
        if term[0] == "c":
            return _constant(self.rng, term[1])
        return f"{term[1]} + {term[2]}" if term[2] > 0 else f"{term[1]} - {-term[2]}"

    def _atom(self, name: str, terms) -> str:
        return f"{name}({', '.join(self._term(t) for t in terms)})"

    def text(self, folder) -> str:
        lines = []
        for name, rows in self.facts.items():
            if name in self.files:
                file = self.files[name]
                columns = ", ".join(f"c{k}" for k in range(len(self.columns[name])))
                lines.append(f'{name}({columns}) = "{file}"')
                fmt = file.rsplit(".", 1)[1]
                sep = "," if fmt == "csv" else "\t"
                (folder / file).write_text("".join(
                    json.dumps(list(r)) + "\n" if fmt == "jsonl" else
                    sep.join(_cell(v, fmt) for v in r) + "\n" for r in sorted(rows, key=repr)),
                    encoding="utf-8")
            else:
                lines += [self._atom(name, [("c", v) for v in r]) for r in sorted(rows, key=repr)]
        for head, head_terms, body in self.rules:
            parts = [self._atom(i[1], i[2]) if i[0] == "pos" else
                     "not " + self._atom(i[1], i[2]) if i[0] == "neg" else
                     f"({i[1]} {i[2]} {i[3] if type(i[3]) is str else i[3][1]})" for i in body]
            lines.append(f"{self._atom(head, head_terms)} = {' '.join(parts)}")
        lines += [self._atom(name, terms) + "?" for name, terms in self.queries]
        return "\n".join(lines) + "\n"


def _value(v) -> tuple:
    return ("s", v) if type(v) is str else ("n", v)  # `"1"` and `1` differ


def _match(terms, row, env: dict) -> dict | None:
    env = dict(env)
    for term, v in zip(terms, row):
        if term == "_":
            continue
        if type(term) is str:
            if _value(env.setdefault(term, v)) != _value(v):
                return None
        elif _value(term[1]) != _value(v):
            return None
    return env


def _holds(env: dict, item: tuple) -> bool:
    _, a, op, b = item
    left, right = env[a], env[b] if type(b) is str else b[1]
    if op in ("==", "!="):
        return (_value(left) == _value(right)) == (op == "==")
    return OPS[op](left, right)


def _reference(program: _Program) -> dict[str, set[tuple]]:
    """Stratified Datalog the slow obvious way: each stratum's rules to a fixpoint."""
    db = {name: set(rows) for name, rows in program.facts.items()}
    db.update({name: set() for name in program.idb})
    for level in sorted({program.stratum[name] for name in program.idb}):
        rules = [r for r in program.rules if program.stratum[r[0]] == level]
        changed = True
        while changed:
            changed = False
            for head, head_terms, body in rules:
                envs = [{}]
                for item in body:
                    if item[0] == "pos":
                        envs = [e for env in envs for row in db[item[1]]
                                if (e := _match(item[2], row, env)) is not None]
                envs = [env for env in envs if all(_holds(env, i) for i in body if i[0] == "cmp")
                        and not any(_match(i[2], row, env) is not None
                                    for i in body if i[0] == "neg" for row in db[i[1]])]
                for env in envs:
                    row = tuple(env[t] if type(t) is str else t[1] if t[0] == "c"
                                else env[t[1]] + t[2] for t in head_terms)
                    if row not in db[head]:
                        db[head].add(row)
                        changed = True
    return db


def _answer(db, name: str, terms) -> set[tuple]:
    free = list(dict.fromkeys(t for t in terms if type(t) is str and t != "_"))
    return {tuple(_value(env[v]) for v in free) for row in db[name]
            if (env := _match(terms, row, {})) is not None}


@pytest.mark.reference_only
@pytest.mark.parametrize("seed", range(10))
def test_random_programs_answer_as_the_reference(tmp_path_factory, seed):
    rng = random.Random(seed)
    for _ in range(12):
        program = _Program(rng)
        folder = tmp_path_factory.mktemp("program")
        text = program.text(folder)
        errors = [(d.code, d.message) for d in fuse_lang.analyze(text, base_dir=folder).diagnostics
                  if d.severity is Severity.ERROR]
        assert errors == [], text
        db = _reference(program)
        got = answers(text, folder)
        for (name, terms), answer in zip(program.queries, got):
            assert {tuple(map(_value, row)) for row in answer} == _answer(db, name, terms), \
                (program._atom(name, terms), text)


@pytest.mark.parametrize("rule", ["B(x) = E(x) (x != w)", "B(x) = E(x) (x < w + 1)",
                                  "B(x) = E(x) (w == x + 1)",
                                  "B(x) = E(x) (x == 1) + E(x) (x != w)"])
def test_a_variable_only_in_a_comparison_is_ungrounded_not_an_undefined_tensor(tmp_path, rule,
                                                                               capsys):
    # Soufflé: "Ungrounded variable w"; the first version said `w` is not defined
    text = f"E(1)\nE(2)\n{rule}\nB(x)?\n"
    assert problems(text) == ["unsafe-comparison"]
    (tmp_path / "p.fuse").write_text(text)
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 1
    out = capsys.readouterr()
    assert "unsafe-comparison" in out.out + out.err and "Traceback" not in out.out + out.err


def test_a_computed_head_beside_a_column_of_symbols_reaches_every_value():
    # the interval analysis read a column of symbols only as an empty one, so the
    # computed column did not grow: P(4) was silently missing
    text = "E(Bob, 0)\nE(Bob, 2)\nP(v + 2) = E(u, v)\nP(a)?\n"
    assert problems(text) == []
    assert answers(text) == [{(2,), (4,)}]


def test_a_facts_sink_writes_soufflés_tuples_and_reads_back(tmp_path, capsys):
    (tmp_path / "p.fuse").write_text('R(1, Bob)\nR(-3000000000, "New York")\n'
                                     'Path(x, y) = R(x, y)\n"path.facts" = Path(x, y)\n')
    assert cli_main(["run", str(tmp_path / "p.fuse")]) == 0
    assert (tmp_path / "path.facts").read_text() == "-3000000000\tNew York\n1\tBob\n"
    text = 'Path(x, y) = "path.facts"\nPath(x, y)?\n'
    assert answers(text, tmp_path) == [{(1, "Bob"), (-3000000000, "New York")}]
    # "1" would read back as the number 1: refused, naming .tsv
    (tmp_path / "q.fuse").write_text('S(1, "1")\n"s.facts" = S(x, y)\n')
    capsys.readouterr()
    assert cli_main(["run", str(tmp_path / "q.fuse")]) == 1
    err = capsys.readouterr().err
    assert ".tsv" in err and "Traceback" not in err and not (tmp_path / "s.facts").exists()


def test_a_computed_column_shared_with_an_empty_relation_is_bounded_by_its_rules(tmp_path):
    # E's column holds no value (an empty file): it adds none to the computed column,
    # which was `domain-limit` ("without bound") as if E's column held every integer
    (tmp_path / "e.facts").write_text("")
    text = 'E(x) = "e.facts"\nP(x) = E(x)\nP(v + 2) = P(v) (v < 6)\nP(x)?\n'
    assert problems(text, tmp_path) == []
    assert answers(text, tmp_path) == [set()]
    (tmp_path / "e.facts").write_text("1\n")
    assert answers(text, tmp_path) == [{(1,), (3,), (5,), (7,)}]


def test_a_computed_head_joining_a_derived_column_of_symbols_reaches_its_values():
    # P0's column (rules over symbols) had no numbers, read as empty: P1's computed
    # column did not grow to -1 and 2, and P1 lost (-1, B) and (2, D) silently
    text = ("E0(0, B)\nE0(1, A)\nE0(3, D)\nP0(v) = E0(_, v)\n"
            "P1(u - 1, v) = E0(u, v) P0(v)\nP1(x, y)?\nP1(x, D)?\n")
    for mode in ("forward", "demand"):
        assert answers(text, mode=mode) == [{(-1, "B"), (0, "A"), (2, "D")}, {(2,)}]


def test_float_constants_in_facts_atoms_and_queries_are_values(tmp_path):
    # LANGUAGE.md §14: floats are values where a program compares them
    text = ("Price(Apple, 0.5)\nPrice(Pear, 2.25)\nPrice(Fig, 3)\nPrice(Kiwi, -1.5)\n"
            "Cheap(x) = Price(x, p) (p < 1)\nHalf(x) = Price(x, 0.5)\n"
            "Cheap(x)?\nHalf(x)?\nPrice(x, -1.5)?\nPrice(Pear, p)?\n")
    assert problems(text) == []
    assert answers(text) == [{("Apple",), ("Kiwi",)}, {("Apple",)}, {("Kiwi",)}, {(2.25,)}]
    (tmp_path / "p.tsv").write_text("Apple\t0.5\nFig\t3\n")
    read = 'Price(x, p) = "p.tsv"\nPrice(x, 0.5)?\nPrice(x, 3)?\n'
    assert answers(read, tmp_path) == [{("Apple",)}, {("Fig",)}]
    # in brackets a float is no position
    assert problems("X[i] = const([1, 2])\nY = X[0.5]\nexport Y\n") == ["invalid-index"]
    assert problems("R(1e400)\n") == ["invalid-index"]


def test_an_integer_and_the_same_float_are_one_value(tmp_path):
    # docs/language.md, "Values in relations": numbers are values by magnitude, as
    # in SQL; `"1"` stays another value
    text = ('R(1)\nR(1.0)\nR("1")\nN(1.0)\nN(1)\nS(2.0)\nT(x) = N(x) S(y) (x < y)\n'
            'R(1.0)?\nS(2)?\nR(x)?\nN(x)?\nT(x)?\n')
    assert problems(text) == []
    assert answers(text) == [{()}, {()}, {(1,), ("1",)}, {(1,)}, {(1,)}]
    (tmp_path / "r.tsv").write_text("1.0\n2\n")
    assert answers('R(x) = "r.tsv"\nR(1)?\nR(2.0)?\nR(x)?\n', tmp_path) == [
        {()}, {()}, {(1,), (2,)}]


def test_a_quoted_constant_in_a_comparison_is_a_symbol(tmp_path):
    # Soufflé writes every symbol quoted: `x != "New York"`; "1" is the string
    text = ('P(Ann)\nP("New York")\nP("1")\nP(1)\nQ(x) = P(x) (x != "New York")\n'
            'One(x) = P(x) (x == "1")\nSame(x) = P(x) ("Ann" == x)\nQ(x)?\nOne(x)?\nSame(x)?\n')
    assert problems(text) == []
    assert answers(text) == [{("Ann",), ("1",), (1,)}, {("1",)}, {("Ann",)}]
    (d,) = [d for d in fuse_lang.analyze('P(Ann)\nQ(x) = P(x) (x == "Anne")\n').diagnostics
            if d.code == "unknown-symbol"]
    assert "did you mean `Ann`?" in d.message
    assert problems('P(Ann)\nQ(x) = P(x) (x < "Ann")\n') == ["not-a-number"]
    # a sparse relation filters its join's tuples by the quoted constant too
    facts = "".join(f'E("n {k}", "n {k + 1}")\n' for k in range(400))
    sparse = facts + 'F(x, y) = E(x, y) (y != "n 5")\nF(x, y)?\n'
    kinds = {r[0]: r[1] for r in fuse_lang.plan_program(fuse_lang.analyze(sparse)).representations}
    assert kinds["E"] == kinds["F"] == "sparse"
    (f,) = answers(sparse)
    assert len(f) == 399 and ("n 4", "n 5") not in f
    # anywhere else a string is still a file path
    assert problems('X[i] = const([1])\nY[i] = X[i] + "a.npy"\n') == ["invalid-statement"]


_BROKEN = {  # a rule added to a random program, and the diagnostic it must get
    "unsafe-negation": "Bad(x) = {atom} not {name}({unbound})",
    "unbound-head-variable": "Bad(x, w) = {atom}",
    "negation-cycle": "Bad(x) = {atom} not Bad2(x)\nBad2(x) = {atom} Bad(x)",
    "unsafe-comparison": "Bad(x) = {atom} (x != w)",
}


@pytest.mark.reference_only
@pytest.mark.parametrize("seed", range(3))
def test_unsafe_and_unstratified_programs_get_their_diagnostic(tmp_path, seed, capsys):
    rng = random.Random(seed)
    for code, rule in _BROKEN.items():
        program = _Program(rng)
        name = rng.choice(sorted(program.facts))
        arity = len(program.columns[name])
        atom = f"{name}({', '.join(['x'] + ['_'] * (arity - 1))})"
        # (a name twice in the negated atom would be its own "there is": `not R(x, w, w)`)
        unbound = ", ".join(["x"] + [f"w{k}" for k in range(1, arity)]) if arity > 1 else "w"
        extra = rule.format(atom=atom, name=name, unbound=unbound)
        text = program.text(tmp_path) + extra + "\n" + ("Bad(x, y)?\n" if "w)" in extra.split(
            "=")[0] else "Bad(x)?\n")
        assert code in [d.code for d in fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
                        if d.severity is Severity.ERROR], text
        (tmp_path / "p.fuse").write_text(text)
        assert cli_main(["run", str(tmp_path / "p.fuse")]) == 1
        out = capsys.readouterr()
        assert f"[{code}]" in out.out + out.err and "Traceback" not in out.out + out.err
