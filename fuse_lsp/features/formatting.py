"""Document formatting: one edit replacing the text; range formatting: an edit per
line (or run of blank lines) of the range that changes (fuse_lang.ide.formatting)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.front.span import Span
from fuse_lang.ide.formatting import format_lines, format_text

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


@safe(list)
def range_formatting(ls: FuseServer, params: types.DocumentRangeFormattingParams
                     ) -> list[types.TextEdit]:
    analysis, convert = ls.analysis(params.text_document.uri)
    start, end = convert.offset(params.range.start), convert.offset(params.range.end)
    return [types.TextEdit(range=convert.range(span), new_text=new_text)
            for span, new_text in format_lines(analysis.text, start, end)]


FEATURES = (Feature(types.TEXT_DOCUMENT_FORMATTING, formatting),
            Feature(types.TEXT_DOCUMENT_RANGE_FORMATTING, range_formatting))
