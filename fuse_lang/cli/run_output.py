"""What `fuse run` prints of a run's result: a line per export and query (text),
or its JSON (`--format json`): outputs, query answers, sinks written, what a
`--target` run left out, the trace, estimates and the backend picked."""
from __future__ import annotations

import functools
import json
import sys
from typing import Any


def show_result(result: Any, fmt: str, targeted: bool, out: str | None,
                pictures: list[str] | None) -> None:
    """Print `result` as `fmt` (text or json); `out`: the --out file written;
    `pictures`: those --plot wrote (None without --plot)."""
    if fmt == "json":
        data = result_json(result, targeted)
        if pictures is not None:
            data["pictures"] = pictures
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        print_result(result, out)
        for path in pictures or ():
            print(f"wrote {path}")


def result_json(result: Any, targeted: bool = False) -> dict:
    """`fuse run --format json`: outputs, query answers and sinks written (and,
    with --target, what was not run and why)."""
    extra = {"not_run": [n.to_json() for n in result.not_run]} if targeted else {}
    return {
        "outputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype), **_values_json(a)}
                    for n, a in result.outputs.items()},
        "queries": [{"query": q.text, "tensor": q.tensor, "free": list(q.free),
                     **_values_json(q.value),
                     **({"tuples": [list(t) for t in q.tuples]} if q.tuples is not None
                        else {})} for q in result.queries],
        "sinks": result.sinks,
        **extra,
        **({"trace": result.trace} if result.trace is not None else {}),
        **({"estimates": {n: {**e, "standard_error": e["standard_error"].tolist()}
                          for n, e in result.estimates.items()}} if result.estimates else {}),
        **({"backend": result.backend} if result.backend is not None else {}),
    }


def _values_json(array: Any) -> dict:
    """`values` (nested lists), or for a sparse array its non-zeros as [i, j, value]
    ([i, j, k, value] for three axes)."""
    if hasattr(array, "tocoo"):
        import numpy as np

        coo = array.tocoo()
        coords = tuple(coo.coords)
        order = np.lexsort(coords[::-1])  # row by row, whatever the storage order
        return {"representation": "sparse",
                "nonzeros": [[*map(int, at), float(v)] for *at, v in
                             zip(*(c[order] for c in coords), coo.data[order])]}
    return {"values": array.tolist()}


def print_result(result: Any, out: str | None) -> None:
    """`fuse run`'s text: each export and query answer, the files written, and
    the trace's report."""
    for name, array in result.outputs.items():
        print(f"{name}  shape {tuple(array.shape)}  {array.dtype}  {_preview(array)}")
    for q in result.queries:
        if q.tuples is not None:
            # (maps all the way down: tens of thousands of answers print in C)
            answer = "; ".join(map(", ".join, map(functools.partial(map, str), q.tuples))) \
                or "no"
            if not q.free:
                answer = "yes" if q.tuples else "no"
            print(f"{q.text}  {answer}")
        else:
            print(f"{q.text}  shape {tuple(q.value.shape)}  {_preview(q.value)}")
    for path in result.sinks:
        print(f"wrote {path}")
    if out:
        print(f"wrote {out}")
    from ..run.trace import report_lines

    for line in report_lines(result):
        print(line)


def _preview(array: Any, width: int = 8) -> str:
    import numpy as np

    if hasattr(array, "tocoo"):  # scipy.sparse: its first non-zeros, never densified
        coo = array.tocoo()
        shown = ", ".join(f"({', '.join(map(str, at))}): {v:.4g}" for *at, v in
                          list(zip(*coo.coords, coo.data))[:width])  # any number of axes
        return f"sparse, {coo.nnz} non-zeros [{shown}{', ...' if coo.nnz > width else ''}]"
    flat = np.asarray(array).ravel()
    shown = ", ".join(f"{v:.4g}" for v in flat[:width])
    return f"[{shown}{', ...' if flat.size > width else ''}]"
