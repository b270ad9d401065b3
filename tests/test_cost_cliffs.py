"""Program shapes whose cost grew faster than their size (benchmarks/cost_cliffs.py
prints the growth ratios): each checked here at a small size for its answers only
(no timing), through the public API."""
from __future__ import annotations

import gc

import numpy as np

import fuse_lang
from fuse_lang import ExecutionConfig


def _cycle_of_relations(n: int) -> str:
    """n relations in one recursive group, each a copy of the one before."""
    text = "Edge(A, B)\nEdge(B, C)\nEdge(C, D)\nR0(x,y) = Edge(x,y)\n"
    text += "".join(f"R{k + 1}(x,y) = R{k}(x,y)\n" for k in range(n - 1))
    return text + f"R0(x,z) = R{n - 1}(x,y) Edge(y,z)\nexport R0, R{n // 2}, R{n - 1}\n"


def test_a_recursive_group_of_many_relations_reaches_the_fixpoint_of_its_naive_rounds():
    """A round visits only the members that new facts reach (a cycle of N relations
    takes O(N) rounds that each add one member's facts); the answers are the naive
    rounds' and the closure's."""
    text = _cycle_of_relations(40)
    semi = fuse_lang.compile(text).execute().outputs
    naive = fuse_lang.compile(text, config=ExecutionConfig(fixpoint="naive")).execute().outputs
    closure = {("A", "B"), ("A", "C"), ("A", "D"), ("B", "C"), ("B", "D"), ("C", "D")}
    result = fuse_lang.compile(text).execute()
    for name in ("R0", "R20", "R39"):
        np.testing.assert_array_equal(np.asarray(semi[name]), np.asarray(naive[name]))
        assert set(result.relation(name).tuples()) == closure, name


def test_a_traced_group_of_many_relations_records_each_rule_that_ran():
    text = _cycle_of_relations(5)
    result = fuse_lang.compile(text, config=ExecutionConfig(trace=True)).execute()
    (fixpoint,) = result.trace["fixpoints"]
    rounds = fixpoint["rounds"]
    # each round runs the one rule that reads the last round's new facts
    assert [[rule["delta_of"] for rule in r["rules"]] for r in rounds] == \
        [[f"R{k % 5}"] for k in range(15)]
    assert [r["facts_added"] for r in rounds] == [3] * 4 + [2] * 5 + [1] * 5 + [0]


def test_compile_and_explain_of_a_long_program_leave_the_collector_as_they_found_it():
    """compile and explain pause the cycle collector while they plan (as analyze
    does): a long program's plan is a large graph it would only rescan."""
    text = "X[i] = const([1,2,3])\n" + "".join(f"Y[i] += {k} X[i]\n" for k in range(50)) + \
        "export Y\n"
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            program = fuse_lang.compile(text)
            assert gc.isenabled() is enabled
            explained = str(fuse_lang.explain(program))
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
        assert "Y[i] += 49 X[i]" in explained or "line 51" in explained
        np.testing.assert_allclose(program.execute().outputs["Y"],
                                   [1225.0, 2450.0, 3675.0])


def test_calls_that_double_at_each_level_are_refused_before_being_written_out():
    """Twenty levels of a function calling the one before it twice would write out a
    million equations: refused at the call at once, with the count, not after the
    checker has copied 200,000 of them (which took about 10 s)."""
    lines = ["fn f0(x[i]) -> y[i] { y[i] = 2 x[i] }"]
    lines += [f"fn f{k}(x[i]) -> y[i] {{ y[i] = f{k - 1}(x[i]) + f{k - 1}(x[i]) }}"
              for k in range(1, 21)]
    text = "\n".join(lines + ["X[i] = const([1,2])", "Y[i] = f20(X[i])", "export Y"]) + "\n"
    [error] = [d for d in fuse_lang.analyze(text, None).diagnostics if d.severity is fuse_lang.Severity.ERROR]
    assert error.code == "nesting-too-deep"
    assert "`f20` writes out 2,097,151 equations or more" in error.message
    assert text[error.span.start:error.span.end] == "f20(X[i])"
    small = text.replace("f20(X[i])", "f3(X[i])")
    assert not fuse_lang.analyze(small, None).diagnostics
