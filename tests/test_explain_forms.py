"""`fuse explain` of equations of one form under other names (plan/forms.py walks
each form once): each equation's contractions are those it has in a program
where it is alone, whatever the extents, slices, sparse operands and inlined
functions of the others of its form."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import opt_einsum

SOURCES = """\
A[i,j] = "a.npy"
B[j,k] = "b.npy"
C[i,j] = "c.npy"
D[j,k] = "d.npy"
E(x,y) = "e.tsv"
F(x,y) = "f.tsv"
"""

# pairs of one form: the same nodes and index names, other tensors (of other
# extents), a slice of other lengths, a sparse relation beside a dense one
EQUATIONS = {
    "Y": "Y[i,k] = A[i,j] B[j,k]",
    "Z": "Z[i,k] = C[i,j] D[j,k]",
    "S": "S[i,k] = A[i,1:] B[1:,k]",
    "T": "T[i,k] = C[i,1:] D[1:,k]",
    "P(x,z)": "P(x,z) = E(x,y) E(y,z)",
    "Q(x,z)": "Q(x,z) = F(x,y) F(y,z)",
    "U": "U[i,k] = relu(A[i,j] B[j,k] + 0.5)",
    "V": "V[i,k] = relu(C[i,j] D[j,k] + 0.5)",
}

FUNCTION = """\
fn lin(m[i,j], n[j,k]) -> o[i,k] {
  o[i,k] = m[i,j] n[j,k]
}
"""


def write_data(folder: Path) -> None:
    np.save(folder / "a.npy", np.ones((2, 3), np.float32))
    np.save(folder / "b.npy", np.ones((3, 4), np.float32))
    np.save(folder / "c.npy", np.ones((5, 7), np.float32))
    np.save(folder / "d.npy", np.ones((7, 6), np.float32))
    # E: a few edges among many nodes (sparse); F: every pair of a few (dense)
    (folder / "e.tsv").write_text("".join(f"n{k}\tn{k + 1}\n" for k in range(300)),
                                  encoding="utf-8")
    (folder / "f.tsv").write_text("".join(f"m{a}\tm{b}\n" for a in range(4) for b in range(4)),
                                  encoding="utf-8")


def explain(folder: Path, name: str, text: str) -> dict:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "explain", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def contractions(data: dict, tensor: str) -> list[dict]:
    found = [e for e in data["equations"] if e["tensor"] == tensor]
    assert len(found) == 1, [e["tensor"] for e in data["equations"]]
    # (where its first factor starts: a place in its own program's text)
    return [{k: v for k, v in c.items() if k != "first_offset"}
            for c in found[0]["contractions"]]


def test_each_equation_is_planned_as_if_alone(tmp_path: Path) -> None:
    write_data(tmp_path)
    together = explain(tmp_path, "all.fuse", SOURCES + "\n".join(EQUATIONS.values()) + "\n")
    for head, equation in EQUATIONS.items():
        tensor = head.split("[")[0].split("(")[0]
        alone = explain(tmp_path, f"{tensor}.fuse", SOURCES + equation + "\n")
        assert contractions(together, tensor) == contractions(alone, tensor), equation


def test_one_form_other_extents_other_costs(tmp_path: Path) -> None:
    write_data(tmp_path)
    data = explain(tmp_path, "all.fuse", SOURCES + "\n".join(EQUATIONS.values()) + "\n")
    for tensor, shapes in (("Y", [(2, 3), (3, 4)]), ("Z", [(5, 7), (7, 6)]),
                           ("S", [(2, 2), (2, 4)]), ("T", [(5, 6), (6, 6)])):
        (einsum,) = contractions(data, tensor)
        _, info = opt_einsum.contract_path("ab,bc->ac", *shapes, shapes=True)
        assert einsum["flops"] == int(info.opt_cost), (tensor, einsum)
    representations = {r[0]: r[1] for r in data["representations"]}
    assert representations["E"] == "sparse" and representations["F"] == "dense"


def test_inlined_calls_of_one_function(tmp_path: Path) -> None:
    write_data(tmp_path)
    calls = {"G": "G[i,k] = lin(A[i,j], B[j,k])\n", "H": "H[i,k] = lin(C[i,j], D[j,k])\n"}
    together = explain(tmp_path, "fn.fuse", SOURCES + FUNCTION + "".join(calls.values()))
    inlined = [e["tensor"] for e in together["equations"] if e["tensor"].startswith("o@lin")]
    assert len(inlined) == 2  # (the function's equation, written out per call)
    for tensor, call in zip(inlined, calls.values()):
        alone = explain(tmp_path, "fn_alone.fuse", SOURCES + FUNCTION + call)
        (own,) = [e["tensor"] for e in alone["equations"] if e["tensor"].startswith("o@lin")]
        assert contractions(together, tensor) == contractions(alone, own)
    flops = [contractions(together, t)[0]["flops"] for t in inlined]
    assert flops == [48, 420]


# pairs of one form (tensors of the same extents) whose factors other than
# references are written with other spacing: a join, a divisor, an elementwise
# product and a reduction (plan/relabel.py: the second of each pair takes the
# first's contractions, with its own names and texts)
SAME_EXTENTS = 'A2[i,j] = "a.npy"\nB2[j,k] = "b.npy"\n'
RELABELLED = {
    "K": "K[i,k] = A[i,j] exp(B[j,k])",
    "L": "L[i,k] = A2[i,j]   exp(  B2[j,k] )",
    "M": "M[i,k] = A[i,j] / exp(B[j,k])",
    "N": "N[i,k] = A2[i,j] / exp( B2[j,k] )",
    "O": "O[i,j] = relu(A[i,j]) A[i,j]",
    "R": "R[i,j] = relu( A2[i,j] ) A2[i,j]",
    "G1": "G1[i] max= A[i,j] A[i,j]",
    "G2": "G2[i] max= A2[i,j] A2[i,j]",
}


def test_relabelled_equations_have_their_own_texts(tmp_path: Path) -> None:
    write_data(tmp_path)
    text = SOURCES + SAME_EXTENTS + "\n".join(RELABELLED.values()) + "\n"
    together = explain(tmp_path, "relabel.fuse", text)
    for tensor, equation in RELABELLED.items():
        alone = explain(tmp_path, f"{tensor}.fuse", SOURCES + SAME_EXTENTS + equation + "\n")
        assert contractions(together, tensor) == contractions(alone, tensor), equation
        (plan,) = [e for e in together["equations"] if e["tensor"] == tensor]
        assert plan["contractions"], equation
        for c in plan["contractions"]:
            # where its first factor starts in this program's text: on this equation's line
            line_start = text.index(equation)
            assert line_start < c["first_offset"] < line_start + len(equation), (equation, c)
            assert text[c["first_offset"]:].startswith(c["einsum"].split("[")[0].split("(")[0]
                                                       .split(" ")[0]), (equation, c)
    einsums = {t: [c["einsum"] for c in contractions(together, t)] for t in ("K", "L", "N")}
    assert einsums["K"] == ["A[i,j] exp(B[j,k]) -> [i,k]"]
    assert einsums["L"] == ["A2[i,j] exp( B2[j,k] ) -> [i,k]"]
    assert any("/ exp( B2[j,k] )" in e for e in einsums["N"]), einsums["N"]


def test_plan_as_json_is_asdict(tmp_path: Path) -> None:
    """ProgramPlan.to_json (made without asdict's deep copies) is what
    dataclasses.asdict makes of the plan: every field, tuples kept."""
    import dataclasses

    import fuse_lang

    write_data(tmp_path)
    program = fuse_lang.compile(SOURCES + SAME_EXTENTS + "\n".join(RELABELLED.values()) + "\n",
                                base_dir=tmp_path)
    plan = fuse_lang.explain(program).plan
    assert plan.to_json() == dataclasses.asdict(plan)
    assert plan.to_json()["equations"][0]["contractions"][0]["einsum"] == \
        "A[i,j] exp(B[j,k]) -> [i,k]"
