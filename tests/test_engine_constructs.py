"""Every construct of LANGUAGE.md §3-6 and §10 run on the NumPy engine and
compared with the same computation written by hand in NumPy.

Sources are declared like `X[i,j] = "x.npy"`: the file is written to tmp_path
(a source must exist to be checked) and the same array is also given through
`run(inputs=...)`.  References are computed in float64 and compared with one
tolerance.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import fuse_lang

TOL = dict(rtol=1e-5, atol=1e-5)


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64),
                               np.asarray(expected, dtype=np.float64), **TOL)


def rand(*shape, seed=0, low=-1.0, high=1.0):
    rng = np.random.default_rng(seed + 7 * len(shape) + sum(shape))
    return rng.uniform(low, high, size=shape).astype(np.float32)


def run(tmp_path, text, precision="fp32", **arrays):
    """Write each array to `<name lowercased>.npy`, compile, run with the arrays as inputs."""
    for name, array in arrays.items():
        np.save(tmp_path / f"{name.lower()}.npy", array)
    program = fuse_lang.compile(text, backend="numpy", device="cpu", base_dir=tmp_path,
                                precision=precision)
    return program.run(inputs=arrays)


def sources(**shapes):
    """Source declarations `X[i,j] = "x.npy"` for the given index strings."""
    return "\n".join(f'{name}[{idx}] = "{name.lower()}.npy"' for name, idx in shapes.items())


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---------------------------------------------------------------- §5 projection

def test_join_projects_by_sum(tmp_path):
    W, X = rand(3, 4), rand(4)
    out = run(tmp_path, sources(W="i,j", X="j") + "\nY[i] = W[i,j] X[j]\nexport Y", W=W, X=X)
    close(out["Y"], W.astype(np.float64) @ X)


def test_three_way_join_with_two_projected_indices(tmp_path):
    A, B, C = rand(2, 3), rand(3, 4), rand(4, 5)
    out = run(tmp_path, sources(A="i,j", B="j,k", C="k,l") +
              "\nY[i,l] = A[i,j] B[j,k] C[k,l]\nexport Y", A=A, B=B, C=C)
    close(out["Y"], A.astype(np.float64) @ B @ C)


@pytest.mark.parametrize("op,fn", [("max=", np.max), ("min=", np.min), ("avg=", np.mean)])
def test_projection_operators(tmp_path, op, fn):
    P = rand(5, 3)
    out = run(tmp_path, sources(P="b,o") + f"\nM[o] {op} P[b,o]\nexport M", P=P)
    close(out["M"], fn(P.astype(np.float64), axis=0))


@pytest.mark.parametrize("op,fn", [("max=", np.max), ("min=", np.min), ("avg=", np.mean)])
def test_projection_operator_applies_to_a_product(tmp_path, op, fn):
    A, B = rand(3, 4), rand(4)
    out = run(tmp_path, sources(A="i,j", B="j") + f"\nM[i] {op} A[i,j] B[j]\nexport M",
              A=A, B=B)
    close(out["M"], fn(A.astype(np.float64) * B, axis=1))


def test_max_projection_over_two_indices(tmp_path):
    P = rand(2, 3, 4)
    out = run(tmp_path, sources(P="a,b,c") + "\nM[b] max= P[a,b,c]\nexport M", P=P)
    close(out["M"], P.max(axis=(0, 2)))


def test_projection_is_per_additive_term(tmp_path):
    A, B = rand(3, 4), rand(3)
    out = run(tmp_path, sources(A="i,j", B="i") + "\nS[i] = A[i,j] + B[i]\nexport S", A=A, B=B)
    close(out["S"], A.astype(np.float64).sum(axis=1) + B)  # B added once, not 4 times


def test_per_term_projection_with_subtraction_and_constant(tmp_path):
    A, B = rand(3, 4), rand(3)
    out = run(tmp_path, sources(A="i,j", B="i") + "\nS[i] = B[i] - A[i,j] + 2\nexport S",
              A=A, B=B)
    close(out["S"], B - A.astype(np.float64).sum(axis=1) + 2)


def test_per_term_projection_two_terms_each_summing(tmp_path):
    W, X, V, U = rand(3, 4), rand(4), rand(3, 2), rand(2)
    out = run(tmp_path, sources(W="i,j", X="j", V="i,k", U="k") +
              "\nH[i] = W[i,j] X[j] + V[i,k] U[k]\nexport H", W=W, X=X, V=V, U=U)
    close(out["H"], W.astype(np.float64) @ X + V.astype(np.float64) @ U)


def test_same_index_summed_separately_in_each_term(tmp_path):
    W, X, V, U = rand(3, 4), rand(4), rand(3, 4), rand(4)
    out = run(tmp_path, sources(W="i,j", X="j", V="i,j", U="j") +
              "\nH[i] = W[i,j] X[j] + V[i,j] U[j]\nexport H", W=W, X=X, V=V, U=U)
    close(out["H"], W.astype(np.float64) @ X + V.astype(np.float64) @ U)


def test_index_summed_over_the_whole_term_not_per_factor(tmp_path):
    # A[i,j] (B[j] + C[j]): j occurs in both factors, projected once over the product
    A, B, C = rand(3, 4), rand(4), rand(4)
    out = run(tmp_path, sources(A="i,j", B="j", C="j") +
              "\nY[i] = A[i,j] (B[j] + C[j])\nexport Y", A=A, B=B, C=C)
    close(out["Y"], A.astype(np.float64) @ (B.astype(np.float64) + C))


def test_division_inside_a_projected_product(tmp_path):
    A, B = rand(3, 4), rand(4, low=1.0, high=2.0)
    out = run(tmp_path, sources(A="i,j", B="j") + "\nY[i] = A[i,j] / B[j]\nexport Y", A=A, B=B)
    close(out["Y"], (A.astype(np.float64) / B).sum(axis=1))


def test_nested_and_negated_products_are_one_join(tmp_path):
    # (A B) E and -(A B) E are spliced into one einsum (plan.joins.product_factors),
    # a negation taken out of the sum; under max it stays inside
    A, B, E, C = rand(3, 4), rand(4, 5), rand(5), rand(4)
    out = run(tmp_path, sources(A="i,j", B="j,k", E="k", C="j") +
              "\nY[i] = (A[i,j] B[j,k]) E[k]\nZ[i] = -(A[i,j] B[j,k]) E[k]"
              "\nW[i,k] = - A[i,j] B[j,k]\nV[i] = -(A[i,j] C[j])"
              "\nU[i] = (A[i,j] / (C[j] + 2)) C[j]\nM[i] max= -(A[i,j] C[j])"
              "\nexport Y, Z, W, V, U, M", A=A, B=B, E=E, C=C)
    a, b, e, c = (x.astype(np.float64) for x in (A, B, E, C))
    close(out["Y"], a @ b @ e)
    close(out["Z"], -(a @ b @ e))
    close(out["W"], -(a @ b))
    close(out["V"], -(a @ c))
    close(out["U"], (a / (c + 2) * c).sum(axis=1))
    close(out["M"], (-(a * c)).max(axis=1))


def test_nested_call_scopes(tmp_path):
    W1, W2, X = rand(5, 4), rand(3, 5), rand(4)
    out = run(tmp_path, sources(W1="h,j", W2="i,h", X="j") +
              "\nY[i] = relu(W2[i,h] relu(W1[h,j] X[j]))\nexport Y", W1=W1, W2=W2, X=X)
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    close(out["Y"], relu(W2.astype(np.float64) @ relu(W1.astype(np.float64) @ X)))


def test_rbf_kernel_sums_inside_exp(tmp_path):
    X = rand(4, 3)
    text = sources(X="i,j") + "\nV = const(2.5)\nK[i,i'] = exp(-(X[i,j] - X[i',j])^2 / V)\n" \
        "export K"
    out = run(tmp_path, text, X=X)
    x = X.astype(np.float64)
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
    close(out["K"], np.exp(-sq / 2.5))


def test_polynomial_kernel_pow_of_a_sum(tmp_path):
    X = rand(4, 3)
    out = run(tmp_path, sources(X="i,j") + "\nK[i,i'] = pow(X[i,j] X[i',j], 3)\nexport K", X=X)
    x = X.astype(np.float64)
    close(out["K"], (x @ x.T) ** 3)


def test_each_call_argument_is_a_scope(tmp_path):
    # j occurs only inside pow's first argument: summed there, then squared
    A, B = rand(3, 4), rand(3)
    out = run(tmp_path, sources(A="i,j", B="i") +
              "\nY[i] = pow(B[i], 2) + pow(A[i,j], 2)\nexport Y", A=A, B=B)
    close(out["Y"], B.astype(np.float64) ** 2 + A.astype(np.float64).sum(axis=1) ** 2)


def test_projection_over_a_parenthesised_sum(tmp_path):
    # one term (A + B) C: sum_j A C + B sum_j C
    A, B, C = rand(3, 4), rand(3), rand(4)
    out = run(tmp_path, sources(A="i,j", B="i", C="j") +
              "\nS[i] = (A[i,j] + B[i]) C[j]\nexport S", A=A, B=B, C=C)
    close(out["S"], (A.astype(np.float64) + B[:, None]) @ C)


def test_index_value_joined_and_projected(tmp_path):
    A = rand(3, 4)
    out = run(tmp_path, sources(A="i,j") + "\nY[j] = A[i,j] i\nexport Y", A=A)
    close(out["Y"], (A.astype(np.float64) * np.arange(3)[:, None]).sum(axis=0))


def test_power_operator_inside_a_projected_scope(tmp_path):
    # ^ binds tighter than juxtaposition: sum_j A[i,j]^2
    A = rand(3, 4)
    out = run(tmp_path, sources(A="i,j") + "\nY[i] = A[i,j]^2\nexport Y", A=A)
    close(out["Y"], (A.astype(np.float64) ** 2).sum(axis=1))


def test_reduce_max(tmp_path):
    A, B = rand(3, 4), rand(4)
    out = run(tmp_path, sources(A="i,j", B="j") + "\nY[i] = reduce(max, j) A[i,j] B[j]\nexport Y",
              A=A, B=B)
    close(out["Y"], (A.astype(np.float64) * B).max(axis=1))


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("min", np.min), ("avg", np.mean)])
def test_reduce_other_ops(tmp_path, op, fn):
    A = rand(3, 4, 2)
    out = run(tmp_path, sources(A="i,j,k") + f"\nY[i] = reduce({op}, j, k) A[i,j,k]\nexport Y",
              A=A)
    close(out["Y"], fn(A.astype(np.float64), axis=(1, 2)))


def test_reduce_inside_a_larger_expression(tmp_path):
    A, B = rand(3, 4), rand(3)
    out = run(tmp_path, sources(A="i,j", B="i") +
              "\nY[i] = B[i] + reduce(max, j) A[i,j]\nexport Y", A=A, B=B)
    close(out["Y"], B + A.max(axis=1))


# ----------------------------------------------------- §3-4 binding and broadcasting

def test_broadcast_by_name(tmp_path):
    X, B = rand(2, 3), rand(3)
    out = run(tmp_path, sources(X="b,h", B="h") + "\nH[b,h] = X[b,h] + B[h]\nexport H",
              X=X, B=B)
    close(out["H"], X.astype(np.float64) + B[None, :])


def test_broadcast_by_name_not_by_position(tmp_path):
    # B has extent 2 = the extent of b: by name it still adds along b, not h
    X, B = rand(2, 2), rand(2)
    out = run(tmp_path, sources(X="b,h", B="b") + "\nH[b,h] = X[b,h] + B[b]\nexport H",
              X=X, B=B)
    close(out["H"], X.astype(np.float64) + B[:, None])


def test_elementwise_product_with_outer_axes(tmp_path):
    A, B = rand(2), rand(3)
    out = run(tmp_path, sources(A="i", B="j") + "\nO[i,j] = A[i] B[j]\nexport O", A=A, B=B)
    close(out["O"], np.outer(A, B))


def test_transpose_by_position(tmp_path):
    A = rand(2, 3)
    out = run(tmp_path, sources(A="i,j") + "\nB[j,i] = A[i,j]\nC[i,j] = B[i,j]\nexport B, C",
              A=A)
    close(out["B"], A.T)
    close(out["C"], A.T)  # C reads B by position: C[i,j] = B[i,j] = A[j,i]


def test_transpose_in_a_join(tmp_path):
    A, B = rand(3, 4), rand(3, 5)
    out = run(tmp_path, sources(A="i,j", B="i,k") + "\nC[j,k] = A[i,j] B[i,k]\nexport C",
              A=A, B=B)
    close(out["C"], A.T.astype(np.float64) @ B)


def test_lhs_index_no_rhs_term_mentions_broadcasts(tmp_path):
    X = rand(3)
    out = run(tmp_path, sources(X="i") + "\naxis k = 4\nY[i,k] = X[i]\nexport Y", X=X)
    close(out["Y"], np.broadcast_to(X[:, None], (3, 4)))


def test_lhs_index_broadcast_in_front(tmp_path):
    X = rand(3)
    out = run(tmp_path, sources(X="i") + "\naxis k = 2\nY[k,i] = X[i] + 1\nexport Y", X=X)
    close(out["Y"], np.broadcast_to(X[None, :] + 1, (2, 3)))


def test_repeated_index_reads_the_diagonal(tmp_path):
    A = rand(3, 3)
    out = run(tmp_path, sources(A="i,j") + "\nD[i] = A[i,i]\nT = A[i,i]\nexport D, T", A=A)
    close(out["D"], np.diag(A))
    close(out["T"], np.trace(A.astype(np.float64)))


def test_scalar_tensors(tmp_path):
    A = rand(4)
    out = run(tmp_path, sources(A="i") + "\nS = A[i]\nT = S * 2 + 1\nexport S, T", A=A)
    assert out["S"].shape == ()
    close(out["S"], A.astype(np.float64).sum())
    close(out["T"], A.astype(np.float64).sum() * 2 + 1)


def test_index_value_used_as_a_number(tmp_path):
    out = run(tmp_path, "axis p = 6\nL = const(3)\nP[p] = sin(p / L)\nexport P")
    close(out["P"], np.sin(np.arange(6) / 3.0))


def test_two_index_values_as_numbers(tmp_path):
    out = run(tmp_path, "axis i = 3, j = 4\nD[i,j] = i - j\nexport D")
    close(out["D"], np.arange(3)[:, None] - np.arange(4)[None, :])


# ------------------------------------------------------ §6 several equations

def test_several_equations_sum(tmp_path):
    A, X, B, C = rand(3, 4), rand(4), rand(3), rand(3)
    text = sources(A="i,j", X="j", B="i", C="i") + \
        "\nY[i] = A[i,j] X[j]\nY[i] += B[i]\nY[i] = C[i]\nexport Y"
    out = run(tmp_path, text, A=A, X=X, B=B, C=C)
    close(out["Y"], A.astype(np.float64) @ X + B + C)


def test_each_equation_applies_its_own_nonlinearity_before_summing(tmp_path):
    A = rand(5)
    out = run(tmp_path, sources(A="i") + "\nY[i] = relu(A[i])\nY[i] = relu(-A[i])\nexport Y",
              A=A)
    close(out["Y"], np.abs(A))


def test_several_max_equations_combine_by_max(tmp_path):
    A, B = rand(3, 4), rand(3, 2)
    out = run(tmp_path, sources(A="i,j", B="i,k") +
              "\nM[i] max= A[i,j]\nM[i] max= B[i,k]\nexport M", A=A, B=B)
    close(out["M"], np.maximum(A.max(axis=1), B.max(axis=1)))


def test_several_min_equations_combine_by_min(tmp_path):
    A, B = rand(3, 4), rand(3, 2)
    out = run(tmp_path, sources(A="i,j", B="i,k") +
              "\nM[i] min= A[i,j]\nM[i] min= B[i,k]\nexport M", A=A, B=B)
    close(out["M"], np.minimum(A.min(axis=1), B.min(axis=1)))


def test_boolean_or_of_rules(tmp_path):
    P = (rand(4, 4, seed=1) > 0).astype(np.float32)
    Q = (rand(4, 4, seed=2) > 0).astype(np.float32)
    text = 'P(x,y) = "p.npy"\nQ(x,y) = "q.npy"\nR(x,y) = P(x,y)\nR(x,y) = Q(x,y)\nexport R'
    out = run(tmp_path, text, P=P, Q=Q)
    close(out["R"], np.logical_or(P > 0, Q > 0))
    assert set(np.unique(out["R"])) <= {0.0, 1.0}


def test_boolean_join_is_step_of_the_sum(tmp_path):
    # Aunt(x,z) = Sister(x,y) Parent(y,z): several y give 1, not a count
    S = (rand(4, 4, seed=3) > -0.3).astype(np.float32)
    P = (rand(4, 4, seed=4) > -0.3).astype(np.float32)
    text = 'Sister(x,y) = "sister.npy"\nParent(y,z) = "parent.npy"\n' \
        "Aunt(x,z) = Sister(x,y) Parent(y,z)\nexport Aunt"
    out = run(tmp_path, text, Sister=S, Parent=P)
    counts = S.astype(np.float64) @ P
    assert counts.max() > 1  # the test means something
    close(out["Aunt"], counts > 0)


def test_boolean_or_of_facts_and_rules(tmp_path):
    text = ("Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Carol, Dan)\n"
            "Likes(Alice, Bob)\nLikes(Dan, Alice)\n"
            "Knows(x,y) = Parent(x,y)\nKnows(x,y) = Likes(x,y)\nKnows(Carol, Alice)\n"
            "Knows(x,y)?")
    program = fuse_lang.compile(text, base_dir=tmp_path)
    result = program.execute()
    (answer,) = result.queries
    assert sorted(answer.tuples) == sorted([("Alice", "Bob"), ("Bob", "Carol"), ("Carol", "Dan"),
                                            ("Dan", "Alice"), ("Carol", "Alice")])
    assert set(np.unique(answer.value)) <= {0.0, 1.0}


# --------------------------------------------------------------- §3 index forms

def test_integer_constant_index(tmp_path):
    X = rand(3, 4)
    out = run(tmp_path, sources(X="i,j") + "\nY[j] = X[1,j]\nZ = X[2,3]\nW[i] = X[i,0]\n"
              "export Y, Z, W", X=X)
    close(out["Y"], X[1])
    close(out["Z"], X[2, 3])
    close(out["W"], X[:, 0])


def test_symbol_constant_index(tmp_path):
    text = ("Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Alice, Dan)\n"
            "Anc(x,y) = Parent(x,y)\nAnc(x,z) = Anc(x,y) Parent(y,z)\n"
            "Kids(y) = Parent(Alice, y)\nGrand(y) = Anc(Alice, y)\nexport Kids, Grand\n"
            "Parent(Alice, y)?")
    program = fuse_lang.compile(text, base_dir=tmp_path)
    result = program.execute()
    a = program.analysis
    names_kids = a.domain_symbols[a.tensors["Kids"].axes[0].domain]
    names_grand = a.domain_symbols[a.tensors["Grand"].axes[0].domain]
    close(result.outputs["Kids"], [n in ("Bob", "Dan") for n in names_kids])
    close(result.outputs["Grand"], [n in ("Bob", "Carol", "Dan") for n in names_grand])
    assert sorted(result.queries[0].tuples) == [("Bob",), ("Dan",)]


def test_symbol_constant_on_a_dense_tensor(tmp_path):
    text = ("Person(Alice, Bob)\nPerson(Carol, Bob)\n"
            "Age[p] = const([30, 40, 50])\n"  # p shares Person's first axis domain below
            "Tmp[p, q] = Person(p, q) Age[p]\nA = Tmp[Carol, Bob]\nexport A")
    program = fuse_lang.compile(text, base_dir=tmp_path)
    out = program.run()
    a = program.analysis
    symbols = a.domain_symbols[a.tensors["Tmp"].axes[0].domain]
    close(out["A"], [30, 40, 50][symbols.index("Carol")])


def test_integer_constants_on_the_lhs(tmp_path):
    B, C = rand(3), rand(4)
    out = run(tmp_path, sources(B="i", C="j") + "\nY[0,j] = C[j]\nY[1,j] = 2 C[j]\n"
              "Z[1] = 5\nZ[i] = B[i]\nexport Y, Z", B=B, C=C)
    close(out["Y"], np.stack([C, 2 * C]))
    close(out["Z"], B + np.array([0, 5, 0]))


def test_symbol_constants_on_the_lhs(tmp_path):
    text = ("Person(Alice)\nPerson(Bob)\nPerson(Carol)\n"
            "Score[x] = Person(x)\nScore[Bob] = 2\nScore[Carol] = 5\nexport Score")
    program = fuse_lang.compile(text, base_dir=tmp_path)
    out = program.run()
    a = program.analysis
    symbols = a.domain_symbols[a.tensors["Score"].axes[0].domain]
    expected = {"Alice": 1, "Bob": 3, "Carol": 6}
    close(out["Score"], [expected[n] for n in symbols])


def test_symbol_constant_on_the_lhs_only(tmp_path):
    program = fuse_lang.compile("S[Bob] = 2\nS[Alice] = 1\nexport S", base_dir=tmp_path)
    out = program.run()
    a = program.analysis
    symbols = a.domain_symbols[a.tensors["S"].axes[0].domain]
    close(out["S"], [{"Bob": 2, "Alice": 1}[n] for n in symbols])


@pytest.mark.parametrize("offset", [1, -1, 2, -3])
def test_offsets_with_zero_fill(tmp_path, offset):
    X = rand(6)
    sign = "+" if offset > 0 else "-"
    out = run(tmp_path, sources(X="t") + f"\nY[t] = X[t{sign}{abs(offset)}]\nexport Y", X=X)
    expected = np.zeros(6)
    for t in range(6):
        if 0 <= t + offset < 6:
            expected[t] = X[t + offset]
    assert out["Y"].shape == (6,)
    close(out["Y"], expected)


def test_offset_in_a_join(tmp_path):
    W, X = rand(3, 4), rand(5, 4)
    out = run(tmp_path, sources(W="i,k", X="t,k") + "\nY[t,i] = W[i,k] X[t-1,k]\nexport Y",
              W=W, X=X)
    shifted = np.vstack([np.zeros((1, 4)), X[:-1]])
    close(out["Y"], shifted @ W.T.astype(np.float64))


def test_offset_on_the_lhs(tmp_path):
    X = rand(5)
    out = run(tmp_path, sources(X="t") + "\nY[t+1] = X[t]\nexport Y", X=X)
    close(out["Y"], np.concatenate([[0], X[:-1]]))  # the write past the end is dropped


def test_convolution_access_1d(tmp_path):
    I, K = rand(7), rand(3)
    out = run(tmp_path, sources(I="x", K="dx") + "\nF[x] = K[dx] I[x+dx]\nexport F", I=I, K=K)
    expected = np.zeros(7)
    for x in range(7):
        for dx in range(3):
            if x + dx < 7:
                expected[x] += K[dx] * I[x + dx]
    assert out["F"].shape == (7,)
    close(out["F"], expected)


def test_convolution_access_2d_with_channels(tmp_path):
    Image, Filter = rand(5, 6, 2), rand(3, 2, 2)
    text = sources(Image="x,y,ch", Filter="dx,dy,ch") + \
        "\nFeatures[x,y] = relu(Filter[dx,dy,ch] Image[x+dx,y+dy,ch])\nexport Features"
    out = run(tmp_path, text, Image=Image, Filter=Filter)
    padded = np.zeros((5 + 2, 6 + 1, 2))
    padded[:5, :6] = Image
    expected = np.zeros((5, 6))
    for x in range(5):
        for y in range(6):
            expected[x, y] = (Filter * padded[x:x + 3, y:y + 2]).sum()
    close(out["Features"], np.maximum(expected, 0))


def test_sum_pooling_on_the_lhs(tmp_path):
    F = rand(7)
    out = run(tmp_path, sources(F="x") + "\nP[x/2] = F[x]\nexport P", F=F)
    assert out["P"].shape == (4,)  # ceil(7/2)
    close(out["P"], [F[0] + F[1], F[2] + F[3], F[4] + F[5], F[6]])


def test_max_pooling_on_the_lhs(tmp_path):
    F = rand(7)
    out = run(tmp_path, sources(F="x") + "\nP[x/2] max= F[x]\nexport P", F=F)
    close(out["P"], [max(F[0], F[1]), max(F[2], F[3]), max(F[4], F[5]), F[6]])


def test_avg_pooling_on_the_lhs(tmp_path):
    F = rand(7)
    out = run(tmp_path, sources(F="x") + "\nP[x/3] avg= F[x]\nexport P", F=F)
    close(out["P"], [F[0:3].mean(), F[3:6].mean(), F[6]])


def test_2d_pooling_after_convolution(tmp_path):
    Image, Filter = rand(5, 5, 1), rand(2, 2, 1)
    text = sources(Image="x,y,ch", Filter="dx,dy,ch") + \
        "\nFeatures[x,y] = relu(Filter[dx,dy,ch] Image[x+dx,y+dy,ch])\n" \
        "Pooled[x/2,y/2] = Features[x,y]\nexport Pooled"
    out = run(tmp_path, text, Image=Image, Filter=Filter)
    padded = np.zeros((6, 6))
    padded[:5, :5] = Image[..., 0]
    feats = np.zeros((5, 5))
    for x in range(5):
        for y in range(5):
            feats[x, y] = (Filter[..., 0] * padded[x:x + 2, y:y + 2]).sum()
    feats = np.maximum(feats, 0)
    expected = np.zeros((3, 3))
    for x in range(5):
        for y in range(5):
            expected[x // 2, y // 2] += feats[x, y]
    close(out["Pooled"], expected)


def test_2d_max_pooling(tmp_path):
    F = rand(4, 6)
    out = run(tmp_path, sources(F="x,y") + "\nP[x/2,y/3] max= F[x,y]\nexport P", F=F)
    close(out["P"], F.reshape(2, 2, 2, 3).max(axis=(1, 3)))


def test_division_index_on_the_rhs(tmp_path):
    P = rand(3)
    out = run(tmp_path, sources(P="q") + "\naxis x = 6\nU[x] = P[x/2]\nexport U", P=P)
    close(out["U"], np.repeat(P, 2))


def test_slice_on_the_rhs_is_summed_when_not_on_the_lhs(tmp_path):
    X = rand(8)
    out = run(tmp_path, sources(X="i") + "\nS = X[2:5]\nexport S", X=X)
    close(out["S"], X[2:5].astype(np.float64).sum())


def test_slice_kept_on_the_lhs(tmp_path):
    X = rand(8)
    out = run(tmp_path, sources(X="i") + "\nY[:] = X[2:5]\nexport Y", X=X)
    close(out["Y"], X[2:5])


def test_slice_per_row_kept(tmp_path):
    W = rand(3, 6)
    out = run(tmp_path, sources(W="i,j") + "\nY[i,:] = W[i,1:4]\nexport Y", W=W)
    close(out["Y"], W[:, 1:4])


def test_full_slice(tmp_path):
    W = rand(3, 4)
    out = run(tmp_path, sources(W="i,j") + "\nY[i] = W[i,:]\nZ[i,:] = W[i,:]\nexport Y, Z",
              W=W)
    close(out["Y"], W.astype(np.float64).sum(axis=1))
    close(out["Z"], W)


def test_open_slices_join_by_ordinal(tmp_path):
    W = rand(3, 4)
    out = run(tmp_path, sources(W="i,j") + "\nY[i] = W[i, 2:] W[i, :2]\nexport Y", W=W)
    close(out["Y"], (W[:, 2:].astype(np.float64) * W[:, :2]).sum(axis=1))


def test_slices_kept_in_a_product(tmp_path):
    W = rand(3, 4)
    out = run(tmp_path, sources(W="i,j") + "\nY[i,:] = W[i, 2:] W[i, 0:2]\nexport Y", W=W)
    close(out["Y"], W[:, 2:].astype(np.float64) * W[:, 0:2])


def test_virtual_index_rnn(tmp_path):
    W, V, U = rand(4, 4), rand(4, 4, seed=1), rand(4, 5)
    text = sources(W="i,j", V="i,j", U="j,t") + \
        "\nX[i,*t+1] = sig(W[i,j] X[j,*t] + V[i,j] U[j,t])\nexport X"
    out = run(tmp_path, text, W=W, V=V, U=U)
    x = np.zeros(4)
    for t in range(5):
        x = sigmoid(W.astype(np.float64) @ x + V.astype(np.float64) @ U[:, t])
    assert out["X"].shape == (4,)  # exported as the last value, without the virtual axis
    close(out["X"], x)


def test_virtual_index_counter(tmp_path):
    B = rand(3)
    out = run(tmp_path, sources(B="i") + "\naxis t = 5\nX[i,*t+1] = X[i,*t] + B[i]\nexport X",
              B=B)
    close(out["X"], 5 * B.astype(np.float64))


def test_virtual_index_step_value_and_reader(tmp_path):
    # t used as a number inside the recurrence; another tensor reads the last value
    out = run(tmp_path, "axis t = 4, i = 2\nX[i,*t+1] = X[i,*t] + t\nY[i] = 2 X[i,*t]\nexport X, Y")
    close(out["X"], [6, 6])  # 0+1+2+3
    close(out["Y"], [12, 12])


def test_offset_recurrence_mlp_layers(tmp_path):
    # X[i,j] = sig(W[i,j,k] X[i-1,k]) with X[0,...] reading zeros before it
    W = rand(4, 3, 3)
    text = sources(W="i,j,k") + "\nX[i,j] = sig(W[i,j,k] X[i-1,k])\nexport X"
    out = run(tmp_path, text, W=W)
    expected = np.zeros((4, 3))
    prev = np.zeros(3)
    for i in range(4):
        expected[i] = sigmoid(W[i].astype(np.float64) @ prev)
        prev = expected[i]
    close(out["X"], expected)


# --------------------------------------------------------------- §10 builtins

UNARY = {
    "step": lambda x: (x > 0).astype(np.float64),
    "relu": lambda x: np.maximum(x, 0),
    "tanh": np.tanh,
    "exp": np.exp,
    "abs": np.abs,
    "sin": np.sin,
    "cos": np.cos,
    "sig": sigmoid,
    "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_builtin(tmp_path, name):
    X = rand(3, 4) * 3
    X[0, 0] = 0.0  # step(0) is 0
    out = run(tmp_path, sources(X="i,j") + f"\nY[i,j] = {name}(X[i,j])\nexport Y", X=X)
    close(out["Y"], UNARY[name](X.astype(np.float64)))


@pytest.mark.parametrize("name,fn", [("log", np.log), ("sqrt", np.sqrt)])
def test_positive_domain_builtins(tmp_path, name, fn):
    X = rand(3, 4, low=0.1, high=4.0)
    out = run(tmp_path, sources(X="i,j") + f"\nY[i,j] = {name}(X[i,j])\nexport Y", X=X)
    close(out["Y"], fn(X.astype(np.float64)))


def test_gelu_is_exact_not_tanh_approximation(tmp_path):
    X = np.array([-3.0, -1.5, -0.5, 0.0, 0.7, 2.0, 4.0], dtype=np.float32)
    out = run(tmp_path, sources(X="i") + "\nY[i] = gelu(X[i])\nexport Y", X=X)
    exact = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in X.astype(np.float64)]
    np.testing.assert_allclose(out["Y"], exact, rtol=1e-6, atol=1e-7)


def test_sig_with_temperature(tmp_path):
    X = rand(5) * 4
    out = run(tmp_path, sources(X="i") + "\nY[i] = sig(X[i], 2.5)\nexport Y", X=X)
    close(out["Y"], sigmoid(X.astype(np.float64) / 2.5))


def test_sig_with_temperature_zero_is_step(tmp_path):
    X = np.array([-2.0, -0.1, 0.0, 0.1, 3.0], dtype=np.float32)
    out = run(tmp_path, sources(X="i") + "\nY[i] = sig(X[i], 0)\nT = const(0)\n"
              "Z[i] = sig(X[i], T)\nexport Y, Z", X=X)
    close(out["Y"], [0, 0, 0, 1, 1])
    close(out["Z"], [0, 0, 0, 1, 1])


def test_sig_with_a_temperature_tensor(tmp_path):
    X, T = rand(3, 2), rand(2, low=0.5, high=2.0)
    out = run(tmp_path, sources(X="i,j", T="j") + "\nY[i,j] = sig(X[i,j], T[j])\nexport Y",
              X=X, T=T)
    close(out["Y"], sigmoid(X.astype(np.float64) / T[None, :]))


def test_pow(tmp_path):
    X = rand(4, low=0.1, high=2.0)
    out = run(tmp_path, sources(X="i") + "\nY[i] = pow(X[i], 3)\nZ[i] = pow(X[i], 0.5)\n"
              "W[i] = X[i] ** 2\nexport Y, Z, W", X=X)
    close(out["Y"], X.astype(np.float64) ** 3)
    close(out["Z"], np.sqrt(X.astype(np.float64)))
    close(out["W"], X.astype(np.float64) ** 2)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_along_the_last_lhs_axis(tmp_path):
    X = rand(3, 4) * 3
    out = run(tmp_path, sources(X="i,j") + "\nS[i,j] = softmax(X[i,j])\nexport S", X=X)
    close(out["S"], softmax(X.astype(np.float64), 1))


def test_softmax_along_the_dotted_axis_even_when_not_last(tmp_path):
    X = rand(3, 4) * 3
    out = run(tmp_path, sources(X="i,j") + "\nS[i.,j] = softmax(X[i,j])\nexport S", X=X)
    close(out["S"], softmax(X.astype(np.float64), 0))


def test_softmax_axis_keyword(tmp_path):
    X = rand(3, 4, 2) * 3
    out = run(tmp_path, sources(X="i,j,k") + "\nS[i,j,k] = softmax(X[i,j,k], axis=j)\nexport S",
              X=X)
    close(out["S"], softmax(X.astype(np.float64), 1))


def test_dotted_axis_wins_over_axis_keyword(tmp_path):
    X = rand(3, 4) * 3
    out = run(tmp_path, sources(X="i,j") + "\nS[i.,j] = softmax(X[i,j], axis=j)\nexport S", X=X)
    close(out["S"], softmax(X.astype(np.float64), 0))


def test_softmax_of_a_contraction_attention(tmp_path):
    Q, K = rand(4, 3), rand(5, 3)
    text = sources(Q="p,dk", K="q,dk") + \
        "\nDk = const(3)\nC[p,q.] = softmax(Q[p,dk] K[q,dk] / sqrt(Dk))\nexport C"
    out = run(tmp_path, text, Q=Q, K=K)
    close(out["C"], softmax(Q.astype(np.float64) @ K.T / np.sqrt(3), 1))


def test_attention_head(tmp_path):
    X, WQ, WK, WV = rand(5, 6), rand(3, 6), rand(3, 6), rand(2, 6)
    text = sources(X="p,d", WQ="dk,d", WK="dk,d", WV="dv,d") + """
Dk = const(3)
Query[p,dk] = WQ[dk,d] X[p,d]
Key[p,dk]   = WK[dk,d] X[p,d]
Val[p,dv]   = WV[dv,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk))
Attn[p,dv]  = Comp[p,p'] Val[p',dv]
export Attn"""
    out = run(tmp_path, text, X=X, WQ=WQ, WK=WK, WV=WV)
    x = X.astype(np.float64)
    q, k, v = x @ WQ.T, x @ WK.T, x @ WV.T
    close(out["Attn"], softmax(q @ k.T / np.sqrt(3), 1) @ v)


def lnorm(x, axis, eps):
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def test_lnorm_default_eps_along_last_axis(tmp_path):
    X = rand(3, 5) * 2
    out = run(tmp_path, sources(X="i,j") + "\nL[i,j] = lnorm(X[i,j])\nexport L", X=X)
    close(out["L"], lnorm(X.astype(np.float64), 1, 1e-5))


def test_lnorm_with_eps_and_dotted_axis(tmp_path):
    X = rand(4, 3) * 0.3
    out = run(tmp_path, sources(X="i,j") + "\nL[i.,j] = lnorm(X[i,j], eps=0.5)\nexport L", X=X)
    close(out["L"], lnorm(X.astype(np.float64), 0, 0.5))


def test_lnorm_axis_keyword(tmp_path):
    X = rand(4, 3)
    out = run(tmp_path, sources(X="i,j") + "\nL[i,j] = lnorm(X[i,j], axis=i, eps=0.01)\n"
              "export L", X=X)
    close(out["L"], lnorm(X.astype(np.float64), 0, 0.01))


def test_concat_along_a_named_axis_with_different_extents(tmp_path):
    A, B = rand(2, 3), rand(2, 4)
    out = run(tmp_path, sources(A="i,n", B="i,n") + "\nC[i,n] = concat(A[i,n], B[i,n], axis=n)\n"
              "export C", A=A, B=B)
    assert out["C"].shape == (2, 7)
    close(out["C"], np.concatenate([A, B], axis=1))


def test_concat_along_a_first_axis_of_three(tmp_path):
    A, B, C = rand(1, 3), rand(2, 3), rand(3, 3)
    out = run(tmp_path, sources(A="n,i", B="n,i", C="n,i") +
              "\nD[n,i] = concat(A[n,i], B[n,i], C[n,i], axis=n)\nexport D", A=A, B=B, C=C)
    assert out["D"].shape == (6, 3)
    close(out["D"], np.concatenate([A, B, C], axis=0))


# `Top[i,j] = topk(X[i,j], k=2)` (docs/language.md): along the last LHS axis,
# the K largest values of each row in descending order, so Top's j has extent K
# while X's j keeps its own; among equal values the lower index comes first.

def test_topk_gives_the_k_largest_per_row_descending(tmp_path):
    X = np.array([[3.0, 1.0, 4.0, 1.5, 5.0], [0.5, -2.0, 0.5, 9.0, 0.5]], dtype=np.float32)
    out = run(tmp_path, sources(X="i,j") + "\nT[i,j] = topk(X[i,j], k=3)\nexport T", X=X)
    assert out["T"].shape == (2, 3)
    close(out["T"], [[5.0, 4.0, 3.0], [9.0, 0.5, 0.5]])


def test_topk_matches_a_stable_descending_sort(tmp_path):
    X = np.round(rand(4, 6) * 2) / 2  # many ties
    out = run(tmp_path, sources(X="i,j") + "\nT[i,j] = topk(X[i,j], k=2)\nexport T", X=X)
    expected = np.zeros((4, 2))
    for i in range(4):
        order = sorted(range(6), key=lambda j: (-X[i, j], j))[:2]
        expected[i] = X[i, order]
    close(out["T"], expected)


def test_topk_works_along_the_last_lhs_axis(tmp_path):
    X = rand(4, 3)
    out = run(tmp_path, sources(X="i,j") + "\nT[j,i] = topk(X[i,j], k=2)\nexport T", X=X)
    assert out["T"].shape == (3, 2)
    close(out["T"], -np.sort(-X.T, axis=1)[:, :2])


def test_causal_mask(tmp_path):
    out = run(tmp_path, "M[q,k] = causal_mask(4)\nexport M")
    close(out["M"], np.tril(np.ones((4, 4))))


def test_causal_mask_applied_to_scores(tmp_path):
    S = rand(4, 4)
    out = run(tmp_path, sources(S="q,k") + "\nM[q,k] = causal_mask(4)\n"
              "Y[q,k] = S[q,k] M[q,k]\nexport Y", S=S)
    close(out["Y"], S * np.tril(np.ones((4, 4))))


def test_even_and_odd(tmp_path):
    X = rand(5)
    out = run(tmp_path, sources(X="i") + "\naxis i = 5\nE[i] = even(i)\nO[i] = odd(i)\n"
              "Y[i] = X[i] even(i)\nexport E, O, Y", X=X)
    close(out["E"], [1, 0, 1, 0, 1])
    close(out["O"], [0, 1, 0, 1, 0])
    close(out["Y"], X * np.array([1, 0, 1, 0, 1]))


def test_const(tmp_path):
    out = run(tmp_path, "W = const([0.2, 1.9, -0.7, 3])\nM[i,j] = const([[1, 2, 3], [4, 5, 6]])\n"
              "S = const(2.5)\nexport W, M, S")
    close(out["W"], [0.2, 1.9, -0.7, 3])
    close(out["M"], [[1, 2, 3], [4, 5, 6]])
    close(out["S"], 2.5)
    assert out["S"].shape == ()


def test_const_binds_lhs_indices_in_order(tmp_path):
    out = run(tmp_path, "M[j,i] = const([[1, 2, 3], [4, 5, 6]])\nT[j,i] = M[j,i]\n"
              "R[a,b] = M[b,a]\nexport M, T, R")
    close(out["M"], [[1, 2, 3], [4, 5, 6]])
    close(out["T"], [[1, 2, 3], [4, 5, 6]])  # same positions: no transpose
    close(out["R"], [[1, 4], [2, 5], [3, 6]])  # by position: a transpose


def test_elementwise_max_min(tmp_path):
    A, B = rand(3, 2), rand(2)
    out = run(tmp_path, sources(A="i,j", B="j") + "\nX[i,j] = max(A[i,j], B[j])\n"
              "N[i,j] = min(A[i,j], 0)\nexport X, N", A=A, B=B)
    close(out["X"], np.maximum(A, B[None, :]))
    close(out["N"], np.minimum(A, 0))


def test_builtin_argument_is_its_own_sum_scope(tmp_path):
    # every index only inside tanh's argument is summed there, even under max=
    A, B = rand(3, 4, 2), rand(4)
    out = run(tmp_path, sources(A="i,j,k", B="j") + "\nM[i] max= tanh(A[i,j,k] B[j])\nexport M",
              A=A, B=B)
    close(out["M"], np.tanh(np.einsum("ijk,j->i", A.astype(np.float64), B)))


def test_max_projects_the_rhs_scope_and_the_argument_sums(tmp_path):
    A, B, C = rand(3, 4), rand(4), rand(3, 5)
    out = run(tmp_path, sources(A="i,j", B="j", C="i,k") +
              "\nM[i] max= tanh(A[i,j] B[j]) C[i,k]\nexport M", A=A, B=B, C=C)
    inner = np.tanh(A.astype(np.float64) @ B)
    close(out["M"], (inner[:, None] * C).max(axis=1))


# --------------------------------------------------------------- §8 precision

def test_float32_by_default(tmp_path):
    X = rand(3, 4)
    out = run(tmp_path, sources(X="i,j") + "\nY[i] = X[i,j]\nS = sin(X[i,j])\n"
              "P[x/2] = Y[x]\nexport Y, S, P", X=X.astype(np.float64))
    for value in out.values():
        assert value.dtype == np.float32


def test_float64_on_request(tmp_path):
    X = rand(3, 4).astype(np.float64) + 1e-9  # beyond float32 resolution
    out = run(tmp_path, sources(X="i,j") + "\nY[i] = X[i,j]\nS[i,j] = sin(X[i,j])\n"
              "P[x/2] = Y[x]\nM[q,k] = causal_mask(2)\nexport Y, S, P, M", precision="fp64", X=X)
    for value in out.values():
        assert value.dtype == np.float64
    np.testing.assert_allclose(out["Y"], X.sum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(out["S"], np.sin(X), rtol=1e-14)


def test_boolean_tensors_hold_zero_one_in_float32(tmp_path):
    out = run(tmp_path, "Edge(A, B)\nEdge(B, C)\nR(x,y) = Edge(x,y)\nR(x,y) = Edge(x,y)\n"
              "export R")
    assert out["R"].dtype == np.float32
    assert set(np.unique(out["R"])) <= {0.0, 1.0}
    assert out["R"].sum() == 2


# ------------------------------------------------------------ §11 perceptron

def test_perceptron_gives_one(tmp_path):
    out = run(tmp_path, "W = const([0.2, 1.9, -0.7, 3])\nX = const([0, 1, 1, 0])\n"
              "Y = step(W[i] X[i])\nexport Y")
    assert out["Y"].shape == ()
    close(out["Y"], 1.0)


def test_perceptron_without_export_returns_y(tmp_path):
    out = run(tmp_path, "W = const([0.2, 1.9, -0.7, 3])\nX = const([0, 1, 1, 0])\n"
              "Y = step(W[i] X[i])")
    close(out["Y"], 1.0)


def test_execute_returns_run_result(tmp_path):
    out = fuse_lang.compile("A = const(2)\nB = A * 3\nB?\nexport B", base_dir=tmp_path).execute()
    assert isinstance(out, fuse_lang.RunResult)
    close(out.outputs["B"], 6)
    close(out.queries[0].value, 6)


def test_reduce_binds_its_indices_in_its_body_only(tmp_path):
    A, C = rand(3, 4), rand(4, seed=1)
    out = run(tmp_path, sources(A="i,j", C="j") +
              "\nY[i] = reduce(max, j) A[i,j] + C[j]\nexport Y", A=A, C=C)
    # j inside the reduce is maxed away; the j of C[j] is summed by `=`
    close(out["Y"], A.max(axis=1) + C.sum())


def test_constant_subexpressions_are_computed_once_and_never_overwritten(tmp_path):
    # `-1e9 * (1 - Mask)` and `sqrt(Dk)` depend on the program text only: an eager
    # run computes them once per input shapes; the runs after it reuse them, and
    # the in-place updates of a run's own results must never reach them
    text = sources(S="p,q") + """
Mask[p,q] = causal_mask(4)
Dk = const(16)
A[p,q] = S[p,q] / sqrt(Dk) - 1e9 * (1 - Mask[p,q])
B[p,q] = 1e9 * (1 - Mask[p,q]) + S[p,q]
C[p,q.] = softmax(S[p,q] - 1e9 * (1 - Mask[p,q]))
export A, B, C
"""
    mask = np.tri(4)
    program = fuse_lang.compile(text, backend="numpy", base_dir=tmp_path)
    for seed in range(3):
        S = np.random.default_rng(seed).standard_normal((4, 4)).astype(np.float32)
        np.save(tmp_path / "s.npy", S)
        out = program.run(inputs={"S": S})
        close(out["A"], S / 4 - 1e9 * (1 - mask))
        close(out["B"], 1e9 * (1 - mask) + S)
        masked = np.where(mask > 0, S, -np.inf)
        e = np.exp(masked - masked.max(axis=1, keepdims=True))
        close(out["C"], e / e.sum(axis=1, keepdims=True))
        out["A"][...] = 0  # what a run hands out is the caller's to change
