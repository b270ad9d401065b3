"""`render_plan_markdown`: the plan as Markdown (the editor's fuse.explain)."""
from __future__ import annotations

from pathlib import Path

import fuse_lang
from fuse_lang.plan.render import render_plan_markdown, render_plan_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def plan(text: str, path: str | None = None):
    return fuse_lang.plan_program(fuse_lang.analyze(text, path))


def test_sections_tables_and_contractions():
    md = render_plan_markdown(plan("A[i,j] = const([[1, 2], [3, 4]])\n"
                                   "Y[i] = A[i,j] B[j]\nB[j] = const([1, 1])\nexport Y\n",
                                   "dir/prog.fuse"))
    lines = md.splitlines()
    assert lines[0] == "## Plan of `prog.fuse`"
    assert "### Tensors" in lines and "### Evaluation order" in lines and "### Equations" in lines
    assert "| tensor | shape |" in lines and "| `Y` | `(2,)` |" in lines
    assert "**line 2** `Y[i] = A[i,j] B[j]`" in lines
    assert "| `j` | 2 | D2 | projected (sum) in right-hand side; joins `A`, `B` |" in lines
    assert "- einsum `ab,b->a` (`A[i,j] B[j] -> [i]`)" in lines
    assert any(line.startswith("  - flops: ") for line in lines)
    assert md.endswith("\n") and "\n\n\n" not in md


def test_recursion_and_a_title():
    md = render_plan_markdown(plan((EXAMPLES / "datalog.fuse").read_text()), title="d.fuse")
    assert md.startswith("## Plan of `d.fuse`")
    assert ("`Ancestor` — *recursive: evaluated by forward chaining to a fixpoint "
            "(semi-naive)*") in md
    assert "- part of a recursive group" in md


def test_empty_program_and_text_renderer_untouched():
    md = render_plan_markdown(plan(""))
    assert md.startswith("## Plan\n") and "*(no equations)*" in md
    assert render_plan_text(plan("")).startswith("Tensors")
