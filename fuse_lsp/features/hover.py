"""Hover: what a tensor, index, operator or builtin is (fuse_lang.ide.hover)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.hover import hover_at

from ..state import Feature, FuseServer, safe


@safe()
def hover(ls: FuseServer, params: types.HoverParams) -> types.Hover | None:
    analysis, convert = ls.analysis(params.text_document.uri)
    found = hover_at(analysis, convert.offset(params.position))
    if found is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=found.markdown),
                       range=convert.range(found.span))


FEATURES = (Feature(types.TEXT_DOCUMENT_HOVER, hover),)
