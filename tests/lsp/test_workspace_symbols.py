"""Workspace symbols over stdio: the tensors of open documents (their current,
unsaved text) and of every *.fuse file under the workspace folders, bounded,
filtered by a case-insensitive subsequence of the name."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc


def rng(line, start, end):
    return types.Range(start=types.Position(line=line, character=start),
                       end=types.Position(line=line, character=end))


def shown(symbols):
    return sorted((s.name, s.kind, s.container_name, s.location.uri, s.location.range)
                  for s in symbols)


def write_workspace(root):
    (root / "layers.fuse").write_text(
        "AttnScore[i,j] = const([[1, 2], [3, 4]])\nparam Proj[i,j]\nexport AttnScore\n")
    (root / "sub").mkdir()
    (root / "sub" / "rules.fuse").write_text("Edge(Ann, Bob)\nPath(x,y) = Edge(x,y)\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.fuse").write_text("Hidden = const(1)\n")
    (root / "notes.txt").write_text("NotFuse = const(1)\n")
    big = "Huge = const(1)\n" + "# padding\n" * 220_000  # over 2 MB: skipped
    (root / "huge.fuse").write_text(big)


async def query(client, text):
    return await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=text))


async def test_every_fuse_file_under_the_folder_and_open_documents(vscode, tmp_path):
    write_workspace(tmp_path)
    # an open document whose unsaved text differs from the file on disk
    uri = open_doc(vscode, tmp_path / "open.fuse", "Old = const(1)\n")
    vscode.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="# edited\nAttention[p] = const([1, 2])\n")]))
    got = await query(vscode, "")
    layers = (tmp_path / "layers.fuse").as_uri()
    rules = (tmp_path / "sub" / "rules.fuse").as_uri()
    assert shown(got) == sorted([
        ("AttnScore", types.SymbolKind.Variable, "layers.fuse", layers, rng(0, 0, 9)),
        ("Proj", types.SymbolKind.Property, "layers.fuse", layers, rng(1, 6, 10)),
        ("Edge", types.SymbolKind.Boolean, "rules.fuse", rules, rng(0, 0, 4)),
        ("Path", types.SymbolKind.Boolean, "rules.fuse", rules, rng(1, 0, 4)),
        ("Attention", types.SymbolKind.Variable, "open.fuse", uri, rng(1, 0, 9)),
    ])


async def test_query_is_a_case_insensitive_subsequence(neovim, tmp_path):
    write_workspace(tmp_path)
    assert sorted(s.name for s in await query(neovim, "attn")) == ["AttnScore"]
    assert sorted(s.name for s in await query(neovim, "ATSC")) == ["AttnScore"]
    assert sorted(s.name for s in await query(neovim, "t")) == ["AttnScore", "Path"]
    assert list(await query(neovim, "zzz")) == []


async def test_files_changed_on_disk_are_read_again(vscode, tmp_path):
    path = tmp_path / "m.fuse"
    path.write_text("First = const(1)\n")
    assert [s.name for s in await query(vscode, "")] == ["First"]
    path.write_text("Second = const(1)\nSecondToo = const(2)\n")
    assert sorted(s.name for s in await query(vscode, "sec")) == ["Second", "SecondToo"]
