"""Temperature schedules (issue 14, item 4): `T = linear(1.0, 0.1, steps=10)`,
`exponential`, `cosine`; per fixpoint round (`per=iteration`) or per run
(`per=run`), checked against annealing written out by hand, on every backend.
"""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, analyze

BACKENDS = ["numpy", "torch", "jax"]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def linear(start, end, steps, s):
    return start + (end - start) * min(s, steps) / steps


def exponential(start, end, steps, s):
    return start * (end / start) ** (min(s, steps) / steps)


def cosine(start, end, steps, s):
    return end + (start - end) * (1 + math.cos(math.pi * min(s, steps) / steps)) / 2


def sig(z):
    return 1 / (1 + np.exp(-z))


W = np.array([[0.5, -0.3], [0.2, 0.4]])
B = np.array([0.1, -0.2])
RECURSION = ("W[i,j] = const([[0.5, -0.3], [0.2, 0.4]])\nB[i] = const([0.1, -0.2])\n"
             "T = {schedule}\nX[i] = sig(W[i,j] X[j] + B[i], T)\nexport X")


def annealed_by_hand(schedule, tolerance=1e-6, limit=1000):
    """The fixpoint of X = sig((W X + B) / T(round)) from 0, round by round, as
    docs/language.md says a schedule runs: the changes of each round, the value."""
    x, changes = np.zeros(2), []
    for r in range(limit):
        new = sig((W @ x + B) / schedule(r))
        changes.append(float(np.max(np.abs(new - x))))
        x = new
        if changes[-1] <= tolerance:
            break
    return x, changes


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind,by_hand", [("linear", linear), ("exponential", exponential),
                                          ("cosine", cosine)])
def test_a_schedule_per_iteration_is_hand_written_annealing(backend, kind, by_hand):
    text = RECURSION.format(schedule=f"{kind}(2.0, 0.25, steps=6)")
    result = fuse_lang.compile(text, backend=backend,
                               config=ExecutionConfig(trace=True)).execute()
    expected, changes = annealed_by_hand(lambda r: by_hand(2.0, 0.25, 6, r))
    np.testing.assert_allclose(result.outputs["X"], expected, rtol=1e-4, atol=1e-5)
    rounds = [e["change"] for e in result.trace["fixpoints"][0]["rounds"]]
    # the first rounds, where the temperature moves, are the schedule's
    np.testing.assert_allclose(rounds[:8], changes[:8], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_schedule_per_run_advances_with_each_run(backend):
    text = ("X = const([-1, 0.5, 2])\nT = exponential(1.0, 0.01, steps=3, per=run)\n"
            "Y[i] = sig(X[i], T=T)\nexport Y, T")
    program = fuse_lang.compile(text, backend=backend)
    x = np.array([-1, 0.5, 2])
    for run in range(5):
        out = program.run()
        t = exponential(1.0, 0.01, 3, run)
        np.testing.assert_allclose(out["T"], t, rtol=1e-5)
        np.testing.assert_allclose(out["Y"], sig(x / t), rtol=1e-4, atol=1e-6)


def test_per_run_on_compiled_graphs_takes_the_new_value_without_recompiling():
    text = ("X = const([-1, 0.5, 2])\nT = linear(1.0, 0.5, steps=2, per=run)\n"
            "Y[i] = sig(X[i], T) X[i]\nexport Y")
    program = fuse_lang.compile(text, backend="jax")
    first = program.run()["Y"]
    compiled = program.compilations
    second = program.run()["Y"]
    x = np.array([-1, 0.5, 2])
    np.testing.assert_allclose(first, sig(x) * x, rtol=1e-5)
    np.testing.assert_allclose(second, sig(x / 0.75) * x, rtol=1e-5)
    assert program.compilations == compiled  # the temperature is an argument of the graph


def test_outside_a_fixpoint_a_per_iteration_schedule_is_its_start(tmp_path):
    out = fuse_lang.compile("T = cosine(0.5, 0.1, steps=4)\nY = sig(const(1), T)\n"
                            "export Y, T").run()
    assert float(out["T"]) == pytest.approx(0.5)
    assert float(out["Y"]) == pytest.approx(1 / (1 + math.exp(-2)), rel=1e-5)


@pytest.mark.parametrize("text,words", [
    ("T = linear(1.0, 0.1)", ["needs `steps=`"]),
    ("T = linear(1.0, 0.1, steps=0)", ["`steps=`", "at least 1"]),
    ("T = linear(1.0, 0.1, steps=2.5)", ["`steps=`"]),
    ("T = linear(1.0, 0.1, steps=3, per=epoch)", ["`per=` is iteration or run"]),
    ("T = exponential(1.0, 0, steps=3)", ["above 0"]),
    ("X = const([1,2])\nY[i] = sig(X[i], linear(1.0, 0.1, steps=3))", ["whole right-hand side"]),
    ("T[i] = linear(1.0, 0.1, steps=3)", ["scalar tensor"]),
])
def test_schedule_mistakes_are_reported_by_check(text, words):
    found = [d for d in analyze(text).diagnostics if d.code in ("bad-argument", "argument-count")]
    assert found, [d.message for d in analyze(text).diagnostics]
    for word in words:
        assert any(word in d.message for d in found), (word, [d.message for d in found])


def test_the_annealing_example_reaches_the_closure_through_the_cli(tmp_path):
    path = EXAMPLES / "embedding_annealing.fuse"
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", str(path),
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import json

    reach = np.array(json.loads(done.stdout)["outputs"]["Reach"]["values"])
    # likes.tsv is one cycle through all five people: everyone reaches everyone
    np.testing.assert_allclose(reach, np.ones((5, 5)), atol=1e-3)
