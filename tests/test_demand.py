"""Demand mode (issue 13, item 2): only what the exports and queries need, and bound
queries through the magic-sets rewrite (fuse_lang/plan/demand.py).  Every program
here runs on NumPy and, by the conformance fixture, on torch and jax too."""
from __future__ import annotations

import random
import subprocess
import sys
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuse_lang
from fuse_lang import ExecutionConfig
from fuse_lang.check import analyze
from fuse_lang.plan.demand import plan_demand

DATALOG = """Parent(Alice, Bob)
Parent(Bob, Carol)
Parent(Carol, Dave)
Parent(Bob, Eve)
Parent(Frank, Gina)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Bob, x)?
"""


def answers(text: str, mode: str, **kwargs) -> list[tuple[str, str, set | None]]:
    result = fuse_lang.compile(text, config=ExecutionConfig(mode=mode), **kwargs).execute()
    return [(q.text, q.tensor, None if q.tuples is None else set(q.tuples))
            for q in result.queries]


def test_a_bound_query_is_answered_as_forward_mode_answers_it():
    assert answers(DATALOG, "demand") == answers(DATALOG, "forward") == [
        ("Ancestor(Bob, x)?", "Ancestor", {("Carol",), ("Dave",), ("Eve",)})]


def test_demand_mode_evaluates_only_the_adorned_relations_it_needs():
    program = fuse_lang.compile(DATALOG, config=ExecutionConfig(mode="demand", trace=True))
    ran = [e["tensor"] for e in program.execute().trace["equations"]]
    assert "Ancestor" not in ran and "Ancestor_bf" in ran and "Magic_Ancestor_bf" in ran
    ancestor = program.execute().trace["equations"][ran.index("Ancestor_bf")]
    assert ancestor["nonzeros"] == 3  # Bob's row only: not Alice's, not Frank's


def test_the_rewrite_adorns_guards_and_seeds():
    plan = plan_demand(analyze(DATALOG))
    assert [(r.tensor, r.adornment, r.name, r.magic) for r in plan.relations] == [
        ("Ancestor", "bf", "Ancestor_bf", "Magic_Ancestor_bf")]
    assert plan.rules == ("Magic_Ancestor_bf(b0) = (b0 == Bob)",
                          "Ancestor_bf(x,y) = Magic_Ancestor_bf(x) Parent(x,y)",
                          "Ancestor_bf(x,z) = Magic_Ancestor_bf(x) Ancestor_bf(x,y) Parent(y,z)",
                          # (read by nothing, never run: the magic column is Ancestor's)
                          "Magic_Ancestor_bf_tie(b0, b1) = Magic_Ancestor_bf(b0) "
                          "Ancestor_bf(b0, b1) Ancestor(b0, b1)")
    assert plan.left_out == ("Ancestor",)


def test_a_magic_relation_passes_bindings_sideways_to_another_relation():
    text = """E(A,B)
E(B,C)
E(C,D)
E(D,A)
Reach(x,y) = E(x,y)
Reach(x,z) = E(x,y) Reach(y,z)
Far(x,z) = Reach(x,y) Reach(y,z)
Far(B, x)?
"""
    plan = plan_demand(analyze(text))
    assert {(r.tensor, r.adornment) for r in plan.relations} == {("Far", "bf"),
                                                                  ("Reach", "bf")}
    assert "Magic_Reach_bf(y) = Magic_Far_bf(x) Reach_bf(x,y)" in plan.rules
    assert answers(text, "demand") == answers(text, "forward")


def test_an_adorned_rule_reads_in_full_only_the_relations_it_names_whole():
    # `E` and `E_2` are parts of names the rules write (`E2`), never names of their own
    text = """E(A,B)
E2(A,B)
E2(B,C)
E_2(C,D)
Reach(x,y) = E2(x,y)
Reach(x,z) = Reach(x,y) E2(y,z)
Other(x,y) = E(x,y) E_2(x,y)
Reach(A, x)?
"""
    plan = plan_demand(analyze(text))
    assert plan.evaluated == ("E2", "Magic_Reach_bf", "Reach_bf")
    assert plan.left_out == ("E", "E_2", "Reach", "Other")


def test_exports_unbound_queries_and_negation_read_relations_in_full():
    text = """E(A,B)
E(B,C)
E(C,A)
E(C,D)
F(D)
R(x,y) = E(x,y)
R(x,z) = E(x,y) R(y,z)
S(x) = R(A,x) not F(x)
T(x,y) = R(x,y) not S(y)
T(B,x)?
S(x)?
R(x, D)?
export R
"""
    forward = fuse_lang.compile(text).execute()
    demand = fuse_lang.compile(text, config=ExecutionConfig(mode="demand")).execute()
    assert (demand.outputs["R"] == forward.outputs["R"]).all()
    assert list(demand.outputs) == ["R"]
    assert answers(text, "demand") == answers(text, "forward")


def test_numeric_recursion_and_equations_run_as_forward_mode_runs_them():
    text = """axis i = 3
A[i,j] = const([[0.5, 0.1, 0], [0, 0.5, 0.1], [0.1, 0, 0.5]])
B[i] = const([1, 2, 3])
X[i] = A[i,j] X[j] + B[i]
Unused[i] = B[i] B[i]
export X
"""
    forward = fuse_lang.compile(text).run()
    demand = fuse_lang.compile(text, config=ExecutionConfig(mode="demand")).run()
    assert list(demand) == ["X"] and abs(demand["X"] - forward["X"]).max() < 1e-5


def test_explain_shows_the_rewrite(tmp_path):
    (tmp_path / "a.fuse").write_text(DATALOG)
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain",
                           str(tmp_path / "a.fuse"), "--mode", "demand"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "demand: Ancestor asked as Ancestor_bf (adornment bf" in done.stdout
    assert "Ancestor_bf(x,z) = Magic_Ancestor_bf(x) Ancestor_bf(x,y) Parent(y,z)" in \
        done.stdout
    assert "not evaluated: Ancestor" in done.stdout


def test_fuse_run_mode_demand_answers(tmp_path):
    (tmp_path / "a.fuse").write_text(DATALOG)
    run = [sys.executable, "-m", "fuse_lang.cli", "run", str(tmp_path / "a.fuse")]
    demand = subprocess.run(run + ["--mode", "demand"], capture_output=True, text=True,
                            timeout=60)
    forward = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert demand.returncode == 0, demand.stderr
    assert demand.stdout == forward.stdout and "Carol" in demand.stdout


@pytest.mark.reference_only  # jax.jit runs it dense; eager jax is slow here (docs/execution.md)
def test_a_bound_query_over_a_large_relation_file_never_densifies(tmp_path):
    """20,000 symbols: a dense Ancestor would be 1.6 GB; demand mode keeps to the
    sub-tree asked about, sparse (NumPy)."""
    size = 20_000
    rng = random.Random(3)
    (tmp_path / "parent.tsv").write_text("".join(
        f"P{rng.randrange(max(k // 2, 1)) if k > 1 else 0}\tP{k}\n" for k in range(1, size)))
    text = 'Parent(x,y) = "parent.tsv"\nAncestor(x,y) = Parent(x,y)\n' \
           'Ancestor(x,z) = Ancestor(x,y) Parent(y,z)\nAncestor(P1, x)?\n'
    program = fuse_lang.compile(text, base_dir=tmp_path, config=ExecutionConfig(mode="demand"))
    tracemalloc.start()
    result = program.execute()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 400e6, peak
    children: dict[str, list[str]] = {}
    for line in (tmp_path / "parent.tsv").read_text().splitlines():
        parent, child = line.split("\t")
        children.setdefault(parent, []).append(child)
    below, stack = set(), ["P1"]
    while stack:
        for child in children.get(stack.pop(), []):
            below.add((child,))
            stack.append(child)
    assert set(result.queries[0].tuples) == below


# ------------------------------------ random stratified programs, random bound queries

CONSTANTS = ("C0", "C1", "C2", "C3")
VARIABLES = ("x", "y", "z", "w")


def _atom(rng: random.Random, name: str, arity: int, constants: float = 0.1) -> str:
    args = [rng.choice(VARIABLES) if rng.random() >= constants else rng.choice(CONSTANTS)
            for _ in range(arity)]
    return f"{name}({', '.join(args)})"


def random_program(seed: int) -> str:
    """EDB E0..E2 (facts), IDB P0..P3 in strata order: positive atoms of the EDB and
    P0..Pi (recursion included), `not` only of the EDB and P0..P(i-1); each IDB
    relation asked with a random mix of constants and variables."""
    rng = random.Random(seed)
    arity = {f"E{k}": rng.choice((1, 2)) for k in range(3)}
    lines = [f"{name}({', '.join(rng.choice(CONSTANTS) for _ in range(a))})"
             for name, a in arity.items() for _ in range(rng.randrange(1, 7))]
    idb = [f"P{k}" for k in range(rng.randrange(1, 5))]
    arity.update({name: rng.choice((1, 2)) for name in idb})
    defined: list[str] = []
    for head in idb:
        for _ in range(rng.randrange(1, 3)):
            reads = [*arity][:3] + defined + [head]
            body = [_atom(rng, n, arity[n]) for n in
                    (rng.choice(reads) for _ in range(rng.randrange(1, 4)))]
            bound = sorted({v for atom in body for v in VARIABLES if f"({v}" in atom
                            or f" {v}" in atom})
            if len(bound) < arity[head]:
                continue
            if rng.random() < 0.5:
                name = rng.choice([*arity][:3] + defined)
                args = [rng.choice(bound) if rng.random() < 0.8 else "u"
                        for _ in range(arity[name])]
                body.append(f"not {name}({', '.join(args)})")
            lines.append(f"{head}({', '.join(rng.sample(bound, arity[head]))}) = "
                         f"{' '.join(body)}")
            if head not in defined:
                defined.append(head)
    for name in defined:
        lines.append(_atom(rng, name, arity[name], constants=0.6) + "?")
    return "\n".join(lines) + "\n"


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6))
def test_random_programs_answer_in_demand_mode_as_in_forward_mode(seed):
    text = random_program(seed)
    if any(d.severity.name == "ERROR" for d in analyze(text).diagnostics):
        return  # a random rule that breaks safety: not a program
    assert answers(text, "demand") == answers(text, "forward"), text


@pytest.mark.parametrize("seed", range(3))
def test_random_programs_with_bound_queries_are_rewritten(seed):
    """The generator does produce bound queries that the rewrite serves."""
    texts = [random_program(seed * 100 + k) for k in range(20)]
    rewritten = [t for t in texts if plan_demand(analyze(t)).rewritten]
    assert rewritten
    for text in rewritten[:2]:
        if not any(d.severity.name == "ERROR" for d in analyze(text).diagnostics):
            assert answers(text, "demand") == answers(text, "forward"), text
