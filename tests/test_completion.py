"""Completion and signature help as pure functions of (text, offset)."""
from __future__ import annotations

from fuse_lang import analyze
from fuse_lang.front.builtins import BUILTINS, NAMED_BUILTINS
from fuse_lang.ide.completion import complete, signature_at

PROGRAM = """\
X[p,d] = const([[1, 2], [3, 4], [5, 6]])
W[e,d] = const([[1, 0], [0, 1]])
H[p,e] = relu(W[e,d] X[p,d])
Parent(Alice,Bob)
export H
"""
TENSORS = [("H", "tensor", "dense [p:3, e:2]"), ("Parent", "relation", "Boolean relation [1, 1]"),
           ("W", "tensor", "dense [e:2, d:2]"), ("X", "tensor", "dense [p:3, d:2]")]


def items(text: str, marker: str = "|", snippets: bool = False):
    offset = text.index(marker)
    text = text.replace(marker, "", 1)
    return complete(analyze(text), offset, snippets)


def triples(found):
    return [(c.label, c.kind, c.detail) for c in found]


def test_statement_start_offers_keywords_and_tensors():
    found = items(PROGRAM + "|")
    assert triples(found) == [("axis", "keyword", "axis d = 64"),
                              ("export", "keyword", "export Y, Z"),
                              ("fn", "keyword", "fn f(x[i]) -> y[i] { ... }"),
                              ("import", "keyword", 'import "lib/graph.fuse" as g'),
                              ("let", "keyword", "let h[i] = W[i,j] X[j]"),
                              ("param", "keyword", "param W[i,j]"),
                              ("train", "keyword", "train Loss")] + TENSORS
    assert found[7].markdown and found[7].documentation.startswith("```fuse\nH[p:3, e:2]")


def test_inside_brackets_of_a_reference_index_variables_come_with_extents():
    # the statement does not parse yet: the indices come from the typed text
    assert triples(items(PROGRAM + "Y[p] = W[e,|")) == [
        ("d", "index", "index · extent 2 · axis 1 of W"),
        ("e", "index", "index · extent 2"),
        ("p", "index", "index · extent ?")]


def test_in_a_parsed_statement_index_variables_carry_their_role():
    text = PROGRAM.replace("X[p,d])", "X[|p,d])")
    assert triples(items(text)) == [("d", "index", "index · extent 2 · projected (sum)"),
                                    ("e", "index", "index · extent 2 · output"),
                                    ("p", "index", "index · extent 3 · output")]


def test_a_boolean_reference_offers_the_symbols_of_its_axis():
    assert triples(items(PROGRAM + "Q(x) = Parent(x,|")) == [
        ("x", "index", "index · extent 1"),
        ("Bob", "symbol", "symbol 0 of axis 1 of Parent")]


def test_in_an_expression_tensors_then_builtins_then_indices():
    found = items(PROGRAM + "Y[e] = H[p,e] + so|")
    labels = [c.label for c in found]
    # this statement parses (`so` is read as a tensor): Y is defined by it
    assert labels[:5] == ["H", "Parent", "W", "X", "Y"]
    assert labels[5:] == sorted([*NAMED_BUILTINS, "reduce"]) + ["e", "p"]
    softmax = next(c for c in found if c.label == "softmax")
    assert (softmax.kind, softmax.detail, softmax.documentation) == (
        "builtin", "softmax(x, axis=i)", BUILTINS["softmax"].doc)
    assert softmax.insert_text is None and not softmax.snippet


def test_builtins_get_a_snippet_only_when_the_client_takes_snippets():
    found = items(PROGRAM + "Y[e] = so|", snippets=True)
    softmax = next(c for c in found if c.label == "softmax")
    assert (softmax.insert_text, softmax.snippet) == ("softmax($1)", True)
    # an opening parenthesis already after the cursor: just the name
    found = items(PROGRAM + "Y[e] = so|(H[p,e])", snippets=True)
    assert next(c for c in found if c.label == "softmax").insert_text is None


def test_inside_a_call_index_variables_come_first():
    found = items(PROGRAM + "Y[p,e] = relu(|")
    assert triples(found[:6]) == [("e", "index", "index · extent ?"),
                                  ("p", "index", "index · extent ?")] + TENSORS


def test_special_places():
    assert [c.label for c in items(PROGRAM + "Y = reduce(|")] == ["sum", "max", "min", "avg"]
    assert [c.label for c in items(PROGRAM + "export H, |")] == ["H", "Parent", "W", "X"]
    assert [c.label for c in items(PROGRAM + "axis |")] == ["d", "e", "p"]
    assert items(PROGRAM + "Y[p] |") == []          # an operator comes next
    assert items(PROGRAM + "# a comment |") == []
    assert items(PROGRAM + 'Y[p] = "da|') == []
    assert items(PROGRAM + "Y[p] = 1|") == []


def test_a_statement_after_an_unclosed_bracket_starts_fresh():
    found = items("Y[i] = W[i,\n|")
    assert [c.label for c in found[:7]] == ["axis", "export", "fn", "import", "let", "param",
                                           "train"]


def sig(text: str):
    offset = text.index("|")
    return signature_at(text.replace("|", "", 1), offset)


def test_signature_help_counts_commas_at_the_call_level():
    found = sig("Y[p,e] = sig(H[p,e], |")
    assert (found.label, found.parameters, found.active) == ("sig(x, T=1)", ("x", "T=1"), 1)
    assert found.documentation == BUILTINS["sig"].doc
    assert sig("Y = sig(H[p,|e])").active == 0  # the comma is an index separator
    assert sig("Y = sig(relu(X[i]), |").label == "sig(x, T=1)"
    assert sig("Y = sig(relu(|X[i]), 2)").label == "relu(x)"


def test_signature_help_keywords_variadics_and_reduce():
    assert sig("Y = softmax(X[i], axis=|").active == 1
    assert sig("Y = lnorm(X[i], axis=i, eps=1e-|").active == 1
    assert sig("Y = concat(A[i], B[i], C[i], D[i]|").active == 2
    assert sig("Y = pow(X[i], 2, |").active is None  # past the last parameter
    found = sig("Y[i] = reduce(max, |")
    assert (found.label, found.active) == ("reduce(op, i, ...) expr", 1)


def test_no_signature_outside_a_call():
    assert sig("Y[i] = X[i|]") is None
    assert sig("Y = relu(X) + |") is None
    assert sig("Y = relu(X) # (|") is None
