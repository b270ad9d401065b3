"""The audit of issue 34's checks over stdio: a hand-written softmax's divisor
and an RNN update that never steps, each at its token with its quick fix."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc, wait_for_push
from .test_code_actions import actions, edits, rng

SOFTMAX = ("axis b = 3, v = 5\nparam Z[b,v]\nE[b,v] = exp(Z[b,v])\n"
           "P[b,v] = E[b,v] / E[b,v']\nexport P\n")
RNN = ("axis t = 3, i = 2\nW = const([[1,0],[0,1]])\nU = const([[1,1,1],[2,2,2]])\n"
       "X[i,*t] = tanh(W[i,j] X[j,*t] + U[i,t])\nexport X\n")


async def test_a_divisor_summed_alone_and_its_reduce_fix(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "softmax.fuse", SOFTMAX)
    await wait_for_push(vscode, uri, version=1)
    (diag,) = vscode.diagnostics[uri]
    assert (diag.code, diag.severity) == ("lone-index", types.DiagnosticSeverity.Warning)
    assert diag.range == rng(3, 22, 24)
    (fix,) = await actions(vscode, uri, rng(3, 22, 22), [diag],
                           only=[types.CodeActionKind.QuickFix])
    assert fix.title == "Sum over `v'` explicitly (reduce)"
    assert edits(fix) == {uri: [types.TextEdit(range=rng(3, 18, 18), new_text="(reduce(sum, v') "),
                                types.TextEdit(range=rng(3, 25, 25), new_text=")")]}


async def test_an_rnn_update_that_never_steps(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "rnn.fuse", RNN)
    await wait_for_push(vscode, uri, version=1)
    (diag,) = [d for d in vscode.diagnostics[uri] if d.severity == types.DiagnosticSeverity.Error]
    assert diag.code == "virtual-step" and diag.range == rng(3, 0, 7)
    found = await actions(vscode, uri, rng(3, 4, 4), [diag], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in found] == ["Write the update at `*t+1`"]
    assert edits(found[0]) == {uri: [types.TextEdit(range=rng(3, 4, 6), new_text="*t+1")]}
