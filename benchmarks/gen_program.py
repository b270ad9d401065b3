"""Generate large, well-formed Fuse programs for the benchmarks.

`generate(lines, data_dir)` writes the source files the program reads
(small .npy arrays and a relation file) into `data_dir` and returns program
text of about `lines` lines: sources, chains of equations with joins and
nonlinearities, softmax over dotted axes, Datalog rules with recursion and
numeric recursion through offsets.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def write_data(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    np.save(data_dir / "x.npy", rng.standard_normal((16, 32)).astype(np.float32))
    np.save(data_dir / "w.npy", rng.standard_normal((32, 32)).astype(np.float32))
    (data_dir / "edges.tsv").write_text(
        "".join(f"N{a}\tN{b}\n" for a, b in rng.integers(0, 40, size=(60, 2))),
        encoding="utf-8")


def generate(lines: int, data_dir: Path) -> str:
    write_data(data_dir)
    rel = data_dir.name
    out = [
        f'X[p,d] = "{rel}/x.npy"',
        f'W[d,e] = "{rel}/w.npy"',
        f'Edge(a,b) = "{rel}/edges.tsv"',
        "axis h = 32, l = 8",  # (l: the recurrences L over l-1 have 8 steps)
    ]
    block = 0
    prev = "X"
    while len(out) < lines - 2:
        k = block
        out += [
            f"# block {k}",
            f"H{k}[p,e] = relu(W[d,e] {prev}[p,d] + 0.5)",
            f"S{k}[p,p'.] = softmax(H{k}[p,e] H{k}[p',e] / sqrt(32))",
            f"A{k}[p,e] = S{k}[p,p'] H{k}[p',e]",
            f"M{k}[e] max= A{k}[p,e]",
            f"N{k}[p,e] = lnorm(A{k}[p,e] + {prev}[p,e], eps=1e-5)",
            f"Reach{k}(a,b) = Edge(a,b)",
            f"Reach{k}(a,c) = Reach{k}(a,b) Edge(b,c)",
            f"L{k}[l,e] = tanh(W[e,e'] L{k}[l-1,e'] + M{k}[e])",
        ]
        prev = f"N{k}"
        block += 1
    out.append(f"export {prev}, M0, Reach0")
    out.append("Reach0(N1, x)?")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[2] if len(sys.argv) > 2 else "gen.fuse")
    text = generate(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
                    target.parent / "gen_data")
    target.write_text(text, encoding="utf-8")
