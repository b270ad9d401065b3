"""A third Datalog conformance audit (LANGUAGE.md §5-§7, §13, §14): the classic
programs a Soufflé user writes (same generation, bipartiteness and odd cycles,
negation over four strata, arity-5 atoms with repeated variables, reachability
over names with spaces, tabs, quotes and non-ASCII letters, values past 2^53,
arithmetic in heads), each answer compared with a naive bottom-up evaluator
written here (sets of value tuples) on every installed backend, forward and
demand mode; and what `.facts` files hold as Soufflé writes and reads them."""
from __future__ import annotations

import importlib.util

import pytest

import fuse_lang
from fuse_lang.front.diagnostics import Severity
from fuse_lang.plan.config import ExecutionConfig

BACKENDS = [b for b in ("numpy", "torch", "jax") if importlib.util.find_spec(b) is not None]
CONFIGS = [(b, m) for b in BACKENDS for m in ("forward", "demand")]


def answers(text: str, folder=None, backend: str = "numpy", mode: str = "forward",
            sparse: tuple[str, ...] = ()) -> list[set[tuple]]:
    program = fuse_lang.compile(text, base_dir=folder,
                                representation={n: "sparse" for n in sparse},
                                config=ExecutionConfig(backend=backend, mode=mode))
    return [set(q.tuples) for q in program.execute().queries]


def errors(text: str, folder=None) -> list[tuple[str, str]]:
    """Each error as (code, the text its range covers)."""
    return [(d.code, text[d.span.start:d.span.end])
            for d in fuse_lang.analyze(text, base_dir=folder).diagnostics
            if d.severity is Severity.ERROR]


# ------------------------------------------------- a naive bottom-up oracle
# A rule is (head, body): head (name, args); body items ("+", name, args) for an
# atom, ("not", name, args) for a negated one, (op, a, b) for a comparison. An
# argument is a variable (a lowercase str), "_", a constant (Const) or
# (variable, int) for a computed value (`x + 1`).

class Const:
    def __init__(self, value) -> None:
        self.value = value


def _value(term, env):
    if isinstance(term, Const):
        return term.value
    if isinstance(term, tuple):
        return _value(term[0], env) + term[1]
    return env[term]


def _same(a, b) -> bool:  # 1 and "1" are two values
    return a == b and isinstance(a, str) == isinstance(b, str)


def _match(args, tup, env):
    env = dict(env)
    for arg, v in zip(args, tup):
        if arg == "_":
            continue
        if isinstance(arg, (Const, tuple)) or arg in env:
            if not _same(_value(arg, env), v):
                return None
        else:
            env[arg] = v
    return env


_OPS = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b, "==": _same, "!=": lambda a, b: not _same(a, b)}


def _fire(body, db):
    envs = [{}]
    for _kind, name, args in [b for b in body if b[0] == "+"]:
        envs = [m for e in envs for t in db.get(name, ()) if (m := _match(args, t, e)) is not None]
    for kind, x, y in [b for b in body if b[0] != "+"]:
        if kind == "not":
            envs = [e for e in envs if all(_match(y, t, e) is None for t in db.get(x, ()))]
        else:
            envs = [e for e in envs if _OPS[kind](_value(x, e), _value(y, e))]
    return envs


def naive(strata, facts) -> dict[str, set[tuple]]:
    """Each stratum's rules to their fixpoint, in order (stratified Datalog)."""
    db: dict[str, set[tuple]] = {}
    for name, tup in facts:
        db.setdefault(name, set()).add(tuple(tup))
    for rules in strata:
        grown = True
        while grown:
            grown = False
            for (name, args), body in rules:
                for env in _fire(body, db):
                    tup = tuple(_value(a, env) for a in args)
                    if tup not in db.setdefault(name, set()):
                        db[name].add(tup)
                        grown = True
    return db


def oracle_answer(db, name: str, args) -> set[tuple]:
    """A query's answer: each tuple's values of its variables, each variable once."""
    out = set()
    for tup in db.get(name, ()):
        if _match(args, tup, {}) is not None:
            seen: dict[str, object] = {}
            for arg, v in zip(args, tup):
                if isinstance(arg, str) and arg != "_":
                    seen.setdefault(arg, v)
            out.add(tuple(seen.values()))
    return out


def _term(arg) -> str:
    if isinstance(arg, Const):
        v = arg.value
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' \
            if isinstance(v, str) else str(v)
    if isinstance(arg, tuple):
        return f"{arg[0]} + {arg[1]}" if arg[1] >= 0 else f"{arg[0]} - {-arg[1]}"
    return arg


def _atom(name: str, args) -> str:
    return f"{name}({', '.join(_term(a) for a in args)})"


def program_text(strata, facts, queries) -> str:
    lines = [_atom(name, [Const(v) for v in tup]) for name, tup in facts]
    for (name, args), body in (rule for rules in strata for rule in rules):
        parts = [_atom(b[1], b[2]) if b[0] == "+" else "not " + _atom(b[1], b[2])
                 if b[0] == "not" else f"({_term(b[1])} {b[0]} {_term(b[2])})" for b in body]
        lines.append(f"{_atom(name, args)} = {' '.join(parts)}")
    return "\n".join(lines + [_atom(name, args) + "?" for name, args in queries]) + "\n"


def check_classic(strata, facts, queries, configs, sparse=()) -> None:
    text = program_text(strata, facts, queries)
    assert not errors(text), text
    db = naive(strata, facts)
    want = [oracle_answer(db, name, args) for name, args in queries]
    for backend, mode in configs:
        assert answers(text, backend=backend, mode=mode) == want, (backend, mode)
    if sparse:
        assert answers(text, sparse=sparse) == want


def V(*args) -> list:  # noqa: N802 (an atom's arguments, constants wrapped)
    return [a if isinstance(a, (str, tuple)) else Const(a) for a in args]


def S(value) -> Const:  # noqa: N802 (a string constant)
    return Const(value)


# ---------------------------------------------------------- the classic programs

PARENTS = [("a b", "root"), ("c\td", "root"), ('e"f', "a b"), ("ü ñ", "a b"), ("g", "c\td"),
           ("h'h", "g"), ("-1", "g"), (-1, 'e"f')]
SAME_GENERATION = [[
    (("SG", V("x", "x")), [("+", "Par", V("x", "_"))]),
    (("SG", V("x", "y")), [("+", "Par", V("x", "p")), ("+", "SG", V("p", "q")),
                           ("+", "Par", V("y", "q"))]),
]]


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_same_generation_over_names_with_blanks_quotes_and_accents(backend, mode):
    check_classic(SAME_GENERATION, [("Par", t) for t in PARENTS],
                  [("SG", V("x", "y")), ("SG", [S("g"), "y"]), ("SG", ["x", S("ü ñ")]),
                   ("SG", [S("-1"), "y"]), ("SG", V(-1, "y"))],
                  [(backend, mode)], sparse=("Par", "SG"))


BIPARTITE = [[
    (("U", V("x", "y")), [("+", "E", V("x", "y"))]),
    (("U", V("y", "x")), [("+", "E", V("x", "y"))]),
    (("Odd", V("x", "y")), [("+", "U", V("x", "y"))]),
    (("Odd", V("x", "z")), [("+", "Even", V("x", "y")), ("+", "U", V("y", "z"))]),
    (("Even", V("x", "z")), [("+", "Odd", V("x", "y")), ("+", "U", V("y", "z"))]),
], [
    (("OddCycle", V("x")), [("+", "Odd", V("x", "x"))]),
    (("Node", V("x")), [("+", "U", V("x", "_"))]),
], [
    (("Bipartite", V("x")), [("+", "Node", V("x")), ("not", "OddCycle", V("x"))]),
], [
    (("Mixed", V("x", "y")), [("+", "U", V("x", "y")), ("not", "Bipartite", V("x")),
                              ("not", "Bipartite", V("y"))]),
]]
BIG = 9223372036854775807


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_odd_cycles_and_bipartite_components_over_four_strata(backend, mode):
    edges = [(1, 2), (2, 3), (3, 1), (4, 5), (5, 6), (6, 7), (7, 4), (-8, BIG), (3, -8)]
    check_classic(BIPARTITE, [("E", e) for e in edges],
                  [("OddCycle", V("x")), ("Bipartite", V("x")), ("Mixed", V("x", "y")),
                   ("Bipartite", V(-8)), ("Odd", V(BIG, "y"))],
                  [(backend, mode)], sparse=("E", "U", "Odd", "Even"))


REPEATED = [[
    (("D", V("x", "y")), [("+", "R", V("x", "x", "y", "y", "_"))]),
    (("K", ["x", S("K"), "y", Const(-3)]), [("+", "R", V("x", "_", "_", "y", "x"))]),
    (("T", V("x")), [("+", "R", V("x", "x", "x", "x", "x"))]),
    (("Gt", V("x", "v")), [("+", "W", V("x", "x", "_", "_", "v")), (">", "v", Const(2**53))]),
    (("Next", V("x", ("x", 1))), [("+", "W", V("_", "_", "_", "_", "x")),
                                  (">", "x", Const(2**53 - 1))]),
]]


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_arity_five_atoms_with_repeated_variables_and_constants_in_heads(backend, mode):
    rows = [(1, 1, 2, 2, 3), (1, 2, 2, 2, 3), ("A", "A", "A", "A", "A"), (5, 5, -1, 5, 5),
            (0, 0, 0, 1, 0)]
    numbers = [(7, 7, 7, 7, 2**53 + 1), (7, 7, 7, 7, 2**53), (-7, 7, 0, 0, 2**53 - 1),
               (8, 8, "s", "s", -(2**63))]
    check_classic(REPEATED, [("R", r) for r in rows] + [("W", r) for r in numbers],
                  [("D", V("x", "y")), ("K", V("a", "b", "c", "d")),
                   ("K", ["a", S("K"), "a", Const(-3)]), ("T", V("x")), ("Gt", V("x", "v")),
                   ("Next", V("x", "y")), ("Next", V("x", 2**53 + 1))],
                  [(backend, mode)])


NEGATION_CHAIN = [
    [(("S1", V("x")), [("+", "A", V("x")), ("not", "B", V("x"))])],
    [(("S2", V("x")), [("+", "A", V("x")), ("not", "S1", V("x"))])],
    [(("S3", V("x", "y")), [("+", "A", V("x")), ("+", "A", V("y")), ("not", "S2", V("x")),
                            ("not", "S2", V("y")), ("<", "x", "y")])],
    [(("S4", V("x")), [("+", "A", V("x")), ("not", "S3", V("x", "_")), ("!=", "x", Const(-5))])],
]


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_a_chain_of_four_negated_strata_over_negative_and_huge_values(backend, mode):
    values = (0, 1, 3, -5, 2**62, -(2**63), 2**53 + 1, 2**53)
    check_classic(NEGATION_CHAIN, [("A", (v,)) for v in values] +
                  [("B", (v,)) for v in (1, -5, 2**53)],
                  [("S1", V("x")), ("S2", V("x")), ("S3", V("x", "y")), ("S4", V("x")),
                   ("S3", V("x", 2**53 + 1))], [(backend, mode)])


def test_win_move_is_refused_and_its_stratified_neighbour_answers():
    """Soufflé refuses `win(X) :- move(X,Y), !win(Y).`; a game whose negation reads
    a lower stratum only is accepted."""
    game = "Move(A, B)\nMove(B, C)\nMove(C, A)\nWin(x) = Move(x, y) not Win(y)\nWin(x)?\n"
    assert errors(game) == [("negation-cycle", "Win(y)")]
    ok = ("Move(A, B)\nMove(B, C)\nStuck(x) = Move(_, x) not Move(x, _)\n"
          "Win(x) = Move(x, y) Stuck(y)\nLose(x) = Move(x, _) not Win(x)\nWin(x)?\nLose(x)?\n")
    assert not errors(ok)
    assert answers(ok) == [{("B",)}, {("A",)}]


# ------------------------------------------------- arithmetic in a relation's head

@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_a_number_before_the_variable_or_a_negative_one_is_an_offset(backend, mode):
    """Found by this audit: `R(x, 1 + x)` and `R(x, x + -1)` were `invalid-index`
    where `R(x, x + 1)` and `R(x, x - 1)` answered (Soufflé takes all four)."""
    text = ("A(1)\nA(-2)\nA(10)\nB(2)\nB(-1)\nB(0)\n"
            "S(x, 1 + x) = A(x)\nM(x, x + -1) = A(x)\nN(x, -1 + x) = A(x)\n"
            "T(x) = A(x) B(1 + x)\nU(x) = A(x) not B(1 + x)\n"
            "C(0)\nC(1 + n) = C(n) (n < 3)\n"
            "S(x, y)?\nM(x, y)?\nN(x, y)?\nT(x)?\nU(x)?\nC(n)?\nS(x, 2)?\n")
    assert not errors(text)
    assert answers(text, backend=backend, mode=mode) == [
        {(1, 2), (-2, -1), (10, 11)}, {(1, 0), (-2, -3), (10, 9)}, {(1, 0), (-2, -3), (10, 9)},
        {(1,), (-2,)}, {(10,)}, {(0,), (1,), (2,), (3,)}, {(1,)}]


@pytest.mark.parametrize("head", ["x - y", "2 * x", "-x", "x ^ 2", "1 - x"])
def test_other_arithmetic_in_a_head_says_how_to_compute_it(head):
    """Found by this audit: `D(x, y, x - y)` said only which indices there are; the
    message now shows Soufflé's `Z = X - Y` the Fuse way, and that form answers."""
    text = f"A(1)\nA(-2)\nD(x, y, {head}) = A(x) A(y)\n"
    (diag,) = [d for d in fuse_lang.analyze(text).diagnostics if d.severity is Severity.ERROR]
    assert diag.code == "invalid-index" and text[diag.span.start:diag.span.end] == head
    assert "(z == x - y)" in diag.message
    fixed = "A(1)\nA(-2)\nD(x, y, z) = A(x) A(y) (z == x - y)\nD(x, y, z)?\n"
    assert answers(fixed) == [{(1, 1, 0), (1, -2, 3), (-2, 1, -3), (-2, -2, 0)}]
    # no variable to compute from: no such hint
    (diag,) = [d for d in fuse_lang.analyze("A(1)\nZ(x) = A(x) A(1 + 2)\n").diagnostics
               if d.code == "invalid-index"]
    assert "==" not in diag.message


# ----------------------------------------------------------- Soufflé's .facts files

@pytest.mark.parametrize("backend", BACKENDS)
def test_facts_with_quotes_written_and_read_back_as_souffle_does(tmp_path, backend):
    """Found by this audit: a `.facts` sink refused `c"d` (and `"q"`) as a value it
    'cannot hold', though `.facts` has no quoting and its reader (like Soufflé's)
    reads `c"d` back as `c"d`; now only what would read back as another value
    (a tab, `"1"`, blanks at the ends) is refused."""
    (tmp_path / "in.facts").write_bytes(
        'c"d\t"q"\r\n"q"\tsay "hi"\r\n\r\nsay "hi"\t-3000000000\r\n'.encode())
    text = ('E(x, y) = "in.facts"\nT(x, y) = E(x, y)\nT(x, z) = T(x, y) E(y, z)\n'
            '"t.facts" = T(x, y)\n"e.facts" = E(x, y)\nT(x, y)?\n')
    (got,) = answers(text, tmp_path, backend)
    assert got == {('c"d', '"q"'), ('c"d', 'say "hi"'), ('c"d', -3000000000),
                   ('"q"', 'say "hi"'), ('"q"', -3000000000), ('say "hi"', -3000000000)}
    assert (tmp_path / "e.facts").read_text(encoding="utf-8") == (
        '"q"\tsay "hi"\nc"d\t"q"\nsay "hi"\t-3000000000\n')
    back = answers('T(x, y) = "t.facts"\nT(x, y)?\n', tmp_path, backend)
    assert back == [got]
    with pytest.raises(fuse_lang.FuseError, match=r"cannot be written to a \.facts.*\.tsv"):
        answers('R("a\tb", 1)\n"r.facts" = R(x, y)\n', tmp_path, backend)


@pytest.mark.parametrize("rule", ["R(x, _) = A(x)", "R(_) = A(_)", "R(_, y) = B(_, y)"])
def test_a_wildcard_in_a_head_says_it_cannot_stand_there(rule):
    """Found by this audit: `R(x, _) = A(x)` said "`_` of the head is bound by no
    atom", as if `_` were a variable to bind (Soufflé: "underscore in head of rule")."""
    text = f"A(1)\nB(1, 2)\n{rule}\nR?\n"
    (diag,) = [d for d in fuse_lang.analyze(text).diagnostics if d.severity is Severity.ERROR]
    assert (diag.code, text[diag.span.start:diag.span.end]) == ("unbound-head-variable", "_")
    assert "`_` (any value) cannot stand in the head of `R`" in diag.message


def test_the_first_row_of_a_facts_file_is_data_never_a_header(tmp_path):
    """Found by this audit: a `.facts` file as Soufflé writes it (`a b`, `c"d` over
    rows of numbers) was `header-row`, whose fix (`header=1`) dropped a tuple;
    Soufflé writes no header.  A `.tsv` of the same rows still warns, and
    `header=1` still skips a row of a `.facts` file."""
    rows = 'a b\tc"d\r\nc"d\t5\r\n\r\n5\t-3000000000\r\n-3000000000\t9223372036854775807\r\n'
    (tmp_path / "e.facts").write_bytes(rows.encode())
    (tmp_path / "e.tsv").write_bytes(rows.replace('"', "").encode())
    text = 'E(x, y) = "e.facts"\nE(x, y)?\n'
    assert not fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
    assert answers(text, tmp_path) == [{("a b", 'c"d'), ('c"d', 5), (5, -3000000000),
                                        (-3000000000, 9223372036854775807)}]
    tsv = 'E(x, y) = "e.tsv"\nE(x, y)?\n'
    assert [d.code for d in fuse_lang.analyze(tsv, base_dir=tmp_path).diagnostics] == \
        ["header-row"]
    skip = 'E(x, y) = source("e.facts", header=1)\nE(x, y)?\n'
    assert answers(skip, tmp_path) == [{('c"d', 5), (5, -3000000000),
                                        (-3000000000, 9223372036854775807)}]


def test_soufflés_uppercase_variables_are_told_with_the_fix_that_lowercases_them():
    """Found by this audit: `path(X, Z) = path(X, Y) edge(Y, Z)` (Soufflé's
    variables are uppercase) answered nothing, told only that `Y` is no value of
    `edge`; the warning now says what a Fuse variable is, and its fix (every `Y` of
    the rule to `y`) gives the program Soufflé's answers."""
    text = ("edge(1, 2)\nedge(2, 3)\npath(X, Y) = edge(X, Y)\n"
            "path(X, Z) = path(X, Y) edge(Y, Z)\npath(a, b)?\n")
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "unknown-constant"]
    assert [text[d.span.start:d.span.end] for d in found] == ["X", "Y", "Y", "Z"]
    assert all("a Fuse variable starts with a lowercase letter" in d.message for d in found)
    # each fix renames every such name of its rule (both rules' fixes, applied once)
    edits = {(e.span.start, e.span.end): e.new_text for d in found for e in d.fixes[0].edits}
    fixed = text
    for (start, end), new in sorted(edits.items(), reverse=True):
        fixed = fixed[:start] + new + fixed[end:]
    assert fixed == ("edge(1, 2)\nedge(2, 3)\npath(x, y) = edge(x, y)\n"
                     "path(x, z) = path(x, y) edge(y, z)\npath(a, b)?\n")
    assert answers(fixed) == [{(1, 2), (2, 3), (1, 3)}]
    # a constant written once, or quoted, is a constant: no such words
    once = 'E(1, 2)\nR(x) = E(x, Two)\nS(x) = E(x, "Two") E("Two", x)\n'
    assert not any("lowercase" in d.message for d in fuse_lang.analyze(once).diagnostics)


# ------------------------------------------- numbers by magnitude, floats beside

@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_a_column_of_floats_and_integers_past_2_to_the_53_compares_exactly(
        tmp_path, backend, mode):
    """Found by this audit: a column holding a float compared in float64, where
    2^53 + 1 and 2^53 are one number: `(x > 9007199254740992)` held for no tuple,
    `(x == y)` paired 2^53 + 1 with 2^53.0 (two values of the column, which a join
    keeps apart), `(x - y > 0)` held for none.  Python's exact numbers say
    otherwise, as the integer-only column (int64) always did."""
    (tmp_path / "w.tsv").write_text("9007199254740993\ta\n9007199254740992.0\tb\n0.5\tc\n"
                                    "-9007199254740993\td\n-9007199254740992\te\n")
    text = ('W(x, s) = "w.tsv"\nG(s) = W(x, s) (x > 9007199254740992)\n'
            "L(s) = W(x, s) (x < -9007199254740992) (x < 0.75)\n"
            "E(s, t) = W(x, s) W(y, t) (x == y)\n"
            "D(s, t) = W(x, s) W(y, t) (x - y > 0) (x > 1) (y > 1)\n"
            "G(s)?\nL(s)?\nE(s, t)?\nD(s, t)?\n")
    from fractions import Fraction  # (exact: Python's int - float is a float)

    rows = [(Fraction(x), s) for x, s in [(9007199254740993, "a"), (9007199254740992.0, "b"),
                                          (0.5, "c"), (-9007199254740993, "d"),
                                          (-9007199254740992, "e")]]
    want = [{(s,) for x, s in rows if x > 2**53}, {(s,) for x, s in rows if x < -(2**53)},
            {(s, t) for x, s in rows for y, t in rows if x == y},
            {(s, t) for x, s in rows for y, t in rows if x - y > 0 and x > 1 and y > 1}]
    assert want[0] == {("a",)} and want[3] == {("a", "b")} and len(want[2]) == 5
    assert answers(text, tmp_path, backend, mode) == want
    assert answers(text, tmp_path, backend, mode, sparse=("W", "E", "D")) == want


def test_one_and_one_point_zero_joined_keep_the_spelling_met_first(tmp_path):
    """Found by this audit: `A(1)` joined with `B(1.0)` (one value, docs/language.md)
    showed and wrote A's 1 as `1.0` (a .csv of A's integer ids came out with a
    float, which DuckDB then reads as DOUBLE): merging the two columns kept the
    later spelling; the one met first stays, as in one column (`R(1)`, `R(1.0)`)."""
    text = ('A(1)\nA(2)\nB(1.0)\nJ(x) = A(x) B(x)\nJ(x)?\nA(x)?\n"a.csv" = A(x)\n')
    assert answers(text, tmp_path) == [{(1,)}, {(1,), (2,)}]
    program = fuse_lang.compile(text, base_dir=tmp_path)
    assert [q.tuples for q in program.execute().queries] == [[(1,)], [(1,), (2,)]]
    assert [type(v) for (v,) in program.execute().queries[1].tuples] == [int, int]
    assert (tmp_path / "a.csv").read_text() == "1\n2\n"
    later = 'B(1.0)\nA(1)\nJ(x) = A(x) B(x)\nJ(x)?\n'
    assert [type(v) for (v,) in fuse_lang.compile(later).execute().queries[0].tuples] == [float]


@pytest.mark.parametrize("backend,mode", CONFIGS)
def test_arithmetic_in_a_head_over_values_far_apart_answers(backend, mode):
    """Found by this audit: `Later(e, t + 3600) = Event(e, t)` over timestamps (and
    `Inc(a, a + 1)` over ids -1 and 2^62) was `domain-limit`: the checker grew the
    computed column to every integer between its lowest and highest value, more
    than 1,000,000, though it computes four.  Outside recursion, from relations of
    facts or files, the column now holds exactly the values computed (Soufflé's
    answers); a recursion over such a span is still refused."""
    text = ("Event(Login, 1700000000)\nEvent(Logout, 1700003600)\nEvent(Crash, 1800000000)\n"
            "Event(Boot, -5)\nY(-1)\nY(4611686018427387904)\n"
            "Later(e, t + 3600) = Event(e, t)\n"
            "Pair(e, f, t + u + 1) = Event(e, t) Event(f, u) (t < u)\n"
            "Again(e) = Event(e, t) Later(f, t)\nMiss(e) = Event(e, t) not Later(_, t + 3600)\n"
            "Inc(a, a + 1) = Y(a)\n"
            "Later(e, t)?\nPair(e, f, s)?\nAgain(e)?\nMiss(e)?\nLater(e, 1700003600)?\n"
            "Inc(a, b)?\n")
    assert not errors(text)
    event = {"Login": 1700000000, "Logout": 1700003600, "Crash": 1800000000, "Boot": -5}
    later = {(e, t + 3600) for e, t in event.items()}
    assert answers(text, backend=backend, mode=mode, sparse=("Later", "Pair")) == [
        later, {(e, f, t + u + 1) for e, t in event.items() for f, u in event.items() if t < u},
        {(e,) for e, t in event.items() if t in {v for _, v in later}},
        {(e,) for e, t in event.items() if t + 3600 not in {v for _, v in later}},
        {("Login",)}, {(-1, 0), (4611686018427387904, 4611686018427387905)}]
    recursive = "E(1)\nE(9000000000)\nN(x) = E(x)\nN(n + 1) = N(n) (n < 9000000005)\nN(n)?\n"
    assert errors(recursive) == [("domain-limit", "N(n + 1)")]
    # from a relation a rule defines (whose tuples hold values computed too): refused,
    # never answered without them
    chained = "E(1)\nE(4611686018427387904)\nA(x + 1) = E(x)\nC(y) = A(y)\nB(y + 9) = C(y)\n"
    assert errors(chained) == [("domain-limit", "B(y + 9)")]
