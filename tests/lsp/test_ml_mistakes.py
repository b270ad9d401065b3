"""The ML checker's diagnostics over stdio (issue 34): a lone index's warning at
the typo with its quick fix, and an extent conflict at the join with the other
places as related information."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc, wait_for_push
from .test_code_actions import actions, edits, rng

LONE = ("W = const([[1,2],[3,4],[5,6]])\nX = const([[1,2],[3,4]])\nB = const([1,2,3])\n"
        "H[b,f] = relu(W[f,d] X[b,d] + B[g])\nexport H\n")
JOIN = "X = const([1,2,3])\nY = const([1,2])\nZ = X[i] Y[i]\nexport Z\n"


async def test_lone_index_warning_and_its_fix(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "lone.fuse", LONE)
    await wait_for_push(vscode, uri, version=1)
    (diag,) = vscode.diagnostics[uri]
    assert diag.code == "lone-index"
    assert diag.severity == types.DiagnosticSeverity.Warning
    assert diag.range == rng(3, 32, 33)
    found = await actions(vscode, uri, rng(3, 32, 32), [diag],
                          only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in found][:2] == ["Change `g` to `f`",
                                           "Sum over `g` explicitly (reduce)"]
    assert edits(found[0]) == {uri: [types.TextEdit(range=rng(3, 32, 33), new_text="f")]}


async def test_extent_conflict_at_the_join_relates_the_literals(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "join.fuse", JOIN)
    await wait_for_push(vscode, uri, version=1)
    (diag,) = [d for d in vscode.diagnostics[uri] if d.code == "extent-conflict"]
    assert diag.range.start == types.Position(line=2, character=9)
    starts = {(r.location.range.start.line, r.location.range.start.character)
              for r in diag.related_information}
    assert starts == {(0, 10), (1, 10)}


LOSSES = ("Z = const([[1,2],[3,4]])\nT = const([0,1])\n"
          "C[n] = cross_entropy(Z[n,v], T[m], axis=v)\n"
          "E[n,d] = gather(Z[v,d], T[n], axis=w)\nexport C, E\n")


async def test_cross_entropy_targets_and_gather_axis_over_stdio(vscode, tmp_path):
    """Issue 35's misuse of the loss and lookup builtins: each at its argument."""
    uri = open_doc(vscode, tmp_path / "losses.fuse", LOSSES)
    await wait_for_push(vscode, uri, version=1)
    found = {d.code: d for d in vscode.diagnostics[uri]
             if d.severity == types.DiagnosticSeverity.Error}
    assert found["cross-entropy-targets"].range == rng(2, 29, 33)
    assert "index `m`" in found["cross-entropy-targets"].message
    assert found["bad-argument"].range == rng(3, 35, 36)
    assert "first argument (v, d)" in found["bad-argument"].message
