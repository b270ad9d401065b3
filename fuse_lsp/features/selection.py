"""Selection ranges ("expand selection"): for each position, the chain of spans
around it from fuse_lang.ide.selection, innermost first, as nested SelectionRanges."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.selection import selection_chain

from ..state import Feature, FuseServer, safe


@safe(list)
def selection_range(ls: FuseServer, params: types.SelectionRangeParams
                    ) -> list[types.SelectionRange]:
    analysis, convert = ls.analysis(params.text_document.uri)
    out = []
    for position in params.positions:  # one answer per position, in their order
        found: types.SelectionRange | None = None
        for span in reversed(selection_chain(analysis, convert.offset(position))):
            found = types.SelectionRange(range=convert.range(span), parent=found)
        assert found is not None  # (the chain ends with the whole text)
        out.append(found)
    return out


FEATURES = (Feature(types.TEXT_DOCUMENT_SELECTION_RANGE, selection_range),)
