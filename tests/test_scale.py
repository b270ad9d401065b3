"""Work that grows with the size of a broken or pathological program grows
linearly (issue 19, items 8 and 10).  No absolute times: the suggestions'
work is counted, and timings are compared as ratios of two sizes measured in
the same test."""
from __future__ import annotations

import difflib
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fuse_lang
from fuse_lang.check.suggestions import NameSuggester
from fuse_lang.cli import main as fuse_main
from fuse_lang.ide.explain import explain_program
from fuse_lang.ide.hover import hover_at


def _reading_a_deleted_param(statements: int) -> str:
    """A program whose `param W` line was deleted: every statement reads W."""
    lines = ["axis i = 4", "param X[i]"]
    lines += [f"Y{k}[i] = W[i] X[i]" for k in range(statements)]
    return "\n".join(lines) + "\n"


def _reading_distinct_typos(statements: int) -> str:
    """Every statement reads its own undefined (misspelt) tensor."""
    lines = ["axis i = 4", "param X[i]"]
    lines += [f"Y{k}[i] = Zq{k}[i] X[i]" for k in range(statements)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def compared(monkeypatch):
    """How many candidate names difflib compared, in all."""
    count = [0]
    real = difflib.get_close_matches

    def counting(word, possibilities, *args, **kwargs):
        possibilities = list(possibilities)
        count[0] += len(possibilities)
        return real(word, possibilities, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    return count


def _undefined(analysis) -> list:
    return [d for d in analysis.diagnostics if d.code == "undefined-tensor"]


def test_a_deleted_param_read_everywhere_costs_one_suggestion(compared):
    sizes = {}
    for statements in (250, 1000):
        compared[0] = 0
        found = _undefined(fuse_lang.analyze(_reading_a_deleted_param(statements)))
        assert len(found) == statements  # each reference is still reported
        assert all(d.message == "`W` is not defined" for d in found)
        sizes[statements] = compared[0]
    # linear, not quadratic: 4x the statements, at most 8x the comparisons
    assert sizes[1000] <= 8 * max(sizes[250], 1)


def test_distinct_undefined_names_cost_linear_work(compared):
    sizes = {}
    for statements in (250, 1000):
        compared[0] = 0
        found = _undefined(fuse_lang.analyze(_reading_distinct_typos(statements)))
        assert len(found) == statements
        sizes[statements] = compared[0]
    assert sizes[1000] <= 8 * max(sizes[250], 1)


def test_a_spent_suggestion_budget_costs_nothing_per_name():
    """Past the budget, a misspelt name is not even measured against the candidates
    (issue 28, item 5: gathering them per name made 50,000 undefined reads take
    44.6 s): asking for 20,000 new names costs about as much as filing 20,000
    candidates, not 20,000 times that."""
    names = [f"Tensor{k}" for k in range(20_000)]
    start = time.perf_counter()
    suggester = NameSuggester(names, budget=10)
    filing = time.perf_counter() - start
    start = time.perf_counter()
    found = [suggester.close(f"Tnesor{k}") for k in range(20_000)]
    asking = time.perf_counter() - start
    assert found == [()] * 20_000 and suggester.compared == suggester.budget
    assert asking < 20 * max(filing, 1e-3)  # gathering per name: about 2,000x


def test_the_suggestion_is_still_made_with_its_fix():
    text = "axis i = 4\nparam Weights[i]\n" + "".join(
        f"Y{k}[i] = Weigths[i]\n" for k in range(500))
    found = _undefined(fuse_lang.analyze(text))
    assert len(found) == 500
    assert all(d.message == "`Weigths` is not defined; did you mean `Weights`?" for d in found)
    assert all([fix.title for fix in d.fixes] == ["Change to `Weights`"] for d in found)


def test_suggestions_among_names_of_the_same_characters_are_difflibs():
    """Candidates made of the same characters (`A12`, `A21`) are measured against
    difflib's quick bound once together (check/suggestions.py): each misspelt
    name still gets exactly difflib's close matches, best first."""
    names = [f"A{k}" for k in range(100, 400)] + ["B12", "A1_2", "a12", "A2_1", "X9"]
    text = "axis i = 2\n" + "".join(f"{name}[i] = 1\n" for name in names)
    typos = ["A13", "A4111", "B21", "a21", "A_12", "Z9", "A"]
    text += "".join(f"Y{k}[i] = {typo}[i]\n" for k, typo in enumerate(typos))
    found = {d.message.split("`")[1]: d for d in _undefined(fuse_lang.analyze(text))}
    assert sorted(found) == sorted(typos)
    for typo in typos:
        close = difflib.get_close_matches(typo, names, n=3, cutoff=0.6)
        assert [fix.title for fix in found[typo].fixes] == [f"Change to `{c}`" for c in close]
        if close:
            assert found[typo].message.endswith(
                "did you mean " + " or ".join(f"`{c}`" for c in close) + "?")


def test_check_of_a_broken_file_answers(tmp_path, capsys):
    path = tmp_path / "broken.fuse"
    path.write_text(_reading_a_deleted_param(3000), encoding="utf-8")
    assert fuse_main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "error[undefined-tensor]: `W` is not defined" in out


def _long_sum_of_products(products: int) -> str:
    """One equation: a sum of `products` matrix-vector products (28k characters
    at 2,000)."""
    rhs = " + ".join("M[i,j] X[j]" for _ in range(products))
    return f"axis i = 4\nparam X[i]\nparam M[i,i]\nY[i] = {rhs}\n"


def _best_of_three(action) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def test_explain_of_a_long_equation_grows_linearly(tmp_path, capsys):
    took = {}
    for products in (600, 2400):
        path = tmp_path / f"long{products}.fuse"
        path.write_text(_long_sum_of_products(products), encoding="utf-8")
        took[products] = _best_of_three(lambda path=path: fuse_main(["explain", str(path)]))
        out = capsys.readouterr().out
        assert out.count("einsum ab,b->a") == 3 * products  # each product, every run
    # 4x the length: linear is about 4x, quadratic 16x; generous for a noisy machine
    assert took[2400] < 10 * took[600]


def test_a_run_plan_reads_the_table_of_extents_once():
    """Each statement's extents are found in one pass over `var_extents`, not one
    pass per statement (issue 28, item 5: quadratic; `fuse explain` of 5,000
    generated lines took 27 s)."""
    text = "axis p = 4, d = 8\nparam X[p,d]\n" + "".join(
        f"H{k}[p,d] = relu(X[p,d] + {k})\n" for k in range(200))
    analysis = fuse_lang.analyze(text)
    passes = [0]

    class Counted(dict):
        def items(self):
            passes[0] += 1
            return super().items()

    object.__setattr__(analysis, "var_extents", Counted(analysis.var_extents))
    plan = explain_program(fuse_lang.compile(text, analysis=analysis)).run_plan
    infos = list(plan.statements.values())
    assert len(infos) == 200 and all(info.extents == {"p": 4, "d": 8} for info in infos)
    assert passes[0] <= 2


def test_hover_on_the_operator_of_a_long_equation_grows_linearly():
    took = {}
    for products in (600, 2400):
        text = _long_sum_of_products(products)
        analysis = fuse_lang.analyze(text)
        offset = text.index("Y[i] =") + len("Y[i] ")
        found = []
        took[products] = _best_of_three(
            lambda found=found, analysis=analysis, offset=offset:
            found.append(hover_at(analysis, offset)))
        assert found[0] is not None and found[0].markdown.startswith("**Projection** of `Y`")
    assert took[2400] < 10 * took[600]


def test_check_of_an_equation_of_many_lone_indices_grows_linearly():
    """Each term sums its own index (`j0`, `j1`, ...): many pairs of names one slip
    apart, none a likely typo (they are in different terms)."""
    took = {}
    for terms in (750, 3000):
        rhs = " + ".join(f"A[i,j{k}]" for k in range(terms))
        text = f"axis i = 4\nparam A[i,i]\nY[i] = {rhs}\n"
        found = []
        took[terms] = _best_of_three(
            lambda found=found, text=text: found.append(fuse_lang.analyze(text)))
        assert not found[0].diagnostics
    assert took[3000] < 10 * took[750]


def test_the_broken_edit_benchmark_runs_and_prints_its_ratios():
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "broken_edit_speed.py"
    done = subprocess.run([sys.executable, str(script), "--lines", "300", "--runs", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("x intact") == 3
    assert done.stdout.count("x the same line edited harmlessly") == 3
