"""Semantic tokens, whole document or a range: fuse_lang.ide.semantic_tokens classifies
the tokens and encodes them (LSP's relative encoding); the converter gives
the columns' code units."""
from __future__ import annotations

from typing import Callable

from lsprotocol import types

from fuse_lang.ide.semantic_tokens import (
    TOKEN_MODIFIERS,
    TOKEN_TYPES,
    encode_tokens,
    semantic_tokens,
)

from ..convert import Converter
from ..state import Feature, FuseServer, safe

LEGEND = types.SemanticTokensLegend(token_types=list(TOKEN_TYPES),
                                    token_modifiers=list(TOKEN_MODIFIERS))


def _tokens(ls: FuseServer, uri: str, within: types.Range | None) -> types.SemanticTokens:
    analysis, convert = ls.analysis(uri)
    span = None if within is None else convert.span(within)
    tokens = semantic_tokens(analysis, span, ls.token_cache(uri))
    return types.SemanticTokens(data=encode_tokens(tokens, convert.lines, _units(convert)))


def _units(convert: Converter) -> Callable[[int, int], int] | None:
    # an ASCII text's columns are the same in every encoding: no conversion
    return None if convert.ascii else convert.units


@safe(lambda: types.SemanticTokens(data=[]))
def tokens_full(ls: FuseServer, params: types.SemanticTokensParams) -> types.SemanticTokens:
    return _tokens(ls, params.text_document.uri, None)


@safe(lambda: types.SemanticTokens(data=[]))
def tokens_range(ls: FuseServer, params: types.SemanticTokensRangeParams
                 ) -> types.SemanticTokens:
    return _tokens(ls, params.text_document.uri, params.range)


FEATURES = (
    Feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, tokens_full, LEGEND),
    Feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, tokens_range, LEGEND),
)
