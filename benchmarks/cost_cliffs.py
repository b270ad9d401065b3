"""Program shapes whose cost could grow faster than their size (issue 28, item 5,
"linear costs", generalised to shapes benchmarks/gen_program.py never makes).

Each case is a shape (a program's text at a size n), an operation, and two sizes,
n and 4n.  The operations are called in this process as a user of the API or an
editor calls them (the cycle collector on, as a user's process has it), timed
by CPU time (time.process_time: steadier than the wall on a loaded machine), the
median of `--runs`:

- `check`: fuse_lang.analyze;  `compile`: fuse_lang.compile;
- `explain`: fuse_lang.explain of a program just compiled;
- `run`: CompiledProgram.execute of a program compiled before (the numpy backend);
- `fmt`: ide.formatting.format_text;  `fmtline`: ide.formatting.format_lines of the
  line in the middle (an editor's "format selection");
- `tokens`: ide.semantic_tokens.semantic_tokens;
- `hover`: ide.hover.hover_at, in the middle of the text.

The baseline, measured in the same run at the same sizes, is the check of a
plain chain of tensors (`T7[i] = T6[i] + 1`, known linear): its growth is what
linear costs look like on this machine under its present load.  Each row prints
both times, the growth (the time at 4n over the time at n: about 4 is linear,
about 16 quadratic) and the growth over the baseline's (about 1: linear).

Shapes fixed here (before -> after, growth at 4n): a 1-D relation reached over a
path (`run`, 16 -> 1: a round read all of R), a recursive group of N relations
in a cycle (`run`, about 16 -> about 12, and 3x less), explain of one tensor's
8,000 equations and compile of 4,000 warnings (about 9 -> 4: the collector
rescanned the plan), formatting a line of a file of facts (4 -> 1: the whole
file was its paragraph).  A line of a block of n equations still formats the
whole block (their `=` signs align), and a long recursive group's rounds still
copy its members' dictionaries (in C) each round.

    python benchmarks/cost_cliffs.py [--runs 3] [--small]

`--small` (the smoke test): sizes a twentieth as large, one run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

ROOT = Path(__file__).resolve().parent.parent  # this tree
sys.path.insert(0, str(ROOT))

import fuse_lang  # noqa: E402
from fuse_lang.ide.formatting import format_lines, format_text  # noqa: E402
from fuse_lang.ide.hover import hover_at  # noqa: E402
from fuse_lang.ide.semantic_tokens import semantic_tokens  # noqa: E402


def chain(n: int, _folder: Path) -> str:
    return "T0[i] = const([1,2,3])\n" + \
        "".join(f"T{k + 1}[i] = T{k}[i] + 1\n" for k in range(n)) + f"export T{n}\n"


def long_sum(n: int, _folder: Path) -> str:
    return "".join(f"X{k}[i] = const([1,2,3])\n" for k in range(n)) + \
        "Y[i] = " + " + ".join(f"X{k}[i]" for k in range(n)) + "\nexport Y\n"


def long_product(n: int, _folder: Path) -> str:
    return "".join(f"X{k}[i] = const([1,1,1])\n" for k in range(n)) + \
        "Y[i] = " + " ".join(f"X{k}[i]" for k in range(n)) + "\nexport Y\n"


def equations(n: int, _folder: Path) -> str:
    """One tensor with n equations."""
    return "X[i] = const([1,2,3])\n" + "".join(f"Y[i] += {k} X[i]\n" for k in range(n)) + \
        "export Y\n"


def facts(n: int, _folder: Path) -> str:
    return "".join(f"Edge({k},{k + 1})\n" for k in range(n)) + "Path(x,y) = Edge(x,y)\nexport Path\n"


def const_literal(n: int, _folder: Path) -> str:
    return "X[i] = const([" + ",".join(str(k % 97) for k in range(n)) + "])\nY[i] = 2 X[i]\nexport Y\n"


def lets(n: int, _folder: Path) -> str:
    body = "".join(f"  let h{k + 1}[i] = h{k}[i] + 1\n" for k in range(n))
    return "X[i] = const([1,2,3])\n{\n  let h0[i] = X[i]\n" + body + f"  Y[i] = h{n}[i]\n}}\nexport Y\n"


def fn_calls(n: int, _folder: Path) -> str:
    return "fn inc(a[i]) -> o[i] { o[i] = a[i] + 1 }\nT0[i] = const([1,2,3])\n" + \
        "".join(f"T{k + 1}[i] = inc(T{k}[i])\n" for k in range(n)) + f"export T{n}\n"


def warnings(n: int, _folder: Path) -> str:
    """n warnings (a numeric tensor read with `( )`)."""
    return "".join(f"A{k}[i] = const([1,2])\nB{k}[i] = A{k}(i)\n" for k in range(n))


def errors_on_one_line(n: int, _folder: Path) -> str:
    return "Y[i] = " + " + ".join(f"U{k}[i]" for k in range(n)) + "\n"


def long_string(n: int, _folder: Path) -> str:
    """A sink's path of 100 n characters."""
    return 'X[i] = const([1,2])\n"' + "y" * (100 * n) + '.npy" = X[i]\nexport X\n'


def import_chain(n: int, folder: Path) -> str:
    """main.fuse imports m0.fuse, which imports m1.fuse, ... m{n-1}.fuse."""
    place = folder / f"imports_{n}"
    place.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        body = "T[i] = const([1,2,3])\n" if k == n - 1 else \
            f'import "m{k + 1}.fuse" as m\nT[i] = m::T[i] + 1\n'
        (place / f"m{k}.fuse").write_text(body, encoding="utf-8")
    return f'import "imports_{n}/m0.fuse" as m\nY[i] = m::T[i]\nexport Y\n'


def recursive_group(n: int, _folder: Path) -> str:
    """n relations in one recursive group, each a copy of the one before: O(n) rounds."""
    return "Edge(A,B)\nEdge(B,C)\nEdge(C,A)\nR0(x,y) = Edge(x,y)\n" + \
        "".join(f"R{k + 1}(x,y) = R{k}(x,y)\n" for k in range(n - 1)) + \
        f"R0(x,z) = R{n - 1}(x,y) Edge(y,z)\nexport R0\n"


def reachability(n: int, _folder: Path) -> str:
    """A 1-D relation reached from one node over a path of n edges: n rounds."""
    return "".join(f"Edge({k},{k + 1})\n" for k in range(n)) + \
        "R(0)\nR(y) = R(x) Edge(x,y)\nexport R\n"


class Case(NamedTuple):
    name: str
    shape: Callable[[int, Path], str]
    op: str
    n: int  # the smaller size (the larger is 4n)


CASES = [
    Case("sum of n terms", long_sum, "check", 2000),
    Case("sum of n terms", long_sum, "explain", 2000),
    Case("product of n factors", long_product, "run", 1000),
    Case("n equations of a tensor", equations, "explain", 2000),
    Case("n equations of a tensor", equations, "tokens", 2000),
    Case("n inline facts", facts, "check", 5000),
    Case("n inline facts", facts, "fmtline", 5000),
    Case("chain of n tensors", chain, "fmtline", 2000),
    Case("const of n numbers", const_literal, "check", 25000),
    Case("const of n numbers", const_literal, "hover", 25000),
    Case("chain of n tensors", chain, "run", 2000),
    Case("n nested lets", lets, "check", 500),
    Case("n fn calls", fn_calls, "compile", 500),
    Case("n warnings", warnings, "compile", 1000),
    Case("n errors on one line", errors_on_one_line, "check", 2000),
    Case("string of 100n chars", long_string, "fmt", 1000),
    Case("import chain of n files", import_chain, "check", 50),
    Case("recursive group of n", recursive_group, "run", 100),
    Case("path of n edges, 1-D", reachability, "run", 2000),
]
BASELINE = Case("chain of n tensors", chain, "check", 2000)


def operation(op: str, text: str, folder: Path) -> Callable[[], object]:
    """What is timed: a call made ready (a program compiled, a text analysed) before."""
    path = str(folder / "main.fuse")
    if op == "check":
        return lambda: fuse_lang.analyze(text, path)
    if op == "compile":
        return lambda: fuse_lang.compile(text, base_dir=folder)
    if op == "explain":  # (explain keeps its plan: a program compiled for each call)
        program = fuse_lang.compile(text, base_dir=folder)
        return lambda: fuse_lang.explain(program)
    if op == "run":
        program = fuse_lang.compile(text, base_dir=folder)
        return lambda: program.execute(write_sinks=False)
    if op == "fmt":
        return lambda: format_text(text)
    if op == "fmtline":
        return lambda: format_lines(text, len(text) // 2, len(text) // 2)
    analysis = fuse_lang.analyze(text, path)
    if op == "tokens":
        return lambda: semantic_tokens(analysis)
    return lambda: hover_at(analysis, len(text) // 2)  # "hover"


def seconds(case: Case, n: int, folder: Path, runs: int) -> float:
    """The median CPU seconds of the case's operation at size n."""
    text = case.shape(n, folder)
    samples = []
    for _ in range(runs):
        call = operation(case.op, text, folder)
        started = time.process_time()
        call()
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def growth(case: Case, scale: int, folder: Path, runs: int) -> tuple[int, float, float]:
    n = max(case.n // scale, 2)
    # first imports (scipy's graph search) out of the way, at another size: a text
    # met before is cheaper (the lexer keeps each token's kind by its text)
    seconds(case, max(n // 2, 2), folder, 1)
    return n, seconds(case, n, folder, runs), seconds(case, 4 * n, folder, runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--small", action="store_true",
                        help="sizes a twentieth as large, one run (the smoke test)")
    args = parser.parse_args()
    scale, runs = (20, 1) if args.small else (1, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n, small, large = growth(BASELINE, scale, folder, runs)
        base = large / small if small > 0 else float("nan")
        print(f"baseline: {BASELINE.op} of a {BASELINE.name}, n {n:,}: {small * 1000:.1f} ms, "
              f"4n: {large * 1000:.1f} ms, growth {base:.2f} (size x4)", flush=True)
        for case in CASES:
            n, small, large = growth(case, scale, folder, runs)
            ratio = large / small if small > 0 else float("nan")
            print(f"{case.name:24s} {case.op:8s} n {n:7,} {small * 1000:9.1f} ms  4n "
                  f"{large * 1000:9.1f} ms  growth {ratio:6.2f}  over baseline "
                  f"{ratio / base:5.2f}", flush=True)


if __name__ == "__main__":
    main()
