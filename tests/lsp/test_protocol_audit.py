"""What an audit of the server against LSP 3.17 found, over stdio: each test is
one wrong answer (or a traceback in the server's log) as it was found, made
small."""
from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

import fuse_lang

from .conftest import SERVER, open_doc, wait_for_push
from .lsp_text import apply
from .test_commands import until
from .test_hover import at


def doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


def renamed(text: str, uri: str, edit: types.WorkspaceEdit) -> str:
    """`text` with the rename's edits of `uri` applied (as an editor does: all at once,
    from the last to the first; LSP forbids overlapping edits)."""
    edits = sorted(edit.changes[uri], key=lambda e: (e.range.start.line,
                                                      e.range.start.character))
    for before, after in zip(edits, edits[1:]):
        assert (before.range.end.line, before.range.end.character) <= \
            (after.range.start.line, after.range.start.character), "overlapping edits"
    for e in reversed(edits):
        text = apply(text, e.range, e.new_text, "utf-16")
    return text


def values(text: str) -> dict:
    return {name: value.tolist() for name, value in
            fuse_lang.compile(text).execute().outputs.items()}


DOTTED = """\
X[p,q] = const([[1, 2], [3, 5]])
S[p.,q] = softmax(X[p,q])
export S
"""


async def test_a_dotted_index_is_renamed_without_its_dot(vscode, tmp_path):
    """`S[p.,q]`: the dot marks the axis softmax normalises; it is no part of the
    name.  The rename replaced `p.` by `r` (softmax then ran along q, silently)."""
    uri = open_doc(vscode, tmp_path / "d.fuse", DOTTED)
    position = at(DOTTED, "p.,q")
    prepared = await vscode.text_document_prepare_rename_async(types.PrepareRenameParams(
        text_document=doc(uri), position=position))
    assert (prepared.range.start.character, prepared.range.end.character) == (2, 3)
    highlights = await vscode.text_document_document_highlight_async(
        types.DocumentHighlightParams(text_document=doc(uri), position=position))
    assert sorted((h.range.start.character, h.range.end.character)
                  for h in highlights) == [(2, 3), (20, 21)]
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=position, new_name="r"))
    new = renamed(DOTTED, uri, edit)
    assert new.splitlines()[1] == "S[r.,q] = softmax(X[r,q])"
    assert values(new) == values(DOTTED)


KEYWORD = """\
E[c,d] = const([[1, 2], [3, 4], [5, 6]])
X[n] = const([0, 2])
Y[n,d] = gather(E[c,d], X[n], axis=c)
export Y
"""


async def test_an_index_given_as_a_keyword_argument_is_one_place(vscode, tmp_path):
    """`axis=c` was listed twice among `c`'s places: two highlights, and a rename with
    two edits of one range, which LSP forbids (VS Code refuses the whole edit)."""
    uri = open_doc(vscode, tmp_path / "k.fuse", KEYWORD)
    position = at(KEYWORD, "E[c,d], X", 2)
    highlights = await vscode.text_document_document_highlight_async(
        types.DocumentHighlightParams(text_document=doc(uri), position=position))
    assert sorted((h.range.start.line, h.range.start.character)
                  for h in highlights) == [(2, 18), (2, 35)]
    references = await vscode.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=position,
        context=types.ReferenceContext(include_declaration=True)))
    assert len(references) == 2
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=position, new_name="tok"))
    new = renamed(KEYWORD, uri, edit)
    assert new.splitlines()[2] == "Y[n,d] = gather(E[tok,d], X[n], axis=tok)"
    assert values(new) == values(KEYWORD)


FN = """\
A[i] = const([1, 2, 3])
B[i] = const([4, 5, 6])
fn f(x[i,j], w[i]) -> y[i] {
  y[i] = x[i,j] w[i] + A[i]
}
M[i,j] = const([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
Y[i] = f(M[i,j], B[i])
export Y
"""

BLOCK = """\
A[i] = const([1, 2, 3])
{
  let h[i] = 2 A[i]
  let g[i] = 3 A[i]
  D[i] = h[i] + g[i]
}
Y[i] = i + A[i]
export D, Y
"""


REFUSED = [
    # in a `fn`'s definition: its own names, the program's it reads, its indices
    (FN, "x[i,j], w", "w", "`w` is already a tensor of `fn f`"),
    (FN, "x[i,j], w", "y", "`y` is already a tensor of `fn f`"),
    (FN, "x[i,j], w", "A", "`A` is already a tensor its body reads"),
    (FN, "i] = x[i,j]", "j", "`j` is already an index of this equation"),
    (FN, "i,j], w", "j", "`j` is already an index of this equation"),
    (FN, "i] = x[i,j]", "x", "`x` is a tensor"),
    (FN, "A[i] = c", "x", "`fn f` reads `A` and has a tensor of its own named `x`"),
    # `let` locals: of one block, and a program tensor renamed as one
    (BLOCK, "h[i] =", "g", "`g` is already a local tensor (`let`)"),
    (BLOCK, "D[i]", "h", "`h` is already a local tensor (`let`)"),
    # a bare index read as its value would read the tensor
    (BLOCK, "A[i] = c", "i", "`i` is read as an index's value"),
    # an index has no namespace (the edits wrote `Y[ns::k]`, which does not parse)
    (BLOCK, "i] = i +", "ns::k", "only an imported file's tensor or function"),
]

DONE = [
    (FN, "x[i,j], w", "z"),
    (FN, "i] = x[i,j]", "k"),
    (FN, "A[i] = c", "Base"),
    (BLOCK, "h[i] =", "twice"),
    (BLOCK, "i] = i +", "k"),
]


async def test_a_rename_that_would_merge_names_is_refused(vscode, tmp_path):
    """Each rename was answered with edits that broke the program or changed its
    values silently (`y[i] = x[i,j]` renamed `y[j] = x[j,j]`: other numbers)."""
    uris = {FN: open_doc(vscode, tmp_path / "f.fuse", FN),
            BLOCK: open_doc(vscode, tmp_path / "b.fuse", BLOCK)}
    for text, where, new, why in REFUSED:
        with pytest.raises(JsonRpcException) as raised:
            await vscode.text_document_rename_async(types.RenameParams(
                text_document=doc(uris[text]), position=at(text, where), new_name=new))
        assert why in str(raised.value), (where, new)
    for text, where, new in DONE:  # while these keep the program's meaning
        edit = await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(uris[text]), position=at(text, where), new_name=new))
        new_text = renamed(text, uris[text], edit)
        assert not [d for d in fuse_lang.analyze(new_text).diagnostics
                    if d.severity is fuse_lang.Severity.ERROR], (where, new)
        assert values(new_text) == values(text), (where, new)


def errors_logged(client) -> list[str]:
    return [m.message for m in client.log_messages if m.type == types.MessageType.Error]


async def test_a_document_that_is_not_open_and_has_no_file_answers_empty(vscode, tmp_path):
    """A closed document whose file is gone, and an `untitled:` one never opened: every
    request logged a FileNotFoundError traceback as an error in the client's log (and
    `fuse.explain` answered InternalError with the traceback, `fuse.run` "internal
    error")."""
    path = tmp_path / "gone.fuse"
    uri = open_doc(vscode, path, GONE)
    vscode.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(uri)))
    path.unlink()
    for target in (uri, "untitled:Untitled-1"):
        position = types.Position(line=1, character=7)
        assert await vscode.text_document_hover_async(types.HoverParams(
            text_document=doc(target), position=position)) is None
        assert await vscode.text_document_definition_async(types.DefinitionParams(
            text_document=doc(target), position=position)) in ([], (), None)
        assert not await vscode.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=doc(target)))
        tokens = await vscode.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(text_document=doc(target)))
        assert not tokens.data
        assert await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(target), position=position, new_name="Z")) is None
    with pytest.raises(JsonRpcException) as raised:
        await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fuse.explain", arguments=[uri]))
    assert isinstance(raised.value, JsonRpcInvalidParams)
    assert "cannot be read" in str(raised.value)
    ran = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fuse.run", arguments=[uri]))
    assert ran["ok"] is False and "cannot be read" in ran["error"]
    assert "internal error" not in ran["error"]
    assert errors_logged(vscode) == []


GONE = "A[i] = const([1, 2])\nB[i] = A[i]\nexport B\n"
LIB = "T[n] = const([1, 2, 3])\n"
MAIN = 'import "lib.fuse" as ns\nU[n] = ns::T[n] + 1\nexport U\n'


async def test_a_closed_importer_gets_no_diagnostics_pushed(vscode, tmp_path):
    """After didClose the server clears the document's diagnostics; once any request
    had read the closed document again (a hover), an edit of the file it imports
    pushed its diagnostics anew: problems shown for a closed file, never cleared."""
    lib = open_doc(vscode, tmp_path / "lib.fuse", LIB)
    main = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    await wait_for_push(vscode, main)
    vscode.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(main)))
    assert await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(main), position=at(MAIN, "U[n]"))) is not None
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=lib, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="Q[n] = const([1, 2, 3])\nR = Zz\n")]))  # T gone; an error of its own
    await until(lambda: vscode.diagnostics.get(lib))
    # a round trip: a push of the importer, due with the library's, is out before it
    await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(lib), position=types.Position(line=0, character=0)))
    assert not vscode.diagnostics[main]
    assert errors_logged(vscode) == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def refreshing(lsp_client: LanguageClient, tmp_path):
    """Neovim 0.11's capabilities (pull diagnostics), able to pull again when asked."""
    capabilities = client_capabilities("neovim@v0.11.0")
    capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(
        refresh_support=True)
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    lsp_client.capabilities_given = result.capabilities
    yield lsp_client
    await lsp_client.shutdown_session()


async def pulled(client, uri) -> list[str]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=doc(uri)))
    return [d.code for d in report.items]


async def test_a_pull_client_is_asked_to_pull_again_when_an_import_changes(refreshing,
                                                                          tmp_path):
    """A pull client asks for a document's diagnostics when that document changes;
    an edit of a file it imports changes them too, but the server said it had no
    inter-file dependencies and never asked the client to pull again: the
    importer's diagnostics stayed stale until it was edited itself."""
    assert refreshing.capabilities_given.diagnostic_provider.inter_file_dependencies
    lib = open_doc(refreshing, tmp_path / "lib.fuse", LIB)
    main = open_doc(refreshing, tmp_path / "main.fuse", MAIN)
    assert await pulled(refreshing, main) == []
    refreshing.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=lib, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="Q[n] = const([1, 2, 3])\n")]))
    await until(lambda: refreshing.diagnostic_refresh_count)
    assert await pulled(refreshing, main) == ["undefined-tensor"]


async def test_signature_help_names_the_active_parameter_on_the_signature(vscode, tmp_path):
    """Each signature's `activeParameter` went out as null: not a uinteger, as LSP
    3.17 wants it there, and "no parameter active" to a 3.18 client."""
    text = "A[i] = const([1, 2])\nB[i] = sig(A[i], 2)\nexport B\n"
    uri = open_doc(vscode, tmp_path / "s.fuse", text)
    for where, active in (("A[i], 2", 0), ("2)", 1)):
        found = await vscode.text_document_signature_help_async(types.SignatureHelpParams(
            text_document=doc(uri), position=at(text, where)))
        assert found.active_parameter == active
        assert [s.active_parameter for s in found.signatures] == [active]


async def test_a_related_place_in_an_imported_file_counts_utf16_units(vscode, tmp_path):
    """The related place of an error in an imported file had its columns in
    characters: after a character outside the BMP (two UTF-16 units) it pointed one
    unit early, at ` Z` of `Zz`."""
    library = 'P("😀é"); T[n] = const([1, 2, 3]); R = Zz\n'
    (tmp_path / "lib.fuse").write_text(library, encoding="utf-8")
    uri = open_doc(vscode, tmp_path / "main.fuse", MAIN)
    (error,) = [d for d in await wait_for_push(vscode, uri) if d.code == "import-error"]
    place = error.related_information[0].location
    assert place.uri == (tmp_path / "lib.fuse").as_uri()
    rest = apply(library, types.Range(start=types.Position(line=0, character=0),
                                      end=place.range.start), "", "utf-16")
    assert rest.startswith("Zz\n")
    assert place.range.end.character - place.range.start.character == 2


async def test_no_quick_fix_that_leaves_an_error(vscode, tmp_path):
    """`parent(ann, bob).` was offered "Write it the Fuse way: `parent(ann, bob)`",
    which is an invalid fact (lowercase names are variables): the fix traded one
    error for another.  Datalog's uppercase constants keep their fix."""
    for text, fixed in (("parent(ann, bob).\n", None),
                        ("Parent(Ann, Bob).\n", "Parent(Ann, Bob)\n")):
        path = tmp_path / "f.fuse"
        uri = open_doc(vscode, path, text)
        actions = await vscode.text_document_code_action_async(types.CodeActionParams(
            text_document=doc(uri), range=types.Range(
                start=types.Position(line=0, character=0),
                end=types.Position(line=0, character=len(text) - 1)),
            context=types.CodeActionContext(diagnostics=[], only=["quickfix"])))
        results = [renamed(text, uri, action.edit) for action in actions]
        assert results == ([] if fixed is None else [fixed])
        for result in results:
            assert fuse_lang.analyze(result).diagnostics == ()
        vscode.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(uri)))


LONE = '# half a pair: \ud83d\nA[i] = const([1, 2])  # \udc00\nB[i] = A[i]\nexport B\n'


async def test_a_lone_surrogate_in_the_text_breaks_no_answer(vscode, utf8, tmp_path):
    """JSON lets a client send half a surrogate pair (`"\\ud83d"`); every answer with
    a position on such a document failed (UnicodeEncodeError counting code units):
    no diagnostics, no semantic tokens, no symbols, an error in the log each time.
    Both encodings: UTF-16 (VS Code) and UTF-8 (Neovim, pull diagnostics)."""
    await lone_surrogate_answers(vscode, tmp_path, pull=False)
    await lone_surrogate_answers(utf8, tmp_path, pull=True)


async def lone_surrogate_answers(lsp, tmp_path, pull: bool) -> None:
    uri = (tmp_path / "lone.fuse").as_uri()
    lsp.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="fuse", version=1,
                                             text=LONE)))
    if not pull:
        assert [d.code for d in await wait_for_push(lsp, uri)] == []
    else:
        report = await lsp.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=doc(uri)))
        assert not report.items
    tokens = await lsp.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    assert len(tokens.data) > 5 * 5
    symbols = await lsp.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(uri)))
    assert symbols
    hints = await lsp.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=doc(uri), range=types.Range(start=types.Position(line=0, character=0),
                                                  end=types.Position(line=4, character=0))))
    # after `A[i]` on line 1: the same column in every encoding (ASCII before it)
    assert [(h.position.line, h.position.character) for h in hints] == [(1, 4), (2, 4)]
    assert errors_logged(lsp) == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def plain(lsp_client: LanguageClient, tmp_path):
    """A client that shows hovers as plain text only (`hover.contentFormat`)."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.hover = types.HoverClientCapabilities(
        content_format=[types.MarkupKind.PlainText])
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_hover_is_plain_text_for_a_client_without_markdown(plain, tmp_path):
    """The hover was Markdown whatever the client said it shows."""
    uri = open_doc(plain, tmp_path / "h.fuse", GONE)
    found = await plain.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=types.Position(line=0, character=0)))
    assert found.contents.kind == types.MarkupKind.PlainText
    assert "shape `(2,)`" in found.contents.value


BLOCKS = """\
A[i] = const([1, 2])
{
  let h[i] = 2 A[i]
  D[i] = h[i] + 1
}
{ let g[i] = 3 A[i]; E[i] = g[i] }
let f[i] = 4 A[i]
F[i] = f[i]
C[i] = A[i]
export C, D, E, F
"""


async def test_run_lens_on_a_program_with_let_blocks(vscode, tmp_path):
    """The "Run" lens above `C` sends `fuse.run` with target C: the program cut to
    C's cone kept each left-out local's `let` alone on its line, and the run failed
    with "unexpected '\\n'; expected a name" (`fuse run --target C` too)."""
    uri = open_doc(vscode, tmp_path / "b.fuse", BLOCKS)
    lenses = await vscode.text_document_code_lens_async(types.CodeLensParams(
        text_document=doc(uri)))
    runs = [lens.command.arguments for lens in lenses if lens.command.title == "Run"]
    assert [arguments[1]["target"] for arguments in runs] == [["C", "D", "E", "F"]]
    for target, value in (("C", [1, 2]), ("D", [3, 5]), ("E", [3, 6]), ("F", [4, 8])):
        ran = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fuse.run", arguments=[uri, {"target": target}]))
        assert ran["ok"], ran
        assert ran["outputs"][target]["preview"] == value


TWO = """\
T[n] = const([1, 2, 3])
S[n] = const([4, 5, 6])
fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }
fn tri(x[i]) -> y[i] { y[i] = 3 x[i] }
"""
IMPORTER = """\
import "lib.fuse" as ns
U[n] = ns::T[n] + ns::S[n]
V[n] = ns::dbl(U[n]) + ns::tri(U[n])
export U, V
"""


async def test_an_imported_name_is_renamed_among_its_own_files_names(vscode, tmp_path):
    """From the importer, `ns::T` renamed `S` (the library's other tensor) or `ns::dbl`
    renamed `tri` was done, merging the two in the library; `ns::T` renamed `U`
    (the importer's own tensor: no clash, it stays `ns::U` there) was refused."""
    (tmp_path / "lib.fuse").write_text(TWO, encoding="utf-8")
    uri = open_doc(vscode, tmp_path / "main.fuse", IMPORTER)
    for where, new in (("T[n] +", "S"), ("dbl(", "tri")):
        with pytest.raises(JsonRpcException) as raised:
            await vscode.text_document_rename_async(types.RenameParams(
                text_document=doc(uri), position=at(IMPORTER, where), new_name=new))
        assert f"`{new}` is already defined" in str(raised.value)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=at(IMPORTER, "T[n] +"), new_name="U"))
    library = renamed(TWO, (tmp_path / "lib.fuse").as_uri(), edit)
    assert library.splitlines()[0] == "U[n] = const([1, 2, 3])"
    assert renamed(IMPORTER, uri, edit).splitlines()[1] == "U[n] = ns::U[n] + ns::S[n]"


WILD = """\
E(Ann, Bob)
E(Bob, Ann)
E(Bob, Cy)
N(x) = E(x, _)
Lonely(x) = N(x) not E(_, x)
export Lonely
"""


async def test_the_wildcard_is_no_name_to_rename(vscode, tmp_path):
    """prepareRename on `_` offered the placeholder `__1` (the lowering's name), and
    the rename made it a variable: `not E(zq, x)` is then unsafe.  Renaming a
    variable to `_` made each of its places a wildcard of its own."""
    uri = open_doc(vscode, tmp_path / "w.fuse", WILD)
    for where in ("_)", "_, x)"):
        position = at(WILD, where)
        assert await vscode.text_document_prepare_rename_async(types.PrepareRenameParams(
            text_document=doc(uri), position=position)) is None
        assert await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(uri), position=position, new_name="zq")) is None
    with pytest.raises(JsonRpcException) as raised:
        await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(uri), position=at(WILD, "x) = N"), new_name="_"))
    assert "`_` is the wildcard" in str(raised.value)


async def test_completion_offers_no_name_of_the_lowering(vscode, tmp_path):
    """After `axis ` completion offered `i@dbl.1` (a `fn` call's index, named apart by
    the inlining), and inside `N(` the wildcard's `__1`: names no program writes."""
    text = FN + WILD
    uri = open_doc(vscode, tmp_path / "c.fuse", text)
    for where, delta in (("export Y", 0), ("N(x) =", 2), ("Lonely(x)", 7)):
        found = await vscode.text_document_completion_async(types.CompletionParams(
            text_document=doc(uri), position=at(text, where, delta)))
        labels = [item.label for item in found.items]
        assert labels and not [label for label in labels
                               if "@" in label or label.startswith("__")], (where, labels)


async def test_a_document_opened_again_shows_no_values_of_its_last_run(vscode, tmp_path):
    """A run's values stayed with a closed document; opened again (its versions start
    again: version 1 once more) with another text, its hover showed the old run's
    values as current ones (and the server kept every closed document's outputs)."""
    path = tmp_path / "r.fuse"
    uri = open_doc(vscode, path, GONE)
    ran = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fuse.run", arguments=[uri]))
    assert ran["ok"]
    position = at(GONE, "B[i] =")
    found = await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=position))
    assert "Last run" in found.contents.value
    vscode.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(uri)))
    open_doc(vscode, path, GONE.replace("[1, 2]", "[5, 7]"))
    found = await vscode.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=position))
    assert "Last run" not in found.contents.value


CALL = FN.replace("Y[i] = f(M[i,j], B[i])", "Y[k] = f(M[k,l], B[k])")


async def test_an_index_of_a_fn_calls_arguments_is_every_place_of_it(vscode, tmp_path):
    """In `Y[k] = f(M[k,l], B[k])` the index `k` was found by the written-out result's
    roles: its places missed `B[k]` (a rename left it behind) and `l` was not among
    the statement's indices (renaming `k` to `l` merged them)."""
    uri = open_doc(vscode, tmp_path / "c.fuse", CALL)
    position = at(CALL, "k] = f")
    highlights = await vscode.text_document_document_highlight_async(
        types.DocumentHighlightParams(text_document=doc(uri), position=position))
    assert len(highlights) == 3
    with pytest.raises(JsonRpcException) as raised:
        await vscode.text_document_rename_async(types.RenameParams(
            text_document=doc(uri), position=position, new_name="l"))
    assert "`l` is already an index of this equation" in str(raised.value)
    edit = await vscode.text_document_rename_async(types.RenameParams(
        text_document=doc(uri), position=position, new_name="q"))
    new = renamed(CALL, uri, edit)
    assert "Y[q] = f(M[q,l], B[q])" in new
    assert values(new) == values(CALL)
