"""Hover over stdio says what `fuse explain` says of a left-hand-side index beyond
"output" (tests/test_explain_truth_audit.py checks those words against the run):
a virtual index is the recurrence's step, `x/2` pools, an index no term reads
broadcasts, inside a `fn` body as at the top level."""
from __future__ import annotations

from lsprotocol import types

from .conftest import open_doc

PROGRAM = """\
axis n = 2
fn spread(x[i]) -> y[i,n] {
  y[i,n] = x[i]
}
B[x] = const([1, 10, 100])
Pm[x/2] max= B[x]
M[i,j] = const([[0.5,0],[0,0.5]])
U[i,t] = const([[1,2,3],[4,5,6]])
H[i,*t+1] = tanh(M[i,j] H[j,*t] + U[i,t])
Y[i,n] = spread(B[i])
export Pm, H, Y
"""


def at(text: str, needle: str) -> types.Position:
    offset = text.index(needle)
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def test_hover_says_what_a_left_hand_side_index_does(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "roles.fuse", PROGRAM)

    async def hover(needle: str) -> str:
        found = await vscode.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=at(PROGRAM, needle)))
        return found.contents.value

    pooled = await hover("x/2] max=")
    assert "pooled as `x/2`: the values that share a position combined by max" in pooled
    step = await hover("t+1] = tanh")
    assert "the **step** of a recurrence" in step and "not an axis of H" in step
    assert "**output**" not in step
    inside = await hover("n] = x[i]")  # in the fn body: the call's written-out equation
    assert "broadcast: no term of the right-hand side reads it" in inside
