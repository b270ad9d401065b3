"""The workloads of benchmarks/datalog_peers.py (issue 29): each one's generated
facts (`.tsv` files of integer ids, seeded) and the same rules written for each
engine: a Fuse program, a Nemo rule file and DuckDB SQL (recursive CTEs).

Every engine reads the facts from the same files and writes each answer
relation to `OUT/<relation>.tsv` (one tuple a line, tab-separated), where OUT
is the engine's own folder; datalog_peers.py compares them as sets of tuples.

Non-linear rules in DuckDB: its recursive CTE may name the recursive table once
per branch, and with `UNION` it only ever joins the last round's new tuples
with it, so `Pt(x,z) Pt(z,w)` has no plain formulation (the issue's table says
"not expressible"). DuckDB 1.3+ has `USING KEY` recursive CTEs whose
`recurring.<name>` reads every tuple found so far; with it a rule is written
semi-naively by hand: one branch per recursive atom, that atom read from the
last round (`<name>`) and the others from all rounds (`recurring.<name>`),
less what is already known (an anti-join with `recurring.<name>`). Several
mutually recursive relations (CSPA) share one CTE with a relation-tag column.
The answers are checked against Fuse's and Nemo's like every other.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# ---------------------------------------------------------------- generators


def _rng(seed: int):
    import numpy as np  # lazily: the engine children import this module too

    return np.random.default_rng(seed)


def _write(path: Path, rows) -> int:
    """rows: an (n, k) integer array; written as tab-separated lines."""
    import numpy as np

    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    text = "\n".join(f"{a}\t{b}" for a, b in rows.tolist())
    path.write_text(text + "\n" if text else "")
    return len(rows)


def _distinct_pairs(rng, n: int, count: int, pool=None):
    """`count` distinct pairs (a, b) of ids below n, uniformly (or from `pool`)."""
    import numpy as np

    if pool is None:
        keys = rng.choice(n * n, size=min(count, n * n), replace=False)
        return np.stack([keys // n, keys % n], axis=1)
    return pool[rng.choice(len(pool), size=min(count, len(pool)), replace=False)]


def gen_random_graph(folder: Path, nodes: int, edges: int, seed: int = 1) -> dict[str, int]:
    """`edges` distinct uniformly random edges over `nodes` ids (self-loops allowed)."""
    rng = _rng(seed)
    return {"edge": _write(folder / "edge.tsv", _distinct_pairs(rng, nodes, edges))}


def gen_forward_graph(folder: Path, nodes: int, edges: int, block: int = 200,
                      seed: int = 2) -> dict[str, int]:
    """Edges from lower to higher ids: the nodes in blocks of `block`, each block
    with the same number of distinct random forward pairs inside it (a hierarchy
    of many small components: the closure grows with the facts, not with N^2)."""
    import numpy as np

    rng = _rng(seed)
    upper = np.array(np.triu_indices(block, 1)).T       # (i, j) with i < j
    blocks = max(nodes // block, 1)
    per_block = max(round(edges / blocks), 1)
    rows = [upper[rng.choice(len(upper), size=min(per_block, len(upper)), replace=False)]
            + b * block for b in range(blocks)]
    return {"edge": _write(folder / "edge.tsv", np.concatenate(rows))}


def gen_same_generation(folder: Path, nodes: int, arcs: int, seed: int = 3) -> dict[str, int]:
    """Arc(a, x): `arcs` distinct uniformly random arcs over `nodes` ids (cycles
    and all, as a random graph of about 2 arcs a node)."""
    rng = _rng(seed)
    return {"arc": _write(folder / "arc.tsv", _distinct_pairs(rng, nodes, arcs))}


def gen_andersen(folder: Path, variables: int, facts: int, seed: int = 4) -> dict[str, int]:
    """`facts` distinct uniformly random pairs over `variables` ids for each of
    addressOf, assign, load and store (the issue's dense random case)."""
    rng = _rng(seed)
    return {name: _write(folder / f"{name}.tsv", _distinct_pairs(rng, variables, facts))
            for name in ("address_of", "assign", "load", "store")}


def gen_andersen_local(folder: Path, variables: int, seed: int = 6) -> dict[str, int]:
    """Andersen's four relations shaped like a program's (points-to sets of a few
    dozen, not half of all pairs): variables in functions of 16; every other
    variable takes the address of one of its function's, each is assigned one
    of its function's (2% from anywhere), every 4th loads through and every 4th
    stores through one of its function's."""
    import numpy as np

    rng = _rng(seed)
    per_fn = 16
    v = np.arange(variables)

    def local(of):
        return np.minimum((of // per_fn) * per_fn + rng.integers(0, per_fn, of.size),
                          variables - 1)

    def pairs(a, b):
        return np.unique(np.stack([a, b], axis=1)[a != b], axis=0)

    taker = v[::2]
    source = np.where(rng.random(variables) < 0.98, local(v), rng.integers(0, variables,
                                                                             variables))
    every4 = v[::4]
    shifted = v[2::4]
    return {"address_of": _write(folder / "address_of.tsv", pairs(taker, local(taker))),
            "assign": _write(folder / "assign.tsv", pairs(v, source)),
            "load": _write(folder / "load.tsv", pairs(every4, local(every4))),
            "store": _write(folder / "store.tsv", pairs(shifted, local(shifted)))}


def gen_cspa(folder: Path, variables: int, seed: int = 5) -> dict[str, int]:
    """assign(to, from) and dereference(pointer, target), shaped like a program's:
    variables in functions of 16, one assignment a variable, 98% of them inside
    its function, 2% across functions; a dereference for every 4th variable, to
    a variable of the same function."""
    import numpy as np

    rng = _rng(seed)
    per_fn = 16
    v = np.arange(variables)
    local = (v // per_fn) * per_fn + rng.integers(0, per_fn, variables)
    far = rng.integers(0, variables, variables)
    source = np.minimum(np.where(rng.random(variables) < 0.98, local, far), variables - 1)
    assign = np.unique(np.stack([v, source], axis=1)[v != source], axis=0)
    p = v[::4]
    target = np.minimum((p // per_fn) * per_fn + rng.integers(0, per_fn, p.size), variables - 1)
    deref = np.unique(np.stack([p, target], axis=1), axis=0)
    return {"assign": _write(folder / "assign.tsv", assign),
            "dereference": _write(folder / "dereference.tsv", deref)}


# ------------------------------------------------------------------ programs

TC_FUSE = """\
Edge(x, y) = "edge.tsv"
Path(x, y) = Edge(x, y)
Path(x, z) = Path(x, y) Edge(y, z)
"{out}/path.tsv" = Path(x, y)
"""
TC_NEMO = """\
@import edge :- tsv{resource="edge.tsv"} .
path(?x, ?y) :- edge(?x, ?y) .
path(?x, ?z) :- path(?x, ?y), edge(?y, ?z) .
@export path :- tsv{resource="path.tsv"} .
"""
TC_SQL = """\
CREATE TABLE edge AS SELECT * FROM read_csv('edge.tsv', delim='\\t', header=false,
  columns={'x': 'INTEGER', 'y': 'INTEGER'});
COPY (WITH RECURSIVE path(x, y) AS (
    SELECT x, y FROM edge
    UNION
    SELECT path.x, edge.y FROM path JOIN edge ON path.y = edge.x)
  SELECT x, y FROM path) TO '{out}/path.tsv' (HEADER false, DELIMITER '\\t');
"""

SG_FUSE = """\
Arc(a, x) = "arc.tsv"
Sg(x, y) = Arc(a, x) Arc(a, y) (x != y)
Sg(x, y) = Arc(a, x) Sg(a, b) Arc(b, y)
"{out}/sg.tsv" = Sg(x, y)
"""
SG_NEMO = """\
@import arc :- tsv{resource="arc.tsv"} .
sg(?x, ?y) :- arc(?a, ?x), arc(?a, ?y), ?x != ?y .
sg(?x, ?y) :- arc(?a, ?x), sg(?a, ?b), arc(?b, ?y) .
@export sg :- tsv{resource="sg.tsv"} .
"""
SG_SQL = """\
CREATE TABLE arc AS SELECT * FROM read_csv('arc.tsv', delim='\\t', header=false,
  columns={'p': 'INTEGER', 'c': 'INTEGER'});
COPY (WITH RECURSIVE sg(x, y) AS (
    SELECT a.c, b.c FROM arc a JOIN arc b ON a.p = b.p WHERE a.c <> b.c
    UNION
    SELECT a.c, b.c FROM sg JOIN arc a ON a.p = sg.x JOIN arc b ON b.p = sg.y)
  SELECT x, y FROM sg) TO '{out}/sg.tsv' (HEADER false, DELIMITER '\\t');
"""

# Andersen's inclusion-based points-to analysis, the usual 4 Datalog rules (as
# in Soufflé's and Ascent's benchmarks): pointsTo(y, x) is "y may point to x".
ANDERSEN_FUSE = """\
AddressOf(y, x) = "address_of.tsv"     # y = &x
Assign(y, z) = "assign.tsv"            # y = z
Load(y, x) = "load.tsv"                # y = *x
Store(y, x) = "store.tsv"              # *y = x
PointsTo(y, x) = AddressOf(y, x)
PointsTo(y, x) = Assign(y, z) PointsTo(z, x)
PointsTo(y, w) = Load(y, x) PointsTo(x, z) PointsTo(z, w)
PointsTo(z, w) = Store(y, x) PointsTo(y, z) PointsTo(x, w)
"{out}/points_to.tsv" = PointsTo(x, y)
"""
ANDERSEN_NEMO = """\
@import addressOf :- tsv{resource="address_of.tsv"} .
@import assign :- tsv{resource="assign.tsv"} .
@import load :- tsv{resource="load.tsv"} .
@import store :- tsv{resource="store.tsv"} .
pointsTo(?y, ?x) :- addressOf(?y, ?x) .
pointsTo(?y, ?x) :- assign(?y, ?z), pointsTo(?z, ?x) .
pointsTo(?y, ?w) :- load(?y, ?x), pointsTo(?x, ?z), pointsTo(?z, ?w) .
pointsTo(?z, ?w) :- store(?y, ?x), pointsTo(?y, ?z), pointsTo(?x, ?w) .
@export pointsTo :- tsv{resource="points_to.tsv"} .
"""


def _table(name: str) -> str:
    return (f"CREATE TABLE {name} AS SELECT * FROM read_csv('{name}.tsv', delim='\\t', "
            "header=false, columns={'a': 'INTEGER', 'b': 'INTEGER'});\n")


# The semi-naive branches by hand (module docstring): `pt` is the last round's
# new tuples, `recurring.pt` every tuple so far.
ANDERSEN_SQL = "".join(_table(t) for t in ("address_of", "assign", "load", "store")) + """\
COPY (WITH RECURSIVE pt(y, x) USING KEY (y, x) AS (
    SELECT a, b FROM address_of
    UNION
    (SELECT DISTINCT n.y, n.x FROM (
        SELECT s.a AS y, pt.x FROM assign s JOIN pt ON pt.y = s.b
        UNION ALL
        SELECT l.a, r.x FROM load l JOIN pt d ON d.y = l.b JOIN recurring.pt r ON r.y = d.x
        UNION ALL
        SELECT l.a, d.x FROM load l JOIN recurring.pt r ON r.y = l.b JOIN pt d ON d.y = r.x
        UNION ALL
        SELECT d.x, r.x FROM store s JOIN pt d ON d.y = s.a JOIN recurring.pt r ON r.y = s.b
        UNION ALL
        SELECT r.x, d.x FROM store s JOIN recurring.pt r ON r.y = s.a JOIN pt d ON d.y = s.b
      ) n ANTI JOIN recurring.pt k ON k.y = n.y AND k.x = n.x))
  SELECT y, x FROM pt) TO '{out}/points_to.tsv' (HEADER false, DELIMITER '\\t');
"""

# CSPA: Graspan's context-sensitive points-to/alias analysis (Wang et al.,
# "Graspan", ASPLOS 2017) as the 10 Datalog rules used by the Datalog engines'
# benchmarks that run it (RecStep, VLDB 2019; Ascent, CC 2022; the Soufflé
# programs of those suites): valueFlow, memoryAlias and valueAlias.
CSPA_RULES = (
    "ValueFlow(y, x) = Assign(y, x)",
    "ValueFlow(x, y) = Assign(x, z) MemoryAlias(z, y)",
    "ValueFlow(x, y) = ValueFlow(x, z) ValueFlow(z, y)",
    "MemoryAlias(x, w) = Dereference(y, x) ValueAlias(y, z) Dereference(z, w)",
    "ValueAlias(x, y) = ValueFlow(z, x) ValueFlow(z, y)",
    "ValueAlias(x, y) = ValueFlow(z, x) MemoryAlias(z, w) ValueFlow(w, y)",
    "ValueFlow(x, x) = Assign(x, y)",
    "ValueFlow(x, x) = Assign(y, x)",
    "MemoryAlias(x, x) = Assign(y, x)",
    "MemoryAlias(x, x) = Assign(x, y)",
)
CSPA_FUSE = """\
Assign(x, y) = "assign.tsv"
Dereference(x, y) = "dereference.tsv"
""" + "\n".join(CSPA_RULES) + """
"{out}/value_flow.tsv" = ValueFlow(x, y)
"{out}/memory_alias.tsv" = MemoryAlias(x, y)
"{out}/value_alias.tsv" = ValueAlias(x, y)
"""


def _nemo_rule(rule: str) -> str:
    """A Fuse rule of CSPA_RULES in Nemo's syntax."""
    import re

    head, body = rule.split(" = ")
    atoms = re.findall(r"\w+\([^)]*\)", body)

    def atom(text: str) -> str:
        name, args = text.split("(")
        args = ", ".join(f"?{a.strip()}" for a in args.rstrip(")").split(","))
        return f"{name[0].lower()}{name[1:]}({args})"

    return f"{atom(head)} :- {', '.join(atom(a) for a in atoms)} ."


CSPA_NEMO = """\
@import assign :- tsv{resource="assign.tsv"} .
@import dereference :- tsv{resource="dereference.tsv"} .
""" + "\n".join(_nemo_rule(r) for r in CSPA_RULES) + """
@export valueFlow :- tsv{resource="value_flow.tsv"} .
@export memoryAlias :- tsv{resource="memory_alias.tsv"} .
@export valueAlias :- tsv{resource="value_alias.tsv"} .
"""

# One CTE for the three relations: r = 0 valueFlow, 1 memoryAlias, 2 valueAlias.
# `d` (the last round) and `f` (all rounds) name the CTE; each recursive rule
# has one branch per recursive atom (that atom from d, the others from f).
CSPA_SQL = _table("assign") + _table("dereference") + """\
CREATE TABLE result AS WITH RECURSIVE rel(r, x, y) USING KEY (r, x, y) AS (
    (SELECT 0, a, b FROM assign UNION SELECT 0, a, a FROM assign
     UNION SELECT 0, b, b FROM assign UNION SELECT 1, b, b FROM assign
     UNION SELECT 1, a, a FROM assign)
    UNION
    (SELECT DISTINCT n.r, n.x, n.y FROM (
        -- ValueFlow(x, y) = Assign(x, z) MemoryAlias(z, y)
        SELECT 0 AS r, s.a AS x, d.y FROM assign s JOIN rel d ON d.r = 1 AND d.x = s.b
        UNION ALL  -- ValueFlow(x, y) = ValueFlow(x, z) ValueFlow(z, y)
        SELECT 0, d.x, f.y FROM rel d JOIN recurring.rel f ON d.r = 0 AND f.r = 0 AND f.x = d.y
        UNION ALL
        SELECT 0, f.x, d.y FROM recurring.rel f JOIN rel d ON d.r = 0 AND f.r = 0 AND d.x = f.y
        UNION ALL  -- MemoryAlias(x, w) = Dereference(y, x) ValueAlias(y, z) Dereference(z, w)
        SELECT 1, p.b, q.b FROM rel d JOIN dereference p ON p.a = d.x
          JOIN dereference q ON q.a = d.y WHERE d.r = 2
        UNION ALL  -- ValueAlias(x, y) = ValueFlow(z, x) ValueFlow(z, y)
        SELECT 2, d.y, f.y FROM rel d JOIN recurring.rel f ON d.r = 0 AND f.r = 0 AND f.x = d.x
        UNION ALL
        SELECT 2, f.y, d.y FROM recurring.rel f JOIN rel d ON d.r = 0 AND f.r = 0 AND d.x = f.x
        UNION ALL  -- ValueAlias(x, y) = ValueFlow(z, x) MemoryAlias(z, w) ValueFlow(w, y)
        SELECT 2, d.y, g.y FROM rel d JOIN recurring.rel m ON d.r = 0 AND m.r = 1 AND m.x = d.x
          JOIN recurring.rel g ON g.r = 0 AND g.x = m.y
        UNION ALL
        SELECT 2, f.y, g.y FROM recurring.rel f JOIN rel d ON f.r = 0 AND d.r = 1 AND d.x = f.x
          JOIN recurring.rel g ON g.r = 0 AND g.x = d.y
        UNION ALL
        SELECT 2, f.y, d.y FROM recurring.rel f JOIN recurring.rel m ON f.r = 0 AND m.r = 1
          AND m.x = f.x JOIN rel d ON d.r = 0 AND d.x = m.y
      ) n ANTI JOIN recurring.rel k ON k.r = n.r AND k.x = n.x AND k.y = n.y))
  SELECT r, x, y FROM rel;
COPY (SELECT x, y FROM result WHERE r = 0) TO '{out}/value_flow.tsv' (HEADER false, DELIMITER '\\t');
COPY (SELECT x, y FROM result WHERE r = 1) TO '{out}/memory_alias.tsv' (HEADER false, DELIMITER '\\t');
COPY (SELECT x, y FROM result WHERE r = 2) TO '{out}/value_alias.tsv' (HEADER false, DELIMITER '\\t');
"""


@dataclass(frozen=True)
class Workload:
    name: str
    title: str                     # for the table: what it is, at which size
    generate: Callable[[Path, bool], dict[str, int]]   # (folder, small) -> facts per file
    answers: tuple[str, ...]       # the relation files every engine writes
    fuse: str
    nemo: str
    sql: str | None                # None: not expressible in DuckDB
    sizes: dict[bool, str]         # small -> the size in words


WORKLOADS = {w.name: w for w in (
    Workload("tc", "transitive closure, random edges",
             lambda f, small: gen_random_graph(f, *((100, 400) if small else (1_000, 10_000))),
             ("path",), TC_FUSE, TC_NEMO, TC_SQL,
             {True: "100 nodes, 400 edges", False: "1,000 nodes, 10,000 edges"}),
    Workload("tc_forward", "transitive closure, edges lower -> higher ids",
             lambda f, small: gen_forward_graph(f, *((2_000, 2_800) if small
                                                    else (200_000, 280_000))),
             ("path",), TC_FUSE, TC_NEMO, TC_SQL,
             {True: "2,000 nodes, 2,800 edges", False: "200,000 nodes, 280,000 edges"}),
    Workload("sg", "same generation",
             lambda f, small: gen_same_generation(f, *((100, 190) if small else (2_000, 3_900))),
             ("sg",), SG_FUSE, SG_NEMO, SG_SQL,
             {True: "100 nodes, 190 arcs", False: "2,000 nodes, 3,900 arcs"}),
    Workload("andersen", "Andersen points-to (4 rules, 2 non-linear)",
             lambda f, small: gen_andersen(f, *((100, 100) if small else (3_000, 3_000))),
             ("points_to",), ANDERSEN_FUSE, ANDERSEN_NEMO, ANDERSEN_SQL,
             {True: "100 variables, 100 facts each", False: "3,000 variables, 3,000 facts each"}),
    Workload("andersen_local", "Andersen points-to on program-shaped facts",
             lambda f, small: gen_andersen_local(f, 2_000 if small else 100_000),
             ("points_to",), ANDERSEN_FUSE, ANDERSEN_NEMO, ANDERSEN_SQL,
             {True: "2,000 variables", False: "100,000 variables"}),
    Workload("cspa", "CSPA (Graspan; 10 rules, 3 relations)",
             lambda f, small: gen_cspa(f, 400 if small else 10_000),
             ("value_flow", "memory_alias", "value_alias"), CSPA_FUSE, CSPA_NEMO, CSPA_SQL,
             {True: "400 variables", False: "10,000 variables"}),
)}
