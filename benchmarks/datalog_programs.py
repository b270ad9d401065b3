"""Generated Datalog workloads for benchmarks/datalog_large.py (no outside data):
an Andersen-style points-to analysis and a wide program of 56 rules, each as a
folder of `.tsv` relation files and a `.fuse` program, plus a small reference
evaluator (Python sets, semi-naive) to check Fuse's answers against.

Both generators are seeded: the same arguments write the same files.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

POINTS_TO = """\
# Andersen-style, context-insensitive points-to analysis with fields
New(v, h) = "new.tsv"                  # v = new h
Move(to, from) = "assign.tsv"          # to = from
Load(to, base, f) = "load.tsv"         # to = base.f
Store(base, f, from) = "store.tsv"     # base.f = from
Target(i, m) = "call.tsv"              # call site i calls method m
Actual(i, k, a) = "actual.tsv"         # argument k of call site i is variable a
Formal(m, k, p) = "formal.tsv"         # parameter k of method m is variable p
Result(i, v) = "result.tsv"            # call site i assigns its result to v
Return(m, r) = "return.tsv"            # method m returns variable r

Flow(to, from) = Move(to, from)
Flow(p, a) = Target(i, m) Formal(m, k, p) Actual(i, k, a)
Flow(v, r) = Target(i, m) Return(m, r) Result(i, v)

Pt(v, h) = New(v, h)
Pt(v, h) = Flow(v, w) Pt(w, h)
Hpt(h, f, g) = Store(b, f, w) Pt(b, h) Pt(w, g)
Pt(v, g) = Load(v, b, f) Pt(b, h) Hpt(h, f, g)
export Pt
export Hpt
"""

POINTS_TO_FILES = ("new", "assign", "load", "store", "call", "actual", "formal", "result",
                   "return")


def points_to(folder: Path, facts: int = 52_153, seed: int = 0) -> dict[str, list[tuple]]:
    """Write a points-to program of exactly `facts` facts into `folder` (its
    `points_to.fuse` and relation files); return the relations' tuples.

    Shaped like a Java program's: methods of 12 local variables; assignments,
    loads and stores mostly within a method, through 40 fields; calls pass 1-3
    arguments.  The variables' column type has about 0.86 symbols per fact
    (45,000 at the default size): the variables are drawn from a shuffled cycle,
    so every one of them occurs."""
    rng = np.random.default_rng(seed)
    n_var = max(int(facts * 0.86), 24)
    per_method, n_field = 12, 20
    n_method = n_var // per_method
    n_heap = max(facts // 40, 2)
    n_call = max(int(facts * 0.06), 1)
    cycle = rng.permutation(n_var)
    drawn = [0]

    def some_vars(size: int) -> np.ndarray:  # the next `size` of the shuffled cycle
        at = (drawn[0] + np.arange(size)) % n_var
        drawn[0] += size
        return cycle[at]

    def near(v: np.ndarray) -> np.ndarray:  # another variable of v's method, mostly
        local = (v // per_method) * per_method + rng.integers(0, per_method, v.size)
        return np.where(rng.random(v.size) < 0.5, local, rng.integers(0, n_var, v.size))

    out: dict[str, list[tuple]] = {}
    v = some_vars(int(facts * 0.16))
    out["new"] = [(f"v{x}", f"h{h}") for x, h in zip(v, rng.integers(0, n_heap, v.size))]
    for kind, share in (("load", 0.09), ("store", 0.07)):
        x = some_vars(int(facts * share))
        y, f = near(x), rng.integers(0, n_field, x.size)
        if kind == "store":  # both ends locals of one method
            x = near(y)
        out[kind] = [(f"v{p}", f"v{q}", f"f{g}") if kind == "load" else
                     (f"v{q}", f"f{g}", f"v{p}") for p, q, g in zip(x, y, f)]
    arity = rng.integers(1, 4, n_method)
    out["formal"] = [(f"m{m}", f"k{k}", f"v{m * per_method + k}")
                     for m in range(n_method) for k in range(arity[m])]
    out["return"] = [(f"m{m}", f"v{m * per_method + per_method - 1}") for m in range(n_method)]
    callee = rng.integers(0, n_method, n_call)
    out["call"] = [(f"i{i}", f"m{m}") for i, m in enumerate(callee)]
    out["actual"] = [(f"i{i}", f"k{k}", f"v{some_vars(1)[0]}")
                     for i, m in enumerate(callee) for k in range(arity[m])]
    out["result"] = [(f"i{i}", f"v{some_vars(1)[0]}") for i in range(n_call) if i % 2 == 0]
    for name in out:
        out[name] = list(dict.fromkeys(out[name]))
    left = facts - sum(len(rows) for rows in out.values())
    seen = {c for rows in out.values() for row in rows for c in row if c[0] == "v"}
    unseen = np.array([x for x in cycle if f"v{x}" not in seen], dtype=np.int64)
    x = np.concatenate([unseen, some_vars(left + left // 10 + 10)])  # every variable occurs
    moves = list(dict.fromkeys((f"v{p}", f"v{q}") for p, q in zip(x, near(x)) if p != q))
    out["assign"] = moves[:max(left, 0)]
    for name in POINTS_TO_FILES:
        (folder / f"{name}.tsv").write_text("".join("\t".join(r) + "\n" for r in out[name]))
    (folder / "points_to.fuse").write_text(POINTS_TO)
    return out


def _index(rows, key_positions):
    """rows grouped by the values at key_positions."""
    out: dict[tuple, list[tuple]] = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in key_positions), []).append(row)
    return out


def points_to_reference(rel: dict[str, list[tuple]]) -> dict[str, set[tuple]]:
    """The points-to analysis by hand: Python sets, semi-naive (each round joins
    only the last round's new Pt and Hpt facts)."""
    flow = set(rel["assign"])
    formal = _index(rel["formal"], (0, 1))
    actual = _index(rel["actual"], (0,))
    ret = _index(rel["return"], (0,))
    result = _index(rel["result"], (0,))
    for i, m in rel["call"]:
        for _, k, a in actual.get((i,), []):
            flow |= {(p, a) for *_, p in formal.get((m, k), [])}
        flow |= {(v, r) for _, r in ret.get((m,), []) for _, v in result.get((i,), [])}
    flow_from = _index(flow, (1,))                       # Flow(v, w) by w
    store_b = _index(rel["store"], (0,))                 # Store(b, f, w) by b
    store_w = _index(rel["store"], (2,))                 # ... by w
    load_b = _index(rel["load"], (1,))                   # Load(v, b, f) by b
    pt, hpt = set(rel["new"]), set()
    pt_of: dict[str, set[str]] = {}                      # Pt by variable
    hpt_of: dict[tuple, set[str]] = {}                   # Hpt(h, f, g) by (h, f)
    loads_of: dict[tuple, set[str]] = {}                 # (h, f) -> v with Load(v, b, f) Pt(b, h)
    new_pt, new_hpt = set(pt), set()
    while new_pt or new_hpt:
        for v, h in new_pt:
            pt_of.setdefault(v, set()).add(h)
        for h, f, g in new_hpt:
            hpt_of.setdefault((h, f), set()).add(g)
        found_pt, found_hpt = set(), set()
        for w, h in new_pt:
            found_pt |= {(v, h) for v, _ in flow_from.get((w,), [])}
            for b, f, _ in store_w.get((w,), []):          # Pt(w, g) new: g = h
                found_hpt |= {(hb, f, h) for hb in pt_of.get(b, ())}
            for _, f, w2 in store_b.get((w,), []):         # Pt(b, h) new
                found_hpt |= {(h, f, g) for g in pt_of.get(w2, ())}
            for v, _, f in load_b.get((w,), []):           # Pt(b, h) new
                loads_of.setdefault((h, f), set()).add(v)
                found_pt |= {(v, g) for g in hpt_of.get((h, f), ())}
        for h, f, g in new_hpt:
            found_pt |= {(v, g) for v in loads_of.get((h, f), ())}
        new_pt, new_hpt = found_pt - pt, found_hpt - hpt
        pt |= new_pt
        hpt |= new_hpt
    return {"Pt": pt, "Hpt": hpt}
