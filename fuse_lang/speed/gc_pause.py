"""`gc_paused`: the cycle collector off while a whole file is analysed;
`gc_frozen_after`: the same, and what was made kept out of its scans after."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cycle collector off for a while (as it was after): an analysis makes
    a large, acyclic graph of small objects that it would only scan again and again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextmanager
def gc_frozen_after() -> Iterator[None]:
    """As `gc_paused`, and then every object alive is frozen (`gc.freeze`): the
    language server's policy for an analysis that lives until the next edit and
    holds no reference cycles.  Without it, the first collection after the
    analysis scans all its new objects (on a 10,000-line file after an edit at
    its top, about as long as a third of the re-check).  They are still freed by
    reference counting; `gc.unfreeze` lets the collector see them again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
