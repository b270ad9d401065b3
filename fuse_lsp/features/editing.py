"""Completion, signature help and document formatting."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.completion import Completion, complete, signature_at
from fuse_lang.ide.formatting import format_text
from fuse_lang.front.span import Span

from ..server import FuseServer, safe

_KINDS = {
    "tensor": types.CompletionItemKind.Variable,
    "relation": types.CompletionItemKind.Class,
    "builtin": types.CompletionItemKind.Function,
    "index": types.CompletionItemKind.TypeParameter,
    "symbol": types.CompletionItemKind.EnumMember,
    "keyword": types.CompletionItemKind.Keyword,
}


def _item_caps(ls: FuseServer) -> tuple[bool, bool]:
    """Whether the client takes snippets, and markdown documentation, in completions."""
    caps = ls.client_capabilities.text_document
    item = caps and caps.completion and caps.completion.completion_item
    if not item:
        return False, False
    return bool(item.snippet_support), types.MarkupKind.Markdown in (
        item.documentation_format or ())


def _item(c: Completion, markdown: bool) -> types.CompletionItem:
    docs = (types.MarkupContent(kind=types.MarkupKind.Markdown, value=c.documentation)
            if c.markdown and markdown else c.documentation or None)
    return types.CompletionItem(
        label=c.label, kind=_KINDS[c.kind], detail=c.detail, documentation=docs,
        sort_text=c.sort_text, insert_text=c.insert_text,
        insert_text_format=(None if c.insert_text is None else
                            types.InsertTextFormat.Snippet if c.snippet
                            else types.InsertTextFormat.PlainText))


def register(server: FuseServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=["[", "(", ","]))
    @safe()
    def completion(ls: FuseServer, params: types.CompletionParams) -> types.CompletionList:
        analysis, convert = ls.analysis(params.text_document.uri)
        snippets, markdown = _item_caps(ls)
        found = complete(analysis, convert.offset(params.position), snippets)
        return types.CompletionList(is_incomplete=False,
                                    items=[_item(c, markdown) for c in found])

    @server.feature(types.TEXT_DOCUMENT_SIGNATURE_HELP,
                    types.SignatureHelpOptions(trigger_characters=["(", ","]))
    @safe()
    def signature_help(ls: FuseServer, params: types.SignatureHelpParams
                       ) -> types.SignatureHelp | None:
        analysis, convert = ls.analysis(params.text_document.uri)
        found = signature_at(analysis.text, convert.offset(params.position))
        if found is None:
            return None
        info = types.SignatureInformation(
            label=found.label, documentation=found.documentation,
            parameters=[types.ParameterInformation(label=p) for p in found.parameters])
        return types.SignatureHelp(signatures=[info], active_signature=0,
                                   active_parameter=found.active)

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    @safe(list)
    def formatting(ls: FuseServer, params: types.DocumentFormattingParams
                   ) -> list[types.TextEdit]:
        analysis, convert = ls.analysis(params.text_document.uri)
        text = analysis.text
        formatted = format_text(text)
        if formatted == text:
            return []
        return [types.TextEdit(range=convert.range(Span(0, len(text))), new_text=formatted)]
