"""Folding ranges: comment runs and statements over several lines (fuse_lang.ide.folding)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.folding import Fold, folding_ranges

from ..convert import Converter
from ..state import Feature, FuseServer, safe


def _fold(fold: Fold, convert: Converter) -> types.FoldingRange:
    kind = (types.FoldingRangeKind.Comment if fold.kind == "comment"
            else types.FoldingRangeKind.Region)
    return types.FoldingRange(start_line=convert.position(fold.span.start).line,
                              end_line=convert.position(fold.span.end).line, kind=kind)


@safe(list)
def folding(ls: FuseServer, params: types.FoldingRangeParams) -> list[types.FoldingRange]:
    analysis, convert = ls.analysis(params.text_document.uri)
    folds = [_fold(f, convert) for f in folding_ranges(analysis)]
    caps = ls.client_capabilities.text_document
    limit = caps.folding_range.range_limit if caps and caps.folding_range else None
    return folds[:limit] if limit else folds


FEATURES = (Feature(types.TEXT_DOCUMENT_FOLDING_RANGE, folding),)
