"""LANGUAGE.md §5-7 on every backend against hand-written NumPy: projection of
indices in every position, several equations for one tensor, and recursion
(mutual, numeric to a tolerance, max=/min= paths with unreachable nodes,
negation of a lower stratum, offsets, groups of several shapes), with the naive
and semi-naive strategies and demand mode giving forward mode's answers, and a
divergence always reported, never returned."""
from __future__ import annotations

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig
from fuse_lang.cli.main import main as cli_main

EAGER = [("numpy", None), ("torch", False), ("jax", False)]
# the reference, eager and compiled torch, eager and jitted jax
RUNS = EAGER + [("torch", True), ("jax", True)]


def _lit(x) -> str:
    return "const(" + str(np.asarray(x, dtype=float).tolist()).replace("inf", "1e999") + ")"


def _run(text: str, backend: str = "numpy", compiled: bool | None = None, **kw) -> dict:
    if compiled is not None:
        kw["compiled"] = compiled
    out = fuse_lang.compile(text, backend=backend, **kw).run()
    return {k: np.asarray(v, dtype=float) for k, v in dict(out).items()}


def _same(got: dict, want: dict, atol: float = 1e-5) -> None:
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, atol=atol, rtol=1e-5, err_msg=name)


def relu(x):
    return np.maximum(x, 0)


A = np.array([[1.0, 2, -3], [0.5, -1, 2]])
B = np.array([[1.0, 0, 2, 1], [-1, 3, 0.5, 2], [2, -2, 1, 0]])
C = np.array([[0.5, 1], [2, -1], [1, 1], [0, 3]])
D = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, -9]])
V = np.array([1.0, -2, 3])
DATA = f"A[i,j] = {_lit(A)}\nB[j,k] = {_lit(B)}\nC[k,l] = {_lit(C)}\nD[i,j] = {_lit(D)}\nV[j] = {_lit(V)}\n"

PROJECTION = DATA + """
Chain[i,l] = A[i,j] B[j,k] C[k,l]
In[i] = relu(A[i,j] V[j])
Out[i] = relu(A[i,j]) V[j]
Lone[i,l] = A[i,j] B[j,k] C[m,l]
Trace = D[i,i]
Diag[i] = D[i,i]
DiagJoin[j] = D[i,i] D[i,j]
Total = A[i,j] B[j,k] C[k,l]
Inner = relu(A[i,j]) + V[j]
Nested[l] = relu(C[k,l] relu(B[j,k] relu(A[i,j])))
Square[i] = (A[i,j] V[j])^2
Power[i] = pow(A[i,j] V[j], 2)
Big max= A[i,j] B[j,k] C[k,l]
Both[i] = max(A[i,j], V[j])
"""


@pytest.mark.parametrize("backend,compiled", EAGER)
def test_projection_in_every_position(backend, compiled):
    got = _run(PROJECTION, backend, compiled)
    _same(got, {
        "Chain": A @ B @ C,
        "In": relu(A @ V), "Out": relu(A) @ V,          # j inside the call, or outside it
        "Lone": (A @ B).sum(1)[:, None] * C.sum(0)[None, :],  # m summed in its factor alone
        "Trace": np.trace(D), "Diag": np.diag(D), "DiagJoin": np.einsum("ii,ij->j", D, D),
        "Total": (A @ B @ C).sum(),                      # a scalar left-hand side
        # i only inside relu's argument: summed there; j then summed per term
        "Inner": relu(A.sum(0)).sum() + V.sum(),
        "Nested": relu(C.T @ relu(B.T @ relu(A.sum(0)))),
        # parentheses are no scope: j summed outside the power; a call's argument is one
        "Square": ((A * V) ** 2).sum(1), "Power": (A @ V) ** 2,
        "Big": np.einsum("ij,jk,kl->ijkl", A, B, C).max(),  # max= over every index
        "Both": np.maximum(A, V).sum(1),                 # j in two arguments: summed outside
    })


SEVERAL = DATA + """
Y[i] = relu(A[i,j] V[j])
Y[i] += sig(A[i,j])
Y[i] = exp(0 - A[i,j] V[j])
M[j] max= A[i,j]
M[j] max= 0.5 * V[j]
M[j] max= relu(A[i,j] * 3) - 10
N[j] min= A[i,j]
N[j] min= V[j] - 5
E(P,Q)
E(Q,R)
F(Q,P)
Or(x,y) = E(x,y)
Or(x,y) = F(x,y)
Or(P,P)
Or(P,Q)
"""


@pytest.mark.parametrize("backend,compiled", EAGER)
def test_several_equations_each_with_its_own_nonlinearity(backend, compiled):
    got = _run(SEVERAL + "export Y, M, N, Or", backend, compiled)
    sig = 1 / (1 + np.exp(-A.sum(1)))
    # the first column's symbols are P, Q, the second's Q, R, P (numbered per domain);
    # the fact Or(P,Q) repeats E's tuple and counts once
    union = np.zeros((2, 3))
    for a, b in [(0, 0), (1, 1), (1, 2), (0, 2)]:
        union[a, b] = 1
    _same(got, {"Y": relu(A @ V) + sig + np.exp(-(A @ V)),
                "M": np.maximum(np.maximum(A.max(0), 0.5 * V), relu(A * 3).max(0) - 10),
                "N": np.minimum(A.min(0), V - 5), "Or": union})


@pytest.mark.parametrize("second, first_op, op", [
    ("Y[i] max= V[i]", "=", "max="), ("Y[i] += V[i]", "min=", "+="), ("Y(i) = V[i]", "avg=", "=")])
def test_mixing_projection_operators_is_an_error_at_the_second_operator(second, first_op, op):
    first = {"=": "Y[i] = V[i]", "min=": "Y[i] min= V[i]", "avg=": "Y[i] avg= V[i]"}[first_op]
    text = f"V[i] = const([1,2])\n{first}\n{second}\n"
    found = [d for d in fuse_lang.analyze(text).diagnostics if d.code == "mixed-projection"]
    assert len(found) == 1
    start = text.index(second) + second.index(op)
    assert tuple(found[0].span) == (start, start + len(op))
    assert f"with `{first_op}` (first equation) but this one uses `{op}`" in found[0].message


NUMERIC = """
W[i,j] = const([[0.2,0.1],[0.0,0.3]])
Bias[i] = const([0.5,-0.3])
X[i] = W[i,j] Z[j] + 1
Y[i] = 0.5 * X[i]
Z[i] = Y[i] + 0.25 * X[i]
T[i] = tanh(W[i,j] T[j] + Bias[i])
M[i,j] = const([[0.1,0.2,0],[0,0.1,0.3],[0.2,0,0.1]])
P[k] = M[k,m] P[m] + 0.1 * Q + 1
Q = 0.2 * P[k]
S[i] = "s.npy"
S[i] += 0.5 * S[i]
G[x,y] = const([[1e999,2,10,1e999],[1e999,1e999,3,1e999],[1e999,1e999,1e999,1e999],[1e999,1e999,1e999,1e999]])
Dist[y] min= G[0,y]
Dist[y] min= H[x] + G[x,y] - 1
H[x] min= Dist[x] + 1
export X, Y, Z, T, P, Q, S, Dist, H
"""


def _numeric_oracle() -> dict:
    W = np.array([[0.2, 0.1], [0.0, 0.3]])
    x = np.linalg.solve(np.eye(2) - 0.75 * W, np.ones(2))
    t = np.zeros(2)
    for _ in range(200):
        t = np.tanh(W @ t + np.array([0.5, -0.3]))
    M = np.array([[0.1, 0.2, 0], [0, 0.1, 0.3], [0.2, 0, 0.1]])
    p, q = np.zeros(3), 0.0
    for _ in range(200):
        p, q = M @ p + 0.1 * q + 1, 0.2 * p.sum()
    dist = np.array([np.inf, 2, 5, np.inf])  # node 3 unreachable, node 0 has no way back
    return {"X": x, "Y": 0.5 * x, "Z": 0.75 * x, "T": t, "P": p, "Q": q,
            "S": [2.0, 4.0, 6.0], "Dist": dist, "H": dist + 1}


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_numeric_recursion_converges_to_the_solution(tmp_path, backend, compiled):
    # three tensors in one circle, through tanh, members of two shapes, a source as
    # the start (compiled torch read the state where it read the source), min= paths
    np.save(tmp_path / "s.npy", np.array([1.0, 2, 3], dtype=np.float32))
    got = _run(NUMERIC, backend, compiled, base_dir=tmp_path)
    _same(got, _numeric_oracle(), atol=1e-4)


@pytest.mark.parametrize("backend,compiled", EAGER)
def test_numeric_recursion_naive_is_the_default_strategy(tmp_path, backend, compiled):
    np.save(tmp_path / "s.npy", np.array([1.0, 2, 3], dtype=np.float32))
    got = _run(NUMERIC, backend, compiled, base_dir=tmp_path,
               config=ExecutionConfig(fixpoint="naive"))
    _same(got, _numeric_oracle(), atol=1e-4)


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_an_overflowing_max_or_min_recursion_is_an_error_not_infinity(backend, compiled):
    for text in ("D max= 2 * D + 1\nD max= 0\nexport D", "D min= 2 * D - 1\nD min= 0\nexport D"):
        with pytest.raises(fuse_lang.FuseError) as caught:
            _run(text, backend, compiled)
        assert ("D did not converge: after 129 iterations the values are no longer finite"
                in str(caught.value))


def test_a_max_recursion_that_stays_finite_and_an_unreachable_cell_are_answers():
    got = _run("D max= 0.5 * D + 1\nD max= 0\naxis x = 3\nU[x] min= U[x] + 1\n"
               "F max= -0.5 * F + 1\nF max= 0\nexport D, U, F")
    np.testing.assert_allclose(got["D"], 2.0, atol=1e-5)
    assert np.all(got["U"] == np.inf)  # nothing derives U: it stays at its start
    # F's start, -inf, times -0.5 is +inf: a cell leaving its start, not an overflow
    np.testing.assert_allclose(got["F"], 2 / 3, atol=1e-5)


def test_a_max_product_recursion_starts_from_zero_and_equals_its_log_space_form():
    # a `max=` member multiplied by another tensor starts from 0 (LANGUAGE.md §7):
    # from -inf, -inf * 0 was NaN and the run stopped (docs/language.md, "Recursion")
    weights = "W[x,y] = const([[0,0.5,0.2],[0,0,0.9],[0,0,0]])\n"
    direct = _run(weights + "P[y] max= P[x] * W[x,y]\nP[y] max= const([1,0,0])\nexport P")
    np.testing.assert_allclose(direct["P"], [1, 0.5, 0.45], atol=1e-6)
    got = _run(weights + "LW[x,y] = log(W[x,y])\nL[y] max= L[x] + LW[x,y]\n"
               "L[y] max= log(const([1,0,0]))\nP[y] = exp(L[y])\nexport P")
    np.testing.assert_allclose(got["P"], [1, 0.5, 0.45], atol=1e-6)


def test_value_iteration_converges_from_zero_on_every_backend():
    """`V[s] max= Q[s,a]` with `Q = R + 0.9 P V`: the classic, as hand-written NumPy
    from V = 0; from -inf every round was NaN (P's zeros times -inf)."""
    program = ("P[s,a,s'] = const([[[0.9,0.1],[0.2,0.8]],[[0.5,0.5],[0,1]]])\n"
               "R[s,a] = const([[1,0],[0,2]])\nQ[s,a] = R[s,a] + 0.9 P[s,a,s'] V[s']\n"
               "V[s] max= Q[s,a]\nexport V\n")
    p = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0, 1]]])
    v = np.zeros(2)
    for _ in range(500):
        v = (np.array([[1, 0], [0, 2]]) + 0.9 * np.einsum("sat,t->sa", p, v)).max(1)
    how = dict(fuse_lang.analyze(program, None).recursion)["V"]
    assert "V from 0: multiplied by another tensor" in how
    for backend, compiled in RUNS:
        np.testing.assert_allclose(_run(program, backend, compiled)["V"], v, rtol=1e-4)
    # the textbook Bellman form: the member inside a bracketed sum that P multiplies
    bellman = program.replace("Q[s,a] = R[s,a] + 0.9 P[s,a,s'] V[s']",
                              "Q[s,a] = P[s,a,s'] (R[s,a] + 0.9 V[s'])")
    np.testing.assert_allclose(_run(bellman)["V"], v, rtol=1e-4)


def test_a_sum_member_reading_an_unreachable_cell_is_reported_with_its_cause():
    # NUMERIC's `H[x] min= Dist[x] + 1` as a sum: H holds Dist's +inf start
    paths = NUMERIC[NUMERIC.index("G[x,y]"):NUMERIC.index("export")]
    assert "H[x] min= Dist[x] + 1" in paths
    with pytest.raises(fuse_lang.FuseError) as caught:
        _run(paths.replace("H[x] min=", "H[x] =") + "export Dist")
    assert "Dist, H did not converge: after 1 iteration the values are no longer finite; check " \
        "the recursion (Dist starts from inf for `min=`, nothing derived yet" in str(caught.value)


def test_longest_paths_with_max_and_unreachable_nodes():
    w = np.full((5, 5), -np.inf)
    for (a, b), v in {(0, 1): 1, (0, 2): 3, (1, 2): 1, (1, 3): 5, (2, 3): 1, (4, 0): 1}.items():
        w[a, b] = v
    got = _run(f"W[x,y] = {_lit(w)}\nD[y] max= W[0,y]\n"
               f"D[y] max= D[x] + W[x,y]\nexport D")
    np.testing.assert_array_equal(got["D"], [-np.inf, 1, 3, 6, -np.inf])


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_a_diverging_recursion_names_the_tensor_at_the_round_limit(backend, compiled):
    with pytest.raises(fuse_lang.FuseError) as caught:
        _run("axis i = 3\nX[i] = 1 - X[i]\nY[i] = X[i] + 1\nexport Y", backend, compiled,
             max_iterations=5)
    assert ("line 2: `X[i] = 1 - X[i]`: X did not converge in 5 iterations (the last change "
            "was 1); raise the limit") in str(caught.value)


def test_the_max_iterations_flag_sets_the_limit(tmp_path, capsys):
    (tmp_path / "p.fuse").write_text("X = 0.9 * X + 1\nexport X\n")
    assert cli_main(["run", "--max-iterations", "10", str(tmp_path / "p.fuse")]) == 1
    assert "X did not converge in 10 iterations (the last change was 0.387)" in \
        capsys.readouterr().err
    assert cli_main(["run", "--fixpoint", "naive", "--max-iterations", "300",
                     str(tmp_path / "p.fuse")]) == 0
    assert "[10]" in capsys.readouterr().out


DATALOG = """
E(A,B)
E(B,C)
E(C,D)
E(D,A)
E(F,G)
E(G,F)
N(x) = E(x,y)
N(y) = E(x,y)
P(x,y) = E(x,y)
P(x,z) = R(x,y) E(y,z)
Q(x,z) = P(x,y) E(y,z)
R(x,z) = Q(x,y) E(y,z)
T(x,y) = E(x,y)
T(x,z) = T(x,y) E(y,z)
Reach(A)
Reach(y) = Reach(x) E(x,y)
Away(x,y) = N(x) E(x,y) not Reach(y)
Away(x,z) = Away(x,y) E(y,z) not Reach(z)
Not(x,y) = N(x) N(y) not T(x,y)
R(A,x)?
Q(x,A)?
P(B,C)?
Away(F,x)?
Not(x,G)?
T(G,x)?
export P, Q, R, Away, Not
"""


def _datalog_oracle() -> dict:
    names = "A B C D F G".split()
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 4)]
    step = np.zeros((6, 6))
    for a, b in edges:
        step[a, b] = 1
    length = {1: step}  # paths of each length, over the 4-cycle and the 2-cycle
    for k in range(2, 13):
        length[k] = np.minimum(1, length[k - 1] @ step)
    by_rest = {r: np.minimum(1, sum(length[k] for k in length if k % 3 == r)) for r in range(3)}
    closure = np.minimum(1, sum(length.values()))
    away = np.zeros((6, 6))
    away[4:, 4:] = 1  # F and G reach each other, and Reach holds only A..D
    assert names[4:] == ["F", "G"]
    return {"P": by_rest[1], "Q": by_rest[2], "R": by_rest[0], "Away": away,
            "Not": 1 - closure}


def _answers(text: str, backend: str, compiled, **kw) -> list:
    if compiled is not None:
        kw["compiled"] = compiled
    result = fuse_lang.compile(text, backend=backend, **kw).execute()
    return [(q.text, np.asarray(q.value, dtype=float).tolist(), q.tuples) for q in result.queries]


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_boolean_recursion_mutual_and_over_a_negated_lower_stratum(backend, compiled):
    got = _run(DATALOG, backend, compiled)
    _same(got, _datalog_oracle())


@pytest.mark.parametrize("backend,compiled", EAGER)
def test_naive_semi_naive_and_demand_give_the_same_answers(backend, compiled):
    reference = _answers(DATALOG, "numpy", None)
    assert reference[0] == ("R(A,x)?", [1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
                            [("A",), ("B",), ("C",), ("D",)])
    assert reference[3][2] == [("F",), ("G",)] and reference[4][2] == [("A",), ("B",), ("C",), ("D",)]
    for fixpoint in ("semi_naive", "naive"):
        for mode in ("forward", "demand"):
            config = ExecutionConfig(fixpoint=fixpoint, mode=mode)
            assert _answers(DATALOG, backend, compiled, config=config) == reference, (fixpoint, mode)


def _chain(n: int) -> tuple[str, np.ndarray]:
    text = "\n".join(f"E(N{i},N{i + 1})" for i in range(n)) + f"\nE(N{n},N{n // 2})\n"
    text += "R(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\nS(x,z) = E(x,y) S(y,z)\nS(x,y) = E(x,y)\n"
    step = np.eye(n + 1, k=1)
    step[n, n // 2] = 1
    closure = step.copy()
    while True:
        grown = np.minimum(1, closure + closure @ step)
        if (grown == closure).all():
            return text, closure
        closure = grown


def test_a_deep_linear_closure_equals_its_naive_rounds_and_its_round_limit():
    # 40 rounds: past the 32 after which an eager run searches the graph at once
    text, closure = _chain(40)
    outcomes = {}
    for fixpoint in ("semi_naive", "naive"):
        for mode in ("forward", "demand"):
            config = ExecutionConfig(fixpoint=fixpoint, mode=mode)
            got = _run(text + "R(N0,x)?\nS(x,N25)?\nexport R, S", config=config)
            np.testing.assert_array_equal(got["R"], closure)
            np.testing.assert_array_equal(got["S"], closure)
            outcomes[fixpoint, mode] = _answers(text + "R(N0,x)?\nS(x,N25)?", "numpy", None,
                                                config=config)
        with pytest.raises(fuse_lang.FuseError) as caught:
            _run(text + "export R", config=ExecutionConfig(fixpoint=fixpoint, max_iterations=38))
        assert "R did not reach a fixpoint in 38 rounds (the round limit; the last round " in \
            str(caught.value)
    assert len(set(map(str, outcomes.values()))) == 1
    assert len(outcomes["naive", "forward"][0][2]) == 40


OFFSETS = """
W[i,j] = const([[0.5,-0.2],[0.1,0.3]])
U[t,i] = const([[1,0],[0,1],[0.5,0.5],[-1,2]])
X[t,i] = tanh(W[i,j] X[t-1,j] + U[t,i])
H[t,i] = tanh(W[i,j] H[t-1,j] + U[t,i] + S[t-1])
S[t] = H[t,i] + 0.5 * S[t-1]
axis k = 4
Back[k] = 0.5 * Back[k+1] + 1
export X, H, S, Back
"""


@pytest.mark.parametrize("backend,compiled", RUNS)
def test_recursion_over_offsets_through_several_steps_and_shapes(backend, compiled):
    W = np.array([[0.5, -0.2], [0.1, 0.3]])
    U = np.array([[1.0, 0], [0, 1], [0.5, 0.5], [-1, 2]])
    x, h, s = np.zeros((4, 2)), np.zeros((4, 2)), np.zeros(4)
    for t in range(4):
        x[t] = np.tanh(W @ (x[t - 1] if t else np.zeros(2)) + U[t])
        h[t] = np.tanh(W @ (h[t - 1] if t else np.zeros(2)) + U[t] + (s[t - 1] if t else 0))
        s[t] = h[t].sum() + 0.5 * (s[t - 1] if t else 0)
    got = _run(OFFSETS, backend, compiled)
    # Back reads k+1: no recurrence in order, a fixpoint (0 past the end)
    _same(got, {"X": x, "H": h, "S": s, "Back": [1.875, 1.75, 1.5, 1.0]})


@pytest.mark.parametrize("mode", ["forward", "demand"])
def test_a_query_runs_only_its_cone_not_a_diverging_recursion_beside_it(mode):
    text = "X = 1.5 * X + 1\nE(A,B)\nE(B,C)\nT(x,y) = E(x,y)\nT(x,z) = T(x,y) E(y,z)\nT(A,x)?"
    result = fuse_lang.compile(text, config=ExecutionConfig(mode=mode)).execute()
    assert [q.tuples for q in result.queries] == [[("B",), ("C",)]]
    with pytest.raises(fuse_lang.FuseError, match="X did not converge: after 218 iterations"):
        fuse_lang.compile(text, targets=["X"]).run()
