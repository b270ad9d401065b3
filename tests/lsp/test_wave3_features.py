"""The editor on the constructs of the latest wave (`fn`, `let`, `select`/`case`/
`when`, imports, negation, constants in relations, `param`/`train`), over stdio with
one server for the module: inside a function's definition hover, definition,
references and rename work on its parameters, locals and indices; a program tensor
a body reads is renamed there too; an index in a call's arguments is the call's;
hovers never show the names the lowering makes (`o@lib::head.1`, `g@let.1`,
`d@lib`, `__1`)."""
from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import SERVER, open_doc, start, wait_for_push
from .test_hover import at

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIB = """\
# an attention library
axis d = 4
fn head(x[p,d], wq[k,d], wk[k,d], wv[v,d]) -> o[p,v] {
  let q[p,k] = wq[k,d] x[p,d]
  kk[p,k] = wk[k,d] x[p,d]
  a[p,p'.] = softmax(q[p,k] kk[p',k] / sqrt(4))
  o[p,v] = a[p,p'] wv[v,d] x[p',d] Scale
}
Scale = 0.5
Emb[t,d] = const([[1,0,0,0],[0,1,0,0],[0,0,1,0]])
Bias[v] = const([0.1, 0.2])
W2[v,d] = const([[1,0,0,0],[0,1,0,0]])
Probe[t,v] = head(Emb[t,d], W2[v,d], W2[v,d], W2[v,d])
export Probe
"""

MAIN = """\
import "lib/attn.fuse" as lib
axis k = 2
param WQ[k,d], WK[k,d] = normal(0.1)
WV[v,d] = const([[1,0,0,0],[0,1,0,0]])
X[t,d] = lib::Emb[t,d]
H[t,v] = lib::head(X[t,d], WQ[k,d], WK[k,d], WV[v,d])
Y[t,v] = relu(H[t,v] + lib::Bias[v])
{
  let g[t] = Y[t,v]
  G[t] = select(g[t] > 0, g[t], -1)
}
C[t] = case {
  G[t] > 1 -> 1
  default -> 0
}
L[t] = X[t,d] when (d < t)
Loss = (Y[t,v] - 1)^2
train Loss
export Y, G, C, L
"""

RULES = """\
Person("ann")
Person("bob")
Person(Carl)
Age("ann", 31)
Age("bob", -4)
Likes("ann", "New York")
Adult(x) = Person(x) Age(x, a) (a >= 18)
Lonely(x) = Person(x) not Likes(x, _)
Minor(x) = Person(x) not Adult(x)
Lonely(x)?
export Adult, Minor
"""


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("wave3")
    (root / "lib").mkdir()
    (root / "lib" / "attn.fuse").write_text(LIB, encoding="utf-8")
    lsp_client.root = root
    await start(lsp_client, "visual-studio-code", root)
    yield lsp_client
    await lsp_client.shutdown_session()


async def opened(client, name: str, text: str) -> str:
    """The document open and checked (its diagnostics pushed)."""
    uri = open_doc(client, client.root / name, text)
    await wait_for_push(client, uri)
    return uri


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def hover_text(client, uri, text, needle, delta=0) -> str:
    result = await client.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=at(text, needle, delta)))
    assert result is not None, needle
    return result.contents.value


async def references(client, uri, text, needle, delta=0) -> list[tuple[str, int, int]]:
    found = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=at(text, needle, delta),
        context=types.ReferenceContext(include_declaration=True)))
    return sorted((r.uri.rsplit("/", 1)[1], r.range.start.line, r.range.start.character)
                  for r in found)


async def rename(client, uri, text, needle, new, delta=0, others=None) -> dict[str, str]:
    """The documents' texts after the rename's edits (`others`: the texts of the
    documents other than `uri`, by file name)."""
    edit = await client.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(text, needle, delta), new_name=new))
    assert edit is not None and edit.changes, needle
    out = {}
    for target, edits in edit.changes.items():
        name = target.rsplit("/", 1)[1]
        if target != uri and name not in (others or {}):
            continue  # (another document of the workspace, not looked at)
        lines = (text if target == uri else (others or {})[name]).split("\n")
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                        reverse=True):
            assert e.range.start.line == e.range.end.line
            line = lines[e.range.start.line]
            lines[e.range.start.line] = line[:e.range.start.character] + e.new_text + \
                line[e.range.end.character:]
        out[name] = "\n".join(lines)
    return out


async def test_inside_a_function_its_names_have_hover_references_and_rename(client):
    uri = await opened(client, "lib/attn.fuse", LIB)
    text = await hover_text(client, uri, LIB, "x[p,d], wq")
    assert "**parameter** 1 of `fn head`" in text and "x[p,d]" in text
    assert "shape (3, 2)" in await hover_text(client, uri, LIB, "kk[p,k] =")
    index = await hover_text(client, uri, LIB, "k] kk[p',k]")  # k of the scores: summed
    assert "extent 2" in index and "**projected**" in index
    assert "Softmax" in await hover_text(client, uri, LIB, "softmax")
    assert "**dense**" in await hover_text(client, uri, LIB, "Scale\n}")
    # the parameter `x`: its signature and its three reads in the body
    assert await references(client, uri, LIB, "x[p',d]") == [
        ("attn.fuse", 2, 8), ("attn.fuse", 3, 23), ("attn.fuse", 4, 20), ("attn.fuse", 6, 27)]
    where = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(LIB, "kk[p',k]")))
    assert [(w.range.start.line, w.range.start.character) for w in where] == [(4, 2)]
    renamed = (await rename(client, uri, LIB, "q[p,k] kk", "query"))["attn.fuse"]
    assert "let query[p,k] = wq[k,d] x[p,d]" in renamed
    assert "softmax(query[p,k] kk[p',k]" in renamed and "wq[k,d]" in renamed
    # an index is its equation's: renaming `p` of the local `kk` leaves the others
    renamed = (await rename(client, uri, LIB, "p,k] = wk", "r"))["attn.fuse"]
    assert "  kk[r,k] = wk[k,d] x[r,d]\n" in renamed
    assert "let q[p,k] = wq[k,d] x[p,d]" in renamed and "x[p,d], wq" in renamed


async def test_a_program_tensor_a_body_reads_is_renamed_there_too(client):
    uri = await opened(client, "lib/attn.fuse", LIB)
    renamed = (await rename(client, uri, LIB, "Scale = 0.5", "Factor"))["attn.fuse"]
    assert "x[p',d] Factor\n" in renamed and "Factor = 0.5" in renamed
    assert ("attn.fuse", 6, 35) in await references(client, uri, LIB, "Scale = 0.5")


async def test_an_index_of_a_call_s_arguments_is_the_call_s(client):
    uri = await opened(client, "main.fuse", MAIN)
    text = await hover_text(client, uri, MAIN, "d], WQ")
    assert "extent 4" in text and "@" not in text and "Projection" not in text
    assert await references(client, uri, MAIN, "d], WQ") == [
        ("main.fuse", 5, 23), ("main.fuse", 5, 32), ("main.fuse", 5, 41), ("main.fuse", 5, 50)]


async def test_hovers_show_names_as_written(client):
    uri = await opened(client, "main.fuse", MAIN)
    emb = await hover_text(client, uri, MAIN, "lib::Emb")
    assert "lib::Emb[t:3, d:4]" in emb and "`d`" in emb
    assert "read from lib::head(…)" in await hover_text(client, uri, MAIN, "t,v] = lib::head")
    local = await hover_text(client, uri, MAIN, "t] = select")
    assert "read from g" in local and "@" not in local
    for needle in ("= select(g[t]", "= lib::head(", "= Y[t,v]\n"):  # the projections
        text = await hover_text(client, uri, MAIN, needle)
        assert text.startswith("**Projection**") and "@" not in text, (needle, text)
    rules = await opened(client, "rules.fuse", RULES)
    wildcard = await hover_text(client, rules, RULES, "_)")
    assert wildcard.startswith("```fuse\n_\n```") and "__" not in wildcard


async def signature(client, uri, text, needle, delta=0):
    return await client.text_document_signature_help_async(types.SignatureHelpParams(
        text_document=doc(uri), position=at(text, needle, delta)))


async def test_signature_help_for_a_function_of_the_program_and_of_a_library(client):
    text = MAIN.replace("Loss = ", "Q[t,v] = lib::head(X[t,d], WQ[k,d], \nLoss = ")
    uri = await opened(client, "sig.fuse", text)
    found = await signature(client, uri, text, "WQ[k,d], \n", 9)
    (info,) = found.signatures
    assert info.label == "fn lib::head(x[p,d], wq[k,d], wk[k,d], wv[v,d]) -> o[p,v]"
    assert [p.label for p in info.parameters] == ["x[p,d]", "wq[k,d]", "wk[k,d]", "wv[v,d]"]
    assert found.active_parameter == 2
    own = "fn add(a, b) -> c {\n  c = a + b\n}\nA = 1\nY = add(A, )\n"
    uri = await opened(client, "add.fuse", own)
    found = await signature(client, uri, own, "add(A, )", 7)
    (info,) = found.signatures
    assert info.label == "fn add(a, b) -> c" and found.active_parameter == 1
    # `a` is found first in `add`: the parameters are given as offsets in the label
    assert [p.label for p in info.parameters] == [(7, 8), "b"]


async def test_completion_offers_functions_and_inside_a_body_its_names(client):
    text = LIB.replace("  o[p,v] = a", "  z[p] = \n  o[p,v] = a")  # (being typed)
    uri = await opened(client, "lib/typing.fuse", text)
    found = await client.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=at(text, "z[p] = ", 7)))
    items = {item.label: item.detail for item in found.items}
    assert items["x"] == "parameter of fn head" and items["wv"] == "parameter of fn head"
    assert items["kk"] == "local of fn head" and items["q"] == "local of fn head"
    assert items["o"] == "the result of fn head"
    text = LIB + "Z[t,v] = he\n"
    uri = await opened(client, "lib/typing2.fuse", text)
    found = await client.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=at(text, "= he", 4)))
    items = {item.label: item for item in found.items}
    assert items["head"].kind == types.CompletionItemKind.Function
    assert items["head"].detail == "fn head(x[p,d], wq[k,d], wk[k,d], wv[v,d]) -> o[p,v]"
    assert "x" not in items and "kk" not in items  # (outside the body)


async def test_semantic_tokens_of_the_new_keywords(client):
    from fuse_lang.ide.semantic_tokens import TOKEN_TYPES
    uri = await opened(client, "main.fuse", MAIN)
    tokens = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    lines, line, column, kinds = MAIN.split("\n"), 0, 0, {}
    data = tokens.data
    for k in range(0, len(data), 5):
        line += data[k]
        column = data[k + 1] if data[k] else column + data[k + 1]
        kinds[lines[line][column:column + data[k + 2]]] = TOKEN_TYPES[data[k + 3]]
    for word in ("train", "case", "when", "default", "let", "import", "as", "param"):
        assert kinds.get(word) == "keyword", (word, kinds.get(word))
    assert kinds["lib::head"] == "function" and kinds["select"] == "function"


async def test_a_mistake_in_an_imported_function_s_body_points_at_its_line(client):
    bad = LIB.replace("kk[p,k] = wk[k,d] x[p,d]", "kk[p,k] = wk[k,d] y[p,d]")
    (client.root / "lib" / "bad.fuse").write_text(bad, encoding="utf-8")
    text = MAIN.replace("lib/attn.fuse", "lib/bad.fuse")
    uri = open_doc(client, client.root / "bad_main.fuse", text)
    (diag,) = [d for d in await wait_for_push(client, uri) if d.code == "undefined-tensor"]
    assert diag.range.start.line == 5  # the call
    (related,) = diag.related_information
    assert related.location.uri.endswith("lib/bad.fuse")
    assert related.location.range.start.line == 4  # kk[p,k] = wk[k,d] y[p,d]


async def test_renaming_a_library_function_in_the_library_edits_its_importers(client):
    await opened(client, "main.fuse", MAIN)
    uri = await opened(client, "lib/attn.fuse", LIB)
    texts = await rename(client, uri, LIB, "head(x", "attend", others={"main.fuse": MAIN})
    assert "fn attend(x[p,d]" in texts["attn.fuse"]
    assert "Probe[t,v] = attend(Emb[t,d]" in texts["attn.fuse"]
    assert "H[t,v] = lib::attend(X[t,d]" in texts["main.fuse"]
    assert ("main.fuse", 5, 9) in await references(client, uri, LIB, "head(x")


async def test_the_outline_lists_the_functions(client):
    uri = await opened(client, "lib/attn.fuse", LIB)
    groups = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(uri)))
    assert groups[0].name == "functions" and groups[0].detail == "1 function"
    (head,) = groups[0].children
    assert (head.name, head.kind) == ("head", types.SymbolKind.Function)
    assert head.detail == "(x[p,d], wq[k,d], wk[k,d], wv[v,d]) -> o[p,v]"
    assert (head.selection_range.start.line, head.range.end.line) == (2, 7)


async def test_hover_on_a_constant_of_a_relation(client):
    uri = await opened(client, "rules.fuse", RULES)
    text = await hover_text(client, uri, RULES, '"New York"')
    assert text.startswith('```fuse\n"New York"\n```') and "value 0 of 1 in column 1" in text
    assert "value 0 of 2 in column 1 of `Age`" in await hover_text(client, uri, RULES, "-4")
    assert "```fuse\nCarl\n```" in await hover_text(client, uri, RULES, "Carl")


async def test_a_quoted_constant_in_a_comparison_is_a_value_not_a_file_path(client):
    """`(x != "bob")` compares with the symbol "bob" (LANGUAGE.md §14): it was
    refused as 'a file path can only stand alone ...'."""
    text = RULES.replace("(a >= 18)", '(x != "bob")')
    uri = open_doc(client, client.root / "compare.fuse", text)
    diags = await wait_for_push(client, uri)
    assert not [d for d in diags if d.code == "invalid-statement" or "file path" in d.message]


async def test_a_diagnostic_about_a_call_s_local_names_it_as_written(client):
    text = ("fn f(a[i]) -> c[i] {\n  t[i] = a[i] a[i]\n  u[i] = a[i]\n  c[i] = t[i]\n}\n"
            "A = const([1,2])\nY[i] = f(A[i])\nexport Y\n")
    uri = open_doc(client, client.root / "unused_local.fuse", text)
    (diag,) = await wait_for_push(client, uri)
    assert diag.code == "unused-tensor" and diag.message.startswith("`u` is never read")
    assert diag.range.start.line == 6
    (related,) = diag.related_information
    assert (related.location.range.start.line, related.message) == (
        2, "in `fn f`, inlined at this call")


async def test_a_name_nothing_defines_in_a_function_no_line_calls(client):
    text = LIB.replace("x[p',d] Scale", "x[p',d] Scael").replace(
        "Probe[t,v] = head(Emb[t,d], W2[v,d], W2[v,d], W2[v,d])\nexport Probe\n", "")
    uri = open_doc(client, client.root / "lib" / "uncalled.fuse", text)
    (diag,) = [d for d in await wait_for_push(client, uri) if d.code == "undefined-tensor"]
    assert diag.range.start == at(text, "Scael")
    assert "did you mean `Scale`" in diag.message and "no line of this file calls" in diag.message


async def test_a_likely_typo_of_an_index_in_a_body_is_told_there_once(client):
    text = ("fn f(a[k,d], w[k,d]) -> c[k] {\n  c[k] = w[k,d] a[k,dd]\n}\n"
            "A = const([[1,2]])\nY[k] = f(A[k,d], A[k,d])\nZ[k] = f(A[k,d], A[k,d])\n"
            "export Y, Z\n")
    uri = open_doc(client, client.root / "typo.fuse", text)
    (diag,) = [d for d in await wait_for_push(client, uri) if d.code == "likely-typo-index"]
    assert diag.range.start == at(text, "dd]")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc(uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    (edit,) = [e for a in actions if getattr(a, "edit", None) for e in a.edit.changes[uri]]
    assert (edit.range, edit.new_text) == (diag.range, "d")


async def test_an_import_s_alias_has_a_hover_and_a_definition(client):
    uri = await opened(client, "main.fuse", MAIN)
    text = await hover_text(client, uri, MAIN, "as lib", 3)
    assert 'import "lib/attn.fuse" as lib' in text and "`head`" in text and "`Emb`" in text
    where = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc(uri), position=at(MAIN, "as lib", 3)))
    assert [w.uri.rsplit("/", 2)[1:] for w in where] == [["lib", "attn.fuse"]]


async def test_the_fix_of_an_unsafe_negation_writes_the_wildcard(client):
    text = RULES.replace("not Likes(x, _)", "not Likes(x, y)")
    uri = open_doc(client, client.root / "unsafe.fuse", text)
    (diag,) = [d for d in await wait_for_push(client, uri) if d.code == "unsafe-negation"]
    assert diag.range.start == at(text, "y)\nMinor")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc(uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    (edit,) = [e for a in actions if getattr(a, "edit", None) for e in a.edit.changes[uri]]
    assert (edit.range, edit.new_text) == (diag.range, "_")


async def test_completion_after_a_semicolon_between_case_arms_is_an_expression_s(client):
    text = MAIN.replace("Loss = ", "K[t] = case { G[t] > 1 -> 1; \nLoss = ")
    uri = await opened(client, "case.fuse", text)
    found = await client.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=at(text, "-> 1; \n", 6)))
    labels = {item.label for item in found.items}
    assert {"G", "relu", "select"} <= labels and not labels & {"export", "param", "fn"}


async def test_workspace_symbols_hold_the_functions(client):
    await opened(client, "lib/attn.fuse", LIB)
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="head"))
    (head,) = [s for s in found if s.location.uri.endswith("lib/attn.fuse")]
    assert (head.name, head.kind, head.location.range.start) == (
        "head", types.SymbolKind.Function, at(LIB, "head(x"))


async def test_a_function_being_typed_does_not_make_its_calls_unknown(client):
    text = LIB.replace("  o[p,v] = a", "  z[p] = \n  o[p,v] = a")  # (being typed)
    uri = open_doc(client, client.root / "lib" / "typing3.fuse", text)
    diags = await wait_for_push(client, uri)
    assert [d.code for d in diags if d.severity == types.DiagnosticSeverity.Error] == [
        "syntax-error"], [(d.code, d.message) for d in diags]


async def test_the_names_of_an_import_that_is_not_found_are_not_said_unknown(client):
    text = MAIN.replace("lib/attn.fuse", "lib/missing.fuse")
    uri = open_doc(client, client.root / "missing.fuse", text)
    diags = await wait_for_push(client, uri)
    assert [d.code for d in diags if d.severity == types.DiagnosticSeverity.Error] == [
        "import-not-found"], [(d.code, d.message) for d in diags]


async def test_completion_in_a_body_reads_a_signature_over_two_lines_and_case_arms(client):
    text = ("fn mix(a[i], b[i],\n       w[i]) -> c[i] {\n  t[i] = case {\n    A[i] > 1 -> a[i]"
            "\n    default -> b[i]\n  }\n  c[i] = \n}\n"
            "A = const([1,2])\nY[i] = mix(A[i], A[i], A[i])\nexport Y\n")
    uri = await opened(client, "two_lines.fuse", text)
    found = await client.text_document_completion_async(types.CompletionParams(
        text_document=doc(uri), position=at(text, "c[i] = \n", 7)))
    items = {item.label: item.detail for item in found.items}
    assert items["w"] == "parameter of fn mix" and items["a"] == "parameter of fn mix"
    assert items["t"] == "local of fn mix" and items["A"] == "dense [2]"  # (not a case arm's)
