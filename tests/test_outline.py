"""The outline's pure functions: symbols by kind, semantic tokens, shape
hints and folding ranges, as plain data over spans."""
from fuse_lang import analyze
from fuse_lang.front.span import Span
from fuse_lang.ide.folding import folding_ranges
from fuse_lang.ide.inlay_hints import shape_hints
from fuse_lang.ide.outline import (
    document_outline,
    fuse_files,
    matches_query,
    tensor_symbols,
)
from fuse_lang.ide.semantic_tokens import (
    TOKEN_MODIFIERS,
    TOKEN_TYPES,
    comment_spans,
    semantic_tokens,
)

PROGRAM = """\
# Datalog and a layer
# in one file
Parent(Alice, Bob)
param W[h,j]
X[j] = const([1, 2, 3])
Y[h] = relu(W[h,j] X[j])
Anc(x,y) = Parent(x,y)
M[o] max= W[o,
            j]
export Y, Anc
"""


def _text(span, text=PROGRAM):
    return text[span.start:span.end]


def test_symbols_are_grouped_by_kind_with_shape_and_first_definition():
    analysis = analyze(PROGRAM)
    groups = document_outline(analysis)
    assert [g.label for g in groups] == ["params", "Boolean relations", "dense tensors"]
    params, relations, dense = groups
    assert [(s.name, s.detail) for s in params.symbols] == [("W", "[h:?, j:3]")]
    assert [(s.name, s.kind, s.detail) for s in relations.symbols] == [
        ("Parent", "Boolean relation", "[1, 1]"), ("Anc", "Boolean relation", "[x:1, y:1]")]
    assert [s.name for s in dense.symbols] == ["X", "Y", "M"]
    m = dense.symbols[2]
    assert _text(m.span) == "M[o] max= W[o,\n            j]"
    assert _text(m.name_span) == "M"
    assert dense.span == Span(dense.symbols[0].span.start, m.span.end)


def test_a_scalar_and_a_source_detail():
    text = 'S = const(2)\nV[i] = "missing.npy"\n'
    symbols = tensor_symbols(analyze(text))
    assert [(s.name, s.kind, s.detail) for s in symbols] == [
        ("S", "dense", "scalar"), ("V", "source", "[i:?]")]
    assert [g.label for g in document_outline(analyze(text))] == ["sources", "dense tensors"]


def test_query_is_a_case_insensitive_subsequence():
    assert matches_query("", "Attn")
    assert matches_query("qk", "QueryKey")
    assert matches_query("ATN", "Attn")
    assert not matches_query("kq", "QueryK")
    assert not matches_query("attnx", "Attn")


def test_fuse_files_are_bounded_and_skip_big_files_and_hidden_folders(tmp_path):
    for name in ("a.fuse", "b.fuse", "c.fuse", "notes.txt"):
        (tmp_path / name).write_text("Y = const(1)\n")
    (tmp_path / "big.fuse").write_text("#" * 5000)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "h.fuse").write_text("Y = const(1)\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.fuse").write_text("Y = const(1)\n")
    found = fuse_files([tmp_path], limit=10, max_bytes=1000)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a.fuse", "b.fuse", "c.fuse", "sub/d.fuse"]
    assert len(fuse_files([tmp_path], limit=2, max_bytes=1000)) == 2
    assert len(fuse_files([tmp_path], max_bytes=1000, max_folders=1)) == 3


def test_comments_are_found_outside_strings_only():
    text = 'W[i] = "a#b.npy"  # real\n# whole line\nY = 1 "x\\"#y" # end\n'
    assert [_text(s, text) for s in comment_spans(text)] == ["# real", "# whole line", "# end"]


def _classified(text):
    return [(_text(t.span, text), t.type, t.modifiers) for t in semantic_tokens(analyze(text))]


def test_semantic_tokens_classify_every_kind_of_name():
    text = ("axis j = 2\n"
            "Edge(Alice, 0)\n"
            "Y[i] = reduce(max, j) W[i,j] + softmax(V[i,k], axis=k) # c\n"
            "W[i,j] = \"w.npy\"\n"
            "export Y\n")
    assert _classified(text) == [
        ("axis", "keyword", ()), ("j", "parameter", ("declaration",)), ("2", "number", ()),
        ("Edge", "type", ("declaration",)), ("Alice", "enumMember", ()), ("0", "number", ()),
        ("Y", "variable", ("declaration",)), ("i", "parameter", ("declaration", "output")),
        ("reduce", "keyword", ()), ("max", "function", ("defaultLibrary",)),
        ("j", "parameter", ("projected",)),
        ("W", "variable", ("readonly",)), ("i", "parameter", ("output",)),
        ("j", "parameter", ("projected",)),
        ("softmax", "function", ("defaultLibrary",)),
        ("V", "variable", ()), ("i", "parameter", ("output",)),
        ("k", "parameter", ("projected",)),
        ("axis", "property", ()), ("k", "parameter", ("projected",)),
        ("# c", "comment", ()),
        ("W", "variable", ("declaration", "readonly")),
        ("i", "parameter", ("declaration", "output")),
        ("j", "parameter", ("declaration", "output")),
        ('"w.npy"', "string", ()),
        ("export", "keyword", ()), ("Y", "variable", ()),
    ]


def test_semantic_tokens_numbers_inside_indices_and_free_indices():
    text = "param P[t,d]\nH[t+1] = P[t,2:4] / 2\nP(x, 1)?\n"
    assert _classified(text) == [
        ("param", "keyword", ()), ("P", "variable", ("declaration", "param")),
        ("t", "parameter", ("declaration", "output")),
        ("d", "parameter", ("declaration", "output")),
        ("H", "variable", ("declaration",)), ("t", "parameter", ("declaration", "output")),
        ("1", "number", ()),
        ("P", "variable", ("param",)), ("t", "parameter", ("output",)),
        ("2", "number", ()), ("4", "number", ()), ("2", "number", ()),
        ("P", "variable", ("param",)), ("x", "parameter", ("free",)), ("1", "number", ()),
    ]


def test_semantic_tokens_are_sorted_disjoint_and_from_the_legend():
    tokens = semantic_tokens(analyze(PROGRAM + "Z[i] = oops(\nBad bad]\n"))
    for a, b in zip(tokens, tokens[1:]):
        assert a.span.end <= b.span.start
    assert all(t.type in TOKEN_TYPES and set(t.modifiers) <= set(TOKEN_MODIFIERS)
               for t in tokens)
    assert all("\n" not in _text(t.span, PROGRAM + "Z[i] = oops(\nBad bad]\n") for t in tokens)


def test_semantic_tokens_within_a_span():
    analysis = analyze(PROGRAM)
    line = PROGRAM.index("Y[h]")
    within = Span(line, PROGRAM.index("\n", line))
    assert [_text(t.span) for t in semantic_tokens(analysis, within)] == [
        "Y", "h", "relu", "W", "h", "j", "X", "j"]


def test_shape_hints_follow_each_equation_and_source_lhs():
    text = 'A[i,j] = const([[1, 2], [3, 4]])\nA[i,j] += A[j,i]\nS = const(1)\nV[k] = "no.npy"\n'
    hints = shape_hints(analyze(text))
    assert [(h.offset, h.label, h.tensor) for h in hints] == [
        (6, ": (2, 2)", "A"), (39, ": (2, 2)", "A"), (51, ": ()", "S"), (67, ": (?,)", "V")]
    assert hints[0].tooltip == "A: dense [i:2, j:2]"
    assert [h.offset for h in shape_hints(analyze(text), Span(33, 60))] == [39, 51]


def test_folding_comment_runs_and_multiline_statements():
    folds = folding_ranges(analyze(PROGRAM))
    analysis = analyze(PROGRAM)
    lines = [(analysis.lines.position(f.span.start)[0], analysis.lines.position(f.span.end)[0],
              f.kind) for f in folds]
    assert lines == [(0, 1, "comment"), (7, 8, "region")]


def test_a_lone_comment_or_trailing_comments_do_not_fold():
    text = "# one\nY = const(1)  # a\nZ = const(1)  # b\n\n# two\n\n# three\n"
    assert folding_ranges(analyze(text)) == ()
