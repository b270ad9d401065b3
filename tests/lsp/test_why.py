"""`fuse.why` over stdio: a tuple's derivation, a why-not and a number's terms of the
document's last run (the document run first when it has none), and bad requests."""
from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from .conftest import open_doc
from .test_commands import execute

PROGRAM = """\
Person(Ann, 25)
Person(Cy, 7)
Banned(Bob, Spam)
Parent(Ann, Bob)
Parent(Bob, Cy)
Ancestor(x, y) = Parent(x, y)
Ancestor(x, z) = Ancestor(x, y) Parent(y, z)
Adult(x) = Person(x, a) (a > 18)
Allowed(x) = Adult(x) not Banned(x, _)
W[i,j] = const([[1, 2], [3, -4]])
X[j] = const([5, 6])
Y[i] = relu(W[i,j] X[j])
export Ancestor, Allowed, Y
"""


async def test_why_explains_tuples_and_numbers(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    # no run yet: the document is run first
    answer = await execute(vscode, "fuse.why", uri, "Ancestor(Ann, Cy)")
    assert answer["ok"] is True and answer["target"] == "Ancestor(Ann, Cy)"
    tree = answer["why"]
    assert tree["type"] == "Derivation" and tree["height"] == 2
    assert tree["place"]["line"] == 7
    assert [c["text"] for c in tree["children"]] == ["Ancestor(Ann, Bob)", "Parent(Bob, Cy)"]
    assert answer["text"].startswith("Ancestor(Ann, Cy)   by line 7: ")
    allowed = await execute(vscode, "fuse.why", uri, {"target": "Allowed(Ann)"})
    conditions = [c["text"] for c in allowed["why"]["conditions"]]
    assert conditions == ["no tuple of Banned(Ann, _)"]
    no = await execute(vscode, "fuse.why", uri, "Allowed(Cy)")
    assert no["why"]["type"] == "WhyNot" and no["why"]["rules"][0]["goal"] == "Adult(Cy)"
    y = await execute(vscode, "fuse.why", uri, {"target": "Y[1]", "top": 1})
    part = y["why"]["parts"][0]
    assert part["nonlinearity"] == "relu" and part["total"] == pytest.approx(3 * 5 - 4 * 6)
    assert part["count"] == 2 and [f["text"] for f in part["terms"][0]["factors"]] == [
        "W[1, 1]", "X[1]"]


async def test_bad_targets_are_answered_in_words(vscode, tmp_path):
    uri = open_doc(vscode, tmp_path / "prog.fuse", PROGRAM)
    malformed = await execute(vscode, "fuse.why", uri, "Ancestor(Ann,")
    assert malformed["ok"] is False and "expected a value" in malformed["error"]
    unknown = await execute(vscode, "fuse.why", uri, "Nope(Ann)")
    assert unknown["ok"] is False and "`Nope` is not a tensor" in unknown["error"]
    arity = await execute(vscode, "fuse.why", uri, "Ancestor(Ann)")
    assert arity["ok"] is False and "has 2 axes" in arity["error"]
    with pytest.raises(JsonRpcException, match="fuse.why takes"):
        await execute(vscode, "fuse.why", uri)


async def test_a_hover_on_a_query_after_a_run_shows_why_its_first_answers_hold(vscode, tmp_path):
    from .test_hover import at, hover

    text = PROGRAM + "Ancestor(Ann, x)?\n"
    uri = open_doc(vscode, tmp_path / "prog.fuse", text)
    before = (await hover(vscode, uri, at(text, "Ancestor(Ann, x)?"))).contents.value
    assert "**Why**" not in before  # no run yet: nothing to explain
    assert (await execute(vscode, "fuse.run", uri, {}))["ok"] is True
    after = (await hover(vscode, uri, at(text, "Ancestor(Ann, x)?"))).contents.value
    assert "**Why**" in after
    assert "Ancestor(Ann, Bob)   by line 6: Ancestor(x, y) = Parent(x, y)" in after
    assert "Ancestor(Ann, Cy)   by line 7: " in after
