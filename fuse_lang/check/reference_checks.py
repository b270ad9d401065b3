"""The checks of a statement's references against the program's tensors (defined,
with a did-you-mean; their arity; a dot, `( )` on a numeric tensor, a virtual
axis read otherwise than defined), and of a left-hand side's own indices: what
check.statements runs for a reference off its common case, and for each
left-hand side."""
from __future__ import annotations

from ..front import ir
from ..front.builtins import COMPARISONS, NORMALISING_BUILTINS
from ..front.diagnostics import Diagnostic, Fix, Related, Severity, TextEdit, make
from ..front.ir_text import index_text
from ..front.relocation import moved_span
from ..front.span import Span
from .calls import unknown_function
from .compared_constants import symbol_constant
from .datalog import compared_variables
from .definitions import arity_mismatch
from .suggestions import NameSuggester, did_you_mean_text
from .symbols import TensorSymbol


class ReferenceChecks:
    """A program's reference checks: diagnostics go to `diags`, and each tensor a
    reference reads is added to `read`."""

    def __init__(self, tensors: dict[str, TensorSymbol], diags: list[Diagnostic],
                 read: set[str]) -> None:
        self.tensors = tensors
        self.diags = diags
        self.read = read
        self._suggester: NameSuggester | None = None  # did-you-mean for undefined tensors

    def use(self, stmt: ir.Statement, ref: ir.Ref, var_names: set[str],
            lhs: ir.Ref | None, delta: int) -> None:
        """The checks of a reference that are not the common case (see
        StatementChecks.check); `delta`: how far its statement's spans are from
        where the text has it."""
        if ref.indices is None and ref.name not in self.tensors and ref.name in var_names:
            return  # an index used as a value
        if ref.indices is None and ref.name not in self.tensors and isinstance(stmt, ir.Equation) \
                and _compared_symbol(stmt, ref, self.tensors):
            return  # `Ann` in `(x != Ann)`: a symbol constant (check/values.py)
        note = ""
        if ref.indices is None and ref.name not in self.tensors and isinstance(stmt, ir.Equation) \
                and _compared_variable(stmt, ref):
            if stmt.lhs.paren:
                return  # `w` in `(x != w)` of a rule: a variable no atom binds (check/datalog.py)
            # `j` in `Y[i] = F[i] (i < j)`: read as an index, but no reference binds it
            note = f"; a comparison reads the indices of the equation's references, and no " \
                f"reference here has `{ref.name}`"
        query_atom = isinstance(stmt, ir.Query) and ref is stmt.atom  # `Y?` shows all of Y
        if not self.tensor_name(ref, allow_bare=query_atom, delta=delta, note=note):
            return
        sym = self.tensors[ref.name]
        self.read.add(ref.name)
        sym.uses.append(moved_span(ref.name_span, delta))
        for index in ref.indices or ():
            if isinstance(index, ir.IndexVar) and index.dotted:
                span = moved_span(index.span, delta)
                self.diags.append(make(
                    "dotted-axis", "a dot marks an axis on the left-hand side only", span,
                    fixes=(Fix("Remove the dot", (TextEdit(
                        Span(span.end - 1, span.end), ""),)),)))
        if ref.paren and not sym.boolean:
            self.diags.append(make(
                "paren-on-dense", f"`{ref.name}` is numeric; `( )` reads it the same as `[ ]`, "
                f"but `( )` is for Boolean relations", moved_span(ref.span, delta),
                fixes=(Fix(f"Write {ref.name}[...]", _bracket_edits(ref, delta)),)))
        self._virtual(ref, sym, delta)

    def tensor_name(self, ref: ir.Ref, allow_bare: bool, delta: int,
                    note: str = "") -> bool:
        """Whether `ref` names a tensor it may read; else its diagnostic is told
        (`note`: words after "is not defined", before any did-you-mean)."""
        sym = self.tensors.get(ref.name)
        if sym is None:
            name_span = moved_span(ref.name_span, delta)
            if ref.paren and ref.name.rpartition("::")[2][:1].islower():  # (`g::f(...)`)
                self.diags.append(unknown_function(ref.name, name_span))
                return False
            if self._suggester is None:  # built on the first undefined name only
                self._suggester = NameSuggester(self.tensors)
            close = self._suggester.close(ref.name)
            if ref.indices is None and ref.name.lower() in ("inf", "infinity"):  # float('inf')
                fix = Fix("Write 1e9", (TextEdit(name_span, "1e9"),))
                message = (f"`{ref.name}` is not defined{note}: a number has no infinity; a "
                           f"masked fill takes a large one (`-1e9`: its softmax is 0)")
                self.diags.append(make("undefined-tensor", message, name_span, fixes=(fix,)))
                return False
            if close:
                fixes = tuple([Fix(f"Change to `{c}`", (TextEdit(name_span, c),)) for c in close])
                message = f"`{ref.name}` is not defined{note}{did_you_mean_text(close)}"
            else:  # (most, in a file of many: the suggestions' budget spent)
                fixes, message = (), f"`{ref.name}` is not defined{note}"
            self.diags.append(make("undefined-tensor", message, name_span, fixes=fixes))
            return False
        if (ref.indices is None and not allow_bare and sym.arity) or \
                (ref.indices is not None and sym.arity is not None and ref.arity != sym.arity):
            self.diags.append(arity_mismatch(ref, sym, delta))
            self.read.add(ref.name)  # read, wrongly: not "never read" (unused-tensor) too
            return False
        return True

    def _virtual(self, ref: ir.Ref, sym: TensorSymbol, delta: int) -> None:
        first = sym.first.indices or ()
        for pos, index in enumerate(ref.indices or ()):
            if pos >= len(first) and sym.first.indices is not None:
                break
            # a bare definition (`X = "x.npy"`, `X = const(...)`) has no virtual axis
            defined = first[pos] if pos < len(first) else sym.first
            defined_virtual = isinstance(defined, ir.IndexVirtual)
            if defined_virtual and isinstance(index, ir.IndexVirtual) \
                    and ir.virtual_shift(index) != 0:
                self.diags.append(_virtual_shift(index, ref, delta))
            elif defined_virtual != isinstance(index, ir.IndexVirtual):
                what = ("is virtual in its definition; read it as `*t`" if defined_virtual
                        else "is not virtual in its definition")
                self.diags.append(make("virtual-index", f"axis {pos} of `{ref.name}` {what}",
                                       moved_span(index.span, delta),
                                       related=(Related(moved_span(defined.span,
                                                                   sym.first_delta),
                                                        "defined here"),)))


def _compared_symbol(stmt: ir.Equation, ref: ir.Ref, tensors: dict[str, TensorSymbol]) -> bool:
    """Whether `ref` is the symbol constant of one of the statement's comparisons
    (asked only of a name that is no tensor: rare)."""
    if not symbol_constant(ref, tensors):
        return False
    return any(type(node) is ir.Call and node.name in COMPARISONS
               and any(arg is ref for arg in node.args) for node in ir.walk(stmt.rhs))


def _compared_variable(stmt: ir.Equation, ref: ir.Ref) -> bool:
    """Whether `ref` is a variable (a lowercase bare name) in a comparison of the
    rule: one no atom binds is `unsafe-comparison`, not an undefined tensor."""
    if not (ref.name[:1].islower() or ref.name[:1] == "_"):
        return False
    return any(n is ref for n in compared_variables(stmt.rhs, ()))


def check_lhs(stmt: ir.Equation, calls: list[ir.Call], out: list[Diagnostic]) -> None:
    lhs = stmt.lhs
    dotted = []  # a loop, not a list comprehension: that costs more for a few indices
    plain = True  # variables only (most): no sum of them to see
    for index in lhs.indices or ():
        if type(index) is not ir.IndexVar:
            plain = False
        elif index.dotted:
            dotted.append(index)
    if not plain:
        check_lhs_indices(lhs, out)
    if len(dotted) > 1:
        out.append(make("dotted-axis", "only one axis can be dotted; it is the one softmax and "
                        "lnorm normalise along", dotted[1].span,
                        related=(Related(dotted[0].span, "first dotted axis"),)))
    if dotted and not any(n.name in NORMALISING_BUILTINS for n in calls):
        out.append(make(
            "dotted-axis", f"the dotted axis `{dotted[0].name}` has no effect: no softmax "
            f"or lnorm in this equation", dotted[0].span, severity=Severity.WARNING,
            fixes=(Fix("Remove the dot", (TextEdit(Span(dotted[0].span.end - 1,
                                                          dotted[0].span.end), ""),)),)))


def check_lhs_indices(lhs: ir.Ref, out: list[Diagnostic]) -> None:
    for index in lhs.indices or ():
        if type(index) is ir.IndexVirtual and ir.virtual_shift(index) not in (0, 1):
            out.append(_virtual_shift(index))
    if lhs.paren:  # a rule's head computes values: `A(a, b, a + b)` (check/values.py)
        return
    for index in lhs.indices or ():
        if isinstance(index, ir.IndexShift) and len(index.terms) > 1:
            out.append(make("invalid-index", "a sum of variables can be read (`X[x+dx]`) but "
                            "not written; put it on the right-hand side", index.span))


def _bracket_edits(ref: ir.Ref, delta: int) -> tuple[TextEdit, ...]:
    open_at = ref.name_span.end + delta
    end = ref.span.end + delta
    return (TextEdit(Span(open_at, open_at + 1), "["), TextEdit(Span(end - 1, end), "]"))


def _virtual_shift(index: ir.IndexVirtual, read: ir.Ref | None = None, delta: int = 0
                   ) -> Diagnostic:
    """A virtual index at a step a recurrence has not: written at `*t+2` or `*t-1`, or
    read at another step than the current one (`A[i,*t+1]`, `A[i,*t-1]`), where the
    run would give the current value."""
    var = ir.index_vars(index)[0].name
    span = moved_span(index.span, delta)
    written = index_text(index)
    if read is None:
        return make("virtual-index", f"a virtual index steps by one and keeps only the "
                    f"current value, so it is written `*{var}` (the start) or `*{var}+1` (the "
                    f"next step, from the current one), not `{written}`", span)
    return make("virtual-index", f"a virtual index steps by one and keeps only the current "
                f"value, so `{read.name}` is read `*{var}`, not `{written}` (a value that the "
                f"next states share is a tensor written at `*{var}`, computed at each step "
                f"from the current ones)", span,
                fixes=(Fix(f"Read `*{var}`", (TextEdit(span, f"*{var}"),)),))
