"""The tensor side of LANGUAGE.md against a reference written here (§3-6, §10, §13).

A seeded generator writes small random programs: products, sums and
differences, calls whose arguments are scopes (`relu`, `sig(x, T=...)`,
`pow(x, n)`, `max`, `select`, ...), comparisons of indices as Boolean factors
(`(j < i)`), index values, shifted reads (`A[i+1,j]`, zero outside), repeated
indices (diagonals), `when` guards, the projection operators `max=`/`min=`/
`avg=` and a second equation for the same tensor.  Each runs through
`fuse_lang.compile(...).run()` and is compared with a value computed here with
NumPy from the program's tree, following §5's one rule directly: an index not on
the left-hand side is projected in the innermost scope (the right-hand side, a
call's argument) that holds all its occurrences, per additive term (a sum in
parentheses, or negated, is its terms; a product is one term); call arguments
sum, the equation's operator projects the right-hand side (max/min/avg over the
terms' total).  The regression tests below are the mismatches the generator
found, minimised.
"""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import fuse_lang

EXT = {"i": 2, "j": 3, "k": 4, "l": 3}
POOL = tuple(EXT)
CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
       "==": np.equal, "!=": np.not_equal}
UNARY = {"relu": lambda x: np.maximum(x, 0), "tanh": np.tanh, "abs": np.abs, "sin": np.sin,
         "cos": np.cos, "sig": lambda x: 1 / (1 + np.exp(-x)), "step": lambda x: (x > 0) * 1.0,
         "exp": np.exp}


# ------------------------------------------------------------ named-axis values

class V:
    """An array with one index name per axis."""

    def __init__(self, data, axes):
        self.a = np.asarray(data, dtype=np.float64)
        self.axes = tuple(axes)

    def over(self, axes):
        """Broadcast to `axes` (a superset of mine), by name."""
        order = [self.axes.index(x) for x in axes if x in self.axes]
        data = np.transpose(self.a, order) if order else self.a
        shape = [EXT[x] if x in self.axes else 1 for x in axes]
        return np.broadcast_to(data.reshape(shape), [EXT[x] for x in axes])


def elementwise(f, *values):
    axes = []
    for v in values:
        axes += [x for x in v.axes if x not in axes]
    return V(f(*(v.over(axes) for v in values)), axes)


def project(v, names, op="sum"):
    gone = tuple(k for k, x in enumerate(v.axes) if x in names)
    if not gone:
        return v
    fn = {"sum": np.sum, "max": np.max, "min": np.min, "avg": np.mean}[op]
    return V(fn(v.a, axis=gone), [x for x in v.axes if x not in names])


# ------------------------------------------------------------ the program's tree
# ("ref", name, ((var, offset), ...)) · ("num", x) · ("ival", var) · ("cmp", a, op, b)
# ("prod", (factors), (ops)) · ("sum", ((sign, term), ...)) · ("paren", e) · ("neg", e)
# ("call", name, (args), keyword or None) · ("when", e, cmp)

def text(e):
    kind = e[0]
    if kind == "ref":
        if not e[2]:
            return e[1]
        return e[1] + "[" + ",".join(v + (f"{o:+d}" if o else "") for v, o in e[2]) + "]"
    if kind == "num":
        return repr(e[1])
    if kind == "ival":
        return e[1]
    if kind == "cmp":
        return f"({e[1]} {e[2]} {e[3]})"
    if kind == "prod":
        out = text(e[1][0])
        for op, f in zip(e[2], e[1][1:]):
            ft = text(f)
            if op == " " and (ft.startswith("-") or ft.startswith("(") and (
                    out[-1].isalnum() or out[-1] in "_]'")):
                op = " * "  # `C (x)` would read C at x (a reference); `C -x` subtracts
            out += op + ft
        return out
    if kind == "sum":
        out = ("-" if e[1][0][0] < 0 else "") + text(e[1][0][1])
        return out + "".join((" - " if s < 0 else " + ") + text(t) for s, t in e[1][1:])
    if kind == "paren":
        return f"({text(e[1])})"
    if kind == "neg":
        return f"-{text(e[1])}"
    if kind == "when":
        return f"{text(e[1])} when {text(e[2])}"
    args = [text(a) for a in e[2]] + ([f"{e[3][0]}={e[3][1]}"] if e[3] else [])
    return f"{e[1]}({', '.join(args)})"


def kids(e):
    return {"prod": lambda: e[1], "sum": lambda: [t for _, t in e[1]],
            "paren": lambda: [e[1]], "neg": lambda: [e[1]], "call": lambda: e[2],
            "when": lambda: [e[1], e[2]]}.get(e[0], lambda: [])()


def occurs(e, skip=None):
    """The index names in `e`, leaving out the subtree `skip`."""
    if e is skip:
        return set()
    if e[0] == "ref":
        return {v for v, _ in e[2]}
    if e[0] == "ival":
        return {e[1]}
    if e[0] == "cmp":
        return {e[1]} | ({e[3]} if isinstance(e[3], str) else set())
    return set().union(*(occurs(k, skip) for k in kids(e)))


def terms(e, sign=1):
    """A scope's additive terms: through sums, parentheses and negations."""
    if e[0] == "paren":
        return terms(e[1], sign)
    if e[0] == "neg":
        return terms(e[1], -sign)
    if e[0] == "sum":
        return [t for s, term in e[1] for t in terms(term, sign * s)]
    return [(sign, e)]


# ------------------------------------------------------------ the reference

class Reference:
    def __init__(self, data, lhs, rhs):
        self.data, self.lhs, self.rhs = data, list(lhs), rhs

    def scope(self, e, keep, op="sum"):
        if op != "sum":  # max/min/avg project the terms' total
            v = self.ev(e)
            return project(v, set(v.axes) - keep, op)
        out = None
        for sign, term in terms(e):
            v = self.ev(term)
            v = project(v, set(v.axes) - keep)
            v = V(sign * v.a, v.axes)
            out = v if out is None else elementwise(np.add, out, v)
        return out

    def read(self, name, idx):
        data = self.data[name]
        for pos, (_, off) in enumerate(idx):  # a shifted read: zero outside
            data = np.moveaxis(data, pos, 0)
            shifted = np.zeros_like(data)
            n = len(data)
            if off >= 0:
                shifted[:n - off] = data[off:]
            else:
                shifted[-off:] = data[:n + off]
            data = np.moveaxis(shifted, 0, pos)
        names = [v for v, _ in idx]
        uniq = list(dict.fromkeys(names))  # a repeated index reads the diagonal
        return V(np.einsum(data, [POOL.index(v) for v in names],
                           [POOL.index(v) for v in uniq]), uniq)

    def ev(self, e):  # noqa: C901 - one case per node kind
        kind = e[0]
        if kind == "ref":
            return self.read(e[1], e[2])
        if kind == "num":
            return V(e[1], ())
        if kind == "ival":
            return V(np.arange(EXT[e[1]]), (e[1],))
        if kind == "cmp":
            b = V(np.arange(EXT[e[3]]), (e[3],)) if isinstance(e[3], str) else V(e[3], ())
            return elementwise(lambda x, y: CMP[e[2]](x, y) * 1.0,
                               V(np.arange(EXT[e[1]]), (e[1],)), b)
        if kind in ("paren", "neg"):
            v = self.ev(e[1])
            return v if kind == "paren" else V(-v.a, v.axes)
        if kind == "sum":
            return self.scope_free(e)
        if kind == "prod":
            out = self.ev(e[1][0])
            for op, f in zip(e[2], e[1][1:]):
                out = elementwise(np.divide if op == " / " else np.multiply, out, self.ev(f))
            return out
        # a call (or a guard): each argument is a scope of its own
        args = [self.scope(a, set(self.lhs) | occurs(self.rhs, a)) for a in kids(e)]
        name = "when" if kind == "when" else e[1]
        if kind == "call" and e[3]:
            args.append(V(e[3][1], ()))  # sig(x, T=t) is sig(x, t); pow(x, n=2) pow(x, 2)
        if name in UNARY and len(args) == 1:
            return V(UNARY[name](args[0].a), args[0].axes)
        fns = {"sig": lambda x, t: 1 / (1 + np.exp(-x / t)), "pow": np.power,
               "max": np.maximum, "min": np.minimum,
               "select": lambda c, a, b: np.where(c > 0, a, b),
               "when": lambda a, c: np.where(c > 0, a, 0)}
        return elementwise(fns[name], *args)

    def scope_free(self, e):
        """A sum that is no scope (inside a product): its terms added, nothing projected."""
        out = None
        for sign, term in e[1]:
            v = self.ev(term)
            v = V(sign * v.a, v.axes)
            out = v if out is None else elementwise(np.add, out, v)
        return out

    def value(self, op="sum"):
        v = self.scope(self.rhs, set(self.lhs), op)
        return elementwise(lambda a, _: a, v, V(np.zeros([EXT[x] for x in self.lhs]), self.lhs)
                           ).over(self.lhs) * np.ones([EXT[x] for x in self.lhs])


# ------------------------------------------------------------ the generator

class Generator:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.tensors = {}
        for name in "ABCDE"[:self.r.randint(3, 5)]:
            rank = self.r.choice([0, 1, 1, 2, 2, 2, 3])
            self.tensors[name] = tuple(self.r.sample(POOL, rank))

    def ref(self):
        name = self.r.choice(list(self.tensors))
        idx = []
        for axis in self.tensors[name]:
            same = [v for v in POOL if EXT[v] == EXT[axis]]  # a transpose or a diagonal
            var = self.r.choice(same) if self.r.random() < 0.3 else axis
            off = self.r.choice([-1, 1]) if self.r.random() < 0.15 else 0
            idx.append((var, off))
        return ("ref", name, tuple(idx))

    def factor(self, depth):
        x = self.r.random()
        if depth <= 0 or x < 0.45:
            return self.ref()
        if x < 0.5:
            return ("num", self.r.choice([0.5, 2, 1.5, 3]))
        if x < 0.55:
            return ("ival", self.r.choice(POOL))
        if x < 0.63:
            return self.comparison()
        if x < 0.72:
            inner = self.sum(depth - 1)
            return ("neg", ("paren", inner)) if self.r.random() < 0.3 else ("paren", inner)
        return self.call(depth - 1)

    def comparison(self):
        a = self.r.choice(POOL)
        b = self.r.choice([v for v in POOL if v != a] + [0, 1, 2])
        return ("cmp", a, self.r.choice(list(CMP)), b)

    def call(self, depth):
        f = self.r.choice(["relu", "tanh", "abs", "sin", "step", "sig", "sigT", "sigkw", "pow",
                           "powkw", "max", "min", "select", "exp"])
        x = self.sum(depth)
        if f == "sigT":
            return ("call", "sig", (x, ("num", self.r.choice([0.5, 2]))), None)
        if f in ("sigkw", "powkw"):
            key = ("T", self.r.choice([0.5, 2])) if f == "sigkw" else ("n", 2)
            return ("call", f[:3] if f == "sigkw" else "pow", (x,), key)
        if f == "pow":
            return ("call", "pow", (x, ("num", 2)), None)
        if f in ("max", "min"):
            return ("call", f, (x, self.sum(depth)), None)
        if f == "select":
            cond = self.comparison() if self.r.random() < 0.6 else self.sum(depth)
            other = ("num", 0) if self.r.random() < 0.5 else self.sum(depth)
            return ("call", "select", (cond, x, other), None)
        if f == "exp":  # bounded
            return ("call", "exp", (("prod", (("num", 0.1), ("paren", x)), (" * ",)),), None)
        return ("call", f, (x,), None)

    def term(self, depth):
        fs = [self.factor(depth) for _ in range(self.r.choice([1, 1, 2, 2, 3]))]
        t = ("prod", tuple(fs), tuple(self.r.choice([" ", " ", " * "]) for _ in fs[1:])) \
            if len(fs) > 1 else fs[0]
        return ("prod", (t, ("num", 2)), (" / ",)) if self.r.random() < 0.1 else t

    def sum(self, depth):
        return ("sum", tuple((self.r.choice([1, 1, -1]), self.term(depth))
                             for _ in range(self.r.choice([1, 1, 1, 2, 3]))))

    def equation(self):
        """(lhs, op, rhs, second rhs or None)."""
        lhs = tuple(self.r.sample(POOL, self.r.choice([0, 1, 1, 2, 2])))
        op = self.r.choice(["=", "=", "=", "max=", "min=", "avg="])
        rhs = self.term(2) if op != "=" and self.r.random() < 0.7 else self.sum(2)
        if self.r.random() < 0.15:
            rhs = ("when", rhs, self.comparison())
        second = self.sum(1) if op != "avg=" and self.r.random() < 0.2 else None
        return lhs, op, rhs, second


# ------------------------------------------------------------ running one program

def refs_and_values_agree(lhs, *rhss):
    """An index value or a comparison names an index of the equation (a tensor's
    index, or the left-hand side's): a bare name that is neither is no index."""
    def walk(e, kinds):
        found = occurs(e) if e[0] in kinds else set()
        return found.union(*(walk(k, kinds) for k in kids(e)))
    return all(walk(r, ("ival", "cmp")) <= walk(r, ("ref",)) | set(lhs) for r in rhss)


def program(tensors, lhs, op, rhs, second):
    lines = [f"axis {x} = {n}" for x, n in EXT.items()]
    lines += [f'{n}[{",".join(ax)}] = "{n.lower()}.npy"' if ax else f'{n} = "{n.lower()}.npy"'
              for n, ax in tensors.items()]
    left = f"Y[{','.join(lhs)}]" if lhs else "Y"
    lines.append(f"{left} {op} {text(rhs)}")
    if second is not None:
        lines.append(f"{left} {'+=' if op == '=' else op} {text(second)}")
    return "\n".join([*lines, "export Y", ""])


def expected(data, lhs, op, rhs, second):
    proj = {"=": "sum", "max=": "max", "min=": "min", "avg=": "avg"}[op]
    value = Reference(data, lhs, rhs).value(proj)
    if second is not None:  # §6: combined by the operator's family
        more = Reference(data, lhs, second).value(proj)
        value = {"sum": np.add, "max": np.maximum, "min": np.minimum}[proj](value, more)
    return value


def run_one(seed, tmp_path, backend="numpy"):
    """The generated program of `seed`, run and compared; None when the program is
    one the language refuses by design (a select's branches over different indices)."""
    gen = Generator(seed)
    lhs, op, rhs, second = gen.equation()
    if not refs_and_values_agree(lhs, rhs, *([second] if second else [])):
        return None
    rng = np.random.default_rng(seed)
    data = {n: rng.uniform(-1, 1, [EXT[a] for a in ax]) for n, ax in gen.tensors.items()}
    folder = tmp_path / f"{backend}-{seed}"
    folder.mkdir()
    for name, array in data.items():
        np.save(folder / f"{name.lower()}.npy", array)
    source = program(gen.tensors, lhs, op, rhs, second)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = fuse_lang.compile(source, backend=backend, device="cpu",
                                         base_dir=folder, precision="fp64")
            got = np.asarray(compiled.run()["Y"], dtype=np.float64)
    except fuse_lang.FuseError as err:
        if "select-shapes" in str(err):
            return None
        raise AssertionError(f"{source}\n{err}") from None
    want = expected(data, lhs, op, rhs, second)
    assert got.shape == want.shape, source
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=source)
    return source


@pytest.mark.parametrize("backend,seeds", [("numpy", range(0, 250)), ("torch", range(200, 220)),
                                           ("jax", range(300, 312))])
def test_random_programs_match_the_projection_rule(tmp_path, backend, seeds):
    if backend != "numpy":
        pytest.importorskip(backend)
    ran = [s for s in seeds if run_one(s, tmp_path, backend) is not None]
    assert len(ran) >= len(seeds) // 2  # most programs are ones the language takes


# ------------------------------------------------------------ regressions

def _run(tmp_path, text, **arrays):
    for name, array in arrays.items():
        np.save(tmp_path / f"{name.lower()}.npy", np.asarray(array, dtype=np.float64))
    return fuse_lang.compile(text, backend="numpy", base_dir=tmp_path, precision="fp64").run()


def test_a_parenthesised_sum_is_its_terms(tmp_path):
    # `(A[i,j] + B[i]) + 1` gave sum_j (A + B) + 1 (B counted 3 times), while
    # `(A[i,j] + B[i])` gave sum_j A + B: adding a term changed another's count
    a, b = np.arange(6.0).reshape(2, 3), np.array([10.0, 20.0])
    head = 'A[i,j] = "a.npy"\nB[i] = "b.npy"\n'
    out = _run(tmp_path, head + "Y[i] = (A[i,j] + B[i]) + 1\nZ[i] = -(A[i,j] + B[i])\n"
               "W[i] = B[i] + (A[i,j] - 1) - (2 - B[i])\nV[i] = (A[i,j] + B[i])\n"
               "P[i] = 2 * (A[i,j] + B[i])\nexport Y, Z, W, V, P", A=a, B=b)
    rows = a.sum(axis=1)
    np.testing.assert_allclose(out["Y"], rows + b + 1)
    np.testing.assert_allclose(out["Z"], -(rows + b))
    np.testing.assert_allclose(out["W"], b + rows - 1 - 2 + b)
    np.testing.assert_allclose(out["V"], rows + b)
    # a product is one term: j is summed over the whole of it (§5)
    np.testing.assert_allclose(out["P"], 2 * (rows + 3 * b))


def test_a_parenthesised_negation_of_a_condition_stays_one_factor(tmp_path):
    # `!c` is written out as `1 - c`: that sum is one factor, not two terms
    b = np.array([1.0, -1.0, 0.0])
    out = _run(tmp_path, 'B[j] = "b.npy"\nA[i,j] = "b2.npy"\nY[i] = A[i,j] + (!B[j])\n'
               "export Y", B=b, B2=np.ones((2, 3)))
    np.testing.assert_allclose(out["Y"], [3 + 2, 3 + 2])


def test_pow_takes_its_power_by_name(tmp_path):
    # §13: a keyword argument may be given where the positional form exists
    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    out = _run(tmp_path, 'A[i,j] = "a.npy"\nY[i] = pow(A[i,j], n=2)\nZ[i,j] = pow(A[i,j], n=3)'
               "\nexport Y, Z", A=a)
    np.testing.assert_allclose(out["Y"], a.sum(axis=1) ** 2)
    np.testing.assert_allclose(out["Z"], a ** 3)
    codes = {d.code for d in fuse_lang.analyze(
        'A[i,j] = "a.npy"\nY[i] = pow(A[i,j], 2, n=2)\nZ[i] = pow(A[i,j], m=2)\n',
        base_dir=tmp_path).diagnostics}
    assert {"bad-argument", "argument-count", "unknown-keyword"} <= codes


def test_any_positional_argument_may_be_named(tmp_path):
    # §13 says it of every builtin with a positional form, not only sig's T
    a = np.array([[1.0, -2.0], [3.0, -1.0]])
    out = _run(tmp_path, 'A[i,j] = "a.npy"\nM[q,k] = causal_mask(n=3)\n'
               "X[i,j] = max(a=A[i,j], b=0)\nS[i,j] = select(A[i,j] > 0, A[i,j], b=-1)\n"
               "R[i,j] = relu(x=A[i,j])\nexport M, X, S, R", A=a)
    np.testing.assert_allclose(out["M"], np.tril(np.ones((3, 3))))
    np.testing.assert_allclose(out["X"], np.maximum(a, 0))
    np.testing.assert_allclose(out["S"], np.where(a > 0, a, -1))
    np.testing.assert_allclose(out["R"], np.maximum(a, 0))
    bad = fuse_lang.analyze("axis i = 2\nY[i] = max(a=i, c=2)\n").diagnostics
    assert any(d.code == "unknown-keyword" and "keywords: b" in d.message for d in bad)


@pytest.mark.parametrize("line", ["Y[i] = C[i] A[i,j]", "Y = C[0]", "Y = C(0)",
                                  "Y[i] = A[i,j] + C(j)", "Y[i] = W[i]"])
def test_a_bare_source_read_with_another_rank_is_an_arity_mismatch(tmp_path, line):
    # `C = "c.npy"` takes its rank from the file; reads of it were not checked
    # against that rank, and the run failed with an internal IndexError
    np.save(tmp_path / "c.npy", np.float64(2.0))
    np.save(tmp_path / "a.npy", np.ones((2, 3)))
    text = f'A[i,j] = "a.npy"\nC = "c.npy"\nW = "a.npy"\naxis i = 2\n{line}\nexport Y\n'
    analysis = fuse_lang.analyze(text, base_dir=tmp_path)
    (found,) = [d for d in analysis.diagnostics if d.code == "arity-mismatch"]
    assert "(from its file `" in found.message  # (its rank is the file's, not its LHS')
    with pytest.raises(fuse_lang.FuseError, match="arity-mismatch"):
        fuse_lang.compile(text, backend="numpy", base_dir=tmp_path).run()


def test_a_bare_source_read_at_its_rank_is_clean(tmp_path):
    np.save(tmp_path / "c.npy", np.float64(2.0))
    np.save(tmp_path / "a.npy", np.ones((2, 3)))
    text = 'C = "c.npy"\nW = "a.npy"\nY[i,j] = W[i,j] + C\nexport Y\n'
    assert not [d for d in fuse_lang.analyze(text, base_dir=tmp_path).diagnostics
                if d.severity.name == "ERROR"]
    np.testing.assert_allclose(fuse_lang.compile(text, base_dir=tmp_path).run()["Y"],
                               np.full((2, 3), 3.0))


def test_an_index_only_in_a_comparison_is_told_why_it_is_undefined():
    """`Y[i] = F[i] (i < j)`: `j` is no index of the equation (no reference has
    it), so it is an undefined name; the message says why, and a close tensor
    name is still offered."""
    found = fuse_lang.analyze("axis i = 3, j = 3\nF[i] = const([1,2,3])\nThreshold = const(2)\n"
                              "Y[i] = F[i] (i < j)\nZ[i] = F[i] (i < threshold)\nexport Y, Z\n")
    messages = [d.message for d in found.diagnostics if d.code == "undefined-tensor"]
    assert len(messages) == 2
    assert messages[0].startswith("`j` is not defined; a comparison reads the indices of the "
                                  "equation's references, and no reference here has `j`")
    assert messages[1].endswith("did you mean `Threshold`?")
