"""What `fuse explain` (text and JSON) and the index hover tell, checked against
what the run computes: fresh programs, each claim compared with the run's
outputs or with an oracle `np.einsum` (LANGUAGE.md §3, §5, §7, §10).

- a left-hand-side index is said to be what it is: a virtual `*t` is the
  recurrence's step and no axis of the tensor; `x/2` pools, combined by the
  equation's operator; an index no term reads broadcasts; `T[i,i]` writes the
  diagonal; the axis a softmax or lnorm works along is named;
- the evaluation order says the fixpoint strategy the run takes (`--fixpoint
  naive` was printed as semi-naive);
- an einsum whose operand is read with fewer axes than its tensor (a constant
  index, a diagonal) says so, and its letters then give the run's answer on
  the operand as read; an einsum over a sparse operand says its counts are the
  dense einsum's;
- the run plan's lines: one Boolean equation is "its one equation" (it was
  "its equations combined"), a param is initialised or given (it was "read"),
  and memory with unknown extents is a lower bound naming what it leaves out.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main
from fuse_lang.ide.hover import hover_at


def explain(tmp_path, capsys, text: str, *flags: str, fmt: str = "json",
            status: int = 0):
    path = tmp_path / "program.fuse"
    path.write_text(text, encoding="utf-8")
    assert main(["explain", "--format", fmt, *flags, str(path)]) == status
    out = capsys.readouterr().out
    return json.loads(out) if fmt == "json" else out


def run(text: str) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in fuse_lang.compile(text).execute().outputs.items()}


def indices(data: dict, tensor: str) -> dict[str, dict]:
    (eq,) = [e for e in data["equations"] if e["tensor"] == tensor]
    return {i["name"]: i for i in eq["indices"]}


def hover(text: str, needle: str) -> str:
    found = hover_at(fuse_lang.analyze(text, None), text.index(needle))
    assert found is not None
    return found.markdown


RNN = """\
M[i,j] = const([[0.5,0],[0,0.5]])
U[i,t] = const([[1,2,3],[4,5,6]])
H[i,*t+1] = tanh(M[i,j] H[j,*t] + U[i,t])
export H
"""


def test_a_virtual_index_is_the_step_not_an_axis(tmp_path, capsys):
    data = explain(tmp_path, capsys, RNN)
    t = indices(data, "H")["t"]
    assert t["role"] == "step" and "only the latest value kept" in t["detail"]
    assert "not an axis of H" in t["detail"]
    (eq,) = [e for e in data["equations"] if e["tensor"] == "H"]
    assert eq["output"] == ["i"]  # H's one axis; t was listed as an output
    shapes = dict((n, s) for n, s in data["shapes"])
    assert run(RNN)["H"].shape == tuple(shapes["H"]) == (2,)  # no axis for t
    assert "the **step** of a recurrence" in hover(RNN, "t+1]")
    text = explain(tmp_path, capsys, RNN, fmt="text")
    assert "step (virtual `*t+1`: iterated, only the latest value kept" in text


LAYERS = """\
Wl[k,j,m] = const([[[1,0],[0,1]],[[1,1],[0,1]],[[2,0],[0,2]]])
L[k,j] = relu(Wl[k,j,m] L[k-1,m] + 1)
export L
"""


def test_the_step_of_an_offset_recurrence_is_named(tmp_path, capsys):
    k = indices(explain(tmp_path, capsys, LAYERS), "L")["k"]
    assert k["role"] == "output"  # L keeps its axis k
    assert k["detail"] == "the recurrence's step: computed in order of `k`, one pass per position"
    got = run(LAYERS)["L"]
    want = np.zeros((3, 2))
    wl = np.array([[[1, 0], [0, 1]], [[1, 1], [0, 1]], [[2, 0], [0, 2]]], dtype=float)
    for step in range(3):  # in order of k: L[-1] reads 0
        previous = want[step - 1] if step else np.zeros(2)
        want[step] = np.maximum(wl[step] @ previous + 1, 0)
    np.testing.assert_allclose(got, want)


POOL = """\
B[x] = const([1, 10, 100, 1000, 5])
Pl[x/2] = B[x]
Pm[x/2] max= B[x]
export Pl, Pm
"""


def test_a_pooled_index_says_how_its_values_combine(tmp_path, capsys):
    data = explain(tmp_path, capsys, POOL)
    assert indices(data, "Pl")["x"]["detail"] == \
        "pooled as `x/2`: the values that share a position combined by sum"
    assert indices(data, "Pm")["x"]["detail"].endswith("combined by max")
    out = run(POOL)
    np.testing.assert_allclose(out["Pl"], [11, 1100, 5])
    np.testing.assert_allclose(out["Pm"], [10, 1000, 5])
    shapes = dict((n, s) for n, s in data["shapes"])
    assert shapes["Pl"] == [3] == list(out["Pl"].shape)
    assert "pooled as `x/2`" in hover(POOL, "x/2] max=")


BROADCAST = """\
axis n = 3
X[i] = const([1, 2])
Y[i,n] = X[i]
C[a,b] = 2
axis a = 2
axis b = 2
M[q,k] = causal_mask(3)
K[i] = const([4, 5])
T[i,i] = X[i]
export Y, C, M, K, T
"""


def test_broadcast_and_diagonal_indices_are_said(tmp_path, capsys):
    data = explain(tmp_path, capsys, BROADCAST)
    broadcast = "broadcast: no term of the right-hand side reads it"
    assert indices(data, "Y")["n"]["detail"] == broadcast
    assert indices(data, "Y")["i"]["detail"] == ""
    assert {i["detail"] for i in indices(data, "C").values()} == {broadcast}
    # a builtin that binds the left-hand side's axes itself broadcasts nothing
    assert {i["detail"] for i in indices(data, "M").values()} == {""}
    assert indices(data, "K")["i"]["detail"] == ""
    assert indices(data, "T")["i"]["detail"] == \
        "on several axes: this equation writes only their diagonal"
    out = run(BROADCAST)
    np.testing.assert_allclose(out["Y"], [[1, 1, 1], [2, 2, 2]])
    np.testing.assert_allclose(out["C"], np.full((2, 2), 2))
    np.testing.assert_allclose(out["T"], np.diag([1, 2]))
    assert "broadcast" in hover(BROADCAST, "n] = X")


NORMALISED = """\
A[i,j] = const([[1,2],[3,5]])
S1[i,j] = softmax(A[i,j])
S2[i.,j] = softmax(A[i,j])
S3[i,j] = softmax(A[i,j], axis=i)
L1[i,j.] = lnorm(A[i,j])
export S1, S2, S3, L1
"""


@pytest.mark.parametrize("tensor,axis,builtin", [
    ("S1", "j", "softmax"), ("S2", "i", "softmax"), ("S3", "i", "softmax"), ("L1", "j", "lnorm")])
def test_the_normalised_axis_is_the_one_the_run_normalises(tmp_path, capsys, tensor, axis,
                                                           builtin):
    data = explain(tmp_path, capsys, NORMALISED)
    said = {n: i["detail"] for n, i in indices(data, tensor).items()}
    assert said[axis] == f"normalised by {builtin} along it"
    assert [n for n, d in said.items() if d] == [axis]
    value = run(NORMALISED)[tensor]
    along = 0 if axis == "i" else 1
    if builtin == "softmax":  # sums to 1 along the axis said
        np.testing.assert_allclose(value.sum(axis=along), 1, rtol=1e-6)
    else:  # zero mean along it
        np.testing.assert_allclose(value.mean(axis=along), 0, atol=1e-6)


CLOSURE = """\
E(A, B)
E(B, C)
E(C, D)
R(x,y) = E(x,y)
R(x,z) = R(x,y) E(y,z)
export R
"""


def test_the_evaluation_order_says_the_fixpoint_strategy_the_run_takes(tmp_path, capsys):
    asked = explain(tmp_path, capsys, CLOSURE, "--fixpoint", "naive")
    assert asked["run"]["groups"][1]["strategy"] == "naive"
    (how,) = [h for name, h in asked["recursion"] if name == "R"]
    assert "naive: every rule every round, as asked" in how and "semi-naive" not in how
    text = explain(tmp_path, capsys, CLOSURE, "--fixpoint", "naive", fmt="text")
    order = text.split("Evaluation order")[1].split("Equations")[0]
    assert "semi-naive" not in order and "(naive: every rule every round, as asked)" in order
    default = explain(tmp_path, capsys, CLOSURE)
    assert default["run"]["groups"][1]["strategy"] == "closure"
    (how,) = [h for name, h in default["recursion"] if name == "R"]
    assert how.endswith("(semi-naive rounds, then one graph search: a linear closure)")


def test_hover_on_a_recursive_tensor_says_the_strategy_a_run_takes(tmp_path, capsys):
    """The editor's hover says what `fuse explain` says for the default run: a
    linear closure's graph search after its rounds, not only "semi-naive"."""
    default = explain(tmp_path, capsys, CLOSURE)
    (how,) = [h for name, h in default["recursion"] if name == "R"]
    analysis = fuse_lang.analyze(CLOSURE, "closure.fuse")
    hover = hover_at(analysis, CLOSURE.index("R("))
    assert hover is not None and hover.markdown.rstrip().endswith(f"{how}.")


def test_a_program_with_errors_says_the_strategy_asked(tmp_path, capsys):
    text = explain(tmp_path, capsys, CLOSURE + "Z[i] = Nope[i]\n", "--fixpoint", "naive",
                   fmt="text", status=1)
    assert "(naive: every rule every round, as asked)" in text
    capsys.readouterr()


SELECTING = """\
A[i,j] = const([[1,2,3],[4,5,6],[7,8,9]])
B[i,j] = const([[1,0,2],[0,1,0],[3,0,1]])
Y[i] = A[i,i] B[i,j]
Z[k] = A[0,j] B[j,k]
V[i,k] = A[i,j] B[j,k]
export Y, Z, V
"""


def test_an_operand_read_with_fewer_axes_is_said_and_its_einsum_gives_the_run(tmp_path,
                                                                           capsys):
    data = explain(tmp_path, capsys, SELECTING)
    out = run(SELECTING)
    a = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=float)
    b = np.array([[1, 0, 2], [0, 1, 0], [3, 0, 1]], dtype=float)
    by_tensor = {e["tensor"]: e["contractions"] for e in data["equations"]}
    (y,) = by_tensor["Y"]
    assert "reads its diagonal before the join" in y["note"]
    np.testing.assert_allclose(np.einsum(y["letters"], np.diagonal(a), b), out["Y"])
    (z,) = by_tensor["Z"]
    assert "a constant index selects before the join" in z["note"]
    np.testing.assert_allclose(np.einsum(z["letters"], a[0], b), out["Z"])
    (v,) = by_tensor["V"]
    assert v["note"] == ""  # each operand as its tensor: the letters apply to them
    np.testing.assert_allclose(np.einsum(v["letters"], a, b), out["V"])


@pytest.mark.parametrize("rhs,lhs", [
    ("A[i,j] A[j,i]", "T"), ("A[i,j] A[j,i]", "U[i]"), ("A[i,k] B[k,j] A[i,j]", "V[i,j]"),
    ("A[i,k] B[k,j]", "O[j,i]"), ("A[i,j] B[j,k] A[k,l] B[l,i]", "Z[i]"),
    ("(A[i,j] B[j,k]) A[k,i]", "P[i]")])
def test_each_einsum_is_the_run_s_answer(tmp_path, capsys, rhs, lhs):
    text = ("A[i,j] = const([[1,2,3],[4,5,6],[7,8,9]])\n"
            "B[i,j] = const([[1,0,2],[0,1,0],[3,0,1]])\n"
            f"{lhs} = {rhs}\nexport {lhs.split('[')[0]}\n")
    data = explain(tmp_path, capsys, text)
    name = lhs.split("[")[0]
    (eq,) = [e for e in data["equations"] if e["tensor"] == name]
    (c,) = eq["contractions"]
    out = run(text)
    values = {"A": np.arange(1, 10, dtype=float).reshape(3, 3),
              "B": np.array([[1, 0, 2], [0, 1, 0], [3, 0, 1]], dtype=float)}
    np.testing.assert_allclose(np.einsum(c["letters"], *[values[o] for o in c["operands"]]),
                               out[name])


def test_a_sparse_operand_s_einsum_says_its_counts_are_dense(tmp_path, capsys):
    lines = "".join(f"{k}\t{(k * 7 + 3) % 400}\n" for k in range(400))
    (tmp_path / "e.tsv").write_text(lines, encoding="utf-8")
    text = 'E(x,y) = "e.tsv"\nTwo(x,z) = E(x,y) E(y,z)\nN[x] = E(x,y)\nexport Two, N\n'
    data = explain(tmp_path, capsys, text)
    assert "Two" in data["run"]["sparse"]
    (c,) = [e for e in data["equations"] if e["tensor"] == "Two"][0]["contractions"]
    assert "an operand is kept sparse" in c["note"] and "not these dense counts" in c["note"]
    (eq,) = [e for e in data["equations"] if e["tensor"] == "N"]
    assert "an operand is kept sparse" in eq["contractions"][0]["note"]  # a reduction of E


FACTS_AND_PARAMS = """\
E(A, B)
E(B, C)
Two(x,z) = E(x,y) E(y,z)
F(x,y) = E(x,y)
F(C, A)
param W[i,j]
X[j] = const([1, 2])
Y[i] = W[i,j] X[j]
export Two, F, Y
"""


def test_the_run_plan_says_how_each_tensor_is_made(tmp_path, capsys):
    text = explain(tmp_path, capsys, FACTS_AND_PARAMS, fmt="text")
    plan = text.split("run plan (numpy):")[1]
    assert "Two: its one equation\n" in plan
    assert "F: its one equation and its fact, combined" in plan
    assert "W: a param: its initial value, or the value a run is given" in plan
    # W's axis i is unknown until a run is given W: the memory is a lower bound
    assert "memory: at least " in plan and "(not counting W, Y, whose extents only the " \
        "run knows)" in plan
    assert "params: ? (? B)" in plan


SIGNS = """\
A[i,j] = const([[1,2],[3,4]])
B[j] = const([1,10])
S = 4
N[i] = -A[i,j] B[j]
M[i] = -(A[i,j] B[j])
D[i] = 2 A[i,j] B[j]
E[i] = A[i,j] B[j] / S
F[i] = -(2 A[i,j]) B[j]
G[i] = A[i,j] B[j]
Y[i] = -(A[i,j] relu(A[j,k] B[k]))
Sub[i] = B[i] - A[i,j] B[j]
export N, M, D, E, F, G, Y, Sub
"""


def test_a_scaled_or_negated_einsum_says_so(tmp_path, capsys):
    data = explain(tmp_path, capsys, SIGNS)
    out = run(SIGNS)
    a, b = np.array([[1, 2], [3, 4]], dtype=float), np.array([1, 10], dtype=float)
    factor = {"N": -1, "M": -1, "D": 2, "E": 1 / 4, "F": -2, "G": 1}
    for eq in data["equations"]:
        if eq["tensor"] not in factor:
            continue
        (c,) = eq["contractions"]
        assert ("then negated" in c["note"]) == (factor[eq["tensor"]] < 0), eq["text"]
        assert ("then scaled" in c["note"]) == (abs(factor[eq["tensor"]]) != 1), eq["text"]
        np.testing.assert_allclose(factor[eq["tensor"]] * np.einsum(c["letters"], a, b),
                                   out[eq["tensor"]], rtol=1e-6)
    (inner, outer) = [e for e in data["equations"] if e["tensor"] == "Y"][0]["contractions"]
    assert inner["note"] == "" and outer["note"] == "then negated"  # the argument's is not
    (sub,) = [e for e in data["equations"] if e["tensor"] == "Sub"][0]["contractions"]
    assert sub["note"] == "then negated"  # a subtracted term
    np.testing.assert_allclose(b - np.einsum(sub["letters"], a, b), out["Sub"])
    np.testing.assert_allclose(-np.einsum(outer["letters"], a,
                                          np.maximum(np.einsum(inner["letters"], a, b), 0)),
                               out["Y"])


def test_a_shifted_write_says_where_it_writes(tmp_path, capsys):
    text = "X[i] = const([1,2,3,4])\nY[i+1] = X[i]\nexport Y\n"
    i = indices(explain(tmp_path, capsys, text), "Y")["i"]
    assert i["detail"] == "written at `i+1`: shifted, a write outside the axis dropped"
    np.testing.assert_allclose(run(text)["Y"], [0, 1, 2, 3])  # X[3] fell outside


def test_a_program_that_cannot_run_has_a_null_run(tmp_path, capsys):
    data = explain(tmp_path, capsys, "X[i] = const([1,2])\nY[i] = X[i] + Nope[i]\n",
                   status=1)
    assert "run" in data and data["run"] is None
    assert data["shapes"] == [["X", [2]], ["Y", [2]]]
    missing = explain(tmp_path, capsys, 'W[i,j] = "nowhere.npy"\nY[i] = W[i,j]\n', status=1)
    assert missing["run"] is None
    capsys.readouterr()


LOCALS = """\
X[i] = const([1,2])
{ let h[i] = 2 X[i]; Y[i] = h[i] }
export Y
"""


def test_a_block_local_is_shown_by_its_own_name(tmp_path, capsys):
    """Explain's tables and evaluation order (text, and the editor's markdown) name
    a block's `let` as written, marked local; the lowering's `h@let.1` stays inside."""
    from fuse_lang.plan import plan_program
    from fuse_lang.plan.render import render_plan_markdown

    text = explain(tmp_path, capsys, LOCALS, fmt="text")
    markdown = render_plan_markdown(plan_program(fuse_lang.analyze(LOCALS, None)))
    assert "@let." not in text and "@let." not in markdown
    assert "  2. h (local)" in text.split("Evaluation order")[1]
    assert "  2. h (local): its one equation" in text.split("run plan")[1]
    assert "| `h` (local) | `(2,)` |" in markdown
