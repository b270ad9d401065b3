"""The formatter: one canonical layout, idempotent, never a change of meaning."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from fuse_lang import parse
from fuse_lang.front.span import Span
from fuse_lang.ide.formatting import format_lines, format_text, ir_signature, respace, same_program

ROOT = Path(__file__).resolve().parent.parent

MESSY = """\


# a comment   \t
X[ p , d ]=   "x.npy"      # the input
W[e,d]="w.npy"
H[p,e]=relu( W[e,d]X[p,d] )
Y[p]max=H[p,e]
K[i,i'] = exp(-( X[i,j]-X[i',j] )^2/Var)



Z[i] = W[i,
   j]  *  X[j]   # continued
A = const([ 1,2 , -3 ]) ; B=const( 2 )
Parent( Alice , Bob )
Ancestor( Alice , x ) ?
S[i] = softmax(X[i,j], axis = j)  -  2*-X[i,k]**-2
R[i] = reduce( max , j )A[i,j]B[j]
X[i,*t+1] = sig(W[i,j] X[j, *t])
P[x/2] = F[ x ]
Comp[p,p' .] = softmax(Q[p,dk] K[p',dk])
export H , Y
axis i=2 , j=3
param W1[h,j] , W2[i,h]
"out.npy"=Y[p]
  Q [ i ] = W[i, 1:3]   # indented statement


"""

FORMATTED = """\
# a comment
X[p,d]  = "x.npy"  # the input
W[e,d]  = "w.npy"
H[p,e]  = relu(W[e,d] X[p,d])
Y[p] max= H[p,e]
K[i,i'] = exp(-(X[i,j] - X[i',j])^2 / Var)


Z[i] = W[i,
   j] * X[j]  # continued
A = const([1, 2, -3]); B = const(2)
Parent(Alice,Bob)
Ancestor(Alice,x)?
S[i]        = softmax(X[i,j], axis=j) - 2 * -X[i,k]**-2
R[i]        = reduce(max, j) A[i,j] B[j]
X[i,*t+1]   = sig(W[i,j] X[j,*t])
P[x/2]      = F[x]
Comp[p,p'.] = softmax(Q[p,dk] K[p',dk])
export H, Y
axis i = 2, j = 3
param W1[h,j], W2[i,h]
"out.npy" = Y[p]
Q[i]      = W[i,1:3]  # indented statement
"""


def test_the_canonical_layout():
    assert format_text(MESSY) == FORMATTED


def test_formatting_is_idempotent_and_keeps_the_program():
    assert format_text(FORMATTED) == FORMATTED
    assert same_program(MESSY, FORMATTED)
    assert ir_signature(parse(MESSY).program) == ir_signature(parse(FORMATTED).program)


def test_a_text_with_syntax_errors_is_left_alone():
    text = "Y[i]=W[i,j]  X[j]\nZ = W[i,\n"
    assert respace(text) is None
    assert format_text(text) == text


def test_tokens_that_would_merge_keep_a_space():
    # `max = 1` written `max=1` would lex as the projection operator `max=`
    text = "Y[i] = softmax(X[i], max = 1)\n"
    assert format_text(text) == text
    assert format_text("Y = 2  e5\n") == "Y = 2 e5\n"  # not the number 2e5


def test_a_bare_name_before_parentheses_stays_a_reference():
    # `Dk (W[i,j])` is read as the reference `Dk(...)`: the formatter shows that
    text = "Y[i] = A[i] (B[i] + C[i])\n"
    assert format_text(text) == text


def test_line_endings_blank_lines_and_comment_only_files():
    assert format_text("A = 1\r\nB=2\r\n") == "A = 1\r\nB = 2\r\n"
    assert format_text("A = 1\n\n\n\n\nB = 2") == "A = 1\n\n\nB = 2\n"
    assert format_text("  # only a comment  ") == "# only a comment\n"
    assert format_text("") == ""
    assert format_text("\n\n") == ""


def test_alignment_is_per_block_of_single_line_equations():
    text = "A[i] = 1\nLong[i,j] = 2\n# breaks the block\nB = 3\nCc[k] max= 4\nexport A\nD = 5\n"
    assert format_text(text) == ("A[i]      = 1\nLong[i,j] = 2\n# breaks the block\n"
                                 "B        = 3\nCc[k] max= 4\nexport A\nD = 5\n")


# ------------------------------------------------------------- corpora


def _corpus() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.fuse"))]
    for path in sorted((ROOT / "tests").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    return [t for t in texts if parse(t).program.statements and not parse(t).diagnostics]


def test_every_example_and_test_program_keeps_its_meaning():
    corpus = _corpus()
    assert len(corpus) > 200
    for text in corpus:
        raw = respace(text)
        assert raw is not None
        assert same_program(text, raw), text  # the safety net is never what saves it
        assert respace(raw) == raw, text


# ---------------------------------------------------------- generated

_ws = st.sampled_from(["", " ", "  ", "\t"])
_gap = st.sampled_from([" ", "  ", "\t "])
_var = st.sampled_from(["i", "j", "k", "p'", "dk"])
_tensor = st.sampled_from(["A", "B", "Xq", "W1", "Dk"])


@st.composite
def _index(draw):
    var = draw(_var)
    form = draw(st.sampled_from(["var", "shift", "const", "slice", "div", "sum"]))
    w = draw(_ws)
    return {"var": var, "shift": f"{var}{w}+{w}1", "const": draw(st.sampled_from(["0", "Alice"])),
            "slice": f"1{w}:{w}3", "div": f"{var}{w}/{w}2", "sum": f"{var}{w}+{w}dx"}[form]


@st.composite
def _ref(draw):
    name = draw(_tensor)
    indices = draw(st.lists(_index(), min_size=0, max_size=3))
    if not indices:
        return name
    sep = draw(st.sampled_from([",", ", ", " ,", ",\n   "]))
    open_, close = draw(st.sampled_from([("[", "]"), ("(", ")")]))
    w = draw(_ws)
    return f"{name}{open_}{w}{sep.join(indices)}{w}{close}"


def _expr():
    atom = st.one_of(_ref(), st.sampled_from(["2", "0.5", "1e-5", ".5"]))

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "^", "**"]), _ws, inner)
            .map(lambda t: f"{t[0]}{t[2]}{t[1]}{t[2]}{t[3]}"),
            st.tuples(inner, _gap, _ref()).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
            st.tuples(_ws, inner).map(lambda t: f"({t[0]}{t[1]}{t[0]})"),
            st.tuples(_ws, inner).map(lambda t: f"-{t[0]}{t[1]}"),
            st.tuples(st.sampled_from(["relu", "exp", "sig", "max"]), _ws, inner, inner)
            .map(lambda t: f"{t[0]}({t[1]}{t[2]},{t[1]}{t[3]})" if t[0] in ("sig", "max")
                 else f"{t[0]}({t[1]}{t[2]})"),
            st.tuples(_ws, inner).map(lambda t: f"reduce({t[0]}max,{t[0]}j){t[0] or ' '}{t[1]}"),
            # the conditions of issue 33: && || ! and comparisons
            st.tuples(inner, st.sampled_from(["&&", "||", "<", "!="]), _ws, inner)
            .map(lambda t: f"({t[0]}{t[2]}{t[1]}{t[2]}{t[3]})"),
            st.tuples(_ws, inner).map(lambda t: f"!{t[0]}({t[1]})"),
        )

    return st.recursive(atom, extend, max_leaves=6)


@st.composite
def _statement(draw):
    kind = draw(st.sampled_from(["eq", "eq", "eq", "source", "fact", "query", "export", "axis",
                                 "comment", "blank", "let", "block"]))
    w = draw(_ws)
    if kind == "eq":
        op = draw(st.sampled_from(["=", "+=", "max=", "avg="]))
        line = f"{draw(_ref())}{w}{op}{w}{draw(_expr())}"
    elif kind == "let":  # issue 33: a local tensor
        line = f"let {draw(_ref())}{w}={w}{draw(_expr())}"
    elif kind == "block":  # issue 33: a block of a let and an equation
        sep = draw(st.sampled_from([";", "\n  "]))
        line = f"{{{w}let h[i]{w}={w}{draw(_expr())}{sep}{draw(_ref())}{w}={w}h[i]{w}}}"
    elif kind == "source":
        line = f'{draw(_ref())}{w}={w}"data/x.npy"'
    elif kind == "fact":
        line = f"Parent({w}Alice{w},{w}Bob{w})"
    elif kind == "query":
        line = f"{draw(_ref())}{w}?"
    elif kind == "export":
        line = f"export A{w},{w}B"
    elif kind == "axis":
        line = f"axis i{w}={w}3"
    elif kind == "comment":
        line = f"{w}# note {draw(st.integers(0, 9))}"
    else:
        line = w
    if kind not in ("comment", "blank") and draw(st.booleans()):
        line += f"{draw(_gap)}# trailing"
    return draw(_ws) + line + w


@given(st.lists(_statement(), min_size=1, max_size=8),
       st.sampled_from(["\n", "\n", "; "]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                   HealthCheck.too_slow])
def test_generated_programs_keep_their_meaning_and_format_once(lines, joiner):
    if joiner == "; " and any("#" in line for line in lines):
        joiner = "\n"
    text = joiner.join(lines)
    assume(not parse(text).diagnostics)
    raw = respace(text)
    assert raw is not None
    assert same_program(text, raw)
    assert respace(raw) == raw


def _applied(text: str, edits) -> str:
    for span, new_text in sorted(edits, key=lambda e: e[0].start, reverse=True):
        text = text[:span.start] + new_text + text[span.end:]
    return text


@given(st.lists(_statement(), min_size=1, max_size=8), st.sampled_from(["\n", "\r\n"]),
       st.integers(0, 10), st.integers(0, 10))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                   HealthCheck.too_slow])
def test_formatting_a_range_touches_its_lines_only(lines, newline, first, count):
    text = newline.join(lines) + newline
    assume(not parse(text).diagnostics)
    ends = [k + len(newline) for k in range(len(text)) if text.startswith(newline, k)]
    starts = [0, *ends[:-1]]
    first = min(first, len(starts) - 1)
    last = min(first + count, len(starts) - 1)
    edits = format_lines(text, starts[first], ends[last] - len(newline))
    out = _applied(text, edits)
    assert same_program(text, out)
    for span, _ in edits:  # no edit outside the lines asked but a run of blank lines
        touched = text[span.start:span.end]
        assert starts[first] <= span.start and span.end <= ends[last] or not touched.strip()
    def filled(part):
        return [line for line in part.split(newline) if line.strip()]
    before, after = filled(text[:starts[first]]), filled(text[ends[last]:])
    assert filled(out)[:len(before)] == before  # the lines outside, as they were
    assert filled(out)[len(filled(out)) - len(after):] == after
    assert _applied(text, format_lines(text, 0, len(text))) == format_text(text)
    assert edits == _reference_format_lines(text, starts[first], ends[last] - len(newline))


def _reference_format_lines(text: str, start: int, end: int):
    """format_lines as formatting the whole text would give it (format_lines itself
    formats only the paragraphs around the lines asked)."""
    formatted = format_text(text)
    lines = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
    old, new = lines.findall(text), lines.findall(formatted)
    offsets = [0]
    for line in old:
        offsets.append(offsets[-1] + len(line))
    first = max(k for k in range(len(old)) if offsets[k] <= start)
    last = max(max(k for k in range(len(old)) if offsets[k] < end) if end > start else first,
               first)
    olds = [k for k, line in enumerate(old) if line.strip()]
    news = [k for k, line in enumerate(new) if line.strip()]
    assert len(olds) == len(news)
    pairs, i0, j0 = [], 0, 0
    for i, j in zip([*olds, len(old)], [*news, len(new)]):
        pairs.append(((i0, i), (j0, j)))  # the run of blank lines before
        if i < len(old):
            pairs.append(((i, i + 1), (j, j + 1)))
        i0, j0 = i + 1, j + 1
    return [(Span(offsets[i1], offsets[i2]), "".join(new[j1:j2]))
            for (i1, i2), (j1, j2) in pairs
            if i1 <= last and max(i2 - 1, i1) >= first and old[i1:i2] != new[j1:j2]]


def test_imports_and_qualified_names_keep_their_meaning():
    messy = ('import   "lib/graph.fuse"    as   g\n'
             'Y(x)=g::Linked( Paris ,x )  g::Road(x,y)\nZ[i] = a::b::W[i]+1\n')
    formatted = format_text(messy)
    assert formatted == ('import "lib/graph.fuse" as g\n'
                         'Y(x) = g::Linked(Paris,x) g::Road(x,y)\nZ[i] = a::b::W[i] + 1\n')
    assert format_text(formatted) == formatted
    assert same_program(messy, formatted)
    assert ir_signature(parse(messy).program) == ir_signature(parse(formatted).program)


def test_formatting_a_range_reads_only_the_paragraphs_around_it():
    # paragraphs apart: a blank line, a comment line, and a bracket that stays
    # open over a blank line (no paragraph ends inside it)
    text = ("A[i]=B[i]\nLonger[i,j]=B[i]\n\n# note\nC[i]=relu(\n\n  B[i])\nD[i]=C[i]\n"
            "# end\nE=1\n")
    for line in range(text.count("\n")):
        start = len("".join(text.splitlines(keepends=True)[:line]))
        assert format_lines(text, start, start) == _reference_format_lines(text, start, start)
    edits = format_lines(text, text.index("D[i]"), text.index("D[i]"))
    assert _applied(text, edits) == text.replace("D[i]=C[i]", "D[i] = C[i]")
    # a long file: a line's range gives that line's edit (benchmarks/format_range.py
    # measures that it costs the paragraph's formatting, not the file's)
    long = "# block\n" + "X[i]=Y[i]\n" * 3 + "\n" + text * 500
    assert format_lines(long, 8, 8) == [(Span(8, 18), "X[i] = Y[i]\n")]


def test_a_whole_statement_without_equals_ends_a_paragraph():
    """A fact, a query or `export` aligns with no neighbour: formatting a line of a
    long file of facts (no blank line in it) formats that line's paragraph only,
    and every line's range gives what formatting the whole text gives."""
    text = ("A[i]=B[i]\nLonger[i,j]=B[i]\nEdge( A,B )\nC[i]=relu(\n  B[i])\nexport C\n"
            "D[i]=C[i]\nX[ i ]  =  Y[i]\nEdge( A , B )?\nE(x)=Edge(x, B) (x != A)\nY[i]=A[i]\n")
    for line in range(text.count("\n")):
        start = len("".join(text.splitlines(keepends=True)[:line]))
        assert format_lines(text, start, start) == _reference_format_lines(text, start, start)
    facts = "".join(f"Edge( N{k}, N{k + 1} )\n" for k in range(3000))
    at = facts.index("Edge( N1500,")
    assert format_lines(facts, at, at) == [(Span(at, at + len("Edge( N1500, N1501 )\n")),
                                            "Edge(N1500,N1501)\n")]
