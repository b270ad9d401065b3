"""A run's result, a relation and a plan's explanation as HTML and Markdown for
a notebook (Jupyter's `_repr_html_` / `_repr_markdown_`): the same figures as
the editor's results view (ide/run_summary.py: shape, dtype, statistics, a
relation's tuple count and first tuples sorted by value, query answers), in
tables of bounded size: a relation of a million tuples shows its count and its
first `SHOWN` tuples.  Registered with run.display on import (the run layer's
objects cannot import this layer)."""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Sequence

from ..run import display
from ..run.results import RunResult
from .run_summary import ArraySummary, QuerySummary, RunSummary, summarize_relation, summarize_run

SHOWN = 20  # tuples (or preview values) shown per relation in a notebook


def _e(value: Any) -> str:
    return html.escape(str(value))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(value: Any) -> str:
    """A value as Markdown text that shows as written: its HTML escaped (a symbol
    `<script>` is text), Markdown's marks and a table's `|` backslashed, a line
    break a blank (a cell of a table is one line)."""
    text = html.escape(str(value), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", re.sub(r"\r\n?|\n", " ", text))


def _md_code(text: str) -> str:
    """`text` as a Markdown code span, fenced by more backticks than it holds."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _stats(s: ArraySummary) -> str:
    return (f"min {_number(s.min)} · max {_number(s.max)} · mean {_number(s.mean)} · "
            f"std {_number(s.std)} · {s.nonzeros} non-zero"
            + (f" · {s.nonfinite} not finite" if s.nonfinite else ""))


def tuples_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], count: int) -> str:
    """An HTML table of the first rows of a relation of `count` tuples."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>"
                   for row in rows[:SHOWN])
    more = f"<p>… {count - min(len(rows), SHOWN)} more tuples</p>" \
        if count > min(len(rows), SHOWN) else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _output_html(name: str, s: ArraySummary, columns: Sequence[str] | None = None) -> str:
    title = f"<b>{_e(name)}</b> {_e(s.what)} <code>{_e(s.dtype)}</code>"
    if s.tuples is not None:
        columns = columns or [f"#{p}" for p in range(len(s.shape))]
        if not columns:  # a nullary relation: its title says yes or no
            return f"<div>{title}</div>"
        return f"<div>{title}{tuples_table(columns, s.tuples, s.count or 0)}</div>"
    preview = ", ".join(_number(v) for v in s.preview) + (", …" if s.truncated else "")
    return f"<div>{title}<br>{_e(_stats(s))}<br><small>[{_e(preview)}]</small></div>"


def _query_html(q: QuerySummary) -> str:
    title = f"<code>{_e(q.text)}</code> {_e(q.answer)}"
    if q.tuples is None or not q.free:
        return f"<div>{title}</div>"
    return f"<div>{title}{tuples_table(q.free, q.tuples, len(q.tuples))}</div>"


def summary_html(summary: RunSummary, columns: dict[str, Sequence[str]] | None = None) -> str:
    """A RunSummary as HTML: its one-line message, each output (a relation's
    tuples under its `columns`' names), each query."""
    parts = [f"<p>{_e(summary.message())}</p>"]
    parts += [_output_html(name, s, (columns or {}).get(name)) for name, s in summary.outputs]
    parts += [_query_html(q) for q in summary.queries]
    return '<div class="fuse-result">' + "".join(parts) + "</div>"


def summary_markdown(summary: RunSummary) -> str:
    """A RunSummary as Markdown: its message, a line per output and per query."""
    lines = [_md(summary.message()), ""]
    lines += [f"- **{name}** {s.what} `{s.dtype}`" for name, s in summary.outputs]
    lines += [f"- {_md_code(q.text)} {q.answer}" for q in summary.queries]
    return "\n".join(lines)


def result_summary(result: RunResult) -> RunSummary:
    """The editor's summary of a run's result (its relations with their tuples)."""
    config = getattr(result.plan, "config", None)
    path = getattr(getattr(result.plan, "analysis", None), "path", None)
    return summarize_run(result, program=Path(path).name if path else "program", backend=getattr(config, "backend", "numpy"),
                         device=getattr(config, "device", "cpu"), elapsed_s=result.seconds,
                         analysis=getattr(result.plan, "analysis", None))


def render_result(result: RunResult, mime: str) -> str:
    summary = result_summary(result)
    if mime != "text/html":
        return summary_markdown(summary) + pictures_markdown(result.pictures)
    page = summary_html(summary, {n: r.columns for n, r in result.relations().items()})
    return page + pictures_html(result.pictures)


MIME = {"svg": "image/svg+xml", "png": "image/png"}
PICTURE_WIDTH = 380  # pixels a picture takes in the notebook (two side by side in JupyterLab)


def with_pictures(result: RunResult, fmt: str = "svg", slice_along: str | None = None
                  ) -> RunResult:
    """A copy of `result` holding a picture of each output (and query answer with
    free variables), as `fuse run --plot` draws them (ide.picture_files); shown
    inline with the result in a notebook.  FuseError when they cannot be drawn."""
    import dataclasses

    from ..front.arguments import instance_argument
    from ..run.results import FuseError

    instance_argument("fuse_lang.plot", result, RunResult,
                      "a RunResult (program.execute(...)'s result)")
    try:
        from .picture_files import result_pictures
        from .plots import PictureError

        pictures = result_pictures(result.outputs, getattr(result.plan, "analysis", None),
                                   fmt, result.queries, slice_along)
    except ImportError as err:
        raise FuseError(f"pictures need matplotlib ({err}); pip install matplotlib") from None
    except PictureError as err:
        raise FuseError(str(err)) from None
    return dataclasses.replace(result, pictures=pictures)


def _data_uri(file_name: str, data: bytes) -> str:
    import base64

    mime = MIME[file_name.rsplit(".", 1)[-1]]
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def pictures_html(pictures: Sequence[tuple[str, bytes]]) -> str:
    """The pictures as images embedded in the page (data URIs: an SVG's ids and
    styles stay its own), each captioned with its file's name."""
    if not pictures:
        return ""
    figures = "".join(
        f'<figure style="margin:0 1em 1em 0"><img src="{_data_uri(name, data)}" '
        f'alt="{_e(name)}" style="width:{PICTURE_WIDTH}px;max-width:100%">'
        f"<figcaption><code>{_e(name)}</code></figcaption></figure>"
        for name, data in pictures)
    return f'<div class="fuse-pictures" style="display:flex;flex-wrap:wrap">{figures}</div>'


def pictures_markdown(pictures: Sequence[tuple[str, bytes]]) -> str:
    """The pictures as Markdown images with data URIs."""
    return "".join(f"\n\n![{name}]({_data_uri(name, data)})" for name, data in pictures)


def render_relation(relation: Any, mime: str) -> str:
    s = summarize_relation(relation.value, relation.axes, shown=SHOWN)
    count = s.count or 0
    title = f"{count} tuple{'' if count == 1 else 's'}"
    if not relation.columns:  # a nullary relation: true (its one tuple `()`) or false
        title += f" ({'true' if count else 'false'})"
    if mime == "text/html":
        table = tuples_table(relation.columns, s.tuples or (), count) if relation.columns \
            else ""
        return f'<div class="fuse-relation"><b>{_e(relation.name)}</b> {title}{table}</div>'
    if not relation.columns:
        return f"**{relation.name}** {title}"
    head = "| " + " | ".join(relation.columns) + " |"
    rule = "|" + "---|" * len(relation.columns)
    rows = ["| " + " | ".join(map(_md, row)) + " |" for row in (s.tuples or ())]
    more = [f"\n… {count - len(rows)} more tuples"] if count > len(rows) else []
    return "\n".join([f"**{relation.name}** {title}", "", head, rule, *rows, *more])


def why_html(answer: Any) -> str:
    """A why's answer (run.why: a derivation, a why-not, a number's terms) as
    `fuse why` prints it (ide/why_text.py), preformatted."""
    from .why_text import why_text

    return f'<pre class="fuse-why">{_e(why_text(answer))}</pre>'


def render_why(answer: Any, mime: str) -> str:
    """A why's answer as `fuse why` prints it: preformatted HTML, or a Markdown
    code block."""
    if mime == "text/html":
        return why_html(answer)
    from .why_text import why_text

    text = why_text(answer)
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


display.register("RunResult", render_result)
display.register("Relation", render_relation)
for _kind in ("Derivation", "WhyNot", "NumberWhy"):
    display.register(_kind, render_why)
