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
    markdown = found.markdown + _last_value(ls, params.text_document.uri, analysis,
                                            convert.offset(params.position))
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=markdown),
                       range=convert.range(found.span))


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


FEATURES = (Feature(types.TEXT_DOCUMENT_HOVER, hover),)
