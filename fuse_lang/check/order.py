"""Evaluation order: the tensors' dependency graph in strongly connected groups,
dependencies first; how each recursive group is evaluated; and tensors nothing
reads, exports or queries."""
from __future__ import annotations

from typing import NamedTuple

from ..front import ir
from ..front.diagnostics import Diagnostic, make
from .datalog import monotone_rules
from .recurrences import recurrence_of_group
from .symbols import TensorSymbol

# a dependency graph (its names, each one's sorted edges) and its groups, in order;
# and how each recursive group is evaluated, by what decides it (see _how_key)
SccMemo = tuple[tuple, list[list[str]], dict[tuple, str]]

_OUTPUT_KINDS = frozenset({ir.Export, ir.Query, ir.Sink})  # statements that name outputs


class EvaluationOrder(NamedTuple):
    groups: tuple[tuple[str, ...], ...]
    recursive: frozenset[str]
    recursion: dict[str, str]  # tensor -> how its group is evaluated
    memo: SccMemo | None  # for the next analysis (with remember only)


def evaluation_order(statements: tuple[ir.Statement, ...], tensors: dict[str, TensorSymbol],
                     deps: dict[str, list[str]], diags: list[Diagnostic],
                     last: SccMemo | None = None, remember: bool = False,
                     text: str = "", deltas: dict[int, int] | None = None) -> EvaluationOrder:
    """The tensors in groups of mutual dependence, dependencies first; each
    recursive group gets a `recursion` diagnostic saying how it runs.  `last`:
    the last analysis' memo, reused when the graph did not change, and its
    recursive groups' ways of running, reused for a group whose rules' text
    (in `text`, the program's) did not change.  `deltas`: how far each reused
    equation moved (front/relocation.py)."""
    names = list(tensors)
    graph: dict[str, list[str]] = {}
    reads_of = deps.get
    for n in names:  # (a loop: most tensors read none or one, with no set to make)
        reads = reads_of(n)
        graph[n] = [] if not reads else list(reads) if len(reads) == 1 \
            else sorted(set(reads))
    _step_together(statements, tensors, graph)
    memo = None
    hows: dict[tuple, str] | None = None
    if remember:
        # the dependency graph rarely changes between two versions of a document
        key = (tuple(names), tuple([tuple(edges) for edges in graph.values()]))
        groups = last[1] if last is not None and last[0] == key else _sccs(names, graph)
        hows = {}
        memo = (key, groups, hows)
    else:
        groups = _sccs(names, graph)
    last_hows = last[2] if last is not None else {}
    recursive: set[str] = set()
    recursion: dict[str, str] = {}
    for group in groups:
        if len(group) > 1 or group[0] in graph.get(group[0], ()):
            recursive.update(group)
            first = tensors[group[0]].definitions[0] if len(group) == 1 else min(
                (tensors[n].definitions[0] for n in group), key=lambda span: span.start)
            members = ", ".join(f"`{n}`" for n in group)
            if hows is None:
                how = _recursion_kind(group, statements, tensors)
            else:
                how_key = _how_key(group, statements, tensors, text, deltas or {})
                how = last_hows.get(how_key) or _recursion_kind(group, statements, tensors)
                hows[how_key] = how
            recursion.update(dict.fromkeys(group, how))
            relation = "depends on itself" if len(group) == 1 else \
                "step together" if how.startswith(_STEPPING) else "depend on each other"
            diags.append(make("recursion", f"{members} {relation}: {how}", first))
    return EvaluationOrder(tuple(tuple(g) for g in groups), frozenset(recursive), recursion,
                           memo)


# how a recurrence over a virtual index is said (check.recurrences.Recurrence.describe):
# its states may be in one group without reading each other (_step_together)
_STEPPING = "a recurrence over the virtual index"


def _step_together(statements: tuple[ir.Statement, ...], tensors: dict[str, TensorSymbol],
                   graph: dict[str, list[str]]) -> None:
    """A tensor over a virtual index keeps only its latest value (LANGUAGE.md §3), so a
    state (`B[i,*t+1] = ...`) that reads another state over its step index (`A[i,*t]`),
    directly or through tensors computed at each step, steps with it: an edge back
    from each such state to the reader puts them in one group (else the reader's
    recurrence ran after the other's and read its last value at every step)."""
    virtual_index = ir.IndexVirtual
    virtual = {n: sym for n, sym in tensors.items()
               if sym.first.indices and virtual_index in map(type, sym.first.indices)}
    if len(virtual) < 2:
        return
    reads = {n: _virtual_reads(statements, sym) for n, sym in virtual.items()}
    states = {n for n, (_, state) in reads.items() if state}
    for name in states:
        seen, todo = {name}, [name]
        while todo:  # the tensors it reads over the step, through per-step ones
            for read in reads[todo.pop()][0]:
                if read in reads and read not in seen:
                    seen.add(read)
                    if read in states:
                        graph[read] = sorted({*graph[read], name})
                    else:
                        todo.append(read)


def _virtual_reads(statements: tuple[ir.Statement, ...], sym: TensorSymbol
                   ) -> tuple[set[str], bool]:
    """The tensors `sym`'s equations read over their own virtual index, and whether
    `sym` is a state (an equation of it writes `*t+1`)."""
    read: set[str] = set()
    state = False
    for k in sym.statements:
        stmt = statements[k]
        if type(stmt) is not ir.Equation or not stmt.lhs.indices:
            continue
        step = next((ix for ix in stmt.lhs.indices if type(ix) is ir.IndexVirtual), None)
        if step is None:
            continue
        state = state or ir.virtual_shift(step) > 0
        var = _virtual_var(step)
        read.update(node.name for node in ir.walk(stmt.rhs)
                    if type(node) is ir.Ref and node.indices
                    and any(type(ix) is ir.IndexVirtual and _virtual_var(ix) == var
                            for ix in node.indices))
    return read, state


def _virtual_var(index: ir.IndexVirtual) -> str:
    names = ir.index_vars(index)
    return names[0].name if names else ""


def _how_key(group: list[str], statements: tuple[ir.Statement, ...],
             tensors: dict[str, TensorSymbol], text: str, deltas: dict[int, int]) -> tuple:
    """All that _recursion_kind reads of a group: its members, whether each is
    Boolean, and its rules, by their text (the same text parses the same)."""
    rules = []
    for n in group:
        for k in tensors[n].statements:
            stmt = statements[k]
            if type(stmt) is ir.Equation:
                delta = deltas.get(id(stmt), 0)
                rules.append(text[stmt.span.start + delta:stmt.span.end + delta])
    return tuple(group), tuple([tensors[n].boolean for n in group]), tuple(rules)


# how a Boolean group of joins and unions runs, as the checker reads it (a run's
# configuration may choose otherwise: plan.config.recursion_as_run says what it chose)
SEMI_NAIVE_WORDS = "evaluated by forward chaining to a fixpoint (semi-naive)"


def _recursion_kind(group: list[str], statements: tuple[ir.Statement, ...],
                    tensors: dict[str, TensorSymbol]) -> str:
    """How the group runs: the run plan's own reading (a recurrence, in order, is
    check.recurrences'; else a fixpoint, semi-naive where the rules allow)."""
    equations = {n: [k for k in tensors[n].statements if isinstance(statements[k], ir.Equation)]
                 for n in group}
    recurrence = recurrence_of_group(statements, equations)
    if recurrence is not None:
        return recurrence.describe()
    if all(tensors[n].boolean for n in group):
        if monotone_rules(set(group), [statements[k] for n in group for k in equations[n]]):
            return SEMI_NAIVE_WORDS
        return ("evaluated by forward chaining, every rule again each round until nothing "
                "changes (not semi-naive: a rule reads the group under a call, a subtraction "
                "or a division)")
    maxed = {n for n in group if "max=" in tensors[n].ops and not tensors[n].boolean
             and tensors[n].source is None}
    zero = multiplied_members(maxed, [statements[k] for n in group for k in equations[n]])
    starts = sorted({f"{n} from {'+inf' if op == 'min=' else '-inf'}"
                     for n in group for op in set(tensors[n].ops) & {"max=", "min="}
                     if not tensors[n].boolean and tensors[n].source is None
                     and n not in zero})
    start = f" ({', '.join(starts)}: nothing derived yet for its operator)" if starts else ""
    if zero:
        start += f" ({', '.join(sorted(zero))} from 0: multiplied by another tensor)"
    return f"evaluated by forward chaining{start} until the change is below tolerance"


def multiplied_members(maxed: set[str], equations: list) -> frozenset[str]:
    """The `max=` members of a recursive group (`maxed`) that its `equations`
    multiply by another tensor (value iteration's `0.9 P[s,a,s'] V[s']`): they
    start from 0, as LANGUAGE.md §7 says, not from -inf, which a 0 of the other
    factor would make NaN.  A member only added to (a longest path) starts from
    -inf, its operator's nothing, and a `min=` member from +inf."""
    found: set[str] = set()
    if not maxed:
        return frozenset()
    for eq in equations:
        for node in ir.walk(eq.rhs) if eq.rhs is not None else ():
            if type(node) is ir.Product and \
                    sum(type(f) is not ir.Number for f in node.factors) >= 2:
                # (anywhere inside a factor: `P[s,a,s'] (R[s,a,s'] + 0.9 V[s'])`, `-V`)
                found.update(r.name for f in node.factors if type(f) is not ir.Number
                             for r in ir.walk(f) if type(r) is ir.Ref and r.name in maxed)
    return frozenset(found)


def check_unused(statements: tuple[ir.Statement, ...], tensors: dict[str, TensorSymbol],
                 read: set[str], exports: list[str], diags: list[Diagnostic]) -> None:
    """Tensors never read, exported or queried, when the program names its outputs."""
    if _OUTPUT_KINDS.isdisjoint(map(type, statements)):
        return  # with no outputs named, every leaf is an output
    used = set(read) | set(exports)
    for stmt in statements:
        if isinstance(stmt, ir.Query):
            used.add(stmt.atom.name)
    for name, sym in tensors.items():
        if name not in used:
            diags.append(make("unused-tensor", f"`{name}` is never read, exported or queried",
                              sym.first_name_span))


def _sccs(nodes: list[str], graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively, dependencies first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        if not graph.get(root):  # (a tensor that reads none: a group of its own,
            index[root] = counter  # never on the stack, so no `low` is read of it)
            counter += 1
            out.append([root])
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                out.append(sorted(group, key=nodes.index) if len(group) > 1 else group)
    return out
