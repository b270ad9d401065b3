"""Numbers written for messages: a count in full or short (`1.23e400`), a byte
count (`1.5 GB`).  Exact integers throughout: an extent or a size past 1.8e308
does not fit a float.  Every room's messages write numbers so (the checker's
extents, the plan's shapes, the memory guard's and the sinks' byte counts)."""
from __future__ import annotations

import math


def short_number(n: int, in_full_below: int = 10**15) -> str:
    """`n` in full below `in_full_below`, else as `1.23e400`: without a float, which
    an integer past 1.8e308 does not fit (and Python prints no more than 4300 digits)."""
    if n < max(in_full_below, 1000):
        return str(n)
    exponent = int(math.log10(n)) - 2  # log10 of an int: exact enough, never overflows
    while n // 10**exponent >= 1000:  # (where log10 rounded down)
        exponent += 1
    lead = (n // 10 ** (exponent - 1) + 5) // 10  # three digits, rounded
    if lead >= 1000:
        lead //= 10
        exponent += 1
    return f"{lead // 100}.{lead % 100:02d}e{exponent + 2}"


def format_bytes(n: int) -> str:
    """A byte count for a message: 1.5 GB, 300 kB, 12 B."""
    if n >= 10**15:  # exact integers: past 1.8e308 bytes a float would overflow
        return f"{short_number(n, 0)} bytes"
    for unit in ("GB", "MB", "kB"):
        size = {"GB": 1e9, "MB": 1e6, "kB": 1e3}[unit]
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def strict_json(data: object) -> object:
    """`data` (dicts, lists, tuples, numbers, strings) with every NaN and infinity
    as None: JSON has neither, and Python's json module would write bare `NaN`,
    which no strict parser reads.  Where a caller counts what was replaced it says
    so itself (`fuse run --format json`'s `nonfinite`, docs/cli.md)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: strict_json(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict_json(value) for value in data]
    return data
