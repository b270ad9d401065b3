"""A Datalog conformance audit (issue 18, LANGUAGE.md §13 and §14): programs a
Soufflé user writes that the other Datalog tests do not, each answer compared with
DuckDB's SQL on the same facts (or a hand-computed answer) on every installed
backend, forward and demand mode; each refusal a diagnostic with its code and the
place it points at, never a traceback or a silent answer."""
from __future__ import annotations

import importlib.util

import pytest

import fuse_lang
from fuse_lang.front.diagnostics import Severity
from fuse_lang.plan.config import ExecutionConfig

duckdb = pytest.importorskip("duckdb")

BACKENDS = [b for b in ("numpy", "torch", "jax") if importlib.util.find_spec(b) is not None]
CONFIGS = [(b, m) for b in BACKENDS for m in ("forward", "demand")]


def answers(text: str, folder=None, backend: str = "numpy", mode: str = "forward",
            sparse: tuple[str, ...] = ()) -> list[set[tuple]]:
    program = fuse_lang.compile(text, base_dir=folder,
                                representation={n: "sparse" for n in sparse},
                                config=ExecutionConfig(backend=backend, mode=mode))
    return [set(q.tuples) for q in program.execute().queries]


def errors(text: str, folder=None) -> list[tuple[str, str, int]]:
    """Each error as (code, the text its range covers, its 0-based line)."""
    return [(d.code, text[d.span.start:d.span.end], text.count("\n", 0, d.span.start))
            for d in fuse_lang.analyze(text, base_dir=folder).diagnostics
            if d.severity is Severity.ERROR]


def duck(sql: str, setup: str = "") -> set[tuple]:
    con = duckdb.connect()
    if setup:
        con.execute(setup)
    return set(con.execute(sql).fetchall())


# ------------------------------------------------------ negation in several strata

STRATA = """\
Lonely(x) = Node(x) not Unreached(x) not Edge(x, _)
Unreached(x) = Node(x) not Reach(x)
Reach(x) = Start(x)
Reach(y) = Reach(x) Edge(x, y)
Sink(x, y) = Edge(x, y) not Edge(y, _)
Node(A)
Node(B)
Node("C d")
Node("Ünï")
Node(E)
Edge(A, B)
Edge(B, "C d")
Edge(E, A)
Start(A)
Unreached(x)?
Lonely(x)?
Lonely("C d")?
Sink(x, y)?
Reach(x)?
"""
STRATA_SQL = [
    "WITH RECURSIVE r(x) AS (SELECT x FROM start UNION SELECT e.y FROM r JOIN edge e ON e.x = r.x)"
    " SELECT x FROM node WHERE x NOT IN (SELECT x FROM r)",
    "WITH RECURSIVE r(x) AS (SELECT x FROM start UNION SELECT e.y FROM r JOIN edge e ON e.x = r.x),"
    " u AS (SELECT x FROM node WHERE x NOT IN (SELECT x FROM r))"
    " SELECT x FROM node WHERE x NOT IN (SELECT x FROM u) AND x NOT IN (SELECT x FROM edge)",
    None,
    "SELECT x, y FROM edge WHERE y NOT IN (SELECT x FROM edge)",
    "WITH RECURSIVE r(x) AS (SELECT x FROM start UNION SELECT e.y FROM r JOIN edge e ON e.x = r.x)"
    " SELECT x FROM r",
]
STRATA_TABLES = ("CREATE TABLE node AS SELECT * FROM (VALUES ('A'), ('B'), ('C d'), ('Ünï'),"
                 " ('E')) t(x); CREATE TABLE edge AS SELECT * FROM (VALUES ('A', 'B'),"
                 " ('B', 'C d'), ('E', 'A')) t(x, y); CREATE TABLE start AS SELECT 'A' AS x;")


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_negation_in_three_strata_of_relations_defined_later_answers_as_duckdb(backend, mode):
    assert not errors(STRATA)
    got = answers(STRATA, backend=backend, mode=mode)
    for sql, answer in zip(STRATA_SQL, got):
        if sql is not None:
            assert answer == duck(sql, STRATA_TABLES), sql
    assert got[1] == {("C d",)} and got[2] == {()}  # a ground query: yes
    assert got[0] == {("Ünï",), ("E",)}


def test_negation_of_a_sparse_relation_in_several_strata_answers_as_dense():
    dense = answers(STRATA)
    for backend in BACKENDS:
        assert answers(STRATA, backend=backend, sparse=("Edge", "Sink")) == dense


# ------------------------------------------------------------------ safety

@pytest.mark.parametrize("text,expected", [
    # a variable only in arithmetic of a body atom (Soufflé: ungrounded variable y)
    ("P(1)\nP(2)\nQ(2)\nQ(3)\nR(x) = P(x) Q(x + y)\n", [("unsafe-arithmetic", "y", 4)]),
    ("V(1)\nV(5)\nR(n) = V(n - 1)\n", [("unsafe-arithmetic", "n", 2)]),
    ("V(2)\nR(n) = V(n / 2)\n", [("unsafe-arithmetic", "n", 1), ("not-a-number", "n / 2", 1)]),
    # reported once: not again as the comparison's, the negation's or the head's
    ("P(1)\nQ(2)\nR(x, y) = P(x) Q(x + y) (y > 0) not Q(y)\n", [("unsafe-arithmetic", "y", 2)]),
    # a variable only under negation, only in a comparison, only in the head
    ("P(A)\nQ(A, B)\nR(x) = P(x) not Q(x, y)\n", [("unsafe-negation", "y", 2)]),
    ("P(A)\nQ(A)\nR(x) = P(x) not (Q(y))\n", [("unsafe-negation", "y", 2)]),
    ("P(1)\nR(x) = P(x) (y < 3)\n", [("unsafe-comparison", "y", 1)]),
    ("P(1)\nR(x) = P(x) (x == y + 1)\n", [("unsafe-comparison", "y", 1)]),
    ("P(A)\nR(x, y) = P(x)\n", [("unbound-head-variable", "y", 1)]),
    ("P(10)\nQ(2)\nR(x) = P(x) not Q(x + y)\n", [("unsafe-negation", "y", 2)]),
])
def test_unsafe_rules_are_refused_with_their_code_at_the_variable(text, expected):
    assert errors(text) == expected
    with pytest.raises(fuse_lang.FuseError, match=expected[0][0]):
        fuse_lang.compile(text + "export R\n")


def test_the_unsafe_arithmetic_message_shows_the_atom_as_written():
    (d,) = [d for d in fuse_lang.analyze("P(1)\nQ(2)\nR(x) = P(x) Q(x + y - 1)\n").diagnostics
            if d.severity is Severity.ERROR]
    assert "`Q(x + y - 1)`" in d.message and 'ungrounded variable y' in d.message
    (d,) = [d for d in fuse_lang.analyze("P(10)\nQ(2)\nR(x) = P(x) not Q(x + y)\n").diagnostics
            if d.severity is Severity.ERROR]
    assert "`not Q(x + y)`" in d.message and "(`not Q(x + y)`)" not in d.message


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_arithmetic_of_bound_variables_in_a_body_reads_values(backend, mode):
    text = ("P(1)\nP(2)\nP(7)\nQ(2)\nQ(3)\nQ(4)\nQ(-6)\n"
            "R(x, y) = P(x) P(y) Q(x + y)\n"   # both bound by P
            "S(x) = P(x) Q(x - 13)\n"           # a negative value read
            "T(x) = P(x) not Q(x + 1)\n"       # arithmetic under negation, bound
            "R(x, y)?\nS(x)?\nT(x)?\n")
    assert not errors(text)
    setup = ("CREATE TABLE p AS SELECT * FROM (VALUES (1), (2), (7)) t(x);"
             "CREATE TABLE q AS SELECT * FROM (VALUES (2), (3), (4), (-6)) t(x);")
    r, s, t = answers(text, backend=backend, mode=mode)
    assert r == duck("SELECT a.x, b.x FROM p a, p b WHERE a.x + b.x IN (SELECT x FROM q)", setup)
    assert s == duck("SELECT x FROM p WHERE x - 13 IN (SELECT x FROM q)", setup) == {(7,)}
    assert t == duck("SELECT x FROM p WHERE x + 1 NOT IN (SELECT x FROM q)", setup) == {(7,)}


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_a_head_variable_computed_by_equality_and_read_in_arithmetic(backend, mode):
    """`y == x + 5` computes the head's column; `Q(y - 1)` reads a value one below
    (the column of `Q` does not hold y's values: it answered nothing before)."""
    text = ("P(1)\nP(2)\nP(3)\nQ(5)\nQ(7)\nQ(9)\n"
            "R(x, y) = P(x) Q(y - 1) (y == x + 5)\n"
            "S(x, y) = P(x) not Q(y - 1) (y == x + 5)\n"
            "T(x, y) = P(x) (y == 2) Q(x + y + 2)\n"
            "R(x, y)?\nS(x, y)?\nT(x, y)?\n"
            "R(1, y)?\nR(x, 8)?\nS(2, y)?\nT(x, 2)?\nR(3, 8)?\n")  # bound: demand's rewrite
    assert not errors(text)
    setup = ("CREATE TABLE p AS SELECT * FROM (VALUES (1), (2), (3)) t(x);"
             "CREATE TABLE q AS SELECT * FROM (VALUES (5), (7), (9)) t(x);")
    r, s, t, *bound = answers(text, backend=backend, mode=mode)
    assert bound == [{(6,)}, {(3,)}, {(7,)}, {(1,), (3,)}, {()}]
    assert r == duck("SELECT x, x + 5 FROM p WHERE x + 4 IN (SELECT x FROM q)", setup)
    assert s == duck("SELECT x, x + 5 FROM p WHERE x + 4 NOT IN (SELECT x FROM q)", setup)
    assert t == duck("SELECT x, 2 FROM p WHERE x + 4 IN (SELECT x FROM q)", setup)
    assert r == {(1, 6), (3, 8)} and s == {(2, 7)}


def test_a_float_computed_by_equality_beside_arithmetic_is_not_a_number():
    """`y == x + 5` over floats makes a column of integers only, also where an atom
    reads y in arithmetic (which binds nothing; it answered nothing before)."""
    text = "V(0.5)\nQ(5)\nR(x, y) = V(x) Q(y - 1) (y == x + 5)\n"
    assert errors(text) == [("not-a-number", "x", 2)]


@pytest.mark.parametrize("rule", ["R(x) = P(x) Q(y - 1) (y == x + 5)",
                                  "R(x) = P(x) not Q(y - 1) (y == x + 5)",
                                  "R(x) = P(x) Q(x + y) (y == 1)"])
def test_a_variable_computed_by_equality_only_for_arithmetic_is_refused(rule):
    """No column holds the values `==` computes for it (it answered nothing)."""
    text = f"P(1)\nP(2)\nQ(5)\nQ(6)\n{rule}\n"
    assert errors(text) == [("unsafe-arithmetic", "y", 4)]
    (d,) = [d for d in fuse_lang.analyze(text).diagnostics if d.severity is Severity.ERROR]
    assert "computed by `==`" in d.message and "put `y` in the head" in d.message


# --------------------------------------------------------------- stratification

@pytest.mark.parametrize("text,cycle,line,at", [
    # a relation compares a count of itself (the run did not converge in 1,000 rounds)
    ("N(A)\nN(B)\nP(x) = N(x) (C[x] < 1)\nC[x] = P(x)\n", "`P` → `C` → `P`", 2, "C[x]"),
    # settled on what the order of evaluation gave
    ("E(1, 2)\nE(2, 3)\nE(3, 4)\nCnt[x] = P(x, y)\nP(x, y) = E(x, y)\n"
     "P(x, z) = P(x, y) E(y, z) (Cnt[y] < 2)\n", "`P` → `Cnt` → `P`", 5, "Cnt[y]"),
    ("N(A)\nP(x) = N(x) (P(x) == 0)\n", "`P` → `P`", 1, "P(x)"),
    # a choice's condition with another branch than 0 (the run hit its round limit)
    ("N(A)\nP(x) = N(x) select(P(x), 0, 1)\n", "`P` → `P`", 1, "P(x)"),
    ("N(A)\nP(x) = N(x) case { P(x) -> 0; default -> 1 }\n", "`P` → `P`", 1, "P(x)"),
])
def test_aggregation_through_recursion_is_a_stratification_error(text, cycle, line, at):
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "negation-cycle"]
    assert len(found) == 1 and cycle in found[0].message
    assert (text[found[0].span.start:found[0].span.end], text.count("\n", 0, found[0].span.start)
            ) == (at, line)
    with pytest.raises(fuse_lang.FuseError, match="negation-cycle"):
        fuse_lang.compile(text + "export P\n")


@pytest.mark.parametrize("rule", ["T(x, z) = E(y, z) when T(x, y)",
                                  "T(x, z) = E(y, z) select(T(x, y), 1, 0)"])
def test_a_guard_of_the_recursion_is_a_join_not_a_negation(rule):
    text = f"E(1, 2)\nE(2, 3)\nT(x, y) = E(x, y)\n{rule}\nT(x, y)?\n"
    assert not errors(text)
    assert answers(text) == [{(1, 2), (2, 3), (1, 3)}]


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_an_aggregate_of_a_lower_stratum_compared_answers_as_duckdb(backend, mode):
    text = ("E(1, 2)\nE(2, 3)\nE(3, 4)\nE(1, 5)\nT(x, y) = E(x, y)\nT(x, z) = T(x, y) E(y, z)\n"
            "Cnt[x] = T(x, y)\nBig(x) = T(x, _) (Cnt[x] >= 2)\nBig(x)?\n")
    assert not errors(text)
    setup = "CREATE TABLE e AS SELECT * FROM (VALUES (1, 2), (2, 3), (3, 4), (1, 5)) t(x, y);"
    expected = duck("WITH RECURSIVE t(x, y) AS (SELECT x, y FROM e UNION SELECT t.x, e.y FROM "
                    "t JOIN e ON t.y = e.x) SELECT x FROM t GROUP BY x HAVING count(*) >= 2", setup)
    assert answers(text, backend=backend, mode=mode) == [expected] == [{(1,), (2,)}]


@pytest.mark.parametrize("text,cycle,line,at", [
    ("Move(A, B)\nMove(B, A)\nWin(x) = Move(x, y) not Win(y)\n", "`Win` → `Win`", 2, "Win(y)"),
    ("N(A)\nP(x) = N(x) not Q(x)\nQ(x) = N(x) R(x)\nR(x) = N(x) P(x)\n",
     "`P` → `Q` → `R` → `P`", 1, "Q(x)"),
    # through a numeric tensor (an aggregate) in the cycle
    ("N(A)\nN(B)\nP(x) = N(x) not Q(x)\nQ(x) = N(x) (C[x] > 0)\nC[x] = P(x)\n",
     "`P` → `Q` → `C` → `P`", 2, "Q(x)"),
])
def test_a_cycle_through_negation_names_the_cycle_at_the_negated_atom(text, cycle, line, at):
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "negation-cycle"]
    assert len(found) == 1 and cycle in found[0].message
    assert (text[found[0].span.start:found[0].span.end], text.count("\n", 0, found[0].span.start)
            ) == (at, line)
    with pytest.raises(fuse_lang.FuseError, match="negation-cycle"):
        fuse_lang.compile(text + "export P\n" if "P(" in text else text + "export Win\n")


# ----------------------------------------------------- constants of every kind

CONSTANTS = """\
Likes("Ann Lee", "Crème brûlée")
Likes(Bob, -3)
Likes(Bob, 2.5)
Likes("Bob", "x y")
Likes(Cy, 3000000000)
Tag(x, "hello world") = Likes(x, _)
Tag(x, -7) = Likes(x, 2.5)
Score(Bob, 2.5)
Score(Cy, 3000000000)
Score("Ann Lee", -1)
Big(x) = Score(x, v) (v > 2)
Likes("Ann Lee", y)?
Likes(Bob, y)?
Likes(x, -3)?
Likes(x, 2.5)?
Likes(x, "Crème brûlée")?
Tag(x, y)?
Tag(x, -7)?
Big(x)?
Likes(Nobody, y)?
"""


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_constants_of_every_kind_in_facts_heads_bodies_and_queries(backend, mode):
    got = answers(CONSTANTS, backend=backend, mode=mode)
    assert got == [{("Crème brûlée",)}, {(-3,), (2.5,), ("x y",)}, {("Bob",)}, {("Bob",)},
                   {("Ann Lee",)},
                   {("Ann Lee", "hello world"), ("Bob", "hello world"), ("Cy", "hello world"),
                    ("Bob", -7)},
                   {("Bob",)}, {("Bob",), ("Cy",)}, set()]


@pytest.mark.parametrize("text,at,line", [
    ("V(4)\nV(6)\nH(x / 2) = V(x)\n", "x / 2", 2),  # answered {0}: positions' halves
    ("V(4)\nV(2)\nH(x) = V(x) V(x / 2)\n", "x / 2", 2),  # answered V's values
    ("V(10)\nW(5)\nH(x) = V(x) W(x / 2)\n", "x / 2", 2),  # answered {10, 20}
    ("V(4)\nV(6)\nH(y) = V(x) (y == x / 2)\n", "(y == x / 2)", 2),  # answered nothing
    ("V(-4)\nH(x, y) = V(x) (y == abs(x))\n", "(y == abs(x))", 1),  # answered nothing
    ("V(4)\nH(x, y) = V(x) (y == x ^ 2)\n", "(y == x ^ 2)", 1),  # answered nothing
])
def test_a_division_or_a_call_over_a_column_of_values_is_refused(text, at, line):
    assert errors(text) == [("not-a-number", at, line)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_division_that_compares_and_positional_pooling_still_answer(backend):
    text = ("V(4)\nV(6)\nV(2)\nV(3)\nH(x, y) = V(x) V(y) (x == y / 2)\n"
            "K(y) = V(x) V(y) (y * 2 == x)\n"
            "axis t = 8\nM(1)\nM(6)\nP(t / 2) = M(t)\nH(x, y)?\nK(y)?\nP(s)?\n")
    assert not errors(text)
    assert answers(text, backend=backend) == [{(2, 4), (3, 6)}, {(2,), (3,)}, {(0,), (3,)}]


def test_a_comparison_with_a_number_over_a_column_of_strings_is_refused():
    """`(x < 5)` where `x` holds symbols has no meaning (Soufflé: a type error)."""
    text = "P(Ann)\nP(3)\nR(x) = P(x) (x < 5)\n"
    assert errors(text) == [("not-a-number", "x", 2)]


# ------------------------------------------------------------ relation files

EDGES = ('src\tdst\tw\n"New York"\tBoston\t3\nBoston\t"Saint-Étienne"\t-2\n'
         '"Saint-Étienne"\t"New York"\t5\nBoston\tParis\t0\nParis\t"a b"\t7\n')
PRICES = 'Paris,1.5\n"a b",-2.5\nBoston,0\n'
FILES = """\
E(x, y, w) = source("e.tsv", header=1)
Price(x, v) = source("p.csv")
Heavy(x, y) = E(x, y, w) (w > 2)
T(x, y) = E(x, y, _)
T(x, z) = T(x, y) E(y, z, _)
NoBack(x, y) = T(x, y) not T(y, x)
Cheap(x) = Price(x, v) (v <= 0)
Next(x, y, w + 1) = E(x, y, w)
Twice(x, y, v) = E(x, y, w) (v == w + w)
Heavy(x, y)?
NoBack(x, y)?
Cheap(x)?
Next(x, y, z)?
Twice(x, y, v)?
T("New York", y)?
NoBack(x, "a b")?
Next(x, y, 4)?
"""
TC = ("WITH RECURSIVE t(x, y) AS (SELECT src, dst FROM e UNION "
      "SELECT t.x, e.dst FROM t JOIN e ON t.y = e.src) ")
NOBACK = " WHERE NOT EXISTS (SELECT 1 FROM t u WHERE u.x = t.y AND u.y = t.x)"
FILES_SQL = [
    "SELECT src, dst FROM e WHERE w > 2",
    TC + "SELECT x, y FROM t" + NOBACK,
    "SELECT x FROM p WHERE v <= 0",
    "SELECT src, dst, w + 1 FROM e",
    "SELECT src, dst, w + w FROM e",
    TC + "SELECT y FROM t WHERE x = 'New York'",
    TC + "SELECT x FROM t" + NOBACK + " AND y = 'a b'",
    "SELECT src, dst FROM e WHERE w + 1 = 4",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("audit")
    (folder / "e.tsv").write_text(EDGES, encoding="utf-8")
    (folder / "p.csv").write_text(PRICES, encoding="utf-8")
    setup = (f"CREATE TABLE e AS SELECT * FROM read_csv('{folder / 'e.tsv'}', header=true, "
             f"delim='\t'); CREATE TABLE p AS SELECT * FROM read_csv('{folder / 'p.csv'}', "
             "header=false, columns={'x': 'VARCHAR', 'v': 'DOUBLE'});")
    return folder, [duck(sql, setup) for sql in FILES_SQL]


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_relation_files_with_values_answer_as_duckdb(files, backend, mode):
    folder, expected = files
    assert not errors(FILES, folder)
    got = answers(FILES, folder, backend, mode, sparse=("E", "T", "NoBack", "Heavy"))
    assert got == expected
    assert got[2] == {("a b",), ("Boston",)}


# ---------------------------------------------------------------- aggregates

AGGREGATES = """\
E(x, y, w) = source("e.tsv", header=1)
Count[x] = E(x, y, w)
Total[x] = E(x, y, w) w
Degree[x] = E(x, _, _)
Least[x] min= select(E(x, y, w), w, 1e30)
Most[x] max= select(E(x, y, w), w, -1e30)
Mean[x] = Total[x] / Count[x]
Cells[x] min= E(x, y, w) w
"""
NAMES = ("Count", "Total", "Degree", "Least", "Most", "Mean", "Cells")


@pytest.mark.parametrize("backend", BACKENDS)
def test_aggregates_per_group_answer_as_duckdb(backend, tmp_path):
    """count, sum, min, max and mean of a column per key (docs/language.md,
    "Aggregating a column's values"), each written as a `.facts` sink (a numeric
    tensor's non-zeros, the number last)."""
    (tmp_path / "e.tsv").write_text(EDGES, encoding="utf-8")
    sinks = "".join(f'"{n}.facts" = {n}[x]\n' for n in NAMES)
    fuse_lang.compile(AGGREGATES + sinks, base_dir=tmp_path,
                      config=ExecutionConfig(backend=backend)).execute()

    def read(name: str) -> set[tuple]:
        lines = (tmp_path / f"{name}.facts").read_text(encoding="utf-8").splitlines()
        return {(k, round(float(v), 4)) for k, v in (line.split("\t") for line in lines)}

    setup = (f"CREATE TABLE e AS SELECT * FROM read_csv('{tmp_path / 'e.tsv'}', header=true, "
             "delim='\t');")

    def group(what: str) -> set[tuple]:  # the non-zero groups, as the sink writes them
        return {(k, round(float(v), 4)) for k, v in duck(
            f"SELECT src, {what} FROM e GROUP BY src HAVING {what} <> 0", setup)}

    assert read("Count") == group("count(*)") == read("Degree")
    assert read("Total") == group("sum(w)")
    assert read("Least") == group("min(w)") == {("Boston", -2.0), ("New York", 3.0),
                                                ("Paris", 7.0), ("Saint-Étienne", 5.0)}
    assert read("Most") == group("max(w)")
    assert read("Mean") == group("avg(w)")
    # min= over the cells: a (y, w) with no tuple is 0, so only Boston's -2 is below it
    assert read("Cells") == {("Boston", -2.0)}


# ---------------------------------------------------------------- empty relations

@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_empty_relations_answer_no_tuples(backend, mode):
    text = ("E(A, B)\nNone(x, y) = E(x, y) not E(x, y)\nR(x) = None(x, _)\n"
            "Loop(x) = Loop(x)\nS(x) = E(x, _) not Loop(x)\n"
            "R(x)?\nNone(A, y)?\nLoop(x)?\nS(x)?\n")
    assert answers(text, backend=backend, mode=mode) == [set(), set(), set(), {("A",)}]


def test_an_aggregate_over_a_relations_cells_is_told_and_its_fix_takes_the_tuples(
        tmp_path, capsys):
    """`min=`/`max=`/`avg=` over a relation's cells (the `Cells` of the test above)
    is `aggregate-over-absent` at the relation; the fix `fuse check` offers, applied,
    checks clean and answers DuckDB's GROUP BY.  Sums, counts, `select`s, heads that
    keep every variable and dense numeric min= stay clean."""
    import json

    from fuse_lang.cli import main

    (tmp_path / "e.tsv").write_text(EDGES, encoding="utf-8")
    text = ('E(x, y, w) = source("e.tsv", header=1)\n'
            "Low[x] min= E(x, y, w) w\n"
            "High[x] max= 2 * E(x, y, w) w\n"
            "Avg[x] avg= E(x, y, w) w\n")
    clean = AGGREGATES.replace("Cells[x] min= E(x, y, w) w\n", "") + (
        "Keep[x, y, w] min= E(x, y, w) w\n"
        "A[i, j] = const([[1, 2], [3, 4]])\nRowMin[i] min= A[i, j]\n")
    found = [(d.code, text[d.span.start:d.span.end], text.count("\n", 0, d.span.start))
             for d in fuse_lang.analyze(text, base_dir=tmp_path).diagnostics]
    assert found == [("aggregate-over-absent", "E(x, y, w)", line) for line in (1, 2, 3)]
    assert not fuse_lang.analyze(clean, base_dir=tmp_path).diagnostics
    path = tmp_path / "agg.fuse"
    path.write_text(text, encoding="utf-8")
    assert main(["check", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["diagnostics"]
    edits = [edit for d in report for fix in d.get("fixes", ()) for edit in fix["edits"]]
    assert len(edits) == 2  # min= and max=
    fixed = text
    for edit in sorted(edits, key=lambda e: -e["start"]):
        fixed = fixed[:edit["start"]] + edit["new_text"] + fixed[edit["end"]:]
    assert "Low[x] min= select(E(x, y, w), w, 1e30)" in fixed
    assert "High[x] max= select(E(x, y, w), 2 w, -1e30)" in fixed
    assert [d.code for d in fuse_lang.analyze(fixed, base_dir=tmp_path).diagnostics] == \
        ["aggregate-over-absent"]  # the mean has no one-edit fix: a sum over a count
    program = fuse_lang.compile(fixed.replace("Avg[x] avg= E(x, y, w) w\n", ""),
                                base_dir=tmp_path)
    out = program.execute().outputs
    setup = (f"CREATE TABLE e AS SELECT * FROM read_csv('{tmp_path / 'e.tsv'}', header=true, "
             "delim='\t');")
    low = dict(duck("SELECT src, min(w) FROM e GROUP BY src", setup))
    high = dict(duck("SELECT src, 2 * max(w) FROM e GROUP BY src", setup))
    assert sorted(float(v) for v in out["Low"]) == sorted(float(v) for v in low.values())
    assert sorted(float(v) for v in out["High"]) == sorted(float(v) for v in high.values())
