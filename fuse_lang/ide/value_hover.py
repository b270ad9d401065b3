"""What a tensor's hover adds after a run: its last value's statistics (a
relation's tuple count and first tuples, as values sorted by value) and,
where the editor renders Markdown images, a small picture as a data URI
(docs/pictures.md).  Marked stale once the document changed since the run."""
from __future__ import annotations

import base64
from typing import Any, Sequence

from ..io.relation_tuples import AxisValues, tuple_text
from .plots import AxisLabel, render_array
from .run_summary import summarize_output

THUMBNAIL_DPI = 45  # a hover's picture: about a fifth of a full one's pixels
THUMBNAIL_CELLS = 48  # per axis: a hover's picture is summarised sooner (its size)
HOVER_TUPLES = 10  # a relation's tuples a hover lists (sorted by value; the rest counted)


def thumbnail_uri(array: Any, name: str, labels: Sequence[AxisLabel] = (),
                  boolean: bool = False) -> str:
    """A small PNG of the value as a `data:` URI, for a Markdown image."""
    png = render_array(array, name, labels, "png", boolean, dpi=THUMBNAIL_DPI,
                       max_cells=THUMBNAIL_CELLS)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def value_markdown(name: str, array: Any, stale: bool, image_uri: str | None = None,
                   axes: Sequence[AxisValues] | None = None) -> str:
    """The hover's section on the last computed value of `name`; `axes`: a
    relation's axes' values (run.outputs.relation_axes), shown as its tuples."""
    s = summarize_output(array, axes)
    shape = "(" + ", ".join(map(str, s.shape)) + ("," if len(s.shape) == 1 else "") + ")"
    lines = [f"**Last run**{' (stale: the program changed since)' if stale else ''}: "
             f"`{name}` shape `{shape}`, `{s.dtype}`"]
    if s.tuples is not None:
        lines[0] += f", {s.what}"
        lines += [f"`{tuple_text(row)}`" for row in s.tuples[:HOVER_TUPLES]]
        if s.count > HOVER_TUPLES:
            lines.append(f"... and {s.count - HOVER_TUPLES} more")
    elif s.min is not None:
        stats = f"min {s.min:.4g}, max {s.max:.4g}, mean {s.mean:.4g}, std {s.std:.4g}"
        if s.nonfinite:
            stats += f"; {s.nonfinite} not finite"
        lines.append(stats)
    if s.tuples is None:
        preview = ", ".join(f"{v:.4g}" for v in s.preview)
        lines.append(f"preview `[{preview}{', ...' if s.truncated else ''}]`")
    text = "  \n".join(lines)
    if image_uri:
        text += f"\n\n![{name}]({image_uri})"
    return text
