"""An ML user's mistakes are reported where they are made (issue 34): a lone
index summed within one term or factor (`lone-index`), a softmax summed along
the axis it normalises (`normalised-sum`), and an extent conflict placed at the
reference where the two uses meet, once per root cause, with the files as
related places — through `fuse check` (text and JSON) and `analyze`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuse_lang import analyze

ROOT = Path(__file__).resolve().parent.parent

# A 4-head transformer encoder block, weights from files (the shapes say the extents).
BLOCK = """\
X[b,t,d] = "w/x.npy"
WQ[h,k,d] = "w/wq.npy"
WK[h,k,d] = "w/wk.npy"
WV[h,k,d] = "w/wv.npy"
WO[d,h,k] = "w/wo.npy"
W1[f,d] = "w/w1.npy"
B1[f] = "w/b1.npy"
W2[d,f] = "w/w2.npy"
axis h = 4, k = 8
Q[b,h,t,k] = WQ[h,k,d] X[b,t,d]
K[b,h,t,k] = WK[h,k,d] X[b,t,d]
V[b,h,t,k] = WV[h,k,d] X[b,t,d]
S[b,h,t,t'.] = softmax(Q[b,h,t,k] K[b,h,t',k] / sqrt(8))
O[b,h,t,k] = S[b,h,t,t'] V[b,h,t',k]
A[b,t,d.] = lnorm(X[b,t,d] + WO[d,h,k] O[b,h,t,k])
H1[b,t,f] = relu(W1[f,d] A[b,t,d] + B1[f])
Y[b,t,d.] = lnorm(A[b,t,d] + W2[d,f] H1[b,t,f])
export Y
"""
SHAPES = {"x": (2, 5, 32), "wq": (4, 8, 32), "wk": (4, 8, 32), "wv": (4, 8, 32),
          "wo": (32, 4, 8), "w1": (64, 32), "b1": (64,), "w2": (32, 64)}


@pytest.fixture
def block(tmp_path):
    (tmp_path / "w").mkdir()
    rng = np.random.default_rng(0)
    for name, shape in SHAPES.items():
        np.save(tmp_path / "w" / f"{name}.npy", rng.normal(size=shape).astype(np.float32))

    def write(old: str = "", new: str = "") -> Path:
        text = BLOCK.replace(old, new) if old else BLOCK
        assert text != BLOCK or not old
        path = tmp_path / "block.fuse"
        path.write_text(text, encoding="utf-8")
        return path
    return write


def check_json(path: Path) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "--format", "json",
                           str(path)], capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["diagnostics"]


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of `path` holding `needle`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def test_the_block_checks_clean(block):
    assert check_json(block()) == []


# --------------------------------------------------------------- lone indices
def test_a_typo_in_a_bias_index_is_a_warning_at_the_typo(block):
    path = block("+ B1[f])", "+ B1[g])")
    (diag,) = check_json(path)
    assert diag["code"] == "lone-index" and diag["severity"] == "warning"
    assert diag["line"] == line_of(path, "B1[g]")
    assert "`g`" in diag["message"] and "did you mean `f`" in diag["message"]
    text = path.read_text(encoding="utf-8")
    rename, explicit = diag["fixes"]
    assert rename["title"] == "Change `g` to `f`"
    (edit,) = rename["edits"]
    assert text[edit["start"]:edit["end"]] == "g" and edit["new_text"] == "f"
    # writing the sum out says it is meant: clean
    fixed = apply(text, explicit["edits"])
    assert "(reduce(sum, g) B1[g])" in fixed
    path.write_text(fixed, encoding="utf-8")
    assert check_json(path) == []


def apply(text: str, edits: list[dict]) -> str:
    for edit in sorted(edits, key=lambda e: e["start"], reverse=True):
        text = text[:edit["start"]] + edit["new_text"] + text[edit["end"]:]
    return text


def test_the_fix_picks_the_index_of_the_same_extent():
    # b (2) and f (3) are both on the left; B's axis has 3: `f`, though `b` is listed first
    text = ("W = const([[1,2],[3,4],[5,6]])\nX = const([[1,2],[3,4]])\nB = const([1,2,3])\n"
            "H[b,f] = W[f,d] X[b,d] + B[c]")
    (diag,) = [d for d in analyze(text).diagnostics if d.code == "lone-index"]
    assert diag.fixes[0].title == "Change `c` to `f`"


def test_a_factor_that_shares_no_index_is_a_warning():
    text = "W = const([[1,2],[3,4]])\nX = const([1,2])\nB = const([1,2])\nY[i] = W[i,j] X[j] B[k]"
    a = analyze(text)
    (diag,) = [d for d in a.diagnostics if d.code == "lone-index"]
    assert "shares no index with the rest of its product" in diag.message
    assert a.lines.position(diag.span.start) == (3, 21)


@pytest.mark.parametrize("text", [
    "P = const([[1,2],[3,4]])\nS[o] = P[b,o]",                           # a projection
    "P = const([[1,2],[3,4]])\nM[o] max= P[b,o]",                        # by max
    "A = const([[1,2],[3,4]])\nB = const([[1,2],[3,4]])\nM[x] = A[x,y] B[y,z]",  # a marginal
    "A = const([[1,2],[3,4]])\nB = const([1,2])\nS[i] = reduce(sum, j) A[i,j] + B[i]",
    "A = const([[1,2],[3,4]])\nB = const([1,2])\nS[i] = A[i,j] + B[i]",  # a row sum
    "A = const([[1,2],[3,4]])\nY[i] = A[i,j] + A[i,k]",                 # two row sums
    "Parent(A, B)\nParent(B, C)\nHas(x) = Parent(x, y) + Parent(y, x)",  # Datalog
    "E(A, B)\nR(x) = E(x, y) E(z, w)",                                     # Datalog exists
])
def test_deliberate_projections_stay_clean(text):
    codes = {d.code for d in analyze(text).diagnostics}
    assert not codes & {"lone-index", "normalised-sum"}, codes


def test_attention_that_never_reads_the_key_index_is_a_hint(block):
    path = block("V[b,h,t',k]\n", "V[b,h,t,k]\n")
    (diag,) = check_json(path)
    assert diag["code"] == "normalised-sum" and diag["severity"] == "hint"
    assert diag["line"] == line_of(path, "O[b,h,t,k] =")
    (fix,) = diag["fixes"]
    assert "`t` to `t'`" in fix["title"]
    path.write_text(apply(path.read_text(encoding="utf-8"), fix["edits"]), encoding="utf-8")
    assert check_json(path) == []


# --------------------------------------------------------------- conflicts at the join
def test_a_weight_transposed_at_its_use_is_one_error_at_the_use(block):
    path = block("W1[f,d] A[b,t,d]", "W1[d,f] A[b,t,d]")
    (diag,) = check_json(path)
    assert diag["code"] == "extent-conflict"
    assert diag["line"] == line_of(path, "W1[d,f] A")  # the use, not the weight file
    assert "`d` has extent 32 in this equation" in diag["message"]
    assert "axis 0 of `W1`, of extent 64" in diag["message"]
    related = {(r["line"], r["message"]) for r in diag["related"]}
    assert (line_of(path, "w/w1.npy"), "extent 64 from the shape of w/w1.npy") in related
    assert all({"end_line", "end_column"} <= r.keys() for r in diag["related"])
    (swap,) = diag["fixes"]
    assert swap["title"] == "Swap to `W1[f,d]`"
    path.write_text(apply(path.read_text(encoding="utf-8"), swap["edits"]), encoding="utf-8")
    assert check_json(path) == []


def test_a_wrong_axis_declaration_is_one_error_per_declared_extent(block):
    path = block("axis h = 4, k = 8", "axis h = 8, k = 4")
    diags = check_json(path)
    assert [d["code"] for d in diags] == ["extent-conflict", "extent-conflict"]
    decl = line_of(path, "axis h = 8")
    assert [d["line"] for d in diags] == [decl, decl]
    assert "extent 8 from axis h = 8" in diags[0]["message"]
    # every weight file with an h axis is a related place of the one error
    files = {r["message"] for r in diags[0]["related"]}
    assert files == {f"extent 4 from the shape of w/{n}.npy" for n in ("wq", "wk", "wv", "wo")}


def test_text_output_shows_the_join_line(block):
    path = block("W1[f,d] A[b,t,d]", "W1[d,f] A[b,t,d]")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert f"block.fuse:{line_of(path, 'W1[d,f] A')}:" in proc.stdout
    assert "note: extent 64 from the shape of w/w1.npy" in proc.stdout
    assert proc.stdout.count("error[extent-conflict]") == 1


# --------------------------------------------------------------- extents through pooling
POOLED = """\
X[n,x,i] = "img.npy"
K1[o,dx,i] = "k1.npy"
K2[o2,dy,o] = "k2.npy"
H1[n,x,o] = relu(K1[o,dx,i] X[n,x+dx,i])
P1[n,x/2,o] max= H1[n,x,o]
H2[n,y,o2] = relu(K2[o2,dy,o] P1[n,y+dy,o])
P2[n,y/2,o2] max= H2[n,y,o2]
export P2
"""


def test_extents_flow_through_pooling_into_the_next_window(tmp_path):
    rng = np.random.default_rng(1)
    for name, shape in {"img": (2, 15, 3), "k1": (4, 3, 3), "k2": (5, 3, 4)}.items():
        np.save(tmp_path / f"{name}.npy", rng.normal(size=shape).astype(np.float32))
    a = analyze(POOLED, str(tmp_path / "p.fuse"))
    assert [d for d in a.diagnostics if d.severity.value == "error"] == []
    shapes = {name: a.tensors[name].shape for name in ("H1", "P1", "H2", "P2")}
    # ⌈15/2⌉ = 8, the window index y takes P1's 8, then ⌈8/2⌉ = 4
    assert shapes == {"H1": (2, 15, 4), "P1": (2, 8, 4), "H2": (2, 8, 5), "P2": (2, 4, 5)}


def test_an_extent_nothing_gives_is_an_error_at_check():
    # (not first at `fuse train`: "the extent of `H`'s axis y is not known")
    a = analyze("K = const([[1,2],[3,4]])\nH[y,o] = K[o,dx]\nexport H")
    assert [d.code for d in a.diagnostics if d.severity.value == "error"] == ["unsized-tensor"]
