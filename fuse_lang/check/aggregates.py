"""`aggregate-over-absent`: a `min=`, `max=` or `avg=` whose product has a Boolean
relation as a factor, and drops one of the relation's variables.  By the projection
rule (LANGUAGE.md §5) the operator ranges over every cell of what it drops, tuples
or not, and a cell with no tuple is 0 in the product: `M[x] min= E(x, y, w) w` is 0
for almost every `x`, never Datalog's smallest `w`.  What a Soufflé or SQL user
means is the aggregate over the tuples (docs/language.md, "Aggregating a column's
values"), which `select` writes."""
from __future__ import annotations

from ..front import ir
from ..front.builtins import COMPARISONS
from ..front.diagnostics import Diagnostic, Fix, TextEdit, make
from ..front.relocation import moved_span
from ..front.span import Span
from .datalog import terms
from .symbols import TensorSymbol

MASKS = frozenset({"even", "odd"})  # 0/1 masks on an index (LANGUAGE.md §10)
AGGREGATES = {"min=": ("minimum", "1e30"), "max=": ("maximum", "-1e30"), "avg=": ("mean", None)}


def aggregates_over_absent(statements: tuple[ir.Statement, ...],
                           tensors: dict[str, TensorSymbol], deltas: dict[int, int],
                           text: str, diags: list[Diagnostic]) -> None:
    """The warning for each such factor of the program's own text (`deltas`: how
    far a reused statement moved since its spans were taken)."""
    for stmt in statements:
        if type(stmt) is not ir.Equation or stmt.op not in AGGREGATES:
            continue
        delta = deltas.get(id(stmt), 0)
        if stmt.span.end + delta > len(text) or "@" in stmt.lhs.name:
            continue  # (an imported or inlined equation: not this text's)
        kept = {i.name for i in stmt.lhs.indices or () if type(i) is ir.IndexVar}
        for term in terms(stmt.rhs):
            factors = term.factors if type(term) is ir.Product else (term,)
            ops = term.ops if type(term) is ir.Product else ("",)
            for k, factor in enumerate(factors):
                dropped = _dropped(factor, tensors, kept)
                if dropped and ops[k] != "/" and (k + 1 >= len(ops) or ops[k + 1] != "/"):
                    diags.append(_warning(stmt, term, factor, dropped, delta, text))
                    break


def _dropped(factor: ir.Expr, tensors: dict[str, TensorSymbol], kept: set[str]) -> list[str]:
    """The variables a Boolean relation's reference, or a comparison (`(j <= i)`, a
    Boolean factor too: LANGUAGE.md §13) or a mask on an index (`even(j)`), has and
    the head drops."""
    if type(factor) is ir.Call and (factor.name in COMPARISONS or factor.name in MASKS):
        names = [n.name for n in ir.walk(factor) if type(n) is ir.Ref and n.indices is None
                 and n.name not in tensors]
        return [name for name in dict.fromkeys(names) if name not in kept]
    if type(factor) is not ir.Ref or not factor.indices:
        return []
    symbol = tensors.get(factor.name)
    if symbol is None or not symbol.boolean:
        return []
    names = [i.name for i in factor.indices if type(i) is ir.IndexVar and i.name != "_"]
    return [name for name in dict.fromkeys(names) if name not in kept]


def _warning(stmt: ir.Equation, term: ir.Expr, factor: ir.Ref, dropped: list[str],
             delta: int, text: str) -> Diagnostic:
    what, other = AGGREGATES[stmt.op]
    names = ", ".join(f"`{name}`" for name in dropped)
    atom = _text(factor.span, delta, text)
    if type(factor) is ir.Call:  # a comparison or a mask
        message = (f"`{stmt.op}` takes the {what} over every cell of {names}, and where "
                   f"`{atom}` does not hold this product is 0: the {what} counts those "
                   f"zeros, not only the cells where it holds")
        return _with_fix(stmt, term, factor, atom, message, delta, text,
                         "the cells where it holds", "where it holds",
                         f"; where it holds only, divide a sum by a count: the product with `=`"
                         f" over `{atom}` alone with `=`")
    message = (f"`{stmt.op}` takes the {what} over every cell of {names}, and where "
               f"{factor.name} has no tuple this product is 0: the {what} counts those "
               f"zeros, not only {factor.name}'s tuples")
    return _with_fix(stmt, term, factor, atom, message, delta, text,
                     f"{factor.name}'s tuples", "over the tuples only",
                     "; over the tuples only, divide a sum by a count: `Total[x] = E(x, y, w) w`, "
                     "`Count[x] = E(x, y, w)`, `Mean[x] = Total[x] / Count[x]`")


def _with_fix(stmt: ir.Equation, term: ir.Expr, factor: ir.Expr, atom: str, message: str,
              delta: int, text: str, over: str, only: str, mean: str) -> Diagnostic:
    what, other = AGGREGATES[stmt.op]
    fixes: tuple[Fix, ...] = ()
    if other is not None and type(term) is ir.Product and term.ops.count("/") == 0:
        rest = " ".join(_text(f.span, delta, text) for f in term.factors if f is not factor)
        if rest:
            message += f"; {only}: `select({atom}, {rest}, {other})`"
            fixes = (Fix(f"Take the {what} over {over} only",
                         (TextEdit(moved_span(term.span, delta),
                                   f"select({atom}, {rest}, {other})"),)),)
    elif other is None:
        message += mean
    return make("aggregate-over-absent", message, moved_span(factor.span, delta), fixes=fixes)


def _text(span: Span, delta: int, text: str) -> str:
    return text[span.start + delta:span.end + delta]
