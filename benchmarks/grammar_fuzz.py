"""Programs generated from the grammar (fuse_lang/front/grammar.lark, LANGUAGE.md
§1-§14), not mutated from known ones (issue 28, "no traceback from any input"):
syntactically valid, semantically odd — builtins with wrong arities and odd
keyword arguments, wrong kinds, empty relations, functions and lets that call
themselves, negation cycles, virtual indices, huge and negative offsets, division
by zero, NaN and infinity, unicode, CRLF and tabs, sources with odd paths,
imports of missing or self files, queries and sinks.

Each program goes through `fuse_lang.analyze`, `fuse_lang.plan_program`, the
editor's functions (hover at every offset, completion, signature help, semantic
tokens, outline, folding, formatting, inlay hints, definitions and references,
run and train targets), `fuse check --format json`, `fuse explain` and `fuse run`
(NumPy, in process, each bounded).  An exception escaping, an "internal error" or
a Traceback in the CLI's words, a diagnostic outside the text or a program without
an answer in HANG_S seconds is a fault, printed once with its seed.

    python benchmarks/grammar_fuzz.py [--start 0] [--count 2000]
    python benchmarks/grammar_fuzz.py --show SEED       # the program of one seed
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import signal
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

HANG_S = 10  # a small program's whole turn; past it, it is a hang

TENSORS = ["A", "B", "X", "Y", "W", "R", "S", "Edge", "Path", "Q", "Z", "T", "Loss", "G'"]
INDICES = ["i", "j", "k", "t", "p", "p'", "x", "y", "dx", "_", "d"]
SYMBOLS = ["Alice", "Bob", "\"ann\"", "\"New York\"", "\"\"", "0", "1", "-7", "3000000000",
           str(2**63 - 1), str(2**63), str(2**70), "-" + str(2**63)]
NUMBERS = ["0", "1", "2", "0.5", "1e-5", "1e400", "1e-400", "0.0", "3", "9" * 40, "1e308",
           ".5", "2.5e3", str(2**64)]
UNARY = ["step", "relu", "tanh", "exp", "log", "sqrt", "abs", "sin", "cos", "gelu",
         "gelu_tanh", "even", "odd", "const", "not", "causal_mask", "topk", "softmax",
         "log_softmax", "lnorm"]
OTHER = ["sig", "pow", "cross_entropy", "gather", "concat", "select", "where", "masked_fill",
         "max", "min", "linear", "cosine", "nope", "reduce_sum", "f", "g", "ns::f"]
KEYWORDS = ["axis", "T", "eps", "k", "smoothing", "steps", "per", "n", "a", "b", "x", "zz"]
OPS = ["=", "=", "=", "+=", "max=", "min=", "avg="]
COMPARE = ["<", "<=", ">", ">=", "==", "!="]
PATHS = ["data/r.tsv", "data/r.csv", "data/w.npy", "data/w.npz", "data/e.json", "data/e.jsonl",
         "data/t.txt", "data/none.npy", "data", "data/empty.tsv", "data/bad.npy", "/dev/null",
         "", ".", "data/r.tsv:x", "data/w.npz:W", "\u00e9t\u00e9.npy", "x.safetensors:w",
         "data/r.facts", "../outside.npy", "data/w.npy\\\"x", "con.npy", "data/r.xyz"]
SINKS = ["out/y.npy", "out/y.npz", "out/r.tsv", "out/r.csv", "out/y.json", "out/y.jsonl",
         "../escape.npy", "/tmp/../x.npy", "out", "", "out/y.txt", "out/y.bin", "data/w.npy"]


class Gen:
    """One program's random choices."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng
        self.depth = 0

    def pick(self, items):  # noqa: ANN001, ANN201
        return self.r.choice(items)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def name(self) -> str:
        if self.chance(0.03):
            return self.pick(["\u00c9t\u00e9", "\u03b1", "x\u200b", "ns::T", "a::b::C", "_X"])
        return self.pick(TENSORS)

    def var(self) -> str:
        return self.pick(INDICES)

    def index(self, lhs: bool = False) -> str:
        v = self.var()
        roll = self.r.randrange(20)
        if roll < 9:
            return v
        if roll == 9:
            return self.pick(SYMBOLS)
        if roll == 10:
            return f"{v}{self.pick(['+', '-'])}{self.pick(['1', '2', '0', '99999999999', str(2**63)])}"
        if roll == 11:
            return f"{v}+{self.var()}"
        if roll == 12:
            return f"{v}/{self.pick(['2', '0', '3', '1e400'])}"
        if roll == 13:
            return self.pick([":", "1:3", "0:0", "5:2", ":2", "1:"])
        if roll == 14:
            return f"*{v}" + self.pick(["", "+1", "-1", "+2"])
        if roll == 15:
            return f"{v}."
        if roll == 16 and not lhs:
            return self.expr()
        if roll == 17:
            return f"{self.pick(KEYWORDS)}={v}"
        return v

    def ref(self, lhs: bool = False, kind: str | None = None) -> str:
        name = self.name()
        kind = kind or self.pick(["[]", "[]", "()", "bare"])
        if kind == "bare":
            return name
        n = self.pick([0, 1, 1, 2, 2, 2, 3])
        inside = ", ".join(self.index(lhs) for _ in range(n))
        return f"{name}[{inside}]" if kind == "[]" else f"{name}({inside})"

    def call(self) -> str:
        fn = self.pick(UNARY + OTHER)
        n = self.pick([0, 1, 1, 1, 2, 2, 3, 4])
        args = [self.expr() for _ in range(n)]
        if self.chance(0.3):
            args.append(f"{self.pick(KEYWORDS)}={self.pick([self.var(), self.pick(NUMBERS), self.expr()])}")
        if fn == "const" and self.chance(0.6):
            args = [self.literal()]
        return f"{fn}({', '.join(args)})"

    def literal(self) -> str:
        depth = self.pick([0, 1, 1, 2])
        def lst(d: int) -> str:
            if d == 0:
                return self.pick(NUMBERS + ["-1", "-0.5", "nan", "inf"])
            return "[" + ", ".join(lst(d - 1) for _ in range(self.pick([0, 1, 2, 3]))) + "]"
        return lst(depth + 1)

    def atom(self) -> str:
        roll = self.r.randrange(14)
        if roll < 5:
            return self.ref()
        if roll < 7:
            return self.pick(NUMBERS)
        if roll < 9:
            return self.call()
        if roll == 9:
            return f"({self.expr()})"
        if roll == 10:
            return self.pick(['"ann"', '""', '"\u00e9"', "nan", "inf", "NaN", "Inf"])
        if roll == 11:
            return self.literal()
        if roll == 12:
            arms = "; ".join(f"{self.expr()} -> {self.expr()}" for _ in range(self.pick([0, 1, 2])))
            default = self.pick(["", f"; default -> {self.expr()}", f"default -> {self.expr()}"])
            return "case { " + arms + default + " }"
        return self.var()

    def expr(self) -> str:
        self.depth += 1
        try:
            if self.depth > 4:
                return self.pick([self.ref(), self.pick(NUMBERS), self.var()])
            roll = self.r.randrange(22)
            if roll < 7:
                return self.atom()
            if roll < 10:
                return f"{self.atom()} {self.atom()}"
            if roll == 10:
                return f"{self.atom()} {self.pick(['+', '-', '*', '/', '^', '**'])} {self.atom()}"
            if roll == 11:
                return f"-{self.atom()}"
            if roll == 12:
                return f"not {self.ref(kind='()')}"
            if roll == 13:
                return f"({self.atom()} {self.pick(COMPARE)} {self.atom()})"
            if roll == 14:
                return f"{self.atom()} when {self.atom()} {self.pick(COMPARE)} {self.atom()}"
            if roll == 15:
                return f"({self.atom()} {self.pick(['&&', '||'])} !{self.atom()})"
            if roll == 16:
                idx = ", ".join(self.var() for _ in range(self.pick([1, 1, 2])))
                return f"reduce({self.pick(['sum', 'max', 'min', 'avg', 'prod', '+'])}, {idx}) {self.atom()}"
            if roll == 17:
                return f"select({self.expr()}, {self.expr()}, {self.expr()})"
            if roll == 18:
                return f"{self.atom()} / 0"
            return f"{self.atom()} {self.atom()} {self.atom()}"
        finally:
            self.depth -= 1

    def equation(self) -> str:
        self.depth = 0
        return f"{self.ref(lhs=True)} {self.pick(OPS)} {self.expr()}"

    def fn_def(self) -> str:
        name = self.pick(["f", "g", "h", "step", "A", "f"])
        params = ", ".join(self.ref(lhs=True, kind="[]") for _ in range(self.pick([0, 1, 2])))
        body = self.pick(["; ", "\n  "]).join(
            (f"let {self.equation()}" if self.chance(0.3) else self.equation())
            for _ in range(self.pick([0, 1, 2])))
        if self.chance(0.3):  # calls itself
            body += f"; out[x] = {name}(out[x])"
        return f"fn {name}({params}) -> {self.pick(['out[x]', 'out', 'out[x, y]', 'Y[i]'])} {{ {body} }}"

    def statement(self) -> str:
        roll = self.r.randrange(30)
        if roll < 10:
            return self.equation()
        if roll == 10:
            return self.ref(kind="()")  # a fact
        if roll == 11:
            return f"{self.pick(['Edge', 'R', 'S', 'Path'])}({', '.join(self.pick(SYMBOLS) for _ in range(self.pick([1, 2, 2, 3])))})"
        if roll == 12:
            return f"{self.ref()}?"
        if roll == 13:
            items = ", ".join(f"{self.var()} = {self.pick(['0', '1', '3', '4', str(2**40), '9' * 30, 'k', 'n', '2.5'])}"
                              for _ in range(self.pick([1, 1, 2])))
            return f"axis {items}"
        if roll == 14:
            init = self.pick(["", " = zeros", " = normal(0.02)", " = ones(1, 2, 3)", " = nope",
                              " = uniform(-1, 1)", " = normal(-1e400)", " = xavier"])
            return f"param {self.ref(lhs=True, kind=self.pick(['[]', 'bare', '()']))}{init}"
        if roll == 15:
            return f"train {self.name()}"
        if roll == 16:
            return self.fn_def()
        if roll == 17:
            inner = "; ".join(self.pick(["let ", "let ", ""]) + self.equation()
                              for _ in range(self.pick([0, 1, 2, 3])))
            return "{ " + inner + " }"
        if roll == 18:
            return f"let {self.equation()}"
        if roll == 19:
            return f'import "{self.pick(["lib.fuse", "self.fuse", "none.fuse", "data", "", "lib.fuse"])}" as {self.pick(["ns", "g", "ns", "X"])}'
        if roll == 20:
            return f"export {', '.join(self.name() for _ in range(self.pick([1, 2, 3])))}"
        if roll in (21, 22):
            return f'{self.ref(lhs=True, kind=self.pick(["[]", "()"]))} = "{self.pick(PATHS)}"'
        if roll == 23:
            return f'"{self.pick(SINKS)}" = {self.expr()}'
        if roll == 24:  # a negation cycle or a recursive rule
            a, b = self.pick(["P", "Q", "R"]), self.pick(["P", "Q", "R"])
            return f"{a}(x) = {self.pick(['Edge(x, y)', 'S(x)', 'R(x, y)'])} not {b}(x)"
        if roll == 25:
            return f"Path(x, z) = Path(x, y) Edge(y, {self.pick(['z', '_', 'Alice', 'z+1'])})"
        if roll == 26:
            return f"X[i, *t+1] = {self.pick(['sig', 'tanh', 'relu'])}(W[i, j] X[j, *t] + U[i, {self.pick(['t', '*t', 't-1'])}])"
        if roll == 27:
            return f"T = {self.pick(['linear', 'cosine', 'linear', 'exp'])}({self.pick(NUMBERS)}, {self.pick(NUMBERS)}, steps={self.pick(['0', '10', '-1', 'n', '1e400'])})"
        return self.equation()

    def program(self) -> str:
        lines = [self.statement() for _ in range(self.r.randint(1, 9))]
        sep = self.pick(["\n", "\n", "\n", "\r\n", ";", "\n\t", "\n# c\n"])
        text = sep.join(lines)
        if self.chance(0.1):
            text = text.replace(" ", "\t")
        if self.chance(0.2):
            text += "\n"
        return text


class Tame(Gen):
    """A program the checker mostly accepts: declared axes, each tensor one arity
    and kind, builtins with their own arities; odd in its values (division by 0,
    1e400, NaN, huge offsets, empty relations, recursion, negation, virtual indices)."""

    def program(self) -> str:
        r = self.r
        axes = {v: self.pick(["1", "2", "3", "2", "0"] if self.chance(0.1) else ["1", "2", "3"])
                for v in ("i", "j", "k")}
        lines = [f"axis {', '.join(f'{v} = {n}' for v, n in axes.items())}"]
        dense: dict[str, list[str]] = {}
        rel: dict[str, int] = {}
        for name in ("A", "B", "W"):
            rank = self.pick([0, 1, 2])
            idx = r.sample(["i", "j", "k"], rank)
            dense[name] = idx
            roll = r.randrange(5)
            if roll == 0 and rank:
                lines.append(f"param {name}[{', '.join(idx)}]" + self.pick(["", " = zeros", " = normal(0.02)"]))
            elif roll == 1 and idx == ["i", "j"] and axes["i"] == "2" and axes["j"] == "3":
                lines.append(f'{name}[i, j] = "data/w.npy"')
            else:
                lit = self.literal_of([int(axes[v]) for v in idx])
                lhs = f"{name}[{', '.join(idx)}]" if rank else name
                lines.append(f"{lhs} = const({lit})")
        for name in ("Edge", "R"):
            rel[name] = 2
            roll = r.randrange(4)
            if roll == 0:
                lines.append(f'{name}(x, y) = "{self.pick(["data/r.tsv", "data/r.csv", "data/empty.tsv", "data/r.facts"])}"')
            elif roll == 1:
                lines.append(f"{name}(x, y) = {self.pick(['Edge', 'R'])}(y, x)")
            else:
                for _ in range(r.randint(0, 4)):
                    lines.append(f"{name}({self.pick(SYMBOLS[:9])}, {self.pick(SYMBOLS[:9])})")
        for _ in range(r.randint(1, 6)):
            lines.append(self.derived(dense, rel))
        for _ in range(r.randint(0, 2)):
            lines.append(self.pick([
                f"{self.pick(list(rel))}({self.pick(['x', 'Alice', '1', '-7', '_'])}, y)?",
                f"{self.pick(list(dense))}?",
                f"export {', '.join(r.sample(list(dense) + list(rel), 2))}",
                f'"{self.pick(["out/y.npy", "out/r.tsv", "out/y.json", "out/y.npz"])}" = {self.pick(list(dense))}',
                "Path(x, z) = Path(x, y) Edge(y, z)\nPath(x, y) = Edge(x, y)\nPath(Alice, z)?",
                "X[i, *t+1] = tanh(W[i, j] X[j, *t] + 1)" if dense.get("W") == ["i", "j"] else "N = 1 / 0",
                "fn f(a[x]) -> out[x] { out[x] = relu(a[x]) / 0 }\nF[i] = f(A[i])" if len(dense.get("A", ())) == 1
                else "fn f(a) -> out { out = f(a) }\nF = f(1)",
                "{ let h[i] = A[i] + 1; H[i] = h[i] h[i] }" if dense.get("A") == ["i"] else "H = 1e400 * 0",
                'import "lib.fuse" as ns\nF[i] = ns::f(ns::V[i]) + ns::f(ns::f(ns::V[i]))\nns::E(x, y)?',
                'import "lib.fuse" as ns\nG(x) = ns::E(x, _) not ns::E(_, x)\nG(x)?',
                "fn f(a[x], b[x]) -> out[x] { let m[x] = a[x] b[x]; out[x] = m[x] / 0 }\nF[i] = f(A[i], A[i])"
                if dense.get("A") == ["i"] else "fn f(a) -> out { out = a a }\nF = f(f(f(B)))",
                "fn f(a[x]) -> out[x] { out[x] = a[x] }\nF[i] = f(A[i], A[i])",
            ]))
        for _ in range(self.pick([0, 0, 1, 2])):  # a statement of the whole grammar among them
            lines.insert(r.randrange(len(lines) + 1), self.statement())
        sep = self.pick(["\n", "\n", "\r\n", "\n\t", "; "])
        lines = [line if sep != "; " else line.replace("\n", "; ") for line in lines]
        if self.chance(0.5):  # the statements the checker accepts: a program that runs
            lines = accepted(lines, sep)
        return sep.join(lines) + "\n"

    def literal_of(self, shape: list[int]) -> str:
        if not shape:
            return self.pick(["1", "0", "-2.5", "1e400", "1e-400", "0.5", "3"])
        return "[" + ", ".join(self.literal_of(shape[1:]) for _ in range(shape[0])) + "]"

    def use(self, dense: dict[str, list[str]], rel: dict[str, int], idx: list[str]) -> str:
        name = self.pick(list(dense) + list(rel))
        if name in rel:
            a, b = (self.pick(idx + ["x"] if self.chance(0.05) else ["x", "y", "_", "Alice"])
                    for _ in range(2))
            return f"{'not ' if self.chance(0.15) else ''}{name}({a}, {b})"
        own = dense[name]
        if not own:
            return name
        def one(v: str) -> str:
            if self.chance(0.9):
                return v
            return self.pick([f"{v}+1", f"{v}-1", f"{v}-{2**40}", f"{v}+{2**63 - 1}", "0", "5",
                              f"{v}/2", f"{v}+{self.pick(idx)}", f"{v}+{2**63}"])
        return f"{name}[{', '.join(one(v if self.chance(0.8) else self.pick(idx)) for v in own)}]"

    def odd_call(self, x: str, v: str) -> str:
        """A builtin with its own arity and odd values."""
        return self.pick([
            f"topk({x}, k={self.pick(['0', '1', '5', '-1', '1e400'])})",
            f"lnorm({x}, eps={self.pick(['0', '1e400', '1e-400'])})",
            f"concat({x}, {x}, axis={v})",
            f"causal_mask({self.pick(['0', '1', '3', str(2**40)])})",
            f"gather({x}, {x}, axis={v})",
            f"cross_entropy({x}, {x}, axis={v})",
            f"cross_entropy({x}, {x}, axis={v}, smoothing={self.pick(['0', '1', '2', '-1'])})",
            f"log_softmax({x}, axis={v})",
            f"max({x}, {self.pick(NUMBERS)}) min({x}, 0)",
            f"masked_fill({x}, {v} > 1, -1e400)",
            f"where({v} > 0, {x}, 0)",
            f"even({v}) odd({v}) {x}",
            f"sig({x}, 0.0)",
            f"gelu({x}) gelu_tanh({x})",
            f"const({self.pick(['[]', '[[]]', '[1, 2]', '[[1], [2, 3]]'])})",
        ])

    def derived(self, dense: dict[str, list[str]], rel: dict[str, int]) -> str:
        out = self.pick(["Y", "Z", "C", "Y", "A", "Q"])
        rank = self.pick([0, 1, 1, 2])
        idx = self.r.sample(["i", "j", "k"], rank)
        if out in dense and dense[out] != idx:
            out = out + "2"
        if out in dense and dense[out] != idx:
            idx = dense[out]
        dense.setdefault(out, idx)
        lhs = f"{out}[{', '.join(idx)}]" if rank else out
        if idx and self.chance(0.1):
            lhs = f"{out}[{', '.join(idx[:-1] + [idx[-1] + '.'])}]"
        body_idx = idx + [v for v in ("i", "j", "k") if v not in idx][:1]
        terms = []
        for _ in range(self.r.randint(1, 3)):
            factors = " ".join(self.use(dense, rel, body_idx) for _ in range(self.r.randint(1, 2)))
            roll = self.r.randrange(14)
            if roll == 0:
                factors = f"{self.pick(UNARY[:11])}({factors})"
            elif roll == 1:
                factors = f"{factors} / {self.pick(['0', '0.0', '1e-400', 'A'])}"
            elif roll == 2:
                factors = f"{factors} ({self.pick(body_idx)} {self.pick(COMPARE)} {self.pick(body_idx + ['1', '-1', str(2**63)])})"
            elif roll == 3:
                factors = f"sig({factors}, T={self.pick(['0', '1', '-1', '1e400'])})"
            elif roll == 4:
                factors = f"softmax({factors})"
            elif roll == 5:
                factors = f"select({self.pick(body_idx)} > 0, {factors}, {self.pick(NUMBERS)})"
            elif roll == 6:
                factors = f"{factors} when {self.pick(body_idx)} != 1"
            elif roll == 7:
                factors = f"pow({factors}, {self.pick(['-1', '0.5', '1e400', '0'])})"
            elif roll == 8:
                factors = f"reduce({self.pick(['max', 'min', 'avg', 'sum'])}, k) {factors}"
            elif roll == 9:
                factors = f"log({factors} - 1e400)"
            elif roll in (10, 11):
                factors = self.odd_call(factors, self.pick(body_idx))
            terms.append(factors)
        return f"{lhs} {self.pick(OPS[:5])} {self.pick([' + ', ' - ']).join(terms)}"


def accepted(lines: list[str], sep: str, rounds: int = 4) -> list[str]:
    """`lines` without the statements that hold an error, until none does (checked
    in the workspace last made, where the sources and imports lie)."""
    import fuse_lang

    for _ in range(rounds):
        text = sep.join(lines)
        starts, at = [], 0
        for line in lines:
            starts.append(at)
            at += len(line) + len(sep)
        wrong = {max(k for k, s in enumerate(starts) if s <= d.span.start)
                 for d in fuse_lang.analyze(text, base_dir=_HOME).diagnostics
                 if d.severity is fuse_lang.Severity.ERROR and d.code != "missing-source"}
        if not wrong:
            break
        lines = [line for k, line in enumerate(lines) if k not in wrong] or ["Y = 1"]
    return lines


def program(seed: int) -> str:
    """Seed `seed`'s program: odd programs of the whole grammar (most with errors)
    and programs the checker mostly accepts, one after the other."""
    rng = random.Random(seed)
    return (Tame(rng) if seed % 2 else Gen(rng)).program()


LIB = "fn f(a[x]) -> out[x] { out[x] = relu(a[x]) }\nE(Alice, Bob)\nV[i] = const([1, 2])\n"


_HOME: Path | None = None  # the workspace last made


def workspace(folder: Path) -> None:
    """The tiny files the generated programs' sources and imports name; the
    programs made from now on are checked there."""
    global _HOME
    import numpy as np

    _HOME = folder

    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    (folder / "out").mkdir(exist_ok=True)
    (data / "r.tsv").write_text("Alice\tBob\nBob\t3\n", encoding="utf-8")
    (data / "r.csv").write_text("1,2\n2,-7\n", encoding="utf-8")
    (data / "r.facts").write_text("a\tb\n", encoding="utf-8")
    (data / "empty.tsv").write_text("", encoding="utf-8")
    (data / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    (data / "e.json").write_text("[[1, 2], [3, 4]]", encoding="utf-8")
    (data / "e.jsonl").write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    (data / "t.txt").write_text("the cat sat\n", encoding="utf-8")
    np.save(data / "w.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    np.savez(data / "w.npz", W=np.ones((2, 2), dtype=np.float32), V=np.zeros(3))
    (folder / "lib.fuse").write_text(LIB, encoding="utf-8")
    (folder / "self.fuse").write_text('import "self.fuse" as s\nX[i] = s::X[i]\n', encoding="utf-8")


class Hang(Exception):
    pass


class Fault(Exception):
    pass


def _cli(argv: list[str]) -> tuple[int, str]:
    from fuse_lang.cli.main import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    words = out.getvalue() + err.getvalue()
    if "Traceback" in words or "internal error" in words:
        raise Fault(f"fuse {argv[0]}: {words[-600:]}")
    return code, out.getvalue()


def editor(analysis, every: int) -> None:  # noqa: ANN001
    """What an editor asks of one analysis; hover and completion at every
    `every`-th offset (at most about 300 of them)."""
    n = len(analysis.text)
    editor_requests(analysis, range(0, n + 1, max(every, n // 300)))


def editor_requests(analysis, offsets) -> None:  # noqa: ANN001
    """What an editor asks of one analysis: hover, completion and navigation at
    each of `offsets`, and every whole-document request (tests/test_fuzz_programs.py
    asks the same at a few random offsets)."""
    from fuse_lang.front.span import Span
    from fuse_lang.ide.completion import complete, signature_at
    from fuse_lang.ide.folding import folding_ranges
    from fuse_lang.ide.formatting import format_lines, format_text
    from fuse_lang.ide.hover import hover_at
    from fuse_lang.ide.inlay_hints import shape_hints
    from fuse_lang.ide.outline import document_outline
    from fuse_lang.ide.query import definition_at, references_at, symbol_at
    from fuse_lang.ide.run_targets import run_targets
    from fuse_lang.ide.semantic_tokens import encode_tokens, semantic_tokens
    from fuse_lang.ide.train_targets import train_targets

    text = analysis.text
    n = len(text)
    for offset in offsets:
        hover_at(analysis, offset)
        complete(analysis, offset, snippets=True)
        signature_at(text, offset)
        symbol_at(analysis, offset)
        definition_at(analysis, offset)
        references_at(analysis, offset)
    encode_tokens(semantic_tokens(analysis), analysis.lines)
    semantic_tokens(analysis, Span(n // 3, n))
    shape_hints(analysis)
    document_outline(analysis)
    folding_ranges(analysis)
    run_targets(analysis)
    train_targets(analysis)
    format_text(text)
    format_lines(text, 0, n)


def one(seed: int, text: str, folder: Path, every: int = 1, cli: bool = True) -> str:
    """Every entry point on one program; what it came to ("error", "refused", "ran")."""
    import fuse_lang
    from fuse_lang.ide.explain import explain_program, run_plan_json, run_plan_lines
    from fuse_lang.run.interpret.evaluate import EvaluationError

    path = folder / "p.fuse"
    path.write_text(text, encoding="utf-8", newline="")
    analysis = fuse_lang.analyze(text, str(path), base_dir=folder)
    for d in analysis.diagnostics:
        if not 0 <= d.span.start <= d.span.end <= len(text):
            raise Fault(f"a diagnostic outside the text: {d}")
        if "internal error" in d.message:
            raise Fault(d.message)
        for fix in d.fixes:  # a fix's edits lie in the text, one after the other
            edits = sorted((e.span.start, e.span.end) for e in fix.edits)
            if any(not 0 <= a <= b <= len(text) for a, b in edits) or \
                    any(b > c for (_, b), (c, _) in zip(edits, edits[1:])):
                raise Fault(f"a fix's edits outside the text or overlapping: {d}")
    fuse_lang.plan_program(analysis)
    editor(analysis, every)
    if cli:
        code, out = _cli(["check", "--format", "json", str(path)])
        json.loads(out)
        if code not in (0, 1):
            raise Fault(f"fuse check exit {code}")
    if any(d.severity is fuse_lang.Severity.ERROR for d in analysis.diagnostics):
        return "error"
    try:
        compiled = fuse_lang.compile(text, base_dir=folder, backend="numpy")
        explained = explain_program(compiled)
        run_plan_lines(explained.run_plan)
        run_plan_json(explained.run_plan)
        compiled.run(write_sinks=False)
    except (fuse_lang.FuseError, EvaluationError):
        return "refused"
    if cli:
        _cli(["run", str(path), "--backend", "numpy", "--max-iterations", "50"])
    return "ran"


def campaign(start: int, count: int, every: int = 1, cli_every: int = 1, quiet: bool = False
             ) -> tuple[dict, dict[tuple, tuple[int, str]]]:
    """`count` programs from seed `start`: the outcomes counted, and each distinct
    fault (its type and where it was raised) with its first seed and message.
    `every`: hover and complete at every such offset; `cli_every`: one program in
    so many goes through `fuse check` and `fuse run` too (0: none)."""
    warnings.simplefilter("ignore")
    counts: dict[str, int] = {}
    found: dict[tuple, tuple[int, str]] = {}
    old = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Hang()))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            workspace(folder)
            for seed in range(start, start + count):
                text = program(seed)
                signal.alarm(HANG_S)
                try:
                    cli = bool(cli_every) and seed % cli_every == 0
                    outcome = one(seed, text, folder, every, cli)
                except Hang:
                    outcome = "hang"
                    found.setdefault(("hang", seed), (seed, f"no answer in {HANG_S} s"))
                    if not quiet:
                        print(f"seed {seed}: no answer in {HANG_S} s", flush=True)
                except Exception as err:  # noqa: BLE001 (what the campaign looks for)
                    outcome = "fault"
                    last = traceback.extract_tb(err.__traceback__)[-1]
                    key = (type(err).__name__, last.filename, last.lineno)
                    if key not in found:
                        found[key] = (seed, f"{type(err).__name__}: {str(err)[:300]} "
                                            f"({last.filename}:{last.lineno})")
                        if not quiet:
                            print(f"seed {seed}: {found[key][1]}", flush=True)
                finally:
                    signal.alarm(0)
                counts[outcome] = counts.get(outcome, 0) + 1
    finally:
        signal.signal(signal.SIGALRM, old)
    return counts, found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--every", type=int, default=1, help="hover and complete at every N-th offset")
    parser.add_argument("--cli-every", type=int, default=1,
                        help="one program in N through `fuse check` and `fuse run` (0: none)")
    parser.add_argument("--show", type=int, metavar="SEED")
    args = parser.parse_args()
    if args.show is not None:
        with tempfile.TemporaryDirectory() as tmp:
            workspace(Path(tmp))
            print(program(args.show))
        return
    counts, found = campaign(args.start, args.count, args.every, args.cli_every)
    print(f"{args.count} programs from seed {args.start}: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
          + f"; {len(found)} distinct faults")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
