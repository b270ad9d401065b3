"""Demand mode, queries and why against a naive evaluator (an audit's fuzzer, slower
and wider than benchmarks/datalog_fuzz.py): random stratified programs (facts and
.tsv files, symbols, strings, `"1"` beside `1`, negative integers; recursion, mutual
and non-linear (`P(x,z) = P(x,y) P(y,z)`); negation of lower strata with `_`;
comparisons; computed heads `v - 1`; constants in heads, bodies and queries;
repeated variables in queries `P(x, x)?`; queries with no answer; half of them
exporting every relation), each run forward, by demand and by demand with naive
rounds.  Checked: every query's answer against the evaluator, the exports' arrays
of the three runs equal, every `why` of a tuple a valid derivation (each node holds,
each fact cited at its line, each rule step an instance of the rule at the line it
cites, its comparisons true and its negations without a match) and a tuple that
does not hold a WhyNot, and the rule lines a demand run's trace cites are the
program's rules of that relation.  Prints the programs with problems; exits 1 when
there are some.  Not run by the test suite:

    python benchmarks/demand_fuzz.py --seeds 300 [--start 1000]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# the conformance test's matching of a rule's terms against a row (values by kind)
from test_datalog_conformance import _holds, _match  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang import ExecutionConfig, Severity  # noqa: E402

SYMS = ["A", "B", "C", "D"]
STRS = ["a b", "1"]
INTS = [-2, 0, 1, 2, 3]
VALUES = {"sym": SYMS + STRS, "int": INTS}
OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
       ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
def key(v):
    return (type(v) is str, v)


def const_text(v, rng):
    if type(v) is int:
        return str(v)
    if v[:1].isupper() and v.isalnum() and rng.random() < 0.7:
        return v
    return json.dumps(v)


class Prog:
    def __init__(self, rng: random.Random, nonlinear=True):
        self.rng = rng
        self.cols: dict[str, tuple] = {}
        self.stratum: dict[str, int] = {}
        self.facts: dict[str, set] = {}
        self.files: dict[str, str] = {}
        self.rules: list = []  # (head, terms, body)
        for k in range(rng.randrange(1, 4)):
            name = f"E{k}"
            self.cols[name] = tuple(rng.choice(["sym", "sym", "int"]) for _ in range(rng.choice((1, 2, 2, 2, 3))))
            self.stratum[name] = -1
            self.facts[name] = {tuple(rng.choice(VALUES[t]) for t in self.cols[name])
                                for _ in range(rng.randrange(0, 14))}
            if rng.random() < 0.3 or not self.facts[name]:
                self.files[name] = f"{name.lower()}.tsv"
        idb = [f"P{k}" for k in range(rng.randrange(1, 5))]
        level = 0
        for k, name in enumerate(idb):
            level += 1 if k and rng.random() < 0.5 else 0
            self.stratum[name] = level
            self.cols[name] = tuple(rng.choice(["sym", "sym", "int"]) for _ in range(rng.choice((1, 2, 2, 2, 3))))
        for name in idb:
            for j in range(rng.randrange(1, 4)):
                r = self.rule(name, base=(j == 0))
                if r:
                    self.rules.append(r)
            # a non-linear / transitive rule
            if nonlinear and len(self.cols[name]) == 2 and len(set(self.cols[name])) == 1 and rng.random() < 0.5:
                self.rules.append((name, ("x", "z"), (("pos", name, ("x", "y")), ("pos", name, ("y", "z")))))
        self.drop_undefined()
        self.queries = []
        for name in self.idb + [rng.choice(sorted(self.facts))]:
            for _ in range(rng.randrange(1, 4)):
                self.queries.append((name, self.query(name)))

    def drop_undefined(self):
        while True:
            defined = {r[0] for r in self.rules}
            kept = [r for r in self.rules if all(i[1] in self.facts or i[1] in defined
                                                 for i in r[2] if i[0] != "cmp")]
            if kept == self.rules:
                break
            self.rules = kept
        self.idb = sorted({r[0] for r in self.rules})

    def terms(self, name, kinds, fresh):
        rng = self.rng
        out = []
        for t in self.cols[name]:
            same = [v for v, k in kinds.items() if k == t]
            r = rng.random()
            if same and r < 0.45:
                out.append(rng.choice(same))  # may repeat within the atom
            elif r < 0.5:
                out.append(("c", rng.choice(VALUES[t])))
            elif r < 0.57 or not fresh:
                out.append("_")
            else:
                v = f"v{len(kinds)}"
                kinds[v] = t
                out.append(v)
        return tuple(out)

    def rule(self, head, base=False):
        rng = self.rng
        readable = [r for r in self.cols if self.stratum[r] < self.stratum[head] or (not base and self.stratum[r] == self.stratum[head])]
        kinds = {}
        body = [("pos", n, self.terms(n, kinds, True)) for n in
                (rng.choice(readable) for _ in range(rng.randrange(1, 4)))]
        bound = dict(kinds)
        for _ in range(rng.randrange(0, 3) if bound else 0):
            a = rng.choice(sorted(bound))
            others = [v for v in bound if v != a and bound[v] == bound[a]]
            ops = list(OPS) if bound[a] == "int" else ["==", "!="]
            op = rng.choice(ops)
            if others and rng.random() < 0.5:
                body.append(("cmp", a, op, rng.choice(others)))
            else:
                body.append(("cmp", a, op, ("c", rng.choice(VALUES[bound[a]]))))
        lower = [r for r in self.cols if self.stratum[r] < self.stratum[head]]
        if lower and rng.random() < 0.35:
            n = rng.choice(lower)
            body.append(("neg", n, self.terms(n, dict(bound), False)))
        if rng.random() < 0.4:  # a negation or comparison before what binds it
            body = rng.sample(body, len(body))
        hterms = []
        for t in self.cols[head]:
            same = [v for v, k in bound.items() if k == t]
            if same and rng.random() < 0.85:
                hterms.append(rng.choice(same))
            elif rng.random() < 0.6:
                hterms.append(("c", rng.choice(VALUES[t])))
            else:
                return None
        if self.cols[head][0] == "int" and type(hterms[0]) is str and rng.random() < 0.3:
            v = hterms[0]
            body += [("cmp", v, "<", ("c", 5)), ("cmp", v, ">", ("c", -3))]
            hterms[0] = ("add", v, rng.choice((1, -1)))
        return head, tuple(hterms), tuple(body)

    def query(self, name):
        rng = self.rng
        out = []
        for t in self.cols[name]:
            r = rng.random()
            prev = [x for x in out if type(x) is str and x != "_"]
            if r < 0.3:
                out.append(("c", rng.choice(VALUES[t])))
            elif r < 0.4:
                out.append("_")
            elif r < 0.55 and prev:
                # repeat a variable of the same kind
                same = [x for x, tt in zip(out, self.cols[name]) if x in prev and tt == t]
                out.append(rng.choice(same) if same else f"q{len(out)}")
            else:
                out.append(f"q{len(out)}")
        return tuple(out)

    # text
    def term(self, t):
        if type(t) is str:
            return t
        if t[0] == "c":
            return const_text(t[1], self.rng)
        return f"{t[1]} + {t[2]}" if t[2] > 0 else f"{t[1]} - {-t[2]}"

    def atom(self, name, terms):
        return f"{name}({', '.join(self.term(t) for t in terms)})"

    def text(self, folder: Path):
        lines = []
        self.line_of = {}  # line (1-based) -> ("fact", name, row) / ("rule", idx)
        self.rows = {}  # (relation, line of its file) -> the row
        for name, rows in self.facts.items():
            if name in self.files:
                cols = ", ".join(f"c{k}" for k in range(len(self.cols[name])))
                lines.append(f'{name}({cols}) = "{self.files[name]}"')
                self.line_of[len(lines)] = ("file", name)
                ordered = sorted(rows, key=lambda r: tuple(map(key, r)))
                self.rows.update({(name, k + 1): r for k, r in enumerate(ordered)})
                (folder / self.files[name]).write_text("".join(
                    "\t".join(f'"{v}"' if type(v) is str and not v[:1].isupper() else str(v)
                              for v in r) + "\n" for r in sorted(rows, key=lambda r: tuple(map(key, r)))))
            else:
                for r in sorted(rows, key=lambda r: tuple(map(key, r))):
                    lines.append(self.atom(name, [("c", v) for v in r]))
                    self.line_of[len(lines)] = ("fact", name, r)
        for idx, (head, hterms, body) in enumerate(self.rules):
            parts = [self.atom(i[1], i[2]) if i[0] == "pos" else
                     "not " + self.atom(i[1], i[2]) if i[0] == "neg" else
                     f"({i[1]} {i[2]} {i[3] if type(i[3]) is str else const_text(i[3][1], self.rng)})"
                     for i in body]
            lines.append(f"{self.atom(head, hterms)} = {' '.join(parts)}")
            self.line_of[len(lines)] = ("rule", idx)
        for name, terms in self.queries:
            lines.append(self.atom(name, terms) + "?")
        return "\n".join(lines) + "\n"


def head_row(env, hterms):
    return tuple(env[t] if type(t) is str else t[1] if t[0] == "c" else env[t[1]] + t[2]
                 for t in hterms)


def body_envs(db, body, env=None):
    envs = [env or {}]
    for item in body:
        if item[0] == "pos":
            envs = [e for en in envs for row in db[item[1]]
                    if (e := _match(item[2], row, en)) is not None]
    return [en for en in envs if all(_holds(en, i) for i in body if i[0] == "cmp")
            and not any(_match(i[2], row, en) is not None for i in body if i[0] == "neg"
                        for row in db[i[1]])]


def reference(p: Prog):
    db = {n: set(r) for n, r in p.facts.items()}
    db.update({n: set() for n in p.idb})
    for level in sorted({p.stratum[n] for n in p.idb}):
        rules = [r for r in p.rules if p.stratum[r[0]] == level]
        changed = True
        while changed:
            changed = False
            for head, hterms, body in rules:
                for env in body_envs(db, body):
                    row = head_row(env, hterms)
                    if row not in db[head]:
                        db[head].add(row)
                        changed = True
    return db


def answer(db, name, terms):
    free = list(dict.fromkeys(t for t in terms if type(t) is str and t != "_"))
    return {tuple(key(env[v]) for v in free) for row in db[name]
            if (env := _match(terms, row, {})) is not None}



def run(text, folder, mode):
    mode, _, fix = mode.partition("+")
    config = ExecutionConfig(mode=mode, fixpoint=fix or "semi_naive", trace=True)
    res = fuse_lang.compile(text, base_dir=folder, config=config).execute()
    return res, [(q.text, set(q.tuples)) for q in res.queries]


def check_trace(p, res, problems, mode):
    """Each rule line the trace cites is a rule of the program (demand mode cited
    its rewrite's lines once)."""
    for fixpoint in res.trace["fixpoints"]:
        for round_ in fixpoint["rounds"]:
            for rule in round_.get("rules", ()):
                info = p.line_of.get(rule["line"])
                if info is None or info[0] != "rule":
                    problems.append(f"{mode}: the trace cites line {rule['line']} for "
                                    f"{rule['delta_of']}: no rule there")
                    return

def check_deriv(p, db, d, lines, problems, ctx):
    vals = tuple(d.values)
    if d.relation not in db or tuple(map(key, vals)) not in {tuple(map(key, r)) for r in db[d.relation]}:
        problems.append(f"{ctx}: derivation node {d.text} not in reference")
        return
    if d.kind == "fact":
        info = p.line_of.get(d.place.line)
        if info is None or info[0] != "fact" or info[1] != d.relation or tuple(map(key, info[2])) != tuple(map(key, vals)):
            problems.append(f"{ctx}: fact {d.text} cites line {d.place.line} {d.place.text!r} = {lines[d.place.line-1]!r}")
        if d.place.text.strip() != lines[d.place.line-1].strip():
            problems.append(f"{ctx}: place text {d.place.text!r} != line {lines[d.place.line-1]!r}")
        return
    if d.kind == "file":  # the file's row at the line cited, and what it holds
        row = p.rows.get((d.relation, d.place.line))
        if row is None or tuple(map(key, row)) != tuple(map(key, vals)):
            problems.append(f"{ctx}: {d.text} cites {d.place.file}:{d.place.line}, which "
                            f"holds {row}")
        return
    if d.kind != "rule":
        problems.append(f"{ctx}: kind {d.kind}")
        return
    info = p.line_of.get(d.place.line)
    if info is None or info[0] != "rule":
        problems.append(f"{ctx}: rule node {d.text} cites line {d.place.line} {d.place.text!r}")
        return
    head, hterms, body = p.rules[info[1]]
    if d.place.text.strip() != lines[d.place.line-1].strip():
        problems.append(f"{ctx}: place text {d.place.text!r} != line {lines[d.place.line-1]!r}")
    env = dict(d.bindings)
    if head != d.relation:
        problems.append(f"{ctx}: {d.text} by a rule of {head}")
        return
    try:
        row = head_row(env, hterms)
    except KeyError as e:
        problems.append(f"{ctx}: {d.text} missing binding {e} {d.bindings}")
        return
    if tuple(map(key, row)) != tuple(map(key, vals)):
        problems.append(f"{ctx}: {d.text} head instance {row} with {d.bindings}")
    # body
    pos = []
    for item in body:
        if item[0] == "pos":
            e2 = dict(env)
            inst = []
            for t in item[2]:
                if t == "_":
                    inst.append(None)
                elif type(t) is str:
                    if t not in e2:
                        problems.append(f"{ctx}: {d.text} unbound {t}"); return
                    inst.append(e2[t])
                else:
                    inst.append(t[1])
            pos.append((item[1], inst))
        elif item[0] == "cmp":
            try:
                if not _holds(env, item):
                    problems.append(f"{ctx}: {d.text} comparison {item} false under {env}")
            except KeyError as e:
                problems.append(f"{ctx}: {d.text} comparison unbound {e}")
        else:
            if any(_match(item[2], r, env) is not None for r in db[item[1]]):
                problems.append(f"{ctx}: {d.text} negation {item} fails under {env}")
    kids = [(c.relation, tuple(c.values)) for c in d.children]
    if len(kids) != len(pos):
        # children may be deduplicated
        pass
    for rel, inst in pos:
        if not any(r == rel and len(v) == len(inst) and all(a is None or key(a) == key(b) for a, b in zip(inst, v)) for r, v in kids):
            problems.append(f"{ctx}: {d.text} body atom {rel}{inst} has no child among {kids}")
    for c in d.children:
        check_deriv(p, db, c, lines, problems, ctx)
    if d.children and d.height != 1 + max(c.height for c in d.children):
        problems.append(f"{ctx}: {d.text} height {d.height}")

def one(p, do_why=True):
    problems = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        text = p.text(folder)
        if p.rng.random() < 0.5 and p.idb:
            text += "export " + ", ".join(p.idb) + "\n"
        errs = [(d.code, d.message) for d in fuse_lang.analyze(text, base_dir=folder).diagnostics if d.severity is Severity.ERROR]
        if errs:
            return [f"errors {errs}"], text
        db = reference(p)
        lines = text.splitlines()
        outs = {}
        for mode in ("forward", "demand", "demand+naive"):
            try:
                res, got = run(text, folder, mode)
                check_trace(p, res, problems, mode)
                outs[mode] = {k: (v.shape, v.tolist()) for k, v in res.outputs.items()}
                outs[mode]["queries"] = [(q.text, q.tensor, q.free, q.value.shape,
                                          q.value.tolist()) for q in res.queries]
                if outs[mode] != outs["forward"]:
                    problems.append(f"{mode}: outputs differ {outs[mode]} vs {outs['forward']}")
            except Exception as e:
                return [f"{mode} raised {type(e).__name__}: {e}\n" + traceback.format_exc()[-1500:]], text
            for (name, terms), (qt, ans) in zip(p.queries, got):
                want = answer(db, name, terms)
                have = {tuple(map(key, r)) for r in ans}
                if have != want:
                    problems.append(f"{mode}: {qt} got {sorted(have)[:6]} want {sorted(want)[:6]}")
            if do_why:
                for name in p.idb:
                    for row in list(db[name])[:4]:
                        try:
                            d = res.why(name, row)
                        except Exception as e:
                            problems.append(f"{mode} why {name}{row} raised {type(e).__name__}: {e}")
                            continue
                        if type(d).__name__ != "Derivation":
                            problems.append(f"{mode} why {name}{row}: {type(d).__name__}")
                            continue
                        check_deriv(p, db, d, lines, problems, f"{mode} why {name}{row}")
                    # a non-tuple
                    vals = tuple(p.rng.choice(VALUES[t]) for t in p.cols[name])
                    if vals not in db[name]:
                        try:
                            d = res.why(name, vals)
                            if type(d).__name__ != "WhyNot":
                                problems.append(f"{mode} why-not {name}{vals}: {type(d).__name__}")
                        except Exception as e:
                            if 'does not hold' not in str(e):
                                problems.append(f"{mode} why-not {name}{vals} raised {type(e).__name__}: {e}")
    return problems, text

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="programs (one per seed)")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--no-why", action="store_true", help="answers and arrays only")
    options = parser.parse_args()
    bad = 0
    for seed in range(options.start, options.start + options.seeds):
        program = Prog(random.Random(seed))
        problems, text = one(program, not options.no_why)
        if problems:
            bad += 1
            print(f"=== seed {seed}\n{text}")
            for problem in problems[:8]:
                print("  ", problem)
            sys.stdout.flush()
    print(f"{options.seeds} programs, 3 runs each: {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
