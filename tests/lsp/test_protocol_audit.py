"""What an audit of the server against LSP 3.17 found, over stdio: each test is
one wrong answer (or a traceback in the server's log) as it was found, made
small."""
from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

import fuse_lang

from .conftest import open_doc
from .lsp_text import apply
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
