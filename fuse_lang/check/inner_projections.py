"""An equation whose `avg=`, `max=` or `min=` projects nothing because the
projection rule (LANGUAGE.md §5) summed its indices inside a call first: an ML
user's mean loss `L avg= relu(1 - Y[n] F[n])` is `relu(1 - Σ_n Y[n] F[n])`, since
`n` occurs only in relu's argument, the innermost scope holding it, and an
argument sums.  The operator then has nothing left to project, which a program
never means where the equation is its tensor's only one (several `max=`
equations of one tensor combine by max, §6, and a start `D[0,s] max= ...`
projects nothing on purpose): a warning (`inner-projection`) with a fix per
index to project it with the operator around the call, `L = reduce(avg, n)
relu(...)`, which is clean."""
from __future__ import annotations

from typing import Container, Mapping, Sequence

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from ..front.span import Span
from .statement_tables import statement_tables
from .symbols import TensorSymbol

OPS = {"avg=": ("avg", "the mean"), "max=": ("max", "the largest value"),
       "min=": ("min", "the smallest value")}


def report_inner_projections(statements: Sequence[ir.Statement],
                             tensors: Mapping[str, TensorSymbol], text: str,
                             inlined: Container[int], out: list[Diagnostic]) -> None:
    """`inner-projection` for each numeric equation with a projection operator
    other than a sum that is its tensor's only equation, projects no index at its
    right-hand side and sums some inside a call's argument.  `inlined`: the numbers
    of the equations written out from a `fn` body (not looked at), as an imported
    file's, which its own check tells."""
    for k, stmt in enumerate(statements):
        if type(stmt) is not ir.Equation or stmt.op not in OPS or stmt.lhs.paren \
                or k in inlined or "::" in stmt.lhs.name \
                or not _only_equation(stmt.lhs.name, statements, tensors):
            continue
        found = _inner_sums(k, stmt, tensors)
        if found:
            out.append(_diagnostic(stmt, found, text))


def _only_equation(name: str, statements: Sequence[ir.Statement],
                   tensors: Mapping[str, TensorSymbol]) -> bool:
    symbol = tensors.get(name)
    if symbol is None:
        return False
    return sum(type(statements[k]) is ir.Equation for k in symbol.statements
               if k < len(statements)) == 1


def _inner_sums(k: int, stmt: ir.Equation, tensors: Mapping[str, TensorSymbol]
                ) -> list[tuple[str, ir.Call]]:
    """The indices summed inside a call's argument (each with the outermost call
    holding it), where the right-hand side itself projects none; else []."""
    tables = statement_tables(k, stmt, tensors)
    inner: list[tuple[str, ir.Call]] = []
    for role in tables.roles:
        if role.role != "projected" or role.scope is None:
            continue
        if role.scope.kind == "rhs":
            return []  # the operator projects this one: as meant
        if role.scope.kind == "argument" and role.op == "sum":
            call = _outermost_call(stmt.rhs, role.occurrences[0].span)
            if call is not None and all(name != role.name for name, _ in inner):
                inner.append((role.name, call))
    return inner


def _outermost_call(expr: ir.Expr, span: Span) -> ir.Call | None:
    """The outermost call of `expr` (not inside a `reduce`) whose arguments hold `span`."""
    todo = [expr]
    while todo:
        node = todo.pop()
        if type(node) is ir.Call:
            if node.span.start <= span.start and span.end <= node.span.end:
                return node
            continue
        if type(node) is not ir.Reduce:  # (an index a reduce binds is its own)
            todo.extend(ir.children(node))
    return None


def _diagnostic(stmt: ir.Equation, found: list[tuple[str, ir.Call]], text: str) -> Diagnostic:
    op, meaning = OPS[stmt.op]
    names = [name for name, _ in found]
    call = found[0][1]
    listed = ", ".join(f"`{n}`" for n in names)
    which = "it" if len(names) == 1 else "them"
    rhs = text[stmt.rhs.span.start:stmt.rhs.span.end]
    body = rhs if type(stmt.rhs) in (ir.Call, ir.Ref) else f"({rhs})"
    lhs = text[stmt.lhs.span.start:stmt.lhs.span.end]
    message = (f"`{stmt.op}` projects nothing here: {listed} "
               f"{'occurs' if len(names) == 1 else 'occur'} only inside `{call.name}(...)`, "
               f"whose argument sums {which} (each argument of a call is a scope), so "
               f"`{stmt.lhs.name}` is `{call.name}` of a sum, not {meaning} over {listed}; "
               f"to take {meaning} of `{call.name}(...)`, write "
               f"`{lhs} = reduce({op}, {names[0]}) {body}`")
    fixes = tuple(
        Fix(f"Take {meaning} over `{name}` outside the call (reduce)",
            (TextEdit(stmt.op_span, "="),
             TextEdit(stmt.rhs.span, f"reduce({op}, {name}) {body}")))
        for name in names)
    return make("inner-projection", message, stmt.op_span,
                related=(Related(call.span, f"`{names[0]}` is summed inside this call"),),
                fixes=fixes)
