"""Document formatting: one edit replacing the text (fuse_lang.ide.formatting)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.front.span import Span
from fuse_lang.ide.formatting import format_text

from ..state import Feature, FuseServer, safe


@safe(list)
def formatting(ls: FuseServer, params: types.DocumentFormattingParams
               ) -> list[types.TextEdit]:
    analysis, convert = ls.analysis(params.text_document.uri)
    text = analysis.text
    formatted = format_text(text)
    if formatted == text:
        return []
    return [types.TextEdit(range=convert.range(Span(0, len(text))), new_text=formatted)]


FEATURES = (Feature(types.TEXT_DOCUMENT_FORMATTING, formatting),)
