"""Recurrences over layers (issue 34, item 3): a block iterated over stacked
weights `W[l,...]`, over a virtual or an offset layer index, with a start from a
tensor or a file; `fuse check` accepts what `fuse run` runs, `fuse explain` and
`fuse run --trace` say the same strategy (in order, one pass per layer), and
`fuse export` unrolls it.  Each result is compared with the same computation
written in NumPy here (docs/language.md, "Recurrences over layers and time").

A conformance module (tests/conftest.py): every program run here on NumPy runs
again on torch and jax and must agree.
"""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang import Severity, analyze
from fuse_lang.cli import main

TOL = dict(rtol=1e-5, atol=1e-5)
LAYERS, BATCH, WIDTH = 3, 2, 4


def relu(x):
    return np.maximum(x, 0)


def sig(x):
    return 1 / (1 + np.exp(-x))


@pytest.fixture
def weights(tmp_path):
    """Stacked weights W[l,d,e], biases B[l,d] and a start X0[b,d], as files and arrays."""
    rng = np.random.default_rng(34)
    arrays = {"W": rng.normal(size=(LAYERS, WIDTH, WIDTH)) / 2,
              "B": rng.normal(size=(LAYERS, WIDTH)),
              "X0": rng.normal(size=(BATCH, WIDTH)),
              "S": rng.normal(size=WIDTH)}
    for name, value in arrays.items():
        np.save(tmp_path / f"{name.lower()}.npy", value.astype(np.float32))
    return {n: v.astype(np.float32).astype(np.float64) for n, v in arrays.items()}


SOURCES = 'W[l,d,e] = "w.npy"\nB[l,d] = "b.npy"\nX0[b,d] = "x0.npy"\n'


def run(tmp_path, text, **keywords):
    return fuse_lang.compile(text, backend="numpy", base_dir=tmp_path, **keywords).run()


def mlp(w):
    """The 3-layer MLP by hand: x <- relu(W[l] x + B[l]) for each layer l."""
    x = w["X0"]
    for layer in range(LAYERS):
        x = relu(x @ w["W"][layer].T + w["B"][layer])
    return x


def errors(text, tmp_path):
    return [d for d in analyze(text, base_dir=tmp_path).diagnostics
            if d.severity is Severity.ERROR]


# ----------------------------------------------------------- a virtual layer index

def test_mlp_over_a_virtual_layer_index_starts_from_a_tensor(tmp_path, weights):
    text = SOURCES + ("X[b,d,*l] = X0[b,d]\n"
                      "X[b,d,*l+1] = relu(W[l,d,e] X[b,e,*l] + B[l,d])\nexport X\n")
    assert errors(text, tmp_path) == []
    out = run(tmp_path, text)["X"]
    assert out.shape == (BATCH, WIDTH)  # the last layer, without the virtual axis
    np.testing.assert_allclose(out, mlp(weights), **TOL)


def test_the_start_is_given_once_not_added_at_every_step(tmp_path):
    # `X[i,*t] = X0[i]` is the start: 2 steps of x <- x + 1 from [10, 20, 30]
    text = "axis t = 2\nX0 = const([10, 20, 30])\nX[i,*t] = X0[i]\nX[i,*t+1] = X[i,*t] + 1\n" \
           "export X\n"
    np.testing.assert_allclose(run(tmp_path, text)["X"], [12, 22, 32])
    doubled = text.replace("X[i,*t] + 1", "2 X[i,*t]")
    np.testing.assert_allclose(run(tmp_path, doubled)["X"], [40, 80, 120])


def test_the_start_from_a_file_on_the_state_itself(tmp_path, weights):
    text = ('W[l,d,e] = "w.npy"\nB[l,d] = "b.npy"\nX[b,d,*l] = "x0.npy"\n'
            "X[b,d,*l+1] = relu(W[l,d,e] X[b,e,*l] + B[l,d])\nexport X\n")
    assert errors(text, tmp_path) == []
    np.testing.assert_allclose(run(tmp_path, text)["X"], mlp(weights), **TOL)
    # an input given at run time replaces the file, as for any source
    start = np.ones((BATCH, WIDTH), dtype=np.float32)
    out = fuse_lang.compile(text, backend="numpy", base_dir=tmp_path).run({"X": start})["X"]
    np.testing.assert_allclose(out, mlp({**weights, "X0": start.astype(np.float64)}), **TOL)


def test_a_start_file_with_the_virtual_axis_in_it_is_an_arity_error(tmp_path):
    np.save(tmp_path / "x2.npy", np.zeros((3, 4), dtype=np.float32))
    text = 'axis t = 2\nX[i,*t] = "x2.npy"\nX[i,*t+1] = X[i,*t] + 1\nexport X\n'
    (found,) = errors(text, tmp_path)
    assert found.code == "arity-mismatch" and "virtual axis is iterated" in found.message


def test_a_block_with_intermediate_tensors_per_layer(tmp_path, weights):
    text = SOURCES + ("X[b,d,*l] = X0[b,d]\n"
                      "A[b,d,*l] = W[l,d,e] X[b,e,*l]\n"
                      "H[b,d,*l] = relu(A[b,d,*l] + B[l,d])\n"
                      "X[b,d,*l+1] = H[b,d,*l] + X[b,d,*l]\n"
                      "export X, H\n")
    assert errors(text, tmp_path) == []
    out = run(tmp_path, text)
    x, h = weights["X0"], None
    for layer in range(LAYERS):
        h = relu(x @ weights["W"][layer].T + weights["B"][layer])
        x = h + x
    np.testing.assert_allclose(out["X"], x, **TOL)
    np.testing.assert_allclose(out["H"], h, **TOL)  # an intermediate: its last step's value


def test_two_states_step_together(tmp_path, weights):
    # C and H both carried: each next value reads the current ones (an LSTM's shape)
    text = ('W[l,d,e] = "w.npy"\nS[d] = "s.npy"\n'
            "C[d,*l] = S[d]\n"
            "C[d,*l+1] = C[d,*l] + tanh(W[l,d,e] H[e,*l])\n"
            "H[d,*l+1] = tanh(C[d,*l])\nexport C, H\n")
    assert errors(text, tmp_path) == []
    out = run(tmp_path, text)
    c, h = weights["S"], np.zeros(WIDTH)
    for layer in range(LAYERS):
        c, h = c + np.tanh(weights["W"][layer] @ h), np.tanh(c)
    np.testing.assert_allclose(out["C"], c, **TOL)
    np.testing.assert_allclose(out["H"], h, **TOL)


def test_a_state_reading_another_state_steps_with_it(tmp_path, weights):
    # B reads A but A does not read B: two groups by their dependencies, yet B must
    # read A's value at each step, not A's last value at every step
    expected_a, expected_b = weights["S"], np.zeros(WIDTH)
    for layer in range(LAYERS):
        expected_a, expected_b = (np.tanh(weights["W"][layer] @ expected_a),
                                  expected_b + 2 * expected_a)
    direct = ('W[l,d,e] = "w.npy"\nS[d] = "s.npy"\nA[d,*l] = S[d]\n'
              "A[d,*l+1] = tanh(W[l,d,e] A[e,*l])\nB[d,*l+1] = B[d,*l] + 2 A[d,*l]\n"
              "export A, B\n")
    # the same through a tensor computed at each step (`P`, written at `*l`)
    through = direct.replace("B[d,*l+1] = B[d,*l] + 2 A[d,*l]",
                             "P[d,*l] = 2 A[d,*l]\nB[d,*l+1] = B[d,*l] + P[d,*l]")
    for text in (direct, through):
        assert errors(text, tmp_path) == []
        out = run(tmp_path, text)
        np.testing.assert_allclose(out["A"], expected_a, **TOL)
        np.testing.assert_allclose(out["B"], expected_b, **TOL)
    (said,) = [d.message for d in analyze(direct, base_dir=tmp_path).diagnostics
               if d.code == "recursion"]
    assert said.startswith("`A`, `B` step together: a recurrence over the virtual index `l`")
    assert "the states `A`, `B` carried" in said


@pytest.mark.parametrize("read", ["A[d,*l+1]", "A[d,*l-1]"])
def test_a_read_at_another_step_of_a_virtual_index_is_an_error(tmp_path, weights, read):
    # only the current value is kept: such a read gave the current value silently
    text = ('W[l,d,e] = "w.npy"\nS[d] = "s.npy"\nA[d,*l] = S[d]\n'
            f"A[d,*l+1] = tanh(W[l,d,e] A[e,*l])\nB[d,*l+1] = B[d,*l] + 2 {read}\n"
            "export A, B\n")
    (diag,) = [d for d in analyze(text, base_dir=tmp_path).diagnostics
               if d.severity == Severity.ERROR]
    assert diag.code == "virtual-index"
    assert text[diag.span.start:diag.span.end] == read[4:-1]
    assert f"`A` is read `*l`, not `{read[4:-1]}`" in diag.message
    (edit,) = diag.fixes[0].edits
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert "B[d,*l] + 2 A[d,*l]\n" in fixed and errors(fixed, tmp_path) == []


# ------------------------------------------------------------ an offset layer index

def test_mlp_over_an_offset_layer_index_adds_the_start_at_position_0(tmp_path, weights):
    # the equations of Z add (LANGUAGE.md §6): at position 0 the layer equation reads
    # Z[-1], 0, and adds sig(B[0]) to the start S; the layers 1.. read the one before
    text = ('W[l,d,e] = "w.npy"\nB[l,d] = "b.npy"\nS[d] = "s.npy"\n'
            "Z[0,d] = S[d]\nZ[l,d] = sig(W[l,d,e] Z[l-1,e] + B[l,d])\nexport Z\n")
    assert errors(text, tmp_path) == []
    expected = np.zeros((LAYERS, WIDTH))
    expected[0] = weights["S"] + sig(weights["B"][0])
    for layer in range(1, LAYERS):
        expected[layer] = sig(weights["W"][layer] @ expected[layer - 1] + weights["B"][layer])
    np.testing.assert_allclose(run(tmp_path, text)["Z"], expected, **TOL)


def test_an_offset_block_with_an_intermediate_runs_in_order(tmp_path, weights):
    text = ('W[l,d,e] = "w.npy"\nB[l,d] = "b.npy"\nS[d] = "s.npy"\n'
            "Z[0,d] = S[d]\nH[l,d] = W[l,d,e] Z[l-1,e]\nZ[l,d] = relu(H[l,d] + B[l,d])\n"
            "export Z\n")
    assert errors(text, tmp_path) == []
    result = fuse_lang.compile(text, backend="numpy", base_dir=tmp_path).execute()
    expected = np.zeros((LAYERS, WIDTH))
    expected[0] = weights["S"] + relu(weights["B"][0])  # the equations add (§6)
    for layer in range(1, LAYERS):
        expected[layer] = relu(weights["W"][layer] @ expected[layer - 1] + weights["B"][layer])
    np.testing.assert_allclose(result.outputs["Z"], expected, **TOL)
    assert result.rounds == {}  # no fixpoint ran


def test_facts_at_a_position_are_kept_and_stepped_from(tmp_path):
    # a Boolean recurrence over a time index: the fact `Reach(0, A)` is position 0's
    # (it was overwritten by the rule's empty row there before), each step walks an edge
    text = ("Edge(A,B)\nEdge(B,C)\nEdge(C,D)\nStep(0)\nStep(1)\nStep(2)\nStep(3)\n"
            "Reach(0, A)\nReach(t, y) = Reach(t-1, x) Edge(x, y) Step(t)\nexport Reach\n")
    assert errors(text, tmp_path) == []
    program = fuse_lang.compile(text, backend="numpy", base_dir=tmp_path)
    reach = np.asarray(program.run()["Reach"])
    np.testing.assert_array_equal(reach, np.eye(4))  # step t reaches the t-th node


# ------------------------------------------- check, explain, trace and export agree

VIRTUAL_BLOCK = SOURCES + ("X[b,d,*l] = X0[b,d]\nA[b,d,*l] = W[l,d,e] X[b,e,*l]\n"
                           "X[b,d,*l+1] = relu(A[b,d,*l] + B[l,d])\nexport X\n")
OFFSET_BLOCK = ('W[l,d,e] = "w.npy"\nS[d] = "s.npy"\nZ[0,d] = S[d]\n'
                "H[l,d] = W[l,d,e] Z[l-1,e]\nZ[l,d] = relu(H[l,d])\nexport Z\n")


@pytest.mark.parametrize("text,index,order", [(VIRTUAL_BLOCK, "l", ["A", "X"]),
                                              (OFFSET_BLOCK, "l", ["H", "Z"])],
                         ids=["virtual", "offset"])
def test_check_explain_and_trace_say_one_strategy(tmp_path, weights, capsys, text, index,
                                                  order):
    path = tmp_path / "block.fuse"
    path.write_text(text)
    assert main(["check", str(path)]) == 0
    checked = capsys.readouterr().out
    assert "a recurrence over " in checked and f"`{index}`" in checked
    assert "fixpoint" not in checked and "tolerance" not in checked
    assert main(["explain", str(path)]) == 0
    explained = capsys.readouterr().out
    assert ", then ".join(f"`{n}`" for n in order) in explained
    assert "to a fixpoint" not in explained
    assert main(["explain", "--fixpoint", "naive", str(path)]) == 0
    assert "fixpoint of" not in capsys.readouterr().out  # no fixpoint to choose a strategy for
    assert main(["explain", "--format", "json", str(path)]) == 0
    (group,) = [g for g in json.loads(capsys.readouterr().out)["run"]["groups"]
                if g["how"] == "recurrence"]
    assert group["index"] == index and group["order"] == order
    assert main(["run", "--trace", "--format", "json", str(path)]) == 0
    trace = json.loads(capsys.readouterr().out)["trace"]
    assert trace["fixpoints"] == []  # no fixpoint rounds
    (recurrence,) = trace["recurrences"]
    assert recurrence["order"] == order and len(recurrence["steps"]) == LAYERS
    assert main(["run", "--trace", str(path)]) == 0
    assert f"in order, {LAYERS} steps, one pass each" in capsys.readouterr().out


@pytest.mark.parametrize("framework", ["torch", "jax"])
@pytest.mark.parametrize("text", [VIRTUAL_BLOCK, OFFSET_BLOCK], ids=["virtual", "offset"])
def test_a_layer_recurrence_exports_as_one_graph(tmp_path, weights, framework, text):
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    program = fuse_lang.compile(text, backend="numpy", base_dir=tmp_path)
    expected = program.run()
    exported = program.export(framework)
    for name, value in exported.run().items():
        np.testing.assert_allclose(value, expected[name], rtol=2e-4, atol=2e-5)
    # new weights through the same graph: the steps are in it, not fixed at export
    shifted = {"W": (weights["W"] * 0.5).astype(np.float32)}
    again = fuse_lang.compile(text, backend="numpy", base_dir=tmp_path).run(shifted)
    for name, value in exported.run(shifted).items():
        np.testing.assert_allclose(value, again[name], rtol=2e-4, atol=2e-5)


def test_fuse_export_writes_an_offset_recurrence(tmp_path, weights, capsys):
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    path = tmp_path / "block.fuse"
    path.write_text(OFFSET_BLOCK)
    out = tmp_path / "block.mlir"
    assert main(["export", str(path), "--format", "stablehlo", "--out", str(out)]) == 0
    assert "outputs Z" in capsys.readouterr().out and "stablehlo." in out.read_text()


# ----------------------------------------- what check refuses, run refuses: a diagnostic

def test_a_start_that_reads_the_step_is_refused_with_a_fix(tmp_path, capsys):
    text = "axis t = 3, i = 2\nX[i,*t] = X[i,*t] + t\nX[i,*t+1] = X[i,*t] + 1\nexport X\n"
    (found,) = errors(text, tmp_path)
    assert found.code == "virtual-step"
    (edit,) = found.fixes[0].edits
    assert text[edit.span.start:edit.span.end] == "*t" and edit.new_text == "*t+1"
    path = tmp_path / "start.fuse"
    path.write_text(text)
    assert main(["run", str(path)]) != 0
    assert "virtual-step" in capsys.readouterr().err
    fixed = text[:edit.span.start] + edit.new_text + text[edit.span.end:]
    assert errors(fixed, tmp_path) == []
    x = np.zeros(2)
    for t in range(3):  # both equations step: x <- (x + t) + (x + 1)
        x = (x + t) + (x + 1)
    np.testing.assert_allclose(run(tmp_path, fixed)["X"], x)


def test_a_tensor_outside_the_recurrence_cannot_read_the_step(tmp_path, weights):
    text = SOURCES + ("X[b,d,*l] = X0[b,d]\nA[d,e,*l] = W[l,d,e]\n"
                      "X[b,d,*l+1] = relu(A[d,e,*l] X[b,e,*l])\nexport X\n")
    (found,) = errors(text, tmp_path)
    assert found.code == "virtual-step" and "`A` is no part of a recurrence" in found.message
    with pytest.raises(fuse_lang.FuseError, match="virtual-step|no part of a recurrence"):
        fuse_lang.compile(text, backend="numpy", base_dir=tmp_path)


def test_a_virtual_index_at_a_constant_says_how_to_write_the_start(tmp_path):
    (found,) = errors("X0 = const([1,2])\nX[i,*0] = X0[i]\n", tmp_path)
    assert found.code == "invalid-index" and "`X[i,*t] = X0[i]`" in found.message


def test_what_check_accepts_runs(tmp_path, weights):
    programs = [
        VIRTUAL_BLOCK, OFFSET_BLOCK,
        'W[l,d,e] = "w.npy"\nB[l,d] = "b.npy"\n'
        "X[d,*l+1] = relu(W[l,d,e] X[e,*l] + B[l,d])\nexport X\n",  # from zeros
        'W[l,d,e] = "w.npy"\nZ[l,d] = relu(W[l,d,e] Z[l-1,e])\nexport Z\n',
        SOURCES + "X[b,d,*l] = X0[b,d]\nX[b,d,*l+1] = relu(W[l,d,e] X[b,e,*l])\n"
                  "Y[b] = X[b,d,*l]\nexport Y\n",
    ]
    for text in programs:
        assert errors(text, tmp_path) == [], text
        assert all(np.isfinite(v).all() for v in run(tmp_path, text).values())
