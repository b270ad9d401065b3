"""Huge numbers and deep nesting (issue 19, docs/limits.md): each is a diagnostic
with a range, never a traceback; sizes are exact integers everywhere."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fuse_lang

HANG_GUARD = 120
DIGITS_5000 = "9" * 5000
E400 = "1" + "0" * 400


def fuse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], capture_output=True,
                          text=True, encoding="utf-8", errors="replace", cwd=cwd,
                          timeout=HANG_GUARD)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert "internal error" not in proc.stderr, proc.stderr[-3000:]
    return proc


def codes(text: str) -> list[str]:
    analysis = fuse_lang.analyze(text)
    for d in analysis.diagnostics:
        assert 0 <= d.span.start <= d.span.end <= len(text), d
    return [d.code for d in analysis.diagnostics]


def test_a_5000_digit_number_is_a_diagnostic_and_the_other_statements_are_checked():
    for text in (f"axis i = 3\nparam X[i]\nY = X[{DIGITS_5000}]\nZ = nothing\n",
                 f"axis i = {DIGITS_5000}\nparam A[i]\nZ = nothing\n",
                 f"Y = {DIGITS_5000} + 1\nZ = nothing\n", f"Y = {DIGITS_5000}.5e3\nZ = nothing\n"):
        found = codes(text)
        assert "number-too-long" in found and "undefined-tensor" in found, (text[:30], found)
    analysis = fuse_lang.analyze(f"param X[i]\nY[i] = X[2:{DIGITS_5000}]\n")
    [diag] = [d for d in analysis.diagnostics if d.code == "number-too-long"]
    assert analysis.text[diag.span.start:diag.span.end] == DIGITS_5000


def test_fuse_check_reports_every_file_after_one_with_a_huge_number(tmp_path):
    (tmp_path / "bad.fuse").write_text(f"axis i = 3\nparam X[i]\nY = X[{DIGITS_5000}]\n")
    (tmp_path / "good.fuse").write_text("Y[i] = 1\n")  # one error: unsized-tensor
    proc = fuse("check", "--format", "json", "bad.fuse", "good.fuse", cwd=tmp_path)
    assert proc.returncode == 1
    found = {(d["path"], d["code"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert found == {("bad.fuse", "number-too-long"), ("good.fuse", "unsized-tensor")}


def test_causal_mask_of_a_400_digit_number_is_a_diagnostic():
    assert "extent-too-large" in codes(f"M[q,k] = causal_mask({E400})\n")
    assert "extent-too-large" in codes(f"X = const([1,2])\nY[i] = topk(X[i], k={E400})\n")


def test_huge_extents_are_reported_and_explain_never_crashes(tmp_path):
    for n, name in ((E400, "e400.fuse"), (str(10**30), "e30.fuse")):
        text = f"axis i = {n}, j = 3\nparam A[i,j]\nparam B[j]\nC[i] = A[i,j] B[j]\n"
        assert codes(text) == ["extent-too-large"]
        (tmp_path / name).write_text(text)
        assert fuse("check", name, cwd=tmp_path).returncode == 1
        proc = fuse("explain", name, cwd=tmp_path)
        assert proc.returncode in (0, 1)
        proc = fuse("run", name, cwd=tmp_path)  # was "internal error: OverflowError"
        assert proc.returncode == 1 and "extent-too-large" in proc.stderr, proc.stderr[-2000:]
    # the plan of a huge (refused) program is still made, with exact costs
    analysis = fuse_lang.analyze(f"axis i = {E400}, j = 3\nparam A[i,j]\nparam B[j]\n"
                                 f"C[i] = A[i,j] B[j]\n")
    plan = fuse_lang.plan_program(analysis)
    assert plan.total_flops == 6 * 10**400


def test_the_largest_extent_is_allowed_and_costs_are_exact(tmp_path):
    n = 2**53
    text = f"axis i = {n}, j = {n}\nparam A[i,j]\nparam B[j]\nC[i] = A[i,j] B[j]\n"
    assert codes(text) == []
    assert codes(f"axis i = {n + 1}\nparam A[i]\nB = A[i]\n") == ["extent-too-large"]
    (tmp_path / "big.fuse").write_text(text)
    proc = fuse("explain", "big.fuse", cwd=tmp_path)
    assert proc.returncode == 0 and "1.62e32" in proc.stdout  # 2 n^2, not a wrapped int64


def test_the_memory_guard_counts_sizes_in_exact_integers(tmp_path):
    # 2^32 x 2^32 elements: 0 in int64, 7.38e19 bytes in fact
    (tmp_path / "w.fuse").write_text("axis i = 4294967296, j = 4294967296\nparam W[i, j]\n"
                                     "Y[i] = W[i,j]\n")
    proc = fuse("run", "w.fuse", cwd=tmp_path)
    assert proc.returncode == 1
    assert "the largest, W, 7.38e19 bytes" in proc.stderr, proc.stderr
    assert "nothing was run" in proc.stderr


DEPTH = 100  # syntax.MAX_EXPRESSION_DEPTH (docs/limits.md)


def _nested(kind: str, n: int) -> str:
    """A program whose equation nests `n` operators or calls of one kind."""
    body = {"neg": "-" * n + "X[i]", "power": "X[i]" + "^1" * n,
            "call": "tanh(" * n + "X[i]" + ")" * n, "paren_neg": "-(" * n + "X[i]" + ")" * n,
            "sum": "(1 + " * n + "X[i]" + ")" * n, "product": "(2 * " * n + "X[i]" + ")" * n}
    return f"X = const([0.5, 0.25])\nY[i] = {body[kind]}\n"


def test_operators_nested_to_the_limit_run_and_past_it_are_reported():
    for kind in ("neg", "power", "call", "paren_neg", "product"):
        text = _nested(kind, DEPTH - 1)  # the equation's own node is one level more
        assert codes(text) == [], kind
        fuse_lang.compile(text).run()  # within Python's recursion limit, under pytest
        assert codes(_nested(kind, DEPTH + 1)) == ["nesting-too-deep"], kind


def test_sums_in_brackets_are_one_sum_at_any_depth():
    """A bracketed sum is its terms in the sum around it (LANGUAGE.md §5: projection
    per additive term), so `(1 + (1 + (... X[i])))` is one flat sum: no nesting
    past the limit, and it runs to the right value."""
    text = _nested("sum", DEPTH + 50)  # (past the operators' limit, within the brackets')
    assert codes(text) == []
    out = fuse_lang.compile(text).run()["Y"]
    assert out.tolist() == [DEPTH + 50.5, DEPTH + 50.25]


def test_ten_thousand_unary_minus_is_reported_by_check_and_refused_by_run(tmp_path):
    (tmp_path / "neg.fuse").write_text("Y = " + "-" * 10_000 + "1\n")
    proc = fuse("check", "--format", "json", "neg.fuse", cwd=tmp_path)
    assert proc.returncode == 1
    [diag] = json.loads(proc.stdout)["diagnostics"]
    assert diag["code"] == "nesting-too-deep" and "nested more than 100" in diag["message"]
    proc = fuse("run", "neg.fuse", cwd=tmp_path)
    assert proc.returncode == 1
    assert "nesting-too-deep" in proc.stderr or "nested more than" in proc.stderr, proc.stderr
    assert "recursion" not in proc.stderr


def test_pooling_a_huge_axis_is_exact_and_reported():
    text = f"axis x = {E400}\nparam I[x]\nP[x/3] = I[x]\n"
    # the declared axis, and the pooled one (3.33e399) derived from it
    assert codes(text) == ["extent-too-large", "extent-too-large"]
    analysis = fuse_lang.analyze(f"axis x = {2**53 - 1}\nparam I[x]\nP[x/2] = I[x]\n")
    assert analysis.tensors["P"].shape == (2**52,)  # ⌈(2^53 - 1)/2⌉, not a rounded float
