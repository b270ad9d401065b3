"""Param initialisers (`param W[f,d] = kaiming, B[f] = zeros`; docs/language.md,
"Params and their initialisers"): their names and arguments as data, the check
of those a program writes (`bad-initialiser`), and an initialiser given as text
to training (`fuse train --init W=normal(0.02)`), read and checked the same way.

What each draws, from the fans of check.param_roles, is run.param_init's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..front import ir
from ..front.diagnostics import Diagnostic, Related, make
from ..front.span import Span
from ..front.syntax import parse
from .suggestions import NameSuggester, did_you_mean_text


@dataclass(frozen=True)
class InitialiserSpec:
    """One initialiser: its arguments (numbers, `min_args` to `max_args` of them)."""
    name: str
    min_args: int
    max_args: int
    signature: str
    doc: str


INITIALISERS: dict[str, InitialiserSpec] = {s.name: s for s in (
    InitialiserSpec("zeros", 0, 0, "zeros", "Every value 0 (a bias's default)."),
    InitialiserSpec("ones", 0, 0, "ones", "Every value 1 (a scale's default)."),
    InitialiserSpec("constant", 1, 1, "constant(c)", "Every value c."),
    InitialiserSpec("uniform", 1, 2, "uniform(a) or uniform(low, high)",
                    "Uniform on [-a, a] (a > 0), or on [low, high) (low < high)."),
    InitialiserSpec("normal", 1, 2, "normal(std) or normal(mean, std)",
                    "Normal with this standard deviation (std > 0) around 0, or around mean."),
    InitialiserSpec("glorot", 0, 1, "glorot or glorot(gain)",
                    "Glorot (Xavier) uniform: ±gain·√(6/(fan_in + fan_out)), gain 1 by "
                    "default (a weight's default)."),
    InitialiserSpec("kaiming", 0, 1, "kaiming or kaiming(a)",
                    "Kaiming (He) uniform for ReLU, fan_in mode: ±√(6/fan_in); `kaiming(a)` "
                    "for a leaky ReLU of negative slope a: ±√(6/((1 + a²)·fan_in)) (torch's "
                    "kaiming_uniform_)."),
    InitialiserSpec("torch", 0, 0, "torch",
                    "PyTorch's default for nn.Linear and nn.Conv weights: ±1/√fan_in "
                    "(kaiming_uniform_ with a = √5)."),
)}

# `bad-initialiser` lists them in this form
KNOWN_TEXT = ", ".join(s.signature for s in INITIALISERS.values())

# PyTorch's names (torch.nn.init) an ML user writes, and Fuse's initialiser for each
# (`did you mean`); the normal variants have no exact counterpart: their message says so
TORCH_NAMES = {"xavier": "glorot", "xavier_uniform": "glorot", "he": "kaiming",
               "he_uniform": "kaiming", "kaiming_uniform": "kaiming", "default": "torch",
               "xavier_normal": "glorot", "kaiming_normal": "kaiming", "he_normal": "kaiming"}


def initialiser_problem(init: ir.Initialiser) -> tuple[str, Span] | None:
    """What is wrong with an initialiser (a message and where), or None."""
    spec = INITIALISERS.get(init.name)
    if spec is None:
        torch_name = TORCH_NAMES.get(init.name.rstrip("_").lower())
        close = [torch_name] if torch_name else NameSuggester(INITIALISERS).close(init.name)
        uniform = (f" Fuse's `{torch_name}` draws uniformly; for a normal draw, write "
                   f"`normal(std)`." if torch_name and "normal" in init.name.lower() else "")
        return (f"`{init.name}` is not an initialiser{did_you_mean_text(close)}{uniform} (the "
                f"initialisers: {KNOWN_TEXT})", init.name_span)
    count = len(init.args)
    if not spec.min_args <= count <= spec.max_args:
        wanted = (f"{spec.min_args}" if spec.min_args == spec.max_args
                  else f"{spec.min_args} or {spec.max_args}")
        return (f"`{init.name}` takes {wanted} argument{'' if wanted == '1' else 's'}, not "
                f"{count}: {spec.signature}", init.span)
    return _value_problem(init)


def _value_problem(init: ir.Initialiser) -> tuple[str, Span] | None:
    """Arguments of the right count whose values mean nothing."""
    args = init.args
    values = [a.value for a in args]
    if any(v != v or v in (float("inf"), float("-inf")) for v in values):
        return "an initialiser's arguments are finite numbers", init.span
    if init.name == "uniform" and len(args) == 1 and not values[0] > 0:
        return "`uniform(a)` draws from [-a, a]: a is above 0", args[0].span
    if init.name == "uniform" and len(args) == 2 and not values[0] < values[1]:
        return "`uniform(low, high)` needs low < high", init.span
    if init.name == "normal" and not values[-1] > 0:
        return "a normal's standard deviation is above 0 (for a constant, `constant(c)`)", \
            args[-1].span
    if init.name == "glorot" and args and not values[0] > 0:
        return "a gain is above 0", args[0].span
    if init.name == "kaiming" and args and not values[0] >= 0:
        return "`kaiming(a)`'s negative slope a is 0 or more", args[0].span
    return None


def check_initialisers(statements: Sequence[ir.Statement], diags: list[Diagnostic]) -> None:
    """`bad-initialiser` for an unknown initialiser, wrong arguments, or a param
    given two different initialisers (in two `param` declarations)."""
    first: dict[str, ir.Initialiser] = {}
    for stmt in statements:
        if type(stmt) is not ir.ParamDecl or not any(stmt.inits):
            continue
        for ref, init in zip(stmt.refs, stmt.inits):
            if init is None:
                continue
            problem = initialiser_problem(init)
            if problem is not None:
                diags.append(make("bad-initialiser", problem[0], problem[1]))
                continue
            before = first.setdefault(ref.name, init)
            if before is not init and initialiser_text(before) != initialiser_text(init):
                diags.append(make(
                    "bad-initialiser", f"`{ref.name}` starts as {initialiser_text(before)} "
                    f"already; a param has one initialiser", init.span,
                    related=(Related(before.span, "its first initialiser"),)))


def initialiser_text(init: ir.Initialiser) -> str:
    """`normal(0.02)`: as written, spaces aside."""
    if not init.args:
        return init.name
    return f"{init.name}({', '.join(a.text for a in init.args)})"


def written_initialisers(statements: Sequence[ir.Statement]) -> dict[str, ir.Initialiser]:
    """The initialiser each param's declaration writes (the first, for a param
    declared twice; check_initialisers refuses two that differ)."""
    out: dict[str, ir.Initialiser] = {}
    for stmt in statements:
        if type(stmt) is ir.ParamDecl:
            for ref, init in zip(stmt.refs, stmt.inits):
                if init is not None:
                    out.setdefault(ref.name, init)
    return out


def read_initialiser(text: str) -> ir.Initialiser:
    """An initialiser written as text (`normal(0.02)`, as after a param's `=`);
    ValueError saying what is wrong with it."""
    head = "param W = "
    parsed = parse(head + text.strip())
    stmts = parsed.program.statements
    if parsed.diagnostics or len(stmts) != 1 or type(stmts[0]) is not ir.ParamDecl \
            or stmts[0].inits[0] is None:
        raise ValueError(f"`{text}` is not an initialiser: write a name such as `kaiming` "
                         f"or a call with numbers such as `normal(0.02)` ({KNOWN_TEXT})")
    init = stmts[0].inits[0]
    problem = initialiser_problem(init)
    if problem is not None:
        raise ValueError(problem[0])
    return init
