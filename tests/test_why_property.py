"""Why's derivations on random small Datalog programs, against a brute force: every
derivation returned is valid (each step's rule holds for its bindings: its head is the
node's tuple, its positive atoms are the children, its `not` atoms and comparisons
hold; leaves are facts) and minimal in height (the round of naive evaluation in which
the tuple first appears); every tuple that does not hold gets a why-not."""
from __future__ import annotations

import itertools
import random

import pytest

import fuse_lang

SYMBOLS = ("A", "B", "C", "D", "E")
EDB = {"Edge": 2, "Flag": 1}
IDB = {"P": 2, "Q": 1}
VARS = ("x", "y", "z")


def random_program(rng: random.Random) -> tuple[str, dict, dict]:
    """Facts of Edge and Flag, then rules: Q's read Edge, Flag and Q (`not Flag`), P's
    read all four (`not Flag` or `not Q`): recursion in both, negation stratified."""
    facts = {"Edge": {(rng.choice(SYMBOLS), rng.choice(SYMBOLS))
                      for _ in range(rng.randint(3, 9))},
             "Flag": {(rng.choice(SYMBOLS),) for _ in range(rng.randint(1, 4))}}
    rules = []
    for head in ("Q", "P", *rng.sample(["P", "Q"], rng.randint(0, 2)), "P"):
        readable = ["Edge", "Flag", "Q", "Edge"] + (["P", "Q"] if head == "P" else [])
        atoms = []
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(readable)
            atoms.append((name, tuple(rng.choice(VARS) for _ in range(
                EDB.get(name) or IDB[name]))))
        bound = sorted({v for _, args in atoms for v in args})
        head_args = tuple(rng.sample(bound, 1) * IDB[head]) if len(bound) < IDB[head] \
            else tuple(rng.sample(bound, IDB[head]))
        negated = []
        if rng.random() < 0.4:
            negated.append((rng.choice(["Flag", "Q"] if head == "P" else ["Flag"]),
                            (rng.choice(bound),)))
        compare = None
        if rng.random() < 0.3:  # (symbols compare with `!=` in their own column)
            compare = (rng.choice(bound), rng.choice(SYMBOLS))
        rules.append((head, head_args, atoms, negated, compare))
    lines = [f"{r}({', '.join(t)})" for r in EDB for t in sorted(facts[r])]
    first_rule_line = len(lines) + 1
    for head, args, atoms, negated, compare in rules:
        body = " ".join([f"{n}({', '.join(a)})" for n, a in atoms] +
                        [f"not {n}({', '.join(a)})" for n, a in negated] +
                        ([f"({compare[0]} != {compare[1]})"] if compare else []))
        lines.append(f"{head}({', '.join(args)}) = {body}")
    lines.append("export P, Q")
    by_line = {first_rule_line + k: rule for k, rule in enumerate(rules)}
    return "\n".join(lines) + "\n", facts, by_line


def solutions(rule, db):
    head, head_args, atoms, negated, compare = rule
    partial = [{}]
    for name, args in atoms:
        out = []
        for b in partial:
            for t in db[name]:
                e = dict(b)
                if all(e.setdefault(v, c) == c for v, c in zip(args, t)):
                    out.append(e)
        partial = out
    for b in partial:
        if any(tuple(b[v] for v in a) in db[n] for n, a in negated):
            continue
        if compare and b[compare[0]] == compare[1]:
            continue
        yield b


def brute_heights(facts, rules):
    """The model, stratum by stratum (Q, then P) by naive rounds; then each tuple's
    least height by relaxing every rule instance until nothing changes (facts: 0;
    a derived tuple: 1 + the largest height of its instance's positive atoms)."""
    db = {**{r: set(ts) for r, ts in facts.items()}, "P": set(), "Q": set()}
    for stratum in ("Q", "P"):
        while True:
            new = {(stratum, tuple(b[v] for v in rule[1]))
                   for rule in rules.values() if rule[0] == stratum
                   for b in solutions(rule, db)} - {(stratum, t) for t in db[stratum]}
            if not new:
                break
            db[stratum] |= {t for _, t in new}
    height = {(r, t): 0 for r, ts in facts.items() for t in ts}
    instances = [(rule[0], tuple(b[v] for v in rule[1]),
                  [(n, tuple(b[v] for v in a)) for n, a in rule[2]])
                 for rule in rules.values() for b in solutions(rule, db)]
    changed = True
    while changed:
        changed = False
        for head, values, body in instances:
            if all(k in height for k in body):
                h = 1 + max(height[k] for k in body)
                if h < height.get((head, values), h + 1):
                    height[(head, values)] = h
                    changed = True
    return height, db


def check_tree(node, rules, facts, db, height):
    key = (node.relation, node.values)
    assert node.height == height[key], (node.text, node.height, height[key])
    if node.kind == "fact":
        assert node.relation in facts and node.values in facts[node.relation]
        assert not node.children
        return
    assert node.kind == "rule"
    head, head_args, atoms, negated, compare = rules[node.place.line]
    b = dict(node.bindings)
    assert head == node.relation and tuple(b[v] for v in head_args) == node.values
    body = [(n, tuple(b[v] for v in a)) for n, a in atoms]
    assert [(c.relation, c.values) for c in node.children] == body
    assert all(t in db[n] for n, t in body)
    assert not any(tuple(b[v] for v in a) in db[n] for n, a in negated)
    assert not compare or b[compare[0]] != compare[1]
    assert node.height == 1 + max(c.height for c in node.children)
    for child in node.children:
        check_tree(child, rules, facts, db, height)


@pytest.mark.parametrize("seed", range(80))
def test_derivations_are_valid_and_minimal(seed):
    rng = random.Random(seed)
    text, facts, rules = random_program(rng)
    try:
        program = fuse_lang.compile(text)
    except fuse_lang.FuseError:  # (a program the checker refuses: none expected)
        pytest.fail(f"refused:\n{text}")
    result = program.execute()
    height, db = brute_heights(facts, rules)
    for name, arity in IDB.items():
        for values in itertools.product(SYMBOLS, repeat=arity):
            answer = result.why(name, values, limit=10_000)
            if values in db[name]:
                assert type(answer).__name__ == "Derivation", (text, answer)
                check_tree(answer, rules, facts, db, height)
            else:
                assert type(answer).__name__ == "WhyNot", (text, answer)
                assert (answer.rules and all(b.reason for b in answer.rules)) or \
                    "no value" in answer.note
