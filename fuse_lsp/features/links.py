"""Document links: a source's, a sink's or an import's path opens its file
(fuse_lang.ide.file_links); with a tooltip for a client that shows one."""
from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from fuse_lang.ide.file_links import file_links

from ..state import Feature, FuseServer, safe


@safe(list)
def document_links(ls: FuseServer, params: types.DocumentLinkParams
                   ) -> list[types.DocumentLink]:
    analysis, convert = ls.analysis(params.text_document.uri)
    caps = ls.client_capabilities.text_document
    tooltips = bool(caps and caps.document_link and caps.document_link.tooltip_support)
    return [types.DocumentLink(range=convert.range(link.span), target=Path(link.path).as_uri(),
                               tooltip=link.tooltip if tooltips else None)
            for link in file_links(analysis)]


FEATURES = (Feature(types.TEXT_DOCUMENT_DOCUMENT_LINK, document_links,
                    types.DocumentLinkOptions(resolve_provider=False)),)
