"""Semantic tokens over stdio: the advertised legend, full and range requests,
LSP's relative encoding with UTF-16 columns, sorted and non-overlapping."""
from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fuse_lang.ide.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES

from .conftest import SERVER, open_doc

PROGRAM = """\
# two lines of
# comment
axis j = 2
param W[i,j]
Edge(Alice, Bob)
Y[i] = relu(W[i,j]) + 1
"é😀.npy" = Y[i]  # out
export Y
"""

# (line, UTF-16 column, length, type, modifiers)
EXPECTED = [
    (0, 0, 14, "comment", ()),
    (1, 0, 9, "comment", ()),
    (2, 0, 4, "keyword", ()), (2, 5, 1, "parameter", ("declaration",)),
    (2, 9, 1, "number", ()),
    (3, 0, 5, "keyword", ()), (3, 6, 1, "variable", ("declaration", "param")),
    (3, 8, 1, "parameter", ("declaration", "output")),
    (3, 10, 1, "parameter", ("declaration", "output")),
    (4, 0, 4, "type", ("declaration",)), (4, 5, 5, "enumMember", ()),
    (4, 12, 3, "enumMember", ()),
    (5, 0, 1, "variable", ("declaration",)), (5, 2, 1, "parameter", ("declaration", "output")),
    (5, 7, 4, "function", ("defaultLibrary",)), (5, 12, 1, "variable", ("param",)),
    (5, 14, 1, "parameter", ("output",)), (5, 16, 1, "parameter", ("projected",)),
    (5, 22, 1, "number", ()),
    # the path is 8 characters but 9 UTF-16 units (😀 is two): later columns shift
    (6, 0, 9, "string", ()), (6, 12, 1, "variable", ()), (6, 14, 1, "parameter", ("free",)),
    (6, 18, 5, "comment", ()),
    (7, 0, 6, "keyword", ()), (7, 7, 1, "variable", ()),
]


# Neovim offers UTF-8 positions first: the path "é😀.npy" is 12 bytes (é is
# two, 😀 four), so line 6's later columns move 3 further than in UTF-16.
EXPECTED_UTF8 = [
    (line, column + (3 if line == 6 and column > 0 else 0),
     12 if (line, column, kind) == (6, 0, "string") else length, kind, mods)
    for line, column, length, kind, mods in EXPECTED
]


def decode(data, legend=None):
    """Absolute (line, column, length, type, modifiers) from the relative encoding."""
    types_ = legend.token_types if legend else TOKEN_TYPES
    modifiers = legend.token_modifiers if legend else TOKEN_MODIFIERS
    assert len(data) % 5 == 0
    out = []
    line = column = 0
    for k in range(0, len(data), 5):
        d_line, d_col, length, kind, bits = data[k:k + 5]
        line += d_line
        column = column + d_col if d_line == 0 else d_col
        out.append((line, column, length, types_[kind],
                    tuple(m for b, m in enumerate(modifiers) if bits & (1 << b))))
    return out


def doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def initialized(lsp_client: LanguageClient, tmp_path):
    """A VS Code client that keeps the server's answer to `initialize`."""
    lsp_client.initialize_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="test")]))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_the_legend_is_advertised_with_full_and_range(initialized, tmp_path):
    client = initialized
    provider = client.initialize_result.capabilities.semantic_tokens_provider
    assert list(provider.legend.token_types) == [
        "variable", "type", "parameter", "function", "enumMember", "number", "string",
        "keyword", "comment", "property"]
    assert list(provider.legend.token_modifiers) == [
        "declaration", "readonly", "defaultLibrary", "output", "projected", "free", "param"]
    assert provider.full and provider.range
    uri = open_doc(client, tmp_path / "t.fuse", PROGRAM)
    got = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    assert decode(got.data, provider.legend) == EXPECTED


async def test_full_tokens_neovim(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "t.fuse", PROGRAM)
    got = await neovim.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    assert decode(got.data) == EXPECTED_UTF8


async def test_range_tokens_only_cover_the_range(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "t.fuse", PROGRAM)
    got = await vscode.text_document_semantic_tokens_range_async(types.SemanticTokensRangeParams(
        text_document=doc(uri), range=types.Range(start=types.Position(line=5, character=0),
                                                   end=types.Position(line=6, character=13))))
    assert decode(got.data) == [t for t in EXPECTED if t[0] == 5 or (t[0] == 6 and t[1] < 13)]


async def test_tokens_are_sorted_and_disjoint_in_a_broken_program(vscode, tmp_path):
    text = PROGRAM + "Z[i] = oops(W[i,\n  # inside\nBad bad]\nexport = 3 # x\n"
    uri = open_doc(vscode, tmp_path / "b.fuse", text)
    got = decode((await vscode.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))).data)
    assert got[:len(EXPECTED)] == EXPECTED
    for (l1, c1, n1, *_), (l2, c2, *_) in zip(got, got[1:]):
        assert (l1, c1 + n1) <= (l2, c2)
    assert (len(PROGRAM.splitlines()) + 3, 11, 3, "comment", ()) in got


async def test_tokens_follow_edits(vscode, tmp_path):
    """The server keeps each statement's tokens between requests: after edits (a
    line added above everything, `W` turned from a param into a Boolean relation,
    and back) the tokens are those of the current text."""
    uri = open_doc(vscode, tmp_path / "t.fuse", PROGRAM)

    async def tokens():
        got = await vscode.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(text_document=doc(uri)))
        return decode(got.data)

    def change(version, start_line, end_line, end_col, text):
        vscode.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=start_line, character=0),
                                  end=types.Position(line=end_line, character=end_col)),
                text=text)]))

    assert await tokens() == EXPECTED
    change(2, 0, 0, 0, "# one more\n")          # every statement moves down a line
    moved = [(0, 0, 10, "comment", ())] + [(line + 1, *rest) for line, *rest in EXPECTED]
    assert await tokens() == moved
    change(3, 4, 5, 0, "W(i,j) = Edge(i,j)\n")  # `param W[i,j]` becomes a relation
    got = await tokens()
    assert (4, 0, 1, "type", ("declaration",)) in got
    assert (6, 12, 1, "type", ()) in got        # W in `relu(W[i,j])` is a relation now
    change(4, 4, 5, 0, "param W[i,j]\n")
    assert await tokens() == moved
