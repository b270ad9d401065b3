"""The builtin functions of LANGUAGE.md §10: signatures and meaning as data.

The checker validates calls against these specs; hover and completion show
`signature` and `doc`; the backends implement the semantics.
"""
from __future__ import annotations

from ..speed.fastinit import frozen_dataclass


@frozen_dataclass
class Builtin:
    name: str
    min_args: int
    max_args: int | None  # None: any number
    keywords: tuple[str, ...]
    required_keywords: tuple[str, ...]
    signature: str
    doc: str
    # how many LHS axes the result binds to when it makes a tensor of its own
    # (const: the literal's rank; causal_mask: the last two LHS axes)
    elementwise: bool = True


def _unary(name: str, doc: str) -> Builtin:
    return Builtin(name, 1, 1, (), (), f"{name}(x)", doc)


def _schedule(name: str, formula: str) -> Builtin:
    return Builtin(name, 2, 2, ("steps", "per"), ("steps",),
                   f"{name}(start, end, steps=N, per=iteration)",
                   f"A temperature schedule, the whole right-hand side of a scalar tensor "
                   f"(`T = {name}(1.0, 0.1, steps=10)`): at step s it is {formula}, and `end` "
                   f"from step N on.  The step is the fixpoint round (`per=iteration`, the "
                   f"default: round 0 first) or the program's run (`per=run`: its first run "
                   f"is step 0).", elementwise=False)


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        _unary("step", "1 where x > 0, else 0 (the Boolean nonlinearity of logical rules)."),
        _unary("relu", "max(x, 0), elementwise."),
        _unary("tanh", "Hyperbolic tangent, elementwise."),
        _unary("exp", "e^x, elementwise."),
        _unary("log", "Natural logarithm, elementwise."),
        _unary("sqrt", "Square root, elementwise."),
        _unary("abs", "Absolute value, elementwise."),
        _unary("sin", "Sine, elementwise."),
        _unary("cos", "Cosine, elementwise."),
        _unary("gelu", "x·Φ(x) with the exact error function, elementwise."),
        _unary("gelu_tanh", "The tanh approximation of gelu, "
               "0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), elementwise."),
        Builtin("sig", 1, 2, ("T",), (), "sig(x, T=1)",
                "Logistic sigmoid 1/(1+e^(-x/T)); T is a temperature (positional or `T=`), "
                "T = 0 gives step(x)."),
        Builtin("pow", 2, 2, (), (), "pow(x, n)", "x to the power n, elementwise."),
        Builtin("softmax", 1, 1, ("axis",), (), "softmax(x, axis=i)",
                "Softmax along the dotted LHS axis, else along `axis=`, else along the last LHS axis."),
        Builtin("log_softmax", 1, 1, ("axis",), (), "log_softmax(x, axis=i)",
                "log(softmax(x)) along the same axis as softmax, computed as x - max - "
                "log Σ exp(x - max): finite for any finite x (log(softmax(x)) gives -inf and "
                "NaN gradients once a probability underflows)."),
        Builtin("cross_entropy", 2, 2, ("axis", "smoothing"), ("axis",),
                "cross_entropy(z, t, axis=v, smoothing=0)",
                "The cross-entropy of logits z against targets t along the class axis v, "
                "which the result does not have (`CE[n] = cross_entropy(Z[n,v], T[n], "
                "axis=v)`): -log_softmax(z)[t] for integer class ids t (indexed like z "
                "without v), or -Σ_v t·log_softmax(z) for one-hot or probability targets "
                "(indexed like z). `smoothing=ε` mixes the targets with the uniform "
                "distribution, (1-ε)·t + ε/|v|, as PyTorch's label_smoothing."),
        Builtin("gather", 2, 2, ("axis",), ("axis",), "gather(x, ids, axis=v)",
                "x at the positions `ids` along its axis v, which the result does not have: "
                "an embedding lookup `E[t,d] = gather(Emb[v,d], Tok[t], axis=v)` (PyTorch's "
                "F.embedding), or one value per row, `P[n] = gather(LP[n,v], T[n], axis=v)` "
                "(an index of both is matched: torch.gather). ids are whole numbers from 0; "
                "the gradient flows to x."),
        Builtin("lnorm", 1, 1, ("eps", "axis"), (), "lnorm(x, eps=1e-5, axis=i)",
                "Layer normalisation (zero mean, unit variance) along the same axis as softmax."),
        Builtin("concat", 1, None, ("axis",), ("axis",), "concat(a, b, ..., axis=n)",
                "Concatenate along the axis named n in every argument and the LHS; only there may "
                "extents differ, and the result's extent is their sum."),
        Builtin("topk", 1, 1, ("k",), ("k",), "topk(x, k=K)",
                "The K largest values per row along the last axis, descending; ties go to the lower index."),
        Builtin("causal_mask", 1, 1, (), (), "causal_mask(n)",
                "An n×n tensor, 1 where key ≤ query, else 0; binds to the last two LHS axes.",
                elementwise=False),
        Builtin("even", 1, 1, (), (), "even(i)", "1 where the index i is even, else 0."),
        Builtin("odd", 1, 1, (), (), "odd(i)", "1 where the index i is odd, else 0."),
        Builtin("const", 1, 1, (), (), "const(literal)",
                "A literal tensor (a number or nested list); its axes bind to the LHS indices in order.",
                elementwise=False),
        Builtin("not", 1, 1, (), (), "not P(x, ...)",
                "Negation: 1 where no tuple of P matches, else 0 (1 - step of the atom summed over "
                "the variables it alone has). Every other variable must be bound by a positive "
                "atom, and a relation may not depend on itself through `not`."),
        *[Builtin(op, 2, 2, (), (), f"a {op} b", f"1 where a {meaning} b, else 0: a Boolean "
                  "factor over the indices of both sides (an index stands for its value; "
                  "docs/language.md, Datalog in Fuse).") for op, meaning in (
            ("<", "is less than"), ("<=", "is at most"), (">", "is greater than"),
            (">=", "is at least"), ("==", "equals"), ("!=", "differs from"))],
        _schedule("linear", "start + (end - start)·s/N"),
        _schedule("exponential", "start·(end/start)^(s/N) (start and end above 0)"),
        _schedule("cosine", "end + (start - end)·(1 + cos(π·s/N))/2"),
        Builtin("select", 3, 3, (), (), "select(c, a, b)",
                "a where the condition c holds (c > 0), else b, elementwise; c is a comparison "
                "or a Boolean. `case { c1 -> a; default -> b }` and `a when c` are selects."),
        Builtin("where", 3, 3, (), (), "where(c, a, b)",
                "NumPy's and PyTorch's spelling of `select(c, a, b)`: a where the condition "
                "c holds (c > 0), else b, elementwise."),
        Builtin("masked_fill", 3, 3, (), (), "masked_fill(x, mask, value)",
                "PyTorch's `x.masked_fill(mask, value)`: value where the condition mask holds "
                "(mask > 0), else x, elementwise; it is `select(mask, value, x)`."),
        Builtin("max", 2, 2, (), (), "max(a, b)", "Elementwise maximum."),
        Builtin("min", 2, 2, (), (), "min(a, b)", "Elementwise minimum."),
    )
}


# other spellings of `select`, made selects when the call is built (front/builder.py):
# each maps its three arguments to select's (condition, then, otherwise)
SELECT_SPELLINGS = {
    "where": lambda c, a, b: (c, a, b),
    "masked_fill": lambda x, mask, value: (mask, value, x),
}


def parameter_names(spec: Builtin) -> tuple[str, ...]:
    """The names of a builtin's positional parameters, from its signature
    (`pow(x, n)`: x, n; `max(a, b)`: a, b), at most `max_args` of them."""
    inside = spec.signature.partition("(")[2].rpartition(")")[0]
    names = tuple(p.strip().partition("=")[0] for p in inside.split(","))
    limit = spec.max_args if spec.max_args is not None else 0
    return tuple(n for n in names[:limit] if n.isidentifier())


def by_position(name: str, positional: list, keywords: list) -> tuple[list, list]:
    """A call's arguments with each keyword that names a positional parameter put
    in its place (LANGUAGE.md §13: `causal_mask(n=4)` is `causal_mask(4)`,
    `max(a=X, b=0)` and `max(b=0, a=X)` are `max(X, 0)`), in any order, as long as
    the places before it are filled.  A keyword the builtin also takes by name
    (sig's `T=`) stays one: the calls read it; so does one given twice, or one
    whose place is taken or comes after an empty one (the checker says so)."""
    spec = BUILTINS.get(name)
    if spec is None or not keywords:
        return positional, keywords
    params = parameter_names(spec)
    names = [kw.name for kw in keywords]
    by_name = {kw.name: kw for kw in keywords if kw.name in params
               and kw.name not in spec.keywords and names.count(kw.name) == 1}
    positional, placed = list(positional), set()
    while len(positional) < len(params) and params[len(positional)] in by_name:
        kw = by_name[params[len(positional)]]
        positional.append(kw.value)
        placed.add(id(kw))
    return positional, [kw for kw in keywords if id(kw) not in placed]


# The comparisons (LANGUAGE.md §13): written `a < b`, builtin calls in the IR;
# never offered or listed as functions.
COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
# The builtins a user calls by name (the others are operators or keywords).
NAMED_BUILTINS = tuple(name for name in BUILTINS if name not in COMPARISONS)

REDUCE_OPS = ("sum", "max", "min", "avg")
REDUCE_DOC = ("reduce(op, i, ...) expr", "Project the named indices of expr explicitly with "
              "op, one of sum, max, min, avg.")

# `axis x = valid`: the paddings an axis declaration may name instead of an extent
PADDINGS = frozenset({"valid", "same"})

# Words that start statements or special forms now.
KEYWORDS = frozenset({"export", "axis", "param", "train", "reduce", "not", "fn", "case", "when",
                      "default", "let", "import", "as"})

# The words that start a statement: an example of each and what it does (completion
# offers them at a statement's start; a hover on one shows them).
STATEMENT_KEYWORDS = {
    "export": ("export Y, Z", "The program's outputs: what `run` returns and shows."),
    "axis": ("axis d = 64", "Declare the extent of an index name program-wide."),
    "param": ("param W[i,j]", "A learnable tensor; `= INIT` after it chooses how it "
              "starts (by default a weight Glorot-uniform, a bias zeros)."),
    "fn": ("fn f(x[i]) -> y[i] { ... }", "A function over indexed arguments, inlined at "
           "each call: `Y[i] = f(X[i])`."),
    "let": ("let h[i] = W[i,j] X[j]", "A local tensor: visible only in its `{ }` block "
            "(at the top level: in its file), never an output."),
    "import": ('import "lib/graph.fuse" as g', "Another file's tensors, relations, params "
               "and functions, named `g::Name` here."),
    "train": ("train Loss", "The scalar tensor whose params `fuse train` makes small "
              "(the loss)."),
}

# Functions whose argument must be an index variable, not a tensor.
INDEX_ARGUMENT_BUILTINS = frozenset({"even", "odd"})
# Temperature schedules (run/schedules.py) and the words `per=` takes.
SCHEDULE_BUILTINS = frozenset({"linear", "exponential", "cosine"})
SCHEDULE_PER = ("iteration", "run")
# Builtins that normalise along one axis.
NORMALISING_BUILTINS = frozenset({"softmax", "log_softmax", "lnorm"})
