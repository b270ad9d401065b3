"""Inlay hints: the inferred shape after each left-hand side (fuse_lang.ide.inlay_hints)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.inlay_hints import shape_hints

from ..state import Feature, FuseServer, safe


@safe(list)
def inlay_hints(ls: FuseServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    analysis, convert = ls.analysis(params.text_document.uri)
    return [types.InlayHint(position=convert.position(hint.offset), label=hint.label,
                            kind=types.InlayHintKind.Type, tooltip=hint.tooltip)
            for hint in shape_hints(analysis, convert.span(params.range))]


FEATURES = (Feature(types.TEXT_DOCUMENT_INLAY_HINT, inlay_hints),)
