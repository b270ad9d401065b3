"""The parser, through `fuse_lang.parse`: every construct of LANGUAGE.md §1-4, the IR
it builds (node kinds, fields, spans) and error recovery."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import fuse_lang
from fuse_lang import parse
from fuse_lang.front import ir
from fuse_lang.front.span import LineIndex, Span


def one(text: str):
    """The single statement of a text that must parse cleanly."""
    result = parse(text)
    assert result.diagnostics == (), [d.message for d in result.diagnostics]
    assert len(result.program.statements) == 1, result.program.statements
    return result.program.statements[0]


def rhs(text: str):
    stmt = one(text)
    assert isinstance(stmt, ir.Equation)
    return stmt.rhs


def src(text: str, node) -> str:
    return text[node.span.start:node.span.end]


def errors(text: str):
    return parse(text).diagnostics


# ------------------------------------------------------------------ statements


@pytest.mark.parametrize("op", ["=", "+=", "max=", "min=", "avg="])
def test_equation_operators(op):
    text = f"M[o] {op} P[b,o]"
    stmt = one(text)
    assert isinstance(stmt, ir.Equation)
    assert stmt.op == op
    assert src(text, stmt) == text
    assert text[stmt.op_span.start:stmt.op_span.end] == op
    assert stmt.lhs.name == "M" and stmt.lhs.indices == (ir.IndexVar("o", Span(2, 3)),)
    assert isinstance(stmt.rhs, ir.Ref) and stmt.rhs.name == "P"


def test_equation_ir_and_exact_spans():
    text = "Y[i] = W[i,j] X[j]"
    stmt = one(text)
    assert stmt == ir.Equation(
        lhs=ir.Ref("Y", Span(0, 1), (ir.IndexVar("i", Span(2, 3)),), False, Span(0, 4)),
        op="=",
        op_span=Span(5, 6),
        rhs=ir.Product(
            factors=(
                ir.Ref("W", Span(7, 8), (ir.IndexVar("i", Span(9, 10)),
                                         ir.IndexVar("j", Span(11, 12))), False, Span(7, 13)),
                ir.Ref("X", Span(14, 15), (ir.IndexVar("j", Span(16, 17)),), False,
                       Span(14, 18)),
            ),
            ops=("", " "),
            span=Span(7, 18),
        ),
        span=Span(0, 18),
    )


def test_source():
    text = 'W[i,j] = "ckpt/w.npy"'
    stmt = one(text)
    assert isinstance(stmt, ir.Source)
    assert stmt.lhs.name == "W" and stmt.lhs.arity == 2
    assert stmt.path == ir.String("ckpt/w.npy", Span(9, 21))
    assert stmt.span == Span(0, 21)


def test_source_with_escapes():
    stmt = one(r'W[i] = "a\"b\\c.npy"')
    assert isinstance(stmt, ir.Source)
    assert stmt.path.value == 'a"b\\c.npy'


def test_source_needs_plain_equal():
    (d,) = errors('W[i] += "w.npy"')
    assert d.code == "invalid-statement"
    assert "source" in d.message


def test_sink():
    text = '"runs/y.npz" = Y[i]'
    stmt = one(text)
    assert isinstance(stmt, ir.Sink)
    assert stmt.path == ir.String("runs/y.npz", Span(0, 12))
    assert isinstance(stmt.rhs, ir.Ref) and stmt.rhs.name == "Y"
    assert stmt.span == Span(0, len(text))


def test_string_inside_expression_is_an_error():
    (d,) = errors('Y = A + "x.npy"')
    assert d.code == "invalid-statement"
    assert src('Y = A + "x.npy"', d) == '"x.npy"'


def test_export():
    text = "export Y, Z"
    stmt = one(text)
    assert isinstance(stmt, ir.Export)
    assert [r.name for r in stmt.names] == ["Y", "Z"]
    assert stmt.names[1].span == Span(10, 11)
    assert stmt.span == Span(0, 11)


def test_export_is_a_keyword_only_as_a_whole_word():
    stmt = one("exported = A")
    assert isinstance(stmt, ir.Equation) and stmt.lhs.name == "exported"


def test_fact():
    text = "Parent(Alice, Bob)"
    stmt = one(text)
    assert isinstance(stmt, ir.Fact)
    atom = stmt.atom
    assert atom.paren is True and atom.name == "Parent"
    assert atom.indices == (ir.IndexConst("Alice", Span(7, 12)), ir.IndexConst("Bob", Span(14, 17)))
    assert all(i.is_symbol for i in atom.indices)
    assert stmt.span == Span(0, 18)


def test_fact_with_integers():
    stmt = one("Edge(0, 1)")
    assert isinstance(stmt, ir.Fact)
    assert [i.value for i in stmt.atom.indices] == [0, 1]
    assert not stmt.atom.indices[0].is_symbol


def test_query_scalar():
    stmt = one("Y?")
    assert isinstance(stmt, ir.Query)
    assert stmt.atom == ir.Ref("Y", Span(0, 1), None, False, Span(0, 1))
    assert stmt.span == Span(0, 2)


def test_query_boolean():
    stmt = one("Ancestor(Alice, x)?")
    assert isinstance(stmt, ir.Query)
    assert stmt.atom.paren
    assert stmt.atom.indices == (ir.IndexConst("Alice", Span(9, 14)), ir.IndexVar("x", Span(16, 17)))


def test_axis_decl():
    text = "axis d = 64"
    stmt = one(text)
    assert stmt == ir.AxisDecl("d", Span(5, 6), 64, Span(9, 11), Span(0, 11))


def test_axis_decl_several():
    result = parse("axis d = 64, h = 8")
    assert result.diagnostics == ()
    decls = result.program.statements
    assert [(d.name, d.extent) for d in decls] == [("d", 64), ("h", 8)]


def test_axis_extent_must_be_whole():
    (d,) = errors("axis d = 1.5")
    assert d.code == "invalid-statement"


def test_param_decl():
    stmt = one("param W[i,j]")
    assert isinstance(stmt, ir.ParamDecl)
    (ref,) = stmt.refs
    assert ref.name == "W" and [i.name for i in ref.indices] == ["i", "j"]
    assert stmt.span == Span(0, 12)


def test_param_decl_several():
    stmt = one("param W[i,j], B[i]")
    assert [r.name for r in stmt.refs] == ["W", "B"]


# ------------------------------------------------------------------ references


def test_dense_and_boolean_refs():
    stmt = one("Aunt(x,z) = Sister(x,y) Parent[y,z]")
    assert stmt.lhs.paren is True
    left, right = stmt.rhs.factors
    assert left.paren is True and right.paren is False


def test_bare_name_is_scalar():
    stmt = one("Y = X")
    assert stmt.lhs.indices is None and stmt.lhs.arity == 0
    assert stmt.rhs.indices is None


def test_empty_brackets():
    stmt = one("Y[] = X[]")
    assert stmt.lhs.indices == ()


def test_primes():
    stmt = one("K[i,i''] = X[i,j] X[i'',j]")
    assert [i.name for i in stmt.lhs.indices] == ["i", "i''"]
    assert stmt.rhs.factors[1].indices[0] == ir.IndexVar("i''", Span(20, 23))


def test_dotted_lhs_axis():
    text = "Comp[p,p'.] = softmax(Q[p,d] K[p',d])"
    stmt = one(text)
    p, pp = stmt.lhs.indices
    assert p == ir.IndexVar("p", Span(5, 6), dotted=False)
    assert pp.name == "p'" and pp.dotted is True
    assert src(text, pp) == "p'."


def test_only_variables_can_be_dotted():
    (d,) = errors("C[0.] = A[i]")
    assert d.code in ("invalid-index", "syntax-error")


def test_integer_and_symbol_constants():
    text = "M[0, Alice] = Obs[12, o]"
    stmt = one(text)
    assert stmt.lhs.indices == (ir.IndexConst(0, Span(2, 3)), ir.IndexConst("Alice", Span(5, 10)))
    assert stmt.rhs.indices[0] == ir.IndexConst(12, Span(18, 20))
    assert isinstance(stmt.rhs.indices[1], ir.IndexVar)


def test_underscore_names_are_variables():
    stmt = one("Y[_a] = X[_a]")
    assert isinstance(stmt.lhs.indices[0], ir.IndexVar)


def test_offsets():
    text = "X[t+1] = X[t] + Y[i-1]"
    stmt = one(text)
    (shift,) = stmt.lhs.indices
    assert shift == ir.IndexShift((ir.IndexVar("t", Span(2, 3)),), 1, Span(2, 5))
    minus = stmt.rhs.terms[1].indices[0]
    assert isinstance(minus, ir.IndexShift)
    assert minus.offset == -1 and [v.name for v in minus.terms] == ["i"]
    assert src(text, minus) == "i-1"


def test_sum_of_variables():
    stmt = one("F[x,y] = I[x+dx, y+dy-1] K[dx,dy]")
    a, b = stmt.rhs.factors[0].indices
    assert isinstance(a, ir.IndexShift) and [v.name for v in a.terms] == ["x", "dx"]
    assert a.offset == 0
    assert [v.name for v in b.terms] == ["y", "dy"] and b.offset == -1


def test_division():
    text = "P[x/2, y/2] max= F[x,y]"
    stmt = one(text)
    div = stmt.lhs.indices[0]
    assert div == ir.IndexDiv(ir.IndexVar("x", Span(2, 3)), 2, Span(2, 5))
    assert stmt.op == "max="


def test_division_by_zero_is_refused():
    (d,) = errors("P[x/0] = F[x]")
    assert d.code == "invalid-index"
    assert "0" in d.message


def test_slices():
    text = "S[i] = X[4:8, :, 2:, :3]"
    stmt = one(text)
    a, b, c, d = stmt.rhs.indices
    assert a == ir.IndexSlice(4, 8, Span(9, 12))
    assert (b.start, b.stop) == (None, None) and src(text, b) == ":"
    assert (c.start, c.stop) == (2, None)
    assert (d.start, d.stop) == (None, 3)


def test_empty_slice_is_refused():
    (d,) = errors("S = X[8:4]")
    assert d.code == "invalid-index"
    assert "empty" in d.message


def test_virtual_index():
    text = "X[i,*t+1] = sig(W[i,j] X[j,*t] + V[i,j] U[j,t])"
    stmt = one(text)
    virt = stmt.lhs.indices[1]
    assert isinstance(virt, ir.IndexVirtual)
    assert virt.inner == ir.IndexShift((ir.IndexVar("t", Span(5, 6)),), 1, Span(5, 8))
    assert virt.span == Span(4, 8)
    assert ir.virtual_shift(virt) == 1
    call = stmt.rhs
    assert isinstance(call, ir.Call) and call.name == "sig"
    read = call.args[0].terms[0].factors[1].indices[1]
    assert read == ir.IndexVirtual(ir.IndexVar("t", Span(28, 29)), Span(27, 29))
    assert ir.virtual_shift(read) == 0


def test_virtual_index_must_be_a_variable():
    (d,) = errors("X[*2] = Y[i]")
    assert d.code == "invalid-index"


def test_missing_comma_between_indices():
    (d,) = errors("Y[i j] = X[i]")
    assert "missing ','" in d.message


def test_a_fractional_position_is_refused_after_its_shape_is_compiled():
    """The parser compiles a statement shape after COMPILE_AFTER replays; the
    compiled `name[...]` skipped bracket_ref's check of a float constant, so
    `Y = X[1.5]` passed once `Y = X[0]`, `Y = X[1]`, ... had been parsed."""
    from fuse_lang.front.lalr import Parser

    for k in range(Parser.COMPILE_AFTER + 2):
        assert errors(f"Yc = Xc[{k}]") == ()
    (d,) = errors("Yc = Xc[1.5]")
    assert d.code == "invalid-index" and "whole" in d.message


def test_fractional_and_negative_positions():
    (d,) = errors("Y = X[1.5]")
    assert d.code == "invalid-index" and "whole" in d.message
    # a negative constant is a value on a relation's column, and no position on an axis
    # whose domain holds no values
    assert errors("X[i] = const([1, 2])\nY = X[-1]") == ()  # it parses: the checker says
    (d,) = fuse_lang.analyze("X[i] = const([1, 2])\nY = X[-1]").diagnostics
    assert d.code == "invalid-index" and "t-1" in d.message


# ------------------------------------------------------------------ expressions


def test_subtraction_not_juxtaposition():
    expr = rhs("Y = A[i] -2")
    assert isinstance(expr, ir.Sum)
    assert expr.signs == ("+", "-")
    assert isinstance(expr.terms[1], ir.Number) and expr.terms[1].value == 2


def test_unary_minus():
    expr = rhs("Y = -A[i]")
    assert isinstance(expr, ir.Neg) and isinstance(expr.operand, ir.Ref)
    assert expr.span == Span(4, 9)


def test_unary_minus_binds_looser_than_power():
    expr = rhs("Y = -A^2")
    assert isinstance(expr, ir.Neg)
    assert isinstance(expr.operand, ir.Power)


def test_unary_minus_binds_tighter_than_product():
    expr = rhs("Y = -a * b")
    assert isinstance(expr, ir.Product)
    assert isinstance(expr.factors[0], ir.Neg)


def test_minus_after_operator():
    expr = rhs("Y = a * -b")
    assert isinstance(expr, ir.Product) and isinstance(expr.factors[1], ir.Neg)


def test_precedence_sum_product():
    text = "Y = a + b * c - d / e"
    expr = rhs(text)
    assert isinstance(expr, ir.Sum) and expr.signs == ("+", "+", "-")
    a, bc, de = expr.terms
    assert isinstance(a, ir.Ref)
    assert isinstance(bc, ir.Product) and bc.ops == ("", "*")
    assert isinstance(de, ir.Product) and de.ops == ("", "/")
    assert src(text, bc) == "b * c"


def test_juxtaposition_and_star_both_join():
    expr = rhs("Y = a b * c / d e")
    assert isinstance(expr, ir.Product)
    assert expr.ops == ("", " ", "*", "/", " ")
    assert [f.name for f in expr.factors] == ["a", "b", "c", "d", "e"]


def test_power_is_right_associative():
    expr = rhs("Y = a ^ b ^ c")
    assert isinstance(expr, ir.Power)
    assert expr.base.name == "a"
    assert isinstance(expr.exponent, ir.Power)
    assert (expr.exponent.base.name, expr.exponent.exponent.name) == ("b", "c")


def test_double_star_is_power():
    expr = rhs("Y = a ** b")
    assert isinstance(expr, ir.Power)


def test_power_binds_tighter_than_product():
    expr = rhs("Y = a b ^ 2")
    assert isinstance(expr, ir.Product)
    assert isinstance(expr.factors[1], ir.Power)


def test_power_with_negative_exponent():
    expr = rhs("Y = a ^ -2")
    assert isinstance(expr, ir.Power) and isinstance(expr.exponent, ir.Neg)


def test_parentheses_group():
    text = "Y = (a + b) c"
    expr = rhs(text)
    assert isinstance(expr, ir.Product)
    group = expr.factors[0]
    assert isinstance(group, ir.Sum)
    assert src(text, group) == "(a + b)"


def test_numbers():
    expr = rhs("Y = 3 + 0.5 + 1e-5 + .5 + 2E3")
    assert [t.value for t in expr.terms] == [3.0, 0.5, 1e-5, 0.5, 2000.0]
    assert [t.text for t in expr.terms] == ["3", "0.5", "1e-5", ".5", "2E3"]
    assert expr.terms[0].is_integer and not expr.terms[1].is_integer


def test_call_with_keyword_arguments():
    text = "Y[i] = lnorm(X[i], eps=1e-5)"
    call = rhs(text)
    assert isinstance(call, ir.Call) and call.name == "lnorm"
    assert call.name_span == Span(7, 12)
    assert len(call.args) == 1
    (kw,) = call.kwargs
    assert kw.name == "eps" and isinstance(kw.value, ir.Number) and kw.value.value == 1e-5
    assert src(text, kw) == "eps=1e-5"
    assert call.span == Span(7, len(text))


def test_keyword_axis_argument():
    # `axis` starts an axis declaration, but is also the keyword of softmax/concat.
    call = rhs("C[p,q] = softmax(S[p,q], axis=q)")
    assert [k.name for k in call.kwargs] == ["axis"]
    call = rhs("C[i] = concat(A[i], B[i], axis=i)")
    assert len(call.args) == 2 and call.kwargs[0].name == "axis"


def test_call_several_positional_arguments():
    call = rhs("Y = sig(X[i], T)")
    assert [a.name for a in call.args] == ["X", "T"]


def test_positional_after_keyword_is_an_error():
    (d,) = errors("Y = topk(k=3, X[i])")
    assert "positional" in d.message


def test_unknown_lowercase_function_is_a_call():
    call = rhs("Y = foo(X[i])")
    assert isinstance(call, ir.Call) and call.name == "foo"


def test_list_literals():
    text = "W = const([[1, 2], [3, 4],])"
    call = rhs(text)
    (lst,) = call.args
    assert isinstance(lst, ir.ListLit) and len(lst.items) == 2
    assert all(isinstance(x, ir.ListLit) for x in lst.items)
    assert [n.value for n in lst.items[1].items] == [3, 4]
    assert src(text, lst) == "[[1, 2], [3, 4],]"


def test_negative_numbers_in_list():
    call = rhs("W = const([0.2, 1.9, -0.7, 3])")
    items = call.args[0].items
    assert isinstance(items[2], ir.Neg) and items[2].operand.value == 0.7


def test_reduce():
    text = "Y[i] = reduce(max, j) A[i,j]"
    red = rhs(text)
    assert isinstance(red, ir.Reduce)
    assert red.op == "max" and red.op_span == Span(14, 17)
    assert red.indices == (ir.IndexVar("j", Span(19, 20)),)
    assert isinstance(red.body, ir.Ref) and red.body.name == "A"
    assert red.span == Span(7, len(text))


def test_reduce_several_indices_and_product_body():
    red = rhs("Y = reduce(sum, i, j) A[i,j] B[j]")
    assert [v.name for v in red.indices] == ["i", "j"]
    assert isinstance(red.body, ir.Product) and len(red.body.factors) == 2


def test_reduce_body_stops_at_plus():
    expr = rhs("Y[i] = reduce(max, j) A[i,j] + B[i]")
    assert isinstance(expr, ir.Sum) and isinstance(expr.terms[0], ir.Reduce)


def test_reduce_needs_variables():
    (d,) = errors("Y = reduce(max, J) A[i,J]")
    assert d.code == "invalid-index"


def test_index_variable_used_as_value():
    expr = rhs("P[p,d] = sin(p / L)")
    inner = expr.args[0]
    assert isinstance(inner, ir.Product) and inner.factors[0].name == "p"


# ------------------------------------------------------------------ layout


def test_comments_and_blank_lines():
    result = parse("# a program\n\nY = A  # the output\n   # indented comment\nZ = B\n")
    assert result.diagnostics == ()
    assert [s.lhs.name for s in result.program.statements] == ["Y", "Z"]


def test_semicolons():
    text = "Y = A; Z = B ;; W = C"
    result = parse(text)
    assert result.diagnostics == ()
    stmts = result.program.statements
    assert [s.lhs.name for s in stmts] == ["Y", "Z", "W"]
    assert src(text, stmts[1]) == "Z = B"


def test_continuation_inside_brackets():
    text = "Y[i] = W[i,\n     j] X[j]\nZ = sig(A +\n  B)\n"
    result = parse(text)
    assert result.diagnostics == ()
    y, z = result.program.statements
    assert [i.name for i in y.rhs.factors[0].indices] == ["i", "j"]
    assert y.span == Span(0, 24)
    assert isinstance(z.rhs, ir.Call) and isinstance(z.rhs.args[0], ir.Sum)


def test_no_continuation_outside_brackets():
    result = parse("Y = A +\nB\n")
    assert len(result.diagnostics) == 1
    assert result.diagnostics[0].code == "syntax-error"


def test_statement_spans():
    text = "Y = A\nbad bad\nZ = B\n"
    result = parse(text)
    assert [text[s.start:s.end] for s in result.statement_spans] == ["Y = A", "bad bad", "Z = B"]


def test_crlf_and_tabs():
    result = parse("Y = A\r\n\tZ[i] = B[i]\r\n")
    assert result.diagnostics == ()
    assert len(result.program.statements) == 2


def test_empty_and_comment_only_programs():
    for text in ("", "\n\n", "# nothing\n", ";;;"):
        result = parse(text)
        assert result.diagnostics == () and result.program.statements == ()


def test_paper_programs_parse():
    text = """
W = const([0.2, 1.9, -0.7, 3])
X = const([0, 1, 1, 0])
Y = step(W[i] X[i])
Query[p,dk] = WQ[dk,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk))
Attn[p,dv]  = Comp[p,p'] Val[p',dv]
Features[x,y] = relu(Filter[dx,dy,ch] Image[x+dx,y+dy,ch])
Pooled[x/2,y/2] = Features[x,y]
X[i,j] = sig(W[i,j,k] X[i-1,k])
X[i,*t+1] = sig(W[i,j] X[j,*t] + V[i,j] U[j,t])
EmbR[i,j] = R(x,y) Emb[x,i] Emb[y,j]
D[x,y]    = sig(EmbR[i,j] Emb[x,i] Emb[y,j], T)
K[i,i'] = exp(-(X[i,j] - X[i',j])^2 / Var)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Alice, x)?
"""
    result = parse(text)
    assert result.diagnostics == ()
    assert len(result.program.statements) == 16


# ------------------------------------------------------------------ errors


def positions(text: str):
    lines = LineIndex(text)
    return [(lines.position(d.span.start)[0] + 1, lines.position(d.span.start)[1] + 1, d)
            for d in parse(text).diagnostics]


def test_error_recovery_reports_each_error_and_keeps_good_statements():
    text = (
        "A[i] = X[i]\n"          # 1 ok
        "Y[i] = W[i,j] +\n"      # 2 missing operand
        "B[i] = X[i]\n"          # 3 ok
        "Z[i j] = X[i]\n"        # 4 missing comma
        "C[i] = X[i]\n"          # 5 ok
        "Q[i] W[i]\n"            # 6 missing '='
        "D[i] = X[i] @ 2\n"      # 7 bad character
        "E = \"abc\n"            # 8 unterminated string
        "F[i] = X[i]\n"          # 9 ok
        "G = = 3\n"              # 10 unexpected '='
        "H = X[i])\n"            # 11 unmatched ')'
        "I[i] = X[i]\n"          # 12 ok
    )
    result = parse(text)
    names = [s.lhs.name for s in result.program.statements]
    assert names == ["A", "B", "C", "F", "I"]
    found = sorted((line, col) for line, col, _ in positions(text))
    assert found == [(2, 16), (4, 3), (6, 6), (7, 13), (8, 5), (10, 5), (11, 9)]
    for _, _, d in positions(text):
        assert d.severity.value == "error"
        assert d.message and d.code


def test_error_messages_are_in_words():
    by_line = {line: d for line, _, d in positions(
        "Y[i] = W[i,j] +\nZ[i j] = X[i]\nQ[i] W[i]\nG = = 3\nY[i] =\nY = X[,i]\n")}
    assert by_line[1].message == "missing an operand after the operator"
    assert by_line[2].message == "missing ',' between indices"
    assert by_line[3].message == "missing '=' between the left-hand side and the expression"
    assert by_line[4].message.startswith("unexpected '='; expected ")
    assert "a name" in by_line[4].message
    assert by_line[5].message == "an equation needs a right-hand side after the operator"
    assert by_line[6].message == "an index is missing between the commas"


def test_generic_error_names_expected_tokens():
    (d,) = errors("Y = X[i] )")
    assert d.code == "unmatched-bracket" and "closes nothing" in d.message
    (d,) = errors("Y = f(a,]")
    assert d.code == "unmatched-bracket" and "expected ')'" in d.message
    (d,) = errors("export 3")
    assert d.code == "syntax-error" and "expected a name" in d.message


def test_unclosed_bracket_at_end_of_file():
    text = "A = B\nY = sig(X[i]\nZ = C\n"
    result = parse(text)
    (d,) = result.diagnostics
    assert d.code == "unclosed-bracket" and "never closed" in d.message
    assert text[d.span.start:d.span.end] == "("
    assert [s.lhs.name for s in result.program.statements] == ["A", "Z"]


def test_unclosed_bracket_before_a_wrong_closer_in_a_later_line():
    # The '[' of W is never closed; the ')' three lines down must not swallow
    # (and hide) the statements in between.
    text = "Y[i] = W[i,j X[j]\nA = B\nZ = C +\nR = f(A) )\nS = T\n"
    result = parse(text)
    lines = {line: d for line, _, d in positions(text)}
    assert lines[1].code == "unclosed-bracket"
    assert text[lines[1].span.start:lines[1].span.end] == "["
    assert lines[3].code == "syntax-error"
    assert lines[4].code == "unmatched-bracket"
    assert [s.lhs.name for s in result.program.statements] == ["A", "S"]


def test_unclosed_bracket_before_semicolon():
    result = parse("Y = (A; Z = B")
    assert result.diagnostics[0].code == "unclosed-bracket"
    assert [s.lhs.name for s in result.program.statements] == ["Z"]


def test_no_word_or_operator_is_reserved_now():
    # every word and operator LANGUAGE.md §12 reserved is the language's (issue 33): each
    # parses, and a keyword used as a name is a syntax error that names it
    text = ('import "lib.fuse" as g\nlet h[i] = A[i]\nY[i] = h[i] when (i < 2 && !(i == 0) || i > 3)\n'
            'Z[i] = g::T[i]\n')
    assert parse(text).diagnostics == ()
    words = [d for _, _, d in positions("as x = 3\nY = let\n")]
    assert [d.code for d in words] == ["syntax-error", "syntax-error"]
    assert "'as'" in words[0].message and "'let'" in words[1].message


def test_import_statements_and_qualified_names_parse():
    result = parse('import "lib/graph.fuse" as g\nY(x) = g::Path(x, y) g::h::T(y)\n')
    assert result.diagnostics == ()
    decl, eq = result.program.statements
    assert (decl.path.value, decl.alias) == ("lib/graph.fuse", "g")
    assert [r.name for r in ir.statement_refs((eq.rhs,))] == ["g::Path", "g::h::T"]
    bad = parse('import "x.fuse" as a::b\nimport x as y\n')
    assert [d.code for d in bad.diagnostics] == ["invalid-statement", "syntax-error"]


def test_arrows_and_braces_outside_blocks():
    text = "Y = a -> b\nV = {1}\nS = select(C, A, B)\n"
    found = [(line, d.code) for line, _, d in positions(text)]
    assert found == [(1, "syntax-error"), (2, "syntax-error")]
    assert "braces hold a function's body" in positions(text)[1][2].message


def test_invalid_characters():
    (d,) = errors("Y = A ' B")
    assert d.code == "invalid-character" and "double quotes" in d.message
    (d,) = errors("Y = A \u00a7 B")
    assert d.code == "invalid-character"


def test_nesting_limit():
    text = "Y = " + "(" * 1000 + "1" + ")" * 1000
    (d,) = errors(text)
    assert d.code == "nesting-too-deep"
    ok = "Y = " + "(" * 100 + "1" + ")" * 100
    assert errors(ok) == ()


def test_deep_operator_chains_do_not_overflow():
    # parsed without overflowing, and refused past the expression depth (issue 19 #12:
    # the run would recurse that deep)
    for text in ("Y = " + "- " * 5000 + "1", "Y = " + "2^" * 5000 + "1"):
        (d,) = errors(text)
        assert d.code == "nesting-too-deep" and "operators or calls" in d.message
    assert errors("Y = " + "- " * 99 + "1") == ()


def test_too_many_errors_stops():
    result = parse("@\n" * 1000)
    assert result.diagnostics[-1].code == "too-many-errors"
    assert len(result.diagnostics) <= 202


def test_parse_never_raises_on_noise():
    import random
    rng = random.Random(7)
    alphabet = "abXY[](){}=+-*/^,.:;?#\"' \n0129@_"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 60)))
        result = parse(text)
        for d in result.diagnostics:
            assert 0 <= d.span.start <= d.span.end <= len(text)


def test_strings_know_only_the_two_escapes_of_the_contract():
    program = parse('"a\\"b.npy" = Y\n"c\\\\d.npy" = Y\n"e\\x(1).npy" = Y\n').program
    assert [s.path.value for s in program.statements] == ['a"b.npy', "c\\d.npy", "e\\x(1).npy"]


# ------------------------------------------------------------ parse tables


def test_the_committed_parse_tables_are_those_of_the_grammar():
    """grammar_tables.json is what lark builds from grammar.lark now: after a change
    to the grammar, write it again with
    `python -c "import fuse_lang.front.tables as t; t.write_tables()"`."""
    import json

    from fuse_lang.front.tables import GRAMMAR, TABLES_PATH, build_tables

    committed = json.loads(TABLES_PATH.read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(build_tables(GRAMMAR, "start"))), \
        "fuse_lang/front/grammar_tables.json is stale: run fuse_lang.front.tables.write_tables()"


def test_tables_made_from_another_grammar_are_not_used():
    from fuse_lang.front.builder import IRBuilder
    from fuse_lang.front.lalr import Parser
    from fuse_lang.front.lexer import Lexer
    from fuse_lang.front.tables import GRAMMAR, load_tables

    changed = GRAMMAR + "\n// a comment: another text, the same language\n"
    tables = load_tables(changed)
    assert tables["grammar"] == changed  # built now, from the text given
    stmt = Parser(tables, IRBuilder()).parse(Lexer(tables).tokens("Y[i] = A[i,j] B[j]"))
    assert isinstance(stmt, ir.Equation) and stmt.lhs.name == "Y"


def test_checking_a_file_does_not_import_lark(tmp_path):
    import subprocess
    import sys

    program = tmp_path / "p.fuse"
    program.write_text("A[i,j] = B[i,j]\nB[i,j] = \"b.npy\"\nY[i] = A[i,j]\n", encoding="utf-8")
    code = ("import sys; from fuse_lang.cli import check_paths; "
            f"check_paths([{str(program)!r}]); "
            "print(sorted(m for m in sys.modules if m == 'lark' or m.startswith('lark.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


_PIECES = [*"aAxz_'09.5eE+-*/^=<>!&|:,;()[]{}\"\\# \t\n\ufeff?é٣",
           "max=", "min==", "export", "exports", "reduce(", "axis", "param'", "1e-5", ".5",
           "**", "->", "::", "+=", '"a.npy"', "# note", "as", "fn", "let", "not", "when",
           "case", "train", "default", "import", "A7", "_x"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_the_scanner_tokenises_as_the_terminals_patterns(text):
    """The scanner finds every token's text in one findall and reads its terminal
    from the text alone (lexer._Kinds); every token must still be the one the
    terminals' own patterns, tried in lark's order, give."""
    from fuse_lang.front.lexer import default_lexer

    lexer = default_lexer()
    assert lexer.tokens(text) == lexer._lex_slowly(text, 0, len(text))


def test_names_and_keywords_are_told_apart_without_the_patterns():
    """A new text made of name characters alone (most: a file of 50,000 distinct
    names) is a keyword's terminal or NAME, read from grammar.lark's keywords
    (lexer._word_kinds) without trying the terminals' patterns; a grammar whose
    terminals before NAME are of another form is read by the patterns only."""
    from fuse_lang.front.lexer import Lexer, _word_kinds, default_lexer
    from fuse_lang.front.tables import grammar_tables

    terminals = grammar_tables()["terminals"]
    words = _word_kinds(terminals)
    assert words is not None and words["axis"] == "AXIS" and words["fn"] == "FN"
    lexer = default_lexer()
    for text in ["axis", "axes", "fn", "fn2", "max", "as", "_", "A49999", "default", "x_y"]:
        assert lexer.tokens(text) == lexer._lex_slowly(text, 0, len(text))
    other = [("AT", "@"), *terminals]  # a terminal before NAME of another form
    assert _word_kinds(other) is None
    assert Lexer({**grammar_tables(), "terminals": other}).tokens("axis x") == \
        [("AXIS", "axis", 0, 4), ("NAME", "x", 5, 6)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join), st.data())
def test_lines_lexed_together_are_lexed_as_alone(text, data):
    """Lexer.lines, how the parser lexes a run of lines in one go, gives each
    line the tokens it has lexed alone, and their types."""
    from fuse_lang.front.lexer import default_lexer

    engine = default_lexer()
    ends = [i for i, ch in enumerate(text) if ch == "\n"] + [len(text)]
    starts = [0] + [end + 1 for end in ends[:-1]]
    first = data.draw(st.integers(0, len(starts) - 1))
    last = data.draw(st.integers(first, len(starts) - 1))
    alone = [engine.tokens(text, a, b)
             for a, b in zip(starts[first:last + 1], ends[first:last + 1])]
    assert engine.lines(text, starts[first], ends[last]) == \
        [(tokens, tuple(tok[0] for tok in tokens)) for tokens in alone]


def test_a_character_no_terminal_matches_is_left_out_line_by_line():
    # fuse's BAD_CHAR matches any character; without it one that no terminal
    # matches is left out (the slow path), lines lexed together still as alone
    from fuse_lang.front.lexer import Lexer
    from fuse_lang.front.tables import grammar_tables

    tables = dict(grammar_tables())
    tables["terminals"] = [pair for pair in tables["terminals"] if pair[0] != "BAD_CHAR"]
    engine = Lexer(tables)
    text = "Y[i] = A[i] @ B[i]\n\n@ x"
    got = engine.lines(text)
    assert [[tok[1] for tok in tokens] for tokens, _ in got] == \
        [["Y", "[", "i", "]", "=", "A", "[", "i", "]", "B", "[", "i", "]"], [], ["x"]]
    assert got[2] == ([("NAME", "x", 22, 23)], ("NAME",))
    assert got == [(engine.tokens(text, a, b), shape)
                   for (a, b), (_, shape) in zip([(0, 18), (19, 19), (20, 23)], got)]


def test_write_tables_writes_what_load_tables_reads(tmp_path, monkeypatch):
    import json

    import fuse_lang.front.tables as tables

    monkeypatch.setattr(tables, "TABLES_PATH", tmp_path / "tables.json")
    written = tables.write_tables()
    assert written == tmp_path / "tables.json"
    assert json.loads(written.read_text(encoding="utf-8")) == tables.load_tables(tables.GRAMMAR)
    assert not list(tmp_path.glob("*.tmp"))  # written whole, then moved into place


def test_the_parsers_nodes_are_ordinary_frozen_nodes():
    """bare and bracket references made by the parser (and by compiled replays'
    written-out code): the same frozen dataclass instances as calling the classes gives."""
    import copy
    import dataclasses
    import pickle

    stmt = parse("Y[i] = A[i,j] B").program.statements[0]
    ref = stmt.rhs.factors[0]
    assert type(ref) is ir.Ref and type(ref.indices[0]) is ir.IndexVar
    assert ref == ir.Ref("A", ref.name_span, (ir.IndexVar("i", ref.indices[0].span),
                                              ir.IndexVar("j", ref.indices[1].span)),
                         False, ref.span)
    bare = stmt.rhs.factors[1]
    assert bare == ir.Ref("B", bare.span, None, False, bare.span)
    assert hash(bare) == hash(ir.Ref("B", bare.span, None, False, bare.span))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.name = "C"  # type: ignore[misc]
    assert copy.deepcopy(ref) == ref and pickle.loads(pickle.dumps(ref)) == ref
    assert dataclasses.replace(ref, name="C").name == "C"


def test_the_other_parsed_nodes_are_ordinary_nodes_too():
    """products, sums, numbers, calls and keywords as well (in a compiled replay,
    some are made by code written out in place: see below)."""
    stmt = parse("Y[i] = A[i] * b / 2 - relu(c, eps=1e-5)").program.statements[0]
    total = stmt.rhs
    product, call = total.terms
    number = product.factors[2]
    keyword = call.kwargs[0]
    assert total == ir.Sum((product, call), ("+", "-"), total.span)
    assert product == ir.Product(product.factors, ("", "*", "/"), product.span)
    assert number == ir.Number(2.0, "2", number.span)
    assert keyword == ir.Keyword("eps", keyword.name_span, keyword.value, keyword.span)
    assert call == ir.Call("relu", call.name_span, call.args, (keyword,), call.span)
    assert [type(node) for node in (total, product, number, call, keyword)] == \
        [ir.Sum, ir.Product, ir.Number, ir.Call, ir.Keyword]


# Statement shapes, each written with several names: the same tokens' types, so
# the same shape (and replay) whether a name is an index variable (`i`), a
# constant (`I`), a builtin (`relu`), a reserved word (`import`) or a relation.
_SHAPES = [
    "{a}[{b},{c}] = {d}[{b},{e}] {f}[{e},{c}]",
    "{a}({b},{c}) = {d}({b},{e}) {f}({e},{c})",
    "{a}[{b}] = {d}({b}) + {e}[{b}] * {f} / 2",
    "{a}[{b},{c}.] = {d}({e}[{b},{c}] {f}, eps=1e-5)",
    "{a}[{b}] max= {d}[{b}-1, {c}'] - {e} + {f}",
    "{a}[{b}] = {d}[{b}, {c}, 2:4]",
    "{a} = {b}",
    "{a}({b}) ?",
    "{a}({b}, {c})",
    "\"out.npy\" = {a}[{b}] {c}",
    "{a}[{b}] = \"{c}.npy\"",
    "{a}[{b}] = {d}[{b}] + \"x.npy\"",
    "{a}[{b}] = {d}()",
    "{a}[{b}] = {d}[]",
    "{a}[{b}] = {d}[{e}[{b}]]",
]
_NAMES = ["i", "I", "_k", "relu", "import", "Edge", "foo", "max"]


def _outcome(parser, tokens):
    from fuse_lang.front.builder import StatementError
    from fuse_lang.front.lalr import ParseError

    try:
        return parser.parse(tokens)
    except StatementError as err:
        return err.diagnostic
    except ParseError as err:
        return err.token, err.state


def test_compiled_replays_build_what_the_parse_table_builds():
    """A statement shape met often is replayed by code compiled for it (compiled.py:
    its lists known, bare names passed on as tokens, builder calls written out in
    place): the IR and the errors must be those of the table's parse (and of the
    plain replay of its steps), whatever the names."""
    import random

    from fuse_lang.front.builder import IRBuilder
    from fuse_lang.front.lalr import Parser
    from fuse_lang.front.lexer import Lexer
    from fuse_lang.front.tables import grammar_tables

    tables = grammar_tables()
    lexer = Lexer(tables)
    compiled = Parser(tables, IRBuilder())
    compiled.COMPILE_AFTER = 1
    plain = Parser(tables, IRBuilder())
    plain.COMPILE_AFTER = 10 ** 9  # never
    pick = random.Random(0)
    for shape in _SHAPES:
        for _ in range(60):
            text = shape.format(**dict(zip("abcdef", pick.choices(_NAMES, k=6))))
            for tokens in (lexer.tokens(text), lexer.lex(text)):  # tuples, Toks
                for _ in range(3):  # by the table, replayed (then compiled), compiled
                    outcome = _outcome(compiled, tokens)
                assert outcome == _outcome(plain, tokens), text
    assert all(not isinstance(replay, list) for replay in compiled._replays.values())


def _made_by_frozen_dataclass() -> list[type]:
    """Every class in the engine that `fastinit.frozen_dataclass` made."""
    import sys

    import fuse_lang.cli  # noqa: F401 - loads what `fuse check` loads
    from fuse_lang.speed.fastinit import _Model

    found = {value for name, module in list(sys.modules.items()) if name.startswith("fuse_lang")
             for value in vars(module).values()
             if isinstance(value, type) and value.__module__ == name and value is not _Model
             and getattr(value, "__dataclass_params__", None) is _Model.__dataclass_params__}
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))


def _as_dataclass_makes_it(cls: type, doc: str | None) -> type:
    """What `@dataclass(frozen=True, slots=True)` makes of `cls`' fields."""
    import dataclasses

    spec = [(f.name, f.type) if f.default is dataclasses.MISSING
            else (f.name, f.type, dataclasses.field(default=f.default))
            for f in dataclasses.fields(cls)]
    namespace = {"__qualname__": cls.__qualname__, "__module__": cls.__module__}
    if doc:
        namespace["__doc__"] = doc
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True, slots=True,
                                      namespace=namespace)


def _same_frozen_dataclass(cls: type, ref: type) -> None:
    import copy
    import dataclasses
    import inspect
    import pickle

    def dunders(kind: type) -> set[str]:
        return {name for name in vars(kind) if name.startswith("__")}

    def parameters(kind: type) -> list:  # not the annotations: frozen_dataclass' __init__ has none
        return [(p.name, p.kind, p.default) for p in inspect.signature(kind).parameters.values()]

    assert dataclasses.is_dataclass(cls)
    assert dunders(cls) == dunders(ref)
    assert cls.__slots__ == ref.__slots__ and cls.__match_args__ == ref.__match_args__
    assert repr(cls.__dataclass_params__) == repr(ref.__dataclass_params__)
    assert [repr(f) for f in dataclasses.fields(cls)] == [repr(f) for f in dataclasses.fields(ref)]
    assert cls.__doc__ == ref.__doc__ and parameters(cls) == parameters(ref)
    values = [f"v{k}" for k in range(len(dataclasses.fields(cls)))]
    one, other = cls(*values), ref(*values)
    assert repr(one) == repr(other) and hash(one) == hash(other)
    assert one == cls(*values) and one != cls(*values[:-1], "w") and one != other
    assert copy.copy(one) == one and copy.deepcopy(one) == one
    if "<locals>" not in cls.__qualname__:
        assert pickle.loads(pickle.dumps(one)) == one
    assert dataclasses.asdict(one) == dataclasses.asdict(other)
    changed = dataclasses.replace(one, **{cls.__match_args__[0]: "w"})
    assert type(changed) is cls and changed == cls("w", *values[1:])
    for change in (lambda o: setattr(o, cls.__match_args__[0], "w"),
                   lambda o: delattr(o, cls.__match_args__[-1])):
        for instance in (one, other):
            with pytest.raises(dataclasses.FrozenInstanceError):
                change(instance)
    assert one == cls(*values)


def test_frozen_dataclass_makes_what_dataclass_makes():
    """The engine's frozen_dataclass classes, against what `dataclass` itself makes of
    the same fields: fields, parameters, doc, equality, hash, repr, frozen-ness,
    copying, pickling, `replace` and `asdict`."""
    classes = _made_by_frozen_dataclass()
    assert ir.Ref in classes and ir.Program in classes and len(classes) >= 30
    for cls in classes:
        generated = cls.__doc__.startswith(cls.__name__ + "(")  # no docstring of its own
        _same_frozen_dataclass(cls, _as_dataclass_makes_it(cls, None if generated else cls.__doc__))


def test_frozen_dataclass_of_one_field_with_a_default_and_no_docstring():
    from fuse_lang.speed.fastinit import frozen_dataclass

    @frozen_dataclass
    class Mine:
        value: int | None = None

    _same_frozen_dataclass(Mine, _as_dataclass_makes_it(Mine, None))
    assert repr(Mine()).endswith(".Mine(value=None)") and Mine() == Mine(None)
    assert hash(Mine()) == hash((None,))


def test_frozen_dataclass_refuses_classes_whose_init_does_more_than_store():
    import dataclasses

    from fuse_lang.speed.fastinit import frozen_dataclass

    class Listed:
        items: list = dataclasses.field(default_factory=list)

    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    class Empty:
        pass

    for cls in (Listed, Checked, Empty):
        with pytest.raises(TypeError):
            frozen_dataclass(cls)
