"""What `fuse run` prints of a run's result: a block per export and a line per
query (text), or its JSON (`--format json`): outputs, query answers, sinks
written, what a `--target` run left out, the trace, estimates, the backend
picked and the program's diagnostics; and the one JSON document of a run that
did not happen (`failure_json`).

A Boolean relation is its tuples as values, sorted by value (io.relation_tuples):
in text its count and its first `RELATION_SHOWN` tuples, in JSON all of them."""
from __future__ import annotations

import itertools
import sys
from typing import Any, Sequence

from ..front.numbers import strict_json
from ..io.relation_tuples import RelationTuples, relation_tuples, tuple_text, value_text
from .status import json_document

RELATION_SHOWN = 20  # tuples of a relation that the text prints; the rest are counted


def show_result(result: Any, fmt: str, targeted: bool, out: str | None,
                pictures: list[str] | None, analysis: Any = None,
                diagnostics: Sequence[dict] = (), whys: Sequence[Any] | None = None,
                why_errors: Sequence[str] = ()) -> None:
    """Print `result` as `fmt` (text or json); `out`: the --out file written;
    `pictures`: those --plot wrote (None without --plot); `analysis`: the
    program's, which says which outputs are relations and their values;
    `diagnostics`: the program's (JSON shapes), in the JSON; `whys`: the answers
    of `--why` (run.why.data), after the results; `why_errors`: a line for each
    `--why` target that could not be answered (in the JSON; the caller says them on
    stderr)."""
    relations = _relations(result, analysis)
    if fmt == "json":
        data = result_json(result, targeted, relations)
        if pictures is not None:
            data["pictures"] = pictures
        data["diagnostics"] = list(diagnostics)
        if whys is not None:
            from ..run.why.data import to_json

            data["why"] = [to_json(answer) for answer in whys]
        if why_errors:
            data["why_errors"] = list(why_errors)
        write_json(data)
    else:
        print_result(result, out, relations)
        for path in pictures or ():
            print(f"wrote {path}")
        if whys:
            from ..ide.why_text import why_text

            for answer in whys:
                print(f"\nwhy {answer.text}:")
                print(why_text(answer))


def write_json(data: dict) -> None:
    """One JSON document on standard output, strict JSON: a NaN or an infinity
    anywhere is null (an output's or answer's own are counted in its `nonfinite`)."""
    sys.stdout.write(json_document(strict_json(data), default=str))


def failure_json(error: str | None, diagnostics: Sequence[dict],
                 sinks: Sequence[str] = ()) -> dict:
    """`fuse run --format json` of a run that did not happen, or whose `--out`
    could not be written: no outputs, the sinks it wrote (none but for an `--out`
    refused after the run), the reason (`error`, null when the diagnostics say it)
    and the diagnostics."""
    return {"outputs": {}, "queries": [], "sinks": list(sinks), "error": error,
            "diagnostics": list(diagnostics)}


def _relations(result: Any, analysis: Any) -> dict[str, RelationTuples]:
    """The outputs that are Boolean relations, as their tuples of values."""
    if analysis is None:
        return {}
    from ..run.outputs import relation_axes

    out = {}
    for name, value in result.outputs.items():
        axes = relation_axes(analysis, name)
        if axes is not None and len(axes) == len(value.shape):
            out[name] = relation_tuples(value, axes)
    return out


def result_json(result: Any, targeted: bool = False,
                relations: dict[str, RelationTuples] | None = None) -> dict:
    """`fuse run --format json`: outputs, query answers and sinks written (and,
    with --target, what was not run and why); `relations`: the outputs that
    are relations, given as their tuples."""
    relations = relations or {}
    extra = {"not_run": [n.to_json() for n in result.not_run]} if targeted else {}
    return {
        "outputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype),
                        **(_relation_json(a, relations[n]) if n in relations
                           else _values_json(a))}
                    for n, a in result.outputs.items()},
        "queries": [_query_json(q) for q in result.queries],
        "sinks": result.sinks,
        **extra,
        **({"trace": result.trace} if result.trace is not None else {}),
        **({"estimates": {n: {**e, "standard_error": e["standard_error"].tolist()}
                          for n, e in result.estimates.items()}} if result.estimates else {}),
        **({"backend": result.backend} if result.backend is not None else {}),
    }


def _relation_json(array: Any, tuples: RelationTuples) -> dict:
    """A relation: every tuple, as values, sorted by value, and their count."""
    return {**({"representation": "sparse"} if hasattr(array, "tocoo") else {}),
            "relation": True, "count": tuples.count,
            "tuples": [list(t) for t in tuples.rows()]}


def _query_json(q: Any) -> dict:
    """A query's answer: a Boolean one its tuples (sorted by value) and their
    count, another its values."""
    head = {"query": q.text, "tensor": q.tensor, "free": list(q.free)}
    if q.tuples is not None:
        return {**head, "count": len(q.tuples), "tuples": [list(t) for t in q.tuples]}
    keys = {} if q.keys is None else {"keys": {
        name: list(values) for name, values in zip(q.free, q.keys) if values is not None}}
    return {**head, **_values_json(q.value), **keys}


def _values_json(array: Any) -> dict:
    """`values` (nested lists), or for a sparse array its non-zeros as [i, j, value]
    ([i, j, k, value] for three axes)."""
    if hasattr(array, "tocoo"):
        import numpy as np

        coo = array.tocoo()
        coords = tuple(coo.coords)
        order = np.lexsort(coords[::-1])  # row by row, whatever the storage order
        return {"representation": "sparse", **_nonfinite_json(coo.data),
                "nonzeros": [[*map(int, at), float(v)] for *at, v in
                             zip(*(c[order] for c in coords), coo.data[order])]}
    return {**_nonfinite_json(array), "values": array.tolist()}


def _nonfinite_json(array: Any) -> dict:
    """`nonfinite`: how many values are NaN, +inf and -inf, when any is (their
    places in `values` hold null: JSON has no NaN or infinity); else nothing."""
    import numpy as np

    values = np.asarray(array)
    if values.dtype.kind not in "fc" or np.isfinite(values).all():
        return {}
    return {"nonfinite": {"nan": int(np.isnan(values).sum()),
                          "inf": int(np.isposinf(values).sum()),
                          "-inf": int(np.isneginf(values).sum())}}


def print_result(result: Any, out: str | None,
                 relations: dict[str, RelationTuples] | None = None) -> None:
    """`fuse run`'s text: each export (a relation as its tuples) and query
    answer, the files written, and the trace's report."""
    relations = relations or {}
    for name, array in result.outputs.items():
        if name in relations:
            print("\n".join(relation_lines(name, relations[name])))
        else:
            print(f"{name}  shape {tuple(array.shape)}  {array.dtype}  {_preview(array)}")
    for q in result.queries:
        if q.tuples is not None:
            print(f"{q.text}  {answer_text(q.tuples, bool(q.free))}")
        else:
            print(f"{q.text}  shape {tuple(q.value.shape)}  {_preview(q.value, keys=q.keys)}")
    for path in result.sinks:
        print(f"wrote {path}")
    if out:
        print(f"wrote {out}")
    from ..run.trace import report_lines

    for line in report_lines(result):
        print(line)


def relation_lines(name: str, tuples: RelationTuples, shown: int = RELATION_SHOWN) -> list[str]:
    """A relation in text: `Name  N tuples`, then its first `shown` tuples, one a
    line (`  (Alice, Bob)`), then `  ... and K more`; a relation of no axes is
    `Name  yes` or `Name  no`."""
    if not tuples.arity:
        return [f"{name}  {'yes' if tuples.count else 'no'}"]
    lines = [f"{name}  {tuples.count} tuple{'' if tuples.count == 1 else 's'}"]
    lines += [f"  {tuple_text(row)}" for row in tuples.rows(0, shown)]
    if tuples.count > shown:
        lines.append(f"  ... and {tuples.count - shown} more")
    return lines


def answer_text(tuples: Sequence[tuple], free: bool) -> str:
    """A Boolean query's answer: `yes`/`no` when it has no variables, else its
    tuples' values (sorted by value), `Bob; Carol` (`Alice, Bob; ...` for two
    variables), or `no`."""
    if not free:
        return "yes" if tuples else "no"
    # (maps all the way down: tens of thousands of answers print quickly)
    return "; ".join(", ".join(map(value_text, t)) for t in tuples) or "no"


def _preview(array: Any, width: int = 8, keys: Any = None) -> str:
    """An array's first values; with `keys` (a query over values: each axis' values
    by position, None for a positional one), each value after its key, `Alice: 2`."""
    import numpy as np

    if keys is not None:
        values = np.asarray(array)
        cells = list(itertools.islice(np.ndindex(values.shape), width))
        shown = ", ".join(f"{_key_text(keys, at)}: {values[at]:.4g}" for at in cells)
        return f"[{shown}{', ...' if values.size > width else ''}]"

    if hasattr(array, "tocoo"):  # scipy.sparse: its first non-zeros, never densified
        coo = array.tocoo()
        shown = ", ".join(f"({', '.join(map(str, at))}): {v:.4g}" for *at, v in
                          list(zip(*coo.coords, coo.data))[:width])  # any number of axes
        return f"sparse, {coo.nnz} non-zeros [{shown}{', ...' if coo.nnz > width else ''}]"
    flat = np.asarray(array).ravel()
    shown = ", ".join(f"{v:.4g}" for v in flat[:width])
    return f"[{shown}{', ...' if flat.size > width else ''}]"


def _key_text(keys: Any, at: tuple[int, ...]) -> str:
    """A cell's key: each axis' value there (its position where it has none)."""
    parts = [value_text(k[p]) if k is not None else str(p) for k, p in zip(keys, at)]
    return parts[0] if len(parts) == 1 else f"({', '.join(parts)})"
