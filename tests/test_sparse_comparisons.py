"""Comparisons in rules over sparse relations (issue 29, item 3; docs/scale.md,
"Sparse relations"): a comparison of indices the rule's relations bind
(`(x != y)`, `(x < 3)`, `(y == Ann)`) filters the join's tuples, so the rule's
relation stays sparse (same generation, `Sg(x,y) = Arc(a,x) Arc(a,y) (x != y)`).
Answers equal the dense path's and a hand-written reference, on symbol domains,
positional domains (`axis`) and domains of numbers (compared by value,
LANGUAGE.md §13).  A conformance module (tests/conftest.py): every program run
here runs on torch and jax too, with the same answers."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import scipy.sparse as sp

import fuse_lang
from fuse_lang.plan.representation import representations

NODES, ARCS = 600, 500  # 360,000 cells, few tuples: kept sparse


def _arcs(seed: int = 3) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return sorted({(rng.randrange(NODES), rng.randrange(NODES)) for _ in range(ARCS)})


# each domain: how a node is written in arc.tsv, and the header the program needs
DOMAINS = {
    "symbols": (lambda k: f"N{k}", ""),
    "positional": (lambda k: str(k), f"axis x = {NODES}, y = {NODES}, a = {NODES}, "
                                     f"b = {NODES}\n"),
    "values": (lambda k: str(7 * k + 3), ""),  # numbers: compared by value, not position
}


def _write(folder: Path, domain: str) -> list[tuple]:
    """arc.tsv for `domain`; the arcs as a query answers them (symbols as strings,
    numbers as ints)."""
    name = DOMAINS[domain][0]
    arcs = [(name(u), name(v)) for u, v in _arcs()]
    (folder / "arc.tsv").write_text("".join(f"{u}\t{v}\n" for u, v in arcs))
    return arcs if domain == "symbols" else [(int(u), int(v)) for u, v in arcs]


def _same_generation(arcs: list[tuple]) -> set[tuple]:
    """Sg(x,y) = Arc(a,x) Arc(a,y) (x != y); Sg(x,y) = Arc(a,x) Sg(a,b) Arc(b,y)."""
    children: dict = {}
    for a, x in arcs:
        children.setdefault(a, []).append(x)
    found = {(x, y) for kids in children.values() for x in kids for y in kids if x != y}
    delta = set(found)
    while delta:
        grown = {(x, y) for a, b in delta for x in children.get(a, ())
                 for y in children.get(b, ())} - found
        found |= grown
        delta = grown
    return found


def _closure(pairs: set[tuple]) -> set[tuple]:
    """The transitive closure of `pairs`, by hand."""
    after: dict = {}
    for u, v in pairs:
        after.setdefault(u, set()).add(v)
    found, delta = set(pairs), set(pairs)
    while delta:
        delta = {(x, z) for x, y in delta for z in after.get(y, ())} - found
        found |= delta
    return found


SG = """Arc(x,y) = "arc.tsv"
Sg(x,y) = Arc(a,x) Arc(a,y) (x != y)
Sg(x,y) = Arc(a,x) Sg(a,b) Arc(b,y)
"""


def _answers(text: str, folder: Path, representation: dict | None = None) -> list[set]:
    program = fuse_lang.compile(text, base_dir=folder, representation=representation)
    return [set(q.tuples) for q in program.execute().queries]


def _dense_too(text: str, folder: Path, names: list[str]) -> list[set]:
    return _answers(text, folder, {name: "dense" for name in names})


@pytest.mark.parametrize("domain", DOMAINS)
def test_same_generation_stays_sparse_and_answers_as_dense(tmp_path, domain):
    arcs = _write(tmp_path, domain)
    text = DOMAINS[domain][1] + SG + "Sg(x,y)?\nexport Sg\n"
    program = fuse_lang.compile(text, base_dir=tmp_path)
    chosen = representations(program.analysis)
    assert chosen["Arc"].kind == chosen["Sg"].kind == "sparse", chosen["Sg"]
    assert "not a join" not in chosen["Sg"].reason
    assert sp.issparse(program.run()["Sg"])
    (got,) = _answers(text, tmp_path)
    want = _same_generation(arcs)
    assert got == want and len(want) > 1000
    assert _dense_too(text, tmp_path, ["Arc", "Sg"]) == [want]


def _numbers_case(arcs: list[tuple], domain: str) -> tuple[str, list[set]]:
    """Comparisons with an order: of two indices, of an index with a number, of
    an index's arithmetic (by value on a domain of numbers, by position on an
    `axis`), and `==` of two indices; each with its reference answers."""
    values = sorted({v for arc in arcs for v in arc})
    middle = values[len(values) // 2]  # a value the column holds
    step = 7 if domain == "values" else 1  # one node further on
    text = f"""Lt(x,y) = Arc(x,y) (x < y)
Lc(x,y) = Arc(x,y) (x < {middle})
Ge(x,y) = Arc(x,y) (y >= {middle})
Far(x,y) = Arc(x,y) (x + {40 * step} < y)
Eq(x,y) = Arc(a,x) Arc(a,y) (x == y)
Neg(x,y) = Sg(x,y) not Arc(x,y) (x < y)
Up(x,y) = Arc(x,y) (x < y)
Up(x,z) = Up(x,y) Arc(y,z) (y < z)
Lt(x,y)?
Lc(x,y)?
Ge(x,y)?
Far(x,y)?
Eq(x,y)?
Neg(x,y)?
Up(x,y)?
"""
    sg, arc = _same_generation(arcs), set(arcs)
    want = [{(x, y) for x, y in arcs if x < y}, {(x, y) for x, y in arcs if x < middle},
            {(x, y) for x, y in arcs if y >= middle},
            {(x, y) for x, y in arcs if x + 40 * step < y},
            {(x, x) for _, x in arcs}, {(x, y) for x, y in sg - arc if x < y},
            _closure({(x, y) for x, y in arcs if x < y})]  # increasing paths
    return text, want


def _symbols_case(arcs: list[tuple]) -> tuple[str, list[set]]:
    """Symbols have no order: `==` and `!=`, of two indices and with a constant."""
    often = max({x for _, x in arcs}, key=lambda x: sum(y == x for _, y in arcs))
    text = f"""Ne(x,y) = Arc(x,y) (x != {often})
Ec(x,y) = Arc(x,y) (y == {often})
Loop(x,y) = Arc(x,y) (x == y)
Neg(x,y) = Sg(x,y) not Arc(x,y) (y != {often}) (x != y)
Avoid(x,y) = Arc(x,y) (y != {often})
Avoid(x,z) = Avoid(x,y) Arc(y,z) (z != {often})
Ne(x,y)?
Ec(x,y)?
Loop(x,y)?
Neg(x,y)?
Avoid(x,y)?
"""
    sg, arc = _same_generation(arcs), set(arcs)
    want = [{(x, y) for x, y in arcs if x != often}, {(x, y) for x, y in arcs if y == often},
            {(x, y) for x, y in arcs if x == y},
            {(x, y) for x, y in sg - arc if y != often and x != y},
            _closure({(x, y) for x, y in arcs if y != often})]  # paths around `often`
    return text, want


@pytest.mark.parametrize("domain", DOMAINS)
def test_comparisons_filter_sparse_joins_as_the_dense_path_does(tmp_path, domain):
    arcs = _write(tmp_path, domain)
    rules, want = _symbols_case(arcs) if domain == "symbols" else _numbers_case(arcs, domain)
    text = DOMAINS[domain][1] + SG + rules
    program = fuse_lang.compile(text, base_dir=tmp_path)
    heads = [line.split("(")[0] for line in rules.splitlines() if " = " in line]
    chosen = representations(program.analysis)
    assert all(chosen[name].kind == "sparse" for name in heads), \
        {name: chosen[name].text for name in heads}
    got = _answers(text, tmp_path)
    assert got == want and all(got[:2]) and got[-1]
    assert _dense_too(text, tmp_path, ["Arc", "Sg", *heads]) == want


def test_explain_reports_the_comparison_as_a_filter_of_a_sparse_relation(tmp_path):
    _write(tmp_path, "values")
    path = tmp_path / "sg.fuse"
    path.write_text(SG + '"sg.tsv" = Sg(x,y)\n')
    run = [sys.executable, "-m", "fuse_lang.cli", "explain"]
    proc = subprocess.run([*run, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Sg: sparse," in proc.stdout and "not a join of relations" not in proc.stdout
    assert "comparison (x != y): filters the join's tuples" in proc.stdout
    proc = subprocess.run([*run, "--format", "json", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert {"Arc", "Sg"} <= set(json.loads(proc.stdout)["run"]["sparse"])
    # and `fuse run` writes the same answers as the hand-written reference
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "sg.tsv").read_text().split("\n")
    written = {tuple(int(v) for v in line.split("\t")) for line in lines if line}
    assert written == _same_generation([(7 * u + 3, 7 * v + 3) for u, v in _arcs()])


def test_a_side_reading_two_indices_is_a_dense_factor_still(tmp_path):
    # `(x + y < N)`: one side reads two indices, a dense Boolean factor over both as
    # before (the rule's relation dense); its answers are right all the same
    arcs = _write(tmp_path, "positional")
    text = DOMAINS["positional"][1] + f"Arc(x,y) = \"arc.tsv\"\n" \
        f"W(x,y) = Arc(x,y) (x + y < {NODES})\nW(x,y)?\n"
    chosen = representations(fuse_lang.analyze(text, str(tmp_path / "w.fuse"), tmp_path))
    assert chosen["Arc"].kind == "sparse" and chosen["W"].kind == "dense"
    assert _answers(text, tmp_path) == [{(x, y) for x, y in arcs if x + y < NODES}]


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_eager_torch_and_jax_keep_same_generation_sparse_with_the_same_answers(tmp_path,
                                                                                backend):
    # torch.sparse / BCOO: the pair's sparse product, then the comparison read at its
    # non-zeros (run/sparse/framework.py); the answers are NumPy's
    pytest.importorskip(backend)
    arcs = _write(tmp_path, "symbols")
    rules, want = _symbols_case(arcs)
    text = SG + rules + "Sg(x,y)?\nexport Sg\n"
    program = fuse_lang.compile(text, base_dir=tmp_path, backend=backend, compiled=False)
    result = program.execute()
    assert sp.issparse(result.outputs["Sg"])
    assert [set(q.tuples) for q in result.queries] == [*want, _same_generation(arcs)]
