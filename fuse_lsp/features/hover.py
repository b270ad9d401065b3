"""Hover: what a tensor, index, operator or builtin is (fuse_lang.ide.hover)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.hover import hover_at
from fuse_lang.ide.query import symbol_at

from ..last_run import stale
from ..state import Feature, FuseServer, safe


@safe()
def hover(ls: FuseServer, params: types.HoverParams) -> types.Hover | None:
    analysis, convert = ls.analysis(params.text_document.uri)
    found = hover_at(analysis, convert.offset(params.position))
    if found is None:
        return None
    offset = convert.offset(params.position)
    markdown = found.markdown + _last_value(ls, params.text_document.uri, analysis, offset) \
        + _query_whys(ls, params.text_document.uri, analysis, offset)
    return types.Hover(contents=types.MarkupContent(kind=_hover_kind(ls), value=markdown),
                       range=convert.range(found.span))


def _hover_kind(ls: FuseServer) -> types.MarkupKind:
    """Markdown, unless the client says it takes plain text only (LSP's
    `hover.contentFormat`): then the same text, said to be plain."""
    caps = ls.client_capabilities.text_document
    formats = caps.hover.content_format if caps and caps.hover else None
    if formats and types.MarkupKind.Markdown not in formats:
        return types.MarkupKind.PlainText
    return types.MarkupKind.Markdown


def _last_value(ls: FuseServer, uri: str, analysis, offset: int) -> str:
    """After a run: the hovered tensor's last value (fuse_lang.ide.value_hover)."""
    last = ls.last_runs.get(uri)
    if last is None:
        return ""
    symbol = symbol_at(analysis, offset)
    if symbol is None or symbol.kind != "tensor" or symbol.name not in last.outputs:
        return ""
    from fuse_lang.ide.value_hover import value_markdown
    from fuse_lang.run.outputs import relation_axes

    image = last.thumbnails.get(symbol.name) if ls.markdown_images else None
    return "\n\n---\n\n" + value_markdown(symbol.name, last.outputs[symbol.name],
                                           stale(ls, uri, last), image,
                                           relation_axes(last.analysis, symbol.name))


# a hover re-evaluates a run to explain its answers only when that run was this short
# (else after a `fuse.why` has read its values): a hover never waits long
WHY_RUN_S = 0.5
WHY_ANSWERS = 2


def _query_whys(ls: FuseServer, uri: str, analysis, offset: int) -> str:
    """On a query's line after a run: the derivations of its first answers."""
    from fuse_lang.ide.why_text import answer_targets, query_at, why_text

    last = ls.last_runs.get(uri)
    query = query_at(analysis, offset)
    explainer = getattr(last, "explainer", None)
    if last is None or query is None or explainer is None or stale(ls, uri, last):
        return ""
    text = analysis.text[query.span.start:query.span.end]
    answer = next((q for q in last.queries if " ".join(q.text.split()) == " ".join(text.split())),
                  None)
    targets = answer_targets(query, answer, WHY_ANSWERS) if answer is not None else []
    if not targets:
        return ""
    if not explainer.ready and last.seconds > WHY_RUN_S:
        return "\n\n---\n\nWhy an answer holds: the `fuse.why` command (docs/why.md)."
    parts = []
    for name, values in targets:
        try:
            parts.append(why_text(explainer.why(name, values, 12, 3)))
        except Exception as error:  # noqa: BLE001 - a hover is never worth a failure
            ls.log_error("why in a hover", error)
            return ""
    return "\n\n---\n\n**Why**\n\n" + "\n\n".join(f"```\n{p}\n```" for p in parts)


FEATURES = (Feature(types.TEXT_DOCUMENT_HOVER, hover),)
