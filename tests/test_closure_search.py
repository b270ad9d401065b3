"""A deep linear recursion finished by one graph search (fuse_lang/run/closure.py,
docs/execution.md): the same facts as the semi-naive rounds (and the naive ones),
the same round limit and message, and a chain's rounds no longer each paying a
join's fixed cost.  A conformance module's neighbour: the answers are compared
with the naive strategy, which never searches."""
from __future__ import annotations

import random

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, FuseError
from fuse_lang.run.fixpoint import closure

RIGHT = "Anc(x,y) = Edge(x,y)\nAnc(x,z) = Anc(x,y) Edge(y,z)\n"
LEFT = "Anc(x,y) = Edge(x,y)\nAnc(x,z) = Edge(x,y) Anc(y,z)\n"
GUARDED = "Anc(x,y) = Edge(x,y)\nAnc(x,z) = Keep(x) Anc(x,y) Edge(y,z)\n"
# a 1-D relation's reachability: one row of a closure (from N0), one column (to N5)
ROW = "Anc(y) = Edge(N0, y)\nAnc(z) = Anc(y) Edge(y,z)\n"
COLUMN = "Anc(N5)\nAnc(x) = Edge(x,y) Anc(y)\n"


def _facts(edges: list[tuple[int, int]], keep: list[int] = ()) -> str:
    return "".join(f"Edge(N{a}, N{b})\n" for a, b in edges) + \
        "".join(f"Keep(N{k})\n" for k in keep)


def _graph(kind: str, size: int, rng: random.Random) -> list[tuple[int, int]]:
    if kind == "chain":
        return [(k, k + 1) for k in range(size - 1)]
    if kind == "tree":
        return [(rng.randrange(max(k // 2, 1)) if k > 1 else 0, k) for k in range(1, size)]
    if kind == "cycle":
        return [(k, (k + 1) % size) for k in range(size)]
    return [(rng.randrange(size), rng.randrange(size)) for _ in range(2 * size)]  # random


def _answers(text: str, **config) -> dict:
    result = fuse_lang.compile(text, config=ExecutionConfig(**config)).execute()
    out = {name: (np.asarray(value.toarray() if hasattr(value, "toarray") else value) > 0)
           for name, value in result.outputs.items()}
    out.update({q.text: sorted(q.tuples or ()) for q in result.queries})
    return out


def _same(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("rule", [RIGHT, LEFT, GUARDED], ids=["right", "left", "guarded"])
@pytest.mark.parametrize("kind", ["chain", "tree", "cycle", "random"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("after", [1, 3, None], ids=["after-1", "after-3", "after-default"])
def test_the_search_finds_what_the_rounds_find(monkeypatch, rule, kind, seed, after):
    if after is not None:  # the search taken early, wherever the rows still grow
        monkeypatch.setattr(closure, "SEARCH_AFTER", after)
        monkeypatch.setattr(closure, "ROUND_CELLS", closure.SEARCH_CELLS)
    rng = random.Random(seed)
    size = rng.randrange(20, 60)
    keep = rng.sample(range(size), size // 3)
    text = _facts(_graph(kind, size, rng), keep) + rule + "export Anc\nAnc(N0, x)?\nAnc(x, N5)?\n"
    for mode in ("forward", "demand"):
        _same(_answers(text, mode=mode), _answers(text, mode=mode, fixpoint="naive"))


@pytest.mark.parametrize("rule", [ROW, COLUMN], ids=["row", "column"])
@pytest.mark.parametrize("kind", ["chain", "tree", "cycle", "random"])
@pytest.mark.parametrize("after", [1, 3, None], ids=["after-1", "after-3", "after-default"])
def test_a_1d_reachability_is_searched_and_finds_what_the_rounds_find(monkeypatch, rule, kind,
                                                                      after):
    if after is not None:
        monkeypatch.setattr(closure, "SEARCH_AFTER", after)
        monkeypatch.setattr(closure, "ROUND_CELLS", closure.SEARCH_CELLS)
    rng = random.Random(kind)
    size = rng.randrange(20, 60)
    text = _facts(_graph(kind, size, rng)) + rule + "export Anc\nAnc(x)?\n"
    for mode in ("forward", "demand"):
        _same(_answers(text, mode=mode), _answers(text, mode=mode, fixpoint="naive"))


@pytest.mark.parametrize("rule", [ROW, COLUMN], ids=["row", "column"])
def test_a_long_path_reached_from_one_node_takes_its_rounds_in_one_search(rule):
    """A 1-D relation over a chain of 400 edges: 400 rounds that each read the whole
    relation (quadratic in the chain) before the search took them."""
    edges = _graph("chain", 400, random.Random(0))
    if rule is COLUMN:  # reached backwards from N5: the chain turned round
        edges = [(b, a) for a, b in edges]
    text = _facts(edges) + rule + "Anc(x)?\n"
    result = fuse_lang.compile(text, config=ExecutionConfig(trace=True)).execute()
    assert len(result.queries[0].tuples) == (399 if rule is ROW else 395)
    (fixpoint,) = result.trace["fixpoints"]
    assert fixpoint["rounds"][-2].get("searched")


@pytest.mark.parametrize("mode", ["forward", "demand"])
def test_a_long_chain_takes_its_rounds_in_one_search_and_traces_each(monkeypatch, mode):
    text = _facts(_graph("chain", 400, random.Random(0))) + RIGHT + "Anc(N0, x)?\n"
    config = ExecutionConfig(mode=mode, trace=True)
    result = fuse_lang.compile(text, config=config).execute()
    assert len(result.queries[0].tuples) == 399
    (fixpoint,) = result.trace["fixpoints"]
    rounds = fixpoint["rounds"]
    assert [r.get("searched", False) for r in rounds] == \
        [False] * closure.SEARCH_AFTER + [True] * (len(rounds) - closure.SEARCH_AFTER)
    # the rounds the search stood for, each as the rounds themselves record it
    monkeypatch.setattr(closure, "SEARCH_AFTER", 10**9)
    (plain,) = fuse_lang.compile(text, config=config).execute().trace["fixpoints"]
    assert [(r["iteration"], r["facts_added"]) for r in rounds] == \
        [(r["iteration"], r["facts_added"]) for r in plain["rounds"]]
    assert rounds[-1]["facts_added"] == 0  # the last round finds nothing


def test_fuse_run_trace_shows_the_searched_rounds_as_one_row(tmp_path):
    from fuse_lang.cli import main

    path = tmp_path / "chain.fuse"
    path.write_text(_facts(_graph("chain", 100, random.Random(0))) + RIGHT + "export Anc\n",
                    encoding="utf-8")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(path), "--trace"]) == 0
    text = out.getvalue()
    assert f"{closure.SEARCH_AFTER + 1}-99 (searched)" in text  # 98 rounds, then one empty
    assert "trace: fixpoint of Anc (semi_naive)" in text


@pytest.mark.parametrize("rule", [RIGHT, LEFT, ROW])
@pytest.mark.parametrize("limit", [12, 30, 399, 400])
def test_the_round_limit_and_its_message_are_the_rounds_own(monkeypatch, rule, limit):
    text = _facts(_graph("chain", 400, random.Random(0))) + rule + "export Anc\n"

    def outcome():
        try:
            return _answers(text, max_iterations=limit)
        except FuseError as err:
            return str(err)

    searched = outcome()
    monkeypatch.setattr(closure, "SEARCH_AFTER", 10**9)  # the plain semi-naive rounds
    plain = outcome()
    if isinstance(plain, str):
        assert searched == plain and "did not reach a fixpoint in" in plain
    else:
        _same(searched, plain)


def test_a_large_relation_file_chain_is_answered_in_demand_mode(tmp_path):
    size = 50_000
    (tmp_path / "parent.tsv").write_text("".join(f"P{k}\tP{k + 1}\n" for k in range(size - 1)))
    text = 'Parent(x,y) = "parent.tsv"\nAnc(x,y) = Parent(x,y)\n' \
           "Anc(x,z) = Anc(x,y) Parent(y,z)\nAnc(P0, x)?\nAnc(P49990, x)?\n"
    result = fuse_lang.compile(text, base_dir=tmp_path,
                               config=ExecutionConfig(mode="demand")).execute()
    assert len(result.queries[0].tuples) == size - 1
    assert [t[0] for t in result.queries[1].tuples] == sorted(
        f"P{k}" for k in range(49991, size))


def test_what_is_a_linear_closure_and_explain_says_so(tmp_path):
    from fuse_lang.cli import main
    from fuse_lang.plan.linear_closure import LinearRule, linear_rule

    text = "Edge(A, B)\nEdge(B, C)\nT(x,y) = Edge(x,y)\nT(x,z) = T(x,y) T(y,z)\nexport T\n"
    assert linear_rule(fuse_lang.analyze(text), ["T"]) is None  # T T: not linear
    two = "Edge(A, B)\nT(x,y) = Edge(x,y)\nT(x,z) = T(x,y) Edge(y,z)\n" \
          "T(x,z) = Edge(x,y) T(y,z)\nexport T\n"
    assert linear_rule(fuse_lang.analyze(two), ["T"]) is None  # two recursive rules
    guarded = fuse_lang.analyze(_facts([(0, 1)], [0]) + GUARDED + "export Anc\n")
    assert linear_rule(guarded, ["Anc"]) == LinearRule("Anc", "Edge", False, ("Keep",))
    left = fuse_lang.analyze(_facts([(0, 1)]) + LEFT + "export Anc\n")
    assert linear_rule(left, ["Anc"]) == LinearRule("Anc", "Edge", True, ())
    row = fuse_lang.analyze(_facts([(0, 1)]) + ROW + "export Anc\n")
    assert linear_rule(row, ["Anc"]) == LinearRule("Anc", "Edge", False, ())
    column = fuse_lang.analyze(_facts([(0, 5)]) + COLUMN + "export Anc\n")
    assert linear_rule(column, ["Anc"]) == LinearRule("Anc", "Edge", True, ())
    loop = "Edge(A, B)\nR(A)\nR(y) = R(y) Edge(y,y)\nexport R\n"  # no step: not a closure
    assert linear_rule(fuse_lang.analyze(loop), ["R"]) is None
    path = tmp_path / "chain.fuse"
    path.write_text(_facts([(0, 1), (1, 2)]) + RIGHT + "export Anc\n", encoding="utf-8")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--mode", "demand"]) == 0
    assert "a linear closure: past a tree's depth in rounds, an eager run finds the rest " \
           "by one graph search" in out.getvalue()


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_framework_backends_search_on_the_host_and_answer_alike(backend):
    pytest.importorskip(backend)
    text = _facts(_graph("chain", 80, random.Random(0))) + LEFT + \
        "export Anc\nAnc(N0, x)?\nAnc(x, N79)?\n"
    expected = _answers(text, mode="demand")
    for mode in ("forward", "demand"):
        result = fuse_lang.compile(text, backend=backend, compiled=False,
                                   config=ExecutionConfig(mode=mode, trace=True)).execute()
        (fixpoint, *_) = result.trace["fixpoints"]
        assert fixpoint["rounds"][closure.SEARCH_AFTER].get("searched")  # it searched
        got = {q.text: sorted(q.tuples or ()) for q in result.queries}
        for query in ("Anc(N0, x)?", "Anc(x, N79)?"):
            assert got[query] == expected[query]
        np.testing.assert_array_equal(np.asarray(
            result.outputs["Anc"].toarray() if hasattr(result.outputs["Anc"], "toarray")
            else result.outputs["Anc"]) > 0, expected["Anc"])
