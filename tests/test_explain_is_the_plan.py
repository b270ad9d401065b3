"""`fuse explain` prints the contractions the run performs (issue 34, item 5):
its FLOPs equal those of the einsums the NumPy backend is asked for, counted by
the same convention (plan.contraction.contraction_path), for shifted (`t+1`,
`x+dx`), pooled (`x/2`, on either side), sliced, constant and recurrent
accesses, which the run gathers into one axis per free variable before joining.
And its summary counts the params and splits the memory by role."""
from __future__ import annotations

import json
import math
import operator
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.plan import contraction
from fuse_lang.run.backends.numpy_backend import NumpyBackend
from fuse_lang.run.interpret import evaluate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

CONV = """\
X[n,x,i] = "w/img.npy"
K1[o,dx,i] = "w/k1.npy"
C1[o] = "w/c1.npy"
H1[n,x,o] = relu(K1[o,dx,i] X[n,x+dx,i] + C1[o])
export H1
"""

# the conv, max-pooled over pairs of x, then a second conv over the pooled map
# (y only indexes a window of P1: its extent is declared)
POOLED = """\
axis y = 8
X[n,x,i] = "w/img.npy"
K1[o,dx,i] = "w/k1.npy"
C1[o] = "w/c1.npy"
K2[q,dy,o] = "w/k2.npy"
C2[q] = "w/c2.npy"
H1[n,x,o] = relu(K1[o,dx,i] X[n,x+dx,i] + C1[o])
P1[n,x/2,o] max= H1[n,x,o]
H2[n,y,q] = relu(K2[q,dy,o] P1[n,y+dy,o] + C2[q])
export H2
"""

# each access kind the run gathers or selects, with params (nothing to read)
ACCESSES = {
    "offset forward": "Y[t,j] = A[t+1,i] B[i,j]",
    "offset back": "Y[t,j] = A[t-1,i] B[i,j] + A[t,i] B[i,j]",
    "window with an offset": "Y[x,j] = K[dx,dy,i] F[x+dx-1,i] G[x+dx+dy,j]",
    "pooling read on the right": "Y[x,j] = F[x/2,i] B[i,j]",
    "pooling on the left": "P[x/2,j] = F[x,i] B[i,j]",
    "pooling both axes on the left": "Q[x/2,j/2] = F[x,i] G[x,j] B[i,j]",
    "constant": "Y[j] = A[2,i] B[i,j]",
    "slices": "Y[t] = S[t,i,2:5] B[i,1:4]",
    "diagonal": "Y[i] = D[t,i,i] A[t,i]",
    "two reads of one tensor": "Y[j] = S[t,i,j] A[t,i] A[t+1,i]",
}
ACCESS_PROGRAM = """\
axis t = 6, i = 4, j = 5, x = 8, dx = 3, dy = 2, m = 4
param A[t,i], B[i,j], F[x,i], K[dx,dy,i], G[x,j], S[t,i,j], D[t,i,m]
{equation}
export {tensor}
"""


def write_weights(folder: Path) -> None:
    rng = np.random.default_rng(0)
    (folder / "w").mkdir()
    for name, shape in {"img": (2, 16, 3), "k1": (4, 3, 3), "c1": (4,), "k2": (5, 2, 4),
                        "c2": (5,)}.items():
        np.save(folder / "w" / f"{name}.npy", rng.standard_normal(shape).astype(np.float32))


def explain_json(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


class Ran(list):
    """(spec, operand shapes) of every einsum the NumPy backend is asked for, and
    the elements of each elementwise product of two values with axes (a join the
    run broadcasts) and of each reduction's input (`sum`/`max`/... over an axis)."""

    def __init__(self) -> None:
        super().__init__()
        self.elementwise: list[int] = []
        self.reduced: list[int] = []


def einsums_run(monkeypatch, path: Path) -> Ran:
    """What the run computes while the program at `path` runs: each einsum the NumPy
    backend is asked for (the outermost call: count_einsum may call einsum), each
    elementwise product and each reduction of the evaluator (run.interpret.evaluate)."""
    asked = Ran()
    depth = [0]

    def recording(method):
        def spy(self, spec, *arrays):
            if depth[0] == 0:
                asked.append((spec, tuple(tuple(np.shape(a)) for a in arrays)))
            depth[0] += 1
            try:
                return method(self, spec, *arrays)
            finally:
                depth[0] -= 1
        return spy

    combine, project = evaluate.combine, evaluate.project

    def combining(backend, fn, *xs):
        out = combine(backend, fn, *xs)
        if fn in (operator.mul, operator.truediv) and all(x.axes for x in xs):
            asked.elementwise.append(int(np.size(out.data)))
        return out

    def projecting(backend, x, names, op):
        if any(a in names for a in x.axes):
            asked.reduced.append(int(np.size(x.data)))
        return project(backend, x, names, op)

    monkeypatch.setattr(NumpyBackend, "einsum", recording(NumpyBackend.einsum))
    monkeypatch.setattr(NumpyBackend, "count_einsum", recording(NumpyBackend.count_einsum))
    monkeypatch.setattr(evaluate, "combine", combining)
    monkeypatch.setattr(evaluate, "project", projecting)
    text = path.read_text(encoding="utf-8")
    program = fuse_lang.compile(text, backend="numpy", base_dir=path.parent, path=str(path))
    program.run()
    return asked


def flops_of(einsums: Ran) -> int:
    """The FLOPs explain counts (docs/cli.md): each einsum's by opt_einsum's
    convention, one multiply per element of each elementwise product, one addition
    or comparison per element reduced."""
    return sum(contraction.contraction_path(spec, shapes).flops for spec, shapes in einsums) \
        + sum(einsums.elementwise) + sum(einsums.reduced)


def assert_explain_counts_what_runs(monkeypatch, path: Path) -> dict:
    data = explain_json(path)
    ran = einsums_run(monkeypatch, path)
    assert ran or ran.elementwise or ran.reduced, "the program joins or reduces something"
    assert data["total_flops"] == flops_of(ran)
    contractions = [c for e in data["equations"] for c in e["contractions"]]
    # the same einsums (a recurrence asks for its einsum once per step)
    printed = {c["letters"] for c in contractions if c["kind"] == "einsum"}
    assert printed == {spec for spec, _ in ran}
    # as many elementwise products and reductions (once per step, for a recurrence)
    for kind, found in (("elementwise", ran.elementwise), ("reduce", ran.reduced)):
        assert bool([c for c in contractions if c["kind"] == kind]) == bool(found), kind
    return data


def test_the_conv_is_one_join_with_the_filter_taps_kept(monkeypatch, tmp_path):
    write_weights(tmp_path)
    path = tmp_path / "conv.fuse"
    path.write_text(CONV, encoding="utf-8")
    data = assert_explain_counts_what_runs(monkeypatch, path)
    (equation,) = [e for e in data["equations"] if e["tensor"] == "H1"]
    (c,) = equation["contractions"]
    # K1 over (o, dx, i), X gathered over (n, x, dx, i): dx is summed in the join,
    # not out of K1 alone before it
    assert c["letters"] == "abc,debc->dea"
    assert c["einsum"] == "K1[o,dx,i] X[n,x+dx,i] -> [n,x,o]"
    assert c["path"] == [[0, 1]] and len(c["steps"]) == 1
    assert "X[n,x+dx,i] as [n,x,dx,i]" in c["note"]
    ran = einsums_run(monkeypatch, path)
    assert ran == [(c["letters"], ((4, 3, 3), (2, 16, 3, 3)))]
    planned = contraction.contraction_path(c["letters"], ((4, 3, 3), (2, 16, 3, 3)))
    assert (c["flops"], c["naive_flops"], c["largest_intermediate"]) == \
        (planned.flops, planned.naive_flops, planned.largest_intermediate)
    # the gathered copy of X (2*16*3*3 elements) is made before the join and
    # counted in the memory estimate's peak beside the join's output
    assert c["gathered"] == 2 * 16 * 3 * 3
    assert data["run"]["memory"]["largest intermediate"] == \
        4 * (2 * 16 * 3 * 3 + planned.largest_intermediate)


def test_a_pooled_conv_then_a_conv_over_the_pooled_map(monkeypatch, tmp_path):
    write_weights(tmp_path)
    path = tmp_path / "pooled.fuse"
    path.write_text(POOLED, encoding="utf-8")
    data = assert_explain_counts_what_runs(monkeypatch, path)
    assert ["P1", [2, 8, 4]] in data["shapes"]
    (h2,) = [e for e in data["equations"] if e["tensor"] == "H2"]
    assert h2["contractions"][0]["einsum"] == "K2[q,dy,o] P1[n,y+dy,o] -> [n,y,q]"


def test_single_head_attention(monkeypatch):
    assert_explain_counts_what_runs(monkeypatch, EXAMPLES / "transformer.fuse")


@pytest.mark.parametrize("example", ["cnn", "rnn", "mlp", "attention"])
def test_examples_with_windows_pooling_and_recurrences(monkeypatch, example):
    assert_explain_counts_what_runs(monkeypatch, EXAMPLES / f"{example}.fuse")


@pytest.mark.parametrize("name", sorted(ACCESSES))
def test_each_access_kind(monkeypatch, tmp_path, name):
    equation = ACCESSES[name]
    path = tmp_path / "access.fuse"
    path.write_text(ACCESS_PROGRAM.format(equation=equation, tensor=equation.split("[")[0]),
                    encoding="utf-8")
    assert_explain_counts_what_runs(monkeypatch, path)


# each kind of product the run joins, elementwise or by einsum, and each reduction
PRODUCTS = {
    "an MLP with a nested relu": "Y[n,i] = relu(W2[i,h] relu(W1[h,j] X[n,j] + B1[h]))",
    "a product with a call factor": "Y[i] = A[i,j] exp(B[j])",
    "a divisor with axes": "Y[i] = A[i,j] / B[j]",
    "a divisor with axes, nothing summed": "Y[i,j] = A[i,j] / B[j]",
    "a negated product": "Y[i] = -(A[i,j] B[j])",
    "a negated factor": "Y[i] = - A[i,j] B[j]",
    "a negated product of a log": "Y[n] = -(log(P[n,c]) T[n,c])",
    "a parenthesised product": "Y[i] = (A[i,j] B[j]) E[i]",
    "a product under a divisor": "Y[i] = E[i] / (A[i,j] B[j])",
    "a power of a product": "Y[i] = (A[i,j] B[j])^2",
    "a single-reference projection": "Y[i] = A[i,j]",
    "a projection per term": "Y[i] = A[i,j] B[j] + A[i,j]",
    "a max= product": "Y[j] max= A[i,j] B[j]",
    "an avg= reference": "Y avg= A[i,j]",
    "a product with nothing summed": "Y[i,j] = E[i] B[j]",
    "a reduce of a product": "Y[i] = reduce(max, j) A[i,j] B[j]",
}
PRODUCT_PROGRAM = """\
axis i = 3, j = 4, h = 5, n = 2, c = 6
param A[i,j], B[j], E[i], W1[h,j], W2[i,h], X[n,j], B1[h], P[n,c], T[n,c]
{equation}
export {tensor}
"""


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_each_kind_of_product(monkeypatch, tmp_path, name):
    equation = PRODUCTS[name]
    path = tmp_path / "product.fuse"
    tensor = equation.split("[")[0].split()[0]
    path.write_text(PRODUCT_PROGRAM.format(equation=equation, tensor=tensor),
                    encoding="utf-8")
    assert_explain_counts_what_runs(monkeypatch, path)


def test_the_mlp_joins_the_second_layer_with_the_first_layers_value(monkeypatch, tmp_path):
    path = tmp_path / "mlp.fuse"
    equation = PRODUCTS["an MLP with a nested relu"]
    path.write_text(PRODUCT_PROGRAM.format(equation=equation, tensor="Y"), encoding="utf-8")
    data = assert_explain_counts_what_runs(monkeypatch, path)
    (eq,) = [e for e in data["equations"] if e["tensor"] == "Y"]
    # the first layer's join, then the second layer's with the relu's value over (n, h)
    assert [c["einsum"] for c in eq["contractions"]] == [
        "W1[h,j] X[n,j] -> [n,h]", "W2[i,h] relu(W1[h,j] X[n,j] + B1[h]) -> [n,i]"]
    assert [c["letters"] for c in eq["contractions"]] == ["ab,cb->ca", "ab,cb->ca"]


def test_a_max_product_is_an_elementwise_product_then_a_reduction(monkeypatch, tmp_path):
    path = tmp_path / "max.fuse"
    path.write_text(PRODUCT_PROGRAM.format(equation=PRODUCTS["a max= product"], tensor="Y"),
                    encoding="utf-8")
    data = assert_explain_counts_what_runs(monkeypatch, path)
    (eq,) = [e for e in data["equations"] if e["tensor"] == "Y"]
    product, reduce = eq["contractions"]
    assert (product["kind"], product["flops"]) == ("elementwise", 3 * 4)
    assert (reduce["kind"], reduce["flops"], reduce["then_project"]) == \
        ("reduce", 3 * 4, [["i", "max"]])


def test_the_char_transformer_and_its_loss(monkeypatch, tmp_path):
    data = assert_explain_counts_what_runs(monkeypatch, write_chars(tmp_path))
    (ce,) = [e for e in data["equations"] if e["tensor"] == "CE"]
    (c,) = ce["contractions"]  # -(log(P) T) summed over c: one einsum, negated
    assert c["kind"] == "einsum" and c["letters"] == "abc,abc->ab"
    (loss,) = [e for e in data["equations"] if e["tensor"] == "L"]
    assert [c["kind"] for c in loss["contractions"]] == ["reduce"]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.fuse")))
def test_every_example(monkeypatch, example):
    path = EXAMPLES / example
    data = explain_json(path)
    if not any("fixpoint" in how or "until" in how for _, how in data["recursion"]):
        assert_explain_counts_what_runs(monkeypatch, path)
        return
    # a fixpoint runs its group's joins once per round, as many rounds as it takes:
    # explain counts one round, so the run asks for the same einsums, more often
    ran = einsums_run(monkeypatch, path)
    contractions = [c for e in data["equations"] for c in e["contractions"]]
    assert {c["letters"] for c in contractions if c["kind"] == "einsum"} == \
        {spec for spec, _ in ran}
    assert data["total_flops"] <= flops_of(ran)


def test_the_char_transformer_example(monkeypatch, tmp_path):
    """examples/training/char_transformer.fuse on a little of its data (a window
    of 64 positions, as its slices read).  Explain counts every equation, the loss
    too (a training step computes it); a run computes what its exports need, so
    the copy exports the loss beside P."""
    source = EXAMPLES / "training"
    text = (source / "char_transformer.fuse").read_text(encoding="utf-8")
    assert text.rstrip().endswith("\nexport P")
    (tmp_path / "char_transformer.fuse").write_text(text.rstrip() + ", L\n", encoding="utf-8")
    subprocess.run([sys.executable, str(source / "make_chars.py"), str(tmp_path),
                    "--chars", "2000"], check=True, capture_output=True, timeout=120)
    assert_explain_counts_what_runs(monkeypatch, tmp_path / "char_transformer.fuse")


# a small char_transformer.fuse: one block, its params' shapes from the axes below
AXES = {"c": 6, "p": 8, "d": 16, "h": 2, "k": 4, "f": 32}
PARAMS = {"Emb": "c,d", "Pos": "p,d", "WQ": "h,k,d", "WK": "h,k,d", "WV": "h,k,d",
          "WO": "d,h,k", "U": "f,d", "BU": "f", "D": "d,f", "Out": "c,d", "BOut": "c"}
CHARS = """\
C[n,w,c] = "chars.npy"
X[n,:,c] = C[n,0:8,c]
T[n,:,c] = C[n,1:9,c]
axis d = {d}, h = {h}, k = {k}, f = {f}
Dk = const({k})
Mask[p,p'] = causal_mask({p})
{params}
X0[n,p,d] = Emb[c,d] X[n,p,c] + Pos[p,d]
A[n,p,d.] = lnorm(X0[n,p,d])
Q[n,h,p,k] = WQ[h,k,d] A[n,p,d]
K[n,h,p,k] = WK[h,k,d] A[n,p,d]
V[n,h,p,k] = WV[h,k,d] A[n,p,d]
S[n,h,p,p'.] = softmax(Q[n,h,p,k] K[n,h,p',k] / sqrt(Dk) - 1e9 * (1 - Mask[p,p']))
O[n,h,p,k] = S[n,h,p,p'] V[n,h,p',k]
X1[n,p,d] = X0[n,p,d] + WO[d,h,k] O[n,h,p,k]
F[n,p,f] = gelu(U[f,d] X1[n,p,d] + BU[f])
Y[n,p,d] = X1[n,p,d] + D[d,f] F[n,p,f]
P[n,p,c.] = softmax(Out[c,d] Y[n,p,d] + BOut[c])
CE[n,p] = -(log(P[n,p,c]) T[n,p,c])
L avg= CE[n,p]
train L
export P, L
"""
WINDOWS = 3


def write_chars(folder: Path) -> Path:
    letters = np.random.default_rng(1).integers(0, AXES["c"], size=(WINDOWS, AXES["p"] + 1))
    np.save(folder / "chars.npy", np.eye(AXES["c"], dtype=np.float32)[letters])
    params = "\n".join(f"param {name}[{axes}]" for name, axes in PARAMS.items())
    path = folder / "chars.fuse"
    path.write_text(CHARS.format(params=params, **AXES), encoding="utf-8")
    return path


def test_the_summary_counts_params_and_splits_the_memory(tmp_path):
    path = write_chars(tmp_path)
    count = sum(math.prod(AXES[a] for a in axes.split(",")) for axes in PARAMS.values())
    data = explain_json(path)
    assert data["parameters"] == count
    memory = data["run"]["memory"]
    itemsize = 4  # float32: the default precision
    assert memory["params"] == count * itemsize
    shapes = {name: shape for name, shape in data["shapes"]}
    computed = {e["tensor"] for e in data["equations"]}
    assert memory["activations"] == itemsize * sum(math.prod(shapes[n]) for n in computed)
    assert memory["inputs"] == itemsize * math.prod(shapes["C"])  # the one source
    assert memory["params"] + memory["inputs"] + memory["activations"] == memory["tensors"]
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(k for k, line in enumerate(lines) if line.strip().startswith("memory: about"))
    assert lines[at + 1].strip().startswith(f"params: {count:,} (")
    assert "activations: " in lines[at + 1]


def test_a_program_without_params_says_none(tmp_path):
    write_weights(tmp_path)
    path = tmp_path / "conv.fuse"
    path.write_text(CONV, encoding="utf-8")
    data = explain_json(path)
    assert data["parameters"] == 0 and data["run"]["memory"]["params"] == 0
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert "params: none; other inputs: " in proc.stdout
