"""Differential audit of Fuse's Datalog answers against DuckDB SQL on the same data.

Random relation files (`.tsv`, `.csv`, `.facts`: symbols, quoted strings with
spaces, tabs and quotes, negative and 64-bit integers, duplicate tuples, empty
files, header rows skipped by `header=1`) and programs drawn from templates
(transitive closure, reachability from a constant, same generation, stratified
negation, joins with constants and comparisons, a computed counter). Each
program runs on numpy, torch and jax, dense and sparse, forward and demand mode;
its query answers must equal DuckDB's (recursive CTEs, NOT EXISTS) as sets of
tuples, and every sink it writes (`.tsv`, `.csv`, `.facts`) must read back
through DuckDB's `read_csv` as the same tuples with the same values and types.

    python benchmarks/datalog_peer_fuzz.py [--cases N] [--seed S] [--backends numpy,torch,jax]

Exits 1 on a disagreement (printed with the program and its files).
tests/test_datalog_peer_audit.py holds the cases this run found, minimised.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

INT64 = (1 << 63) - 1
NUMBERS = [0, 1, 2, 3, 5, 7, -1, -7, 42, 3000000000, -3000000000, INT64, -INT64 - 1]
SYMBOLS = ["Alice", "bob", "a b", "a  b", "é ü", "#x", "x\ty", 'q"t', "c,d", "1x", "Z", "ann", " pad"]


def value_text(v, ext: str) -> str:
    """A cell as a user writes it: strings quoted where they must be."""
    if isinstance(v, (int, float)):
        return str(v)
    if ext == ".facts":
        return v
    sep = "," if ext == ".csv" else "\t"
    if any(c in v for c in (sep, '"', "\n")) or v != v.strip() or _looks_numeric(v):
        return '"' + v.replace('"', '""') + '"'
    return v


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


FLOATS = [0.5, -2.25, 1.5, 2.0, 1e3, 3.0, -0.0, 1e-3]


def draw_values(rng: random.Random, numeric: bool, ext: str, n: int, floats: bool = False
                ) -> list:
    pool = NUMBERS + list(range(10)) * 2
    if floats:  # small integers and floats (a DOUBLE column in DuckDB holds them exactly)
        pool = list(range(-3, 10)) + FLOATS * 2
    if not numeric:
        symbols = [s for s in SYMBOLS if ext != ".facts" or ("\t" not in s and '"' not in s
                                                               and s == s.strip())]
        pool = pool + symbols * 2
    return rng.sample(pool, k=min(n, len(pool)))


def write_relation(path: Path, rows: list[tuple], header: bool) -> None:
    ext = path.suffix
    sep = "," if ext == ".csv" else "\t"
    lines = [sep.join(f"c{i}" for i in range(len(rows[0]) if rows else 2))] if header else []
    lines += [sep.join(value_text(v, ext) for v in row) for row in rows]
    path.write_text("".join(line + "\n" for line in lines))


# ----------------------------------------------------------------- the cases


def make_case(rng: random.Random) -> dict:
    """Files, a Fuse program, and per query the SQL that answers it."""
    numeric = rng.random() < 0.5
    floats = numeric and rng.random() < 0.4
    ext = rng.choice([".tsv", ".csv", ".facts"])
    values = draw_values(rng, numeric, ext, rng.randint(3, 9), floats)
    n_edges = rng.choice([0, 1, 3, 6, 10, 16])
    edges = [(rng.choice(values), rng.choice(values)) for _ in range(n_edges)]
    edges += edges[: rng.randint(0, 2)]  # duplicate tuples
    verts = [(rng.choice(values),) for _ in range(rng.randint(0, 5))]
    header = ext != ".facts" and rng.random() < 0.3
    hdr = ", header=1" if header else ""
    files = {f"e{ext}": (edges, header), f"v{ext}": (verts, header)}
    # a constant the data may lack (or surely lacks: unknown-constant, a warning)
    c = rng.choice(values + [123456 if numeric else "Nowhere"])
    c2 = rng.choice(values)
    lines = [f'E(x, y) = source("e{ext}"{hdr})' if header else f'E(x, y) = "e{ext}"',
             f'V(x) = source("v{ext}"{hdr})' if header else f'V(x) = "v{ext}"',
             # V's values meet E's (one domain), so negations and joins can mix them
             "Node(x) = E(x, _)", "Node(y) = E(_, y)", "Node(x) = V(x)"]
    queries: list[tuple[str, str]] = []
    def sql_const(v) -> str:
        return _sql_literal(enc(v, numeric))

    const = fuse_const(c)
    const2 = fuse_const(c2)
    tc_sql = ("WITH RECURSIVE t(x, y) AS (SELECT x, y FROM e UNION "
              "SELECT t.x, e.y FROM t JOIN e ON t.y = e.x) ")
    kinds = rng.sample(["tc", "reach", "sg", "neg", "const", "cmp", "counter", "neg2"],
                       k=rng.randint(2, 4))
    if "tc" in kinds or "neg" in kinds or "neg2" in kinds:
        lines += ["T(x, y) = E(x, y)", "T(x, z) = T(x, y) E(y, z)"]
    if "tc" in kinds:
        queries.append(("T(x, y)?", tc_sql + "SELECT DISTINCT x, y FROM t"))
        queries.append((f"T({const}, y)?", tc_sql + f"SELECT DISTINCT y FROM t WHERE x = {sql_const(c)}"))
        queries.append((f"T(x, {const2})?", tc_sql + f"SELECT DISTINCT x FROM t WHERE y = {sql_const(c2)}"))
        # a ground query answers [()] or []; a repeated variable, the diagonal
        queries.append((f"T({const}, {const2})?", "-- ground\n" + tc_sql + "SELECT 1 FROM t "
                        f"WHERE x = {sql_const(c)} AND y = {sql_const(c2)}"))
        queries.append(("T(x, x)?", tc_sql + "SELECT DISTINCT x FROM t WHERE x = y"))
    if "reach" in kinds:
        lines += [f"R(y) = E({const}, y)", "R(z) = R(y) E(y, z)"]
        queries.append(("R(y)?", f"WITH RECURSIVE r(y) AS (SELECT y FROM e WHERE x = {sql_const(c)} "
                        "UNION SELECT e.y FROM r JOIN e ON r.y = e.x) SELECT DISTINCT y FROM r"))
    if "sg" in kinds:
        lines += ["SG(x, y) = E(p, x) E(p, y) (x != y)", "SG(x, y) = E(a, x) SG(a, b) E(b, y)"]
        queries.append(("SG(x, y)?", "WITH RECURSIVE sg(x, y) AS (SELECT a.y, b.y FROM e a JOIN e b "
                        "ON a.x = b.x WHERE a.y <> b.y UNION SELECT a.y, b.y FROM e a JOIN sg "
                        "ON a.x = sg.x JOIN e b ON b.x = sg.y) SELECT DISTINCT x, y FROM sg"))
    if "neg" in kinds:
        lines += ["N(x, y) = E(x, y) not T(y, x)"]
        queries.append(("N(x, y)?", tc_sql + "SELECT DISTINCT x, y FROM e WHERE NOT EXISTS "
                        "(SELECT 1 FROM t WHERE t.x = e.y AND t.y = e.x)"))
        queries.append((f"N(x, {const})?", tc_sql + "SELECT DISTINCT x FROM e WHERE NOT EXISTS "
                        "(SELECT 1 FROM t WHERE t.x = e.y AND t.y = e.x) AND e.y = "
                        f"{sql_const(c)}"))
    if "neg2" in kinds:
        lines += ["U(x) = V(x) not E(x, _)", "W(x, y) = V(x) V(y) not T(x, y)"]
        queries.append(("U(x)?", "SELECT DISTINCT x FROM v WHERE NOT EXISTS "
                        "(SELECT 1 FROM e WHERE e.x = v.x)"))
        queries.append(("W(x, y)?", tc_sql + "SELECT DISTINCT a.x, b.x FROM v a, v b WHERE NOT "
                        "EXISTS (SELECT 1 FROM t WHERE t.x = a.x AND t.y = b.x)"))
        queries.append((f"W({const}, y)?", tc_sql + "SELECT DISTINCT b.x FROM v a, v b WHERE NOT "
                        "EXISTS (SELECT 1 FROM t WHERE t.x = a.x AND t.y = b.x) AND a.x = "
                        f"{sql_const(c)}"))
    if "const" in kinds:
        lines += [f"J(y) = E({const}, y) V(y)", f"K(x) = E(x, {const2})"]
        queries.append(("J(y)?", f"SELECT DISTINCT e.y FROM e JOIN v ON e.y = v.x WHERE e.x = "
                        f"{sql_const(c)}"))
        queries.append(("K(x)?", f"SELECT DISTINCT x FROM e WHERE y = {sql_const(c2)}"))
    if "cmp" in kinds and numeric:
        k = rng.choice([0, 3, -7, 1.5] if floats else [0, 3, -7, 3000000000])
        lines += ["C(x, y) = E(x, y) (x < y)", f"D(x) = V(x) (x >= {k})",
                  "Q(x) = E(x, y) (x == y)"]
        queries.append(("C(x, y)?", "SELECT DISTINCT x, y FROM e WHERE x < y"))
        queries.append(("D(x)?", f"SELECT DISTINCT x FROM v WHERE x >= {k}"))
        queries.append(("Q(x)?", "SELECT DISTINCT x FROM e WHERE x = y"))
        if not floats:  # arithmetic in int64, wrapping past 64 bits as Soufflé's numbers do
            def wrap(expr: str) -> str:
                return (f"((({expr}) + 9223372036854775808) % 18446744073709551616 + "
                        "18446744073709551616) % 18446744073709551616 - 9223372036854775808")

            lines += [f"Dif(x, y) = E(x, y) (x - y > {k})", "Neg(x, y) = E(x, y) (-x < y + 1)"]
            queries.append(("Dif(x, y)?", "SELECT DISTINCT x, y FROM e WHERE "
                            f"{wrap('x::HUGEINT - y')} > {k}"))
            queries.append(("Neg(x, y)?", "SELECT DISTINCT x, y FROM e WHERE "
                            f"{wrap('-x::HUGEINT')} < {wrap('y::HUGEINT + 1')}"))
    if "counter" in kinds:
        bound = rng.choice([0, 1, 10])
        lines += ["Cnt(0)", f"Cnt(m + 1) = Cnt(m) (m < {bound})"]
        queries.append(("Cnt(m)?", f"SELECT range AS m FROM range(0, {bound + 1})"))
    sinks = []
    for name, q in (("T", "T(x, y)"), ("N", "N(x, y)"), ("SG", "SG(x, y)"), ("R", "R(y)")):
        if any(line.startswith(q.split("(")[0] + "(") for line in lines):
            # .facts has no quoting: a string with a tab or a quote is refused there (documented)
            safe = all(isinstance(v, (int, float)) or ("\t" not in v and '"' not in v
                                                        and v == v.strip()) for v in values)
            sink_ext = rng.choice([".tsv", ".csv", ".facts"] if safe else [".tsv", ".csv"])
            sinks.append((f"out_{name}{sink_ext}", q))
    sql_of_sink = {}
    for path, q in sinks:
        lines.append(f'"{path}" = {q}')
        sql_of_sink[path] = next((i for i, (qq, _) in enumerate(queries) if qq == q + "?"), None)
    return {"files": files, "numeric": numeric, "floats": floats, "program": "\n".join(lines) + "\n" +
            "\n".join(q for q, _ in queries) + "\n", "queries": queries, "sinks": sql_of_sink}


def fuse_const(v) -> str:
    if isinstance(v, (int, float)):
        return str(v)
    if v[:1].isupper() and v.isidentifier():
        return v
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sql_literal(v) -> str:
    if isinstance(v, float):
        return f"CAST('{v}' AS DOUBLE)"
    if isinstance(v, int):
        return f"CAST('{v}' AS BIGINT)"  # -2^63 as a literal would be -(2^63), past BIGINT
    return "'" + v.replace("'", "''") + "'"


# ----------------------------------------------------------------- the engines


def duckdb_answers(case: dict) -> list[set]:
    import duckdb

    con = duckdb.connect()
    kind = "DOUBLE" if case["floats"] else "BIGINT" if case["numeric"] else "VARCHAR"
    for name, (rows, _) in case["files"].items():
        table, arity = name.split(".")[0], 2 if name.startswith("e") else 1
        cols = ", ".join(f"{c} {kind}" for c in "xy"[:arity])
        con.execute(f"CREATE TABLE {table} ({cols})")
        if rows:
            con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * arity)})",
                            [tuple(enc(v, case["numeric"]) for v in r) for r in rows])
    out = []
    for _, sql in case["queries"]:
        rows = con.execute(sql).fetchall()
        if sql.startswith("-- ground"):  # yes: the one empty tuple; no: none
            out.append({()} if rows else set())
            continue
        out.append({tuple(dec(v, case["numeric"]) for v in row) for row in rows})
    return out


def enc(v, numeric: bool):
    """Mixed columns in DuckDB: every value a tagged string (1 and "1" stay apart)."""
    return v if numeric else (f"i:{v}" if isinstance(v, int) else f"s:{v}")


def dec(v, numeric: bool):
    if numeric or not isinstance(v, str) or v[:2] not in ("i:", "s:"):
        return v
    return int(v[2:]) if v[:2] == "i:" else v[2:]


def fuse_answers(case: dict, folder: Path, backend: str, rep: str, mode: str):
    import fuse_lang
    from fuse_lang.plan.config import ExecutionConfig

    text = case["program"]
    names = sorted({line.split("(")[0] for line in text.splitlines()  # sparse: 2 axes or more
                    if line[:1].isupper() and "," in line.split(")")[0]})
    representation = {n: rep for n in names} if rep != "auto" else None
    program = fuse_lang.compile(text, base_dir=folder, representation=representation,
                                config=ExecutionConfig(backend=backend, mode=mode))
    result = program.execute()
    return [set(q.tuples) for q in result.queries]


def norm(t: tuple) -> tuple:
    return tuple(int(v) if isinstance(v, float) and v.is_integer() else v for v in t)


def norm_all(rows: set) -> set:
    return {norm(t) for t in rows}


def read_back(path: Path) -> tuple[set, list[str]]:
    """A sink file read by DuckDB: its tuples and column types."""
    import duckdb

    if path.stat().st_size == 0:
        return set(), []
    ext = path.suffix
    quote = "" if ext == ".facts" else '"'
    delim = "," if ext == ".csv" else "\t"
    rel = duckdb.sql(f"SELECT * FROM read_csv('{path}', delim='{delim}', quote='{quote}', "
                     f"escape='{quote}', header=false, comment='', auto_detect=true)")  # `#` is data
    return {tuple(r) for r in rel.fetchall()}, [str(t) for t in rel.types]


def check_sink(path: Path, want: set, floats: bool) -> str | None:
    got, types = read_back(path)
    if not want:
        return None if not got else f"{path.name}: {got} for the empty relation"
    want = norm_all(want)
    width = len(next(iter(want)))
    ints = [all(type(t[i]) is int for t in want) for i in range(width)]
    nums = [all(isinstance(t[i], (int, float)) for t in want) for i in range(width)]
    for i in range(width):
        # floats: DuckDB's DOUBLE answers say nothing of which numbers were integers
        if ints[i] and not floats and types[i] not in ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT",
                                        "UBIGINT"):
            return f"{path.name}: column {i} of integers reads back as {types[i]}"
        if nums[i] and not ints[i] and types[i] != "DOUBLE":
            return f"{path.name}: column {i} of numbers reads back as {types[i]}"
    got = norm_all(got)
    fixed = {tuple(v if nums[i] else str(v) for i, v in enumerate(t)) for t in got}
    want_t = {tuple(v if nums[i] else str(v) for i, v in enumerate(t)) for t in want}
    if fixed != want_t:
        return f"{path.name}: read back {sorted(map(str, fixed))} want {sorted(map(str, want_t))}"
    return None


def run_case(case: dict, configs, verbose: bool) -> list[str]:
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (rows, header) in case["files"].items():
            write_relation(folder / name, rows, header)
        want = duckdb_answers(case)
        for backend, rep, mode in configs:
            where = f"{backend}/{rep}/{mode}"
            try:
                got = fuse_answers(case, folder, backend, rep, mode)
            except Exception as e:  # noqa: BLE001 - a failure is a finding
                problems.append(f"{where}: {type(e).__name__}: {str(e)[:400]}")
                continue
            for (q, _), g, w in zip(case["queries"], got, want):
                g, w = norm_all(g), norm_all(w)
                if g != w:
                    problems.append(f"{where}: {q} fuse-only {sorted(map(str, g - w))[:6]} "
                                    f"duckdb-only {sorted(map(str, w - g))[:6]}")
            for path, q in case["sinks"].items():
                if q is not None:
                    if not (folder / path).exists():
                        problems.append(f"{where}: sink {path} not written")
                        continue
                    msg = check_sink(folder / path, want[q], case["floats"])
                    if msg:
                        problems.append(f"{where}: sink {msg}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backends", default="numpy,torch,jax")
    args = ap.parse_args()
    configs = [(b, r, m) for b in args.backends.split(",") for r in ("dense", "sparse")
               for m in ("forward", "demand")]
    bad = 0
    for i in range(args.cases):
        rng = random.Random(args.seed * 100003 + i)
        case = make_case(rng)
        problems = run_case(case, configs, False)
        if problems:
            bad += 1
            print(f"--- case {i} (seed {args.seed}) ---")
            print(case["program"])
            for name, (rows, header) in case["files"].items():
                print(f"  {name} header={header}: {rows}")
            for p in dict.fromkeys(problems):
                print("  " + p)
    print(f"{args.cases} cases, {bad} with disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
