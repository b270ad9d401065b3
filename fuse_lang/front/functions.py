"""`fn` functions inlined before checking (docs/language.md, Functions).

`inline_functions` takes a parsed program's statements and gives them back with
every function definition taken out and every call written out as ordinary
equations, so that the checker, the planner and every backend see plain
equations.  A call `Y[p,e] = attention(Q[p,k], K[p',k], V[p',e])` binds each
parameter's indices to the argument's indices by position; the body's equations
are copied with their tensors renamed apart (`s@attention.1`: a `@` is in no
name a program can write, so a local never meets a program tensor, and two
calls never share one), and so is an index an `axis` declaration of the program
names (`d@attention.1`: the declaration is program-wide, the body's `d` its
own; any other index is its equation's alone already), each reference to a
parameter becomes the argument read at the body's indices, and the call itself
becomes a reference to the call's copy of the result.  Every node of a copy
carries the call's span (a read of an argument, the argument's), so a
diagnostic about it lands at the call; `Origin` says which function and body
equation it came from.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from ..speed.fastinit import frozen_dataclass
from . import ir
from .builtins import BUILTINS
from .diagnostics import Diagnostic, Related, make
from .span import Span, shifted

MAX_DEPTH = 64  # calls nested deeper than this (through bodies) are refused
MAX_INLINED = 200_000  # equations written out in all, at most


@frozen_dataclass
class Origin:
    """Where an inlined equation came from: the body equation at `body` of function
    `fn`, written out at the call `call` (spans in the text); `outer`: the functions
    whose bodies hold that call, outermost first (the call at `call` is theirs)."""

    fn: str
    call: Span
    body: Span
    outer: tuple[str, ...] = ()


@frozen_dataclass
class Inlined:
    """The program's statements with its functions inlined (see the module)."""

    statements: tuple[ir.Statement, ...]
    diagnostics: tuple[Diagnostic, ...]
    origins: dict[int, Origin]  # statement number -> where an inlined equation came from
    functions: dict[str, ir.FnDef]
    # statement number -> the statement as written, for each one whose calls were inlined
    written: dict[int, ir.Statement]
    # what is told of a call that inlines (`fn-index-clash`): not a statement left out
    warnings: tuple[Diagnostic, ...] = ()


class _CallFailed(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def has_functions(statements: Iterable[ir.Statement]) -> bool:
    return any(type(stmt) is ir.FnDef for stmt in statements)


def inline_functions(statements: tuple[ir.Statement, ...],
                     deltas: dict[int, int] | None = None) -> Inlined:
    """`statements` with function definitions dropped and calls inlined.  `deltas`:
    how far each equation reused where it was has moved (front/relocation.py); a
    statement that is rewritten is moved first, so its copies hold spans where the
    text has them.  A statement whose call cannot be inlined is left out, with its
    diagnostic."""
    return _Inliner(statements, deltas or {}).run()


class _Inliner:
    def __init__(self, statements: tuple[ir.Statement, ...], deltas: dict[int, int]) -> None:
        self.statements = statements
        self.deltas = deltas
        self.functions: dict[str, ir.FnDef] = {}
        self.diags: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self.broken: dict[str, Diagnostic] = {}  # function -> why its calls fail
        self.counts: dict[str, int] = {}
        self.total = 0
        # `axis d = N` gives every variable `d` of the program its extent: a body's
        # own `d` is renamed apart from it (its other indices are its equation's alone)
        self.axes = frozenset(stmt.name for stmt in statements if type(stmt) is ir.AxisDecl)

    def run(self) -> Inlined:
        for stmt in self.statements:
            if type(stmt) is ir.FnDef:
                self._define(stmt)
        # calls written like Boolean references (`dense(x, w)`) made calls, once
        self.bodies = {name: tuple(dataclasses.replace(eq, rhs=self._as_calls(eq.rhs))
                                   for eq in fn.body) for name, fn in self.functions.items()}
        for name, cycle in _cycles(self.bodies, self.functions).items():
            fn = self.functions[name]
            chain = " -> ".join(cycle)
            self._break(fn, make("fn-recursion", f"`{name}` calls itself ({chain}): a "
                                 f"function is inlined, so it cannot recurse", fn.name_span))
        out: list[ir.Statement] = []
        origins: dict[int, Origin] = {}
        written: dict[int, ir.Statement] = {}
        for stmt in self.statements:
            if type(stmt) is ir.FnDef:
                continue
            if type(stmt) is not ir.Equation and type(stmt) is not ir.Sink:
                out.append(stmt)
                continue
            if not any(self._is_call(node) for node in ir.walk(stmt.rhs)):
                out.append(stmt)
                continue
            delta = self.deltas.get(id(stmt))
            at = shifted(stmt, delta) if delta else stmt
            made: list[tuple[ir.Equation, Origin]] = []
            try:
                rhs = self._rewrite(at.rhs, made, (), 0)
            except _CallFailed as failed:
                self.diags.append(failed.diagnostic)
                continue
            for eq, origin in made:
                origins[len(out)] = origin
                out.append(eq)
            written[len(out)] = at
            out.append(dataclasses.replace(at, rhs=rhs))
        return Inlined(tuple(out), tuple(self.diags), origins, self.functions, written,
                       tuple(self.warnings))

    # ---- definitions

    def _define(self, fn: ir.FnDef) -> None:
        if fn.name in self.functions or fn.name in BUILTINS:
            what = "a builtin" if fn.name in BUILTINS else "defined above"
            self.diags.append(make("invalid-statement", f"`{fn.name}` is {what}: a function "
                                   f"needs a name of its own", fn.name_span))
            return
        self.functions[fn.name] = fn
        params = {p.name: p for p in fn.params}
        problem = None
        if fn.result.name in params or len(params) < len(fn.params):
            twice = [p for k, p in enumerate(fn.params)
                     if p.name in {q.name for q in fn.params[:k]}]  # (the second one)
            at = twice[0].name_span if twice else fn.result.name_span
            what = f"`{twice[0].name}` names two parameters" if twice else \
                f"`{fn.result.name}` names a parameter and the result"
            problem = make("invalid-statement", f"`{fn.name}`'s parameters and result need "
                           f"names of their own: {what}", at)
        defined = [eq.lhs.name for eq in fn.body]
        if problem is None and fn.result.name not in defined:
            problem = make("fn-no-result", f"the body of `{fn.name}` does not define its "
                           f"result `{fn.result.name}`", fn.result.span)
        for eq in fn.body:
            if problem is None and eq.lhs.name in params:
                problem = make("invalid-statement", f"`{eq.lhs.name}` is a parameter of "
                               f"`{fn.name}`: a body reads its parameters, never defines "
                               f"them", eq.lhs.name_span)
            for node in ir.walk(eq.rhs):
                param = params.get(node.name) if type(node) is ir.Ref else None
                if problem is None and param is not None and node.arity != param.arity:
                    problem = make("arity-mismatch", f"`{param.name}` is a parameter with "
                                   f"{param.arity} indices, read here with {node.arity}",
                                   node.span)
        if problem is not None:
            self._break(fn, problem)

    def _break(self, fn: ir.FnDef, problem: Diagnostic) -> None:
        if fn.name not in self.broken:
            self.broken[fn.name] = problem
            self.diags.append(problem)

    def _as_calls(self, expr: Any) -> Any:
        if type(expr) is ir.Ref and expr.paren and expr.name in self.functions:
            return ir.Call(expr.name, expr.name_span, _call_args(expr), (), expr.span)
        return ir.map_children(expr, self._as_calls)

    def _is_call(self, node: Any) -> bool:
        kind = type(node)
        return (kind is ir.Call or (kind is ir.Ref and node.paren)) and node.name in self.functions

    def _written_out(self, name: str) -> int:
        """How many equations a call of `name` writes out at least (its body's, and
        its calls' in turn): counted before writing them, so that calls that double
        at each of 20 levels are refused at once, not after a million copies."""
        sizes = self.__dict__.setdefault("_sizes", {})
        if name not in sizes:
            sizes[name] = 0  # (a function that reaches itself is broken: counted once)
            sizes[name] = len(self.bodies[name]) + sum(
                self._written_out(node.name) for eq in self.bodies[name]
                for node in ir.walk(eq.rhs) if type(node) is ir.Call and node.name in self.bodies)
        return sizes[name]

    # ---- calls

    def _rewrite(self, expr: Any, made: list, outer: tuple, depth: int) -> Any:
        """`expr` with every call of a function in it replaced by the call's result
        (its equations added to `made`)."""
        kind = type(expr)
        if (kind is ir.Call or (kind is ir.Ref and expr.paren)) and expr.name in self.functions:
            args = _call_args(expr) if kind is ir.Ref else expr.args
            if kind is ir.Call and expr.kwargs:
                args = _by_name(self.functions[expr.name], expr, outer)
            args = tuple(self._rewrite(arg, made, outer, depth) for arg in args)
            return self._inline(self.functions[expr.name], args, expr, made, outer, depth)
        return ir.map_children(expr, lambda child: self._rewrite(child, made, outer, depth))

    def _inline(self, fn: ir.FnDef, args: tuple, call: Any, made: list, outer: tuple,
                depth: int) -> ir.Ref:
        at = outer[-1][1] if outer else call.span  # the span the user sees: the outermost call
        if fn.name in self.broken:
            problem = self.broken[fn.name]
            raise _CallFailed(make(problem.code, f"`{fn.name}` cannot be inlined: "
                                   f"{problem.message}", at, related=(
                                       Related(problem.span, "the function's problem"),)))
        if depth >= MAX_DEPTH:
            raise _CallFailed(make("nesting-too-deep", f"calls of functions nest more than "
                                   f"{MAX_DEPTH} deep", at))
        if self.total + self._written_out(fn.name) > MAX_INLINED:
            raise _CallFailed(make("nesting-too-deep", f"this call of `{fn.name}` writes out "
                                   f"{self._written_out(fn.name):,} equations or more; the "
                                   f"program's calls may write out {MAX_INLINED:,} in all "
                                   f"(functions are inlined)", at))
        if len(args) != len(fn.params):
            raise _CallFailed(make("fn-arguments", f"`{fn.name}` takes {len(fn.params)} "
                                   f"argument{'s' if len(fn.params) != 1 else ''} "
                                   f"({_signature(fn)}), not {len(args)}", at, related=(
                                       Related(fn.name_span, f"`{fn.name}` is defined here"),)))
        n = self.counts[fn.name] = self.counts.get(fn.name, 0) + 1
        tag = f"@{fn.name}.{n}"
        args = tuple(self._named_argument(fn, k, arg, tag, at, made, outer)
                     for k, arg in enumerate(args))
        views, bound = {}, {}
        for k, (param, arg) in enumerate(zip(fn.params, args, strict=True)):
            views[param.name] = view = _ArgView.of(arg, param, k, fn, at)
            for index, var in zip(param.indices or (), view.variables, strict=True):
                first = bound.setdefault(index.name, var)
                if first.name != var.name and not outer:
                    self._mismatch(fn, index, first, var)
        locals_ = {eq.lhs.name for eq in fn.body}
        inner = ((fn.name, at),) + outer if outer else ((fn.name, at),)
        for eq in self.bodies[fn.name]:
            copy = _Copy(tag, views, locals_, at, self.axes).equation(eq)
            copy_made: list = []
            rhs = self._rewrite(copy.rhs, copy_made, inner, depth + 1)
            made += copy_made
            made.append((dataclasses.replace(copy, rhs=rhs),
                         Origin(fn.name, at, eq.span, tuple(name for name, _ in outer[::-1]))))
            self.total += 1
        result = fn.result
        # the result read at the call's variables, each where the call names it (where
        # the call is in a body, the outermost call: that is where the user sees it)
        # (an index no parameter has keeps the function's name: `-> s[p,p']` over `x[p,d]`)
        if not outer:
            self._clashes(fn, args, bound, call)
        indices = tuple(ir.IndexVar(bound[i.name].name, bound[i.name].span if not outer
                                    else at) if i.name in bound else ir.IndexVar(i.name, at)
                        for i in result.indices or ())
        return ir.Ref(result.name + tag, call.name_span if not outer else at,
                      indices if result.indices is not None else None, result.paren, call.span
                      if not outer else at)


    def _mismatch(self, fn: ir.FnDef, index: Any, first: Any, var: Any) -> None:
        """`fn-index-mismatch`: two arguments name one index of the function's
        parameters differently (`f(A[k], A[j])` over `x[i], y[i]`): the body has one
        `i`, the call reads it as the first (`k`), and the other (`j`) is dropped."""
        self.warnings.append(make(
            "fn-index-mismatch", f"`{fn.name}`'s parameters share the index "
            f"`{index.name}`, given here as `{var.name}` and before as `{first.name}`: "
            f"the call reads both arguments along `{first.name}` and drops `{var.name}`; "
            f"write one name for both", var.span,
            related=(Related(first.span, f"`{index.name}` given as `{first.name}`"),
                     Related(index.span, "the parameters' index"))))

    def _clashes(self, fn: ir.FnDef, args: tuple, bound: dict, call: Any) -> None:
        """`fn-index-clash`: a result index that no parameter has keeps the function's
        own name at the call (`-> s[p,q]`: the call reads `s[.., q]`); where the call's
        arguments name an index so too (`outer(A[q])`), the two are one index, a
        diagonal, though nothing in the call's text says so."""
        named = {v.name for arg in args for ref in ir.refs(arg)
                 for index in ref.indices or () for v in ir.index_vars(index)}
        for index in fn.result.indices or ():
            if index.name not in bound and index.name in named:
                self.warnings.append(make(
                    "fn-index-clash", f"`{fn.name}`'s result index `{index.name}` is no "
                    f"parameter's, so the call reads it as `{index.name}`, an index its "
                    f"arguments name too: the two are one index here (a diagonal); rename "
                    f"the argument's `{index.name}`", call.span,
                    related=(Related(index.span, "the result's index"),)))

    def _named_argument(self, fn: ir.FnDef, k: int, arg: Any, tag: str, at: Span,
                        made: list, outer: tuple) -> Any:
        """An expression given for an indexed parameter as a reference to a tensor of
        the call's own, `arg1@f.2[t,d] = expr` (its indices: the expression's
        variables in order of first appearance); any other argument as it is."""
        param = fn.params[k]
        if param.arity == 0 or type(arg) in (ir.Ref, ir.Number):
            return arg
        first: dict[str, ir.IndexVar] = {}
        for ref in sorted(ir.refs(arg), key=lambda r: r.span[0]):
            for index in ref.indices or ():
                for var in ir.index_vars(index):
                    first.setdefault(var.name, ir.IndexVar(var.name, var.span))
        if len(first) != param.arity:
            raise _CallFailed(make("fn-rank", f"argument {k + 1} of `{fn.name}` is an "
                                   f"expression over {len(first)} ind"
                                   f"{'ex' if len(first) == 1 else 'ices'} "
                                   f"({', '.join(first) or 'none'}); its parameter "
                                   f"`{_ref_text(param)}` has {param.arity}", arg.span,
                                   related=(Related(param.span, "the parameter"),)))
        name = f"arg{k + 1}{tag}"
        ref = ir.Ref(name, arg.span, tuple(first.values()), False, arg.span)
        made.append((ir.Equation(ref, "=", arg.span, arg, arg.span),
                     Origin(fn.name, at, param.span, tuple(name for name, _ in outer[::-1]))))
        self.total += 1
        return ref


def _by_name(fn: ir.FnDef, call: ir.Call, outer: tuple) -> tuple:
    """A call's arguments with those given by name (`f(X[i], w=W[i])`, as a builtin's
    keywords: after the positional ones, in any order) put in their parameters'
    places; _CallFailed (`fn-arguments`) for a name that is no parameter, one given
    twice, or one with an empty place before it."""
    params = [p.name for p in fn.params]
    args = list(call.args)
    given: dict[str, Any] = {}
    for kw in call.kwargs:
        where = outer[-1][1] if outer else kw.name_span
        problem = None
        if kw.name not in params:
            problem = f"`{fn.name}` has no parameter `{kw.name}` (parameters: {_signature(fn)})"
        elif params.index(kw.name) < len(args):
            problem = f"`{fn.name}` is given `{kw.name}` twice: positionally and as `{kw.name}=`"
        elif kw.name in given:
            problem = f"`{fn.name}` is given `{kw.name}=` twice"
        if problem is not None:
            raise _CallFailed(make("fn-arguments", problem, where, related=(
                Related(fn.name_span, f"`{fn.name}` is defined here"),)))
        given[kw.name] = kw.value
    while len(args) < len(params) and params[len(args)] in given:
        args.append(given.pop(params[len(args)]))
    if given:
        name = next(iter(given))
        missing = ", ".join(f"`{p}`" for p in params[len(args):params.index(name)])
        raise _CallFailed(make("fn-arguments", f"`{fn.name}` is given `{name}=` but not "
                               f"{missing} before it ({_signature(fn)})",
                               outer[-1][1] if outer else call.span, related=(
                                   Related(fn.name_span, f"`{fn.name}` is defined here"),)))
    return tuple(args)


def _signature(fn: ir.FnDef) -> str:
    return ", ".join(_ref_text(p) for p in fn.params)


def _ref_text(ref: ir.Ref) -> str:
    if ref.indices is None:
        return ref.name
    inside = ",".join(i.name for i in ref.indices if type(i) is ir.IndexVar)
    return f"{ref.name}({inside})" if ref.paren else f"{ref.name}[{inside}]"


def _call_args(ref: ir.Ref) -> tuple:
    """A call written like a Boolean reference (`dense(X, W)`: bare names are read as
    indices by the parser) as the call's arguments."""
    out = []
    for index in ref.indices or ():
        if type(index) is ir.IndexVar:
            out.append(ir.Ref(index.name, index.span, None, False, index.span))
        elif type(index) is ir.IndexConst and isinstance(index.value, str) and not index.quoted:
            out.append(ir.Ref(index.value, index.span, None, False, index.span))
        elif type(index) is ir.IndexConst and isinstance(index.value, (int, float)):
            out.append(ir.Number(float(index.value), repr(index.value), index.span))
        else:
            raise _CallFailed(make("fn-arguments", "a function's argument is a tensor, a "
                                   "number or a call", index.span))
    return tuple(out)


class _ArgView:
    """One argument as its parameter sees it: the reference whose variable positions
    the body's indices fill, or (a scalar parameter) the expression itself."""

    __slots__ = ("expr", "positions", "variables")

    def __init__(self, expr: Any, positions: list[int], variables: list[str]) -> None:
        self.expr = expr
        self.positions = positions  # the argument's index positions a body index fills
        self.variables = variables  # the call's variable (an IndexVar) at each of them

    @classmethod
    def of(cls, arg: Any, param: ir.Ref, k: int, fn: ir.FnDef, at: Span) -> "_ArgView":
        rank = param.arity
        if type(arg) is ir.Ref and arg.indices is not None:
            positions, variables = [], []
            for place, index in enumerate(arg.indices):
                if type(index) is ir.IndexConst:
                    continue  # a fixed position: not an axis of the argument
                if type(index) is ir.IndexVar and not index.dotted:
                    var = index
                elif type(index) is ir.IndexShift and len(index.terms) == 1:
                    var = index.terms[0]
                else:
                    raise _CallFailed(make("fn-arguments", f"argument {k + 1} of `{fn.name}` "
                                           f"reads an index form a function cannot take "
                                           f"(variables, offsets `t-1` and constants)",
                                           index.span))
                positions.append(place)
                variables.append(var)
            if len(positions) == rank:
                return cls(arg, positions, variables)
            got = len(positions)
        elif type(arg) in (ir.Ref, ir.Number) or rank == 0:
            if rank == 0:
                return cls(arg, [], [])
            got = 0
        else:  # (an expression is named first: _Inliner._named_argument)
            raise _CallFailed(make("fn-arguments", f"argument {k + 1} of `{fn.name}` is an "
                                   f"expression: pass a tensor (`T[i,j]`), a number, a "
                                   f"call or an expression over indices", arg.span))
        raise _CallFailed(make("fn-rank", f"argument {k + 1} of `{fn.name}` has {got} "
                               f"ind{'ex' if got == 1 else 'ices'}; its parameter "
                               f"`{_ref_text(param)}` has {rank}", at, related=(
                                   Related(arg.span, "the argument"),
                                   Related(param.span, "the parameter"))))

    def read(self, body_indices: tuple, at: Span) -> Any:
        """The argument read where the body reads its parameter at `body_indices`."""
        if not self.positions:
            return self.expr
        arg = self.expr
        indices = list(arg.indices)
        for place, index in zip(self.positions, body_indices, strict=True):
            indices[place] = _combined(arg.indices[place], index, at)
        # (at the argument itself: a mistake in reading it is said there)
        return ir.Ref(arg.name, arg.name_span, tuple(indices), arg.paren, arg.span)


def _combined(outer: Any, inner: Any, at: Span) -> Any:
    """The call's index `outer` (a variable, or a variable with an offset) with the
    body's index `inner` put in for its variable."""
    if type(outer) is ir.IndexVar:
        return inner
    offset = outer.offset  # an IndexShift of one variable
    if type(inner) is ir.IndexVar:
        return ir.IndexShift((inner,), offset, at)
    if type(inner) is ir.IndexShift:
        return ir.IndexShift(inner.terms, inner.offset + offset, at)
    raise _CallFailed(make("fn-arguments", "an argument read with an offset (`X[t-1]`) is "
                           "read by the body with an index form that cannot take one", at))


class _Copy:
    """A body equation renamed apart for one call (see the module)."""

    def __init__(self, tag: str, views: dict[str, _ArgView], locals_: set[str],
                 at: Span, axes: frozenset[str]) -> None:
        self.tag = tag
        self.views = views
        self.locals = locals_
        self.at = at
        self.axes = axes
        self.vars: set[str] = set()

    def name(self, name: str) -> str:
        stem = name.rstrip("'")
        return stem + self.tag + name[len(stem):]  # primes stay last: `p'` -> `p@f.1'`

    def equation(self, eq: ir.Equation) -> ir.Equation:
        self.vars = {v.name for ref in [eq.lhs, *ir.refs(eq.rhs)] for index in ref.indices or ()
                     for v in ir.index_vars(index)}
        if type(eq.rhs) is ir.Reduce or any(type(n) is ir.Reduce for n in ir.walk(eq.rhs)):
            self.vars |= {v.name for n in ir.walk(eq.rhs) if type(n) is ir.Reduce
                          for v in n.indices}
        lhs = self.ref(eq.lhs)
        return ir.Equation(lhs, eq.op, self.at, self.expr(eq.rhs), self.at)

    def ref(self, ref: ir.Ref) -> Any:
        at = self.at
        indices = None if ref.indices is None else tuple(self.index(i) for i in ref.indices)
        view = self.views.get(ref.name)
        if view is not None:
            return view.read(indices or (), at)
        if ref.name in self.locals:
            return ir.Ref(self.name(ref.name), at, indices, ref.paren, at)
        if ref.indices is None and ref.name in self.vars:  # an index's value (`sin(p / L)`)
            return ir.Ref(self.index_name(ref.name), at, None, False, at)
        return ir.Ref(ref.name, at, indices, ref.paren, at)  # a program tensor

    def index_name(self, name: str) -> str:
        return self.name(name) if name in self.axes else name

    def index(self, index: Any) -> Any:
        return _respan(index, self.at, self.index_name)

    def expr(self, expr: Any) -> Any:
        if type(expr) is ir.Ref:
            return self.ref(expr)
        if type(expr) is ir.Reduce:
            return ir.Reduce(expr.op, self.at, tuple(self.index(i) for i in expr.indices),
                             self.expr(expr.body), self.at)
        copy = _respan(ir.map_children(expr, self.expr), self.at, None, shallow=True)
        if type(copy) is ir.Call and copy.kwargs:
            copy = dataclasses.replace(copy, kwargs=tuple(
                _respan(k, self.at, None, shallow=True) for k in copy.kwargs))
        return copy


def _respan(node: Any, at: Span, rename: Any, shallow: bool = False) -> Any:
    """`node` with every span `at` (and, for index nodes, every variable renamed by
    `rename` when given); `shallow`: this node's own spans only."""
    if not dataclasses.is_dataclass(node):
        return node
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Span):
            changes[f.name] = at
        elif rename is not None and f.name == "name" and type(node) is ir.IndexVar:
            changes[f.name] = rename(value)
        elif not shallow and dataclasses.is_dataclass(value):
            changes[f.name] = _respan(value, at, rename)
        elif not shallow and isinstance(value, tuple):
            changes[f.name] = tuple(_respan(v, at, rename) for v in value)
    return dataclasses.replace(node, **changes)


def _cycles(bodies: dict[str, tuple[ir.Equation, ...]], functions: dict[str, ir.FnDef]
            ) -> dict[str, list[str]]:
    """Each function that reaches itself through calls, with one such chain."""
    calls = {name: [n.name for eq in body for n in ir.walk(eq.rhs)
                    if type(n) is ir.Call and n.name in functions]
             for name, body in bodies.items()}
    out: dict[str, list[str]] = {}
    for start in functions:
        path = _path(calls, start, start)
        if path is not None:
            out[start] = [start, *path]
    return out


def _path(calls: dict[str, list[str]], start: str, goal: str) -> list[str] | None:
    """A chain of calls from `start` back to `goal` (breadth first), or None."""
    seen = {start}
    frontier = [(start, [])]
    while frontier:
        nxt = []
        for name, path in frontier:
            for callee in calls.get(name, ()):
                if callee == goal:
                    return path + [callee]
                if callee not in seen:
                    seen.add(callee)
                    nxt.append((callee, path + [callee]))
        frontier = nxt
    return None
