"""Running part of a program (fuse_lang.ide.run_targets) and stopping a run
(fuse_lang.ide.cancellation)."""
from __future__ import annotations

import threading

import pytest

import fuse_lang
from fuse_lang.ide.cancellation import Cancelled, CancelToken, cancellable
from fuse_lang.ide.run_targets import TargetError, restrict, run_targets

PROGRAM = """\
Parent(Alice, Bob)
Ancestor(x,y) = Parent(x,y)
N = const(3)
M = 2 N
export N, M
Ancestor(Alice,
         x)?
Parent(Alice, Bob)?
"""


def test_targets_are_export_statements_and_queries():
    analysis = fuse_lang.analyze(PROGRAM)
    export, query, second = run_targets(analysis)
    assert (export.kind, export.names, export.label) == ("export", ("N", "M"), "N, M")
    assert PROGRAM[export.span.start:export.span.end] == "export N, M"
    assert (query.kind, query.names) == ("query", ("Ancestor(Alice, x)?",))
    assert second.names == ("Parent(Alice, Bob)?",)


def test_restrict_keeps_offsets_and_computes_only_the_targets():
    analysis = fuse_lang.analyze(PROGRAM)
    text = restrict(analysis, ["Ancestor(Alice, x)"])
    assert text[:len(PROGRAM)].count("\n") == PROGRAM.count("\n")
    assert len(text) == len(PROGRAM)
    result = fuse_lang.compile(text).execute()
    assert result.outputs == {}
    assert [q.text for q in result.queries] == ["Ancestor(Alice,\n         x)?"]
    only_m = fuse_lang.compile(restrict(analysis, ["M"])).execute()
    assert list(only_m.outputs) == ["M"] and only_m.queries == []
    # a tensor that is not exported can be asked for too
    assert list(fuse_lang.compile(restrict(analysis, ["Ancestor"])).execute().outputs) == \
        ["Ancestor"]


def test_an_unknown_target_names_the_choices():
    with pytest.raises(TargetError, match=r"`Nope` is not an export, query or tensor of this "
                                          r"program \(try N, M, Ancestor\(Alice, x\)\?, "
                                          r"Parent\(Alice, Bob\)\?\)"):
        restrict(fuse_lang.analyze(PROGRAM), ["Nope"])


STEPS = 1_000_000
SLOW = f"""\
axis i = 2
axis t = {STEPS}
W[i,j] = const([[0.5, 0], [0, 0.5]])
X[i,*t+1] = tanh(W[i,j] X[j,*t] + 1)
export X
"""


class _CancelAfter(CancelToken):
    """Cancels itself once a given number of operations have started."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def check(self) -> None:
        if self.operations >= self.limit:
            self.cancel()
        super().check()


def test_a_cancelled_run_stops_at_its_next_operation():
    program = fuse_lang.compile(SLOW)
    token = _CancelAfter(500)
    cancellable(program, token)
    with pytest.raises(Cancelled):
        program.execute()
    assert token.operations == 500  # not one operation more


def test_a_run_is_cancelled_from_another_thread():
    program = fuse_lang.compile(SLOW)
    token = CancelToken()
    cancellable(program, token)
    threading.Timer(0.2, token.cancel).start()
    with pytest.raises(Cancelled):
        program.execute()
    # stopped part way: each of the 1,000,000 steps makes several operations
    assert 0 < token.operations < STEPS


def test_an_uncancelled_checked_run_gives_the_same_answer():
    text = "X[i] = const([1, 2, 3])\nY = X[i] X[i]\nexport Y\n"
    plain = fuse_lang.compile(text).run()
    checked = cancellable(fuse_lang.compile(text), CancelToken()).run()
    assert float(checked["Y"]) == float(plain["Y"]) == 14.0
