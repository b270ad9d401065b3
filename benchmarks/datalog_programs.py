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


# ---- the wide program: 100,000 facts, 56 rules (joins, recursion, negation, unions)
WIDE_FILES = {"edge": ("Edge", 2), "link": ("Link", 3), "label": ("Label", 2),
              "owner": ("Owner", 2), "member": ("Member", 2), "perm": ("Perm", 3),
              "bad": ("Bad", 1)}
KINDS = 10


def wide_rules() -> list[list[tuple]]:
    """The rules, stratum by stratum: (head, head args, body) with body atoms
    (negated, relation, args); lower-case args are variables, `_` any value (in a
    negated atom), others constants."""
    def atom(text: str, negated: bool = False) -> tuple:
        name, args = text.rstrip(")").split("(")
        return (negated, name, tuple(a.strip() for a in args.split(",")))

    def rule(head: str, *body: str) -> tuple:
        _, name, args = atom(head)
        return (name, args, tuple(atom(b[4:], True) if b.startswith("not ") else atom(b)
                                  for b in body))

    base = [rule("Node(x)", "Edge(x, y)"), rule("Node(y)", "Edge(x, y)"),
            rule("Person(p)", "Owner(x, p)")]
    base += [rule(f"L{k}(x, y)", f"Link(x, K{k}, y)") for k in range(KINDS)]
    base += [rule(f"Hop{k}(x, z)", f"L{k}(x, y)", f"L{(k + 1) % KINDS}(y, z)")
             for k in range(KINDS)]
    base += [rule("Conn(x, y)", f"Hop{k}(x, y)") for k in range(KINDS)]
    base += [rule("Can(p, x, a)", "Member(p, g)", "Perm(g, x, a)"),
             rule("Team(p, q)", "Member(p, g)", "Member(q, g)")]
    reach = [rule("Reach(x, y)", "Edge(x, y)"), rule("Reach(x, z)", "Reach(x, y)", "Edge(y, z)")]
    conn = [rule("ConnR(x, y)", "Conn(x, y)"), rule("ConnR(x, z)", "ConnR(x, y)", "Conn(y, z)")]
    derived = [rule("Tagged(x, l)", "Label(x, l)"), rule("Tagged(y, l)", "Reach(x, y)", "Label(x, l)"),
               rule("Tainted(x)", "Bad(x)"), rule("Tainted(y)", "Reach(x, y)", "Bad(x)"),
               rule("Share(p, q)", "ConnR(x, y)", "Owner(x, p)", "Owner(y, q)")]
    negated = [rule("Safe(x)", "Node(x)", "not Bad(x)"),
               rule("Clean(x)", "Node(x)", "not Tainted(x)"),
               rule("Exposed(p, x)", "Owner(x, p)", "Tainted(x)"),
               rule("Allowed(p, x, a)", "Can(p, x, a)", "Clean(x)"),
               rule("Denied(p, x, a)", "Can(p, x, a)", "Tainted(x)"),
               rule("OwnsTagged(p, l)", "Owner(x, p)", "Tagged(x, l)"),
               rule("Peer(p, q)", "Team(p, q)", "not Share(p, q)")]
    last = [rule("Trusted(p)", "Person(p)", "not Exposed(p, _)"),
            rule("Reader(p, x)", "Allowed(p, x, A0)"), rule("Writer(p, x)", "Allowed(p, x, A1)")]
    final = [rule("Both(p, x)", "Reader(p, x)", "Writer(p, x)"),
             rule("OnlyRead(p, x)", "Reader(p, x)", "not Writer(p, x)")]
    return [base, reach, conn, derived, negated, last, final]


def _atom_text(negated: bool, name: str, args: tuple) -> str:
    return ("not " if negated else "") + f"{name}({', '.join(args)})"


def wide(folder: Path, facts: int = 100_000, seed: int = 0) -> dict[str, list[tuple]]:
    """Write the wide program (`wide.fuse`, 56 rules) and its relation files of
    exactly `facts` facts into `folder`; return the relations' tuples by name."""
    rng = np.random.default_rng(seed)
    n_node = max(facts // 5, 40)
    n_person, n_group = max(facts // 25, 4), max(facts // 250, 2)
    share = {"edge": 0.30, "link": 0.20, "label": 0.15, "owner": 0.12, "member": 0.08,
             "perm": 0.12}
    out: dict[str, list[tuple]] = {}

    def draw(kind: str, make) -> None:  # distinct rows, exactly the share of the facts
        want, rows = int(facts * share[kind]) if kind in share else facts - sum(
            len(r) for r in out.values()), {}
        while len(rows) < want:
            rows.update(dict.fromkeys(make(want)))
        out[kind] = list(rows)[:want]

    def edges(n):  # a DAG in blocks of 20 nodes: the closure grows with the edges
        block = rng.integers(0, n_node // 20, n) * 20
        u, v = rng.integers(0, 20, (2, n))
        return [(f"n{b + min(a, c)}", f"n{b + max(a, c)}") for b, a, c in zip(block, u, v)
                if a != c]

    node = lambda n: rng.integers(0, n_node, n)  # noqa: E731
    draw("edge", edges)
    draw("link", lambda n: [(f"n{x}", f"K{k}", f"n{y}") for x, k, y in
                            zip(node(n), rng.integers(0, KINDS, n), node(n))])
    draw("label", lambda n: [(f"n{x}", f"l{k}") for x, k in zip(node(n), rng.integers(0, 30, n))])
    draw("owner", lambda n: [(f"n{x}", f"p{p}") for x, p in
                             zip(node(n), rng.integers(0, n_person, n))])
    draw("member", lambda n: [(f"p{p}", f"g{g}") for p, g in
                              zip(rng.integers(0, n_person, n), rng.integers(0, n_group, n))])
    draw("perm", lambda n: [(f"g{g}", f"n{x}", f"A{a}") for g, x, a in
                            zip(rng.integers(0, n_group, n), node(n), rng.integers(0, 5, n))])
    draw("bad", lambda n: [(f"n{x}",) for x in rng.integers(0, n_node, n)])
    lines = [f'{name}({", ".join("abc"[:arity])}) = "{file}.tsv"'
             for file, (name, arity) in WIDE_FILES.items()]
    lines += [f"{head}({', '.join(args)}) = " + " ".join(_atom_text(*b) for b in body)
              for stratum in wide_rules() for head, args, body in stratum]
    lines += ["export Reach", "export Can", "export Allowed", "export Share", "export Trusted",
              "export OnlyRead", "export Both", "export OwnsTagged", "export Peer"]
    for file in WIDE_FILES:
        (folder / f"{file}.tsv").write_text("".join("\t".join(r) + "\n" for r in out[file]))
    (folder / "wide.fuse").write_text("\n".join(lines) + "\n")
    return {WIDE_FILES[file][0]: rows for file, rows in out.items()}


def evaluate(facts: dict[str, list[tuple]], strata: list[list[tuple]]) -> dict[str, set]:
    """A small reference Datalog evaluator: Python sets, stratum by stratum,
    semi-naive within each (a rule is re-joined with each of its atoms of the
    stratum read from the last round's new facts)."""
    db: dict[str, set] = {name: set(rows) for name, rows in facts.items()}
    for stratum in strata:
        heads = {head for head, _, _ in stratum}
        for head in heads:
            db.setdefault(head, set())
        delta = {h: set() for h in heads}
        for head, args, body in stratum:  # the first round: every rule on everything
            delta[head] |= _fire(db, args, body, None, None) - db[head]
        for head in heads:
            db[head] |= delta[head]
        while any(delta.values()):
            found = {h: set() for h in heads}
            for head, args, body in stratum:
                for k, (negated, name, _) in enumerate(body):
                    if not negated and name in heads and delta[name]:
                        found[head] |= _fire(db, args, body, k, delta[name])
            delta = {h: found[h] - db[h] for h in heads}
            for head in heads:
                db[head] |= delta[head]
    return db


def _fire(db: dict[str, set], head_args: tuple, body: tuple, at: int | None,
          delta: set | None) -> set:
    """The head tuples one rule derives (atom `at` read from `delta`); a binding
    is a tuple of the values of `names`, extended atom by atom through an index."""
    order = sorted(range(len(body)), key=lambda k: (body[k][0], k != at))
    names: list[str] = []
    bindings: list[tuple] = [()]
    for k in order:
        negated, name, args = body[k]
        rows = delta if k == at else db[name]
        pos = {v: i for i, v in enumerate(names)}
        bound = [(p, a) for p, a in enumerate(args)  # (`_`: any value, never bound)
                 if not (a[0].islower() or a == "_") or a in pos]
        places = [p for p, _ in bound]
        pick = [(pos[a], None) if a in pos else (None, a) for _, a in bound]

        def key(b: tuple, pick: list = pick) -> tuple:
            return tuple(b[i] if i is not None else c for i, c in pick)

        if negated:  # no tuple agrees on the bound places (the others: any value)
            keys = {tuple(row[p] for p in places) for row in rows}
            bindings = [b for b in bindings if key(b) not in keys]
            continue
        fresh: list[int] = []
        for p, a in enumerate(args):
            if a[0].islower() and a not in pos and a not in names:
                names.append(a)
                fresh.append(p)
        repeats = [(p, args.index(a)) for p, a in enumerate(args)
                   if a[0].islower() and a not in pos and args.index(a) != p]
        index: dict[tuple, list] = {}
        for row in rows:
            if all(row[p] == row[q] for p, q in repeats):
                index.setdefault(tuple(row[p] for p in places), []).append(
                    tuple(row[p] for p in fresh))
        bindings = [b + more for b in bindings for more in index.get(key(b), ())]
    pos = {v: i for i, v in enumerate(names)}
    return {tuple(b[pos[a]] if a[0].islower() else a for a in head_args) for b in bindings}
