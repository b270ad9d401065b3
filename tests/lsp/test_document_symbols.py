"""Document symbols over stdio: tensors grouped by kind, with their shape as
detail, their first defining statement as range and the name as selection."""
from __future__ import annotations

import numpy as np
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import SERVER, open_doc

PROGRAM = """\
X[p,d] = "x.npy"
param W[e,d]
Edge(Alice, Bob)
H[p,e] = relu(W[e,d]
              X[p,d])
H[p,e] += X[p,d] W[e,d]
V = "é😀.npy"
export H
"""


def rng(a, b, c, d):
    return types.Range(start=types.Position(line=a, character=b),
                       end=types.Position(line=c, character=d))


def sym(name, kind, detail, range_, selection, children=None):
    return types.DocumentSymbol(name=name, kind=kind, detail=detail, range=range_,
                                selection_range=selection,
                                children=tuple(children) if children else None)


EXPECTED = [
    sym("sources", types.SymbolKind.Namespace, "2 tensors", rng(0, 0, 6, 13), rng(0, 0, 0, 1), [
        sym("X", types.SymbolKind.File, "[p:6, d:4]", rng(0, 0, 0, 16), rng(0, 0, 0, 1)),
        # the range ends after the path: é is one UTF-16 unit, 😀 two
        sym("V", types.SymbolKind.File, "[4]", rng(6, 0, 6, 13), rng(6, 0, 6, 1)),
    ]),
    sym("params", types.SymbolKind.Namespace, "1 tensor", rng(1, 0, 1, 12), rng(1, 6, 1, 7), [
        sym("W", types.SymbolKind.Property, "[e:?, d:4]", rng(1, 0, 1, 12), rng(1, 6, 1, 7)),
    ]),
    sym("Boolean relations", types.SymbolKind.Namespace, "1 tensor", rng(2, 0, 2, 16),
        rng(2, 0, 2, 4), [
            sym("Edge", types.SymbolKind.Boolean, "[1, 1]", rng(2, 0, 2, 16), rng(2, 0, 2, 4)),
        ]),
    sym("dense tensors", types.SymbolKind.Namespace, "1 tensor", rng(3, 0, 4, 21),
        rng(3, 0, 3, 1), [
            # the first defining statement, over two lines; the second is not repeated
            sym("H", types.SymbolKind.Variable, "[p:6, e:?]", rng(3, 0, 4, 21), rng(3, 0, 3, 1)),
        ]),
]


def in_utf8(symbols):
    """The same symbols for a client that negotiated UTF-8 columns (Neovim):
    the path on line 6 is 3 units longer (é is two bytes, 😀 four)."""
    def fix(r):
        if r.end.line == 6 and r.end.character == 13:
            return rng(r.start.line, r.start.character, 6, 16)
        return r
    return [types.DocumentSymbol(
        name=s.name, kind=s.kind, detail=s.detail, range=fix(s.range),
        selection_range=s.selection_range,
        children=tuple(in_utf8(s.children)) if s.children else None) for s in symbols]


def write_data(folder):
    np.save(folder / "x.npy", np.zeros((6, 4), dtype=np.float32))
    np.save(folder / "é😀.npy", np.zeros(4, dtype=np.float32))


async def symbols_of_program(client, tmp_path):
    write_data(tmp_path)
    uri = open_doc(client, tmp_path / "s.fuse", PROGRAM)
    return await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_symbols_grouped_by_kind_vscode(vscode, tmp_path):
    assert list(await symbols_of_program(vscode, tmp_path)) == EXPECTED


async def test_symbols_grouped_by_kind_neovim(neovim, tmp_path):
    assert list(await symbols_of_program(neovim, tmp_path)) == in_utf8(EXPECTED)


async def test_symbols_follow_edits_and_survive_syntax_errors(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "e.fuse", "A = const(1)\n")
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="Y[i] = (oops\nB[i] = const([1, 2])\n")]))
    got = await vscode.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [(g.name, [(c.name, c.detail, c.range) for c in g.children]) for g in got] == [
        ("dense tensors", [("B", "[i:2]", rng(1, 0, 1, 20))])]


async def test_no_tensors_no_symbols(neovim, tmp_path):
    uri = open_doc(neovim, tmp_path / "empty.fuse", "# nothing yet\n")
    got = await neovim.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert list(got) == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def flat_client(lsp_client: LanguageClient, tmp_path):
    """A client without hierarchical document symbols."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.document_symbol.hierarchical_document_symbol_support = False
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=tmp_path.as_uri()))
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_flat_symbols_name_their_group(flat_client, tmp_path):
    got = await symbols_of_program(flat_client, tmp_path)
    assert [(s.name, s.kind, s.container_name, s.location.range) for s in got] == [
        ("X", types.SymbolKind.File, "sources", rng(0, 0, 0, 1)),
        ("V", types.SymbolKind.File, "sources", rng(6, 0, 6, 1)),
        ("W", types.SymbolKind.Property, "params", rng(1, 6, 1, 7)),
        ("Edge", types.SymbolKind.Boolean, "Boolean relations", rng(2, 0, 2, 4)),
        ("H", types.SymbolKind.Variable, "dense tensors", rng(3, 0, 3, 1)),
    ]
    assert all(s.location.uri == (tmp_path / "s.fuse").as_uri() for s in got)
