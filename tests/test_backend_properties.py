"""Property-based cross-backend conformance (issue 5, item 4).

Hypothesis generates random *well-typed* Fuse programs and inputs; each program
runs on the NumPy reference engine and must give the same outputs and query
answers (tests/conftest.py: TOLERANCE, assert_same_result) on torch (eager),
jax (jax.jit) and, on fewer examples, torch through torch.compile.

What the generators cover:
- an index pool of 2-4 names with extents 1-5 (`axis i = 3, ...`), input
  tensors (`param`, scalars included, and `const([...])` literals) whose axes
  are drawn from the pool, with continuous or tie-heavy (quantised) values;
- equations that join (products of references), project (RHS indices missing
  from the LHS: `=`, `max=`, `min=`, `avg=`, and `reduce(op, i) expr`),
  broadcast by name (terms with different index sets added), scalars, numbers,
  the value of an index (`0.25 * i`, `even(i)`, `odd(i)`), unary minus, safe
  division, powers, relu/tanh/sig/gelu/abs/sin/cos/max/min, `sig(x, T)` with a
  number or a positive expression as T, exp and log of bounded arguments,
  softmax/lnorm along a dotted LHS axis (any position), topk (ties included),
  concat (arguments of different extents), offsets `A[i+1]`, `A[i-1]`, sums of
  variables `A[i+j]`, constant positions `A[0,j]`, transposes and diagonals (a
  reference binding another index of the same extent), slices `A[i,1:3]`
  (kept by an LHS `:` or projected), pooling `Y[i/2]` with each projection
  op, several equations per tensor (`+=`, `max=`, ...), and equations reading
  earlier ones;
- Boolean rules with `( )` references over 0/1 relations and facts (positions
  or symbols), recursive Datalog rules (transitive closure: left-, right-linear
  and non-linear), queries, and numeric uses of relations;
- recurrences: an offset recursion `X[t,j] = f(X[t-1,k])`, a virtual index
  `X[j,*t+1] = f(X[k,*t])`, and a numeric fixpoint (a contraction).

Each program runs twice per backend, with two sets of input values: a compiled
graph must take the inputs as arguments, never as constants.
Every generated program is first checked by `fuse_lang.analyze` (no error may
be reported: a generator bug fails loudly) and must run on NumPy; the program
text and the inputs are attached to a failure with `note()`.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import TOLERANCE, assert_same_result
from hypothesis import (
    HealthCheck,
    event,
    given,
    note as hypothesis_note,
    settings,
    strategies as st,
)
from hypothesis.errors import InvalidArgument

import fuse_lang
from fuse_lang.front.diagnostics import Severity

pytest.importorskip("torch")
pytest.importorskip("jax")

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])

POOL = ("i", "j", "k", "l")
SYMBOLS = ("Ann", "Bob", "Cy", "Dee", "Eve")
NUMBERS = ("0.5", "2", "1.5", "0.25", "3", "1e-1")


# ---------------------------------------------------------------- checking

def note(text: str) -> None:
    """Attach to a failing example's report (the regression tests below call
    the same checks outside Hypothesis: there the assertion messages say it)."""
    try:
        hypothesis_note(text)
    except InvalidArgument:
        pass


def well_typed(text: str) -> None:
    analysis = fuse_lang.analyze(text)
    errors = [f"{_where(analysis, d)}: {d.code}: {d.message}"
              for d in analysis.diagnostics if d.severity is Severity.ERROR]
    assert not errors, f"generated program does not check:\n{text}\n" + "\n".join(errors)


def _where(analysis, diagnostic) -> str:
    line, column = analysis.lines.position(diagnostic.span.start)
    return f"line {line + 1}, column {column + 1}"


def make_inputs(specs: dict[str, tuple[tuple[int, ...], str]], seed: int) -> dict[str, np.ndarray]:
    """specs: name -> (shape, kind); kind is 'real' (uniform in [-1, 1]),
    'ties' (a few values, many ties, exact zeros) or 'bool' (0/1)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, kind) in specs.items():
        if kind == "bool":
            value = rng.random(shape) < rng.uniform(0.15, 0.6)
        elif kind == "ties":
            value = rng.choice(np.array([-1.0, -0.5, 0.0, 0.5, 1.0]), size=shape)
        else:
            value = rng.uniform(-1.0, 1.0, size=shape)
        out[name] = np.asarray(value, dtype=np.float32)
    return out


def check_backends(text: str, specs: dict, seed: int,
                   others=(("torch", False), ("jax", True))) -> None:
    """Run `text` on NumPy, then on each other backend, and compare; then run
    the same compiled programs again with new input values (a compiled graph
    is reused: the inputs must be its arguments, never constants in it)."""
    note(f"program:\n{text}")
    well_typed(text)
    programs = {"numpy": fuse_lang.compile(text, backend="numpy")}
    for backend, compiled in others:
        programs[backend, compiled] = fuse_lang.compile(text, backend=backend,
                                                        compiled=compiled)
    for run, inputs in enumerate([make_inputs(specs, seed), make_inputs(specs, seed + 1)]):
        note(f"inputs of run {run + 1}:\n" + "\n".join(
            f"{n} = {np.array2string(a, precision=4)}" for n, a in inputs.items()))
        reference = programs["numpy"].execute(inputs)
        assert reference.outputs or reference.queries, f"nothing to compare:\n{text}"
        for backend, compiled in others:
            result = programs[backend, compiled].execute(inputs)
            assert_same_result(reference, result, f"run {run + 1}: {backend} (compiled="
                                                  f"{compiled}) differs from numpy on\n{text}\n")
        if not specs:
            break   # no inputs: a second run would be the same


# ---------------------------------------------------------------- numeric programs

class Ctx:
    """What one equation's right-hand side may use."""

    def __init__(self, extents: dict[str, int], tensors: dict[str, tuple[str, ...]],
                 lhs: tuple[str, ...], slice_width: int | None = None):
        self.extents = extents                  # index -> extent (all declared by `axis`)
        self.tensors = tensors                  # tensor -> its axes (index names of the pool)
        self.lhs = lhs
        self.slice_width = slice_width          # one anonymous slice variable of this width
        self.rename: dict[str, str] = {}        # topk / concat: their axis is `u` / `n`
        self.slices = 0                         # how many references hold a slice

    def var(self, v: str) -> str:
        return self.rename.get(v, v)


@st.composite
def reference(draw, ctx: Ctx, tensor: str | None = None, must: str | None = None) -> str:
    """`T[...]` binding each axis to its own index, another index of the same
    extent (transpose / diagonal), an offset, a sum of indices, a constant
    position or (when the equation has one) a slice.  `must`: an index that
    the reference has to mention as a plain variable."""
    if tensor is None:
        tensor = draw(st.sampled_from(sorted(ctx.tensors)))
    axes = ctx.tensors[tensor]
    if not axes:
        return tensor
    ext = ctx.extents
    parts, sliced = [], False
    for a in axes:
        if a == must:
            parts.append(ctx.var(a))
            continue
        same = [b for b in ext if ext[b] == ext[a] and b != a and b != must]
        kinds = ["own"] * 6 + ["const"] + (["other"] * 2 if same else [])
        # an offset on topk's / concat's own axis reads the argument's extent
        # (test_topk_argument_with_an_offset_checks); a sum of indices is not kept there
        kinds += ["offset"] if a in ctx.rename else ["offset", "sum"]
        w = ctx.slice_width
        if w is not None and not sliced and ext[a] >= w:
            kinds += ["slice"] * 6
        kind = draw(st.sampled_from(kinds))
        if kind == "own":
            parts.append(ctx.var(a))
        elif kind == "other":
            parts.append(ctx.var(draw(st.sampled_from(same))))
        elif kind == "offset":
            parts.append(ctx.var(a) + draw(st.sampled_from(["+1", "-1", "+2"])))
        elif kind == "const":
            parts.append(str(draw(st.integers(0, ext[a] - 1))))
        elif kind == "sum":
            b = draw(st.sampled_from(sorted(b for b in ext if b not in ctx.rename)))
            parts.append(f"{ctx.var(a)}+{ctx.var(b)}")
        else:
            start = draw(st.integers(0, ext[a] - w))
            stop = start + w
            if start == 0 and stop == ext[a] and draw(st.booleans()):
                parts.append(":")
            elif stop == ext[a] and draw(st.booleans()):
                parts.append(f"{start}:")
            elif start == 0 and draw(st.booleans()):
                parts.append(f":{stop}")
            else:
                parts.append(f"{start}:{stop}")
            sliced = True
            ctx.slices += 1
    return f"{tensor}[{', '.join(parts)}]"


def tensors_with(ctx: Ctx, v: str) -> list[str]:
    return sorted(t for t, axes in ctx.tensors.items() if v in axes)


@st.composite
def expression(draw, ctx: Ctx, depth: int) -> str:
    """A random expression; every sub-expression is parenthesised where the
    precedence could matter, so the text means what the generator built."""
    leaf = depth <= 0
    kinds = ["ref"] * 5 + ["number", "index"]
    if not leaf:
        kinds += ["sum"] * 3 + ["product"] * 3 + ["unary"] * 3 + ["neg", "div", "pow",
                                                                  "minmax", "reduce", "exp"]
    kind = draw(st.sampled_from(kinds))
    sub = lambda: draw(expression(ctx, depth - 1))  # noqa: E731
    if kind == "ref":
        return draw(reference(ctx))
    if kind == "number":
        return draw(st.sampled_from(NUMBERS))
    if kind == "index":   # an index's value, or a parity mask on it
        # (topk's / concat's axis too: inside their argument its value has the
        # argument's extent, test_index_value_inside_topk)
        plain = [ctx.rename.get(v, v) for v in ctx.lhs]
        if not plain:
            return draw(st.sampled_from(NUMBERS))
        v = draw(st.sampled_from(plain))
        return draw(st.sampled_from([f"(0.25 * {v})", f"even({v})", f"odd({v})"]))
    if kind == "sum":
        n = draw(st.integers(2, 3))
        out = sub()
        for _ in range(n - 1):
            out += draw(st.sampled_from([" + ", " - "])) + sub()
        return f"({out})"
    if kind == "product":
        n = draw(st.integers(2, 3))
        factors = [sub() for _ in range(n)]
        # juxtaposition after `]` or `)` (a bare name before `(` needs `*`)
        out = factors[0]
        for f in factors[1:]:
            joint = " " if out.endswith(("]", ")")) and draw(st.booleans()) else " * "
            out += joint + f
        return f"({out})"
    if kind == "unary":
        fn = draw(st.sampled_from(["relu", "tanh", "sig", "gelu", "abs", "sin", "cos", "sigT"]))
        if fn == "sigT":   # a temperature: a number, or a positive expression
            temperature = draw(st.sampled_from(["0.5", "2", "{}"]))
            if temperature == "{}":
                temperature = f"0.5 + abs({draw(expression(ctx, 0))})"
            return f"sig({sub()}, {temperature})"
        return f"{fn}({sub()})"
    if kind == "neg":
        return f"(-{sub()})"
    if kind == "div":
        denominator = draw(st.sampled_from(["(1 + ({})^2)", "(0.5 + abs({}))", "(2 + tanh({}))",
                                            "(1 + sig({}))", "sqrt(1 + ({})^2)",
                                            "exp(sin({}))"]))
        return f"({sub()} / {denominator.format(sub())})"
    if kind == "pow":
        form = draw(st.sampled_from(["({})^2", "({}) ** 2", "pow({}, 3)", "({})^3"]))
        return f"({form.format(draw(expression(ctx, 0)))})"
    if kind == "minmax":
        return f"{draw(st.sampled_from(['max', 'min']))}({sub()}, {sub()})"
    if kind == "exp":
        form = draw(st.sampled_from(["exp(tanh({}))", "exp(-abs({}))", "exp(sig({}))",
                                     "log(1 + ({})^2)", "log(2 + sin({}))"]))
        return form.format(sub())
    # reduce(op, v) body: v is not on the LHS and the body mentions it
    free = [v for v in ctx.extents
            if v not in ctx.lhs and v not in ctx.rename and tensors_with(ctx, v)]
    if not free:
        return sub()
    v = draw(st.sampled_from(free))
    op = draw(st.sampled_from(["sum", "max", "min", "avg"]))
    anchor = draw(reference(ctx, draw(st.sampled_from(tensors_with(ctx, v))), must=v))
    body = anchor if draw(st.booleans()) else f"({anchor} {sub()})"
    return f"(reduce({op}, {v}) {body})"


def lhs_text(name: str, axes: tuple[str, ...], dot: str | None = None, tail: str = "",
             pool: set[str] | None = None) -> str:
    if not axes and not tail:
        return name
    parts = [a + ("." if a == dot else "") for a in axes]
    if pool:
        parts = [f"{a}/2" if a in pool else a for a in parts]
    if tail:
        parts.append(tail)
    return f"{name}[{', '.join(parts)}]"


@st.composite
def numeric_programs(draw, max_equations: int = 4):
    names = draw(st.lists(st.sampled_from(POOL), min_size=2, max_size=4, unique=True))
    extents = {v: draw(st.integers(1, 5)) for v in names}
    lines = ["axis " + ", ".join(f"{v} = {n}" for v, n in extents.items())]
    tensors: dict[str, tuple[str, ...]] = {}
    specs: dict[str, tuple[tuple[int, ...], str]] = {}
    for t in "ABCD"[:draw(st.integers(1, 4))]:
        rank = draw(st.sampled_from([0, 1, 1, 2, 2, 2, 3, 3]))
        axes = tuple(draw(st.permutations(names)))[:rank]
        tensors[t] = axes
        shape = tuple(extents[a] for a in axes)
        if axes and len(axes) <= 2 and draw(st.integers(0, 5)) == 0:
            values = np.round(np.random.default_rng(draw(st.integers(0, 99))).uniform(
                -2, 2, shape), 1)
            lines.append(f"{lhs_text(t, axes)} = const({values.tolist()!r})")
        else:
            lines.append(f"param {lhs_text(t, axes)}")
            specs[t] = (shape, draw(st.sampled_from(["real", "real", "ties"])))
    exports = []
    for n in range(1, draw(st.integers(1, max_equations)) + 1):
        name = f"T{n}"
        kind = draw(st.sampled_from(["plain"] * 5 + ["norm"] * 2 + ["topk"] * 2 +
                                    ["slice", "pool", "concat"]))
        axes = tuple(draw(st.lists(st.sampled_from(names), max_size=3, unique=True)))
        if kind in ("norm", "topk") and not axes:
            kind = "plain"
        ctx = Ctx(extents, tensors, axes)
        depth = draw(st.integers(1, 3))
        defines: tuple[str, ...] | None = axes   # the axes later equations may read
        if kind == "plain":
            op = draw(st.sampled_from(["="] * 4 + ["max=", "min=", "avg="]))
            lines.append(f"{lhs_text(name, axes)} {op} {draw(expression(ctx, depth))}")
            if draw(st.integers(0, 3)) == 0:   # a second equation for the same tensor
                again = {"=": "+=", "avg=": "avg="}.get(op, op)
                lines.append(f"{lhs_text(name, axes)} {again} {draw(expression(ctx, depth))}")
        elif kind == "norm":
            fn = draw(st.sampled_from(["softmax", "lnorm"]))
            dot = draw(st.sampled_from(axes))
            body = draw(expression(ctx, depth))
            if fn == "lnorm":
                # layer norm divides by the spread along the axis: an argument that is
                # constant along it (up to rounding) would compare rounding noise
                body = f"{body} + 0.5 * {dot}"
            rhs = f"{fn}({body})"
            if draw(st.booleans()):
                rhs = f"{draw(st.sampled_from(NUMBERS))} * {rhs} + {draw(expression(ctx, 1))}"
            lines.append(f"{lhs_text(name, axes, dot=dot)} = {rhs}")
        elif kind == "topk":
            v = axes[-1]
            holders = tensors_with(ctx, v)
            if not holders:
                lines.append(f"{lhs_text(name, axes)} = {draw(expression(ctx, depth))}")
            else:
                # the chosen axis is written `u` (not declared: inside the argument it
                # has its tensor's extent, on the left-hand side extent k)
                ctx.rename = {v: "u"}
                # k up to the row's extent (beyond it: test_topk_larger_than_the_row_...)
                k = draw(st.integers(1, extents[v]))
                anchor = draw(reference(ctx, draw(st.sampled_from(holders)), must=v))
                body = anchor
                if draw(st.booleans()):
                    body += f" {draw(st.sampled_from(['+', '-', '*']))} " \
                            f"{draw(expression(ctx, depth - 1))}"
                lhs = lhs_text(name, axes[:-1] + ("u",))
                lines.append(f"{lhs} = topk({body}, k={k})")
                defines = None
        elif kind == "slice":
            w = draw(st.integers(1, max(extents.values())))
            holders = [t for t, ax in tensors.items() if any(extents[a] >= w for a in ax)]
            keep = draw(st.booleans())
            ctx = Ctx(extents, tensors, axes, slice_width=w)
            terms = []
            if not holders:
                terms.append(draw(expression(ctx, depth)))
            else:
                while ctx.slices == 0:
                    terms.append(draw(reference(ctx, draw(st.sampled_from(holders)))))
            op = "=" if keep else draw(st.sampled_from(["=", "max=", "avg="]))
            rhs = " ".join(terms) if not keep or draw(st.booleans()) else " + ".join(terms)
            if keep and draw(st.booleans()):
                rhs = f"{draw(st.sampled_from(['tanh', 'relu', 'sig']))}({rhs}) + " \
                      f"{draw(expression(Ctx(extents, tensors, axes), depth - 1))}"
            lines.append(f"{lhs_text(name, axes, tail=':' if keep and ctx.slices else '')} "
                         f"{op} {rhs}")
            defines = None
        elif kind == "concat":
            # each argument binds an axis of its own choice (any extent) to `n`;
            # the left-hand side's `n` has the sum of their extents
            held = sorted({a for ax in tensors.values() for a in ax})
            args = []
            for _ in range(draw(st.integers(2, 3))):
                if not held:
                    break
                a = draw(st.sampled_from(held))
                arg_ctx = Ctx(extents, tensors, tuple(x for x in axes if x != a))
                arg_ctx.rename = {a: "n"}
                anchor = draw(reference(arg_ctx, draw(st.sampled_from(tensors_with(ctx, a))),
                                        must=a))
                args.append(anchor if draw(st.booleans()) else
                            f"{anchor} {draw(st.sampled_from(['+', '-', '*']))} "
                            f"{draw(expression(arg_ctx, depth - 1))}")
            if len(args) < 2:
                lines.append(f"{lhs_text(name, axes)} = {draw(expression(ctx, depth))}")
            else:
                at = draw(st.integers(0, len(axes)))
                lhs = lhs_text(name, axes[:at] + ("n",) + axes[at:])
                lines.append(f"{lhs} = concat({', '.join(args)}, axis=n)")
            defines = None
        else:  # pool: some LHS axes written `i/2`, cells combined by the equation's op
            if not axes:
                axes = (draw(st.sampled_from(names)),)
                ctx = Ctx(extents, tensors, axes)
            pooled = set(draw(st.lists(st.sampled_from(axes), min_size=1, unique=True)))
            op = draw(st.sampled_from(["=", "max=", "min=", "avg="]))
            lines.append(f"{lhs_text(name, axes, pool=pooled)} {op} "
                         f"{draw(expression(ctx, depth))}")
            defines = None
        if defines is not None and draw(st.integers(0, 2)) > 0:
            tensors[name] = defines   # later equations may read it
        exports.append(name)
    lines.append("export " + ", ".join(exports))
    seed = draw(st.integers(0, 2**32 - 1))
    return "\n".join(lines), specs, seed


# what a generated program uses (shown by `pytest --hypothesis-show-statistics`)
FEATURES = {"softmax(": "softmax", "lnorm(": "lnorm", "topk(": "topk", "concat(": "concat",
            "reduce(": "reduce", " max= ": "max=", " min= ": "min=", " avg= ": "avg=",
            "+= ": "+=", "/2": "pooling", ":": "slice", "+1": "offset", "-1": "offset",
            "const(": "const", " / ": "division", "sig(": "sig", "gelu(": "gelu",
            "exp(": "exp"}


@settings(max_examples=60, **SETTINGS)
@given(numeric_programs())
def test_numeric_programs_agree(case):
    text, specs, seed = case
    for marker, feature in FEATURES.items():
        if marker in text.partition("\n")[2]:
            event(f"uses {feature}")
    check_backends(text, specs, seed)


# torch.compile costs seconds per program: a few small programs only
@settings(max_examples=3, **SETTINGS)
@given(numeric_programs(max_equations=2))
def test_numeric_programs_agree_under_torch_compile(case):
    text, specs, seed = case
    check_backends(text, specs, seed, others=(("torch", True),))


# ---------------------------------------------------------------- Boolean rules and Datalog

@st.composite
def datalog_programs(draw):
    n = draw(st.integers(1, 5))
    lines = [f"axis a = {n}, b = {n}, c = {n}"]
    # constants are positions or symbols (numbered in order of first appearance)
    symbols = draw(st.booleans())

    def node(x: int) -> str:
        return SYMBOLS[x] if symbols and draw(st.integers(0, 3)) else str(x)

    specs = {}
    relations = []
    for name in ("E", "F")[:draw(st.integers(1, 2))]:
        # a Boolean relation from 0/1 data and/or facts
        source = draw(st.booleans())
        if source:
            lines.append(f"param M{name}[a,b]")
            lines.append(f"{name}(a,b) = M{name}[a,b]")
            specs[f"M{name}"] = ((n, n), "bool")
        facts = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                              min_size=0 if source else 1, max_size=4))
        lines += [f"{name}({node(x)}, {node(y)})" for x, y in facts]
        relations.append(name)
    E = relations[0]
    F = relations[-1]
    rules = []
    # a Boolean rule with ( ) references: join and/or union
    rules.append(draw(st.sampled_from([
        f"R(a,c) = {E}(a,b) {F}(b,c)",
        f"R(a,c) = {E}(a,b) {F}(c,b)",
        f"R(a,b) = {E}(a,b) {F}(b,a)",
    ])))
    if draw(st.booleans()):
        rules.append(f"R(a,b) = {F}(a,b)")
    # a recursive rule: transitive closure, right-, left-linear or non-linear
    rules.append(f"P(a,b) = {draw(st.sampled_from([E, 'R']))}(a,b)")
    base = rules[-1].split("= ")[1].split("(")[0]
    rules.append(draw(st.sampled_from([
        f"P(a,c) = P(a,b) {base}(b,c)",
        f"P(a,c) = {base}(a,b) P(b,c)",
        "P(a,c) = P(a,b) P(b,c)",
    ])))
    lines += rules
    # numeric uses of relations
    lines.append(draw(st.sampled_from([
        "Deg[a] = P(a,b)", "Deg[a] = P(a,b) + 1", "Deg[a] max= P(a,b) R(b,a)",
        "Deg[a] = relu(P(a,b) - R(a,b))", "Deg = P(a,b)",
    ])))
    exports = ["P", "Deg"] + (["R"] if draw(st.booleans()) else [])
    lines.append("export " + ", ".join(exports))
    x = node(draw(st.integers(0, n - 1)))
    for query in draw(st.lists(st.sampled_from([f"P({x}, a)?", f"P(a, {x})?", "R(a,b)?",
                                                f"P({x}, {x})?", "Deg?"]),
                               max_size=2, unique=True)):
        lines.append(query)
    return "\n".join(lines), specs, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=20, **SETTINGS)
@given(datalog_programs())
def test_datalog_programs_agree(case):
    text, specs, seed = case
    check_backends(text, specs, seed)


# ---------------------------------------------------------------- recurrences

@st.composite
def recurrence_programs(draw):
    t, j = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    fn = draw(st.sampled_from(["tanh", "sig", "relu"]))
    form = draw(st.sampled_from(["offset", "virtual", "fixpoint"]))
    if form == "fixpoint":    # numeric recursion to a tolerance (a contraction: 0.2 * 4 < 1)
        fn = draw(st.sampled_from(["tanh", "sig"]))
        text = (f"axis j = {j}, k = {j}\nparam W[j,k]\nparam U[j]\n"
                f"X[j] = {fn}(0.2 * W[j,k] X[k] + U[j])\nexport X")
        specs = {"W": ((j, j), "real"), "U": ((j,), "real")}
    elif form == "offset":    # computed in order of t (offset -1)
        text = (f"axis t = {t}, j = {j}, k = {j}\nparam W[j,k]\nparam U[t,j]\n"
                f"X[t,j] = {fn}(W[j,k] X[t-1,k] + U[t,j])\nexport X")
        specs = {"W": ((j, j), "real"), "U": ((t, j), "real")}
    else:                     # a virtual index: only the last state is kept
        text = (f"axis t = {t}, j = {j}, k = {j}\nparam W[j,k]\nparam V[j,k]\nparam U[k,t]\n"
                f"X[j,*t+1] = {fn}(W[j,k] X[k,*t] + V[j,k] U[k,t])\nexport X")
        specs = {"W": ((j, j), "real"), "V": ((j, j), "real"), "U": ((j, t), "real")}
    return text, specs, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=10, **SETTINGS)
@given(recurrence_programs())
def test_recurrences_agree(case):
    text, specs, seed = case
    check_backends(text, specs, seed)


# ---------------------------------------------------------------- regressions found here
# Each is a minimal program shrunk from a generated one (all fixed since).

def _outcome(text: str, backend: str, compiled: bool | None, inputs: dict) -> tuple:
    try:
        result = fuse_lang.compile(text, backend=backend, compiled=compiled).execute(inputs)
    except fuse_lang.FuseError as err:
        return ("FuseError", str(err))
    except Exception as err:  # noqa: BLE001 - what leaks out is the finding
        return (type(err).__name__, str(err))
    return ("ok", {n: np.asarray(v).tolist() for n, v in result.outputs.items()})


def test_topk_argument_with_an_offset_checks():
    text = "axis n = 3\nparam A[n]\nY[u] = topk(A[u+1], k=2)\nexport Y"
    a = np.array([0.5, -1.0, 2.0], np.float32)
    check_backends(text, {"A": ((3,), "real")}, 0)
    out = fuse_lang.compile(text).run({"A": a})["Y"]
    np.testing.assert_allclose(out, [2.0, 0.0], **TOLERANCE)   # top 2 of [A1, A2, 0]


def test_concat_argument_with_an_offset():
    text = "axis n = 3\nparam A[n]\nY[m] = concat(A[m+1], A[m], axis=m)\nexport Y"
    a = np.array([0.5, -1.0, 2.0], np.float32)
    assert not [d for d in fuse_lang.analyze(text).diagnostics if d.severity is Severity.ERROR]
    out = fuse_lang.compile(text).run({"A": a})["Y"]
    np.testing.assert_allclose(out, [-1.0, 2.0, 0.0, 0.5, -1.0, 2.0], **TOLERANCE)
    check_backends(text, {"A": ((3,), "real")}, 0)


def test_index_value_inside_topk():
    # the value of topk's axis inside its argument has the argument's extent (4), not k
    text = "axis n = 4\nparam B[n]\nY[u] = topk(B[u] + u, k=2)\nexport Y"
    b = np.array([0.5, 0.25, -1.0, -2.0], np.float32)
    out = fuse_lang.compile(text).run({"B": b})["Y"]
    np.testing.assert_allclose(out, [1.25, 1.0], **TOLERANCE)   # top 2 of B + [0, 1, 2, 3]
    check_backends(text, {"B": ((4,), "real")}, 0)


def test_index_value_inside_concat():
    # the value of concat's axis inside an argument has that argument's extent
    text = "axis n = 4\nparam B[n]\nY[m] = concat(B[m] + m, B[m], axis=m)\nexport Y"
    b = np.array([0.5, 0.25, -1.0, -2.0], np.float32)
    out = fuse_lang.compile(text).run({"B": b})["Y"]
    np.testing.assert_allclose(out, np.concatenate([b + np.arange(4), b]), **TOLERANCE)
    check_backends(text, {"B": ((4,), "real")}, 0)


def test_topk_larger_than_the_row_fails_the_same_on_every_backend():
    text = "axis n = 3\nparam A[n]\nY[u] = topk(A[u], k=5)\nexport Y"
    inputs = {"A": np.array([0.5, -1.0, 2.0], np.float32)}
    outcomes = {f"{b} (compiled={c})": _outcome(text, b, c, inputs)
                for b, c in (("numpy", None), ("torch", False), ("jax", True))}
    assert len(set(map(repr, outcomes.values()))) == 1, outcomes
    assert next(iter(outcomes.values()))[0] in ("ok", "FuseError"), outcomes
