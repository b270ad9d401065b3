"""`gc_paused`: the cycle collector off while a whole file is analysed."""
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
