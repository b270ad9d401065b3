"""Why's conformance audit (docs/why.md): what the answers say, checked against the
run's relations, for the forms tests/test_why.py and tests/test_why_property.py leave
out."""
from __future__ import annotations

import fuse_lang


def run(text: str):
    return fuse_lang.compile(text).execute(write_sinks=False)


def test_a_computed_head_blames_the_goal_that_stops_the_binding_giving_the_tuple():
    # Q(6, B) needs m = 5, which P holds and `m < 3` refuses: the why-not said "its head
    # computes other values from every binding" (m = 0, the binding past `m < 3`, gives 1)
    result = run("P(0)\nP(5)\nQ(6, A)\nQ(m + 1, B) = P(m) (m < 3)\nexport Q\n")
    blocked, = result.why("Q", (6, "B")).rules
    assert (blocked.goal, blocked.reason) == ("m < 3", "false for every binding: `5 < 3`")
    # no binding of the body gives 3 at all: the head is what stops it
    blocked, = result.why("Q", (1, "A")).rules
    assert blocked.reason == "its head cannot give this tuple"
    assert type(result.why("Q", (1, "B"))).__name__ == "Derivation"
