"""Completion and signature help (fuse_lang.ide.completion)."""
from __future__ import annotations

from lsprotocol import types

from fuse_lang.ide.completion import Completion, complete, signature_at

from ..convert import Converter
from ..state import Feature, FuseServer, safe

_KINDS = {
    "tensor": types.CompletionItemKind.Variable,
    "relation": types.CompletionItemKind.Class,
    "builtin": types.CompletionItemKind.Function,
    "function": types.CompletionItemKind.Function,
    "namespace": types.CompletionItemKind.Module,
    "index": types.CompletionItemKind.TypeParameter,
    "symbol": types.CompletionItemKind.EnumMember,
    "keyword": types.CompletionItemKind.Keyword,
    "file": types.CompletionItemKind.File,
    "folder": types.CompletionItemKind.Folder,
}


def _item_caps(ls: FuseServer) -> tuple[bool, bool]:
    """Whether the client takes snippets, and markdown documentation, in completions."""
    caps = ls.client_capabilities.text_document
    item = caps and caps.completion and caps.completion.completion_item
    if not item:
        return False, False
    return bool(item.snippet_support), types.MarkupKind.Markdown in (
        item.documentation_format or ())


def _item(c: Completion, markdown: bool, convert: Converter) -> types.CompletionItem:
    docs = (types.MarkupContent(kind=types.MarkupKind.Markdown, value=c.documentation)
            if c.markdown and markdown else c.documentation or None)
    edit = None if c.replace is None else types.TextEdit(  # (a path's last part)
        range=convert.range(c.replace), new_text=c.insert_text or c.label)
    return types.CompletionItem(
        label=c.label, kind=_KINDS[c.kind], detail=c.detail, documentation=docs,
        sort_text=c.sort_text, insert_text=None if edit else c.insert_text, text_edit=edit,
        insert_text_format=(None if c.insert_text is None else
                            types.InsertTextFormat.Snippet if c.snippet
                            else types.InsertTextFormat.PlainText))


@safe()
def completion(ls: FuseServer, params: types.CompletionParams) -> types.CompletionList:
    analysis, convert = ls.analysis(params.text_document.uri)
    snippets, markdown = _item_caps(ls)
    found = complete(analysis, convert.offset(params.position), snippets)
    return types.CompletionList(is_incomplete=False,
                                items=[_item(c, markdown, convert) for c in found])


@safe()
def signature_help(ls: FuseServer, params: types.SignatureHelpParams
                   ) -> types.SignatureHelp | None:
    analysis, convert = ls.analysis(params.text_document.uri)
    functions = analysis.inlined.functions if analysis.inlined is not None else None
    found = signature_at(analysis.text, convert.offset(params.position), functions)
    if found is None:
        return None
    # the active parameter on the signature too: left out, lsprotocol writes it null,
    # which LSP 3.17 does not allow there (uinteger) and 3.18 reads as "none active"
    info = types.SignatureInformation(
        label=found.label, documentation=found.documentation,
        parameters=[types.ParameterInformation(label=label)
                    for label in _parameter_labels(found.label, found.parameters)],
        active_parameter=found.active)
    return types.SignatureHelp(signatures=[info], active_signature=0,
                               active_parameter=found.active)


def _parameter_labels(label: str, parameters: tuple[str, ...]
                      ) -> list[str | tuple[int, int]]:
    """Each parameter as its text, or as its [start, end) in `label` (UTF-16 units)
    where the text's first occurrence is not the parameter (`a` of `fn add(a, b)`,
    which a client would find in `add`)."""
    out: list[str | tuple[int, int]] = []
    at = label.find("(") + 1
    for parameter in parameters:
        start = label.find(parameter, at)
        if start < 0 or label.find(parameter) == start:
            out.append(parameter)
        else:
            units = len(label[:start].encode("utf-16-le")) // 2
            out.append((units, units + len(parameter.encode("utf-16-le")) // 2))
        at = max(at, start + len(parameter))
    return out


FEATURES = (
    Feature(types.TEXT_DOCUMENT_COMPLETION, completion,
            types.CompletionOptions(trigger_characters=["[", "(", ",", '"', "/"])),
    Feature(types.TEXT_DOCUMENT_SIGNATURE_HELP, signature_help,
            types.SignatureHelpOptions(trigger_characters=["(", ","])),
)
