"""Datalog in Fuse (issue 18; docs/language.md "Datalog in Fuse"): negation with
safety and stratification, empty relations and unreached columns, joins that
project a column local to one atom first, aggregates as projections; and a
property test against a small reference Datalog evaluator written here, over
random stratified programs.  A conformance module (tests/conftest.py): every
program run here on NumPy runs again on torch and jax and must agree."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest

import fuse_lang
from fuse_lang import FuseError, Severity, compile


def answers(text: str) -> list[set[tuple]]:
    """Each query's answer, as a set of tuples of symbols."""
    return [set(q.tuples) for q in compile(text).execute().queries]


def codes(text: str) -> list[str]:
    return [d.code for d in fuse_lang.analyze(text).diagnostics
            if d.severity is Severity.ERROR]


def recursion_message(text: str) -> str:
    (d,) = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "recursion"]
    return d.message


PEOPLE = """\
Person(Ann)
Person(Bob)
Person(Cy)
Banned(Bob, Spam)
Banned(Cy, Ads)
Topic(Spam)
Topic(Ads)
Topic(News)
"""


# --------------------------------------------------------------- negation


def test_not_keeps_the_tuples_no_negated_fact_matches():
    assert answers(PEOPLE + "Ok(x) = Person(x) not Banned(x, Spam)\nOk(x)?\n") == \
        [{("Ann",), ("Cy",)}]


def test_the_wildcard_in_a_negated_atom_means_any():
    # not Banned(x, _): no tuple of Banned with this x at all (LANGUAGE.md §13)
    assert answers(PEOPLE + "Ok(x) = Person(x) not Banned(x, _)\nOk(x)?\n") == [{("Ann",)}]


def fixed(text: str, diagnostic) -> str:
    """The text with the diagnostic's one fix applied."""
    (fix,) = diagnostic.fixes
    for edit in sorted(fix.edits, key=lambda e: e.span.start, reverse=True):
        text = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    return text


def test_a_named_variable_only_in_the_negated_atom_is_unsafe_and_the_fix_writes_the_wildcard():
    # the first version read `y` as "any"; Soufflé: "Ungrounded variable y"
    text = PEOPLE + "Ok(x) = Person(x) not Banned(x, y)\nOk(x)?\n"
    (d,) = [d for d in fuse_lang.analyze(text).diagnostics if d.severity is Severity.ERROR]
    assert d.code == "unsafe-negation"
    assert "`y`" in d.message and "`not Banned(x, y)`" in d.message and "`_`" in d.message
    assert "positive atom" in d.message and "`not Banned(x, _)`" in d.message
    with pytest.raises(FuseError, match="unsafe-negation"):
        compile(text)
    repaired = fixed(text, d)
    assert repaired == PEOPLE + "Ok(x) = Person(x) not Banned(x, _)\nOk(x)?\n"
    assert codes(repaired) == []
    assert answers(repaired) == [{("Ann",)}]


def test_fuse_check_reports_the_ungrounded_variable(tmp_path):
    path = tmp_path / "unsafe.fuse"
    path.write_text(PEOPLE + "Ok(x) = Person(x) not Banned(x, y)\nOk(x)?\n")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "error[unsafe-negation]" in proc.stdout and "`y`" in proc.stdout, proc.stdout


@pytest.mark.parametrize("rule", [
    "Ok(x) = Person(x) Topic(t) not Banned(x, t)",       # bound by a positive atom
    "Ok(x) = not Banned(x, t) Topic(t) Person(x)",       # wherever it stands in the term
    "Ok(x) = Person(x) not (Banned(x, t) Topic(t))",      # joined inside the negated group
    "Ok(x) = Person(x) not (Banned(x, t) (t == Spam))",   # compared inside the group
])
def test_a_bound_variable_or_the_wildcard_is_safe(rule):
    assert codes(PEOPLE + rule + "\nOk(x)?\n") == []


@pytest.mark.parametrize("rule,fixable", [
    ("Ok(x) = Person(x) not Banned(x, t) + Topic(t) Person(x)", True),  # another term's t
    ("Ok(x, t) = Person(x) not Banned(x, t)", False),  # a head's variable: `_` would unbind it
    ("Ok(x) = Person(x) not Banned(x, t) not Banned(t, x)", False),  # two atoms: no one fix
    ("Ok(x) = Person(x) not Banned(x, t) (t != Spam)", False),  # a comparison binds nothing
    ("Ok(x) = Person(x) not Banned(x, t) not Banned(_, x)", True),  # (each `_` its own)
])
def test_a_variable_no_positive_atom_of_its_term_binds_is_unsafe(rule, fixable):
    diags = [d for d in fuse_lang.analyze(PEOPLE + rule).diagnostics
             if d.code == "unsafe-negation"]
    assert diags and all("`t`" in d.message for d in diags)
    assert bool(diags[0].fixes) is fixable


def test_not_is_the_older_spelling_with_step():
    new = answers(PEOPLE + "Free(x, t) = Person(x) Topic(t) not Banned(x, t)\nFree(x, t)?\n")
    old = answers(PEOPLE + "Free(x, t) = Person(x) Topic(t) (1 - step(Banned(x, t)))\n"
                  "Free(x, t)?\n")
    assert new == old
    assert len(new[0]) == 9 - 2


def test_not_binds_tighter_than_a_join_and_takes_a_group():
    text = PEOPLE + "A(x) = not Banned(x, Spam) Person(x)\nB(x) = Person(x) not (Banned(x, Spam))\n" \
        "A(x)?\nB(x)?\n"
    a, b = answers(text)
    assert a == b == {("Ann",), ("Cy",)}


def test_unsafe_negation_is_an_error_and_the_program_does_not_run():
    text = PEOPLE + "Ok(x, y) = Person(x) not Banned(x, y)\nOk(x, y)?\n"
    assert codes(text) == ["unsafe-negation"]
    with pytest.raises(FuseError):
        compile(text)


def test_stratified_negation_runs_stratum_by_stratum():
    text = """\
Edge(A, B)
Edge(B, C)
Edge(C, A)
Edge(D, E)
Start(A)
Node(x) = Edge(x, y)
Node(y) = Edge(x, y)
Reach(x) = Start(x)
Reach(y) = Reach(x) Edge(x, y)
Unreached(x) = Node(x) not Reach(x)
Far(x) = Unreached(x)
Far(y) = Far(x) Edge(x, y) not Reach(y)
Unreached(x)?
Far(x)?
"""
    assert codes(text) == []
    unreached, far = answers(text)
    assert unreached == far == {("D",), ("E",)}


def test_a_recursive_group_reading_a_lower_stratum_negated_is_semi_naive():
    text = "Edge(A, B)\nBad(B)\nR(x) = Edge(x, y)\nR(y) = R(x) Edge(x, y) not Bad(y)\nR(x)?\n"
    assert "(semi-naive)" in recursion_message(text)
    assert answers(text) == [{("A",)}]


def test_the_recursion_diagnostic_says_when_rounds_are_plain():
    text = "E(A, B)\nS(A)\nR(x) = S(x)\nR(y) = R(x) E(x, y) step(R(x))\nR(x)?\n"
    assert "not semi-naive" in recursion_message(text)
    assert answers(text) == [{("A",), ("B",)}]


@pytest.mark.parametrize("rule", ["Win(x) = Move(x, y) not Win(y)",
                                  "Win(x) = Move(x, y) (1 - Win(y))"])
def test_a_cycle_through_negation_is_refused(rule):
    text = f"Move(A, B)\nMove(B, A)\nMove(B, C)\n{rule}\nWin(x)?\n"
    assert codes(text) == ["negation-cycle"]
    with pytest.raises(FuseError, match="negation"):
        compile(text)


def test_fuse_check_names_the_cycle(tmp_path):
    path = tmp_path / "cycle.fuse"
    path.write_text("E(A, B)\nA(x) = E(x, y) not B(y)\nB(x) = E(x, y) A(y)\nA(x)?\n")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "error[negation-cycle]" in proc.stdout and "`A` → `B` → `A`" in proc.stdout


# ------------------------------------- `1 - R` of a relation: the anti-join of `not R`

COMPLEMENTS = ["not R(x, y, z)", "(1 - R(x, y, z))", "(1 - step(R(x, y, z)))"]


def _complement_files(folder, n: int = 60, rows: int = 300) -> tuple[set, set]:
    """a.tsv and r.tsv over three columns of `n` symbols (kept sparse on NumPy:
    n^3 cells, few tuples); half of R's tuples are A's."""
    rng = random.Random(5)
    a = {tuple(f"{c}{rng.randrange(n)}" for c in "XYZ") for _ in range(rows)}
    r = set(rng.sample(sorted(a), len(a) // 2)) | \
        {tuple(f"{c}{rng.randrange(n)}" for c in "XYZ") for _ in range(rows // 2)}
    for name, tuples in (("a.tsv", a), ("r.tsv", r)):
        (folder / name).write_text("".join("\t".join(t) + "\n" for t in sorted(tuples)))
    return a, r


def _complement_text(negated: str, head: str = "D(x, y, z)") -> str:
    return f'A(x, y, z) = "a.tsv"\nR(x, y, z) = "r.tsv"\n{head} = A(x, y, z) {negated}\n' \
        f"{head}?\n"


@pytest.mark.parametrize("negated", COMPLEMENTS)
def test_one_minus_a_relation_answers_as_not(tmp_path, negated):
    a, r = _complement_files(tmp_path)
    (got,) = [set(q.tuples) for q in compile(_complement_text(negated),
                                               base_dir=tmp_path).execute().queries]
    assert got == a - r and got
    (by_x,) = [set(q.tuples) for q in compile(_complement_text(negated, "P(x)"),
                                                base_dir=tmp_path).execute().queries]
    assert by_x == {(x,) for x, _, _ in a - r}


@pytest.mark.parametrize("negated", COMPLEMENTS)
def test_one_minus_a_sparse_relation_keeps_the_rule_sparse(tmp_path, negated):
    # the plan `fuse explain` prints is the plan the run executes: D is kept sparse,
    # the negated relation read as an anti-join (docs/scale.md), as `not R` is
    _complement_files(tmp_path)
    path = tmp_path / "complement.fuse"
    path.write_text(_complement_text(negated))
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"A", "R", "D"} <= set(data["run"]["sparse"]), data["run"]


# ------------------------------------------------------- empty relations


def test_a_recursive_relation_with_no_base_case_is_empty(tmp_path):
    text = "X(A, B)\nY(a, c) = X(a, b) Y(b, c)\nY(a, b)?\nexport X\n"
    assert codes(text) == []
    path = tmp_path / "empty.fuse"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert answers(text) == [set()]


def test_an_empty_relation_joins_to_nothing_and_negates_to_everything():
    text = ("X(A, B)\nX(B, C)\nY(a, c) = X(a, b) Y(b, c)\nZ(a, c) = X(a, b) Y(b, c)\n"
            "W(a) = X(a, b) not Y(a, _)\nZ(a, b)?\nW(a)?\n")
    z, w = answers(text)
    assert z == set() and w == {("A",), ("B",)}


def test_a_head_variable_bound_by_nothing_is_an_error(tmp_path):
    text = "P(A)\nQ(B)\nP(x) = Q(y)\nP(x)?\n"
    assert codes(text) == ["unbound-head-variable"]
    path = tmp_path / "unbound.fuse"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "unbound-head-variable" in proc.stdout


def test_each_term_of_atoms_binds_the_head_on_its_own():
    """Terms that are atoms of variables (most rules: checked without a walk of
    their calls and comparisons) say the same as terms with a comparison in them."""
    plain = "E(A, B)\nF(B)\nR(a, c) = E(a, b) F(c) + E(a, c)\nR(a, c) = F(a)\nR(a, b)?\n"
    compared = ("E(A, B)\nF(B)\nR(a, c) = E(a, b) F(c) (a != b) + E(a, c)\n"
                "R(a, c) = F(a) (a != A)\nR(a, b)?\n")
    for text in (plain, compared):
        found = [d for d in fuse_lang.analyze(text).diagnostics
                 if d.code == "unbound-head-variable"]
        assert [(d.message, text[d.span.start:d.span.end]) for d in found] == [
            ("`c` of the head `R` is bound by no atom of the rule: every variable of a "
             "rule's head must occur in a positive atom of its body", "c")], text
    summed = "E(A, B)\nF(B)\nR(a, c) = E(a, b) + F(c)\nR(a, b)?\n"
    found = [d for d in fuse_lang.analyze(summed).diagnostics
             if d.code == "unbound-head-variable"]
    assert [d.message.split(" is bound")[0] + (" (a term)" if "this term of" in d.message
                                                else "") for d in found] == \
        ["`a` of the head `R` (a term)", "`c` of the head `R` (a term)"]


def test_a_numeric_equation_still_broadcasts():
    text = "axis i = 3\nX[j] = const([1, 2])\nY[i, j] = X[j]\nexport Y\n"
    assert codes(text) == []
    np.testing.assert_array_equal(compile(text).run()["Y"], [[1, 2]] * 3)


# ------------------------------------------------------------------- joins

JOIN = "H(x,y,z) = T(x,y,z) T(x,u,z) T(v,y,z)\nexport H\n"


def _triples(n: int, rows: int, seed: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return sorted({(rng.randrange(n), rng.randrange(n), rng.randrange(n)) for _ in range(rows)})


def test_a_column_local_to_one_atom_is_projected_before_the_join(tmp_path):
    facts = "".join(f"T(X{a}, Y{b}, Z{c})\n" for a, b, c in _triples(6, 40, 1))
    path = tmp_path / "join.fuse"
    path.write_text(facts + JOIN)
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (eq,) = [e for e in data["equations"] if e["tensor"] == "H"]
    (c,) = eq["contractions"]
    # u and v leave their atoms first: one single-operand step each, then the joins
    assert [s for s in c["steps"] if "," not in s.split("->")[0]] == ["adc->ac", "ebc->bc"]
    import opt_einsum
    shapes = [(6, 6, 6)] * 3
    _, carried = opt_einsum.contract_path(c["letters"], *shapes, shapes=True, optimize="auto")
    assert c["flops"] < int(carried.opt_cost)


def test_the_projected_join_answers_as_the_join_of_all_columns():
    triples = _triples(5, 30, 2)
    facts = "".join(f"T(X{a}, Y{b}, Z{c})\n" for a, b, c in triples)
    (got,) = answers(facts + "H(x,y,z) = T(x,y,z) T(x,u,z) T(v,y,z)\nH(x, y, z)?\n")
    rows = set(triples)
    want = {(f"X{a}", f"Y{b}", f"Z{c}") for a, b, c in rows
            if any(r[0] == a and r[2] == c for r in rows)
            and any(r[1] == b and r[2] == c for r in rows)}
    assert got == want


# -------------------------------------------------------------- aggregates

SALES = """\
Sale[s, item] = const([[3, 0], [1, 2], [0, 5]])
Sold(s, item) = Sale[s, item]
Count[item] = Sold(s, item)
Total[item] = Sale[s, item]
Largest[item] max= Sale[s, item]
Smallest[item] min= Sale[s, item]
export Count, Total, Largest, Smallest
"""


def test_count_sum_max_min_are_projections():
    out = compile(SALES).run()
    sale = np.array([[3, 0], [1, 2], [0, 5]], dtype=np.float32)
    np.testing.assert_array_equal(out["Count"], (sale > 0).sum(axis=0))
    np.testing.assert_array_equal(out["Total"], sale.sum(axis=0))
    np.testing.assert_array_equal(out["Largest"], sale.max(axis=0))
    np.testing.assert_array_equal(out["Smallest"], sale.min(axis=0))


def test_count_of_a_relation_by_group():
    text = ("Parent(Ann, Bob)\nParent(Ann, Cy)\nParent(Bob, Dee)\n"
            "Children[p] = Parent(p, c)\nexport Children\n")
    program = compile(text)
    out = program.run()["Children"]
    symbols = program.analysis.domain_symbols[program.analysis.tensors["Children"].axes[0].domain]
    # the parents' column is a domain of its own (Ann, Bob): children are another
    assert dict(zip(symbols, out.tolist())) == {"Ann": 2, "Bob": 1}


# ------------------------------------------------- against a reference evaluator

CONSTANTS = ("C0", "C1", "C2", "C3")
VARIABLES = ("x", "y", "z", "w")


def _random_program(rng: random.Random):
    """A random stratified program: EDB E0..E2 with facts; IDB P0..P3 in strata
    order, each rule joining positive atoms of the EDB and of P0..Pi and negating
    only atoms of the EDB and of P0..P(i-1)."""
    arity = {f"E{k}": rng.choice((1, 2)) for k in range(3)}
    facts = {name: {tuple(rng.choice(CONSTANTS) for _ in range(a))
                    for _ in range(rng.randrange(1, 6))} for name, a in arity.items()}
    idb = [f"P{k}" for k in range(rng.randrange(1, 5))]
    arity.update({name: rng.choice((1, 2)) for name in idb})
    rules = []
    for i, head in enumerate(idb):
        for _ in range(rng.randrange(1, 3)):
            positives = []
            for _ in range(rng.randrange(1, 4)):
                name = rng.choice([*facts, *idb[:i + 1]])
                positives.append((name, tuple(
                    rng.choice(VARIABLES) if rng.random() < 0.9 else rng.choice(CONSTANTS)
                    for _ in range(arity[name]))))
            bound = [t for _, args in positives for t in args if t in VARIABLES]
            if len(set(bound)) < arity[head]:
                continue
            head_args = tuple(rng.sample(sorted(set(bound)), arity[head]))
            negatives = []
            if rng.random() < 0.6:
                name = rng.choice([*facts, *idb[:i]])
                args = tuple(rng.choice(bound) if rng.random() < 0.8 else "u"
                             for _ in range(arity[name]))
                if args.count("u") == 1:  # "any value" is `_`; `u` twice is its own join
                    args = tuple("_" if a == "u" else a for a in args)
                negatives.append((name, args))
            rules.append((head, head_args, positives, negatives))
    defined = {r[0] for r in rules}
    idb = [name for name in idb if name in defined]
    # a rule may read a P that ended up with no rule: drop such rules (repeat until stable)
    while True:
        kept = [r for r in rules if all(n in facts or n in idb for n, _ in r[2] + r[3])]
        idb = [name for name in idb if any(r[0] == name for r in kept)]
        if kept == rules:
            break
        rules = kept
    return arity, facts, idb, rules


def _program_text(facts, idb, rules) -> str:
    lines = [f"{name}({', '.join(t)})" for name, tuples in facts.items() for t in sorted(tuples)]
    for head, args, positives, negatives in rules:
        body = [f"{n}({', '.join(a)})" for n, a in positives]
        body += [f"not {n}({', '.join(a)})" for n, a in negatives]
        lines.append(f"{head}({', '.join(args)}) = {' '.join(body)}")
    lines += [f"{name}({', '.join([f'q{k}' for k in range(arity)])})?"
              for name, arity in idb]
    return "\n".join(lines) + "\n"


def _matches(pattern, row, binding):
    """The binding extended by matching `row`, or None; `u` (a negated atom's own
    variable) is bound like the others, within the one atom; `_` matches anything."""
    out = dict(binding)
    for term, value in zip(pattern, row):
        if term == "_":
            continue
        if term in VARIABLES or term == "u":
            if out.setdefault(term, value) != value:
                return None
        elif term != value:
            return None
    return out


def _reference(facts, idb, rules) -> dict[str, set[tuple]]:
    """Stratified Datalog, the slow obvious way: each P to its fixpoint in order."""
    relations = {name: set(t) for name, t in facts.items()}
    for name in idb:
        relations[name] = set()
        while True:
            before = len(relations[name])
            for head, args, positives, negatives in rules:
                if head != name:
                    continue
                bindings = [{}]
                for atom, pattern in positives:
                    bindings = [b2 for b in bindings for row in relations[atom]
                                if (b2 := _matches(pattern, row, b)) is not None]
                for b in bindings:
                    if any(_matches(p, row, b) is not None
                           for atom, p in negatives for row in relations[atom]):
                        continue
                    relations[name].add(tuple(b[a] for a in args))
            if len(relations[name]) == before:
                break
    return {name: relations[name] for name in idb}


@pytest.mark.parametrize("seed", range(12))
def test_random_stratified_programs_answer_as_the_reference(seed):
    rng = random.Random(seed)
    for _ in range(3):
        arity, facts, idb, rules = _random_program(rng)
        if not idb:
            continue
        text = _program_text(facts, [(n, arity[n]) for n in idb], rules)
        assert codes(text) == [], text
        want = _reference(facts, idb, rules)
        got = answers(text)
        for name, answer in zip(idb, got):
            assert answer == want[name], (name, text)


def test_the_editor_shows_not_as_a_keyword_with_its_documentation():
    from fuse_lang.ide.hover import hover_at
    from fuse_lang.ide.semantic_tokens import semantic_tokens

    text = "Person(Ann)\nBanned(Bob)\nOk(x) = Person(x) not Banned(x)\nOk(x)?\n"
    analysis = fuse_lang.analyze(text)
    at = text.index("not")
    (token,) = [t for t in semantic_tokens(analysis) if t.span.start == at]
    assert token.type == "keyword"
    assert "Negation" in hover_at(analysis, at + 1).markdown
