"""The planner through its public entry points: `fuse_lang.plan_program` and
`fuse explain --format json` — einsum strings, costs equal to opt_einsum's,
projection operators and scopes, and unknown extents."""
from __future__ import annotations

import json
import subprocess
import sys

import opt_einsum
import pytest

import fuse_lang
from fuse_lang import Severity


def plan(text: str) -> fuse_lang.ProgramPlan:
    analysis = fuse_lang.analyze(text, None)
    assert not [d for d in analysis.diagnostics if d.severity is Severity.ERROR], \
        analysis.diagnostics
    return fuse_lang.plan_program(analysis)


def equation(text: str, tensor: str):
    found = [e for e in plan(text).equations if e.tensor == tensor]
    assert len(found) == 1
    return found[0]


def explain_json(tmp_path, text: str) -> dict:
    path = tmp_path / "program.fuse"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def json_equation(data: dict, tensor: str) -> dict:
    found = [e for e in data["equations"] if e["tensor"] == tensor]
    assert len(found) == 1
    return found[0]


MATMUL = """\
axis i = 2, j = 3, k = 4
param A[i,j], B[j,k]
Y[i,k] = A[i,j] B[j,k]
export Y
"""

CHAIN = """\
axis i = 10, j = 200, k = 3, l = 150
param A[i,j], B[j,k], C[k,l]
Y[i,l] = A[i,j] B[j,k] C[k,l]
export Y
"""


# ------------------------------------------------------------------ einsum


def test_matmul_einsum_letters():
    eq = equation(MATMUL, "Y")
    (c,) = eq.contractions
    assert c.letters == "ab,bc->ac"
    assert c.operands == ("A", "B")
    assert c.einsum == "A[i,j] B[j,k] -> [i,k]"
    assert eq.output == ("i", "k")
    assert eq.joined == ("j",)
    assert eq.projected == (("j", "sum", "right-hand side"),)


def test_matmul_einsum_letters_in_json(tmp_path):
    eq = json_equation(explain_json(tmp_path, MATMUL), "Y")
    (c,) = eq["contractions"]
    assert c["letters"] == "ab,bc->ac"
    assert eq["projected"] == [["j", "sum", "right-hand side"]]
    extents = {ix["name"]: ix["extent"] for ix in eq["indices"]}
    assert extents == {"i": 2, "j": 3, "k": 4}


def test_einsum_output_follows_the_lhs_axis_order():
    text = "axis i = 2, j = 3, k = 4\nparam A[i,j], B[j,k]\nY[k,i] = A[i,j] B[j,k]\nexport Y\n"
    (c,) = equation(text, "Y").contractions
    assert c.letters == "ab,bc->ca"
    assert c.einsum.endswith("-> [k,i]")


def test_the_letters_string_is_a_valid_numpy_einsum():
    np = pytest.importorskip("numpy")
    (c,) = equation(MATMUL, "Y").contractions
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(np.einsum(c.letters, a, b), a @ b)


# ------------------------------------------------------------------- costs


@pytest.mark.parametrize("text,shapes", [
    (MATMUL, [(2, 3), (3, 4)]),
    (CHAIN, [(10, 200), (200, 3), (3, 150)]),
])
def test_costs_equal_opt_einsum(text, shapes):
    eq = equation(text, "Y")
    (c,) = eq.contractions
    path, info = opt_einsum.contract_path(c.letters, *shapes, shapes=True, optimize="auto")
    assert c.flops == int(info.opt_cost)
    assert c.naive_flops == int(info.naive_cost)
    assert c.largest_intermediate == int(info.largest_intermediate)
    assert c.path == tuple(tuple(p) for p in path)
    assert eq.flops == c.flops
    assert eq.largest_intermediate == c.largest_intermediate


def test_costs_in_json_equal_opt_einsum(tmp_path):
    data = explain_json(tmp_path, CHAIN)
    eq = json_equation(data, "Y")
    (c,) = eq["contractions"]
    assert c["letters"] == "ab,bc,cd->ad"
    _, info = opt_einsum.contract_path("ab,bc,cd->ad", (10, 200), (200, 3), (3, 150),
                                       shapes=True, optimize="auto")
    assert c["flops"] == int(info.opt_cost)
    assert c["largest_intermediate"] == int(info.largest_intermediate)
    assert eq["flops"] == int(info.opt_cost)
    assert data["total_flops"] == int(info.opt_cost)
    # the chosen order is cheaper than the naive one for these shapes
    assert c["flops"] < c["naive_flops"]


# ------------------------------------------------------------- projections

PROJECTIONS = """\
axis b = 3, o = 4
param P[b,o]
M[o] max= P[b,o]
N[o] avg= P[b,o]
L[o] min= P[b,o]
export M, N, L
"""


@pytest.mark.parametrize("tensor,op", [("M", "max"), ("N", "avg"), ("L", "min")])
def test_projection_operators_are_labelled(tensor, op):
    eq = equation(PROJECTIONS, tensor)
    assert eq.projected == (("b", op, "right-hand side"),)
    b = next(ix for ix in eq.indices if ix.name == "b")
    assert (b.role, b.op, b.extent) == ("projected", op, 3)


def test_projection_operators_in_json(tmp_path):
    data = explain_json(tmp_path, PROJECTIONS)
    assert json_equation(data, "M")["projected"] == [["b", "max", "right-hand side"]]
    assert json_equation(data, "N")["projected"] == [["b", "avg", "right-hand side"]]


def test_max_projection_is_not_summed_by_an_einsum():
    text = "axis b = 3, o = 4\nparam P[b,o], Q[b,o]\nM[o] max= P[b,o] Q[b,o]\nexport M\n"
    # the run multiplies elementwise (b kept), then takes the max over b
    product, reduce = equation(text, "M").contractions
    assert (product.kind, product.einsum, product.flops) == \
        ("elementwise", "P[b,o] Q[b,o] -> [b,o]", 12)
    assert (reduce.kind, reduce.then_project, reduce.flops) == ("reduce", (("b", "max"),), 12)


def test_reduce_max_is_labelled():
    text = "axis i = 3, j = 4\nparam A[i,j], B[j]\nY[i] = reduce(max, j) A[i,j] B[j]\nexport Y\n"
    eq = equation(text, "Y")
    assert len(eq.projected) == 1
    name, op, scope = eq.projected[0]
    assert (name, op) == ("j", "max")
    assert scope.startswith("reduce(max")
    product, reduce = eq.contractions  # summing j in an einsum would be wrong
    assert (product.kind, product.einsum) == ("elementwise", "A[i,j] B[j] -> [i,j]")
    assert (reduce.kind, reduce.then_project) == ("reduce", (("j", "max"),))


def test_reduce_sum_is_contracted():
    text = "axis i = 3, j = 4\nparam A[i,j], B[j]\nY[i] = reduce(sum, j) A[i,j] B[j]\nexport Y\n"
    eq = equation(text, "Y")
    assert eq.projected[0][:2] == ("j", "sum")
    assert [c.letters for c in eq.contractions] == ["ab,b->a"]


def test_projection_inside_a_call_argument():
    text = "axis i = 3, j = 4\nparam W[i,j], X[j]\nY[i] = relu(W[i,j] X[j])\nexport Y\n"
    eq = equation(text, "Y")
    assert eq.projected == (("j", "sum", "argument of relu"),)
    (c,) = eq.contractions
    assert c.letters == "ab,b->a"


def test_projection_inside_a_call_argument_in_json(tmp_path):
    text = "axis i = 3, j = 4\nparam W[i,j], X[j]\nY[i] = relu(W[i,j] X[j])\nexport Y\n"
    eq = json_equation(explain_json(tmp_path, text), "Y")
    j = next(ix for ix in eq["indices"] if ix["name"] == "j")
    assert (j["role"], j["op"], j["scope"]) == ("projected", "sum", "argument of relu")
    assert j["joined"] is True and j["factors"] == ["W", "X"]


def test_nested_arguments_project_in_the_innermost_scope():
    text = ("axis i = 2, h = 3, j = 4\nparam W1[h,j], W2[i,h], X[j]\n"
            "Y[i] = relu(W2[i,h] relu(W1[h,j] X[j]))\nexport Y\n")
    eq = equation(text, "Y")
    assert dict((n, s) for n, _, s in eq.projected) == {"j": "argument of relu",
                                                        "h": "argument of relu"}
    # W1 X in the inner argument, then W2 joined with the inner relu's value over h
    assert [c.einsum for c in eq.contractions] == [
        "W1[h,j] X[j] -> [h]", "W2[i,h] relu(W1[h,j] X[j]) -> [i]"]
    assert [c.letters for c in eq.contractions] == ["ab,b->a", "ab,b->a"]


def test_per_term_projection():
    text = "axis i = 3, j = 4\nparam A[i,j], B[i]\nS[i] = A[i,j] + B[i]\nexport S\n"
    eq = equation(text, "S")
    assert eq.projected == (("j", "sum", "right-hand side"),)
    j = next(ix for ix in eq.indices if ix.name == "j")
    assert j.factors == ("A",) and not j.joined
    (c,) = eq.contractions  # only A's term is summed over j; B[i] is read once
    assert c.operands == ("A",)
    # a reduction, one addition per element reduced
    assert (c.kind, c.einsum, c.then_project, c.flops) == \
        ("reduce", "A[i,j] -> [i]", (("j", "sum"),), 3 * 4)


def test_per_term_projection_when_both_terms_mention_the_index():
    text = ("axis i = 3, j = 4\nparam A[i,j], C[j], B[i,j]\n"
            "S[i] = A[i,j] C[j] + B[i,j]\nexport S\n")
    eq = equation(text, "S")
    assert [(c.kind, c.letters) for c in eq.contractions] == [
        ("einsum", "ab,b->a"), ("reduce", "")]


def test_per_term_projection_inside_a_call_argument():
    text = ("axis i = 3, j = 4, t = 5\nparam W[i,j], X[j,t], V[i,j], U[j,t]\n"
            "H[i,t] = sig(W[i,j] X[j,t] + V[i,j] U[j,t])\nexport H\n")
    eq = equation(text, "H")
    assert eq.projected == (("j", "sum", "argument of sig"),)
    assert [c.letters for c in eq.contractions] == ["ab,bc->ac", "ab,bc->ac"]


def test_an_index_shared_with_a_call_is_not_summed_early():
    text = "axis i = 3, j = 4\nparam A[i,j], B[j]\nY[i] = A[i,j] exp(B[j])\nexport Y\n"
    eq = equation(text, "Y")
    assert eq.projected == (("j", "sum", "right-hand side"),)
    # A[i,j] joined with exp's value over j
    assert [(c.letters, c.einsum) for c in eq.contractions] == [
        ("ab,b->a", "A[i,j] exp(B[j]) -> [i]")]


# --------------------------------------------------------- unknown extents

UNKNOWN = "param A[i,j], B[j,k]\nY[i,k] = A[i,j] B[j,k]\nexport Y\n"


def test_unknown_extents_are_none():
    p = plan(UNKNOWN)
    (eq,) = p.equations
    assert {ix.name: ix.extent for ix in eq.indices} == {"i": None, "j": None, "k": None}
    (c,) = eq.contractions
    assert c.letters == "ab,bc->ac"
    assert c.flops is None and c.naive_flops is None and c.largest_intermediate is None
    assert c.note
    assert eq.flops is None and eq.largest_intermediate is None
    assert p.total_flops is None
    assert dict(p.shapes)["Y"] == (None, None)


def test_unknown_extents_in_json_and_text(tmp_path):
    data = explain_json(tmp_path, UNKNOWN)
    eq = json_equation(data, "Y")
    assert all(ix["extent"] is None for ix in eq["indices"])
    assert eq["contractions"][0]["flops"] is None
    assert data["total_flops"] is None
    path = tmp_path / "program.fuse"
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "?" in proc.stdout


def test_partly_known_extents():
    text = "axis i = 3\nparam A[i,j], B[j]\nY[i] = A[i,j] B[j]\nexport Y\n"
    (eq,) = plan(text).equations
    assert {ix.name: ix.extent for ix in eq.indices} == {"i": 3, "j": None}
    assert eq.contractions[0].flops is None


def test_plan_survives_a_program_with_errors():
    text = "Y[i] = A[i,j] Undefined[j]\nZ[i] = relu(\nexport Y\n"
    analysis = fuse_lang.analyze(text, None)
    assert analysis.has_errors
    p = fuse_lang.plan_program(analysis)
    assert [e.tensor for e in p.equations] == ["Y"]


def test_explain_json_carries_the_diagnostics(tmp_path):
    data = explain_json(tmp_path, MATMUL)
    assert data["diagnostics"] == []
    assert data["order"] and data["recursive_groups"] == []
    assert ["Y", [2, 4]] in data["shapes"]


# ------------------------------------------------------------------ slices


def sliced_equation(tmp_path, rhs: str):
    np = pytest.importorskip("numpy")
    np.save(tmp_path / "w.npy", np.zeros((3, 4), dtype=np.float32))
    text = f'W[i,j] = "w.npy"\n{rhs}\nexport Y\n'
    analysis = fuse_lang.analyze(text, str(tmp_path / "program.fuse"))
    assert not analysis.has_errors, analysis.diagnostics
    (eq,) = [e for e in fuse_lang.plan_program(analysis).equations if e.tensor == "Y"]
    return eq


def test_slices_are_costed_from_their_bounds_and_the_axis(tmp_path):
    eq = sliced_equation(tmp_path, "Y[i] = W[i, 2:] W[i, :2]")
    (c,) = eq.contractions
    assert c.letters == "ab,ab->a"  # the unmatched slice is projected
    _, info = opt_einsum.contract_path("ab,ab->a", (3, 2), (3, 2), shapes=True)
    assert c.flops == int(info.opt_cost)
    assert c.largest_intermediate == int(info.largest_intermediate)


def test_a_slice_matched_on_the_lhs_is_kept(tmp_path):
    eq = sliced_equation(tmp_path, "Y[i,:] = W[i, 2:] W[i, 0:2]")
    (c,) = eq.contractions  # nothing summed: the run multiplies elementwise
    assert (c.kind, c.einsum) == ("elementwise", "W[i,2:] W[i,0:2] -> [i,:0]")
    assert c.largest_intermediate == 6 and c.flops == 6


def test_a_slice_under_max_is_not_summed(tmp_path):
    eq = sliced_equation(tmp_path, "Y[i] max= W[i, 1:3] W[i, 0:2]")
    product, reduce = eq.contractions
    assert product.kind == "elementwise"
    assert (reduce.kind, reduce.then_project) == ("reduce", ((":0", "max"),))


NESTED = "axis i = 3, j = 4\nparam A[i,j], B[j], C[j], D[i], E[i]\nY[i] = {}\nexport Y\n"


@pytest.mark.parametrize("rhs,einsums", [
    # A[i,j] joined with the sum's value over j
    ("A[i,j] (B[j] + C[j])", ["A[i,j] (B[j] + C[j]) -> [i]"]),
    ("(A[i,j] B[j]) E[i]", ["A[i,j] B[j] E[i] -> [i]"]),  # one product: one einsum
    # not linear: multiplied elementwise, summed after the power
    ("(A[i,j] B[j])^2", ["A[i,j] B[j] -> [i,j]", "(A[i,j] B[j])^2 -> [i]"]),
    # a divisor is not linear: multiplied elementwise, then joined as 1/(A B)
    ("E[i] / (A[i,j] B[j])", ["A[i,j] B[j] -> [i,j]", "E[i] / (A[i,j] B[j]) -> [i]"]),
    ("-(A[i,j] B[j]) + D[i]", ["A[i,j] B[j] -> [i]"]),
    ("A[i,j] C[j] + A[i,j]", ["A[i,j] C[j] -> [i]", "A[i,j] -> [i]"]),
])
def test_a_sum_is_taken_inside_a_product_only_where_that_is_exact(rhs, einsums):
    eq = equation(NESTED.format(rhs), "Y")
    assert [c.einsum for c in eq.contractions] == einsums
