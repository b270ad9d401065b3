"""A head of constants and offsets over a large sparse value (`Later(e, t + 3600)
= Event(e, t)` over timestamps) is written from the value's non-zeros: the
answers are the tuples computed one by one, on every backend that keeps the
relation sparse, where the plan over every cell of the value's grid took
gigabytes (run/interpret/lhs.py, `_sparse_scatter`)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import fuse_lang

BACKENDS = [b for b in ("numpy", "torch", "jax") if importlib.util.find_spec(b) is not None]
EVENTS = 1_200  # 1,200 ids by about 2,400 times: a grid of 2.9 million cells


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    folder = tmp_path_factory.mktemp("events")
    rng = np.random.default_rng(0)
    times = 1_700_000_000 + rng.choice(10**7, EVENTS, replace=False)
    rows = [(e, int(t)) for e, t in zip(range(EVENTS), times)]
    (folder / "ev.tsv").write_text("".join(f"{e}\t{t}\n" for e, t in rows))
    return folder, rows


@pytest.mark.parametrize("backend", BACKENDS)
def test_offset_and_constant_heads_over_timestamps(events, backend):
    folder, rows = events
    text = ('Event(e, t) = "ev.tsv"\n'
            "Later(e, t + 3600) = Event(e, t)\n"
            "Later(e, t - 60) = Event(e, t)\n"
            "Earlier(t - 60, e) = Event(e, t)\n"
            "Later?\nEarlier?\n")
    program = fuse_lang.compile(text, base_dir=folder, backend=backend, compiled=False)
    later, earlier = [set(q.tuples) for q in program.execute().queries]
    assert later == {(e, t + 3600) for e, t in rows} | {(e, t - 60) for e, t in rows}
    assert earlier == {(t - 60, e) for e, t in rows}


def test_three_columns_on_numpy(events):
    folder, rows = events
    text = ('Event(e, t) = "ev.tsv"\n'
            "Slot(e, 1, t + 1) = Event(e, t)\n"
            "Slot(e, 2, t + 2) = Event(e, t)\n"
            "Slot?\n")
    program = fuse_lang.compile(text, base_dir=folder, representation={"Slot": "sparse"})
    [slots] = [set(q.tuples) for q in program.execute().queries]
    assert slots == {(e, k, t + k) for e, t in rows for k in (1, 2)}
