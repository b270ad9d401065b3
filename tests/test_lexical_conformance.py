"""LANGUAGE.md §1 (lexical), §2 (statements), §8 (extents, domains, types) and
§11 (the paper's programs) through the public entry points: `fuse_lang.compile`,
`fuse_lang.analyze` and the `fuse` command line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fuse_lang


def _outputs(text: str, **kw) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in fuse_lang.compile(text, **kw).execute().outputs.items()}


def _codes(text: str, base: Path | None = None) -> list[tuple[str, str]]:
    path = str((base or Path(".")) / "p.fuse")
    return [(d.code, d.message) for d in fuse_lang.analyze(text, path).diagnostics]


def _tuples(text: str) -> list[list[tuple]]:
    return [q.tuples for q in fuse_lang.compile(text).execute().queries]


# ------------------------------------------------------------------ §1 lexical
@pytest.mark.parametrize("text, expected", [
    ("# a comment first\n\n   # an indented one\nY = 1 # after a statement\nexport Y #", 1.0),
    ("Y = 1#no space\nexport Y", 1.0),
    ("Y = const(1); Z = 2 # ; Y = 5\nexport Y", 1.0),             # `;` inside a comment
    ("Y = 1;; ; Z = 2;\nexport Y", 1.0),                            # empty statements
    ("Y = 1 \\\n  + 2\nexport Y", 3.0),                             # a backslash continues
    ("Y = 1 +\\\n2\nexport Y", 3.0),
    ("Y = 1\r\nZ = Y + 1\r\nexport Z\r\n", 2.0),                    # CRLF
    ("\ufeffY = 4\nexport Y", 4.0),                                  # a byte-order mark
])
def test_comments_separators_and_continuations(text, expected):
    got = _outputs(text)
    assert list(got.values()) == [expected]


@pytest.mark.parametrize("text, expected", [
    ("Y[i] = const([1, # a comment inside brackets ) ]\n\n  2])\nexport Y", [1, 2]),
    ("A[i] = const([1,2])\nY[i] = (A[i]\n + 1)\nexport Y", [2, 3]),
    ("A[i] = const([1,2])\nY[i] = A[i\n]\nexport Y", [1, 2]),
])
def test_a_statement_continues_while_a_bracket_is_open(text, expected):
    np.testing.assert_array_equal(_outputs(text)["Y"], expected)


def test_a_newline_outside_brackets_ends_the_statement():
    codes = [c for c, _ in _codes("A[i] = const([1,2])\nY[i] = A[i]\n + 1\nexport Y")]
    assert codes == ["syntax-error"]


def test_brackets_and_comment_characters_inside_strings_are_text():
    text = 'P("(", # not a comment\n Bob)\nQ("a;b")\nQ("#x")\nP(x, y)?\nQ(x)?'
    assert _tuples(text) == [[("(", "Bob")], [("#x",), ("a;b",)]]  # (sorted by value)


@pytest.mark.parametrize("name", ["x'", "Xp'", "X''", "_X", "X_1_", "a", "A"])
def test_identifiers_with_primes_underscores_and_digits(name):
    assert _outputs(f"{name} = 2\nY = {name} + 1\nexport Y, {name}") == {"Y": 3.0, name: 2.0}


def test_primed_indices_are_distinct_variables():
    got = _outputs("A[i, i'] = const([[1,2],[3,4]])\nB[i', i] = A[i, i']\nexport B")
    np.testing.assert_array_equal(got["B"], [[1, 3], [2, 4]])
    codes = [c for c, _ in _codes("A[i, i''] = const([[1,2],[3,4]])\nB[i, i'] = A[i, i'']")]
    assert codes == ["unsized-tensor"]  # i' is not i'': it appears on the left only


def test_builtin_names_that_are_not_calls_are_plain_names():
    got = _outputs("axis i = 2\nexp[i] = 1\nA[step] = const([1,2])\nY[i] = exp[i] + A[i]\n"
                   "export Y")
    np.testing.assert_array_equal(got["Y"], [2, 3])


@pytest.mark.parametrize("text", ["step(i) = const([1,2])", "exp(Alice)", "relu(x)?"])
def test_a_builtin_name_cannot_name_a_defined_tensor(text):
    name = text[:text.index("(")]
    assert _codes(text) == [("invalid-statement", f"`{name}` is a builtin function; a fact, a "
                             "query or a left-hand side names a tensor")]


def test_a_non_ascii_identifier_is_an_invalid_character_at_its_column():
    diags = fuse_lang.analyze('P("é✓") ; Y = Zé\n', "p.fuse").diagnostics
    assert [(d.code, d.span.start) for d in diags] == [("invalid-character", 15)]


@pytest.mark.parametrize("literal, expected", [
    ("3", 3.0), ("0.5", 0.5), (".5", 0.5), ("1e-5", np.float32(1e-5)), ("1E+2", 100.0),
    ("1.5e2", 150.0), ("00012", 12.0),
    ("3 -2", 1.0),       # the unary minus: `3 -2` subtracts
    ("3 - -2", 5.0), ("-2^2", -4.0), ("2^-1", 0.5), ("2 ** -1", 0.5), ("(-2)**2", 4.0),
    ("2^3^2", 512.0),    # right-associative
    ("2 (-3)", -6.0), ("8 / 2 / 2", 2.0), ("8 - 2 - 2", 4.0),
])
def test_number_literals_and_the_unary_minus(literal, expected):
    assert _outputs(f"Y = {literal}\nexport Y")["Y"] == expected


def test_a_minus_before_a_number_after_a_reference_subtracts():
    got = _outputs("A[i] = const([1,2])\nY[i] = A[i] -2\nZ[i] = A[i] (-2)\nexport Y, Z")
    np.testing.assert_array_equal(got["Y"], [-1, 0])
    np.testing.assert_array_equal(got["Z"], [-2, -4])


def test_strings_with_escapes_unicode_and_the_empty_string():
    text = ('P("a\\"b", "c\\\\d")\nQ("")\nQ("héllo ✓")\nQ("tab\there")\n'
            'P(x, y)?\nQ(x)?\nQ("héllo ✓")?')
    assert _tuples(text) == [[('a"b', "c\\d")], [("",), ("héllo ✓",), ("tab\there",)], [()]]


def test_another_backslash_in_a_string_is_kept_as_written(tmp_path):
    (tmp_path / "p.csv").write_text("a\\nb\n")  # the cell a\nb
    text = 'P(x) = "p.csv"\nQ("a\\nb")\nR(x) = P(x) Q(x)\nR(x)?'
    result = fuse_lang.compile(text, base_dir=tmp_path).execute()
    assert result.queries[0].tuples == [("a\\nb",)]


def test_a_string_and_a_number_are_different_constants():
    assert _tuples('P(1)\nP("1")\nP(Alice)\nP("Alice")\nP(x)?') == [[(1,), ("1",), ("Alice",)]]


def test_an_unterminated_string_is_reported_on_its_line():
    assert _codes('Y = "abc\nexport Y') == [
        ("unterminated-string", "this string has no closing '\"' on its line")]


# ------------------------------------------------------------------ §2 statements
def test_every_statement_form_in_one_program(tmp_path):
    np.save(tmp_path / "w.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    text = ("axis k = 2\n"
            "W[i,j] = \"w.npy\"\n"               # source
            "param B[k] = ones\n"                # param
            "Y[i] = W[i,j]\n"                    # equation
            "Y[i] += 1\n"                        # accumulate
            "M[j] max= W[i,j]\n"                 # projection op
            "N[j] avg= W[i,j]\n"
            "Parent(Alice, Bob)\n"               # facts
            "Parent(Bob, Carol)\n"
            "Anc(x, y) = Parent(x, y)\n"
            "Anc(x, z) = Anc(x, y) Parent(y, z)\n"
            "S = B[k]\n"
            "\"y.npy\" = Y[i]\n"                 # sink
            "Anc(Alice, x)?\n"                   # queries
            "Y?\n"
            "export Y, M, N, S\n")               # export
    result = fuse_lang.compile(text, base_dir=tmp_path).execute()
    np.testing.assert_array_equal(result.outputs["Y"], [4, 13])
    np.testing.assert_array_equal(result.outputs["M"], [3, 4, 5])
    np.testing.assert_array_equal(result.outputs["N"], [1.5, 2.5, 3.5])
    assert result.outputs["S"] == 2.0
    assert [q.tuples for q in result.queries] == [[("Bob",), ("Carol",)], None]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [4, 13])


def test_declarations_after_use(tmp_path):
    np.save(tmp_path / "w.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    text = ("export Y, Z, V\nY[i] = W[i,j]\nW[i,j] = \"w.npy\"\nZ[d] = 1\naxis d = 3\n"
            "V = A\nA = B\nB = 3\nR(x) = P(x)\nP(Ann)\nR(x)?")
    result = fuse_lang.compile(text, base_dir=tmp_path).execute()
    np.testing.assert_array_equal(result.outputs["Y"], [3, 12])
    np.testing.assert_array_equal(result.outputs["Z"], [1, 1, 1])
    assert result.outputs["V"] == 3.0
    assert result.queries[0].tuples == [("Ann",)]


def test_equal_axis_declarations_agree_and_different_ones_conflict():
    np.testing.assert_array_equal(_outputs("axis i = 2\naxis i = 2, j = 1\nY[i,j] = 1\n"
                                           "export Y")["Y"], [[1], [1]])
    assert _codes("axis i = 3\naxis i = 4\nY[i] = 1") == [
        ("extent-conflict", "axis `i` is declared 4 here but 3 before")]


def test_an_axis_declaration_conflicting_with_a_source_names_both(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros((2, 3), dtype=np.float32))
    [(code, message)] = _codes('axis j = 4\nW[i,j] = "w.npy"\nY[i] = W[i,j]', tmp_path)
    assert code == "extent-conflict"
    assert "(from axis j = 4)" in message and "(from the shape of w.npy)" in message


def test_a_second_source_for_one_tensor_is_refused(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros(3, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.ones(3, dtype=np.float32))
    (tmp_path / "r.csv").write_text("Ann,Bob\n")
    (tmp_path / "s.csv").write_text("Dan,Eve\n")
    for text, first in (('W[i] = "a.npy"\nW[i] = "b.npy"\nexport W', "a.npy"),
                        ('W[i] = "a.npy"\nW[i] = "a.npy"\nexport W', "a.npy"),
                        ('P(x,y) = "r.csv"\nP(x,y) = "s.csv"\nP(x,y)?', "r.csv")):
        [(code, message)] = _codes(text, tmp_path)
        assert code == "invalid-statement"
        assert message.startswith(f"`{text[0]}` already reads `{first}`; a tensor reads one file")
        with pytest.raises(fuse_lang.FuseError, match="invalid-statement"):
            fuse_lang.compile(text, base_dir=tmp_path)


def test_a_source_plus_facts_and_equations_still_combine(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3, dtype=np.float32))
    (tmp_path / "r.csv").write_text("Ann,Bob\n")
    got = _outputs('W[i] = "a.npy"\nW[i] += 1\nexport W', base_dir=tmp_path)
    np.testing.assert_array_equal(got["W"], [1, 2, 3])
    result = fuse_lang.compile('P(x,y) = "r.csv"\nP(Dan, Eve)\nP(x,y)?', base_dir=tmp_path)
    assert result.execute().queries[0].tuples == [("Ann", "Bob"), ("Dan", "Eve")]


def test_a_param_with_a_source_is_refused(tmp_path):
    np.save(tmp_path / "w.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    [(code, message)] = _codes('param W[i,j] = zeros\nW[i,j] = "w.npy"\nexport W', tmp_path)
    assert code == "invalid-statement"
    assert message.startswith("`W` is a param, so its values come from its initialiser")


def test_two_sinks_to_one_file_are_refused(tmp_path):
    text = 'A[i] = const([1,2])\n"o.npy" = A[i]\n"./o.npy" = 2 A[i]'
    [(code, message)] = _codes(text, tmp_path)
    assert (code, message) == ("sink-twice", "`./o.npy` is the file of an earlier sink too: "
                               "this one would replace it, and the earlier value would be lost; "
                               "give each sink a file of its own")
    with pytest.raises(fuse_lang.FuseError, match="sink-twice"):
        fuse_lang.compile(text, base_dir=tmp_path)
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize("text, message", [
    ('"" = 3', "the sink `` cannot be written: the path is empty; a sink writes .npy, .npz, "
               ".csv, .tsv, .facts, .json, .jsonl or .txt"),
    ('A[i] = ""', "the path is empty: it names the program's folder, not a file"),
])
def test_an_empty_path_is_said_plainly(tmp_path, text, message):
    assert [m for _, m in _codes(text, tmp_path)] == [message]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("text, expected", [
    ("Y(x) min= P(x)\nP(Alice)\nY(Bob)\nY(x)?", [("Alice",)]),   # the fact is Bob's only
    ("Y(x) min= P(x)\nP(Alice)\nP(Bob)\nY(Alice)\nY(x)?", [("Alice",), ("Bob",)]),
    ("Y(x) min= P(x)\nY(x) min= Q(x)\nP(Alice)\nP(Bob)\nQ(Bob)\nY(Cat)\nY(x)?", [("Bob",)]),
    ("Y(x) max= P(x)\nP(Alice)\nY(Cat)\nY(x)?", [("Alice",), ("Cat",)]),
])
def test_a_fact_writes_only_its_own_cell_of_a_min_relation(backend, text, expected):
    pytest.importorskip(backend)
    result = fuse_lang.compile(text, backend=backend).execute()
    assert result.queries[0].tuples == expected


@pytest.mark.parametrize("text, code", [
    ("export\nY = 3", "syntax-error"),
    ("export Y,\nY = 3", "syntax-error"),
    ("export Z\nY = 3", "undefined-tensor"),
    ("axis d = 2.5\nY[d] = 1", "invalid-statement"),
    ("axis d = 1e2\nY[d] = 1", "invalid-statement"),
    ("Y[i] = 1\nY[i] max= 2\naxis i = 2", "mixed-projection"),
    ("P(Alice, x)", "invalid-fact"),
    ("P(Alice)\nP[x] = Q(x)\nQ(Bob)", "kind-conflict"),
    ("T = 2\naxis T = 3\nY[T] = 1\nexport Y", "invalid-statement"),  # Y was [1], T a symbol
    ("axis i = 2\nparam W(i)\nexport W", "invalid-statement"),  # was a Boolean param of step(draws)
])
def test_malformed_statements_are_diagnosed(text, code):
    assert code in [c for c, _ in _codes(text)]


# ------------------------------------------------------------------ §8 extents, domains, types
def test_a_const_inside_an_expression_gives_the_lhs_axes_their_extents():
    np.testing.assert_array_equal(_outputs("D[i] = 2 const([1,2])\nexport D")["D"], [2, 4])
    np.testing.assert_array_equal(_outputs("D[i] = exp(const([0,0]))\nexport D")["D"], [1, 1])
    got = _outputs("A[i,j] = const([[1,2],[3,4]])\nD[i,j] = A[i,j] + const([[10,20],[30,40]])\n"
                   "export D")
    np.testing.assert_array_equal(got["D"], [[11, 22], [33, 44]])


@pytest.mark.parametrize("text, expected", [
    ("A[i] = const([1,2,3])\nT[i] = topk(A[i] + const([0,0,0]), k=2)\nexport T", [3, 2]),
    ("A[i] = const([1,2,3])\nC[i] = concat(A[i], A[i], axis=i) + const([1,1,1,1,1,1])\n"
     "export C", [2, 3, 4, 2, 3, 4]),
    ("W[0,h] = 2 const([[1,2,3]])\nexport W", [[2, 4, 6]]),
    ("M[q,k] = causal_mask(2) const([[1,2],[3,4]])\nexport M", [[1, 0], [3, 4]]),
])
def test_a_const_inside_an_expression_with_constants_and_shaping_calls(text, expected):
    [got] = _outputs(text).values()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("text, axes", [("S = 2 const([1,2])", "1 axis but the left-hand side "
                                         "has 0"),
                                        ("S[i] = 2 const([[1,2]])", "2 axes but the left-hand "
                                         "side has 1")])
def test_a_const_inside_an_expression_with_more_axes_than_the_lhs(text, axes):
    assert ("bad-argument", f"this literal has {axes} for them to bind to") in _codes(text)


@pytest.mark.parametrize("text", [
    "A[i] = const([1,2,3])\nD[i] = A[i] + const([1,2])",
    "A[i] = const([1,2,3])\nC[i] = A[i]\nD[i] = C[i] + const([1,2])",
    "A[i] = const([1,2,3])\nD[i] = A[i] + exp(const([1,2]))",
    "axis i = 3\nD[i] = 1 + const([1,2])",
    "D[i] = const([1,2]) + const([1,2,3])",
])
def test_a_const_inside_an_expression_that_disagrees_is_an_extent_conflict(text):
    diags = _codes(text + "\nexport D")
    assert [c for c, _ in diags] == ["extent-conflict"]
    with pytest.raises(fuse_lang.FuseError, match="extent-conflict"):
        fuse_lang.compile(text + "\nexport D")


def test_symbols_are_numbered_per_domain_in_order_of_first_appearance():
    got = _outputs("N(Bob)\nN(Alice)\nE[x] = const([10,20])\nF[x] = E[x] N(x)\n"
                   "S = F[Alice]\nT = F[Bob]\nexport S, T")
    assert (got["S"], got["T"]) == (20.0, 10.0)  # Bob is the domain's first symbol


def test_an_axis_declaration_smaller_than_a_domain_s_symbols_conflicts():
    [(code, message)] = _codes("axis x = 2\nP(Alice)\nP(Bob)\nP(Cat)\nP(x)?")
    assert code == "extent-conflict"
    assert "`Cat` is value number 3" in message
    got = _outputs("axis x = 3\nP(Alice)\nP(Bob)\nY[x] = P(x)\nexport Y")
    np.testing.assert_array_equal(got["Y"], [1, 1, 0])


@pytest.mark.parametrize("precision, dtype", [(None, np.float32), ("fp64", np.float64)])
def test_values_are_float32_by_default_and_float64_on_request(precision, dtype):
    kw = {} if precision is None else {"precision": precision}
    got = _outputs("P(Alice)\nB(x) = P(x)\nA[i] = const([1,2])\nY[i] = A[i] / 3\nexport Y, B",
                   **kw)
    assert got["Y"].dtype == dtype and got["B"].dtype == dtype
    np.testing.assert_array_equal(got["B"], [1.0])  # a Boolean tensor holds 0/1
    np.testing.assert_allclose(got["Y"], np.array([1, 2], dtype=dtype) / dtype(3))


def test_a_boolean_lhs_holds_the_step_of_a_numeric_rhs():
    got = _outputs("Y[i] = const([0.5, -1, 2])\nB(i) = Y[i]\nZ[i] = 3 B(i)\nexport Z")
    np.testing.assert_array_equal(got["Z"], [3, 0, 3])


# ------------------------------------------------------------------ §11 the paper's programs
PAPER = {
    "perceptron.fuse": "# perceptron: Y = 1\nW = const([0.2, 1.9, -0.7, 3])\n"
                       "X = const([0, 1, 1, 0])\nY = step(W[i] X[i])\n",
    "attention.fuse": 'X[p,d] = "x.npy"\nWQ[dk,d] = "wq.npy"\nWK[dk,d] = "wk.npy"\n'
                      'WV[dv,d] = "wv.npy"\nDk = const(8)\n'
                      "Query[p,dk] = WQ[dk,d] X[p,d]\nKey[p,dk]   = WK[dk,d] X[p,d]\n"
                      "Val[p,dv]   = WV[dv,d] X[p,d]\n"
                      "Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk))\n"
                      "Attn[p,dv]  = Comp[p,p'] Val[p',dv]\nexport Comp, Attn\n",
    "cnn.fuse": 'Image[x,y,ch] = "image.npy"\nFilter[dx,dy,ch] = "filter.npy"\n'
                "Features[x,y] = relu(Filter[dx,dy,ch] Image[x+dx,y+dy,ch])\n"
                "Pooled[x/2,y/2] = Features[x,y]\nexport Features, Pooled\n",
    "mlp.fuse": 'W[i,j,k] = "mlpw.npy"\nX[i,j] = sig(W[i,j,k] X[i-1,k])\nexport X\n',
    "rnn.fuse": 'W[i,j] = "rw.npy"\nV[i,j] = "rv.npy"\nU[j,t] = "ru.npy"\n'
                "X[i,*t+1] = sig(W[i,j] X[j,*t] + V[i,j] U[j,t])\nexport X\n",
    "emb.fuse": 'R(x,y) = "r.tsv"\nEmb[x,i] = "emb.npy"\nT = const(0.5)\n'
                "EmbR[i,j] = R(x,y) Emb[x,i] Emb[y,j]\n"
                "D[x,y]    = sig(EmbR[i,j] Emb[x,i] Emb[y,j], T)\nexport D\n",
}


def _sig(z):
    return 1 / (1 + np.exp(-z))


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    """The §11 programs with their data, and their answers computed in NumPy."""
    folder = tmp_path_factory.mktemp("paper")
    rng = np.random.default_rng(7)
    arrays = {"x": (5, 12), "wq": (8, 12), "wk": (8, 12), "wv": (3, 12), "image": (7, 6, 2),
              "filter": (3, 2, 2), "mlpw": (3, 4, 4), "rw": (4, 4), "rv": (4, 4), "ru": (4, 5),
              "emb": (4, 3)}
    a = {}
    for name, shape in arrays.items():
        a[name] = (rng.standard_normal(shape) * 0.5).astype(np.float32)
        np.save(folder / f"{name}.npy", a[name])
        a[name] = a[name].astype(np.float64)
    (folder / "r.tsv").write_text("Ann\tBob\nBob\tCat\nCat\tAnn\nDan\tBob\n")
    for name, text in PAPER.items():
        (folder / name).write_text(text)
    want = {"perceptron.fuse": {"Y": 1.0}}
    q, k, v = a["x"] @ a["wq"].T, a["x"] @ a["wk"].T, a["x"] @ a["wv"].T
    s = q @ k.T / np.sqrt(8)
    comp = np.exp(s - s.max(1, keepdims=True))
    comp /= comp.sum(1, keepdims=True)
    want["attention.fuse"] = {"Comp": comp, "Attn": comp @ v}
    padded = np.zeros((7 + 2, 6 + 1, 2))
    padded[:7, :6] = a["image"]
    features = np.array([[max(0.0, float((a["filter"] * padded[x:x + 3, y:y + 2]).sum()))
                          for y in range(6)] for x in range(7)])
    pooled = np.zeros((4, 3))
    for x in range(7):
        for y in range(6):
            pooled[x // 2, y // 2] += features[x, y]
    want["cnn.fuse"] = {"Features": features, "Pooled": pooled}
    layers, prev = [], np.zeros(4)  # X[i-1] is 0 before the first layer
    for i in range(3):
        prev = _sig(a["mlpw"][i] @ prev)
        layers.append(prev)
    want["mlp.fuse"] = {"X": np.array(layers)}
    h = np.zeros(4)
    for t in range(5):
        h = _sig(a["rw"] @ h + a["rv"] @ a["ru"][:, t])
    want["rnn.fuse"] = {"X": h}
    names = ["Ann", "Bob", "Cat", "Dan"]  # in order of first appearance in r.tsv
    r = np.zeros((4, 4))
    for x, y in [("Ann", "Bob"), ("Bob", "Cat"), ("Cat", "Ann"), ("Dan", "Bob")]:
        r[names.index(x), names.index(y)] = 1
    e = a["emb"]
    want["emb.fuse"] = {"D": _sig(e @ (e.T @ r @ e) @ e.T / 0.5)}
    return folder, want


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_the_paper_programs_compute_what_numpy_computes(paper, backend):
    pytest.importorskip(backend)
    folder, want = paper
    for name, expected in want.items():
        outputs = fuse_lang.load(folder / name, backend=backend).execute().outputs
        for tensor, value in expected.items():
            got = np.asarray(outputs[tensor], dtype=np.float64)
            assert got.shape == np.shape(value), (name, tensor)
            np.testing.assert_allclose(got, value, rtol=1e-4, atol=1e-5, err_msg=f"{name} {tensor}")


def _fuse(folder: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args], cwd=folder,
                          capture_output=True, text=True, encoding="utf-8", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out
    return out


def test_the_paper_programs_check_explain_and_run_clean(paper):
    folder, _ = paper
    out = _fuse(folder, "check", *PAPER)
    assert out.splitlines()[-1] == "6 files checked: 2 information"  # the two recurrences
    assert "recursion" in out and "error" not in out and "warning" not in out
    assert "Attn" in _fuse(folder, "explain", "attention.fuse")
    assert _fuse(folder, "run", "perceptron.fuse").split()[:2] == ["Y", "shape"]
